"""Large-input behaviour at test scale: the sizes are parameters (the benchmark runs them full size)."""

import io
import json
import sys
from pathlib import Path

import pytest

from distdx.logs import read_logs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from gen_log import generate  # noqa: E402


@pytest.fixture(scope="module")
def bench_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "small.log"
    info = generate(str(path), size_mb=4, fail_rank=317, seed=1)
    return path, info


def test_buried_failure_beats_cascade_and_root_cause(bench_log, scanner_mode):
    path, info = bench_log
    p = read_logs([str(path)], full_limit_bytes=256 << 10, chunk_bytes=512 << 10)
    assert not p.complete and len(p.lines) < p.total_lines / 2  # the cascade itself is most of a 4 MB log
    ff = p.first_failure
    assert ff.rank == info["fail_rank"] and ff.block.exception == "torch.OutOfMemoryError"
    assert f"rank {info['root_cause_named']}" in ff.reason and len({l.rank for l in ff.cascade} - {None, 317}) == 511
    assert len(p.ranks) == 512


def test_grep_and_python_keep_the_same_lines(bench_log, monkeypatch):
    path, _ = bench_log
    kw = dict(full_limit_bytes=256 << 10, chunk_bytes=512 << 10)
    monkeypatch.delenv("DISTDX_NO_GREP", raising=False)
    with_grep = read_logs([str(path)], **kw)
    monkeypatch.setenv("DISTDX_NO_GREP", "1")
    without = read_logs([str(path)], **kw)
    assert [(l.lineno, l.text) for l in with_grep.lines] == [(l.lineno, l.text) for l in without.lines]


def test_stdin_large_input_is_streamed(bench_log):
    path, info = bench_log
    p = read_logs(["-"], stdin=io.BytesIO(path.read_bytes()), full_limit_bytes=256 << 10, chunk_bytes=512 << 10)
    assert not p.complete and p.first_failure.rank == info["fail_rank"]


def test_everything_salient_stays_within_budget(tmp_path, scanner_mode):
    f = tmp_path / "noisy.log"
    f.write_text("".join(f"ERROR: retry {i}\n" for i in range(50_000)))
    p = read_logs([str(f)], full_limit_bytes=1024, chunk_bytes=64 << 10, max_kept_lines=1000, tail_kept_lines=200)
    assert len(p.lines) == 1200 and p.total_lines == 50_000
    assert p.lines[0].lineno == 1 and p.lines[-1].text == "ERROR: retry 49999" and p.lines[-1].lineno == 50_000
    assert any("not searched" in n or "dropped" in n for n in p.notes)


def test_guard_events_in_a_large_jsonl(tmp_path, scanner_mode):
    f = tmp_path / "guard-rank1.jsonl"
    rows = [json.dumps({"step": i, "loss": 2.0}) for i in range(20_000)]
    rows.insert(15_000, json.dumps({"distdx": 1, "kind": "collective_mismatch", "rank": 1, "host": "n1", "step": 15000,
                                    "message": "collective mismatch at seq 12: rank 1 all_reduce, rank 0 broadcast"}))
    f.write_text("\n".join(rows) + "\n")
    p = read_logs([str(f)], full_limit_bytes=1024, chunk_bytes=64 << 10)
    (ev,) = p.events
    assert ev.kind == "collective_mismatch" and ev.step == 15000
    line = next(l for l in p.lines if l.event)
    assert line.text.startswith("[distdx-guard] collective mismatch") and line.rank == 1 and line.lineno == 15001


def test_old_style_error_file(tmp_path):
    d = tmp_path / "run" / "attempt_0" / "4"
    d.mkdir(parents=True)
    (d / "error.json").write_text(json.dumps({"message": "ValueError: bad shard", "timestamp": 1714554761}))
    p = read_logs([str(tmp_path)])
    assert p.first_failure.rank == 4 and p.first_failure.text == "ValueError: bad shard"
