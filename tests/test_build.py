"""A real `mkdocs build --strict` of the fixture entries: pages, links, exports, search index."""

from __future__ import annotations

import html as htmllib
import json
import re
import shutil
from pathlib import Path

from tests.conftest import FIXTURE_ENTRIES
from tests.support import ROOT, run_build


def read(site: Path, rel: str) -> str:
    return (site / rel).read_text(encoding="utf-8")


def test_every_kind_of_page_is_built(fixture_site: Path) -> None:
    for rel in [
        "index.html",
        "categories/index.html",
        "severity/index.html",
        "tags/index.html",
        "tags/oom/index.html",
        "memory/index.html",
        "kernels/index.html",
        "memory/alpha-oom/index.html",
        "kernels/beta-illegal-access/index.html",
        "404.html",
        "contributing/index.html",
        "api/entries.json",
        "api/signatures.json",
        "api/schema.json",
        "schema/entry.schema.json",
    ]:
        assert (fixture_site / rel).is_file(), rel


def test_entry_page_has_every_section_in_order(fixture_site: Path) -> None:
    html = read(fixture_site, "memory/alpha-oom/index.html")
    ids = [
        "fix",
        "what",
        "mechanism",
        "observe",
        "symptoms",
        "confirm",
        "signatures",
        "root-cause",
        "prevention",
        "faq",
        "related",
        "examples",
        "references",
    ]
    positions = [html.index(f'id="{i}"') for i in ids]
    assert positions == sorted(positions)
    assert html.index("Quick answer") < html.index('id="fix"')


def test_related_links_go_both_ways(fixture_site: Path) -> None:
    alpha = read(fixture_site, "memory/alpha-oom/index.html")
    beta = read(fixture_site, "kernels/beta-illegal-access/index.html")
    assert re.search(
        r'href="../../kernels/beta-illegal-access/"[^>]*>Beta illegal access</a>', alpha
    )
    assert "leads to" in alpha
    referenced = beta[beta.index("Referenced by") :]
    assert re.search(r'href="../../memory/alpha-oom/"[^>]*>Alpha out of memory</a>', referenced)
    assert "often caused by" in referenced


def test_an_entry_linked_both_ways_is_listed_once(shipped_site: Path) -> None:
    """A page does not list under "Referenced by" an entry its own related list names (the same
    pair of pages, seen from the other side); an entry that links here alone is still listed."""
    from generator.pipeline import build_encyclopedia
    from generator.read.link import Link, Page

    enc = build_encyclopedia(ROOT / "entries")
    both: list[tuple[Page, Link]] = []
    one_way: list[tuple[Page, Link]] = []
    for page in enc.pages.values():
        linked = {link.id for link in page.related}
        for link in page.referenced_by:
            (both if link.id in linked else one_way).append((page, link))
    assert both and one_way
    for page, link in (both[0], one_way[0]):
        html = read(shipped_site, f"{page.category}/{page.id}/index.html")
        section = html[html.index('id="related"') : html.index("</article>")]
        hrefs = re.findall(rf'href="[./]*(?:{link.category}/)?{link.id}/"', section)
        assert len(hrefs) == 1, (page.id, link.id)


def test_edit_link_points_at_the_yaml_file(fixture_site: Path) -> None:
    html = read(fixture_site, "memory/alpha-oom/index.html")
    match = re.search(r'<a href="([^"]+)">Edit this entry</a>', html)
    assert match is not None
    assert htmllib.unescape(match.group(1)).endswith("/entries/memory/alpha-oom.yaml")


def test_category_page_lists_its_entries_only(fixture_site: Path) -> None:
    html = read(fixture_site, "kernels/index.html")
    assert "Beta illegal access" in html
    assert "Alpha out of memory" not in html


def test_tag_pages_list_tagged_entries_and_chips_link_to_them(fixture_site: Path) -> None:
    tag = read(fixture_site, "tags/memory/index.html")
    assert "Alpha out of memory" in tag and "Beta illegal access" in tag
    assert "Tricky" not in tag
    entry = read(fixture_site, "memory/alpha-oom/index.html")
    assert '<a class="md-tag" href="../../tags/oom/">oom</a>' in entry
    index = read(fixture_site, "tags/index.html")
    assert 'href="oom/"' in index


def test_alias_redirects_to_the_entry(fixture_site: Path) -> None:
    html = read(fixture_site, "memory/alpha-old/index.html")
    assert '<meta http-equiv="refresh" content="0; url=../alpha-oom/">' in html


def test_sidebar_is_short(fixture_site: Path) -> None:
    html = read(fixture_site, "memory/alpha-oom/index.html")
    nav = html[html.index('<nav class="md-nav md-nav--primary"') :]
    nav = nav[: nav.index('<nav class="md-nav md-nav--secondary"')]
    labels = re.findall(r'<span class="md-ellipsis">\s*([^<]+?)\s*</span>', nav)
    assert labels == [
        "Home",
        "Categories",  # the section, holding the overview and each category
        "Categories",
        "Memory",
        "GPU kernels",
        "Tags",
        "Severity",
        "Diagnose",
        "Contributing",
        "Entry format",
    ]


def test_full_text_index_holds_the_entry_pages_only(fixture_site: Path) -> None:
    """Pagefind indexes what is inside data-pagefind-body: entries, not the home, tag, category
    or alias pages that list them."""
    bundle = json.loads(read(fixture_site, "pagefind/pagefind-entry.json"))
    entries = [p for p in FIXTURE_ENTRIES.glob("*/*.yaml") if p.name != "_category.yaml"]
    assert sum(lang["page_count"] for lang in bundle["languages"].values()) == len(entries)
    assert "data-pagefind-body" in read(fixture_site, "memory/alpha-oom/index.html")
    assert "data-pagefind-body" not in read(fixture_site, "index.html")
    assert not (fixture_site / "search" / "search_index.json").exists()  # no Lunr index


def test_error_index_is_written_with_its_shards(fixture_site: Path) -> None:
    meta = json.loads(read(fixture_site, "search/errors/meta.json"))
    for space, count in meta["shards"].items():
        for n in range(count):
            assert (fixture_site / "search" / "errors" / f"{space}{n}.json").is_file()


def test_exports_resolve_entries(fixture_site: Path) -> None:
    # The site lists the entries, each pointing to its whole record in a file of its own.
    listed = json.loads(read(fixture_site, "api/entries.json"))
    assert {e["id"] for e in listed} == {
        "alpha-oom",
        "beta-illegal-access",
        "gamma-retired",
        "tricky-text",
    }
    summary = next(e for e in listed if e["id"] == "alpha-oom")
    assert (
        summary["url"].endswith("memory/alpha-oom/") and summary["title"] == "Alpha out of memory"
    )
    assert summary["record"] == "/api/entries/alpha-oom.json"
    alpha = json.loads(read(fixture_site, summary["record"].lstrip("/")))
    assert alpha["id"] == "alpha-oom" and alpha["summary"]
    assert alpha["related"][0]["id"] == "beta-illegal-access"
    beta = json.loads(read(fixture_site, "api/entries/beta-illegal-access.json"))
    assert beta["referenced_by"][0]["id"] == "alpha-oom"
    signatures = json.loads(read(fixture_site, "api/signatures.json"))
    # (with where the matcher looks: a word without a guard after it)
    expected = {"text": "alpha_kernel_launch", "weight": 3, "context": True}
    assert (
        expected | {"anchor": "alpha_kernel_launch"}
        in next(s for s in signatures if s["id"] == "alpha-oom")["signatures"]
    )
    schema = json.loads(read(fixture_site, "api/schema.json"))
    assert "severity" in schema["required"]
    assert (
        read(fixture_site, "api/schema.json") == (ROOT / "schema" / "entry.schema.json").read_text()
    )


def test_no_third_party_assets(fixture_site: Path) -> None:
    for path in fixture_site.rglob("*.html"):
        html = path.read_text(encoding="utf-8")
        for tag in re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", html):
            for url in re.findall(r'(?:src|href)="([^"]+)"', tag):
                assert not re.match(r"(https?:)?//", url), f"{path}: {tag}"


def test_failing_build_writes_nothing(tmp_path: Path) -> None:
    entries = tmp_path / "entries" / "memory"
    entries.mkdir(parents=True)
    (entries / "_category.yaml").write_text("title: Memory\ndescription: Memory failures.\n")
    (entries / "broken.yaml").write_text("title: Broken\nseverity: huge\n")
    site = tmp_path / "site"
    site.mkdir()
    (site / "keep.txt").write_text("old site")
    result = run_build(tmp_path / "entries", site)
    assert result.returncode == 1
    assert (
        "entries/memory/broken.yaml:2:11: `huge` is not a valid value for `severity`"
        in result.stderr
    )
    assert "missing required field `summary`" in result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in site.iterdir()) == ["keep.txt"]


def test_retired_entry_keeps_its_page_and_points_to_its_replacement(fixture_site: Path) -> None:
    html = read(fixture_site, "kernels/gamma-retired/index.html")
    assert "Retired entry" in html
    assert re.search(r'href="../beta-illegal-access/"[^>]*>Beta illegal access</a> instead', html)
    assert "(retired)" in read(fixture_site, "kernels/index.html")
    signatures = json.loads(read(fixture_site, "api/signatures.json"))
    assert "gamma-retired" not in {s["id"] for s in signatures}
    entries = json.loads(read(fixture_site, "api/entries.json"))
    assert next(e for e in entries if e["id"] == "gamma-retired")["status"] == "retired"


def test_entry_top_answers_at_a_glance(fixture_site: Path) -> None:
    """Quick answer, symptom, cause and fix in one block after the title and chips, with the
    fix's code when it is one line; the tag chips come after the title, not before it."""
    page = read(fixture_site, "kernels/beta-illegal-access/index.html")
    glance = page[page.index('<div class="enc-glance"') :]
    glance = glance[: glance.index('<h2 id="fix"')]
    text = htmllib.unescape(re.sub(r"<[^>]+>", "", glance))
    for label in ("Quick answer", "Symptom:", "Cause:", "Fix:"):
        assert label in text
    assert "offsets = offsets.to(torch.int32)" in text
    assert page.index("<h1") < page.index('class="md-tags') < page.index('class="enc-glance"')
    alpha = read(fixture_site, "memory/alpha-oom/index.html")
    assert "loss.backward()" not in alpha[alpha.index("enc-glance") : alpha.index('id="fix"')]


def test_categories_list_their_entries_with_severity(fixture_site: Path) -> None:
    page = read(fixture_site, "categories/index.html")
    kernels = page[page.index('id="kernels"') :]
    items = re.findall(
        r'<li><span class="enc-badge enc-severity-(\w+)">\w+</span>\s*<a href="([^"]+)"', kernels
    )
    assert ("critical", "../kernels/beta-illegal-access/") in items


def test_tag_index_groups_tags_by_the_category_of_most_of_their_entries(
    fixture_site: Path,
) -> None:
    page = read(fixture_site, "tags/index.html")
    memory, kernels = page.index('id="memory"'), page.index('id="kernels"')
    assert memory < page.index('href="oom/"') < kernels
    assert page.index('href="kernel/"') > kernels


def test_a_build_leaves_no_spooled_files_behind(tmp_path: Path) -> None:
    """A one-off build spools its generated pages to a temporary folder (lean.py): the folder is
    gone when the build ends, and a build refused for a broken entry makes none."""
    spool_root = tmp_path / "tmp"
    spool_root.mkdir()
    env = {"TMPDIR": str(spool_root)}
    built = run_build(FIXTURE_ENTRIES, tmp_path / "site", extra_env=env)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "memory" / "alpha-oom" / "index.html").is_file()
    assert list(spool_root.iterdir()) == []
    broken = tmp_path / "entries"
    shutil.copytree(FIXTURE_ENTRIES, broken)
    (broken / "memory" / "alpha-oom.yaml").write_text("title: Broken\nseverity: huge\n")
    assert run_build(broken, tmp_path / "site2", extra_env=env).returncode == 1
    assert list(spool_root.iterdir()) == []


def test_every_top_level_name_of_the_site_is_reserved(fixture_site: Path) -> None:
    """A category folder named like one of the site's own paths would replace it: the reserved
    list must hold every top-level name a build writes besides the category folders."""
    from generator.read.reserved import TOP_LEVEL

    categories = {p.name for p in FIXTURE_ENTRIES.iterdir() if p.is_dir()}
    names = {p.name.split(".")[0] for p in fixture_site.iterdir()} - categories
    assert names <= TOP_LEVEL, names - TOP_LEVEL
