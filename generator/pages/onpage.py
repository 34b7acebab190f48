"""An entry's "On this page" list, for screens without the sidebar's table of contents.

Material shows the table of contents beside the page only on wide screens; on a phone an entry
of twenty screens had no way around it. The entry template leaves an empty slot after the quick
answer, and the finish stage fills it with the page's own second-level headings as the builder
wrote them, so the list can only name sections the page really has. The headings are the
template's, never contributor text."""

from __future__ import annotations

import html as html_lib
import re

SLOT = '<div class="enc-onpage"></div>'
_H2 = re.compile(r'<h2 id="([A-Za-z0-9_-]+)"[^>]*>(.*?)</h2>', re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_PERMALINK = re.compile(r'<a class="headerlink".*?</a>', re.DOTALL)


def with_onpage(page_html: str) -> str:
    """`page_html` with its slot filled by links to its sections (unchanged without a slot)."""
    if SLOT not in page_html:
        return page_html
    items = []
    for anchor, inner in _H2.findall(page_html):
        title = html_lib.unescape(_TAG.sub("", _PERMALINK.sub("", inner))).strip()
        if title:
            items.append(f'<li><a href="#{anchor}">{html_lib.escape(title)}</a></li>')
    if not items:
        return page_html.replace(SLOT, "")
    filled = (
        '<details class="enc-onpage" data-pagefind-ignore><summary>On this page</summary>'
        f"<ul>{''.join(items)}</ul></details>"
    )
    return page_html.replace(SLOT, filled, 1)
