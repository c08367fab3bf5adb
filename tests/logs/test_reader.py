import gzip
import io
import os
import stat
import threading

import pytest

from distdx.errors import DistdxError
from distdx.logs import read_logs

TB = '[rank3]:Traceback (most recent call last):\n[rank3]:  File "t.py", line 5, in step\n[rank3]:    x.cuda()\n[rank3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n'


def _big_log(path, n=60000, fail_at=40000):
    with open(path, "w") as fh:
        for i in range(n):
            r = i % 64
            if i == fail_at:
                fh.write(TB)
            fh.write(f"[rank{r}]:[2024-05-01 12:{i // 3600 % 60:02d}:{i % 60:02d},000] [INFO] [Rank {r}] step={i} loss=2.0\n")
        for r in range(64):
            if r != 3:
                fh.write(f"[rank{r}]:[E501 13:00:00.{r:06d} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n")


def test_large_input_keeps_salient_lines(tmp_path, scanner_mode):
    log = tmp_path / "big.log"
    _big_log(log)
    p = read_logs([str(log)], full_limit_bytes=64 << 10, chunk_bytes=256 << 10)
    assert not p.complete and p.total_lines == 60000 + 4 + 63
    assert len(p.lines) < 2000
    ff = p.first_failure
    assert ff.rank == 3 and ff.line.lineno == 40004 and ff.block.frames[0].line == 5
    full = read_logs([str(log)])
    assert full.complete and len(full.lines) == full.total_lines
    assert full.first_failure.line == ff.line


def test_gz_stdin_and_glob(tmp_path):
    data = TB.encode()
    (tmp_path / "a.log.gz").write_bytes(gzip.compress(data))
    assert read_logs([str(tmp_path / "a.log.gz")]).first_failure.rank == 3
    assert read_logs(["-"], stdin=io.BytesIO(data)).first_failure.rank == 3
    (tmp_path / "b.log").write_bytes(data)
    assert read_logs([str(tmp_path / "*.log")]).sources == (str(tmp_path / "b.log"),)


def test_invalid_utf8_is_replaced_with_a_note(tmp_path):
    f = tmp_path / "x.log"
    f.write_bytes(b"ok\nRuntimeError: bad \xff\xfe byte\n")
    p = read_logs([str(f)])
    assert "\ufffd" in p.lines[1].text and any("UTF-8" in n for n in p.notes)


@pytest.mark.parametrize("full", [True, False])
def test_single_huge_line_is_cut(tmp_path, full, scanner_mode):
    f = tmp_path / "one.log"
    f.write_bytes(b"x" * (3 << 20) + b" RuntimeError: tail\nRuntimeError: after\n")
    p = read_logs([str(f)], full_limit_bytes=(8 << 20) if full else 1024, max_line_bytes=64 << 10, chunk_bytes=1 << 20)
    assert p.total_lines == 2 and any("longer than 64 KiB" in n for n in p.notes)
    assert p.lines[-1].text == "RuntimeError: after" and p.lines[-1].lineno == 2
    # the head and the tail of the long line survive; the tail is where an error would be
    cut = next(l for l in p.lines if l.lineno == 1)
    assert cut.text.startswith("xxx") and cut.text.endswith("RuntimeError: tail") and "bytes cut" in cut.text
    assert all(len(l.text) <= (2 << 16) + 100 for l in p.lines)


def test_progress_bar_line_ending_in_an_error(tmp_path, scanner_mode):
    f = tmp_path / "bar.log"
    bar = b"".join(b"Epoch 0: %3d%%|####      | %d/500000 [1:02:11<10:40:06, 2.51it/s]\r" % (i % 100, i) for i in range(40000))
    f.write_bytes(bar + b"[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout\n")
    p = read_logs([str(f)], full_limit_bytes=1024, max_line_bytes=16 << 10, chunk_bytes=256 << 10)
    (line,) = p.lines
    assert line.text == "[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout"
    assert line.rank == 0 and p.first_failure.rank == 0


def test_many_small_files(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    for i in range(300):
        (d / f"rank{i}.log").write_text(f"step 1\n" + ("ValueError: boom\n" if i == 117 else ""))
    p = read_logs([str(d)], full_limit_bytes=1024)
    assert len(p.sources) == 300 and p.first_failure.rank == 117


def test_empty_input_is_an_error(tmp_path):
    f = tmp_path / "e.log"
    f.write_bytes(b"")
    with pytest.raises(DistdxError) as e:
        read_logs([str(f)])
    assert e.value.code == "DX-LOGS-007" and e.value.hint


def test_binary_file(tmp_path):
    b = tmp_path / "ckpt.pt"
    b.write_bytes(bytes(range(256)) * 100)
    with pytest.raises(DistdxError) as e:
        read_logs([str(b)])
    assert e.value.code == "DX-LOGS-008"
    (tmp_path / "train.log").write_text(TB)
    p = read_logs([str(tmp_path)])
    assert p.first_failure.rank == 3 and any("binary" in n for n in p.notes)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read files without read permission")
def test_unreadable_file(tmp_path):
    f = tmp_path / "secret.log"
    f.write_text(TB)
    f.chmod(0)
    try:
        with pytest.raises(DistdxError) as e:
            read_logs([str(f)])
        assert e.value.code == "DX-LOGS-006"
        (tmp_path / "ok.log").write_text(TB)
        p = read_logs([str(tmp_path)])
        assert p.first_failure is not None and any("not readable" in n for n in p.notes)
    finally:
        f.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_missing_path_and_bad_glob(tmp_path):
    with pytest.raises(DistdxError) as e:
        read_logs([str(tmp_path / "nope.log")])
    assert e.value.code == "DX-LOGS-004"
    with pytest.raises(DistdxError) as e:
        read_logs([str(tmp_path / "*.nomatch")])
    assert e.value.code == "DX-LOGS-003"
    with pytest.raises(DistdxError) as e:
        read_logs([str(tmp_path / "[unclosed")])
    assert e.value.code in ("DX-LOGS-003", "DX-LOGS-004")
    with pytest.raises(DistdxError):
        read_logs([])


def test_file_deleted_between_listing_and_reading(tmp_path, monkeypatch):
    a = tmp_path / "a.log"
    b = tmp_path / "b.log"
    a.write_text(TB)
    b.write_text("ValueError: x\n")
    from distdx.logs import reader

    real_open = reader.open_input

    def open_after_delete(inp, stdin):
        if inp.path == str(a):
            a.unlink()
        return real_open(inp, stdin)

    monkeypatch.setattr(reader, "open_input", open_after_delete)
    p = read_logs([str(tmp_path)])
    assert p.sources == (str(b),) and any("vanished" in n for n in p.notes)


def test_file_deleted_while_being_read(tmp_path, scanner_mode):
    log = tmp_path / "big.log"
    _big_log(log)
    # an open file stays readable on POSIX after unlink; delete it as soon as reading starts
    from distdx.logs import reader

    real_next = reader.Collector._next
    done = threading.Event()

    def next_then_delete(self, fh, ctx):
        out = real_next(self, fh, ctx)
        if not done.is_set() and log.exists():
            log.unlink()
            done.set()
        return out

    reader.Collector._next = next_then_delete
    try:
        p = read_logs([str(log)], full_limit_bytes=1024, chunk_bytes=128 << 10)
    finally:
        reader.Collector._next = real_next
    assert done.is_set() and p.first_failure.rank == 3


def test_permission_denied_among_many_is_a_note(tmp_path, monkeypatch):
    # injected: the test may run as root, which reads any file
    (tmp_path / "a.log").write_text(TB)
    (tmp_path / "b.log").write_text("ValueError: x\n")
    from distdx.logs import reader

    real_open = reader.open_input

    def deny_a(inp, stdin):
        if inp.path and inp.path.endswith("a.log"):
            raise PermissionError(13, "Permission denied")
        return real_open(inp, stdin)

    monkeypatch.setattr(reader, "open_input", deny_a)
    p = read_logs([str(tmp_path)])
    assert p.sources == (str(tmp_path / "b.log"),) and any("permission denied" in n for n in p.notes)
    with pytest.raises(DistdxError) as e:
        read_logs([str(tmp_path / "a.log")])
    assert e.value.code == "DX-LOGS-006"


@pytest.mark.parametrize("behaviour", ["exit 2", "echo 5:Error; echo 17:Traceback"])
def test_a_failing_or_foreign_grep_falls_back(tmp_path, monkeypatch, behaviour):
    # a grep that cannot read the file, or prints offsets that do not match: results must not change
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "grep").write_text(f"#!/bin/sh\n{behaviour}\n")
    (bindir / "grep").chmod(0o755)
    log = tmp_path / "big.log"
    _big_log(log)
    monkeypatch.delenv("DISTDX_NO_GREP", raising=False)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    p = read_logs([str(log)], full_limit_bytes=64 << 10, chunk_bytes=256 << 10)
    monkeypatch.setenv("DISTDX_NO_GREP", "1")
    ref = read_logs([str(log)], full_limit_bytes=64 << 10, chunk_bytes=256 << 10)
    assert [(l.lineno, l.text) for l in p.lines] == [(l.lineno, l.text) for l in ref.lines]
    assert p.first_failure.rank == 3


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_logs_are_read_not_rejected_as_binary(tmp_path, encoding):
    # PowerShell's `>` writes UTF-16; with a BOM ("utf-16") or without one
    f = tmp_path / "win.log"
    f.write_bytes(("step 1\n" * 20 + "[rank1]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n").encode(encoding))
    parsed = read_logs([str(f)])
    assert parsed.first_failure.rank == 1
    assert "CUDA out of memory" in parsed.first_failure.text
    assert any("UTF-16" in n for n in parsed.notes)


def test_fifos_and_devices_are_refused_not_read(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, kind in ((str(fifo), "FIFO"), ("/dev/zero", "device")):
        with pytest.raises(DistdxError) as e:
            read_logs([path])  # would block forever (FIFO) or never end (device) if opened
        assert e.value.code == "DX-LOGS-011" and kind in str(e.value) and "distdx diagnose -" in e.value.hint


def test_standard_input_twice_is_an_error():
    with pytest.raises(DistdxError) as e:
        read_logs(["-", "-"])
    assert e.value.code == "DX-LOGS-012"


@pytest.mark.parametrize("module, suffix", [("gzip", ".gz"), ("bz2", ".bz2"), ("lzma", ".xz")])
def test_a_compressed_log_cut_short_keeps_what_was_read_and_says_so(tmp_path, module, suffix):
    import importlib
    import random

    rnd = random.Random(7)
    lines = [f"step {i} loss {rnd.random():.6f} tokens {rnd.randint(0, 10**9)}" for i in range(30000)]
    lines[2000] = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    whole = importlib.import_module(module).compress(("\n".join(lines) + "\n").encode())
    path = tmp_path / f"job.log{suffix}"
    path.write_bytes(whole[: len(whole) * 3 // 4])
    parsed = read_logs([str(path)])
    assert any("cut short" in n for n in parsed.notes)
    assert any("CUDA out of memory" in l.text for l in parsed.lines)


def test_concatenated_gzip_members_are_all_read(tmp_path):
    path = tmp_path / "multi.log.gz"
    path.write_bytes(gzip.compress(b"epoch 1 ok\n") + gzip.compress(b"RuntimeError: boom\n"))
    parsed = read_logs([str(path)])
    assert [l.text for l in parsed.lines] == ["epoch 1 ok", "RuntimeError: boom"] and not parsed.notes


@pytest.mark.parametrize("module, suffix", [("gzip", ".gz"), ("bz2", ".bz2"), ("lzma", ".xz")])
@pytest.mark.parametrize("damage", ["flip", "not-that-format"])
def test_a_damaged_compressed_log_is_bad_input_that_names_the_damage(tmp_path, module, suffix, damage):
    import importlib

    whole = bytearray(importlib.import_module(module).compress(b"RuntimeError: NCCL error\n" * 100))
    if damage == "flip":
        whole[len(whole) // 2] ^= 0x55
    else:
        whole = bytearray(b"this is no compressed data at all")
    path = tmp_path / f"job.log{suffix}"
    path.write_bytes(bytes(whole))
    try:
        parsed = read_logs([str(path)])
    except DistdxError as e:  # nothing could be decompressed
        assert e.code == "DX-LOGS-006" and "empty" not in e.message and "permission" not in e.hint
        assert "damaged" in e.hint
    else:  # some data before the damage was read: kept, and the note says why it stopped
        assert any("stopped early" in n or "cut short" in n for n in parsed.notes)
