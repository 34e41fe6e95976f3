"""App-shell detection: does a fetched HTML page need a browser to show its content?

An app shell (a single-page application's ``index.html``) carries little visible text, scripts
that build the page, and usually an empty element the framework mounts into.  A server-rendered
page may carry as many scripts, but its text and links are already there.  The verdict is a
score over several signals, never one rule: a short page alone, or many scripts alone, is not
a shell.  The signals, each counted once:

* ``little_text`` (+2): fewer than ``min_words`` visible words (scripts, styles, templates and
  ``<noscript>`` left out); ``some_text`` (+1) below three times that;
* ``scripts`` (+1): at least three ``<script>`` elements, or 20 kB of inline script;
* ``empty_root`` (+2): an element frameworks mount into (``id`` root, app, __next, __nuxt,
  ___gatsby, svelte; ``ng-app``; ``<app-root>``) with no text in it;
* ``empty_body`` (+1): no visible word and no image, form, table, media or frame at all
  (a body of scripts: Ember, Flutter, SvelteKit);
* ``noscript_js`` (+1): a ``<noscript>`` that asks for JavaScript;
* ``few_links`` (+1): fewer than three ``<a href>`` outside ``<noscript>``;
* ``server_content`` (-1): a form, table, image or media element served in the HTML.

Vetoes (the page is served with its content): ``max_words`` visible words or more, a
``<noscript>`` that carries the content itself (``min_words`` words or three links), or a
framework's server-rendering mark (``data-server-rendered``, ``ng-server-context``).
A page is a shell when its score reaches ``threshold`` (4: two strong signals, or one strong
and two weak ones).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import lxml.html
from lxml import etree

__all__ = ["ShellDetector", "Verdict"]

_ROOT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "main-app",
                       "react-root", "vue-app"})
_ROOT_TAGS = frozenset({"app-root"})
_SSR_ATTRS = ("data-server-rendered", "ng-server-context")
_NOSCRIPT_JS = re.compile(r"(enable|requires?|need|turn on|activate|without)\W+(\w+\W+){0,3}"
                          r"javascript|javascript\W+(\w+\W+){0,2}(disabled|required|needed|off)",
                          re.IGNORECASE)
_SKIP = frozenset({"script", "style", "template", "noscript", "head", "title", "meta", "link"})
_WORD = re.compile(r"\w+", re.UNICODE)
_CONTENT = ("form", "table", "img", "picture", "video", "audio", "iframe", "svg", "canvas",
            "input", "select", "textarea")


@dataclass(frozen=True)
class Verdict:
    shell: bool
    score: int
    words: int
    scripts: int
    signals: tuple[str, ...] = field(default=())
    veto: str | None = None

    def as_dict(self) -> dict:
        return {"shell": self.shell, "score": self.score, "words": self.words,
                "scripts": self.scripts, "signals": list(self.signals), "veto": self.veto}


@dataclass(frozen=True)
class ShellDetector:
    threshold: int = 4
    min_words: int = 30
    max_words: int = 300

    def quick_reject(self, body: bytes) -> bool:
        """True if the page cannot be a shell, judged from its bytes without parsing: no
        script at all.  (Most pages of a crawl leave here.)"""
        return b"<script" not in body and b"<SCRIPT" not in body

    def judge(self, body: bytes | str, encoding: str = "utf-8") -> Verdict:
        if isinstance(body, bytes):
            if self.quick_reject(body):
                return Verdict(False, 0, -1, 0, veto="no_script")
            try:
                text = body.decode(encoding, "replace")
            except LookupError:
                text = body.decode("utf-8", "replace")
        else:
            text = body
        try:
            tree = lxml.html.document_fromstring(text)
        except (etree.ParserError, ValueError):
            return Verdict(False, 0, 0, 0, veto="unparseable")
        return self._judge_tree(tree)

    def _judge_tree(self, tree: lxml.html.HtmlElement) -> Verdict:
        scripts = inline = noscript_words = noscript_links = 0
        noscript_js = ssr = False
        for el in tree.iter("script"):
            scripts += 1
            inline += len(el.text or "")
        for el in tree.iter("noscript"):
            content = el.text_content()
            noscript_js = noscript_js or bool(_NOSCRIPT_JS.search(content))
            noscript_words += len(_WORD.findall(content))
            # in <head> an HTML parser keeps a noscript's markup as text: count its hrefs too
            noscript_links += len(el.findall(".//a[@href]")) + content.count("href=")
        etree.strip_elements(tree, *_SKIP, with_tail=False)
        links = sum(1 for _ in tree.iter("a") if _.get("href") is not None)
        roots = []
        for el in tree.iter():
            if not isinstance(el.tag, str):
                continue
            if any(el.get(a) is not None for a in _SSR_ATTRS):
                ssr = True
            if el.get("id") in _ROOT_IDS or el.tag in _ROOT_TAGS or el.get("ng-app") is not None:
                roots.append(el)
        empty_root = any(not _WORD.search(el.text_content()) for el in roots)
        words = len(_WORD.findall(tree.text_content()))
        content = any(True for _ in tree.iter(*_CONTENT))
        signals: list[str] = []
        score = 0
        if words < self.min_words:
            signals.append("little_text")
            score += 2
        elif words < 3 * self.min_words:
            signals.append("some_text")
            score += 1
        if scripts >= 3 or inline >= 20_000:
            signals.append("scripts")
            score += 1
        if empty_root:
            signals.append("empty_root")
            score += 2
        if words == 0 and not content and links == 0:
            signals.append("empty_body")
            score += 1
        if noscript_js:
            signals.append("noscript_js")
            score += 1
        if links < 3:
            signals.append("few_links")
            score += 1
        if content:
            signals.append("server_content")
            score -= 1
        veto = None
        if words >= self.max_words:
            veto = "text"
        elif noscript_words >= self.min_words or noscript_links >= 3:
            veto = "noscript_content"
        elif ssr:
            veto = "server_rendered"
        shell = veto is None and score >= self.threshold
        return Verdict(shell, score, words, scripts, tuple(signals), veto)

