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
