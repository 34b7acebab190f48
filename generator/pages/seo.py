"""What a web search engine reads of an entry page: a short plain-text description (the quick
answer) and FAQPage structured data (JSON-LD) built from the entry's own questions.

Both are contributor text placed into HTML, so both are built to be inert: the description is
HTML-escaped by the front matter (render.py); the JSON-LD is JSON with every `<`, `>` and `&`
written as a \\u escape, so no value can close the script element or open another.
"""

from __future__ import annotations

import json

from ..read.link import Page
from ..read.text import one_line, shorten

DESCRIPTION_CHARS = 200


def plain(text: str) -> str:
    """Prose as plain text: code spans lose their backticks, whitespace is one space."""
    return one_line(text.replace("`", ""))


def meta_description(summary: str) -> str:
    """The quick answer as plain text, cut at a word boundary near DESCRIPTION_CHARS."""
    return shorten(plain(summary), DESCRIPTION_CHARS)


def faq_jsonld(page: Page) -> str | None:
    """A FAQPage script element for the entry's own questions, or None if it has none."""
    if not page.entry.faq:
        return None
    data = {
        "@context": "https://schema.org",
        "@type": "FAQPage",
        "mainEntity": [
            {
                "@type": "Question",
                "name": plain(item.q),
                "acceptedAnswer": {"@type": "Answer", "text": plain(item.a)},
            }
            for item in page.entry.faq
        ],
    }
    text = json.dumps(data, ensure_ascii=True, sort_keys=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/ld+json">{text}</script>'


def with_faq_data(page_html: str, page: Page | None) -> str:
    """`page_html` with the entry's FAQPage data at the end of its head, if it has questions."""
    script = faq_jsonld(page) if page else None
    if script is None or "</head>" not in page_html:
        return page_html
    at = page_html.index("</head>")
    return page_html[:at] + script + "\n" + page_html[at:]
