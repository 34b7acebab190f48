"""What search engines read: the meta description, canonical links and sitemap with a configured
site URL, and FAQPage JSON-LD that no entry text can break out of."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from generator.pages import seo
from generator.pipeline import build_encyclopedia
from tests.conftest import FIXTURE_ENTRIES
from tests.support import run_build


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        ("Lower the batch size.", "Lower the batch size."),
        ("Set `PYTORCH_CUDA_ALLOC_CONF`\n  first.", "Set PYTORCH_CUDA_ALLOC_CONF first."),
    ],
)
def test_meta_description_is_short_plain_text(summary: str, expected: str) -> None:
    assert seo.meta_description(summary) == expected


def test_a_long_description_is_cut_at_a_word() -> None:
    source = "alpha beta, " * 40
    text = seo.meta_description(source)
    assert len(text) <= seo.DESCRIPTION_CHARS and text.endswith("…")
    assert source.startswith(text[:-1]) and text[-2].isalpha()
    assert source[len(text) - 1] in " ,"  # the cut falls between words


def test_faq_jsonld_cannot_close_its_script() -> None:
    page = build_encyclopedia(FIXTURE_ENTRIES).pages["alpha-oom"]
    hostile = page.entry.faq[0].model_copy(
        update={"a": "</script><script>alert(1)</script> & <!-- `x`"}
    )
    entry = page.entry.model_copy(update={"faq": (hostile,)})
    script = seo.faq_jsonld(type(page)(page.id, page.category, page.path, entry))
    assert script is not None
    body = script.removeprefix('<script type="application/ld+json">').removesuffix("</script>")
    assert not set(body) & set("<>&")
    answer = json.loads(body)["mainEntity"][0]["acceptedAnswer"]["text"]
    assert answer == "</script><script>alert(1)</script> & <!-- x"


def test_a_site_url_gives_canonical_links_a_sitemap_and_faq_data(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = run_build(
        FIXTURE_ENTRIES, site, extra_env={"ENCYCLOPEDIA_SITE_URL": "https://example.org/enc/"}
    )
    assert result.returncode == 0, result.stderr
    page = (site / "memory" / "alpha-oom" / "index.html").read_text()
    assert '<link rel="canonical" href="https://example.org/enc/memory/alpha-oom/">' in page
    assert (
        "<loc>https://example.org/enc/memory/alpha-oom/</loc>" in (site / "sitemap.xml").read_text()
    )
    found = re.search(r'<script type="application/ld\+json">(.*?)</script>', page)
    assert found is not None
    data = json.loads(found.group(1))
    entry = build_encyclopedia(FIXTURE_ENTRIES).pages["alpha-oom"].entry
    assert [q["name"] for q in data["mainEntity"]] == [seo.plain(item.q) for item in entry.faq]
    assert '<meta name="description" content="The alpha allocator runs out' in page
