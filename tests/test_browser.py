"""The built site in Debian's Chromium: reading pages or searching makes no request to any host
but the local server, and the diagnose page reads a pasted or dropped log (the search box has
its own tests in test_search_ranking.py)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from generator.pipeline import build_encyclopedia
from generator.search import fulltext
from tests.support import ROOT, serve_dir

pytestmark = pytest.mark.browser


@pytest.fixture()
def page(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    yield context.new_page()
    context.close()


def search(page: Any, query: str) -> list[str]:
    """Type `query` into the real search box; return the result links, best first."""
    page.click("label.md-search__icon, .md-search__input", timeout=5000)
    box = page.locator("input.md-search__input")
    box.fill("")
    box.type(query, delay=5)
    page.wait_for_selector(".md-search-result__item a", timeout=10000)
    hrefs: list[str] = page.eval_on_selector_all(
        "li.md-search-result__item > a.md-search-result__link", "els => els.map(e => e.href)"
    )
    return hrefs


def entry_id(href: str) -> str:
    return urlsplit(href).path.rstrip("/").split("/")[-1]


def test_no_request_leaves_the_local_server(
    page: Any, shipped_url: str, shipped_site: Path
) -> None:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    entries = json.loads((shipped_site / "api" / "entries.json").read_text())
    page.goto(shipped_url + "/")
    page.wait_for_load_state("networkidle")
    page.goto(shipped_url + "/" + entries[0]["url"].lstrip("/"))
    page.wait_for_load_state("networkidle")
    search(page, "illegal memory access")
    page.wait_for_load_state("networkidle")
    local = urlsplit(shipped_url).netloc
    foreign = [
        u
        for u in requests
        if urlsplit(u).scheme in ("http", "https", "ws", "wss") and urlsplit(u).netloc != local
    ]
    assert requests, "no request was recorded at all"
    assert foreign == []


def test_entry_page_reads_without_javascript(chromium: Any, fixture_url: str) -> None:
    context = chromium.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(fixture_url + "/memory/alpha-oom/")
    assert page.locator("h1").inner_text().rstrip("¶") == "Alpha out of memory"
    assert page.locator("#fix").is_visible()
    assert page.locator("table td").first.inner_text() == "Crash at the first step"
    context.close()


MULTIRANK_LOG = json.loads(
    (Path(__file__).parent / "diagnose_vectors" / "multirank-oom-then-timeout.json").read_text()
)["log"]


def diagnosed(page: Any) -> list[dict[str, Any]]:
    page.wait_for_selector(".enc-diagnose-match, .enc-diagnose-none", timeout=30000)
    found: list[dict[str, Any]] = page.eval_on_selector_all(
        ".enc-diagnose-match",
        """els => els.map(e => ({
            href: e.querySelector('a').href,
            collateral: e.classList.contains('enc-collateral'),
            text: e.innerText}))""",
    )
    return found


def test_diagnose_page_pasted_log_makes_no_request(page: Any, shipped_url: str) -> None:
    requests: list[str] = []
    page.goto(shipped_url + "/diagnose/")
    page.wait_for_load_state("networkidle")
    page.on("request", lambda request: requests.append(request.url))
    csp = page.get_attribute('meta[http-equiv="Content-Security-Policy"]', "content")
    assert "connect-src 'none'" in csp
    page.fill("#enc-log", MULTIRANK_LOG)
    page.click(".enc-diagnose-run")
    matches = diagnosed(page)
    assert entry_id(matches[0]["href"]) == "cuda-out-of-memory"
    assert "rank 3" in matches[0]["text"] and "line 5" in matches[0]["text"]
    # The collateral timeout follows its cause, says so, and claims no confidence of its own;
    # the low-confidence readings of the OOM line are folded under it, not listed beside it.
    ids = [entry_id(m["href"]) for m in matches]
    assert ids.index("nccl-timeout") > 0
    timeout = matches[ids.index("nccl-timeout")]
    assert timeout["collateral"] and "Caused by CUDA out of memory" in timeout["text"]
    assert "confidence" not in timeout["text"].split("\n")[1]
    assert "activation-memory-spike" not in ids[: ids.index("nccl-timeout")]
    assert "Also possible, from the same lines:" in matches[0]["text"]
    assert [u for u in requests if not u.startswith("blob:")] == []


def test_diagnose_page_leads_with_the_fix_for_the_cause_the_log_shows(
    page: Any, shipped_url: str
) -> None:
    """An OOM whose cached free memory exceeds the request: the step shown first is the
    allocator setting of the fragmentation row, and the entry's generic first step is not."""
    from tests.test_diagnose_shipped import FRAGMENTED_OOM

    page.goto(shipped_url + "/diagnose/")
    page.wait_for_load_state("networkidle")
    page.fill("#enc-log", FRAGMENTED_OOM)
    page.click(".enc-diagnose-run")
    text = diagnosed(page)[0]["text"]
    assert "Cause: Fragmentation" in text
    assert "First step: If reserved but unallocated is large" in text
    assert text.count("First step:") == 1 and "Make sure the GPU is yours" not in text


def test_diagnose_page_reads_a_log_that_holds_only_numbers(page: Any, shipped_url: str) -> None:
    """A Megatron log whose loss climbs without any error: the page names the divergence entry
    and says what the numbers show, with the lines it read."""
    log = json.loads(
        (Path(__file__).parent / "diagnose_vectors" / "metric-megatron-divergence.json").read_text()
    )["log"]
    page.goto(shipped_url + "/diagnose/")
    page.wait_for_load_state("networkidle")
    page.fill("#enc-log", log)
    page.click(".enc-diagnose-run")
    matches = diagnosed(page)
    assert entry_id(matches[0]["href"]) == "loss-spikes-divergence"
    assert "Your log's numbers: loss rises from 1.400000E+00 (line 11)" in matches[0]["text"]
    assert "line 20" in matches[0]["text"]


def test_diagnose_page_with_no_match_names_the_closest_pages_and_makes_no_request(
    page: Any, shipped_url: str
) -> None:
    """Never a blank answer: the pages closest to the last error line, apart from a diagnosis,
    from an index loaded as a script of this site (the page may not fetch)."""
    requests: list[str] = []
    page.goto(shipped_url + "/diagnose/")
    page.wait_for_load_state("networkidle")
    page.on("request", lambda request: requests.append(request.url))
    log = "step 1 loss 2.3\nValueError: my dataset returned an empty batch for the dataloader\n"
    page.fill("#enc-log", log)
    page.click(".enc-diagnose-run")
    page.wait_for_selector(".enc-diagnose-closest li a")
    closest = page.inner_text(".enc-diagnose-closest")
    assert closest.startswith("Not a diagnosis")
    assert "ValueError: my dataset returned an empty batch" in closest
    hrefs = page.eval_on_selector_all(".enc-diagnose-closest a", "as => as.map(a => a.href)")
    assert entry_id(hrefs[0]) == "dataloader-num-samples-zero"
    assert page.query_selector(".enc-diagnose-list") is None  # no match is listed
    assert [u for u in requests if not u.startswith((shipped_url, "blob:"))] == []
    assert any(u.endswith("/api/described.js") for u in requests)


@pytest.mark.parametrize(
    ("log", "lines"), [("a\nb\nc\nd\ne\n", 5), ("a\nb\nc\nd\ne", 5), ("one line", 1)]
)
def test_diagnose_page_counts_lines_as_the_matcher_numbers_them(
    page: Any, shipped_url: str, log: str, lines: int
) -> None:
    page.goto(shipped_url + "/diagnose/")
    page.fill("#enc-log", log)
    page.click(".enc-diagnose-run")
    diagnosed(page)
    status = page.inner_text(".enc-diagnose-status")
    assert status.startswith(f"Read {lines} line"), status


def test_diagnose_page_rejects_network_even_if_asked(page: Any, shipped_url: str) -> None:
    """The policy holds for the page and for blob workers: a fetch from either is refused."""
    page.goto(shipped_url + "/diagnose/")
    outcome = page.evaluate("""async () => {
        const page = await fetch('/api/signatures.json').then(() => 'sent', () => 'blocked');
        const src = "fetch('/api/signatures.json').then(() => postMessage('sent'), " +
                    "() => postMessage('blocked'))";
        const url = URL.createObjectURL(new Blob([src], {type: 'text/javascript'}));
        const worker = await new Promise(resolve => {
            const w = new Worker(url); w.onmessage = e => resolve(e.data);
        });
        return [page, worker];
    }""")
    assert outcome == ["blocked", "blocked"]


def test_diagnose_page_reads_a_dropped_file(page: Any, shipped_url: str, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "epoch 3\nRuntimeError: DataLoader worker (pid 4242) is killed by signal: "
        "Bus error. It is possible that dataloader's workers are out of shared memory.\n"
    )
    page.goto(shipped_url + "/diagnose/")
    page.set_input_files(".enc-diagnose input[type=file]", str(log))
    matches = diagnosed(page)
    assert entry_id(matches[0]["href"]) == "dataloader-worker-killed"


def test_nothing_matched_is_said_plainly(page: Any, shipped_url: str) -> None:
    page.goto(shipped_url + "/diagnose/")
    page.fill("#enc-log", "Traceback (most recent call last):\nRuntimeError: error\n")
    page.click(".enc-diagnose-run")
    page.wait_for_selector(".enc-diagnose-none")
    assert "No known failure matched" in page.inner_text(".enc-diagnose-none")


def test_home_page_takes_no_log_and_links_to_the_diagnose_page(page: Any, shipped_url: str) -> None:
    """A log is only ever typed into the diagnose page, the one page that may not connect."""
    page.goto(shipped_url + "/")
    assert page.locator("textarea").count() == 0
    page.click("a.md-button--primary:has-text('Diagnose a log')")
    page.wait_for_url("**/diagnose/")
    page.fill("#enc-log", MULTIRANK_LOG)
    page.click(".enc-diagnose-run")
    assert entry_id(diagnosed(page)[0]["href"]) == "cuda-out-of-memory"


def test_diagnose_page_refuses_to_run_in_a_frame(
    page: Any, shipped_url: str, shipped_site: Path
) -> None:
    """A page of the same site that frames the diagnose page could read its text box, and the
    diagnose page's policy would not bind that page: inside a frame the box stays disabled."""
    frame_page = shipped_site / "frame-test.html"
    frame_page.write_text('<iframe src="diagnose/" width="900" height="700"></iframe>')
    try:
        page.goto(shipped_url + "/frame-test.html")
        frame = page.frame_locator("iframe")
        status = frame.locator(".enc-diagnose-status")
        status.filter(has_text="does not run inside a frame").wait_for(timeout=10000)
        assert frame.locator("#enc-log").is_disabled()
        assert frame.locator(".enc-diagnose-run").is_disabled()
    finally:
        frame_page.unlink()


def test_twenty_megabyte_log_keeps_the_page_responsive(
    page: Any, shipped_url: str, tmp_path: Path
) -> None:
    line = "[rank1]: step 1234 | loss 2.3456 | lr 3.0e-04 | grad_norm 0.98 | tokens/s 123456\n"
    body = line * (20 * 1024 * 1024 // len(line))
    log = tmp_path / "big.log"
    log.write_text(
        body + "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB\n"
    )
    page.goto(shipped_url + "/diagnose/")
    page.set_input_files(".enc-diagnose input[type=file]", str(log))
    # While the worker reads and matches, the page answers at once.
    delays = page.evaluate("""async () => {
        const out = [];
        for (let i = 0; i < 10; i++) {
            const t = performance.now();
            await new Promise(r => setTimeout(r, 0));
            out.push(performance.now() - t);
            await new Promise(r => setTimeout(r, 50));
        }
        return out;
    }""")
    assert max(delays) < 200, delays
    matches = diagnosed(page)
    assert entry_id(matches[0]["href"]) == "cuda-out-of-memory"


def test_diagnose_page_accepts_a_file_dropped_on_the_box(page: Any, shipped_url: str) -> None:
    page.goto(shipped_url + "/diagnose/")
    page.evaluate("""() => {
        const log = "[rank2]: RuntimeError: CUDA error: device-side assert triggered\\n";
        const data = new DataTransfer();
        data.items.add(new File([log], "train.log", {type: "text/plain"}));
        const box = document.querySelector(".enc-diagnose");
        box.dispatchEvent(new DragEvent("dragover", {dataTransfer: data, bubbles: true}));
        box.dispatchEvent(new DragEvent("drop", {dataTransfer: data, bubbles: true}));
    }""")
    matches = diagnosed(page)
    assert entry_id(matches[0]["href"]) == "device-side-assert"
    assert "rank 2" in matches[0]["text"]


def test_the_page_policy_blocks_nothing_the_site_needs(page: Any, shipped_url: str) -> None:
    """Every kind of page runs under a policy that allows only the theme's own inline scripts:
    none of the site's scripts may be refused by it (search still works on entry pages)."""
    violations: list[str] = []
    page.on(
        "console",
        lambda msg: violations.append(msg.text) if "Content Security" in msg.text else None,
    )
    page.on("pageerror", lambda err: violations.append(str(err)))
    for path in (
        "/",
        "/memory/cuda-out-of-memory/",
        "/memory/",
        "/tags/",
        "/diagnose/",
        "/404.html",
    ):
        page.goto(shipped_url + path)
        page.wait_for_load_state("networkidle")
        policy = page.get_attribute('meta[http-equiv="Content-Security-Policy"]', "content")
        assert policy and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    search(page, "illegal memory access")
    assert violations == []


def test_diagnose_page_says_what_to_do_first(page: Any, shipped_url: str) -> None:
    page.goto(shipped_url + "/diagnose/")
    page.fill("#enc-log", MULTIRANK_LOG)
    page.click(".enc-diagnose-run")
    diagnosed(page)
    first = page.locator(".enc-diagnose-match").first
    assert first.locator(".enc-diagnose-answer").inner_text().startswith("The PyTorch caching")
    assert first.locator(".enc-diagnose-step").inner_text().startswith("First step: ")
    # The collateral timeout carries no advice of its own: fix the cause first.
    assert page.locator(".enc-collateral .enc-diagnose-answer").count() == 0
    assert page.locator(".enc-collateral").count() >= 1
    # Low-confidence readings of the lead's own lines are folded under it, titles only.
    assert page.locator(".enc-diagnose-match:not(.enc-collateral)").count() == 1
    also = first.locator(".enc-diagnose-also li")
    assert also.count() >= 2 and all("low confidence" in t for t in also.all_inner_texts())
    assert first.locator(".enc-diagnose-also .enc-diagnose-answer").count() == 0


def test_diagnose_page_names_the_symptom_from_the_oom_numbers(page: Any, shipped_url: str) -> None:
    # A real OOM message (activation-memory-spike's second example): 3.42 GiB reserved but
    # unallocated cannot serve a 3.96 GiB request, which the OOM entry reads as capacity.
    log = (
        build_encyclopedia(ROOT / "entries").pages["activation-memory-spike"].entry.examples[1].log
    )
    page.goto(shipped_url + "/diagnose/")
    page.fill("#enc-log", log)
    page.click(".enc-diagnose-run")
    diagnosed(page)
    oom = page.locator(".enc-diagnose-match", has=page.locator("a[href$='/cuda-out-of-memory/']"))
    text = oom.inner_text()
    assert "Your log shows: OOM while reserved by PyTorch but unallocated is smaller than" in text
    assert "Read from the log: requested 3.96 GiB, unallocated 3.42 GiB" in text
    assert "Cause: The memory is held by live tensors" in text


def _rare_title_word(pages: list[str]) -> str:
    """A word of one of these entry pages' titles that no other entry's title holds."""
    enc = build_encyclopedia(ROOT / "entries")
    words: dict[str, int] = {}
    for p in enc.pages.values():
        for word in set(re.findall(r"[a-z]{6,}", p.entry.title.lower())):
            words[word] = words.get(word, 0) + 1
    for path in pages:
        entry = enc.pages.get(
            path.rstrip("/").split("/")[-2] if path.endswith("index.html") else ""
        )
        if entry is None:
            continue
        rare = [w for w in re.findall(r"[a-z]{6,}", entry.entry.title.lower()) if words[w] == 1]
        if rare:
            return str(rare[0])
    raise AssertionError("no entry of the part has a title word of its own")


def test_search_merges_a_full_text_index_made_in_parts(
    page: Any, shipped_site: Path, tmp_path: Path
) -> None:
    """A large site is indexed in parts (fulltext.PART_PAGES): the search box merges them, so
    one query finds entries of several parts."""
    site = tmp_path / "site"
    shutil.copytree(shipped_site, site)
    grouped = fulltext.parts(site, part_pages=40)
    assert len(grouped) >= 3, grouped
    summary = fulltext.index_site(site, part_pages=40)
    assert f"Indexed {sum(map(len, grouped))} pages" in summary
    assert f"(in {len(grouped)} parts)" in summary
    assert json.loads((site / "pagefind" / "parts.json").read_text()) == [
        f"part-{n}" for n in range(1, len(grouped))
    ]
    part_of = {
        page_path.removesuffix("index.html"): n
        for n, pages in enumerate(grouped)
        for page_path in pages
    }
    parts_found: set[int] = set()
    with serve_dir(site) as url:
        for n in (0, len(grouped) - 1):  # a word only one entry's title holds, in two parts
            query = _rare_title_word(grouped[n])
            page.goto(url + "/")
            search(page, query)
            page.wait_for_timeout(1500)  # the full-text half comes after the signature half
            found = page.eval_on_selector_all(
                "li.md-search-result__item > a.md-search-result__link",
                "els => els.map(e => e.href)",
            )
            parts = {part_of.get(urlsplit(href).path.lstrip("/")) for href in found}
            assert n in parts, (query, found)
            parts_found |= {p for p in parts if p is not None}
    assert len(parts_found) >= 2
