"""Scrapy compatibility probes (pure logic and imports): what a Scrapy user expects keeps
working with the pack switched on."""

from __future__ import annotations

import subprocess
import sys

from scrapy import Request

from crawler_ext.frontier.adapter.codec import decode_request, encode_request
from crawler_ext.frontier.adapter.intake import USER_DONT_FILTER, checks_seen


def test_user_meta_survives_the_frontier_codec() -> None:
    request = Request("http://e.com/a", meta={"download_slot": "my-slot", "download_timeout": 7,
                                              "download_latency": 0.2, "mine": [1, 2]})
    meta = decode_request(encode_request(request, None), None).meta
    assert meta == {"download_slot": "my-slot", "download_timeout": 7, "mine": [1, 2]}
    # the slot Scrapy sets itself (the host name) is not stored: a link stays compact
    plain = Request("http://e.com/b", meta={"download_slot": "e.com"})
    assert encode_request(plain, None).startswith(b"U")


def test_a_users_dont_filter_is_honoured_for_its_redirects_a_retrys_is_not() -> None:
    assert checks_seen(Request("http://e.com/"))
    assert not checks_seen(Request("http://e.com/", dont_filter=True))
    # a redirect of a retried request: Scrapy copied the retry's dont_filter onto it
    retried = Request("http://e.com/t", dont_filter=True, meta={"redirect_urls": ["http://e.com/"],
                                                                "retry_times": 1})
    assert checks_seen(retried)
    # a redirect of the user's own dont_filter request (flagged when it was scheduled)
    user = Request("http://e.com/t", dont_filter=True,
                   meta={"redirect_urls": ["http://e.com/"], USER_DONT_FILTER: True})
    assert not checks_seen(user)


def test_importing_the_pack_does_not_install_a_reactor() -> None:
    # Scrapy's reactorless mode (TWISTED_REACTOR_ENABLED=False) forbids it
    code = ("import sys\n"
            "import crawler_ext.frontier, crawler_ext.frontier.adapter.scheduler, crawler_ext.hosts.netguard\n"
            "import crawler_ext.dedup.middleware, crawler_ext.dupefilter, crawler_ext.pipelines\n"
            "import crawler_ext.hosts.dns, crawler_ext.hosts, crawler_ext.statsfile\n"
            "assert 'twisted.internet.reactor' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_requests_with_bodies_are_judged_by_scrapys_fingerprinter() -> None:
    from scrapy.utils.test import get_crawler

    from crawler_ext.frontier.adapter.scheduler import FrontierScheduler

    crawler = get_crawler(settings_dict={"CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8"})
    scheduler = FrontierScheduler.from_crawler(crawler)
    one = Request("http://e.com/api", method="POST", body=b"a=1")
    two = Request("http://e.com/api", method="POST", body=b"a=2")
    fps = {scheduler.parts.intake._request_fp(r, r.url) for r in (one, two, one.replace())}
    assert len(fps) == 2
    # the host's bits are the URL's, so one host's requests still sort together
    from crawler_ext.admission.urls import REST_BITS, fingerprint

    assert {fp >> REST_BITS for fp in fps} == {fingerprint("http://e.com/api") >> REST_BITS}


def test_the_scheduler_closes_without_an_engine() -> None:
    from scrapy.utils.test import get_crawler

    from crawler_ext.frontier.adapter.scheduler import FrontierScheduler

    crawler = get_crawler(settings_dict={"CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8"})
    scheduler = FrontierScheduler.from_crawler(crawler)
    assert scheduler.enqueue_request(Request("http://127.0.0.1/a"))
    scheduler.close("finished")  # no engine: nothing to ask what is in progress
    scheduler.close("shutdown")


def test_the_engine_handle_fails_loudly_when_scrapys_internals_are_missing() -> None:
    from types import SimpleNamespace

    import pytest

    from crawler_ext.frontier.adapter.engine import EngineHandle

    calls: list[str] = []
    slot = SimpleNamespace(nextcall=SimpleNamespace(schedule=lambda: calls.append("wake")),
                           inprogress={"r"})
    handle = EngineHandle(SimpleNamespace(engine=SimpleNamespace(_slot=slot)))
    handle.check()
    handle.wake()
    assert calls == ["wake"] and handle.in_progress() == {"r"}
    EngineHandle(SimpleNamespace()).check()  # no engine: nothing to wake, no error
    renamed = EngineHandle(SimpleNamespace(engine=SimpleNamespace(_slot=SimpleNamespace(
        nextcall=None))))
    with pytest.raises(RuntimeError, match=r"_slot.nextcall.schedule\(\), _slot.inprogress"):
        renamed.check()
    with pytest.raises(RuntimeError, match=r"ExecutionEngine._slot"):
        EngineHandle(SimpleNamespace(engine=SimpleNamespace())).check()
