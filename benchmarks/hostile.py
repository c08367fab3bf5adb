"""Hostile inputs for every command: a deterministic generator and a judge.

    python benchmarks/hostile.py                 # every case of seed 0 (the development seed)
    python benchmarks/hostile.py --seed 1        # a kept-back seed: other sizes, bytes and mutations
    python benchmarks/hostile.py --every 10      # one case in ten (what tests/test_hostile_inputs.py runs)

Each case is a distdx command line with its input files (written here, ≤ 20 MB each, large ones
streamed to disk), run in its own process under a 4 GiB address-space limit and a 60 s wall limit,
with HOME and the XDG folders pointed into the case's own folder. The judge counts, per command:

- internal errors: exit 3, a Python traceback, or an exit status the command does not document;
- hangs (the 60 s limit) and memory blow-ups (MemoryError, or killed by a signal under the limit);
- user files changed: any input file whose bytes changed, or a new file next to the inputs;
- planted secrets found in shareable output (JSON and Markdown);
- ssh options taken from a hostfile: a fake ``ssh`` on PATH records its argv, and no host-file word
  that starts with ``-`` may reach it before ``--``;
- hostile but valid inputs (big logs, deep but legal configs) that no longer work.

Beside the counts it prints a baseline measured in the same run: the wall time of
``distdx --version`` (interpreter start-up), so the per-case times can be read against it.
"""

from __future__ import annotations

import argparse
import bz2
import concurrent.futures as cf
import gzip
import hashlib
import json
import lzma
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AS_LIMIT = 4 << 30
TIMEOUT_S = 60.0
MAX_FILE = 20 << 20

# documented exit statuses per command (docs/cli: 0 ok, 1 findings, 2 bad input, 4 no failure found)
EXITS = {"diagnose": {0, 2, 4}, "lint": {0, 1, 2}, "estimate": {0, 1, 2}, "doctor": {0, 1, 2},
         "study": {0, 1, 2}, "kb": {0, 2}, "eval": {0, 1, 2}, "taxonomy": {0, 2}, "rules": {0, 1, 2},
         "lab": {0, 1, 2}, "run": {0, 1, 2}, "fix": {0, 1, 2}}

SECRETS = ["ghp_" + "Zq8" * 12, "hf_" + "Xk4Lm9" * 5, "sk-proj-" + "Ab3Cd5Ef7" * 3, "AKIA" + "QW3RTY7UIOPA5SDF",
           "xoxb-1234567890-" + "aBcDeF" * 3, "glpat-" + "Hy6Tg5Rf4Ed3Ws2Qa1Zx",
           "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"]

FAKE_SSH = """#!/bin/sh
printf '%s\\n' "$@" > "$DISTDX_HOSTILE_SSH_LOG.$$"
echo "ssh: connect to host x port 22: Connection refused" >&2
exit 255
"""


@dataclass
class Case:
    name: str
    command: str                      # first word after `distdx`, for the table
    argv: list[str]
    files: dict[str, bytes | tuple] = field(default_factory=dict)  # name -> bytes, or ("stream", fn, args)
    stdin: bytes | None = None
    secrets: tuple[str, ...] = ()     # must not appear in stdout (shareable formats only)
    valid: bool = False               # hostile but valid: must work
    valid_exits: frozenset[int] = frozenset({0, 1})
    outputs: tuple[str, ...] = ()     # files the command is asked to write (relative to the case folder)
    hostfile_words: tuple[str, ...] = ()
    symlinks: dict[str, str] = field(default_factory=dict)  # name -> target (relative)
    dirs: tuple[str, ...] = ()


@dataclass
class Result:
    case: Case
    exit: int | None
    seconds: float
    problems: list[str]


# ------------------------------------------------------------------------------------------- content

def _stream_lines(path: Path, make_line, count: int) -> None:
    with open(path, "wb") as f:
        size = 0
        for i in range(count):
            line = make_line(i)
            if size + len(line) > MAX_FILE:
                break
            f.write(line)
            size += len(line)


def _rand_bytes(rnd: random.Random, n: int) -> bytes:
    return rnd.getrandbits(8 * n).to_bytes(n, "little") if n else b""


REAL_LINES = [
    b"[rank3]: Traceback (most recent call last):",
    b'[rank3]:   File "train.py", line 88, in <module>',
    b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB",
    b"[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600051 milliseconds before timing out.",
    b"torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    b"RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.14.3",
    b"ncclInternalError: Internal check failed.",
    b"AssertionError: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size 16 != 4 * 1 * 2",
    b"ModuleNotFoundError: No module named 'deepspeed'",
    b"ninja: build stopped: subcommand failed.",
    b"  File \"/usr/lib/python3/dist-packages/deepspeed/runtime/engine.py\", line 1200, in _configure_optimizer",
    b"exitcode  : -9 (pid: 4242)",
    b"NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129",
    b"ValueError: Tensor parallel size 8 is not a divisor of attention heads 12",
]


def log_texts(rnd: random.Random) -> list[tuple[str, bytes, bool]]:
    """(name, content, valid) for small logs; the big ones are streamed by the cases below."""
    out = []
    for i in range(8):
        lines = [rnd.choice(REAL_LINES) for _ in range(rnd.randint(1, 60))]
        junk = [_rand_bytes(rnd, rnd.randint(0, 120)) for _ in range(rnd.randint(0, 20))]
        mixed = lines + junk
        rnd.shuffle(mixed)
        out.append((f"mixed{i}.log", b"\n".join(mixed), False))
    out += [
        ("empty.log", b"", False), ("blank.log", b" \n\t\n\r\n" * 1000, False),
        ("nul.log", b"\x00" * 100_000, False), ("binary.log", _rand_bytes(rnd, 200_000), False),
        ("bad_utf8.log", b"\xff\xfe\xc3\x28 RuntimeError: NCCL error \xa0\xa1\n" * 500, False),
        ("cr_only.log", b"\r".join(REAL_LINES) * 50, False),
        ("ansi.log", b"\x1b[31m" + b"\x1b[0m\n\x1b[1;33m".join(REAL_LINES) + b"\x1b[0m\x1b]0;title\x07", False),
        ("rank_prefix.log", b"\n".join(b"[rank3]: " * 200 + line for line in REAL_LINES), False),
        ("unclosed_fence.md", b"## Bug\n```\n" + b"\n".join(REAL_LINES) + b"\n~~~\n```python\n" * 300, False),
        ("html.log", b"<html><script>alert(1)</script>" + b"<div>" * 50_000 + b"CUDA out of memory" + b"</div>" * 50_000, False),
        ("json.log", json.dumps({"traceback": [l.decode() for l in REAL_LINES]}).encode(), False),
        ("surrogates.log", "RuntimeError: \ud800\udfff NCCL".encode("utf-8", "surrogatepass") * 1000, False),
        ("bidi.log", ("\u202eRuntimeError: CUDA out of memory\u202c \u200b\ufeff" * 2000).encode(), False),
        ("long_unicode.log", ("RuntimeError: " + "é" * 500_000).encode(), False),
        ("traceback_only.log", b"Traceback (most recent call last):\n" * 100_000, False),
        ("valid_oom.log", b"\n".join(REAL_LINES[:3]) + b"\n", True),
        ("valid_nccl.log", REAL_LINES[3] + b"\n" + REAL_LINES[5] + b"\n", True),
    ]
    return out


def secret_log(rnd: random.Random, secrets: list[str]) -> bytes:
    lines = [
        f"export HF_TOKEN={secrets[1]}",
        f"git clone https://user:{secrets[0]}@github.com/org/repo.git",
        f"Authorization: Bearer {secrets[2]}",
        f"aws_access_key_id = {secrets[3]}",
        f"curl -H 'x-api-key: {secrets[4]}' https://api.example.com",
        f"wandb login {secrets[5]}",
        f"cookie: session={secrets[6]}",
    ]
    rnd.shuffle(lines)
    return ("\n".join(lines[: rnd.randint(3, len(lines))] + [l.decode() for l in REAL_LINES[:4]]) + "\n").encode()


def _distinct(path: Path, n: int, seed: int | None = None) -> None:  # n distinct 2 kB lines
    rnd = random.Random(n if seed is None else seed)
    _stream_lines(path, lambda i: (f"[rank{i % 64}]: step {i} " + "".join(rnd.choice("abcdefgh ") for _ in range(2000))
                                   + "\n").encode(), n)


def _frames(path: Path, n: int) -> None:  # a traceback of n frames
    _stream_lines(path, lambda i: (b"Traceback (most recent call last):\n" if i == 0 else
                                   b"RecursionError: maximum recursion depth exceeded\n" if i == 2 * n + 1 else
                                   f'  File "/src/model.py", line {i % 997}, in forward_{i % 13}\n'.encode()
                                   if i % 2 else b"    return self.inner(x)\n"), 2 * n + 2)


def _big_distinct(path: Path, seed: int) -> None:  # 4,000 distinct long lines, ~8 MB
    _distinct(path, 4000, seed)


def _big_frames(path: Path, seed: int) -> None:  # a 200k-frame traceback
    _frames(path, 200_000)


def _big_one_line(path: Path, seed: int) -> None:  # one 12 MB line with an error in the middle
    with open(path, "wb") as f:
        f.write(b"x" * (6 << 20) + b" RuntimeError: CUDA out of memory " + b"y" * (6 << 20) + b"\n")


def _big_repeated(path: Path, seed: int) -> None:  # 20 MB of the same error from 512 ranks
    _stream_lines(path, lambda i: f"[rank{i % 512}]: ".encode() + REAL_LINES[3] + b"\n", 10**7)


def _gz_bomb(path: Path, seed: int) -> None:  # ~1 MB of gzip that inflates to 1 GiB of zeros and newlines
    with gzip.GzipFile(path, "wb", compresslevel=9, mtime=0) as f:
        block = (b"\0" * 1023 + b"\n") * 1024
        for _ in range(1024):
            f.write(block)


STREAMS = {"big_distinct": _big_distinct, "big_frames": _big_frames, "big_one_line": _big_one_line,
           "big_repeated": _big_repeated, "gz_bomb": _gz_bomb}


def compressed(rnd: random.Random, data: bytes) -> list[tuple[str, bytes]]:
    out = []
    # gzip writes the current time into its header unless told: mtime=0 keeps the cases byte for byte the same
    for ext, fn in ((".gz", lambda d: gzip.compress(d, mtime=0)), (".bz2", bz2.compress), (".xz", lzma.compress)):
        blob = fn(data)
        out.append((ext, blob))
        out.append((ext, blob[: rnd.randint(1, max(1, len(blob) - 1))]))  # cut
        flipped = bytearray(blob)
        for _ in range(rnd.randint(1, 8)):
            pos = rnd.randrange(len(flipped))
            flipped[pos] ^= 1 << rnd.randrange(8)
        out.append((ext, bytes(flipped)))
        out.append((ext, _rand_bytes(rnd, rnd.randint(0, 300))))  # not that format at all
    return out


# ------------------------------------------------------------------------------------------- cases

def diagnose_cases(rnd: random.Random) -> list[Case]:
    cases = []
    fmts = ["text", "json", "markdown"]
    for name, data, valid in log_texts(rnd):
        for fmt in fmts:
            extra = ["--redact-hosts"] if rnd.random() < 0.3 else []
            cases.append(Case(f"diagnose/{name}/{fmt}", "diagnose", ["diagnose", name, "--format", fmt, *extra],
                              {name: data}, valid=valid, valid_exits=frozenset({0})))
        cases.append(Case(f"diagnose/stdin/{name}", "diagnose", ["diagnose", "-", "--format", "json"], stdin=data,
                          valid=valid, valid_exits=frozenset({0})))
    for i in range(12):
        data = secret_log(rnd, SECRETS)
        for fmt in ("json", "markdown"):
            extra = ["--redact-hosts"] if i % 3 == 0 else []
            cases.append(Case(f"diagnose/secrets{i}/{fmt}", "diagnose", ["diagnose", "job.log", "--format", fmt, *extra],
                              {"job.log": data}, secrets=tuple(SECRETS), valid=True, valid_exits=frozenset({0})))
    base = b"\n".join(REAL_LINES[:6]) + b"\n"
    for i, (ext, blob) in enumerate(compressed(rnd, base * rnd.randint(1, 400))):
        cases.append(Case(f"diagnose/compressed{i}{ext}", "diagnose", ["diagnose", f"job{ext}", "--format", "json"],
                          {f"job{ext}": blob}))
    for stream in STREAMS:
        name = stream + (".log.gz" if stream == "gz_bomb" else ".log")
        for fmt in ("text", "json"):
            cases.append(Case(f"diagnose/{stream}/{fmt}", "diagnose", ["diagnose", name, "--format", fmt],
                              {name: ("stream", stream, rnd.randrange(1 << 30))},
                              valid=stream != "gz_bomb", valid_exits=frozenset({0, 4})))
    fixtures = sorted((ROOT / "tests" / "diagnose" / "logs").glob("*.log"))
    for i in range(60):  # real whole-log fixtures, mutated: cut, spliced, bytes flipped, lines repeated
        data = bytearray(rnd.choice(fixtures).read_bytes())
        for _ in range(rnd.randint(1, 5)):
            op, pos = rnd.randrange(4), rnd.randrange(len(data) + 1)
            if op == 0:
                del data[pos:pos + rnd.randint(1, 2000)]
            elif op == 1 and data:
                data[min(pos, len(data) - 1)] = rnd.randrange(256)
            elif op == 2:
                data[pos:pos] = rnd.choice(fixtures).read_bytes()[: rnd.randint(0, 3000)]
            else:
                end = data.find(b"\n", pos)
                line = bytes(data[pos:end + 1]) if end >= 0 else b"x\n"
                data[pos:pos] = line * rnd.randint(2, 5000)
        fmt = rnd.choice(["text", "json", "markdown"])
        cases.append(Case(f"diagnose/fuzz{i}/{fmt}", "diagnose", ["diagnose", "job.log", "--format", fmt],
                          {"job.log": bytes(data[:MAX_FILE])}))
    # paths: folders, loops, globs, names
    cases.append(Case("diagnose/symlink-loop-glob", "diagnose", ["diagnose", "logs/**/*.log"],
                      {"logs/a/rank0.log": base}, symlinks={"logs/a/loop": "..", "logs/self": "self"}))
    cases.append(Case("diagnose/folder", "diagnose", ["diagnose", "logs", "--format", "json"],
                      {f"logs/rank{i}.log": rnd.choice(REAL_LINES) + b"\n" for i in range(200)}, valid=True,
                      valid_exits=frozenset({0})))
    cases.append(Case("diagnose/empty-folder", "diagnose", ["diagnose", "empty"], dirs=("empty",)))
    cases.append(Case("diagnose/missing", "diagnose", ["diagnose", "nope.log"]))
    cases.append(Case("diagnose/dev-zero", "diagnose", ["diagnose", "/dev/zero"]))
    cases.append(Case("diagnose/odd-name", "diagnose", ["diagnose", "a\nb [x]*?.log"], {"a\nb [x]*?.log": base}))
    cases.append(Case("diagnose/dangling", "diagnose", ["diagnose", "gone.log"], symlinks={"gone.log": "nowhere"}))
    cases.append(Case("diagnose/many-args", "diagnose", ["diagnose", *[f"f{i}.log" for i in range(300)]],
                      {f"f{i}.log": b"x\n" for i in range(0, 300, 3)}))
    cases.append(Case("diagnose/bad-format", "diagnose", ["diagnose", "--format", "yaml", "x.log"], {"x.log": base}))
    return cases


def _json_bytes(obj) -> bytes:
    return json.dumps(obj).encode()


def _ds_config(rnd: random.Random) -> dict:
    return {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
            "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "weight_decay": 0.01}},
            "fp16": {"enabled": rnd.random() < 0.5}, "zero_optimization": {"stage": rnd.choice([0, 1, 2, 3])}}


def lint_cases(rnd: random.Random) -> list[Case]:
    cases = []

    def add(name, files, argv=None, valid=False):
        first = next(iter(files))
        cases.append(Case(f"lint/{name}", "lint", argv or ["lint", first], files, valid=valid))

    add("deep.json", {"deep.json": b"[" * 100_000 + b"]" * 100_000})
    add("deep-obj.json", {"deep-obj.json": b'{"a":' * 50_000 + b"1" + b"}" * 50_000})
    add("deep.yaml", {"deep.yaml": b"[" * 100_000 + b"]" * 100_000})
    add("laughs.yaml", {"laughs.yaml": ("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9))).encode()})
    add("python-tag.yaml", {"python-tag.yaml": b"x: !!python/object/apply:os.system ['touch PWNED']\n"})
    keys = {f"key_{i}": i for i in range(40_000)}
    add("40k-keys.json", {"40k-keys.json": _json_bytes({**_ds_config(rnd), **keys})})
    add("huge-int.json", {"huge-int.json": b'{"train_batch_size": ' + b"9" * 5000 + b"}"})
    add("huge-int-nested.json", {"huge-int-nested.json": b'{"zero_optimization": {"stage": ' + b"3" * 100_000 + b"}}"})
    add("huge-float.json", {"huge-float.json": b'{"train_batch_size": 1e999, "gradient_clipping": -1e999}'})
    add("nan.json", {"nan.json": b'{"train_batch_size": NaN, "optimizer": {"params": {"lr": Infinity}}}'})
    add("dup-keys.json", {"dup-keys.json": b'{"train_batch_size": 8, "train_batch_size": 16}'})
    add("trailing-space.json", {"trailing-space.json": b'{"train_batch_size ": 16, "zero_optimization": {"stage": 2}}'})
    add("lr-string.json", {"lr-string.json": _json_bytes({**_ds_config(rnd), "optimizer": {"type": "Adam",
                                                                               "params": {"lr": "3e-4x"}}})})
    add("not-utf8.json", {"not-utf8.json": b'{"a": "\xff\xfe"}'})
    add("bom.json", {"bom.json": b"\xef\xbb\xbf" + _json_bytes(_ds_config(rnd))}, valid=True)
    add("empty.json", {"empty.json": b""})
    add("nul.json", {"nul.json": b"\x00" * 1000})
    add("list-top.json", {"list-top.json": b"[1, 2, 3]"})
    add("template.json", {"template.json": b'{"train_batch_size": {{ batch }}, "fp16": {"enabled": ${FP16}}}'})
    add("hjson.json", {"hjson.json": b"{\n  // comment\n  train_batch_size: 16\n}\n"})
    for i in range(30):  # YAML configs (Colossal-AI, Megatron yaml args), mutated
        text = bytearray(("plugin: " + rnd.choice(["gemini", "hybrid_parallel", "zero2", "3d"]) + "\ntp_size: "
                          + str(rnd.choice([1, 2, 4, 8, 0, -1])) + "\npp_size: 2\nzero_stage: 1\nprecision: bf16\n"
                          "optimizer:\n  lr: 3.0e-4\n  betas: [0.9, 0.95]\n").encode())
        for _ in range(rnd.randint(0, 4)):
            pos = rnd.randrange(len(text) + 1)
            text[pos:pos] = rnd.choice([b"&a ", b"*a", b"!!binary ", b"{", b"[", b"'", b": :", b"\t", b"- ", b"<<: *a\n",
                                        b"%YAML 9.9\n", b"--- !x\n"])
        add(f"yaml{i}.yaml", {f"yaml{i}.yaml": bytes(text)})
    for i in range(30):  # launch scripts put together from hostile pieces
        pieces = [b"#!/bin/bash", b"GPUS=${GPUS:-8}", b"NODES=$((SLURM_NNODES))", b"ARGS=(--tp 8 --pp $((GPUS/0)))",
                  b"eval \"$CMD\"", b"source ./env.sh", b"cat <<'EOF' > ds.json", b'{"train_batch_size": "$GBS"}', b"EOF",
                  b"torchrun --nproc_per_node $GPUS --nnodes $NODES pretrain_gpt.py ${ARGS[@]}",
                  b"deepspeed --hostfile hosts --include node1:0,1 train.py --deepspeed ds.json",
                  b"for i in $(seq 1 100); do X=$X$X; done", b"function f { f; }; f", b"${!ref}", b"${V//a/bb}",
                  "python -m torch.distributed.run --nproc_per_node=\u00b2 t.py".encode(), b"\\", b"'", b'"', b"$(", b"`"]
        body = b"\n".join(rnd.choice(pieces) for _ in range(rnd.randint(3, 40)))
        add(f"script{i}.sh", {f"script{i}.sh": body})
    for i in range(80):  # random mutations of a valid config: byte flips, cuts, inserted junk
        data = bytearray(json.dumps(_ds_config(rnd), indent=rnd.choice([None, 2])).encode())
        for _ in range(rnd.randint(1, 6)):
            op = rnd.randrange(3)
            pos = rnd.randrange(len(data) + 1)
            if op == 0 and data:
                data[min(pos, len(data) - 1)] = rnd.randrange(256)
            elif op == 1:
                del data[pos:pos + rnd.randint(1, 20)]
            else:
                data[pos:pos] = _rand_bytes(rnd, rnd.randint(1, 10))
        add(f"mutated{i}.json", {f"mutated{i}.json": bytes(data)})
    for i in range(20):  # valid configs, valid values: must lint (exit 0 or 1), never a parse error
        add(f"valid{i}.json", {f"valid{i}.json": _json_bytes(_ds_config(rnd))}, valid=True)
    shell = {
        "arith.sh": b"N=$((2**62 * 2**62))\nM=$(( 10 ** 100000 ))\ndeepspeed train.py --deepspeed ds.json\n",
        "arith-nest.sh": b"X=$((" * 5000 + b"1" + b"))" * 5000 + b"\n",
        "array-growth.sh": b"A=(x)\nfor i in $(seq 1 100000000); do A+=(\"${A[@]}\"); done\ntorchrun --nproc_per_node 8 t.py\n",
        "var-growth.sh": b"V=x\n" + b"V=$V$V$V$V\n" * 200 + b"torchrun --nproc_per_node $V t.py\n",
        "unterminated.sh": b'echo "never closed\ntorchrun --nproc_per_node 8 train.py\n',
        "heredoc-open.sh": b"cat <<EOF > ds.json\n{\"train_batch_size\": 16}\n",
        "heredoc-ds.sh": b'MBS=2\nGBS=16\ncat <<EOT > ds.json\n{"train_batch_size": $GBS, "train_micro_batch_size_per_gpu": $MBS, '
                         b'"gradient_accumulation_steps": 3}\nEOT\ndeepspeed --num_gpus 8 train.py --deepspeed ds.json\n',
        "long-continuation.sh": b"torchrun --nproc_per_node 8 train.py \\\n" + b"  --flag \\\n" * 20_000 + b"  --last\n",
        "subshell-deep.sh": b"$(" * 10_000 + b"true" + b")" * 10_000 + b"\n",
        "brace-bomb.sh": b"echo {1..1000000000}\n" + b"echo " + b"{a,b}" * 40 + b"\n",
        "binary.sh": _rand_bytes(rnd, 50_000),
        "crlf.sh": b"#!/bin/bash\r\nGPUS=8\r\ntorchrun --nproc_per_node $GPUS train.py\r\n",
        "megatron-removed.sh": b"python pretrain_gpt.py --tensor-model-parallel-size 8 --num-attention-heads 12 "
                               b"--checkpoint-activations --fp16\n",
        "long-line.sh": b"torchrun " + b"--x " * 2_000_000 + b"\n",
    }
    for name, data in shell.items():
        add(name, {name: data})
    for i in range(20):
        toks = ["deepspeed", "torchrun", "--nproc_per_node", str(rnd.choice([0, -1, 8, 10**30])), "--nnodes",
                rnd.choice(["2", "1:4", "x", ""]), "--master_port", rnd.choice(["0", "70000", "-5", "29500"]),
                "$(rm -rf /)", "`id`", "'", '"', "\\", "train.py", "--deepspeed_config", "none.json"]
        rnd.shuffle(toks)
        cases.append(Case(f"lint/command{i}", "lint", ["lint", "--command", " ".join(toks[: rnd.randint(1, len(toks))])]))
    cases.append(Case("lint/world-size-huge", "lint", ["lint", "--world-size", "9" * 5000, "ds.json"],
                      {"ds.json": _json_bytes(_ds_config(rnd))}))
    cases.append(Case("lint/world-size-neg", "lint", ["lint", "--world-size", "-8", "ds.json"],
                      {"ds.json": _json_bytes(_ds_config(rnd))}))
    cases.append(Case("lint/hostfile-hostile", "lint", ["lint", "--hostfile", "hosts", "ds.json"],
                      {"hosts": b"-oProxyCommand=touch slots=8\nnode1 slots=\xc2\xb2\n", "ds.json": _json_bytes(_ds_config(rnd))}))
    cases.append(Case("lint/glob-loop", "lint", ["lint", "cfg/**/*.json"], {"cfg/a/ds.json": _json_bytes(_ds_config(rnd))},
                      symlinks={"cfg/a/up": "..", "cfg/loop": "loop"}))
    cases.append(Case("lint/folder", "lint", ["lint", "cfg"], {f"cfg/{i}.json": _json_bytes(_ds_config(rnd)) for i in range(50)},
                      valid=True))
    cases.append(Case("lint/missing", "lint", ["lint", "nope.json"]))
    cases.append(Case("lint/dev-zero", "lint", ["lint", "/dev/zero"]))
    cases.append(Case("lint/explain-junk", "lint", ["lint", "--explain", "../../etc/passwd"]))
    cases.append(Case("lint/python-huge", "lint", ["lint", "train.py"],
                      {"train.py": b"x = " + b"9" * 100_000 + b"\n" + b"(" * 10_000 + b")" * 10_000 + b"\n"}))
    return cases


def fix_cases(rnd: random.Random) -> list[Case]:
    """`distdx fix` on the lint family's hostile files: the diff alone must change nothing, --out writes
    only its copy, --write only the file and its backup; and repairs from the diagnose family's logs,
    with hostile configs and scripts beside them and planted secrets that JSON must not show."""
    cases = []
    sources = [c for c in lint_cases(rnd) if len(c.argv) == 2 and c.files and c.argv[1] in c.files]
    for i, c in enumerate(sources):
        name = c.argv[1]
        cases.append(Case(f"fix/diff-{name}", "fix", ["fix", name], c.files, valid=c.valid))
        if i % 3 == 0:
            cases.append(Case(f"fix/out-{name}", "fix", ["fix", "--unsafe-fixes", "--out", "out/fixed", name],
                              c.files, outputs=("out",)))
        if i % 4 == 1:
            cases.append(Case(f"fix/write-{name}", "fix", ["fix", "--write", "--unsafe-fixes", name], c.files,
                              outputs=(name, name + ".bak")))
    logs = [(n, d) for n, d, _ in log_texts(rnd)]
    configs = [c for c in sources if c.argv[1].endswith(".json")]
    scripts = [c for c in sources if c.argv[1].endswith(".sh")]
    for i, (name, data) in enumerate(logs):
        cfg, sh = rnd.choice(configs), rnd.choice(scripts)
        files = {"job.log": data, "ds.json": cfg.files[cfg.argv[1]], "run.sh": sh.files[sh.argv[1]]}
        cases.append(Case(f"fix/from-log-{name}", "fix", ["fix", "--from-log", "job.log", "--config", "ds.json",
                                                          "--script", "run.sh", "--format", "json"], files))
        cases.append(Case(f"fix/from-log-write-{name}", "fix",
                          ["fix", "--from-log", "job.log", "--config", "ds.json", "--script", "run.sh", "--write",
                           "--unsafe-fixes", "--constraints-out", "out/c.txt"], files,
                          outputs=("ds.json", "ds.json.bak", "run.sh", "run.sh.bak", "out")))
    for i in range(3):
        cases.append(Case(f"fix/from-log-secrets{i}", "fix", ["fix", "--from-log", "job.log", "--format", "json"],
                          {"job.log": secret_log(rnd, list(SECRETS))}, secrets=tuple(SECRETS)))
    cases.append(Case("fix/from-log-missing", "fix", ["fix", "--from-log", "nope.log"]))
    cases.append(Case("fix/from-log-dev-zero", "fix", ["fix", "--from-log", "/dev/zero"]))
    cases.append(Case("fix/out-exists", "fix", ["fix", "--out", "taken.json", "ds.json"],
                      {"ds.json": b'{"train_batch_size": "8"}', "taken.json": b"mine"}))
    cases.append(Case("fix/write-and-out", "fix", ["fix", "--write", "--out", "x.json", "ds.json"],
                      {"ds.json": _json_bytes(_ds_config(rnd))}))
    cases.append(Case("fix/no-files", "fix", ["fix"]))
    cases.append(Case("fix/folder", "fix", ["fix", "cfg"], {f"cfg/{i}.json": _json_bytes(_ds_config(rnd)) for i in range(20)}))
    return cases


def estimate_cases(rnd: random.Random) -> list[Case]:
    cases = []
    bad_numbers = ["0", "-1", "-7e9", "1e400", "nan", "inf", "-inf", "7B7", "\u00b2", "\u0667", "9" * 5000, "", " ",
                   "0x10", "1_000", "7b", "7 B", "1e-30", "3.5", "1e18"]
    for i, v in enumerate(bad_numbers):
        cases.append(Case(f"estimate/params{i}", "estimate", ["estimate", "--params", v, "--format", "json"]))
    for flag in ("--layers", "--hidden-size", "--heads", "--kv-heads", "--ffn-size", "--vocab-size", "--micro-batch",
                 "--seq-len", "--tp", "--pp", "--cp", "--dp", "--world-size", "--gpus-per-node", "--nodes",
                 "--largest-layer-params"):
        for v in rnd.sample(["0", "-1", "9" * 400, "1.5", "x", "100000000000"], 3):
            cases.append(Case(f"estimate/{flag}={v[:8]}", "estimate",
                              ["estimate", "--params", "7B", "--layers", "32", "--hidden-size", "4096", "--heads", "32",
                               flag, v]))
    for v in ("abc", "1e999GB", "-80GB", "0", "80 GiB", "80QB", "\u00b2GB"):
        cases.append(Case(f"estimate/gpu-memory={v}", "estimate", ["estimate", "--params", "7B", "--gpu-memory", v]))
    flags = ["--zero", "--tp", "--pp", "--cp", "--dp", "--world-size", "--micro-batch", "--seq-len", "--nodes",
             "--gpus-per-node", "--layers", "--heads", "--kv-heads", "--hidden-size"]
    for i in range(40):  # random combinations: legal and illegal sizes together
        argv = ["estimate", "--params", rnd.choice(["7B", "70B", "1.3e9", "350M", "405B"]),
                "--mode", rnd.choice(["train", "infer"]), "--format", rnd.choice(["text", "json", "markdown"])]
        for flag in rnd.sample(flags, rnd.randint(1, 6)):
            argv += [flag, str(rnd.choice([0, 1, 2, 3, 4, 7, 8, 64, 4096, -2, 10**12]))]
        cases.append(Case(f"estimate/combo{i}", "estimate", argv))
    cases.append(Case("estimate/buffer-nan", "estimate", ["estimate", "--params", "7B", "--buffer-factor", "nan"]))
    configs = {
        "bad.json": b"{not json", "list.json": b"[]", "deep.json": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        "neg.json": _json_bytes({"hidden_size": -4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                                 "vocab_size": 32000}),
        "zero.json": _json_bytes({"hidden_size": 0, "num_hidden_layers": 0, "num_attention_heads": 0, "vocab_size": 0}),
        "huge.json": b'{"hidden_size": ' + b"9" * 10_000 + b', "num_hidden_layers": 32, "num_attention_heads": 32}',
        "strings.json": _json_bytes({"hidden_size": "4096", "num_hidden_layers": "x", "num_attention_heads": None}),
        "float.json": b'{"hidden_size": 1e999, "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000}',
        "nested.json": _json_bytes({"text_config": {"text_config": {"hidden_size": 7}}}),
        "empty.json": b"",
    }
    for name, data in configs.items():
        cases.append(Case(f"estimate/config-{name}", "estimate", ["estimate", "--model-config", name, "--format", "json"],
                          {name: data}))
    cases.append(Case("estimate/config-dir", "estimate", ["estimate", "--model-config", "model"], dirs=("model",)))
    cases.append(Case("estimate/valid-llama", "estimate",
                      ["estimate", "--model-config", "config.json", "--zero", "3", "--world-size", "64", "--format", "json"],
                      {"config.json": _json_bytes({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
                                                   "num_hidden_layers": 32, "num_attention_heads": 32,
                                                   "num_key_value_heads": 32, "vocab_size": 32000})}, valid=True))
    return cases


def doctor_cases(rnd: random.Random) -> list[Case]:
    cases = []
    hostile_hosts = ["-oProxyCommand=touch PWNED", "-oProxyCommand", "-F/tmp/x", "-v", "--", "-", "-l root",
                     "node1;touch PWNED", "$(touch PWNED)", "`id`", "node\u00b2", "node1\x00", "[::1]", "user@node1",
                     "a" * 300, "no\u200bde1", "-node"]
    for i, host in enumerate(hostile_hosts):
        words = tuple(w for w in host.split() if w.startswith("-"))
        text = f"{host} slots=8\nnode2 slots=8\n".encode("utf-8", "surrogatepass")
        cases.append(Case(f"doctor/hostfile{i}", "doctor", ["doctor", "--hostfile", "hosts", "--ssh-timeout", "1"],
                          {"hosts": text}, hostfile_words=words or ((host,) if host.startswith("-") else ())))
    for i in range(25):
        lines = []
        for _ in range(rnd.randint(1, 6)):
            host = rnd.choice(["node1", "node2", "10.0.0.5", "-oX", "-p22", "n" * rnd.randint(1, 80)])
            slots = rnd.choice(["slots=8", "slots=0", "slots=-1", "slots=\u00b2", "slots=" + "9" * 40, "max_slots=4", ""])
            lines.append(f"{host} {slots}")
        words = tuple(l.split()[0] for l in lines if l.split()[0].startswith("-"))
        cases.append(Case(f"doctor/hostfile-mix{i}", "doctor", ["doctor", "--hostfile", "hosts", "--ssh-timeout", "1"],
                          {"hosts": "\n".join(lines).encode()}, hostfile_words=words))
    cases.append(Case("doctor/hostfile-100k", "doctor", ["doctor", "--hostfile", "hosts", "--ssh-timeout", "1"],
                      {"hosts": b"".join(f"node{i} slots=8\nnode{i} slots=8\n".encode() for i in range(50_000))}))
    cases.append(Case("doctor/hostfile-binary", "doctor", ["doctor", "--hostfile", "hosts"], {"hosts": _rand_bytes(rnd, 5000)}))
    cases.append(Case("doctor/hostfile-missing", "doctor", ["doctor", "--hostfile", "nope"]))
    cases.append(Case("doctor/only-junk", "doctor", ["doctor", "--only", "../../x,;rm"]))
    cases.append(Case("doctor/skip-junk", "doctor", ["doctor", "--skip", "\u00b2"]))
    return cases


def study_cases(rnd: random.Random) -> list[Case]:
    cases = []
    url = "https://github.com/acme/widgets/issues/{}"

    def issue(n, **kw):
        return {"url": url.format(n), "title": f"NCCL timeout {n}", "body": "RuntimeError: NCCL error", "state": "closed",
                "created_at": "2024-01-01T00:00:00Z", "closed_at": "2024-02-01T00:00:00Z", "labels": ["bug"], **kw}

    dumps = {
        "ok.json": (_json_bytes([issue(n) for n in range(1, 30)]), True),
        "mixed-dates.json": (_json_bytes([issue(1, created_at="2024-01-01T00:00:00", closed_at="2024-02-01T00:00:00Z"),
                                          issue(2, created_at="2024-01-01", closed_at="2024-01-05T10:00:00+05:00")]), True),
        "bad-dates.json": (_json_bytes([issue(1, created_at="yesterday"), issue(2, closed_at=12345),
                                        issue(3, created_at="9999-99-99T99:99:99Z")]), False),
        "huge-field.json": (_json_bytes([issue(1, body="x" * 131_073, title="t" * 131_073)]), True),
        "deep.json": (b"[" * 100_000 + b"]" * 100_000, False),
        "not-list.json": (b'"just a string"', False),
        "no-url.json": (_json_bytes([{"title": "x"}]), False),
        "bad-url.json": (_json_bytes([{"url": "javascript:alert(1)"}, {"url": "https://github.com/a/b/issues/-1"}]), False),
        "huge-number.json": (b'[{"url": "https://github.com/a/b/issues/' + b"9" * 5000 + b'"}]', False),
        "comments-weird.json": (_json_bytes([issue(1, comments=[None, 5, {"body": None}, [], "text"] * 200)]), False),
        "lines.jsonl": (b"\n".join(_json_bytes(issue(n)) for n in range(1, 50)) + b"\n{broken\n", False),
        "binary.jsonl": (_rand_bytes(rnd, 10_000), False),
        "empty.jsonl": (b"", False),
        "secrets.json": (_json_bytes([issue(1, body=f"token {SECRETS[0]} and HF_TOKEN={SECRETS[1]}")]), True),
    }
    for name, (data, valid) in dumps.items():
        cases.append(Case(f"study/import-{name}", "study", ["study", "import", name, "--db", "out/s.db"], {name: data},
                          outputs=("out/s.db",), valid=valid, valid_exits=frozenset({0})))
    csv_big = ("id,url,annotator,note,stage,symptom,root_cause,fix_pattern,distributed_specific\n"
               f"a-1,{url.format(1)},A,{'n' * 131_073},S4,4.7,R4.7,F1,true\n").encode()
    labels = {
        "big.csv": csv_big,
        "bad-ids.csv": b"id,url,annotator,note,stage,symptom,root_cause,fix_pattern,distributed_specific\n"
                       b"a-1,u,A,,S9,9.9,R9.9,F9,maybe\n",
        "wrong-cols.csv": b"x,y\n1,2\n",
        "quotes.csv": b'id,url\n"a-1,"unterminated\n',
        "nul.csv": b"id,url\x00\n",
        "bad.jsonl": b'{"id": "a-1", "labels": {"stage": "S4", "symptom": "5.1"}}\n[1]\n',
        "deep.jsonl": b'{"id": "a", "labels": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n",
        "ls.json": b'[{"data": {"id": 1}, "annotations": [{"result": [{"value": {"choices": 5}}]}]}]',
    }
    for name, data in labels.items():
        cases.append(Case(f"study/agreement-{name}", "study", ["study", "agreement", name, name], {name: data}))
        cases.append(Case(f"study/annotate-import-{name}", "study",
                          ["study", "annotate", "--db", "out/s.db", "--annotator", "A", "--import", name], {name: data},
                          outputs=("out/s.db",)))
        cases.append(Case(f"study/adjudicate-{name}", "study",
                          ["study", "adjudicate", "--db", "out/s.db", "--decisions", name], {name: data},
                          outputs=("out/s.db",)))
    for i in range(30):  # dumps with hostile field values in every position
        rows = []
        for n in range(rnd.randint(1, 20)):
            row = issue(n + 1)
            key = rnd.choice(list(row) + ["comments", "user", "linked_prs", "author"])
            row[key] = rnd.choice([None, [], {}, 10**30, -1, 1e308, 0.5, "x" * 70_000,
                                   [{"body": None}] * 5, {"login": ["a"]}, "2024-13-45", "\u0000", True,
                                   ["owner/repo#" + "9" * 40]])
            rows.append(row)
        cases.append(Case(f"study/import-mutated{i}", "study", ["study", "import", "d.json", "--db", "out/s.db"],
                          {"d.json": _json_bytes(rows)}, outputs=("out/s.db",)))
    for name in ("ok.json", "deep.json", "huge-field.json"):
        cases.append(Case(f"study/report-{name}", "study", ["study", "report", "--dataset", name, "--format", "json"],
                          {name: dumps[name][0]}))
    cases.append(Case("study/export-exists", "study", ["study", "annotate", "--db", "s.db", "--annotator", "A",
                                                       "--export", "mine.csv"], {"mine.csv": b"precious\n", "s.db": b""}))
    cases.append(Case("study/export-db-missing", "study", ["study", "annotate", "--db", "none.db", "--export", "x.csv"]))
    cases.append(Case("study/report-to-file", "study", ["study", "report", "--dataset", "d.json", "--out", "d.json"],
                      {"d.json": dumps["ok.json"][0]}))
    cases.append(Case("study/select-bad-db", "study", ["study", "select", "--db", "junk.db"], {"junk.db": _rand_bytes(rnd, 4096)}))
    return cases


def kb_eval_cases(rnd: random.Random) -> list[Case]:
    cases = []
    good = {"id": "a-1", "url": "https://github.com/a/b/issues/1", "title": "t", "context": "NCCL timeout", "log": "",
            "resolution": "r", "labels": {"stage": "S4", "symptom": "4.7", "root_cause": "R4.7", "fix_pattern": "F1",
                                          "distributed_specific": True}}
    files = {
        "bad.jsonl": b"{oops\n", "deep.jsonl": b"[" * 100_000 + b"]" * 100_000 + b"\n", "empty.jsonl": b"",
        "nolabels.jsonl": _json_bytes({**good, "labels": None}) + b"\n",
        "badlabels.jsonl": _json_bytes({**good, "labels": {"stage": "S9"}}) + b"\n",
        "huge.jsonl": _json_bytes({**good, "log": "RuntimeError " * 500_000}) + b"\n",
        "binary.jsonl": _rand_bytes(rnd, 20_000),
        "one.jsonl": _json_bytes(good) + b"\n",
    }
    for name, data in files.items():
        cases.append(Case(f"kb/build-{name}", "kb", ["kb", "build", "--from", name, "--out", "out/index.jsonl"],
                          {name: data}, outputs=("out/index.jsonl",)))
        cases.append(Case(f"eval/{name}", "eval", ["eval", name, "--format", "json"], {name: data}))
    cases.append(Case("kb/build-exists", "kb", ["kb", "build", "--from", "one.jsonl", "--out", "index.jsonl"],
                      {"one.jsonl": files["one.jsonl"], "index.jsonl": b"precious\n"}))
    cases.append(Case("eval/split-none", "eval", ["eval", "one.jsonl", "--split", "nosuch"], {"one.jsonl": files["one.jsonl"]}))
    return cases


def misc_cases(rnd: random.Random) -> list[Case]:
    cases = []
    for arg in ("S9", "9.9", "R9.9", "F0", "../../etc/passwd", "\u00b2", "x" * 100_000, "", "-1", "S4" * 1000):
        cases.append(Case(f"taxonomy/{arg[:10]!r}", "taxonomy", ["taxonomy", arg]))
        cases.append(Case(f"rules/show-{arg[:10]!r}", "rules", ["rules", "show", arg]))
    for name, data in (("bin.log", _rand_bytes(rnd, 10_000)), ("ok.log", b"\n".join(REAL_LINES)), ("empty.log", b"")):
        cases.append(Case(f"rules/test-{name}", "rules", ["rules", "test", name], {name: data}))
    for arg in ("nosuch", "../x", "\u00b2", "x" * 10_000):
        cases.append(Case(f"lab/run-{arg[:10]!r}", "lab", ["lab", "run", arg]))
    cases.append(Case("lab/list", "lab", ["lab", "list", "--format", "json"], valid=True, valid_exits=frozenset({0})))
    cases.append(Case("run/missing-command", "run", ["run", "--out", "out/run", "--", "./no-such-program"],
                      outputs=("out/run",)))
    cases.append(Case("run/out-is-file", "run", ["run", "--out", "afile", "--", "true"], {"afile": b"precious"}))
    cases.append(Case("run/no-command", "run", ["run", "--out", "out/run"], outputs=("out/run",)))
    cases.append(Case("run/true", "run", ["run", "--out", "out/run", "--", "true"], outputs=("out/run",), valid=True,
                      valid_exits=frozenset({0})))
    return cases


FAMILIES = (diagnose_cases, lint_cases, fix_cases, estimate_cases, doctor_cases, study_cases, kb_eval_cases, misc_cases)


def generate(seed: int = 0) -> list[Case]:
    cases = []
    for family in FAMILIES:
        cases += family(random.Random(f"{seed}:{family.__name__}"))
    return cases


# ------------------------------------------------------------------------------------------- judge

def _materialise(case: Case, folder: Path) -> dict[str, str]:
    for d in case.dirs:
        (folder / d).mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, tuple):
            _, fn, arg = data
            STREAMS[fn](path, arg)
        else:
            path.write_bytes(data)
    for name, target in case.symlinks.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path)
    return _snapshot(folder)


def _snapshot(folder: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):  # os.walk does not follow symlinked folders
        rel = os.path.relpath(dirpath, folder)
        if rel.split(os.sep)[0] in ("home", "out"):
            continue
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            key = os.path.normpath(os.path.join(rel, name))
            if os.path.islink(path):
                out[key] = "link:" + os.readlink(path)
            else:
                h = hashlib.sha256()
                with open(path, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                out[key] = h.hexdigest()
    return out


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
    os.setsid()


def run_case(case: Case, workdir: Path, python: str = sys.executable) -> Result:
    folder = Path(tempfile.mkdtemp(prefix="case-", dir=workdir))
    problems: list[str] = []
    try:
        before = _materialise(case, folder)
        home = folder / "home"
        bindir = home / "bin"
        bindir.mkdir(parents=True)
        ssh = bindir / "ssh"
        ssh.write_text(FAKE_SSH)
        ssh.chmod(0o755)
        (folder / "out").mkdir()
        env = {"PATH": f"{bindir}:{os.path.dirname(python)}:/usr/bin:/bin", "HOME": str(home),
               "XDG_CACHE_HOME": str(home / "cache"), "XDG_DATA_HOME": str(home / "data"),
               "XDG_STATE_HOME": str(home / "state"), "PYTHONPATH": str(ROOT / "src"), "LANG": "C.UTF-8",
               "DISTDX_HOSTILE_SSH_LOG": str(home / "ssh-argv")}
        start = time.perf_counter()
        proc = subprocess.Popen([python, "-m", "distdx", *case.argv], cwd=folder, env=env, preexec_fn=_limits,
                                stdin=subprocess.PIPE if case.stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = proc.communicate(case.stdin, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            problems.append("hang")
        seconds = time.perf_counter() - start
        code = proc.returncode
        if "hang" not in problems:
            if code < 0:
                problems.append(f"memory (killed by signal {-code})" if code == -signal.SIGKILL else f"signal {-code}")
            elif re.search(r"(?<![A-Za-z])MemoryError", err.decode("utf-8", "replace")):  # not OutOfMemoryError
                problems.append("memory (MemoryError)")
            elif code == 3 or "Traceback (most recent call last)" in err.decode("utf-8", "replace"):
                problems.append(f"internal error (exit {code}): {err.decode('utf-8', 'replace').strip()[-300:]}")
            elif code not in EXITS[case.command]:
                problems.append(f"undocumented exit {code}")
            elif case.valid and code not in case.valid_exits:
                problems.append(f"valid input failed (exit {code}): {err.decode('utf-8', 'replace').strip()[-200:]}")
        after = _snapshot(folder)
        allowed = {os.path.normpath(o) for o in case.outputs}
        changed = [k for k in set(before) | set(after) if before.get(k) != after.get(k)
                   and not any(k == a or k.startswith(a + os.sep) for a in allowed)]
        if changed:
            problems.append(f"files changed: {sorted(changed)[:5]}")
        leaked = [s for s in case.secrets if s in out.decode("utf-8", "replace")]
        if leaked:
            problems.append(f"secrets leaked: {len(leaked)}")
        for log in home.glob("ssh-argv.*"):
            argv = log.read_text(errors="replace").splitlines()
            head = argv[: argv.index("--")] if "--" in argv else argv
            if any(w in head for w in case.hostfile_words) or any(w.startswith("-o") and "Proxy" in w for w in head):
                problems.append(f"ssh option from the hostfile: {head}")
        return Result(case, code, seconds, problems)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_all(cases: list[Case], jobs: int = 2) -> list[Result]:
    workdir = Path(tempfile.mkdtemp(prefix="distdx-hostile-"))
    try:
        with cf.ThreadPoolExecutor(jobs) as pool:
            return list(pool.map(lambda c: run_case(c, workdir), cases))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


KINDS = ("internal error", "hang", "memory", "files changed", "secrets leaked", "ssh option", "valid input failed",
         "undocumented exit", "signal")


def table(results: list[Result]) -> str:
    by_cmd: dict[str, list[Result]] = {}
    for r in results:
        by_cmd.setdefault(r.case.command, []).append(r)
    head = ["command", "cases", *KINDS, "median s", "max s"]
    rows = []
    for cmd, rs in sorted(by_cmd.items()) + [("all", results)]:
        times = sorted(r.seconds for r in rs)
        rows.append([cmd, len(rs), *[sum(any(p.startswith(k) for p in r.problems) for r in rs) for k in KINDS],
                     f"{times[len(times) // 2]:.2f}", f"{times[-1]:.2f}"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _keys(path: Path, n: int) -> None:
    path.write_bytes(json.dumps({"train_batch_size": 16, **{f"key_{i}": i for i in range(n)}}).encode())


SCALING = (("diagnose", "traceback frames", _frames, (50_000, 100_000, 200_000), "job.log"),
           ("diagnose", "distinct 2 kB lines", _distinct, (1_000, 2_000, 4_000), "job.log"),
           ("lint", "JSON keys", _keys, (10_000, 20_000, 40_000), "ds.json"))


def scaling() -> str:
    """Wall time of one command on inputs of 1x, 2x and 4x the size: a linear path doubles, a quadratic
    one quadruples (the interpreter's start-up, measured alone, is the part that does not grow)."""
    lines = ["| input | sizes | seconds | 4x / 2x (linear: 2, quadratic: 4) |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        for command, what, make, sizes, name in SCALING:
            times = []
            for n in sizes:
                path = Path(tmp) / name
                make(path, n)
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "distdx", command, str(path)], capture_output=True, env=env,
                               preexec_fn=_limits, timeout=TIMEOUT_S)
                times.append(time.perf_counter() - start)
            ratio = times[2] / max(times[1], 1e-9)
            lines.append(f"| `{command}`, {what} | {' / '.join(f'{n:,}' for n in sizes)} | "
                         f"{' / '.join(f'{t:.2f}' for t in times)} | {ratio:.2f} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--every", type=int, default=1, help="run one case in N")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", help="only cases whose name starts with this")
    ap.add_argument("--scaling", action="store_true", help="only time the inputs of growing size (linear or not)")
    args = ap.parse_args()
    if args.scaling:
        print(scaling())
        return 0
    cases = [c for c in generate(args.seed) if not args.only or c.name.startswith(args.only)][:: args.every]
    start = time.perf_counter()
    base = subprocess.run([sys.executable, "-m", "distdx", "--version"], capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    baseline = time.perf_counter() - start
    start = time.perf_counter()
    results = run_all(cases, args.jobs)
    wall = time.perf_counter() - start
    print(f"seed {args.seed}: {len(results)} cases over {len({c.command for c in cases})} commands in {wall:.0f} s "
          f"({args.jobs} at a time); limits: {AS_LIMIT >> 30} GiB address space, {TIMEOUT_S:.0f} s a case")
    print(f"baseline: `distdx --version` {baseline:.2f} s (exit {base.returncode})\n")
    print(table(results))
    bad = [r for r in results if r.problems]
    for r in bad:
        print(f"\n{r.case.name} (exit {r.exit}, {r.seconds:.1f} s): " + "; ".join(r.problems))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
