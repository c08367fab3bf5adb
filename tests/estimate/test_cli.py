"""`distdx estimate` end to end: formats, exit codes, the JSON contract, GPU detection, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from distdx.cli import main
from distdx.doctor.models import Environment, GpuReading
from distdx.estimate import detect_gpu_memory

CONFIGS = Path(__file__).parent / "configs"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["estimate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_contract(capsys) -> None:
    code, out, _ = run(capsys, "--params", "7e9", "--gpu-memory", "80GB", "--format", "json")
    data = json.loads(out)
    assert set(data) >= {"inputs", "per_gpu", "per_node_cpu", "fits", "suggestions"}
    assert set(data["per_gpu"]) >= {"model_states", "activations", "total"}  # fields are added, never renamed
    assert data["per_gpu"]["model_states"]["total"] == 112_000_000_000  # 16 bytes/param, no ZeRO
    g = data["per_gpu"]
    assert g["allocated_peak"] == g["model_states"]["total"] + g["activations"]["total"]
    assert g["total"] == g["allocated_peak"] + sum(g["runtime"].values())  # what nvidia-smi would show
    assert g["range"]["total"][0] <= g["total"] <= g["range"]["total"][1]
    assert data["fits"] is False and code == 1
    assert data["suggestions"] and {"changes", "cost", "setup", "per_gpu", "per_node_cpu"} <= set(data["suggestions"][0])
    assert data["inputs"]["model"]["assumed"]
    assert data["inputs"]["gpu_memory"] == 80 * 10**9 and data["inputs"]["gpu_memory_source"] == "stated"


def test_config_fits_and_text_names_the_fields(capsys) -> None:
    code, out, _ = run(capsys, "--model-config", str(CONFIGS / "mistral-7b.json"), "--zero", "3", "--gpus-per-node",
                       "8", "--nodes", "2", "--flash-attention", "--checkpointing", "selective", "--seq-len", "4096",
                       "--gpu-memory", "80GiB")
    assert code == 0
    assert "7,241,732,096 parameters" in out and "num_key_value_heads=8" in out
    assert "fits in 80.00 GiB per GPU (stated)" in out
    assert "gathered layer (ZeRO-3)" in out


def test_markdown_and_inference(capsys) -> None:
    code, out, _ = run(capsys, "--model-config", str(CONFIGS / "llama-2-7b.json"), "--mode", "infer", "--seq-len",
                       "4096", "--micro-batch", "8", "--gpu-memory", "24GB", "-f", "markdown")
    assert code == 1
    assert out.startswith("### distdx estimate") and "| KV cache + workspace |" in out
    assert "| # | changes |" in out


def test_no_gpu_memory_means_not_judged(capsys) -> None:
    code, out, _ = run(capsys, "--params", "125M", "--format", "json")
    data = json.loads(out)
    if data["inputs"]["gpu_memory_source"] is None:  # this machine has no GPU
        assert data["fits"] is None and code == 0


@pytest.mark.parametrize("args,code_words", [
    (["--params", "seven"], "DX-ESTIMATE-001"),
    (["--params", "7B", "--gpu-memory", "lots"], "DX-ESTIMATE-001"),
    ([], "DX-ESTIMATE-005"),
    (["--params", "7B", "--model-config", "x.json"], "DX-ESTIMATE-005"),
    (["--model-config", str(CONFIGS / "gpt2.json"), "--layers", "3"], "DX-ESTIMATE-005"),
    (["--params", "7B", "--world-size", "12", "--tp", "8"], "DX-ESTIMATE-004"),
    (["--params", "7B", "--zero", "2", "--offload-params", "cpu", "--offload-optimizer", "cpu"], "DX-ESTIMATE-005"),
    (["--model-config", "/nonexistent/config.json"], "DX-ESTIMATE-002"),
])
def test_bad_input_is_an_error_not_a_traceback(capsys, args, code_words) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith(f"error[{code_words}]") and "fix:" in err and "Traceback" not in err


def test_not_json_config_through_the_command(tmp_path, capsys) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama",\n  "hidden_size": 4096,,}')
    code, _, err = run(capsys, "--model-config", str(bad))
    assert code == 2 and "not valid JSON" in err and "line 2" in err


def test_detect_gpu_memory_reads_the_doctors_probe() -> None:
    env = Environment(gpus=(GpuReading(0, "NVIDIA A100-SXM4-80GB", "GPU-a", 81920),
                            GpuReading(1, "NVIDIA A100-SXM4-40GB", "GPU-b", 40960)))
    assert detect_gpu_memory(env) == (40960 * 2**20, "detected: 2 x NVIDIA A100-SXM4-40GB")
    assert detect_gpu_memory(Environment(gpus=None)) is None
    assert detect_gpu_memory(Environment(gpus=())) is None


def test_the_installed_command_runs() -> None:
    out = subprocess.run([sys.executable, "-m", "distdx", "estimate", "--params", "1B", "--gpu-memory", "80GB",
                          "-f", "json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["fits"] is True


def test_host_memory_verdict(capsys) -> None:
    args = ["--params", "7B", "--zero", "3", "--offload-optimizer", "cpu", "--offload-params", "cpu",
            "--gpus-per-node", "8", "--flash-attention", "--gpu-memory", "80GB"]
    code, out, _ = run(capsys, *args, "--cpu-memory", "8GB")
    assert code == 1 and "host memory per node needs" in out
    code, out, _ = run(capsys, *args, "--cpu-memory", "512GB")
    assert code == 0 and "GiB of host memory per node" in out


def test_attention_defaults_to_flash_and_the_old_flag_is_an_alias(capsys) -> None:
    args = ("--params", "7B", "--seq-len", "8192", "-f", "json")
    default = json.loads(run(capsys, *args)[1])
    alias = json.loads(run(capsys, *args, "--flash-attention")[1])
    eager = json.loads(run(capsys, *args, "--attention", "eager")[1])
    assert default["inputs"]["setup"]["attention"] == "flash" and default["inputs"]["setup"]["flash_attention"]
    assert alias["per_gpu"]["total"] == default["per_gpu"]["total"] < eager["per_gpu"]["total"]
    assert eager["inputs"]["setup"]["flash_attention"] is False


def test_moe_config_with_expert_parallelism_and_its_warning(capsys) -> None:
    code, out, _ = run(capsys, "--model-config", str(CONFIGS / "mixtral-8x7b.json"), "--zero", "3",
                       "--gpus-per-node", "8", "--ep", "8", "--checkpointing", "full", "-f", "json")
    data = json.loads(out)
    assert code == 0 and data["inputs"]["setup"]["ep"] == 8 and data["inputs"]["model"]["experts"] == 8
    low, high = data["per_gpu"]["range"]["total"]
    assert low <= data["per_gpu"]["total"] <= high
    assert any("nccl_buffers" in w for w in data["warnings"])  # no multi-GPU nvidia-smi reading backs it


def test_fit_suggests_the_new_terms_with_their_range(capsys) -> None:
    code, out, _ = run(capsys, "--model-config", str(CONFIGS / "llama-2-7b.json"), "--zero", "3", "--gpus-per-node",
                       "8", "--micro-batch", "8", "--seq-len", "8192", "--checkpointing", "selective-op",
                       "--gpu-memory", "80GiB", "-f", "json")
    data = json.loads(out)
    assert code == 1 and data["suggestions"]
    for s in data["suggestions"]:
        assert s["per_gpu"]["total"] <= 80 * 2**30
        assert s["per_gpu"]["range"]["total"][0] <= s["per_gpu"]["total"] <= s["per_gpu"]["range"]["total"][1]
    assert any("cross-entropy" in c for s in data["suggestions"] for c in s["changes"])
