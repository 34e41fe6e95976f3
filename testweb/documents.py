"""A site of documents of every kind -- HTML, PDF, feeds, plain text, images -- and hostile
ones, for the content processors' tests and benchmark.

``build_site(root, host)`` writes the files and returns the manifest (URL path -> file,
``Content-Type`` as served or None for none, and a slow-stream size) and the ground truth:
pages reachable only through a PDF's links, only through a feed, only through plain text,
and the expected duplicates.  ``python -m testweb.documents --manifest m.json --log l.jsonl``
serves a manifest on loopback (virtual host ``docs.test``) with the test web's request log.

``make_pdf`` writes a small valid PDF (text pages, URI link annotations, an Info dict) with
no library, so each hostile variant is exactly the bytes a test wants.
"""

from __future__ import annotations

import argparse
import io
import json
import signal
import socket
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import IO, Any

from testweb.process import ServerProcess
from testweb.requestlog import write_entry

__all__ = ["DocumentSite", "build_site", "make_pdf", "hostile_files"]

def _paragraphs() -> list[str]:
    """Real prose, a different text per paragraph: standard-library docstrings (the same
    source as the real-site corpus's built sites), at most 120 words each."""
    from testweb.corpus import _texts

    return [" ".join(doc.split()[:120]) for _, doc in _texts()[:200]]


PARAGRAPHS = _paragraphs()


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _lines(text: str, width: int = 90) -> list[str]:
    lines: list[str] = []
    for para in text.split("\n"):
        words, line = para.split(), ""
        for word in words:
            if line and len(line) + 1 + len(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}".strip()
        lines.append(line)
    return lines


def make_pdf(pages: list[str], links: list[str] = (), title: str = "", author: str = "",
             created: str = "D:20240101120000Z", producer: str = "testweb",
             compress: bool = True, annotation_stream: bytes | None = None) -> bytes:
    """A PDF of ``pages`` (text), ``links`` as URI link annotations on page 1."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled below
    pages_obj = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for number, text in enumerate(pages):
        ops = ["BT", "/F1 10 Tf", "14 TL", "40 800 Td"]
        ops += [f"({_escape(line)}) Tj T*" for line in _lines(text)[:55]]
        ops.append("ET")
        content = "\n".join(ops).encode("latin-1", "replace")
        if compress:
            stream = add(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(
                zlib.compress(content)) + zlib.compress(content) + b"\nendstream")
        else:
            stream = add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        annots = b""
        if number == 0 and (links or annotation_stream):
            annots = b" /Annots [" + (annotation_stream or b"".join(
                b"<< /Type /Annot /Subtype /Link /Rect [40 %d 300 %d] /Border [0 0 0] "
                b"/A << /S /URI /URI (%s) >> >>" % (700 - 12 * i, 710 - 12 * i,
                                                   _escape(url).encode("latin-1"))
                for i, url in enumerate(links))) + b"]"
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 595 842] /Resources "
                        b"<< /Font << /F1 %d 0 R >> >> /Contents %d 0 R%s >>"
                        % (pages_obj, font, stream, annots)))
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_obj
    objects[pages_obj - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    info = add(b"<< /Title (%s) /Author (%s) /CreationDate (%s) /Producer (%s) >>" % tuple(
        _escape(v).encode("latin-1", "replace") for v in (title, author, created, producer)))
    return _assemble(objects, catalog, info)


def _assemble(objects: list[bytes], catalog: int, info: int) -> bytes:
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n"
              % (len(objects) + 1, catalog, info, xref))
    return out.getvalue()


def _inflate_bomb(size: int) -> bytes:
    """A one-page PDF whose content stream inflates to ``size`` bytes of spaces."""
    packer = zlib.compressobj(9)
    chunk = b" " * (1 << 20)
    data = b"".join(packer.compress(chunk) for _ in range(size >> 20)) + packer.flush()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>",
               b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data
               + b"\nendstream",
               b"<< /Title (bomb) >>"]
    return _assemble(objects, 1, 5)


def _cyclic() -> bytes:
    """Pages whose kids are their own parents, and a page that is its own contents."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
               b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R 3 0 R] /Count 1 >>",
               b"<< /Title (cycle) /Parent 4 0 R >>"]
    return _assemble(objects, 1, 4)


def _encrypted(plain: bytes) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(plain)))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _png_bomb(side: int = 40_000) -> bytes:
    """A 1-bit PNG of ``side`` x ``side`` pixels (far past Pillow's bomb limit), all white."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (len(data).to_bytes(4, "big") + kind + data
                + zlib.crc32(kind + data).to_bytes(4, "big"))

    row = b"\x00" + b"\xff" * ((side + 7) // 8)
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()
    header = side.to_bytes(4, "big") * 2 + bytes([1, 0, 0, 0, 0])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat)
            + chunk(b"IEND", b""))


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE rss [
<!ENTITY lol "lol">
<!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
<!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
<!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
<!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
<!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
<!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<rss version="2.0"><channel><title>&lol9;</title>
<item><title>laughs</title><link>/bomb-entry.html</link></item></channel></rss>
"""


def hostile_files(cache: Path) -> dict[str, bytes]:
    """The hostile documents by name, built once into ``cache`` (the 1 GB inflate bomb
    takes seconds to compress)."""
    cache.mkdir(parents=True, exist_ok=True)
    makers = {
        "truncated.pdf": lambda: make_pdf(PARAGRAPHS[:3], ["/never.html"])[:600],
        "cyclic.pdf": _cyclic,
        "inflate-1g.pdf": lambda: _inflate_bomb(1 << 30),
        "encrypted.pdf": lambda: _encrypted(make_pdf(PARAGRAPHS[:3], ["/secret.html"])),
        "annots-100k.pdf": lambda: make_pdf(["many links"], annotation_stream=b"".join(
            b"<</Subtype/Link/Rect[0 0 1 1]/A<</S/URI/URI(/a/%d)>>>>" % i
            for i in range(100_000))),
        "laughs.xml": lambda: BILLION_LAUGHS,
        "bomb.png": _png_bomb,
    }
    files = {}
    for name, make in makers.items():
        path = cache / name
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(make())
            tmp.replace(path)
        files[name] = path.read_bytes()
    return files


def _image(fmt: str, quality: int = 90) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (256, 256), (240, 240, 240))
    draw = ImageDraw.Draw(image)
    for i in range(8):
        draw.rectangle([i * 28, i * 20, i * 28 + 60, i * 20 + 90],
                       fill=(30 * i, 200 - 20 * i, 90 + 15 * i))
    draw.ellipse([60, 120, 220, 240], fill=(20, 40, 160))
    out = io.BytesIO()
    image.save(out, fmt, **({"quality": quality} if fmt == "JPEG" else {}))
    return out.getvalue()


def build_site(root: Path, cache: Path, host: str = "docs.test", port: int = 0) -> dict:
    """Write the site under ``root``; return ``{"manifest": ..., "truth": ...}``."""
    base = f"http://{host}:{port}" if port else f"http://{host}"
    root.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, dict[str, Any]] = {}

    def put(path: str, data: bytes, ctype: str | None, slow: int = 0) -> None:
        file = root / path.strip("/").replace("/", "__")
        file.write_bytes(data)
        manifest[path] = {"file": str(file), "type": ctype, "slow": slow}

    pages = [0]

    def page(title: str, links: list[str] = (), words: int = 1) -> bytes:
        pages[0] += 1  # each page its own paragraphs: no page is a copy of another
        body = " ".join(PARAGRAPHS[pages[0] % len(PARAGRAPHS):][:words]) + f" ({title})"
        anchors = "".join(f'<li><a href="{u}">{u}</a></li>' for u in links)
        return (f"<!DOCTYPE html><html lang='en'><head><title>{title}</title></head><body>"
                f"<h1>{title}</h1><p>{title}: {body}</p><ul>{anchors}</ul></body></html>"
                ).encode()

    hostile = hostile_files(cache)
    only = {"pdf": ["/pdf-only-1.html", "/pdf-only-2.html"], "feed": ["/feed-only-1.html",
            "/feed-only-2.html", "/atom-only-1.html"], "text": ["/text-only.html"],
            "sniffed": ["/wrong-type-only.html", "/missing-type-only.html"]}
    index_links = ["/about.html", "/docs/manual.pdf", "/docs/manual-print2.pdf",
                   "/docs/manual-edited.pdf", "/news/rss.xml", "/news/atom.xml", "/notes.txt",
                   "/img/figure.png", "/img/figure.jpg", "/docs/mislabeled.html",
                   "/docs/untyped", "/hostile/slow.pdf"]
    index_links += [f"/hostile/{name}" for name in hostile]
    put("/index.html", page("Documents", index_links), "text/html; charset=utf-8")
    put("/about.html", page("About", ["/index.html"], 3), "text/html; charset=utf-8")
    for path in [p for paths in only.values() for p in paths]:
        put(path, page(f"Reached {path}", ["/index.html"], 2), "text/html; charset=utf-8")
    text = PARAGRAPHS[:24]
    manual = [" ".join(text[i:i + 3]) for i in range(0, 24, 3)]
    manual[-1] += f" More at {base}/pdf-only-2.html."
    put("/docs/manual.pdf", make_pdf(manual, ["/pdf-only-1.html"], title="Manual",
                                     author="Docs Team", created="D:20240101120000Z"),
        "application/pdf")
    # the same document printed again: other bytes (date, producer, no compression)
    put("/docs/manual-print2.pdf", make_pdf(manual, ["/pdf-only-1.html"], title="Manual",
                                            author="Docs Team", created="D:20250601090000Z",
                                            producer="another printer", compress=False),
        "application/pdf")
    edited = list(manual)
    edited[3] = "This paragraph was added to the second edition of the manual. " + edited[3]
    put("/docs/manual-edited.pdf", make_pdf(edited, ["/pdf-only-1.html"], title="Manual"),
        "application/pdf")
    put("/docs/mislabeled.html", make_pdf(["A PDF served as HTML. " + PARAGRAPHS[5]],
                                          ["/wrong-type-only.html"]), "text/html")
    put("/docs/untyped", make_pdf(["A PDF served with no type. " + PARAGRAPHS[6]],
                                  ["/missing-type-only.html"]), None)
    put("/news/rss.xml", (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>News</title>'
        f'<link>{base}/index.html</link><description>d</description>'
        '<item><title>First</title><link>/feed-only-1.html</link>'
        '<pubDate>Mon, 01 Jan 2024 10:00:00 GMT</pubDate></item>'
        '<item><title>Second</title><link>/feed-only-2.html</link>'
        '<pubDate>Tue, 02 Jan 2024 10:00:00 GMT</pubDate></item></channel></rss>').encode(),
        "application/rss+xml")
    put("/news/atom.xml", (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        '<title>Atom news</title><id>urn:x</id><updated>2024-01-03T10:00:00Z</updated>'
        '<entry><title>Third</title><link href="/atom-only-1.html"/><id>urn:y</id>'
        '<updated>2024-01-03T10:00:00Z</updated></entry></feed>').encode(), "text/xml")
    put("/notes.txt", f"Notes.\nThe page at {base}/text-only.html is listed here only.\n"
        .encode(), "text/plain; charset=utf-8")
    put("/img/figure.png", _image("PNG"), "image/png")
    put("/img/figure.jpg", _image("JPEG", 85), "image/jpeg")
    for name, data in hostile.items():
        ctype = {"pdf": "application/pdf", "xml": "application/rss+xml",
                 "png": "image/png"}[name.rsplit(".", 1)[1]]
        put(f"/hostile/{name}", data, ctype)
    put("/hostile/slow.pdf", b"%PDF-1.4\n", "application/pdf", slow=200 * 1024 * 1024)
    truth = {"only": only, "exact": [("/docs/manual.pdf", "/docs/manual-print2.pdf"),
                                     ("/img/figure.png", "/img/figure.jpg")],
             "near": [("/docs/manual.pdf", "/docs/manual-edited.pdf")]}
    return {"manifest": manifest, "truth": truth}


def _resource(manifest: dict[str, dict[str, Any]], log: IO[str] | None) -> Any:
    from twisted.internet import reactor
    from twisted.web.resource import Resource
    from twisted.web.server import NOT_DONE_YET

    class Documents(Resource):
        isLeaf = True

        def render(self, request: Any) -> Any:
            start = time.time()
            host = (request.getHeader("host") or "").split(":")[0].lower()
            path = request.uri.decode("latin-1").split("?", 1)[0]
            entry = manifest.get(path)
            status, body = (200, Path(entry["file"]).read_bytes()) if entry else (404, b"no")
            request.setResponseCode(status)
            ctype = entry["type"] if entry else "text/plain"
            if ctype:
                request.setHeader("Content-Type", ctype)
            else:  # no Content-Type at all (Twisted would add text/html)
                request.defaultContentType = None
            if entry and entry["slow"]:
                return self._trickle(request, body, entry["slow"], host, path, start)
            request.setHeader("Content-Length", str(len(body)))
            request.write(body)
            request.finish()
            if log is not None:
                write_entry(log, request, host, path, start, status, len(body))
            return NOT_DONE_YET

        def _trickle(self, request: Any, head: bytes, total: int, host: str, path: str,
                     start: float) -> Any:
            """``total`` bytes, 64 KiB every 10 ms, no Content-Length (a slow download)."""
            sent = [0]
            chunk = b"0" * 65536

            def more() -> None:
                if request.finished or request._disconnected:
                    if log is not None:
                        write_entry(log, request, host, path, start, 200, sent[0])
                    return
                if sent[0] >= total:
                    request.finish()
                    if log is not None:
                        write_entry(log, request, host, path, start, 200, sent[0])
                    return
                request.write(chunk if sent[0] else head)
                sent[0] += len(chunk)
                reactor.callLater(0.01, more)

            more()
            return NOT_DONE_YET

    return Documents()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testweb.documents", description=__doc__)
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--log")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    from twisted.internet import reactor
    from twisted.web.server import Site as WebSite

    manifest = json.loads(Path(args.manifest).read_text())
    log = open(args.log, "a", encoding="utf-8") if args.log else None  # noqa: SIM115
    web = WebSite(_resource(manifest, log))
    web.log = lambda request: None
    port = reactor.listenTCP(args.port, web, interface="127.0.0.1").getHost().port
    signal.signal(signal.SIGTERM, lambda *_: reactor.callFromThread(reactor.stop))
    print(f"READY port={port}", flush=True)
    reactor.run()
    return 0


class DocumentSite(ServerProcess):
    """The document site served in a subprocess at ``http://docs.test:<port>/``."""

    def __init__(self, cache: Path, workdir: Path | None = None) -> None:
        self.cache = cache
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="docsite-"))
        self.log_path = self.dir / "requests.jsonl"
        self.port = 0
        self.truth: dict = {}

    def start(self) -> DocumentSite:
        with socket.socket() as probe:  # the port goes into the documents' absolute URLs
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        site = build_site(self.dir / "files", self.cache, port=port)
        self.truth = site["truth"]
        (self.dir / "manifest.json").write_text(json.dumps(site["manifest"]))
        ready = self._launch([sys.executable, "-m", "testweb.documents", "--manifest",
                              str(self.dir / "manifest.json"), "--log", str(self.log_path),
                              "--port", str(port)])
        self.port = int(ready["port"])
        return self

    def url(self, path: str = "/index.html") -> str:
        return f"http://docs.test:{self.port}{path}"

    hosts_setting = "docs.test=127.0.0.1"


if __name__ == "__main__":
    sys.exit(main())
