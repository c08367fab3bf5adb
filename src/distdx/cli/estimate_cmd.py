"""`distdx estimate`: per-GPU and per-node memory of a training or inference run, and what to change."""

from __future__ import annotations

import argparse
import json

from distdx.cli import add_format_option, emit
from distdx.errors import EXIT_FINDINGS, EXIT_OK, DistdxError


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("estimate", help="GPU and CPU memory of a training or inference run, and what fits",
                       description="Estimate model states, activations and host memory per GPU/node (formulas in "
                                   "docs/estimate.md). Exit 1 when it does not fit the GPU memory.")
    add_format_option(p)
    model = p.add_argument_group("model (one of --params / --model-config)")
    model.add_argument("--params", metavar="N", help="parameter count: 7e9, 7B, 350M")
    model.add_argument("--model-config", metavar="PATH", help="a Hugging Face config.json (or its directory)")
    for flag, what in (("--layers", "transformer layers"), ("--hidden-size", "hidden size"),
                       ("--heads", "attention heads"), ("--kv-heads", "key/value heads (GQA)"),
                       ("--ffn-size", "MLP inner size"), ("--vocab-size", "vocabulary size")):
        model.add_argument(flag, type=_int, metavar="N", help=f"{what} (with --params)")
    model.add_argument("--largest-layer-params", metavar="N",
                       help="parameters of the largest layer (DeepSpeed's largest_layer_params; default: derived)")
    opts = p.add_argument_group("run")
    opts.add_argument("--mode", choices=("train", "infer"), default="train")
    opts.add_argument("--dtype", default="bf16", choices=("fp32", "fp16", "bf16", "int8", "int4"),
                     help="fp16/bf16 train in mixed precision with fp32 master weights; int8/int4 for inference")
    opts.add_argument("--kv-dtype", choices=("fp32", "fp16", "bf16", "int8", "int4"), help="KV cache dtype (infer)")
    opts.add_argument("--optimizer", default="adamw",
                     choices=("adam", "adamw", "adam8bit", "sgd", "sgd-momentum", "adafactor"))
    opts.add_argument("--zero", type=_int, default=0, metavar="{0,1,2,3}", help="ZeRO stage (default 0)")
    opts.add_argument("--offload-optimizer", choices=("none", "cpu", "nvme"), default="none")
    opts.add_argument("--offload-params", choices=("none", "cpu", "nvme"), default="none")
    opts.add_argument("--no-zero-init", dest="zero_init", action="store_false",
                     help="the model is built whole on each process, not under deepspeed.zero.Init (ZeRO-3)")
    opts.add_argument("--buffer-factor", type=float, default=1.5,
                     help="DeepSpeed's additional_buffer_factor for host memory (default 1.5)")
    opts.add_argument("--micro-batch", type=_int, default=1, metavar="N", help="micro batch per GPU (default 1)")
    opts.add_argument("--seq-len", type=_int, default=2048, metavar="N", help="sequence length (default 2048)")
    opts.add_argument("--checkpointing", choices=("none", "selective", "selective-op", "full"), default="none",
                     help="activation checkpointing (default none); selective: Megatron's, selective-op: "
                          "torchtitan's per-op")
    opts.add_argument("--attention", choices=("flash", "sdpa", "eager"), default="flash",
                     help="attention kernel (default flash); eager stores the s x s scores")
    opts.add_argument("--flash-attention", dest="attention", action="store_const", const="flash",
                     help="same as --attention flash (kept for older command lines)")
    opts.add_argument("--loss", choices=("full", "chunked", "fused", "none"), default="full",
                     help="cross-entropy over the vocabulary: full (fp32 upcast), chunked, fused; none for a small "
                          "(classifier) head")
    opts.add_argument("--amp", action="store_true",
                     help="torch autocast: fp32 weights and gradients with 16-bit copies (no ZeRO)")
    opts.add_argument("--quant-group", type=_int, default=128, metavar="N", help="int4 group size (default 128)")
    opts.add_argument("--no-reshard-after-forward", dest="reshard_after_forward", action="store_false",
                     help="ZeRO-3/FSDP keeps the gathered weights from forward to backward (FSDP "
                          "reshard_after_forward=False)")
    opts.add_argument("--sequence-parallel", action="store_true", help="Megatron sequence parallelism (needs --tp > 1)")
    par = p.add_argument_group("parallelism (dp = world size / (tp x pp x cp))")
    for flag in ("--tp", "--pp", "--cp"):
        par.add_argument(flag, type=_int, default=1, metavar="N")
    par.add_argument("--dp", type=_int, metavar="N", help="data parallel size (default: derived)")
    par.add_argument("--ep", type=_int, default=1, metavar="N",
                     help="expert parallel size, carved out of dp x cp (mixture-of-experts configs)")
    par.add_argument("--world-size", type=_int, metavar="N")
    par.add_argument("--gpus-per-node", type=_int, metavar="N")
    par.add_argument("--nodes", type=_int, metavar="N")
    fit = p.add_argument_group("fit")
    fit.add_argument("--gpu-memory", metavar="SIZE", help="memory per GPU: 80GB (10^9), 80GiB (2^30); "
                     "default: detected through the doctor's GPU probe")
    fit.add_argument("--cpu-memory", metavar="SIZE", help="host memory per node, also judged when given")
    fit.add_argument("--allow-tp", action="store_true", help="suggestions may raise tensor parallelism")
    fit.add_argument("--no-flash-kernel", dest="allow_flash", action="store_false",
                     help="flash attention is not available here (older GPUs): do not suggest it")
    p.set_defaults(func=run)


def _build(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from distdx.estimate import Setup, parse_bytes, parse_count, resolve_parallel, shape_from_config, \
        shape_from_params

    if bool(args.params) == bool(args.model_config):
        raise DistdxError("DX-ESTIMATE-005", "give the model as --params or --model-config" +
                          (" (not both)" if args.params else ""),
                          why="the estimate starts from the parameter count, given or computed from config.json",
                          hint="e.g. `distdx estimate --params 7B` or `distdx estimate --model-config config.json`")
    if args.model_config:
        given = [f for f in ("layers", "hidden_size", "heads", "kv_heads", "ffn_size", "vocab_size",
                             "largest_layer_params") if getattr(args, f) is not None]
        if given:
            raise DistdxError("DX-ESTIMATE-005", f"--{given[0].replace('_', '-')} goes with --params, not "
                              "--model-config", why="the shape is read from config.json",
                              hint="drop the shape options, or use --params")
        shape = shape_from_config(args.model_config)
    else:
        shape = shape_from_params(parse_count(args.params), layers=args.layers, hidden=args.hidden_size,
                                  heads=args.heads, kv_heads=args.kv_heads, ffn=args.ffn_size, vocab=args.vocab_size,
                                  largest_layer_params=parse_count(args.largest_layer_params, "--largest-layer-params")
                                  if args.largest_layer_params else None)
    layout = resolve_parallel(world_size=args.world_size, gpus_per_node=args.gpus_per_node, nodes=args.nodes,
                              tp=args.tp, pp=args.pp, cp=args.cp, dp=args.dp)
    setup = Setup(mode=args.mode, dtype=args.dtype, optimizer=args.optimizer, zero_stage=args.zero,
                  offload_optimizer=args.offload_optimizer, offload_params=args.offload_params,
                  zero_init=args.zero_init, tp=args.tp, pp=args.pp, cp=args.cp, dp=layout["dp"],
                  gpus_per_node=layout["gpus_per_node"], nodes=layout["nodes"], micro_batch=args.micro_batch,
                  seq_len=args.seq_len, checkpointing=args.checkpointing, attention=args.attention,
                  sequence_parallel=args.sequence_parallel, buffer_factor=args.buffer_factor, kv_dtype=args.kv_dtype,
                  loss=args.loss, amp=args.amp, quant_group=args.quant_group, ep=args.ep,
                  reshard_after_forward=args.reshard_after_forward)
    gpu_memory, source = None, None
    if args.gpu_memory:
        gpu_memory, source = parse_bytes(args.gpu_memory), "stated"
    else:
        from distdx.estimate import detect_gpu_memory

        detected = detect_gpu_memory()
        if detected is not None:
            gpu_memory, source = detected
    cpu_memory = parse_bytes(args.cpu_memory, "--cpu-memory") if args.cpu_memory else None
    return shape, setup, gpu_memory, source, cpu_memory


def run(args: argparse.Namespace) -> int:
    from distdx.estimate import estimate
    from distdx.estimate.render import render_markdown, render_text

    shape, setup, gpu_memory, source, cpu_memory = _build(args)
    result = estimate(shape, setup, gpu_memory=gpu_memory, gpu_memory_source=source, cpu_memory=cpu_memory,
                      allow_tp=args.allow_tp, allow_flash=args.allow_flash)
    if args.format == "json":
        emit(json.dumps(result.to_dict(), indent=2))
    elif args.format == "markdown":
        from distdx.report.redact import redact

        emit(redact(render_markdown(result)))
    else:
        emit(render_text(result))
    return EXIT_FINDINGS if result.fits is False else EXIT_OK
