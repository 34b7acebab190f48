"""Read the text a browser would show inside given elements of an HTML page."""

from __future__ import annotations

from html.parser import HTMLParser

_VOID = {"br", "img", "input", "meta", "link", "hr", "wbr", "source"}


class _Collector(HTMLParser):
    def __init__(self, tags: set[str]) -> None:
        super().__init__(convert_charrefs=True)
        self.tags = tags
        self.open: list[tuple[str, list[str]]] = []
        self.found: dict[str, list[str]] = {t: [] for t in tags}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            return
        cls = dict(attrs).get("class") or ""
        self.open.append((tag, [] if "headerlink" not in cls else ["__skip__"]))

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or all(name != tag for name, _ in self.open):
            return
        while self.open:
            name, parts = self.open.pop()
            text = "" if parts[:1] == ["__skip__"] else "".join(parts)
            if name in self.tags:
                self.found[name].append(" ".join(text.split()))
            if self.open and parts[:1] != ["__skip__"]:
                self.open[-1][1].append(text)
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.open:
            self.open[-1][1].append(data)


def texts(html: str, *tags: str) -> dict[str, list[str]]:
    """For each tag name, the whitespace-normalised text of every such element."""
    collector = _Collector(set(tags))
    collector.feed(html)
    collector.close()
    return collector.found
