"""Lists of entries share one order (common failures first, then the most linked-to), and an
entry page's "On this page" list names exactly the sections the built page has."""

from __future__ import annotations

import shutil
from pathlib import Path

from generator.pages import onpage
from generator.pipeline import build_encyclopedia
from tests.support import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "site" / "entries"


def _with_common(tmp_path: Path, ids: list[str]) -> Path:
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURE, entries)
    body = "".join(f"  - {i}\n" for i in ids)
    (entries / "_common.yaml").write_text("common:\n" + body)
    return entries


def test_common_failures_lead_every_list_in_their_order(tmp_path: Path) -> None:
    enc = build_encyclopedia(_with_common(tmp_path, ["tricky-text", "gamma-retired"]))
    assert [p.id for p in enc.common_pages] == ["tricky-text", "gamma-retired"]
    kernels = next(c for c in enc.categories if c.slug == "kernels")
    assert [p.id for p in kernels.pages][:2] == ["tricky-text", "gamma-retired"]
    for tag, pages in enc.tags.items():
        ids = [p.id for p in pages]
        listed = [i for i in ("tricky-text", "gamma-retired") if i in ids]
        assert ids[: len(listed)] == listed, tag


def test_without_the_file_the_most_linked_to_entry_comes_first(tmp_path: Path) -> None:
    enc = build_encyclopedia(FIXTURE)
    for category in enc.categories:
        inbound = [len(p.referenced_by) for p in category.pages]
        assert inbound == sorted(inbound, reverse=True), category.slug
    assert enc.common_pages[0].referenced_by


def test_on_this_page_lists_the_sections_the_page_has() -> None:
    page = (
        "<h1>T</h1>" + onpage.SLOT + '<h2 id="fix">How to fix it<a class="headerlink" '
        'href="#fix" title="Permanent link">&para;</a></h2><p>x</p>'
        '<h2 id="what">What you&#x27;ll see &amp; <code>why</code></h2>'
    )
    done = onpage.with_onpage(page)
    assert onpage.SLOT not in done
    assert '<li><a href="#fix">How to fix it</a></li>' in done
    assert '<li><a href="#what">What you&#x27;ll see &amp; why</a></li>' in done
    assert "¶" not in done and "&para;" not in done.split("</details>")[0]
    assert onpage.with_onpage("<h2 id='x'>X</h2>") == "<h2 id='x'>X</h2>"
