from pathlib import Path

from distdx.logs import parse_text, read_logs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "logs"


def test_deepspeed_example_names_the_oom_rank():
    p = read_logs([str(EXAMPLES / "deepspeed-zero3-oom.log")])
    ff = p.first_failure
    assert ff.rank == 6 and ff.host == "worker-1"
    assert ff.block.exception == "torch.OutOfMemoryError"
    assert len({l.rank for l in ff.cascade}) >= 6
    assert p.hosts == ("worker-0", "worker-1") and p.ranks == tuple(range(8))


def test_torchrun_dir_example_beats_the_root_cause_line():
    p = read_logs([str(EXAMPLES / "torchrun-nccl-timeout")])
    ff = p.first_failure
    assert ff.rank == 2 and "illegal memory access" in ff.text
    assert "Root Cause" in ff.reason and "rank 1" in ff.reason
    assert any(b.kind == "error_file" and b.rank == 2 for b in p.blocks)
    assert any(b.kind == "child_failed" and b.failed_rank == 1 for b in p.blocks)


def test_timestamps_order_candidates_across_files(tmp_path):
    (tmp_path / "rank0.log").write_text("[2024-05-01 10:00:05,000] ERROR: dataloader worker crashed\n")
    (tmp_path / "rank1.log").write_text("[2024-05-01 10:00:01,000] ERROR: checkpoint shard missing\n")
    ff = read_logs([str(tmp_path)]).first_failure
    assert ff.rank == 1 and "timestamp" in ff.reason


def _guard(kind, rank, step, time, message, severity="error"):
    import json

    return json.dumps({"distdx": 1, "kind": kind, "severity": severity, "rank": rank, "host": "vm",
                       "step": step, "time": time, "message": message}) + "\n"


def test_with_no_error_logged_the_guards_earliest_event_is_the_first_failure(tmp_path):
    # rank 0's file sorts first, but rank 1's NaN was written first; info events never count
    (tmp_path / "guard-rank0.jsonl").write_text(
        _guard("guard_started", 0, 0, 100.0, "guard active", severity="info")
        + _guard("nonfinite_loss", 0, 3, 105.0, "non-finite loss at step 3 on rank 0: nan"))
    (tmp_path / "guard-rank1.jsonl").write_text(
        _guard("collective_failed", 1, 1, 101.0, "collective failed at seq 2 on group world")
        + _guard("nonfinite_loss", 1, 2, 104.0, "non-finite loss at step 2 on rank 1: nan"))
    (tmp_path / "output.log").write_text("[default0]:step 1 loss 0.5\n[default1]:done\n")
    ff = read_logs([str(tmp_path)]).first_failure
    assert ff.rank == 1 and "step 2" in ff.text and "guard" in ff.reason
    assert [l.rank for l in ff.cascade] == [0]
    # a real error in the logs still comes first
    (tmp_path / "output.log").write_text("[default0]:RuntimeError: CUDA error: an illegal memory access was encountered\n")
    ff = read_logs([str(tmp_path)]).first_failure
    assert ff.rank == 0 and "illegal memory access" in ff.text


def test_only_cascade_is_reported_as_such():
    text = "[E ProcessGroupNCCL.cpp:475] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800331 milliseconds before timing out.\n"
    ff = parse_text(text).first_failure
    assert ff.rank == 4 and "only cascade" in ff.reason


def test_killed_beats_cascade():
    text = "\n".join([
        "srun: error: node3: task 6: Killed",
        "[rank2]:[E501 10:00:00.000001 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout: x",
    ])
    ff = parse_text(text).first_failure
    assert ff.rank == 6 and "killed" in ff.reason


def test_no_error_no_first_failure():
    assert parse_text("step 1 loss 2.0\nstep 2 loss 1.9\n").first_failure is None


# Trimmed from `distdx lab run rank-killed`: rank 1 is SIGKILLed; rank 0's traceback about the
# dropped gloo connection is printed first, but it is the consequence.
RANK_KILLED = """\
[default0]:[rank0]: Traceback (most recent call last):
[default0]:[rank0]:   File "/work/lab/rank_killed.py", line 24, in <module>
[default0]:[rank0]:     loss.backward()
[default0]:[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:40623: Connection reset by peer. This is typically caused by a remote worker hanging or bugs
[default0]:rank 0 step 2: loss 1.1610
[default1]:rank 1 step 2: loss 1.1610
W1122 03:08:11.553000 12140 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 12142 closing signal SIGTERM
E1122 03:08:11.735000 12140 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) local_rank: 1 (pid: 12143) of binary: /usr/bin/python3
Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
=========================================================
train.py FAILED
---------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-22_03:08:11
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 12142)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 12142
---------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-22_03:08:11
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 12143)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 12143
=========================================================
"""


def test_killed_rank_beats_the_connection_errors_it_causes():
    ff = parse_text(RANK_KILLED).first_failure
    assert ff.rank == 1
    assert "SIGKILL" in ff.text
    assert any(line.rank == 0 for line in ff.cascade)
