from distdx.logs import parse_text

CHAINED = """\
[rank0]:Traceback (most recent call last):
[rank0]:  File "a.py", line 1, in <module>
[rank0]:    f()
[rank0]:KeyError: 'w'
[rank0]:
[rank0]:The above exception was the direct cause of the following exception:
[rank0]:
[rank0]:Traceback (most recent call last):
[rank0]:  File "a.py", line 9, in <module>
[rank0]:    raise RuntimeError("load failed") from e
[rank0]:RuntimeError: load failed
"""


def test_chained_traceback():
    p = parse_text(CHAINED)
    (b,) = p.blocks
    assert b.kind == "python_traceback" and b.exception == "RuntimeError" and b.message == "load failed"
    assert [c.exception for c in b.chained] == ["KeyError"]
    assert b.frames[0].file == "a.py" and b.frames[0].line == 9 and b.rank == 0


def test_interleaved_tracebacks_are_separated_by_rank():
    text = "\n".join([
        "[rank0]:Traceback (most recent call last):",
        "[rank1]:Traceback (most recent call last):",
        '[rank0]:  File "x.py", line 1, in f',
        '[rank1]:  File "y.py", line 2, in g',
        "[rank1]:ValueError: one",
        "[rank0]:TypeError: zero",
    ])
    blocks = {b.rank: b for b in parse_text(text).blocks}
    assert blocks[0].exception == "TypeError" and blocks[0].frames[0].file == "x.py"
    assert blocks[1].exception == "ValueError" and blocks[1].frames[0].file == "y.py"


def test_cpp_nccl_block_is_cascade():
    text = """terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG 0 Rank 2] Process group watchdog thread terminated with exception: [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.
Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f in libc10.so)
"""
    (b,) = parse_text(text).blocks
    assert b.kind == "nccl_error" and b.exception == "c10::DistBackendError" and b.rank == 2
    assert b.frames[0].function == "checkTimeout" and b.frames[0].line == 609
    assert b.cascade and b.cascade_reason == "CASCADE-001"


def test_nccl_error_in():
    (b,) = parse_text("NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1\n").blocks
    assert b.kind == "nccl_error" and b.frames[0].line == 219 and b.message.startswith("unhandled system error")


def test_compiler_errors():
    text = """FAILED: fused_adam_frontend.o
/tmp/ds/csrc/adam/multi_tensor_adam.cu(110): error: identifier "__hfma2" is undefined
csrc/includes/ds_kernel_utils.h:12:10: fatal error: cuda_fp16.h: No such file or directory
  error: subprocess-exited-with-error
  ERROR: Failed building wheel for flash-attn
"""
    kinds = [(b.kind, b.message[:20]) for b in parse_text(text).blocks]
    assert len(kinds) == 5 and all(k == "compiler_error" for k, _ in kinds)
    assert parse_text(text).blocks[1].frames[0].line == 110


def test_launcher_summaries():
    text = """[2024-05-01 13:14:31,009] [ERROR] [launch.py:325:sigkill_handler] ['python', 'train.py'] exits with return code = -9
srun: error: node17: task 3: Killed
mpirun noticed that process rank 5 with PID 4242 on node n2 exited on signal 9 (Killed).
Killed
"""
    bs = parse_text(text).blocks
    assert [b.kind for b in bs] == ["launcher_exit"] * 4
    assert (bs[0].exit_code, bs[0].signal) == (-9, "SIGKILL")
    assert (bs[1].failed_rank, bs[1].signal) == (3, "SIGKILL")
    assert (bs[2].failed_rank, bs[2].failed_host, bs[2].signal) == (5, "n2", "SIGKILL")
    assert bs[3].signal == "SIGKILL"


def test_child_failed_table():
    text = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2024-05-01_09:22:41
  host      : node1
  rank      : 3 (local_rank: 3)
  exitcode  : -6 (pid: 20418)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 20418
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-05-01_09:22:41
  host      : node1
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 20416)
  error_file: /tmp/torchelastic_x/attempt_0/1/error.json
  traceback : Signal 9 (SIGKILL) received by PID 20416
============================================================
"""
    (b,) = parse_text(text).blocks
    assert b.kind == "child_failed" and b.failed_rank == 1 and b.signal == "SIGKILL" and b.exit_code == -9
    assert [(e.rank, e.root_cause) for e in b.exits] == [(3, False), (1, True)]
    assert b.exits[1].error_file.endswith("error.json")


def test_build_failure_traceback_is_a_compiler_error():
    text = """Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/torch/utils/cpp_extension.py", line 2100, in _run_ninja_build
    subprocess.run(
  File "/usr/lib/python3.10/subprocess.py", line 526, in run
    raise CalledProcessError(retcode, process.args,
subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.
"""
    (b,) = parse_text(text).blocks
    assert b.kind == "compiler_error" and b.exception == "subprocess.CalledProcessError" and len(b.frames) == 2
