"""The Python matcher on the shared vectors (tests/diagnose_vectors/, also run against the
JavaScript matcher), on streaming edge cases and through the CLI."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator import diagnose
from generator.diagnose import scanner as diagnose_scan
from generator.terminal.cli import main

VECTORS = Path(__file__).parent / "diagnose_vectors"
INDEX = diagnose.Index.from_export(json.loads((VECTORS / "index.json").read_text()))


def summary(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "id": m["id"],
            "score": m["score"],
            "confidence": m["confidence"],
            "rank": m["rank"],
            "collateral_of": m["collateral_of"],
            "also_possible_for": m["also_possible_for"],
            "symptom": m["symptom"],
            "lines": [e["line"] for e in m["evidence"]],
        }
        for m in result["matches"]
    ]


def vector_names() -> list[str]:
    return sorted(p.stem for p in VECTORS.glob("*.json") if p.stem != "index")


@pytest.mark.parametrize("name", vector_names())
def test_vector(name: str) -> None:
    case = json.loads((VECTORS / f"{name}.json").read_text(encoding="utf-8"))
    result = diagnose.diagnose(INDEX, io.BytesIO(case["log"].encode("utf-8"))).to_json()
    assert summary(result) == case["expect"]
    assert result["root_rank"] == case["root_rank"]


@pytest.mark.parametrize("chunk", [7, 64, 4096])
def test_small_chunks_give_the_same_result(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Streaming must not change the result wherever chunk boundaries fall."""
    monkeypatch.setattr(diagnose_scan, "CHUNK_BYTES", chunk)
    for name in vector_names():
        case = json.loads((VECTORS / f"{name}.json").read_text(encoding="utf-8"))
        result = diagnose.diagnose(INDEX, io.BytesIO(case["log"].encode("utf-8"))).to_json()
        assert summary(result) == case["expect"], name


def test_dropping_matched_anchors_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Anchors whose signatures have all matched leave the automaton between chunks; on a long
    log where every vector repeats (later copies can only add ranks of nothing new), in small
    chunks, the result must equal the result of the full automaton."""
    monkeypatch.setattr(diagnose_scan, "CHUNK_BYTES", 256)
    logs = [json.loads((VECTORS / f"{n}.json").read_text())["log"] for n in vector_names()]
    # two signatures share the anchor `dataloader`: the first to match must not retire it
    shared = [
        "DataLoader worker (pid 11) is killed by signal: Killed.",
        "step 1\n" * 100,
        "DataLoader worker (pid 12) is killed by signal: Bus error.",
    ]
    log = "\n".join(shared + logs + logs[::-1] + logs).encode("utf-8")
    pruned = diagnose.diagnose(INDEX, io.BytesIO(log))
    monkeypatch.setattr(diagnose_scan, "PRUNE_MATCHED", False)
    full = diagnose.diagnose(INDEX, io.BytesIO(log))
    assert pruned == full
    assert len(pruned.matches) > 5
    killed = next(m for m in pruned.matches if m.id == "worker-killed")
    assert [e.line for e in killed.evidence][:2] == [1, 103]


def test_evidence_names_line_text_and_signature() -> None:
    log = (
        b"step 1\r\n\x1b[31mtorch.OutOfMemoryError: CUDA out of memory. "
        b"Tried to allocate 2 GiB\x1b[0m\n"
    )
    match = diagnose.diagnose(INDEX, io.BytesIO(log)).matches[0]
    assert match.evidence[0] == diagnose.Evidence(
        2,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB",
        "CUDA out of memory. Tried to allocate",
    )


def test_the_terminal_says_what_named_a_traceback(tmp_path: Path) -> None:
    """A line matched by a `raised` rule has no text to mark: the terminal says what matched."""
    log = tmp_path / "train.log"
    log.write_text(json.loads((VECTORS / "raised-windows-crlf.json").read_text())["log"])
    index = str(VECTORS / "index.json")
    text = CliRunner().invoke(main, ["diagnose", str(log), "--index", index, "--color", "never"])
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "OSError: [Errno 28]" in line)
    assert lines[at + 1].strip() == "raised: OSError in torch/serialization.py, save"


def test_cli_json_and_exit_codes(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(json.loads((VECTORS / "multirank-oom-then-timeout.json").read_text())["log"])
    runner = CliRunner()
    result = runner.invoke(
        main, ["diagnose", str(log), "--json", "--index", str(VECTORS / "index.json")]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [m["id"] for m in data["matches"]] == ["oom", "oom-guess", "nccl-timeout"]
    assert [m["also_possible_for"] for m in data["matches"]] == [None, "oom", None]
    text = runner.invoke(main, ["diagnose", str(log), "--index", str(VECTORS / "index.json")])
    # The folded alternative is printed under its host, not numbered as a result of its own.
    assert "   also possible: A guess from the OOM line [oom-guess]" in text.stdout
    assert "2. NCCL watchdog timeout [nccl-timeout]" in text.stdout
    assert "caused by oom" in text.stdout
    assert set(data["matches"][0]) >= {"id", "title", "url", "score", "confidence", "evidence"}
    top = runner.invoke(
        main, ["diagnose", str(log), "--top", "1", "--index", str(VECTORS / "index.json")]
    )
    assert top.exit_code == 0
    assert "CUDA out of memory [oom]" in top.stdout and "nccl-timeout" not in top.stdout
    nothing = runner.invoke(
        main,
        ["diagnose", "-", "--index", str(VECTORS / "index.json")],
        input="Traceback (most recent call last):\nRuntimeError: error\n",
    )
    assert nothing.exit_code == 1
    assert "No known failure matched" in nothing.stdout
    missing = runner.invoke(main, ["diagnose", str(tmp_path / "absent.log")])
    assert missing.exit_code == 2


def _node() -> str:
    """Node, which CI must have (the JavaScript matcher is tested there); skipped elsewhere."""
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI"):
            pytest.fail("node not found: the JavaScript matcher cannot be tested")
        pytest.skip("node not found")
    return node


CORE = Path(__file__).parent.parent / "site_assets" / "js" / "diagnose-core.js"


def _core_value(name: str) -> Any:
    """What diagnose-core.js exports as `name`, through JSON."""
    script = f"process.stdout.write(JSON.stringify(require({json.dumps(str(CORE))}).{name}))"
    out = subprocess.run([_node(), "-e", script], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def run_node(index_file: Path, cases: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    """The JavaScript matcher on `cases` through Node (required in CI, skipped elsewhere)."""
    node = _node()
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps(cases), encoding="utf-8")
    script = Path(__file__).parent / "js" / "diagnose_node.js"
    result = subprocess.run(
        [node, str(script), str(index_file), str(cases_file)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(result.stdout))


def test_javascript_matcher_passes_the_same_vectors(tmp_path: Path) -> None:
    cases = {
        name: json.loads((VECTORS / f"{name}.json").read_text(encoding="utf-8"))
        for name in vector_names()
    }
    results = run_node(VECTORS / "index.json", {n: c["log"] for n, c in cases.items()}, tmp_path)
    for name, case in cases.items():
        assert summary(results[name]) == case["expect"], name
        assert results[name]["root_rank"] == case["root_rank"], name
    # Beyond the summaries, the full output (evidence text included) is identical.
    for name, case in cases.items():
        python = diagnose.diagnose(INDEX, io.BytesIO(case["log"].encode("utf-8"))).to_json()
        assert results[name] == python, name


def _node_spans(pairs: list[tuple[str, str]]) -> list[list[list[int]]]:
    node = _node()
    script = (
        f"const c = require({json.dumps(str(CORE))}); let d = '';"
        "process.stdin.on('data', x => d += x).on('end', () => process.stdout.write("
        "JSON.stringify(JSON.parse(d).map(p => c.spans(p[0], p[1])))))"
    )
    out = subprocess.run(
        [node, "-e", script], input=json.dumps(pairs), capture_output=True, text=True, check=True
    )
    return list(json.loads(out.stdout))


def test_the_page_marks_where_the_matcher_matched() -> None:
    """The diagnose page marks an evidence line where the matcher's own match found each piece
    of the signature, placeholder values and spacing as the log has them; every signature's
    evidence in the vectors that is shown whole gets a mark, and the marked text holds the
    signature's wording."""
    log = "[rank3]: torch.OutOfMemoryError: CUDA out  of memory. Tried to allocate 2.00 GiB"
    pairs = [
        (log, "CUDA out of memory. Tried to allocate {size:requested}"),
        ("RuntimeError: NCCL error in: x.cpp, unhandled cuda error", "NCCL error*unhandled cuda"),
        ("nothing of the kind", "NCCL error"),
    ]
    oom, nccl, none = _node_spans(pairs)
    assert [log[a:b] for a, b in oom] == ["CUDA out  of memory. Tried to allocate 2.00 GiB"]
    assert [pairs[1][0][a:b] for a, b in nccl] == ["NCCL error", "unhandled cuda"]
    assert none == []
    evidence = [
        (e.text, e.signature)
        for name in vector_names()
        for m in diagnose.diagnose(
            INDEX, io.BytesIO(json.loads((VECTORS / f"{name}.json").read_text())["log"].encode())
        ).matches
        for e in m.evidence
        # (a line is shown up to 500 characters: a match beyond them has nothing to mark)
        if not e.signature.startswith(("raised: ", "signal: ")) and len(e.text) < 500
    ]
    assert len(evidence) > 20
    for (text, signature), found in zip(evidence, _node_spans(evidence), strict=True):
        assert found, (text, signature)
        first = diagnose.pieces(signature)[0]
        assert first in diagnose.normalise(text[found[0][0] : found[0][1]]), signature


def test_an_unreadable_rank_log_is_a_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One rank's log that cannot be opened (gone, no permission) is left out and said so; the
    others are still diagnosed."""
    from generator.diagnose import ranklogs

    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "rank0.log").write_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    real = ranklogs.rank_logs
    gone = ranklogs.RankLog(folder / "rank1.log", 1)  # listed, then gone before it is read
    monkeypatch.setattr(ranklogs, "rank_logs", lambda f: [*real(f), gone])
    result = CliRunner().invoke(main, ["diagnose", str(folder), "--color", "never"])
    assert result.exit_code == 0, result.output
    assert (
        f"{folder / 'rank1.log'}:1:1: cannot read it (No such file or directory)" in result.output
    )
    assert "Traceback" not in result.output


def test_guards_skip_lines_without_the_phrase_and_keep_every_way_it_can_be_written() -> None:
    """The guard after an anchor word drops the lines where no signature of that word can match
    (a finite loss) and keeps every raw form the full match accepts: blanks of any kind, a
    wrapped line (LF, CRLF or CR), `tensor(` and a sign before the value."""
    index = diagnose.Index.from_export(
        [
            {
                "id": "nan",
                "title": "t",
                "url": "/",
                "signatures": [{"text": "loss: {nonfinite}", "weight": 5, "context": False}],
            }
        ]
    )
    scanner = diagnose.Scanner(index)
    kept = ["loss:\tnan", "LOSS: \t -inf", "loss:\ntensor(nan", "loss:  \r\n  +INF", "loss:\rnan"]
    dropped = ["loss: 0.25", "loss: info", "loss:\n\nnan"]
    for text in kept + dropped:
        chunk = ("step 1\n" + text + "\nstep 2\nstep 3\n").encode()
        low = chunk.lower()
        hits = scanner._hit_segments(chunk.decode("latin-1"), low.decode("latin-1"), low)
        found = diagnose.diagnose(index, io.BytesIO(chunk)).matches
        assert bool(hits) == (text in kept) == bool(found), text


def test_links_are_addresses_or_the_command_that_prints_the_entry(tmp_path: Path) -> None:
    """With no site URL a site path cannot be opened: each result names the `explain` command
    instead; with one, each result gets its address and the report ends with the command."""
    log = tmp_path / "train.log"
    log.write_text(json.loads((VECTORS / "multirank-oom-then-timeout.json").read_text())["log"])
    runner = CliRunner()
    args = ["diagnose", str(log), "--index", str(VECTORS / "index.json")]
    bare = runner.invoke(main, args, env={"ENCYCLOPEDIA_SITE_URL": ""}).stdout
    assert (
        "   encyclopedia explain oom\n" in bare and "   encyclopedia explain nccl-timeout\n" in bare
    )
    assert "/memory/oom/" not in bare and "More:" not in bare
    linked = runner.invoke(main, [*args, "--site-url", "https://x.test/enc"]).stdout
    assert "   https://x.test/enc/memory/oom/\n" in linked
    assert "More: encyclopedia explain oom" in linked


def test_the_signal_tables_agree_everywhere() -> None:
    """One vocabulary of metric signals: the entry format's, the detector's, its scores, the
    JavaScript half's scores and the contributor documentation."""
    import re
    from typing import get_args

    from generator.diagnose import metrics
    from generator.read.model import MetricSignal

    names = list(get_args(MetricSignal))
    assert names == list(metrics.SIGNALS) == list(metrics.SIGNAL_SCORES)
    js = (Path(__file__).parent.parent / "site_assets" / "js" / "diagnose-core.js").read_text()
    table = re.search(r"var SIGNAL_SCORES = \{(.*?)\};", js, re.S)
    assert table is not None
    scores = {k: int(v) for k, v in re.findall(r'"([a-z0-9-]+)": ([0-9]+)', table.group(1))}
    assert scores == metrics.SIGNAL_SCORES
    docs = (Path(__file__).parent.parent / "docs" / "entry-format.md").read_text()
    assert all(f"- `{name}`: {about}." in docs for name, about in metrics.SIGNALS.items())


@pytest.mark.parametrize("piece", [1, 5, 333])
def test_a_wrapped_command_reads_its_metric_lines_as_a_file_does(piece: int) -> None:
    """`encyclopedia run` feeds output as it arrives, in any pieces, from two streams: metric
    sightings (and their evidence text) come out as they do from the file."""
    for name in (n for n in vector_names() if n.startswith("metric-")):
        log = json.loads((VECTORS / f"{name}.json").read_text(encoding="utf-8"))["log"]
        data = log.encode("utf-8")
        streaming = diagnose.Streaming(INDEX)
        for at in range(0, len(data), piece):
            streaming.push("stdout", data[at : at + piece])
        whole = diagnose.diagnose(INDEX, io.BytesIO(data)).to_json()
        assert streaming.result().to_json() == whole, name


def test_both_halves_read_metrics_with_the_same_patterns() -> None:
    """The JavaScript finders are built from the same source text as
    generator/diagnose/metrics.py's: one key, one pattern, one unit rule each, in the same order."""
    from generator.diagnose import metrics

    python = [[f.series, f.pattern, f.unit] for f in metrics.FINDERS]
    assert _core_value("metricFinders") == python


def _python_constants() -> dict[str, object]:
    """The Python half's values of the constants both halves write (by the JavaScript name)."""
    from generator.diagnose import candidates, frames, loss, metrics, results, series, watchdog
    from generator.read import pattern

    scan = diagnose_scan
    return {
        "SEGMENT_BYTES": scan.SEGMENT_BYTES,
        "MAX_EVIDENCE": candidates.MAX_EVIDENCE,
        "ROOT_BLOCK_LINES": scan.ROOT_BLOCK_LINES,
        "ROOT_CAUSE": scan._ROOT_CAUSE,
        "ROOT_WORD": scan._ROOT_WORD,
        "RANK": candidates.RANK.pattern,
        "ROOT_RANK": scan._ROOT_RANK.pattern,
        "NUMBER_DIGITS": pattern.NUMBER_DIGITS,
        "NONFINITE": list(pattern.NONFINITE_WORDS),
        "UNITS": [list(u) for u in pattern.UNITS],
        "LEVELS": list(results.LEVELS),
        "SIGNAL_SCORES": metrics.SIGNAL_SCORES,
        **{
            name: getattr(loss, name)
            for name in [
                "FLAT_MIN",
                "FLAT_SHARE",
                "FLAT_BAND",
                "FLAT_SLACK",
                "RISE_AFTER",
                "RISE_FACTOR",
                "RISE_MARGIN",
                "SETTLE_STARTS",
                "SETTLE_MIN",
                "SETTLE_BAND",
                "CHANCE_BAND",
                "NONFINITE_AFTER",
                "CLIMB_VALUES",
                "CLIMB_GROWTH",
                "CHANCE_TOLERANCE",
            ]
        },
        **{name: getattr(series, name) for name in ("ZERO_MIN", "MEMORY_MIN", "MEMORY_GROWTH")},
        "MEMORY_STEP_SHARE": series.MEMORY_STEP_SHARE,
        "PAIRWISE_WORDS": list(metrics.PAIRWISE_WORDS),
        "CHANCE": [list(c) for c in loss.CHANCE],
        "UNIT_BYTES": metrics._UNIT_BYTES,
        "SERIES_NAMES": metrics._NAMES,
        "MAX_FRAMES": frames.MAX_FRAMES,
        "WITHIN": frames.WITHIN,
        "TIMEOUT_PHRASE": watchdog.PHRASE,
        "MAX_TIMEOUTS": watchdog.MAX_TIMEOUTS,
    }


def test_both_halves_write_the_same_constants() -> None:
    """The limits, thresholds and tables both halves write by hand hold the same values (one
    comparison per constant, so a drift names the constant)."""
    javascript = _core_value("constants")
    python = _python_constants()
    assert sorted(javascript) == sorted(python)
    for name, value in python.items():
        assert javascript[name] == value, name


def test_a_collective_timeout_says_which_ranks_timed_out_and_which_did_not() -> None:
    """The ranks summary groups the timeouts by collective and names the silent ranks (a rank
    below the highest one seen, or one whose tag shows but that printed no timeout)."""
    case = json.loads((VECTORS / "multirank-watchdog-ranks.json").read_text(encoding="utf-8"))
    result = diagnose.diagnose(INDEX, io.BytesIO(case["log"].encode("utf-8"))).to_json()
    assert [m["ranks"] for m in result["matches"]] == [
        "watchdog timeouts from ranks 0-1, 4 on SeqNum 90213 (ALLREDUCE); rank 2 on SeqNum "
        "90212 (BROADCAST); this log shows no timeout from ranks 3, 5"
    ]
    # One rank's own log says nothing of the others.
    alone = case["log"].splitlines(keepends=True)[0]
    result = diagnose.diagnose(INDEX, io.BytesIO(alone.encode("utf-8"))).to_json()
    assert (
        result["matches"][0]["ranks"] == "watchdog timeouts from rank 0 on SeqNum 90213 (ALLREDUCE)"
    )


def test_a_folder_of_rank_logs_gets_the_ranks_summary_of_the_same_text_as_one_file(
    tmp_path: Path,
) -> None:
    """rank0.log ... rank3.log without prefixes, against the same lines in one file with
    torchrun's prefixes: the same results and the same ranks sentence (rank 3 printed only an
    OOM, so the timeouts are its collateral and it is named as silent)."""
    timeout = (
        "[E1204 01:02:03.123456 140 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=90213, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
    )
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    folder = tmp_path / "logs"
    folder.mkdir()
    lines = {r: timeout.format(r=r) for r in range(3)} | {3: oom}
    for r, text in lines.items():
        (folder / f"rank{r}.log").write_text(text)
    (tmp_path / "all.log").write_text("".join(f"[rank{r}]:{t}" for r, t in lines.items()))
    answers = []
    for path in (folder, tmp_path / "all.log"):
        result = CliRunner().invoke(main, ["diagnose", str(path), "--json"])
        matches = json.loads(result.output)["matches"]
        answers.append([(m["id"], m["collateral_of"], m["ranks"]) for m in matches])
    assert answers[0] == answers[1]
    timeouts = [a for a in answers[0] if a[2]]
    assert timeouts == [
        (
            "nccl-timeout",
            "cuda-out-of-memory",
            "watchdog timeouts from ranks 0-2 on SeqNum 90213 (ALLREDUCE); this log shows no "
            "timeout from rank 3",
        )
    ]


def test_a_log_of_timeout_lines_keeps_only_the_first_ones() -> None:
    """Memory stays bounded: past watchdog.MAX_TIMEOUTS timeouts the rest are not kept, and the
    ranks sentence still names what was kept."""
    from generator.diagnose import watchdog

    line = (
        "[rank{r}]:[E1204 01:02:03.123456 140 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum={s}, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
    )
    log = "".join(line.format(r=i % 2, s=i) for i in range(watchdog.MAX_TIMEOUTS + 100))
    scanner = diagnose.scan(INDEX, io.BytesIO(log.encode("utf-8")))
    assert len(scanner.timeouts) == watchdog.MAX_TIMEOUTS
    assert scanner.timeouts[-1].seqnum == str(watchdog.MAX_TIMEOUTS - 1)
