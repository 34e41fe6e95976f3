"""``python -m testweb``: serve the test web on loopback until interrupted."""

from __future__ import annotations

import argparse
import json
import signal
import sys

from twisted.internet import reactor

from testweb.dns import listen_dns
from testweb.model import DEFAULT_CHANGE_CLASSES, TestWeb, parse_change_classes
from testweb.server import listen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testweb", description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=20, help="pages per host")
    parser.add_argument("--no-hazards", action="store_true",
                        help="a clean web: pages and links only (for benchmarks)")
    parser.add_argument("--latency", type=float, default=None,
                        help="fixed response latency of every host, seconds")
    parser.add_argument("--robots-change", action="store_true",
                        help="changing hosts disallow /p/ in robots.txt from its second fetch on")
    parser.add_argument("--change-period", type=float, default=None,
                        help="a changing web: page n changes every PERIOD x 4^(n%%4-1) s "
                             "(never if n%%4 == 0), with ETag, Last-Modified and 304s")
    parser.add_argument("--change-classes", default=None, metavar="F,F,...",
                        help="with --change-period: page n changes every PERIOD x the n%%k-th of "
                             "these k factors ('never': it does not); default never,1,4,16")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--log", help="request log file (JSON lines)")
    parser.add_argument("--truth", help="write the ground truth (JSON) here")
    parser.add_argument("--seeds-file", help="write every host's home page URL here")
    parser.add_argument("--dns-port", type=int, default=None,
                        help="also serve the web's names over DNS on this port (0: any free one)")
    parser.add_argument("--dns-ttl", type=int, default=300, help="TTL of the DNS answers")
    parser.add_argument("--dns-log", help="DNS query log file (JSON lines)")
    args = parser.parse_args(argv)
    try:
        classes = parse_change_classes(args.change_classes) if args.change_classes else \
            DEFAULT_CHANGE_CLASSES
        web = TestWeb(args.seed, args.hosts, args.pages, not args.no_hazards, latency=args.latency,
                      robots_change=args.robots_change, change_period=args.change_period,
                      change_classes=classes)
        log = open(args.log, "a", encoding="utf-8") if args.log else None  # noqa: SIM115
        port = listen(web, args.port, args.address, log)
        dns_port = None
        if args.dns_port is not None:
            dns_log = open(args.dns_log, "a", encoding="utf-8") if args.dns_log else None  # noqa: SIM115
            dns_port = listen_dns(web.domain, web.n_hosts, args.address, args.dns_port,
                                  args.dns_ttl, dns_log)
    except (ValueError, OSError) as exc:
        print(f"testweb: {exc}", file=sys.stderr)
        return 2
    if args.truth:
        with open(args.truth, "w", encoding="utf-8") as fh:
            json.dump(web.ground_truth(port), fh)
    if args.seeds_file:
        with open(args.seeds_file, "w", encoding="utf-8") as fh:
            fh.writelines(web.base_url(i, port) + "/\n" for i in range(web.n_hosts))
    signal.signal(signal.SIGTERM, lambda *_: reactor.callFromThread(reactor.stop))
    dns_note = f" dns={dns_port}" if dns_port is not None else ""
    print(f"READY port={port} hosts={web.n_hosts} resolve='*.{web.domain}={args.address}'"
          f"{dns_note}", flush=True)
    reactor.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
