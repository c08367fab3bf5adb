from distdx.logs import parse_text
from distdx.logs.lines import SourceContext, collapse_redraws, find_timestamp, make_line, strip_ansi, timestamp_key

CTX = SourceContext("<t>")


def line(text, ctx=CTX):
    return make_line(ctx, 1, text)


def test_torchrun_rank_prefix():
    ln = line("[rank3]:Traceback (most recent call last):")
    assert (ln.rank, ln.text, ln.rank_from) == (3, "Traceback (most recent call last):", "prefix")


def test_torchrun_rank_prefix_takes_the_space_torch_writes_after_it():
    assert line("[rank3]: Traceback (most recent call last):").text == "Traceback (most recent call last):"
    assert line('[rank3]:   File "train.py", line 3, in <module>').text == '  File "train.py", line 3, in <module>'


def test_torchrun_role_prefix_gives_local_rank():
    ln = line("[default2]:  File \"train.py\", line 3, in <module>")
    assert ln.local_rank == 2 and ln.rank == 2 and ln.text.startswith('  File "train.py"')


def test_pdsh_host_then_torchrun_rank():
    ln = line("worker-1: [rank5]:RuntimeError: boom")
    assert (ln.host, ln.rank, ln.text) == ("worker-1", 5, "RuntimeError: boom")


def test_a_dotted_exception_name_is_not_a_host_prefix():
    for text in ("pynvml.NVMLError_InvalidArgument: Invalid Argument", "torch.OutOfMemoryError: CUDA out of memory",
                 "ray.exceptions.RayTaskError(ValueError): boom"):
        assert (line(text).host, line(text).text) == (None, text)
    assert line("node-1.cluster: RuntimeError: boom").host == "node-1.cluster"


def test_srun_label():
    ln = line(" 12: ValueError: bad")
    assert (ln.rank, ln.text) == (12, "ValueError: bad")


def test_mpirun_tag():
    ln = line("[1,3]<stderr>:NCCL WARN Cuda failure 'out of memory'")
    assert (ln.rank, ln.text) == (3, "NCCL WARN Cuda failure 'out of memory'")


def test_exception_line_is_not_a_host():
    for text in ("RuntimeError: x", "torch.OutOfMemoryError: y", "train.py: error: unrecognized arguments", "error: command failed"):
        assert line(text).host is None, text


def test_rank_inside_deepspeed_text():
    ln = line("[2024-05-01 12:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 7] step=1")
    assert (ln.rank, ln.rank_from, ln.timestamp) == (7, "text", "2024-05-01 12:00:00,123")


def test_nccl_debug_tag():
    ln = line("node3:1234:5678 [6] NCCL WARN NET/IB : Got completion with error 12")
    assert (ln.host, ln.local_rank) == ("node3", 6)


def test_timestamps():
    assert find_timestamp("E0501 12:00:00.123456  1234 file.cc:12] boom") == "E0501 12:00:00.123456"
    assert find_timestamp("[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] x") == "E321 02:07:08.408271257"
    assert find_timestamp("2024-05-01T12:00:00.5Z start") == "2024-05-01T12:00:00.5Z"
    assert find_timestamp("step 3 loss 2.1") is None
    assert timestamp_key("2024-05-01 12:00:01,000") > timestamp_key("E0501 12:00:00.999999")


def test_ansi_and_tqdm():
    assert strip_ansi("\x1b[31mERROR\x1b[0m x") == "ERROR x"
    assert collapse_redraws(" 10%|#   | 1/10\r 50%|#####  | 5/10\r100%|#######| 10/10\r") == "100%|#######| 10/10"


def test_guard_event_line():
    p = parse_text('{"distdx": 1, "kind": "collective_mismatch", "rank": 1, "host": "n1", "step": 12, "message": "collective mismatch at seq 12", "seq": 12}\n')
    ln = p.lines[0]
    assert ln.text == "[distdx-guard] collective mismatch at seq 12"
    assert (ln.rank, ln.host) == (1, "n1")
    assert ln.event.kind == "collective_mismatch" and ln.event.fields["seq"] == 12
    assert p.events == (ln.event,)


def test_json_without_integer_distdx_is_plain_text():
    p = parse_text('{"distdx": "1", "message": "x"}\n')
    assert p.lines[0].event is None
