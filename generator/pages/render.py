"""Render stage: the encyclopedia as Markdown pages, through Jinja2 templates.

Templates live in generator/pages/templates/ and can be overridden by a file of the same name in the
site's `overrides/encyclopedia/` folder. Every value a template prints is escaped as inline text
unless a filter already made it Markdown (escape.Md), so contributor text is data, never markup.
"""

from __future__ import annotations

import functools
import html
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from ..read import reproduced
from ..read.link import CategoryPage, Encyclopedia, Link, Page, relative_uri
from ..read.model import SEVERITIES, SetRun
from ..read.reproduced import Reproduction
from ..read.text import after_first_sentence, first_sentence
from . import faq, seo
from .escape import Md, attr, block, code_block, inline

TEMPLATES = Path(__file__).parent / "templates"

SEVERITY_TEXT = {
    "critical": "The run dies or silently produces a wrong model, and the cause is hard to find "
    "without this page.",
    "high": "The run dies; the cause is known and the fix is usually quick once confirmed.",
    "medium": "The run is degraded (slow, wasteful) or fails only in some configurations.",
    "low": "A warning, a tooling question or a usage mistake that costs time, not the run.",
}


# Pages that list entries across categories show at most this many per group, then point to the
# category pages for the rest: their size stays bounded however many entries there are. Both are
# above today's largest group, so the shipped site's lists are complete.
SEVERITY_LIST_LIMIT = 100
CATEGORY_LIST_LIMIT = 30
# Category and tag pages list this many entries each, then continue on further pages.
LIST_PAGE_SIZE = 100


def more_by_category(
    enc: Encyclopedia, pages: tuple[Page, ...], shown: int
) -> list[tuple[CategoryPage, int]]:
    """The categories of the entries after the first `shown`, with how many each holds."""
    counts: dict[str, int] = {}
    for page in pages[shown:]:
        counts[page.category] = counts.get(page.category, 0) + 1
    return [(c, counts[c.slug]) for c in enc.categories if c.slug in counts]


@dataclass(frozen=True)
class RenderedPage:
    """A generated page: its path in the docs tree and its Markdown."""

    src_uri: str
    markdown: str


def _finalize(value: Any) -> Any:
    if isinstance(value, Md):
        return value
    if isinstance(value, bool) or value is None:
        raise TypeError(f"template printed {value!r}: test it with `if` instead")
    if isinstance(value, (int, float)):
        return str(value)
    return inline(str(value))


def _front_matter(**fields: Any) -> Md:
    """Front matter for a page. JSON is valid YAML and quotes every string, so no value can break
    out of it; strings are HTML-escaped because the theme prints `title` and `description` into
    the page head without escaping them."""
    lines = [
        f"{key}: {json.dumps(_html_text(value), ensure_ascii=False)}"
        for key, value in fields.items()
        if value is not None
    ]
    return Md("---\n" + "\n".join(lines) + "\n---")


def tag_groups(
    enc: Encyclopedia,
) -> list[tuple[CategoryPage, list[tuple[str, tuple[Page, ...]]]]]:
    """Tags by the category that holds most of their entries (the earlier category on a tie),
    categories in their order, tags alphabetical within each."""
    order = {c.slug: n for n, c in enumerate(enc.categories)}
    groups: dict[str, list[tuple[str, tuple[Page, ...]]]] = {}
    for tag, pages in enc.tags.items():
        counts: dict[str, int] = {}
        for page in pages:
            counts[page.category] = counts.get(page.category, 0) + 1
        home = min(counts, key=lambda slug: (-counts[slug], order[slug]))
        groups.setdefault(home, []).append((tag, pages))
    return [(c, groups[c.slug]) for c in enc.categories if c.slug in groups]


def _html_text(value: Any) -> Any:
    if isinstance(value, str):
        return html.escape(value, quote=True)
    if isinstance(value, (list, tuple)):
        return [_html_text(v) for v in value]
    if isinstance(value, dict):
        return {k: _html_text(v) for k, v in value.items()}
    return value


def environment(override_dir: Path | None = None) -> jinja2.Environment:
    """The template environment, one per override folder: Jinja reloads a template whose file
    changed, so templates stay the same objects across rebuilds until they are edited."""
    return _environment(str(override_dir) if override_dir and override_dir.is_dir() else None)


@functools.lru_cache(maxsize=8)
def _environment(override_dir: str | None) -> jinja2.Environment:
    search = [override_dir] if override_dir else []
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([*search, str(TEMPLATES)]),
        autoescape=False,  # the output is Markdown: _finalize escapes for Markdown instead
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        # `{#id}` is Markdown attribute syntax here, so Jinja comments use another marker.
        comment_start_string="{##",
        comment_end_string="##}",
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        inline=inline,
        block=block,
        code=code_block,
        attr=attr,
        md=Md,
        cell=inline,
        first_sentence=first_sentence,
        after_first_sentence=after_first_sentence,
        json=lambda v: Md(json.dumps(v)),
    )
    env.tests["one_line"] = lambda code: "\n" not in code.strip()
    env.globals.update(
        front_matter=_front_matter,
        meta_description=seo.meta_description,
        severities=SEVERITIES,
        reproduced_runs=_reproduced_runs,
        severity_text=SEVERITY_TEXT,
        severity_list_limit=SEVERITY_LIST_LIMIT,
        category_list_limit=CATEGORY_LIST_LIMIT,
        more_by_category=more_by_category,
    )
    return env


def _entry_key(enc: Encyclopedia, page: Page, category: CategoryPage) -> tuple[Any, ...]:
    """Everything an entry page is rendered from: its record, the titles and severities of the
    pages it links to and that link to it, its category, the last reproducer run and a retired
    entry's replacement."""
    target = enc.pages.get(page.entry.replaced_by or "")
    return (
        page.entry,
        category.slug,
        category.category.title,
        page.links_key,
        _reproduced_runs(enc, page),
        (target.category, target.entry.title) if target else None,
    )


def _reproduced_runs(enc: Encyclopedia, page: Page) -> list[tuple[SetRun, Reproduction | None]]:
    """The sets an entry's reproducer names, each with its last run of the current scripts."""
    spec = page.entry.reproduce
    return reproduced.runs_of(enc.reproduced, page.id, spec) if spec else []


@dataclass(frozen=True)
class Pager:
    """Where one page of a long list (a category's or a tag's entries) sits among the pages the
    list is split into, `LIST_PAGE_SIZE` entries each: the first keeps the list's own path."""

    number: int
    uris: tuple[str, ...]  # the docs path of each page of the list, the first first
    total: int  # entries in the whole list

    @property
    def count(self) -> int:
        return len(self.uris)

    @property
    def first(self) -> int:
        return (self.number - 1) * LIST_PAGE_SIZE + 1

    @property
    def last(self) -> int:
        return min(self.number * LIST_PAGE_SIZE, self.total)

    @property
    def suffix(self) -> str:
        """What the page title (in the head) of a page after the first adds."""
        return f" (page {self.number} of {self.count})" if self.number > 1 else ""


def paginate(first_uri: str, pages: tuple[Page, ...]) -> list[tuple[Pager, tuple[Page, ...]]]:
    """A list split into pages: `memory/index.md`, then `memory/page/2.md` and so on (an entry
    page is `memory/<id>.md`, so no entry can take one of these paths)."""
    stem = first_uri.removesuffix(".md").removesuffix("/index")
    chunks = [pages[i : i + LIST_PAGE_SIZE] for i in range(0, len(pages), LIST_PAGE_SIZE)]
    chunks = chunks or [()]
    uris = (first_uri, *(f"{stem}/page/{n}.md" for n in range(2, len(chunks) + 1)))
    return [(Pager(n, uris, len(pages)), chunk) for n, chunk in enumerate(chunks, start=1)]


PageMemo = dict[str, tuple[Any, tuple[Any, ...], str]]


def render_site(
    enc: Encyclopedia,
    edit_url: str | None,
    override_dir: Path | None = None,
    memo: PageMemo | None = None,
    only: Callable[[str], bool] | None = None,
) -> list[RenderedPage]:
    """Every generated page of the site, in a stable order (see `each_page`)."""
    return list(each_page(enc, edit_url, override_dir, memo, only))


def each_page(
    enc: Encyclopedia,
    edit_url: str | None,
    override_dir: Path | None = None,
    memo: PageMemo | None = None,
    only: Callable[[str], bool] | None = None,
) -> Iterator[RenderedPage]:
    """Every generated page of the site, in a stable order. `memo` (a preview's) holds the last
    text of each page with the template and a key of everything the page is rendered from; a
    preview keeps the records of unchanged files, so comparing keys is cheap (a tuple compares
    the same record by identity first) and a rebuild renders only pages whose inputs changed.
    With `only`, a page it refuses is not rendered: it comes with the text it last had (empty
    when none), for a preview that needs every page's path but writes only some pages now."""
    pages = _Renderer(enc, environment(override_dir), edit_url, memo, only)
    yield from _overviews(enc, pages)
    yield from _tag_pages(enc, pages)
    yield from _category_pages(enc, pages)
    for alias, page in sorted(enc.aliases.items()):
        target = (page.category, page.id, page.entry.title)
        yield pages.add("redirect.md.j2", f"{page.category}/{alias}.md", target, target=page)


@dataclass(frozen=True)
class _Renderer:
    """Renders one page from its template, or takes it from the memo when its key is unchanged."""

    enc: Encyclopedia
    env: jinja2.Environment
    edit_url: str | None
    memo: PageMemo | None
    only: Callable[[str], bool] | None

    def add(
        self,
        template: str,
        src_uri: str,
        key: tuple[Any, ...],
        edit_path: str | None = None,
        **context: Any,
    ) -> RenderedPage:
        def link(target: Page | CategoryPage | Link | str) -> Md:
            """Relative link to another page's Markdown source, so MkDocs checks it."""
            return Md(relative_uri(src_uri, target if isinstance(target, str) else target.src_uri))

        edit = self.edit_url.format(path=edit_path) if self.edit_url and edit_path else None
        last = self.memo.get(src_uri) if self.memo is not None else None
        if self.only is not None and not self.only(src_uri):
            return RenderedPage(src_uri, last[2] if last else "")
        compiled = self.env.get_template(template)
        if last and last[0] is compiled and last[1] == (key, edit):
            return RenderedPage(src_uri, last[2])
        page = context.get("page")
        if isinstance(page, Page):
            context["faq"] = faq.questions(page)  # only for a page that is rendered
        text = compiled.render(src_uri=src_uri, enc=self.enc, link=link, edit=edit, **context)
        if self.memo is not None:
            self.memo[src_uri] = (compiled, (key, edit), text)
        return RenderedPage(src_uri, text)


def _everything(enc: Encyclopedia) -> tuple[Any, ...]:
    """What the pages that show the whole encyclopedia (home, overviews) are rendered from. Each
    entry goes in with its category and id: a record does not hold its id (the file name does),
    so a renamed file's record equals the old one."""
    return (
        tuple(c.category for c in enc.categories),
        tuple((p.category, p.id, p.entry) for p in enc.pages.values()),
        tuple(sorted(enc.tag_about.items())),
        enc.common,
    )


def _overviews(enc: Encyclopedia, pages: _Renderer) -> Iterator[RenderedPage]:
    everything = _everything(enc)
    yield pages.add("home.md.j2", "index.md", everything)
    yield pages.add("categories.md.j2", "categories.md", everything)
    yield pages.add("severity.md.j2", "severity.md", everything)
    yield pages.add("diagnose.md.j2", "diagnose.md", ())
    groups = tag_groups(enc)
    yield pages.add(
        "tags.md.j2", "tags/index.md", everything, tag_groups=groups, about=enc.tag_about
    )


def _tag_pages(enc: Encyclopedia, pages: _Renderer) -> Iterator[RenderedPage]:
    titles = {c.slug: c.category.title for c in enc.categories}
    for tag, tagged in enc.tags.items():
        about = enc.tag_about.get(tag)
        for pager, shown in paginate(f"tags/{tag}.md", tagged):
            key = (tag, about, pager, tuple((p.category, p.id, p.entry) for p in shown), titles)
            yield pages.add(
                "tag.md.j2",
                pager.uris[pager.number - 1],
                key,
                tag=tag,
                shown=shown,
                pager=pager,
                about=about,
                category_titles=titles,
            )


def _category_pages(enc: Encyclopedia, pages: _Renderer) -> Iterator[RenderedPage]:
    """Each category's list pages, then its entries' pages."""
    for category in enc.categories:
        for pager, shown in paginate(category.src_uri, category.pages):
            yield pages.add(
                "category.md.j2",
                pager.uris[pager.number - 1],
                (category.category, pager, tuple((p.id, p.entry) for p in shown)),
                category.path if pager.number == 1 else None,
                category=category,
                shown=shown,
                pager=pager,
            )
        for page in category.pages:
            yield pages.add(
                "entry.md.j2",
                page.src_uri,
                _entry_key(enc, page, category),
                page.path,
                page=page,
                e=page.entry,
                category=category,
            )
