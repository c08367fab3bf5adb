"""Write a large torchrun-style log of many interleaved ranks with one real failure buried in it.

The story, in the order a real job prints it: 512 ranks (64 nodes x 8 GPUs) train and log with
``[rankN]:`` prefixes and timestamps; rank ``--fail-rank`` (317) raises a CUDA OOM traceback;
the other ranks keep logging until their next collective blocks, then every one of them prints
NCCL watchdog timeouts and aborts (SIGABRT); finally each node's torchelastic agent prints its
ChildFailedError table, whose "Root Cause" is the first process to *exit* on that node, a cascade
victim (rank 312 on the failing rank's node) rather than rank 317.

    python benchmarks/gen_log.py OUT.log --size-mb 1024
"""

from __future__ import annotations

import argparse
import os
import random
from datetime import datetime, timedelta

RANKS = 512
GPUS_PER_NODE = 8


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def _glog(t: datetime, level: str = "E") -> str:
    return f"{level}{t.month}{t.day:02d} {t.strftime('%H:%M:%S')}.{t.microsecond:06d}"


def training_lines(rng: random.Random, t: datetime, step: int, rank: int) -> list[str]:
    """What one rank logs for one step (most steps log one line, a few log more)."""
    ts = _stamp(t)
    p = f"[rank{rank}]:"
    loss = 2.9 - step * 1e-4 + rng.random() * 0.05
    out = [
        f"{p}[{ts}] [INFO] [logging.py:96:log_dist] [Rank {rank}] step={step}, skipped=0, "
        f"lr=[0.00029{rng.randrange(1000):03d}], mom=[(0.9, 0.95)]"
    ]
    k = rng.random()
    if k < 0.35:
        out.append(
            f"{p}[{ts}] [INFO] [timer.py:260:stop] epoch=0/micro_step={step * 4}/global_step={step}, "
            f"RunningAvgSamplesPerSec={180 + rng.random() * 10:.4f}, CurrSamplesPerSec={175 + rng.random() * 20:.4f}, "
            f"MemAllocated=61.2GB, MaxMemAllocated=74.{rng.randrange(10)}GB"
        )
    elif k < 0.6:
        out.append(f"{p}{{'loss': {loss:.4f}, 'grad_norm': {0.8 + rng.random() * 0.3:.4f}, 'learning_rate': 0.0003, 'epoch': 0.{step:04d}}}")
    elif k < 0.62:
        # a tqdm bar redrawn with carriage returns
        out.append(
            f"{p} {step % 100:2d}%|##########          | {step}/100000 [1:02:11<10:40:06,  2.51it/s]\r"
            f"{p} {step % 100:2d}%|##########          | {step + 1}/100000 [1:02:12<10:40:05,  2.51it/s]"
        )
    return out


def oom_traceback(rank: int, t: datetime) -> list[str]:
    p = f"[rank{rank}]:"
    lines = [
        f"[{_stamp(t)}] [INFO] [logging.py:96:log_dist] [Rank {rank}] step boundary reached, micro_step=0",
        "Traceback (most recent call last):",
        '  File "/workspace/pretrain_gpt.py", line 412, in <module>',
        "    main()",
        '  File "/workspace/pretrain_gpt.py", line 391, in main',
        "    loss = engine(batch)",
        '  File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1532, in _wrapped_call_impl',
        "    return self._call_impl(*args, **kwargs)",
        '  File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py", line 1855, in forward',
        "    loss = self.module(*inputs, **kwargs)",
        '  File "/workspace/model/attention.py", line 188, in forward',
        "    scores = torch.matmul(q, k.transpose(-2, -1))",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 5 has a total capacity of 79.15 GiB "
        "of which 2.31 GiB is free. Including non-PyTorch memory, this process has 76.83 GiB memory in use. Of the "
        "allocated memory 72.10 GiB is allocated by PyTorch, and 3.94 GiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    ]
    return [p + line for line in lines]


def watchdog_lines(rank: int, t: datetime, seq: int) -> list[str]:
    p = f"[rank{rank}]:"
    g = _glog(t)
    work = f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=16777216, NumelOut=16777216, Timeout(ms)=600000)"
    return [
        f"{p}[{g} ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: {work} ran for 600031 milliseconds before timing out.",
        f"{p}[{g} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {seq - 1}.",
        f"{p}[{g} ProcessGroupNCCL.cpp:630] [Rank {rank}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        f"{p}[{g} ProcessGroupNCCL.cpp:636] [Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
        f"{p}terminate called after throwing an instance of 'c10::DistBackendError'",
        f"{p}  what():  [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Process group watchdog thread terminated with exception: [Rank {rank}] Watchdog caught collective operation timeout: {work} ran for 600031 milliseconds before timing out.",
        f"{p}Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):",
        f"{p}frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f5e3b76c446 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
        f"{p}Fatal Python error: Aborted",
    ]


def elastic_table(node: int, t: datetime, root_rank: int, failed: list[int], pids: dict[int, int]) -> list[str]:
    g = _glog(t)
    host = f"gpu-node-{node:03d}"
    out = [f"W{g[1:]} 140036129474368 torch/distributed/elastic/multiprocessing/api.py:858] Sending process {pids[r]} closing signal SIGTERM"
           for r in failed if r != root_rank][:2]
    out.append(
        f"E{g[1:]} 140036129474368 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: -6) "
        f"local_rank: {root_rank % GPUS_PER_NODE} (pid: {pids[root_rank]}) of binary: /usr/bin/python3"
    )
    out += [
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 264, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60,
        "pretrain_gpt.py FAILED",
        "-" * 60,
        "Failures:",
    ]
    stamp = t.strftime("%Y-%m-%d_%H:%M:%S")
    idx = 1
    for r in failed:
        if r == root_rank:
            continue
        out += [f"[{idx}]:", f"  time      : {stamp}", f"  host      : {host}", f"  rank      : {r} (local_rank: {r % GPUS_PER_NODE})",
                f"  exitcode  : -6 (pid: {pids[r]})", "  error_file: <N/A>", f"  traceback : Signal 6 (SIGABRT) received by PID {pids[r]}"]
        idx += 1
    out += ["-" * 60, "Root Cause (first observed failure):", "[0]:", f"  time      : {stamp}", f"  host      : {host}",
            f"  rank      : {root_rank} (local_rank: {root_rank % GPUS_PER_NODE})", f"  exitcode  : -6 (pid: {pids[root_rank]})",
            "  error_file: <N/A>", f"  traceback : Signal 6 (SIGABRT) received by PID {pids[root_rank]}", "=" * 60]
    return out


def generate(path: str, size_mb: int = 1024, fail_rank: int = 317, seed: int = 0) -> dict:
    """Write the log; returns what a correct diagnosis must find."""
    rng = random.Random(seed)
    target = size_mb << 20
    fail_at = max(target // 2, target - (3 << 20))  # the cascade and tables take the last few MB
    t = datetime(2024, 5, 1, 12, 0, 0)
    pids = {r: 20000 + r for r in range(RANKS)}
    written = 0
    step = 1
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        head = [f"[rank{r}]:[{_stamp(t)}] [WARNING] [real_accelerator.py:191:get_accelerator] Setting ds_accelerator to cuda (auto detect)"
                for r in range(RANKS)]
        fh.write("\n".join(head) + "\n")
        written += sum(len(h) + 1 for h in head)
        failed_done = False
        order = list(range(RANKS))
        while written < target:
            rng.shuffle(order)
            buf: list[str] = []
            for r in order:
                t += timedelta(microseconds=1700)
                if failed_done and r == fail_rank:
                    continue
                buf.extend(training_lines(rng, t, step, r))
            if not failed_done and written >= fail_at:
                t += timedelta(milliseconds=3)
                buf.extend(oom_traceback(fail_rank, t))
                failed_done = True
                fail_step = step
            chunk = "\n".join(buf) + "\n"
            fh.write(chunk)
            written += len(chunk)
            step += 1
            if failed_done and step > fail_step + 3:
                break  # the others block in the next collective
        if not failed_done:
            raise SystemExit("size too small to place the failure")
        # ten minutes later every other rank's watchdog fires
        t += timedelta(minutes=10)
        victims = [r for r in range(RANKS) if r != fail_rank]
        rng.shuffle(victims)
        out: list[str] = []
        for r in victims:
            t += timedelta(microseconds=rng.randrange(50, 4000))
            out.extend(watchdog_lines(r, t, 48211))
        fh.write("\n".join(out) + "\n")
        # torchelastic agents: the first process to exit on the failing node is a victim
        t += timedelta(seconds=2)
        tables: list[str] = []
        fail_node = fail_rank // GPUS_PER_NODE
        for node in range(RANKS // GPUS_PER_NODE):
            ranks = list(range(node * GPUS_PER_NODE, (node + 1) * GPUS_PER_NODE))
            root = ranks[0]
            tables.extend(elastic_table(node, t, root, ranks, pids))
        fh.write("\n".join(tables) + "\n")
    return {"fail_rank": fail_rank, "root_cause_named": fail_node * GPUS_PER_NODE, "bytes": os.path.getsize(path)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--fail-rank", type=int, default=317)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    info = generate(args.out, args.size_mb, args.fail_rank, args.seed)
    print(f"wrote {args.out}: {info['bytes'] / 2**20:.0f} MiB, failure on rank {info['fail_rank']}, "
          f"torchelastic names rank {info['root_cause_named']} on that node")


if __name__ == "__main__":
    main()
