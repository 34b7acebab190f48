"""Link stage: cross-entry checks and the graph the pages are rendered from."""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from . import reserved, rules
from .load import Draft, Loaded, LoadedCategory, LoadedTags
from .model import SEVERITIES, Category, Entry, Related, is_slug
from .problems import Problem
from .reproduced import Results
from .text import PLACEHOLDERS
from .validate import closest, did_you_mean


class Relation(StrEnum):
    """How a page relates to the page at the other end of a link, as the entry format spells it
    (model.RelationName): `A leads-to B` on A's page is `often-caused-by A` on B's."""

    CONFUSED_WITH = "confused-with"
    OFTEN_CAUSED_BY = "often-caused-by"
    LEADS_TO = "leads-to"
    CO_OCCURS_WITH = "co-occurs-with"
    SEE_ALSO = "see-also"

    @property
    def words(self) -> str:
        """As a page shows it."""
        return self.value.replace("-", " ").replace("co occurs", "co-occurs")

    @property
    def inverse(self) -> Relation:
        """The same edge read from the other end: causes turn round, the rest are symmetric."""
        turned = {Relation.LEADS_TO: Relation.OFTEN_CAUSED_BY}
        turned |= {v: k for k, v in turned.items()}
        return turned.get(self, self)


def under(base: str, page_url: str) -> str:
    """A page's URL (`memory/x/`) under the site URL `base` (`/`: a path from the site's root)."""
    return base.rstrip("/") + "/" + page_url


@dataclass(frozen=True)
class Link:
    """An edge of the related graph, seen from one page: the page at the other end, as much of
    it as the link shows, and how the two relate."""

    id: str
    category: str
    title: str
    severity: str
    relation: Relation  # this page's relation to the other one
    why: str

    @property
    def url(self) -> str:
        return f"{self.category}/{self.id}/"

    @property
    def src_uri(self) -> str:
        return f"{self.category}/{self.id}.md"


@dataclass(frozen=True, eq=False, repr=False)
class Page:
    id: str
    category: str
    path: str
    entry: Entry
    related: tuple[Link, ...] = ()
    referenced_by: tuple[Link, ...] = ()

    def __repr__(self) -> str:
        return f"Page({self.id!r})"

    @property
    def url(self) -> str:
        return f"{self.category}/{self.id}/"

    @property
    def links_key(self) -> tuple[tuple[Link, ...], tuple[Link, ...]]:
        """Everything this page shows of the pages it links to and that link to it, by value:
        what a preview compares to know whether the page's output can be reused."""
        return (self.related, self.referenced_by)

    @property
    def src_uri(self) -> str:
        return f"{self.category}/{self.id}.md"


@dataclass(frozen=True)
class CategoryPage:
    slug: str
    path: str
    category: Category
    pages: tuple[Page, ...]

    @property
    def url(self) -> str:
        return f"{self.slug}/"

    @property
    def src_uri(self) -> str:
        return f"{self.slug}/index.md"


@dataclass(frozen=True)
class Encyclopedia:
    categories: tuple[CategoryPage, ...]
    pages: dict[str, Page]
    aliases: dict[str, Page]
    tag_about: dict[str, str] = field(default_factory=dict)  # from _tags.yaml, if the site has it
    # From _reproduced.json, if the site has it: the last run of each reproducer on each set.
    reproduced: Results = field(default_factory=dict)
    common: tuple[str, ...] = ()  # from _common.yaml: the failures readers meet most, in order

    @property
    def common_pages(self) -> tuple[Page, ...]:
        """The common failures for the home page: the listed ones, else the most linked-to."""
        if self.common:
            return tuple(self.pages[i] for i in self.common if i in self.pages)
        return tuple(sorted(self.pages.values(), key=listing_key(()))[:12])

    @property
    def tags(self) -> dict[str, tuple[Page, ...]]:
        by_tag: dict[str, list[Page]] = defaultdict(list)
        for page in self.pages.values():
            for tag in page.entry.tags:
                by_tag[tag].append(page)
        key = listing_key(self.common)
        return {tag: tuple(sorted(by_tag[tag], key=key)) for tag in sorted(by_tag)}

    def by_severity(self) -> dict[str, tuple[Page, ...]]:
        ordered = sorted(self.pages.values(), key=listing_key(self.common))
        return {s: tuple(p for p in ordered if p.entry.severity == s) for s in SEVERITIES}


def listing_key(common: tuple[str, ...]) -> Callable[[Page], tuple[int, int, int, str]]:
    """The one order of every list of entries: the common failures in their order, then the
    entries more others link to, then severity, then title."""
    place = {entry_id: n for n, entry_id in enumerate(common)}

    def key(page: Page) -> tuple[int, int, int, str]:
        return (
            place.get(page.id, len(place)),
            -len(page.referenced_by),
            SEVERITIES.index(page.entry.severity),
            page.entry.title.lower(),
        )

    return key


def relative_uri(from_uri: str, to_uri: str) -> str:
    """The relative Markdown link from the page at `from_uri` to the one at `to_uri` (both docs
    paths such as `memory/x.md`), which MkDocs checks and turns into the page URL."""
    return posixpath.relpath(to_uri, posixpath.dirname(from_uri) or ".")


def _pos(loaded: Loaded, *path: str | int) -> tuple[int, int]:
    return loaded.source.position(tuple(path))


def _check_ids(entries: Sequence[Loaded]) -> list[Problem]:
    problems: list[Problem] = []
    first: dict[str, Loaded] = {}
    for loaded in entries:
        if taken := reserved.entry_name_problem(loaded.id, "id"):
            problems.append(Problem(loaded.path, 1, 1, *taken))
        if loaded.id in first:
            problems.append(
                Problem(
                    loaded.path,
                    1,
                    1,
                    f"id `{loaded.id}` is also used by {first[loaded.id].path}",
                    "rename one of the two files",
                )
            )
        else:
            first[loaded.id] = loaded
    alias_owner: dict[str, Loaded] = {}
    for loaded in entries:
        for i, alias in enumerate(loaded.entry.aliases):
            line, col = _pos(loaded, "aliases", i)
            if taken := reserved.entry_name_problem(alias, "alias"):
                problems.append(Problem(loaded.path, line, col, *taken))
            elif alias in first:
                problems.append(
                    Problem(
                        loaded.path,
                        line,
                        col,
                        f"alias `{alias}` is the id of {first[alias].path}",
                        "remove the alias or rename that entry",
                    )
                )
            elif alias in alias_owner:
                problems.append(
                    Problem(
                        loaded.path,
                        line,
                        col,
                        f"alias `{alias}` is also claimed by {alias_owner[alias].path}",
                        "keep it on one entry only",
                    )
                )
            else:
                alias_owner[alias] = loaded
    return problems


def _check_related(loaded: Loaded, ids: set[str], broken: set[str]) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, rel in enumerate(loaded.entry.related):
        line, col = _pos(loaded, "related", i, "id")
        if rel.id == loaded.id:
            problems.append(
                Problem(loaded.path, line, col, "entry lists itself as related", "remove this item")
            )
        elif rel.id in broken:
            pass  # the target exists but is invalid: its own problems are reported
        elif rel.id not in ids:
            problems.append(_unknown_related(loaded.path, line, col, rel.id, ids))
        elif rel.id in seen:
            problems.append(
                Problem(
                    loaded.path,
                    line,
                    col,
                    f"`{rel.id}` is listed twice in related",
                    "keep one link per entry",
                )
            )
        seen.add(rel.id)
    entry = loaded.entry
    if entry.replaced_by is not None:
        line, col = _pos(loaded, "replaced_by")
        if entry.status != "retired":
            problems.append(
                Problem(
                    loaded.path,
                    line,
                    col,
                    "`replaced_by` on an active entry",
                    "set `status: retired` or remove `replaced_by`",
                )
            )
        elif entry.replaced_by not in ids or entry.replaced_by == loaded.id:
            problems.append(
                Problem(
                    loaded.path,
                    line,
                    col,
                    f"`replaced_by: {entry.replaced_by}` is not another entry",
                    f"{did_you_mean(entry.replaced_by, ids)}name the entry that replaces this one",
                )
            )
    return problems


def _check_tags(entries: Sequence[Loaded], vocabulary: LoadedTags, complete: bool) -> list[Problem]:
    """Tags come from one vocabulary, so a typo cannot open a new tag page of its own. `complete`
    is false when some entry failed to load: its tags are unknown, so none is reported unused."""
    problems: list[Problem] = []
    used: set[str] = set()
    for loaded in entries:
        for i, tag in enumerate(loaded.entry.tags):
            used.add(tag)
            # a placeholder such as `todo` is reported as one already, not as a tag to add
            if tag not in vocabulary.about and not PLACEHOLDERS.search(tag):
                # a misspelt tag "uses" the tag it was meant to be: one mistake, one message
                used.add(closest(tag, vocabulary.about) or tag)
                line, col = _pos(loaded, "tags", i)
                problems.append(_unknown_tag(loaded.path, line, col, tag, vocabulary))
    if complete:
        for tag in sorted(set(vocabulary.about) - used):
            line, col = vocabulary.source.position(("tags", tag), key=True)
            problems.append(
                Problem(
                    vocabulary.path,
                    line,
                    col,
                    f"tag `{tag}` is used by no entry",
                    "remove it, or tag the entries it is about",
                )
            )
    return problems


def _causes(entries: Sequence[Loaded]) -> dict[str, set[str]]:
    """Directed "cause -> effect" edges from leads-to / often-caused-by relations."""
    edges: dict[str, set[str]] = defaultdict(set)
    for loaded in entries:
        for rel in loaded.entry.related:
            if rel.relation == "leads-to":
                edges[loaded.id].add(rel.id)
            elif rel.relation == "often-caused-by":
                edges[rel.id].add(loaded.id)
    return edges


def _check_cycles(entries: Sequence[Loaded]) -> list[Problem]:
    """A causal cycle (A leads to B leads to A) is a contradiction in the data."""
    edges = _causes(entries)
    by_id = {loaded.id: loaded for loaded in entries}
    problems: list[Problem] = []
    reported: set[frozenset[str]] = set()
    for loaded in entries:
        for i, rel in enumerate(loaded.entry.related):
            if rel.relation not in ("leads-to", "often-caused-by") or rel.id not in by_id:
                continue
            cause, effect = (
                (loaded.id, rel.id) if rel.relation == "leads-to" else (rel.id, loaded.id)
            )
            cycle = _path(edges, effect, cause)
            key = frozenset(cycle)
            if cycle and key not in reported:
                reported.add(key)
                line, col = _pos(loaded, "related", i, "relation")
                chain = " -> ".join([cause, *cycle])
                problems.append(
                    Problem(
                        loaded.path,
                        line,
                        col,
                        f"circular cause: {chain}",
                        "one of these relations points the wrong way: use "
                        "`co-occurs-with` or `see-also` where neither causes the other",
                    )
                )
    return problems


def _path(edges: dict[str, set[str]], start: str, goal: str) -> list[str]:
    """A path start -> ... -> goal in `edges`, or an empty list."""
    stack, parent = [start], {start: ""}
    while stack:
        node = stack.pop()
        if node == goal:
            path = [node]
            while parent[path[-1]]:
                path.append(parent[path[-1]])
            return path[::-1]
        for nxt in sorted(edges.get(node, ())):
            if nxt not in parent:
                parent[nxt] = node
                stack.append(nxt)
    return []


def check_drafts(
    drafts: Sequence[Draft], ids: set[str] | frozenset[str], tags: LoadedTags | None
) -> list[Problem]:
    """The tag and related-id checks of valid entries, on the raw data of invalid ones (only
    items that are slugs: anything else already has a schema problem of its own)."""
    problems: list[Problem] = []
    for draft in drafts:
        data = draft.source.data
        assert isinstance(data, dict)
        raw_tags = data.get("tags")
        for i, tag in enumerate(raw_tags if isinstance(raw_tags, list) else ()):
            if tags is None or not isinstance(tag, str) or not is_slug(tag):
                continue
            if tag not in tags.about and not PLACEHOLDERS.search(tag):
                line, col = draft.source.position(("tags", i))
                problems.append(_unknown_tag(draft.path, line, col, tag, tags))
        raw_related = data.get("related")
        for i, item in enumerate(raw_related if isinstance(raw_related, list) else ()):
            target = item.get("id") if isinstance(item, dict) else None
            if not isinstance(target, str) or not is_slug(target) or target == draft.id:
                continue
            if target not in ids:
                line, col = draft.source.position(("related", i, "id"))
                problems.append(_unknown_related(draft.path, line, col, target, ids))
    return problems


def _unknown_tag(path: str, line: int, col: int, tag: str, vocabulary: LoadedTags) -> Problem:
    """A tag outside the vocabulary, in a valid entry or in the raw data of an invalid one."""
    return Problem(
        path,
        line,
        col,
        f"tag `{tag}` is not in {vocabulary.path}",
        f"{did_you_mean(tag, vocabulary.about)}use a tag from that file, or add "
        f"`{tag}: <what it covers>` to it",
    )


def _unknown_related(
    path: str, line: int, col: int, target: str, ids: set[str] | frozenset[str]
) -> Problem:
    """A related link to no entry, in a valid entry or in the raw data of an invalid one."""
    return Problem(
        path,
        line,
        col,
        f"related id `{target}` is not an entry",
        f"{did_you_mean(target, ids)}link an existing entry, or add the link when that entry "
        "exists",
    )


def _link_to(target: Loaded, relation: Relation, why: str) -> Link:
    return Link(
        target.id, target.category, target.entry.title, target.entry.severity, relation, why
    )


def link(
    categories: Sequence[LoadedCategory],
    entries: Sequence[Loaded],
    broken: frozenset[str] = frozenset(),
    tags: LoadedTags | None = None,
    rule_memo: rules.RuleMemo | None = None,
    common: tuple[str, ...] = (),
) -> tuple[Encyclopedia, list[Problem]]:
    """Check what spans entries and build the encyclopedia; problems are returned, not raised.
    `broken` holds the ids of entry files that failed validation; `tags` is the vocabulary;
    `common` the ids of _common.yaml (common.py checked them), which lead every list."""
    ids = {loaded.id for loaded in entries}
    problems = _check_ids(entries)
    for loaded in entries:
        problems += _check_related(loaded, ids, set(broken))
    problems += _check_cycles(entries)
    problems += rules.check(entries, rule_memo)
    if tags is not None:
        problems += _check_tags(entries, tags, complete=not broken)
    by_id = {loaded.id: loaded for loaded in sorted(entries, key=lambda e: e.id)}
    related: dict[str, list[Link]] = defaultdict(list)
    referenced_by: dict[str, list[Link]] = defaultdict(list)
    for source in by_id.values():
        for rel in source.entry.related:
            target = by_id.get(rel.id)
            if target is not None and target is not source:
                relation = Relation(rel.relation)
                related[source.id].append(_link_to(target, relation, rel.why))
                referenced_by[target.id].append(_link_to(source, relation.inverse, rel.why))
    pages = {
        i: Page(e.id, e.category, e.path, e.entry, tuple(related[i]), tuple(referenced_by[i]))
        for i, e in by_id.items()
    }
    ordered = sorted(categories, key=lambda c: (c.category.order, c.slug))
    order = listing_key(common)
    category_pages = tuple(
        CategoryPage(
            c.slug,
            c.path,
            c.category,
            tuple(sorted((p for p in pages.values() if p.category == c.slug), key=order)),
        )
        for c in ordered
    )
    aliases = {alias: page for page in pages.values() for alias in page.entry.aliases}
    tag_about = dict(sorted(tags.about.items())) if tags else {}
    return Encyclopedia(category_pages, pages, aliases, tag_about, common=common), problems


__all__ = ["Encyclopedia", "Page", "CategoryPage", "Link", "Related", "link", "check_drafts"]
