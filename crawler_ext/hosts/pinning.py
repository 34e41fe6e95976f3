"""Address pinning: a connection goes to the address the SSRF guard checked, whatever resolver
is installed.

The guard (:mod:`crawler_ext.hosts.netguard`) resolves a request's host and judges the address
before the download starts; the download handler then connects, and without pinning it would
resolve the name a second time -- through whichever resolver the project installed, which may
answer otherwise (DNS rebinding with a TTL of 0).  :class:`AddressPins` remembers the checked
address per name; :class:`PinnedNameResolver` wraps the reactor's name resolution so that

* a pinned name resolves to its pinned address only (no second look-up at all);
* any other name is resolved by the wrapped resolver and every answer judged by the guard
  (forbidden ones are dropped, so the connection fails instead of reaching them);
* an address literal is used as it is (the guard judged the URL's; a proxy's is the
  project's own).

Twisted's HTTP/1.1 agent (``HostnameEndpoint``), proxies and FTP (``connectTCP``) all resolve
through the reactor's name resolver, so both paths pass here.  Installing another resolver
replaces the wrapper; the guard middleware puts it back before each request goes out
(:func:`pinned_resolver`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from sys import intern
from typing import Any, Protocol

from twisted.internet import defer
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IHostnameResolver, IHostResolution, IResolutionReceiver
from zope.interface import implementer

from crawler_ext.hosts.addresses import literal_address

__all__ = ["REFUSED", "AddressPins", "AnswersNow", "PinnedNameResolver", "pinned_resolver"]


class AnswersNow(Protocol):
    """A simple resolver that can tell its answer for a name at once, when it has one."""

    def answer_now(self, name: str) -> str | None: ...


#: the pin of a name whose look-up by the guard failed: its connection resolves to nothing
REFUSED = ""


class AddressPins:
    """name -> the address the guard checked last (bounded, least recently used dropped:
    a dropped name is resolved and judged again at its connection, never let through)."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._pins: OrderedDict[str, str] = OrderedDict()

    def pin(self, name: str, address: str) -> None:
        name = intern(name.lower().rstrip("."))  # (one string a host, shared: see keys.py)
        self._pins[name] = address
        self._pins.move_to_end(name)
        while len(self._pins) > self.size:
            self._pins.popitem(last=False)

    def get(self, name: str) -> str | None:
        """The checked address, REFUSED, or None (not pinned)."""
        return self._pins.get(name.lower().rstrip("."))

    def refuse(self, name: str) -> None:
        """The guard could not look ``name`` up: its connections resolve to nothing (they
        fail as a failed look-up does, and nothing resolves the name unchecked)."""
        self.pin(name, REFUSED)

    def __len__(self) -> int:
        return len(self._pins)


@implementer(IHostResolution)
class _Resolution:
    def __init__(self, name: str) -> None:
        self.name = name

    def cancel(self) -> None:  # (nothing to stop: answers arrive or the look-up fails)
        pass


@implementer(IResolutionReceiver)
class _Collect:
    """Receives the wrapped resolver's answers: all of them, then ``done`` fires with them."""

    def __init__(self) -> None:
        self.addresses: list[str] = []
        self.done: defer.Deferred[list[str]] = defer.Deferred()

    def resolutionBegan(self, resolution: Any) -> None:
        pass

    def addressResolved(self, address: Any) -> None:
        self.addresses.append(str(address.host))

    def resolutionComplete(self) -> None:
        if not self.done.called:  # (a timed-out look-up that answers late is ignored)
            self.done.callback(self.addresses)


@implementer(IHostnameResolver)
class PinnedNameResolver:
    """The reactor's name resolver with the guard in front (see the module's doc)."""

    def __init__(self, inner: Any, pins: AddressPins, allows: Callable[[str], bool],
                 refused: Callable[[str, str], None] = lambda name, address: None,
                 simple: Any = None) -> None:
        self.inner = inner
        self.pins = pins
        self.allows = allows
        self.refused = refused  # (name, address): an unpinned answer the guard dropped
        # the simple resolver ``inner`` asks, where it can answer from its cache at once
        # (an ``AnswersNow``: the pack's caching resolver)
        self.simple: AnswersNow | None = simple if callable(
            getattr(simple, "answer_now", None)) else None

    def answer_now(self, name: str) -> str | None:
        """What :meth:`lookup` would give first for ``name``, where the wrapped resolver has it
        at hand (its cache, the guard allowing it); else None: call :meth:`lookup`.  Saves a
        request that goes to a known host the Deferreds and the timer of a look-up."""
        return self.simple.answer_now(name) if self.simple is not None else None

    def lookup(self, name: str, timeout: float) -> defer.Deferred[list[str]]:
        """Every address the wrapped resolver gives for ``name`` now (not the pin): the
        guard's own look-up; fails with DNSLookupError when there is none or ``timeout``
        seconds pass."""
        collect = _Collect()
        self.inner.resolveHostName(collect, name, 0)
        from twisted.internet import reactor

        def none_found(addresses: list[str]) -> list[str]:
            if not addresses:
                raise DNSLookupError(f"{name}: no address")
            return addresses

        return collect.done.addTimeout(timeout, reactor).addCallback(none_found)

    def allowed_pin(self, name: str) -> str | None:
        """The address ``name`` is pinned to if the guard allows it, else None (not pinned,
        refused, or an address the guard no longer allows): where a connection may go
        without resolving the name (:mod:`crawler_ext.hosts.direct`)."""
        pinned = self.pins.get(name)
        return pinned if pinned and self.allows(pinned) else None

    def resolveHostName(self, resolutionReceiver: Any, hostName: str, portNumber: int = 0,
                        addressTypes: Sequence[type] | None = None,
                        transportSemantics: str = "TCP") -> Any:
        resolution = _Resolution(hostName)
        resolutionReceiver.resolutionBegan(resolution)
        pinned = self.pins.get(hostName)
        if pinned is None and (literal := _literal(hostName)) is not None:
            # an address: the guard judged it in the request's URL, or the project set it
            # itself (a proxy), as the pack's resolver always let literals through
            _deliver(resolutionReceiver, literal, portNumber, addressTypes)
            resolutionReceiver.resolutionComplete()
            return resolution
        if pinned is not None:
            if pinned == REFUSED:
                pass  # the guard's look-up failed: no address, the connection fails
            elif self.allows(pinned):
                _deliver(resolutionReceiver, pinned, portNumber, addressTypes)
            else:
                self.refused(hostName, pinned)
            resolutionReceiver.resolutionComplete()
            return resolution
        receiver = _Judged(resolutionReceiver, hostName, self.allows, self.refused)
        self.inner.resolveHostName(receiver, hostName, portNumber, addressTypes,
                                   transportSemantics)
        return resolution


@implementer(IResolutionReceiver)
class _Judged:
    """Passes on the wrapped resolver's answers that the guard allows."""

    def __init__(self, outer: Any, name: str, allows: Callable[[str], bool],
                 refused: Callable[[str, str], None]) -> None:
        self.outer, self.name, self.allows, self.refused = outer, name, allows, refused

    def resolutionBegan(self, resolution: Any) -> None:
        pass

    def addressResolved(self, address: Any) -> None:
        if self.allows(str(address.host)):
            self.outer.addressResolved(address)
        else:
            self.refused(self.name, str(address.host))

    def resolutionComplete(self) -> None:
        self.outer.resolutionComplete()


def _literal(name: str) -> str | None:
    ip = literal_address(name.strip("[]"))
    return None if ip is None else str(ip)


def _deliver(receiver: Any, address: str, port: int, types: Sequence[type] | None) -> None:
    kind = IPv6Address if ":" in address else IPv4Address
    if types is None or kind in types:
        receiver.addressResolved(kind("TCP", address, port))


def pinned_resolver(reactor: Any, pins: AddressPins, allows: Callable[[str], bool],
                    refused: Callable[[str, str], None]) -> PinnedNameResolver:
    """The reactor's pinned name resolver, installed (again) if another one replaced it."""
    current = reactor.nameResolver
    if getattr(current, "pins", None) is pins:
        return current
    # Twisted's wrapper of the installed simple resolver (``installResolver``): that resolver
    # answers the look-ups, so its cached answers are the look-ups' answers
    simple = getattr(reactor, "resolver", None)
    if getattr(current, "_simpleResolver", None) is not simple:
        simple = None
    wrapper = PinnedNameResolver(current, pins, allows, refused, simple)
    reactor.installNameResolver(wrapper)
    return wrapper
