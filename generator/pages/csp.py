"""A Content-Security-Policy for every built page, written into its <head>.

No inline script runs unless it is one the theme wrote: an inline script outside the page's
content (`<article>`) that starts the way one of Material's own does is allowed by its SHA-256
hash, and nothing else is (`unallowed_scripts` lists the rest, which the plugin reports).
Contributor text cannot produce a script by construction (escape.py); this policy is the second
wall, so that a mistake in escaping still runs nothing. Pages that take a log
(`connect_src="'none'"`) may not connect anywhere, so the log cannot leave the browser; every
other page may fetch from its own site only (the search index). No page may load a plugin, frame
another page or submit a form (a meta policy cannot stop a page from being framed: the diagnose
page checks that itself).
"""

from __future__ import annotations

import base64
import hashlib
import re

_SCRIPT = re.compile(r"<script(?P<attrs>(?:\s[^>]*)?)>(?P<body>.*?)</script>", re.DOTALL)
_ARTICLE = re.compile(r"<article\b.*?</article>", re.DOTALL)
_CHARSET = re.compile(r"<meta charset=[\"']?utf-8[\"']?\s*/?>", re.IGNORECASE)
_DATA_TYPES = re.compile(r"""\stype=["']?application/(ld\+)?json""", re.IGNORECASE)
# How Material for MkDocs 9's inline scripts begin (base.html, partials/palette.html and the
# content-tabs features): the theme's scope and storage helpers, palette and tab restore.
THEME_SCRIPT_STARTS = ("__md_scope=", "var palette=", "var tabs=", "var target=")


def _inline_scripts(page: str) -> tuple[list[str], list[str]]:
    """(bodies of the theme's inline scripts, bodies of any other inline script)."""
    content = [m.span() for m in _ARTICLE.finditer(page)]
    theme: list[str] = []
    other: list[str] = []
    for match in _SCRIPT.finditer(page):
        attrs, body = match.group("attrs"), match.group("body")
        if " src=" in attrs or _DATA_TYPES.search(attrs):
            continue
        inside = any(start <= match.start() < end for start, end in content)
        (other if inside or not body.startswith(THEME_SCRIPT_STARTS) else theme).append(body)
    return theme, other


def unallowed_scripts(page: str) -> list[str]:
    """Inline scripts the policy blocks: none should exist."""
    return _inline_scripts(page)[1]


def _hash(body: str) -> str:
    digest = hashlib.sha256(body.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def policy(page: str, connect_src: str = "'self'") -> str:
    hashes = sorted({_hash(body) for body in _inline_scripts(page)[0]})
    directives = {
        "default-src": "'self'",
        # Pagefind's search runs as WebAssembly, on the pages that may fetch the index.
        "script-src": " ".join(
            ["'self'", *(["'wasm-unsafe-eval'"] if connect_src == "'self'" else []), *hashes]
        ),
        "style-src": "'self' 'unsafe-inline'",  # the theme sets style attributes
        "img-src": "'self' data:",
        "font-src": "'self'",
        "connect-src": connect_src,
        "worker-src": "'self' blob:",
        "frame-src": "'none'",
        "object-src": "'none'",
        "form-action": "'none'",
        "base-uri": "'self'",
    }
    return "; ".join(f"{name} {value}" for name, value in directives.items())


def add_policy(page: str, connect_src: str = "'self'") -> str:
    """`page` with its policy as the first element after the charset declaration, so that it
    governs everything the page loads."""
    content = policy(page, connect_src)
    assert not set(content) & set('"<>&'), "a policy is keywords, hashes and hosts"
    meta = f'<meta http-equiv="Content-Security-Policy" content="{content}">'
    match = _CHARSET.search(page)
    if match is None:
        raise ValueError("page has no <meta charset> to put the policy after")
    return page[: match.end()] + "\n    " + meta + page[match.end() :]
