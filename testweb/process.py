"""A loopback test server in a subprocess: started with its command line, ready when it
prints ``READY key=value ...``, stopped with SIGTERM (then SIGKILL)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["ServerProcess", "serve_until_stopped"]


class ServerProcess:
    """Base of the test servers (the test web, the real sites, the hostile web)."""

    __test__ = False

    proc: subprocess.Popen[str] | None = None

    def _launch(self, cmd: list[str]) -> dict[str, str]:
        """Run ``cmd``; return the fields of its READY line."""
        # the test web lives in the checkout, beside the installed package: put it on the path
        root = str(Path(__file__).resolve().parents[1])
        path = os.environ.get("PYTHONPATH")
        env = dict(os.environ, PYTHONPATH=root + (os.pathsep + path if path else ""))
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("READY"):
            self.stop()
            raise RuntimeError(f"{cmd[2] if len(cmd) > 2 else cmd} did not start: {line!r}")
        return dict(field.split("=", 1) for field in line.split()[1:] if "=" in field)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def start(self) -> Any:
        raise NotImplementedError

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve_until_stopped(**fields: object) -> None:
    """In the server's process: announce ``READY key=value ...`` and run the reactor until
    SIGTERM (the other side of :class:`ServerProcess`)."""
    import signal

    from twisted.internet import reactor

    signal.signal(signal.SIGTERM, lambda *_: reactor.callFromThread(reactor.stop))
    print("READY " + " ".join(f"{k}={v}" for k, v in fields.items()), flush=True)
    reactor.run()

