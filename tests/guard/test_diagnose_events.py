"""`distdx diagnose` on guard event files names the symptom the study would give each fault.

The events are lines the guard wrote on our scenarios (tests/guard/scenarios, the lab), with the
cascade the same run produced (the peer's connection error, the lost rank)."""

import json

import pytest

from distdx.diagnose import diagnose_files


def event(kind, rank, step, message, reporter=None):
    return json.dumps({"distdx": 1, "kind": kind, "severity": "error", "rank": rank, "reporter": reporter or rank,
                       "host": "vm", "step": step, "time": 1795314722.0, "message": message})


CASCADE = event("collective_failed", 0, 3, "collective failed in backward (DDP gradient all-reduce) at step 3 on rank 0: "
                "raised RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:51112.")

CASES = {
    "4.6": [event("collective_mismatch", 1, 0, "collective mismatch at seq 1 on group world (step 0): rank 1 called "
                  "all_reduce(shape=[1008, 4], dtype=float32) at collective_shape_mismatch.py:15 while rank 0 called "
                  "all_reduce(shape=[1000, 4], dtype=float32) at collective_shape_mismatch.py:15"),
            event("rank_lost", 0, 0, "rank 0 lost at step 0: process 19048 on vm is gone (killed or crashed)", reporter=1)],
    "4.11": [event("collective_diverged", 1, 2, "collective order diverged at seq 3 on group world (step 2): rank 1 called "
                   "barrier() at rank_skips_collective.py:20 while rank 0 called all_reduce(shape=[16], dtype=float32) at "
                   "rank_skips_collective.py:18; a rank skipped or added a collective, so the calls pair up wrongly")],
    "3.3": [event("model_mismatch", 1, 0, "model mismatch across ranks (rank 0: 4, rank 1: 6 parameters): rank 1 has "
                  "0.weight [48, 16] float32 where rank 0 has [32, 16] float32")],
    "4.1": [event("nonfinite_loss", 1, 3, "non-finite loss at step 3 on rank 1: nan"), CASCADE],
    "4.4": [event("loss_scale_collapse", 0, 7, "loss scale collapsed at step 7 on rank 0: 8 consecutive overflows, "
                  "loss scale 64; the fp16 gradients overflow at every scale")],
    "4.8": [event("rank_lost", 1, 3, "rank 1 lost at step 3: process 20970 on vm is gone (killed or crashed)", reporter=0),
            CASCADE],
}
CASES_UNEVEN = [event("uneven_batches", 0, 2, "uneven batches in epoch 0 of the DataLoader at uneven_batches.py:25: rank 0 "
                      "has 3 batches while rank 1 has 2 batches; the ranks with more batches will wait in a collective "
                      "the others never join"), CASCADE]


@pytest.mark.parametrize("symptom,lines", [*CASES.items(), ("4.11", CASES_UNEVEN)], ids=[*CASES, "4.11-uneven"])
def test_guard_events_diagnose_to_their_symptom(tmp_path, symptom, lines):
    path = tmp_path / "guard-rank0.jsonl"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose_files([str(path)])
    assert diagnosis.classification["symptom"][0].id == symptom
    assert diagnosis.evidence[0].rule.startswith("DX-GUARD-")
    assert diagnosis.evidence[0].line.rank == json.loads(lines[0])["rank"]
