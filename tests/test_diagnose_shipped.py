"""The behaviour issue #4 asks for, on the shipped entries: specific beats generic, a shared
message shows both entries, and a multi-rank log names the initiating failure and its rank."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from generator import diagnose
from generator.pages import exports
from tests.recall_cases import load_cases
from tests.support import ROOT
from tests.test_fixture_matrix import INDEX


def run(log: str) -> list[dict[str, Any]]:
    return list(diagnose.diagnose(INDEX, io.BytesIO(log.encode())).to_json()["matches"])


def test_flash_attention_varlen_frames_beat_the_generic_entry() -> None:
    log = (
        '  File "flash_attn/flash_attn_interface.py", line 1124, in flash_attn_varlen_func\n'
        "    out = flash_attn_gpu.varlen_fwd(q, k, v, None, cu_seqlens_q, cu_seqlens_k)\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    ids = [m["id"] for m in run(log)]
    assert ids[:2] == ["flash-attention-max-seqlen-illegal-access", "cuda-illegal-memory-access"]


def test_the_generic_entry_wins_without_flash_attention_frames() -> None:
    log = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert run(log)[0]["id"] == "cuda-illegal-memory-access"


def test_a_killed_worker_shows_both_entries_that_explain_it() -> None:
    log = "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.\n"
    ids = [m["id"] for m in run(log)]
    assert ids[:2] == ["dataloader-worker-killed", "cpu-ram-exhaustion-during-training"]


def test_multi_rank_log_names_the_initiating_rank_and_the_collateral() -> None:
    log = (
        "[rank0]:[E1129 10:00:01.000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "Root Cause (first observed failure):\n[0]:\n  rank      : 3 (local_rank: 3)\n"
    )
    matches = run(log)
    assert (matches[0]["id"], matches[0]["rank"]) == ("cuda-out-of-memory", 3)
    timeout = next(m for m in matches if m["id"] == "nccl-timeout")
    assert timeout["collateral_of"] == "cuda-out-of-memory"
    assert matches[-1]["collateral_of"] is not None


def test_generic_words_identify_nothing() -> None:
    log = "Traceback (most recent call last):\nRuntimeError: error\nException: failed\n"
    assert run(log) == []


def test_json_output_follows_its_documented_schema() -> None:
    """schema/diagnose.schema.json describes `diagnose --json`: every example log's result,
    and every shared vector's, validates against it (and a result with a field it does not
    document would not)."""
    import jsonschema

    from generator.pipeline import build_encyclopedia

    schema = json.loads((ROOT / "schema" / "diagnose.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    enc = build_encyclopedia(ROOT / "entries")
    index = exports.matcher(enc)
    checked = 0
    for page in enc.pages.values():
        for ex in page.entry.examples:
            result = diagnose.diagnose(index, io.BytesIO(ex.log.encode("utf-8"))).to_json()
            validator.validate(result)
            checked += bool(result["matches"])
    assert checked > 200
    bad: dict[str, Any] = {"matches": [], "root_rank": None, "extra": 1}
    assert not validator.is_valid(bad)


FRAGMENTED_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.10 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process "
    "has 77.90 GiB memory in use. Of the allocated memory 60.10 GiB is allocated by PyTorch, and "
    "16.30 GiB is reserved by PyTorch but unallocated.\n"
)


def test_a_symptom_row_leads_with_the_fix_step_for_its_cause() -> None:
    """Cause first: an OOM whose reserved-but-unallocated memory exceeds the request is
    fragmentation, and the step to take first is the allocator setting, not the entry's first
    step (which is about other processes on the GPU)."""
    import yaml

    steps = yaml.safe_load((ROOT / "entries/memory/cuda-out-of-memory.yaml").read_text())["fix"][
        "steps"
    ]
    first = run(FRAGMENTED_OOM)[0]
    assert first["id"] == "cuda-out-of-memory"
    assert first["symptom"]["cause"].startswith("Fragmentation")
    assert "expandable_segments:True" in first["symptom"]["fix"]
    assert first["symptom"]["fix"] in steps and first["symptom"]["fix"] != steps[0]
    # A request larger than the cached free memory is capacity: its row leads elsewhere.
    capacity = run(FRAGMENTED_OOM.replace("16.30 GiB is reserved", "0.30 GiB is reserved"))[0]
    assert capacity["symptom"]["fix"] in steps
    assert "expandable_segments" not in capacity["symptom"]["fix"]


# Lines every healthy training log is full of (the shapes scripts/bench_diagnose.py writes).
ORDINARY_LINES = [
    "[rank3]: step 1200 | loss 2.3041 | lr 3.0e-04 | grad_norm 0.812 | tokens/s 51234",
    "1200/100000 [01:02<12:34:56, 1.23it/s]",
    "INFO:root:Saving checkpoint to /checkpoints/step_1200",
    "[W1129 10:01:02.000000 ProcessGroupNCCL.cpp:1234] Warning: something benign 1200",
    '  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1511',
    "wandb: logging step 1200 memory allocated 1.20 GiB reserved 2.30 GiB",
    "{'loss': 1.9342, 'grad_norm': 0.731, 'learning_rate': 1.9e-05, 'epoch': 0.42}",
    "{'eval_loss': 1.8811, 'eval_runtime': 12.31, 'eval_samples_per_second': 81.2, 'epoch': 0.5}",
    "[INFO|configuration_utils.py:419] >> Configuration saved in out/checkpoint-500/config.json",
]


def test_ordinary_training_lines_reach_no_full_match() -> None:
    """Speed, not results: each shipped signature's anchor and guard let none of these lines
    through to the full matcher (a PEFT signature anchored on `modules` once sent every
    traceback frame there, a fifth of a busy log; `KeyError: 'eval_loss'` anchored on its
    unguarded last word once sent every evaluation line)."""
    scanner = diagnose.Scanner(INDEX)
    # (a chunk's last segment skips the guards, as a phrase may go on in the next chunk)
    text = "\n".join(ORDINARY_LINES * 3) + "\nok\n"
    assert scanner._hit_segments(text, text.lower(), text.lower().encode("latin-1")) == []


def test_metric_lines_read_beside_the_scan_give_the_same_diagnosis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log file's metric lines read by a second process (beside.py) give the diagnosis the
    scan gives alone, on every real log of the metric rounds, in small chunks so that a series
    spans many; and when that process dies before it answers, the scan's process reads them."""
    from generator.diagnose import beside, scanner

    monkeypatch.setattr(scanner, "CHUNK_BYTES", 512)
    monkeypatch.setattr(beside, "MIN_BYTES", 0)  # every log gets the second process
    cases = load_cases(ROOT / "tests" / "recall_metrics")
    assert len(cases) > 20
    log = tmp_path / "train.log"
    read = 0  # logs whose diagnosis rests on their numbers
    for case in cases:
        log.write_bytes(case.log.encode("utf-8"))
        alone = diagnose.diagnose(INDEX, io.BytesIO(log.read_bytes())).to_json()
        with log.open("rb") as handle:
            assert diagnose.diagnose(INDEX, handle, None, log).to_json() == alone, case.name
        read += any(m["readings"] for m in alone["matches"])
    assert read >= 5  # (10 of the 34 when this was written)

    monkeypatch.setattr(beside, "_child", lambda path, send: os._exit(3))
    with log.open("rb") as handle:
        assert diagnose.diagnose(INDEX, handle, None, log).to_json() == alone
