"""Several hosts on one machine: each in a network namespace of its own (``ip netns``), joined
by switches (a bridge per network, in a namespace of the lab's own), for the tests of faults
between machines.

A partition is a switch port set down: the host's side of the link stays up, so its
connections hang as on a real cut cable (nothing answers, nothing is refused) until the port
is set up again.  Everything the lab makes lives in its namespaces, and deleting them
(:meth:`NetLab.close`) removes every link and address: nothing is left in the machine's own
namespace.  Needs root and iproute2.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Host", "NetLab", "in_test_namespace", "lab_unavailable"]

_LABS = itertools.count()


def in_test_namespace() -> bool:
    """Whether this process runs in a network namespace a lab made (named ``cx...`` under
    ``/run/netns``, as ``ip netns identify`` finds it): there a test server may bind any
    address."""
    try:
        own = os.stat("/proc/self/ns/net").st_ino
        return any(entry.name.startswith("cx") and entry.stat().st_ino == own
                   for entry in os.scandir("/run/netns"))
    except OSError:
        return False


def lab_unavailable() -> str | None:
    """Why no lab can be made here (None: it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed"
    probe = f"cxprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _remove_orphans() -> None:
    """Delete the namespaces of labs whose test process is gone (killed by a timeout before
    its teardown ran): ``cx<pid>x<n>-<host>``."""
    try:
        names = os.listdir("/run/netns")
    except OSError:
        return
    for name in names:
        pid = name[2:].split("x", 1)[0] if name.startswith("cx") else ""
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


@dataclass
class Host:
    name: str
    netns: str
    addresses: dict[str, str] = field(default_factory=dict)  # network -> IPv4 address

    def exec(self) -> list[str]:
        """The command prefix that runs a program on this host."""
        return ["ip", "netns", "exec", self.netns]


class NetLab:
    """Hosts joined by the named networks (10.0.<n>.0/24 each)."""

    def __init__(self, networks: tuple[str, ...] = ("web", "db")) -> None:
        _remove_orphans()
        self.tag = f"cx{os.getpid()}x{next(_LABS)}"
        self.networks = {name: n + 1 for n, name in enumerate(networks)}
        self.switch = f"{self.tag}-sw"
        self.hosts: dict[str, Host] = {}
        self._namespaces: list[str] = []
        self._add_namespace(self.switch)
        try:
            for name in networks:
                self._ip("-n", self.switch, "link", "add", f"br-{name}", "type", "bridge")
                self._ip("-n", self.switch, "link", "set", f"br-{name}", "up")
        except BaseException:
            self.close()
            raise

    def add(self, name: str, networks: tuple[str, ...]) -> Host:
        """A host on ``networks``; its address on each is 10.0.<network>.<n>."""
        host = Host(name, f"{self.tag}-{name}")
        self._add_namespace(host.netns)
        number = len(self.hosts) + 1
        for net in networks:
            port = self._port(name, net)
            self._ip("link", "add", net, "netns", host.netns, "type", "veth", "peer", "name",
                     port, "netns", self.switch)
            self._ip("-n", self.switch, "link", "set", port, "master", f"br-{net}", "up")
            address = f"10.0.{self.networks[net]}.{number}"
            self._ip("-n", host.netns, "addr", "add", f"{address}/24", "dev", net)
            self._ip("-n", host.netns, "link", "set", net, "up")
            host.addresses[net] = address
        self.hosts[name] = host
        return host

    def popen(self, host: Host, cmd: list[str], **kwargs: Any) -> subprocess.Popen:
        """Run ``cmd`` on ``host`` (``ip netns exec`` execs it: the process id is the
        program's own, for signals)."""
        return subprocess.Popen([*host.exec(), *cmd], **kwargs)

    def cut(self, host: Host, net: str) -> None:
        """Partition ``host`` from ``net``: its switch port goes down."""
        self._ip("-n", self.switch, "link", "set", self._port(host.name, net), "down")

    def heal(self, host: Host, net: str) -> None:
        self._ip("-n", self.switch, "link", "set", self._port(host.name, net), "up")

    def close(self) -> None:
        """Delete every namespace of the lab (its links and addresses go with them)."""
        for netns in reversed(self._namespaces):
            subprocess.run(["ip", "netns", "del", netns], capture_output=True)
        self._namespaces = []

    def __enter__(self) -> NetLab:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------------
    @staticmethod
    def _port(host: str, net: str) -> str:
        return f"{host}-{net}"[:15]

    def _add_namespace(self, netns: str) -> None:
        self._ip("netns", "add", netns)
        self._namespaces.append(netns)
        self._ip("-n", netns, "link", "set", "lo", "up")

    @staticmethod
    def _ip(*args: str) -> None:
        done = subprocess.run(["ip", *args], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
