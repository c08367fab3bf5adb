"""Multi-line units rebuilt from per-rank streams: Python tracebacks (chained ones too), C++/NCCL
error blocks, compiler errors, launcher exit summaries and torchelastic failure tables.

Lines are first split into streams, one per (source, host, rank), so that interleaved output of
many ranks does not mix their tracebacks. Each stream then runs through one small state machine.
"""

from __future__ import annotations

import dataclasses
import re
import signal as _signal
from dataclasses import dataclass, field

from distdx.logs.models import Block, ExitRecord, Frame, LogLine

_TB_START = "Traceback (most recent call last):"
_CHAIN_CONTEXT = "During handling of the above exception, another exception occurred:"
_CHAIN_CAUSE = "The above exception was the direct cause of the following exception:"
_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?')
_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*)(?::\s?(?P<msg>.*))?$")
_BARE_EXC_SUFFIX = ("Error", "Exception", "Interrupt", "Exit", "Iteration", "Warning")
_TB_FILLER = re.compile(r"^\s*(?:[~^\s]+|\[Previous line repeated \d+ more times?\]|\.\.\.)\s*$")

# C++ (c10, std::) exceptions that end the process
_TERMINATE = re.compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
_WHAT = re.compile(r"^\s*what\(\):\s*(?P<msg>.*)")
_RAISED_FROM = re.compile(r"Exception raised from (?P<func>\S+) at (?P<file>[^\s:]+):(?P<line>\d+)")
_CPP_FRAME = re.compile(r"^\s*frame #\d+:")
# NCCL
_NCCL_WARN = re.compile(r"NCCL WARN (?P<msg>.*)")
_NCCL_ERROR_IN = re.compile(r"NCCL error in: (?P<file>[^\s,]+?):(?P<line>\d+), (?P<msg>.*)")
_NCCL_CODE = re.compile(r"\b(?P<type>nccl(?:InternalError|SystemError|UnhandledCudaError|InvalidUsage|InvalidArgument|RemoteError|InProgress))\b:?\s*(?P<msg>.*)")
# compilers and builds
_GCC = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+):(?:(?P<col>\d+):)? (?:fatal )?error: (?P<msg>.*)")
_NVCC = re.compile(r"^(?P<file>[^\s(][^(]*?)\((?P<line>\d+)\): (?:catastrophic )?error:? (?P<msg>.*)")
_NINJA = re.compile(r"^FAILED: (?P<msg>.*)")
_BUILD = re.compile(
    r"(?P<msg>error: subprocess-exited-with-error|ERROR: Failed building wheel for \S+|Failed to build .+|"
    r"ERROR: Could not build wheels for .+|error: command '[^']+' failed with exit (?:code|status) \d+|"
    r"ninja: build stopped: subcommand failed\.?)"
)
# a traceback that reports a failed build (torch.utils.cpp_extension, DeepSpeed op builder, setup.py)
_BUILD_EXCEPTION = re.compile(
    r"CalledProcessError: Command '\['ninja'|Error building extension|CompileError|"
    r"error: command '[^']+' failed with exit (?:code|status)"
)
# launchers
_DS_EXIT = re.compile(r"exits with return code = (?P<code>-?\d+)")
_ELASTIC_FAILED = re.compile(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<lr>\d+) \(pid: (?P<pid>\d+)\)")
_SIGNAL_RECEIVED = re.compile(r"Signal (?P<num>\d+) \((?P<sig>SIG\w+)\) received by PID (?P<pid>\d+)")
_CLOSING = re.compile(r"Sending process (?P<pid>\d+) closing signal (?P<sig>SIG\w+)")
_MPI_SIGNAL = re.compile(
    r"process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node (?P<host>\S+) exited on signal (?P<num>\d+)(?: \((?P<name>[^)]+)\))?"
)
_MPI_EXIT = re.compile(r"Process name: \[\[\d+,\d+\],(?P<rank>\d+)\]|exit code: (?P<code>-?\d+)")
_SRUN = re.compile(r"srun: error: (?P<host>\S+): tasks? (?P<rank>[\d,\-]+): (?P<what>.+)")
_SHELL_DEATH = re.compile(
    r"^(?:(?:\S+: )?line \d+:\s+\d+\s+)?(?P<what>Killed|Aborted|Segmentation fault|Bus error|Illegal instruction)"
    r"(?:\s+\(core dumped\))?\s*$|^(?:\S+: )?line \d+:\s+\d+\s+(?P<what2>Killed|Aborted|Segmentation fault|Bus error|Illegal instruction)\b"
)
# torchelastic failure table
_CHILD_FAILED = re.compile(r"ChildFailedError:?")
_TABLE_IDX = re.compile(r"^\s*\[(?P<idx>\d+)\]:\s*$")
_TABLE_KV = re.compile(r"^\s*(?P<key>time|host|rank|exitcode|error_file|traceback)\s*:\s?(?P<val>.*)$")
_TABLE_ROOT = "Root Cause (first observed failure):"

_SHELL_SIGNALS = {
    "Killed": "SIGKILL",
    "Aborted": "SIGABRT",
    "Segmentation fault": "SIGSEGV",
    "Bus error": "SIGBUS",
    "Illegal instruction": "SIGILL",
}


def signal_name(exit_code: int | None) -> str | None:
    """The signal a negative exit code (or a shell's 128+N) stands for."""
    if exit_code is None:
        return None
    num = -exit_code if exit_code < 0 else (exit_code - 128 if 128 < exit_code < 160 else 0)
    if num <= 0:
        return None
    try:
        return _signal.Signals(num).name
    except ValueError:
        return None


def stream_key(line: LogLine) -> tuple:
    """Lines of one process: same source, host and launcher-given rank. A rank read from the text
    (``[Rank 3]``) does not split a stream, since the lines around it carry none."""
    rank = line.rank if line.rank_from in ("prefix", "file", "event") else None
    return (line.source, line.host, rank, line.local_rank if rank is None else None)


@dataclass
class _Traceback:
    lines: list[LogLine] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    exc_line: LogLine | None = None
    exception: str | None = None
    message: str = ""
    msg_lines: int = 0
    stray: int = 0  # unrelated lines seen while inside


class _Stream:
    """State machine over the lines of one (source, host, rank) stream."""

    def __init__(self, out: list[Block]) -> None:
        self.out = out
        self.tb: _Traceback | None = None
        self.pending_chain: Block | None = None  # previous traceback, when a chain marker was seen
        self.cpp: dict | None = None
        self.table: dict | None = None

    # -- python tracebacks --------------------------------------------------------------------
    def _finish_tb(self) -> None:
        tb, self.tb = self.tb, None
        if tb is None or tb.exc_line is None:
            return
        chained: tuple[Block, ...] = ()
        if self.pending_chain is not None:
            chained = self.pending_chain.chained + (self._strip_chain(self.pending_chain),)
            self.out.remove(self.pending_chain)
            self.pending_chain = None
        build = _BUILD_EXCEPTION.search(f"{tb.exception}: {tb.message}")
        block = Block(
            kind="compiler_error" if build else "python_traceback",
            headline=tb.exc_line,
            lines=tuple(tb.lines),
            exception=tb.exception,
            message=tb.message.strip(),
            frames=tuple(tb.frames),
            chained=chained,
        )
        self.out.append(block)
        self.last_tb = block

    @staticmethod
    def _strip_chain(block: Block) -> Block:
        return Block(block.kind, block.headline, block.lines, block.exception, block.message, block.frames)

    def _tb_line(self, line: LogLine, text: str) -> bool:
        """Feed a line to the open traceback; False when it does not belong to it."""
        tb = self.tb
        assert tb is not None
        if tb.exc_line is None:
            m = _FRAME.match(text)
            if m:
                tb.frames.append(Frame(m.group("file"), int(m.group("line")), (m.group("func") or "").strip()))
                tb.lines.append(line)
                return True
            if text.startswith((" ", "\t")) or _TB_FILLER.match(text):
                tb.lines.append(line)
                return True
            m = _EXC_LINE.match(text)
            if m and (m.group("msg") is not None or m.group("type").endswith(_BARE_EXC_SUFFIX)):
                tb.exc_line = line
                tb.exception = m.group("type")
                tb.message = m.group("msg") or ""
                tb.lines.append(line)
                if tb.exception.endswith("ChildFailedError"):
                    # torchelastic's failure table follows; it is a block of its own
                    self._finish_tb()
                    self._open_table(line)
                return True
            tb.stray += 1
            if tb.stray > 200:
                self.tb = None
            return True  # an interleaved line of the same stream: skip it, keep the traceback open
        # after the exception line: continuation lines of a multi-line message
        if (
            not text.strip()
            or text.startswith((_TB_START, _CHAIN_CONTEXT, _CHAIN_CAUSE))
            or line.timestamp
            or tb.msg_lines >= 12
            or _TERMINATE.search(text)
        ):
            self._finish_tb()
            return False
        tb.msg_lines += 1
        tb.lines.append(line)
        tb.message += "\n" + text
        return True

    # -- the rest -------------------------------------------------------------------------------
    def feed(self, line: LogLine) -> None:
        text = line.text
        if self.tb is not None and self._tb_line(line, text):
            return
        if self.table is not None and self._table_line(line, text):
            return
        if self.cpp is not None and self._cpp_line(line, text):
            return
        if text.startswith(_TB_START) or text.endswith(_TB_START):
            self.tb = _Traceback(lines=[line])
            return
        if text.startswith((_CHAIN_CONTEXT, _CHAIN_CAUSE)):
            last = getattr(self, "last_tb", None)
            if last is not None and last in self.out:
                self.pending_chain = last
            return
        m = _TERMINATE.search(text)
        if m:
            self.cpp = {"head": line, "lines": [line], "type": m.group("type"), "msg": "", "frames": []}
            return
        if _CHILD_FAILED.search(text) and "Error" in text and not text.lstrip().startswith("raise"):
            self._open_table(line)
            return
        self._single(line, text)

    def _cpp_line(self, line: LogLine, text: str) -> bool:
        cpp = self.cpp
        assert cpp is not None
        m = _WHAT.match(text)
        if m:
            cpp["msg"] = m.group("msg")
            cpp["lines"].append(line)
            return True
        m = _RAISED_FROM.search(text)
        if m:
            cpp["frames"].append(Frame(m.group("file"), int(m.group("line")), m.group("func")))
            cpp["lines"].append(line)
            return True
        if _CPP_FRAME.match(text) or (cpp["msg"] and not cpp["frames"] and len(cpp["lines"]) < 12 and not line.timestamp and text.strip()):
            cpp["lines"].append(line)
            if not _CPP_FRAME.match(text) and not cpp["frames"]:
                cpp["msg"] += "\n" + text
            return True
        self._finish_cpp()
        return False

    def _finish_cpp(self) -> None:
        cpp, self.cpp = self.cpp, None
        if cpp is None:
            return
        msg = cpp["msg"].strip()
        kind = "nccl_error" if ("NCCL" in msg or "nccl" in msg) else "cpp_error"
        self.out.append(
            Block(kind, cpp["head"], tuple(cpp["lines"]), cpp["type"], msg, tuple(cpp["frames"]), signal="SIGABRT")
        )

    def _open_table(self, line: LogLine) -> None:
        self.table = {"head": line, "lines": [line], "entries": [], "root": False, "cur": None}

    def _table_line(self, line: LogLine, text: str) -> bool:
        table = self.table
        assert table is not None
        stripped = text.strip()
        if stripped.startswith("=") and set(stripped) == {"="}:
            table["lines"].append(line)
            table["borders"] = table.get("borders", 0) + 1
            if table["borders"] >= 2:
                self._finish_table()
            return True
        if len(table["lines"]) > 20000:
            self._finish_table()
            return False
        if stripped == _TABLE_ROOT:
            table["root"] = True
            table["lines"].append(line)
            return True
        m = _TABLE_IDX.match(text)
        if m:
            table["cur"] = {"root": table["root"]}
            table["entries"].append(table["cur"])
            table["lines"].append(line)
            return True
        m = _TABLE_KV.match(text)
        if m:
            if table["cur"] is None or m.group("key") in table["cur"]:
                table["cur"] = {"root": table["root"]}
                table["entries"].append(table["cur"])
            table["cur"][m.group("key")] = m.group("val").strip()
            table["lines"].append(line)
            return True
        if stripped.startswith("-") and set(stripped) == {"-"} or stripped in ("Failures:", "<NO_OTHER_FAILURES>") or stripped.endswith(" FAILED"):
            table["lines"].append(line)
            return True
        if table["cur"] is not None and "traceback" in table["cur"] and text.startswith(" "):
            table["cur"]["traceback"] += "\n" + stripped  # an inlined traceback from an error file
            table["lines"].append(line)
            return True
        if table.get("borders"):
            self._finish_table()
            return False
        return True  # a stray line before the table body starts

    def _finish_table(self) -> None:
        table, self.table = self.table, None
        if table is None:
            return
        exits = tuple(_exit_record(e) for e in table["entries"])
        root = next((e for e in exits if e.root_cause), None)
        message = ""
        if root is not None:
            message = f"root cause (first observed failure): rank {root.rank} exitcode {root.exit_code}"
            if root.signal:
                message += f" ({root.signal})"
            if root.message:
                message += f": {root.message.splitlines()[0]}"
        self.out.append(
            Block(
                "child_failed",
                table["head"],
                tuple(table["lines"]),
                exception="torch.distributed.elastic.multiprocessing.errors.ChildFailedError",
                message=message,
                exit_code=root.exit_code if root else None,
                signal=root.signal if root else None,
                cascade=True,
                failed_rank=root.rank if root else None,
                failed_host=root.host if root else None,
                exits=exits,
            )
        )

    def _single(self, line: LogLine, text: str) -> None:
        """One-line blocks: NCCL, compiler and launcher lines."""
        out = self.out
        m = _NCCL_WARN.search(text)
        if m:
            out.append(Block("nccl_error", line, (line,), "NCCL WARN", m.group("msg").strip()))
            return
        m = _NCCL_ERROR_IN.search(text)
        if m:
            out.append(Block("nccl_error", line, (line,), "NCCL error", m.group("msg").strip(),
                             (Frame(m.group("file"), int(m.group("line"))),)))
            return
        m = _GCC.match(text) or _NVCC.match(text)
        if m:
            out.append(Block("compiler_error", line, (line,), "compiler error", m.group("msg").strip(),
                             (Frame(m.group("file"), int(m.group("line"))),)))
            return
        m = _NINJA.match(text) or _BUILD.search(text)
        if m:
            out.append(Block("compiler_error", line, (line,), "build error", m.group("msg").strip()))
            return
        m = _DS_EXIT.search(text)
        if m:
            code = int(m.group("code"))
            out.append(Block("launcher_exit", line, (line,), None, text.strip(), exit_code=code,
                             signal=signal_name(code), cascade=True))
            return
        m = _ELASTIC_FAILED.search(text)
        if m:
            code = int(m.group("code"))
            lr = int(m.group("lr"))
            out.append(Block("launcher_exit", line, (line,), None, text.strip(), exit_code=code, signal=signal_name(code),
                             cascade=True, exits=(ExitRecord(local_rank=lr, pid=int(m.group("pid")), exit_code=code,
                                                             signal=signal_name(code)),)))
            return
        m = _CLOSING.search(text)
        if m:
            out.append(Block("launcher_exit", line, (line,), None, text.strip(), signal=m.group("sig"), cascade=True))
            return
        m = _SIGNAL_RECEIVED.search(text)
        if m:
            out.append(Block("launcher_exit", line, (line,), None, text.strip(), exit_code=-int(m.group("num")),
                             signal=m.group("sig"), cascade=True))
            return
        m = _MPI_SIGNAL.search(text)
        if m:
            num = int(m.group("num"))
            sig = signal_name(-num)
            out.append(Block("launcher_exit", line, (line,), None, text.strip(), exit_code=-num, signal=sig,
                             failed_rank=int(m.group("rank")), failed_host=m.group("host"),
                             exits=(ExitRecord(rank=int(m.group("rank")), host=m.group("host"), pid=int(m.group("pid")),
                                               exit_code=-num, signal=sig),)))
            return
        m = _SRUN.search(text)
        if m:
            what = m.group("what").strip()
            sig = _SHELL_SIGNALS.get(what.replace(" (core dumped)", ""))
            code_m = re.search(r"exit code (-?\d+)", what)
            code = int(code_m.group(1)) if code_m else None
            ranks = m.group("rank")
            first_rank = int(re.split(r"[,\-]", ranks)[0])
            out.append(Block("launcher_exit", line, (line,), None, text.strip(), exit_code=code, signal=sig,
                             failed_rank=first_rank, failed_host=m.group("host")))
            return
        m = _SHELL_DEATH.match(text)
        if m:
            sig = _SHELL_SIGNALS[m.group("what") or m.group("what2")]
            num = getattr(_signal, sig).value
            out.append(Block("launcher_exit", line, (line,), None, text.strip(), exit_code=-num, signal=sig))
            return
        m = _NCCL_CODE.search(text)
        if m and not text.lstrip().startswith(("File ", "raise")):
            out.append(Block("nccl_error", line, (line,), m.group("type"), m.group("msg").strip()))

    def close(self) -> None:
        if self.tb is not None:
            if self.tb.exc_line is None and self.tb.frames:
                # a traceback cut short (process killed while printing, or a truncated log)
                last = self.tb.lines[-1]
                self.tb.exc_line = last
                self.tb.exception = None
            self._finish_tb()
        self._finish_cpp()
        self._finish_table()


def _exit_record(entry: dict) -> ExitRecord:
    rank = local_rank = None
    m = re.match(r"(\d+)(?: \(local_rank: (\d+)\))?", entry.get("rank", ""))
    if m:
        rank = int(m.group(1))
        local_rank = int(m.group(2)) if m.group(2) else None
    code = pid = None
    sig = None
    m = re.match(r"(-?\d+)(?: \(pid: (\d+)\))?\s*(SIG\w+)?", entry.get("exitcode", ""))
    if m:
        code = int(m.group(1))
        pid = int(m.group(2)) if m.group(2) else None
        sig = m.group(3) or signal_name(code)
    tb = entry.get("traceback", "")
    m = _SIGNAL_RECEIVED.search(tb)
    if m and not sig:
        sig = m.group("sig")
    error_file = entry.get("error_file") or None
    if error_file == "<N/A>":
        error_file = None
    return ExitRecord(
        rank=rank, local_rank=local_rank, host=entry.get("host") or None, pid=pid, exit_code=code, signal=sig,
        time=entry.get("time") or None, error_file=error_file, message=tb, root_cause=bool(entry.get("root")),
    )


def build_blocks(lines: list[LogLine] | tuple[LogLine, ...]) -> list[Block]:
    """Rebuild blocks from kept lines; blocks come out in the order their first line was seen."""
    streams: dict[tuple, _Stream] = {}
    collected: list[Block] = []
    order: dict[int, int] = {id(line): i for i, line in enumerate(lines)}
    for line in lines:
        key = stream_key(line)
        stream = streams.get(key)
        if stream is None:
            stream = streams[key] = _Stream([])
        stream.feed(line)
    for stream in streams.values():
        stream.close()
        collected.extend(_with_rank(b) for b in stream.out)
    collected.sort(key=lambda b: order.get(id(b.lines[0] if b.lines else b.headline), 0))
    return collected


def _with_rank(block: Block) -> Block:
    """A headline without a rank takes the first rank named inside its block (``what(): [Rank 3]``)."""
    if block.headline.rank is not None:
        return block
    for line in block.lines:
        if line.rank is not None:
            return dataclasses.replace(block, headline=dataclasses.replace(block.headline, rank=line.rank, rank_from=line.rank_from))
    return block
