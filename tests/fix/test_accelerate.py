"""accelerate configs: what `distdx fix` repairs, accelerate 1.15.0 itself accepts (it refused or misread the file
before), and what accelerate accepts gets no finding and no fix. accelerate's verdict: tests/fix/accelerate_verdict.py."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest
import yaml

from distdx.fix import FixOptions, fix, fix_sources
from distdx.lint import LintOptions, lint, lint_text
from distdx.lint.engine import Source

pytest.importorskip("accelerate", reason="accelerate's own loader and launch checks are the reference")
pytest.importorskip("deepspeed", reason="DeepSpeed validates the ZeRO section accelerate builds")

from tests.fix.accelerate_verdict import accelerate_verdict  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "lint" / "corpus"
MANIFEST = yaml.safe_load((CORPUS / "manifest.yaml").read_text())["files"]
BROKEN = sorted(r for r in MANIFEST if r.startswith("accelerate/broken/"))
VALID = sorted(r for r in MANIFEST if r.startswith("accelerate/valid/") and not (MANIFEST[r] or {}).get("hf"))
# accelerate cannot see these before the job runs: the machine waits at the rendezvous (LINT-ACC-005)
REFUSED_ONLY_AT_RUN_TIME = {"accelerate/broken/machine_rank_out_of_range.yaml"}
# what the file expects on the command line (SLURM scripts pass the process count)
LAUNCH_ARGS = {"accelerate/valid/acc_slurm_fsdp_config.yaml": ("--num_processes", "8")}


def _verdict(path: Path, rel: str) -> str | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return accelerate_verdict(path, *LAUNCH_ARGS.get(rel, ()))


def _copy(rel: str, tmp_path: Path) -> Path:
    """The file with its neighbours (a DeepSpeed file it names) in a folder of its own."""
    source = CORPUS / rel
    for neighbour in source.parent.glob("*.json"):
        shutil.copy(neighbour, tmp_path)
    return Path(shutil.copy(source, tmp_path))


@pytest.mark.parametrize("rel", BROKEN)
def test_accelerate_refuses_the_broken_files(rel: str) -> None:
    verdict = _verdict(CORPUS / rel, rel)
    assert (verdict is None) == (rel in REFUSED_ONLY_AT_RUN_TIME), verdict


@pytest.mark.parametrize("rel", BROKEN)
def test_after_the_fixes_the_file_lints_clean_and_accelerate_accepts_it(rel: str, tmp_path: Path) -> None:
    for unsafe in (False, True):
        folder = tmp_path / ("unsafe" if unsafe else "safe")
        folder.mkdir()
        path = _copy(rel, folder)
        (result,) = fix([str(path)], LintOptions(), FixOptions(unsafe=unsafe)).files
        assert unsafe or all(f.kind == "safe" for f in result.applied)
        path.write_text(result.fixed)
        after = {f.code for f in lint([str(path)]).findings}
        assert not after & {f.code for f in result.applied}, result.diff()
        if result.applied and not result.remaining:
            assert _verdict(path, rel) is None, result.diff()


def test_most_broken_files_are_repaired_by_safe_fixes_alone(tmp_path: Path) -> None:
    repaired = 0
    for rel in BROKEN:
        (result,) = fix([str(_copy(rel, tmp_path))], LintOptions(), FixOptions()).files
        repaired += bool(result.applied) and not result.remaining
    assert repaired >= 8, repaired


@pytest.mark.parametrize("rel", VALID)
def test_accelerate_accepts_the_valid_files_and_fix_leaves_them(rel: str) -> None:
    assert _verdict(CORPUS / rel, rel) is None
    assert not lint([str(CORPUS / rel)]).has_errors
    (result,) = fix([str(CORPUS / rel)], LintOptions(), FixOptions(unsafe=True)).files
    assert not result.changed and not result.skipped_unsafe


def test_yaml_fix_keeps_comments_order_and_layout() -> None:
    text = ("# tuned for 2 nodes\ncompute_environment: LOCAL_MACHINE\ndistributed_type: multi_gpu   # lower case\n"
            "mixed_precision: no\nnum_processes: 16\nnum_machines: 2\nmain_process_ip: 10.0.0.1  # head node\n")
    (result,) = fix_sources([Source("default_config.yaml", text, "yaml")]).files
    assert result.fixed == text.replace("multi_gpu", "MULTI_GPU").replace("mixed_precision: no", "mixed_precision: 'no'")


def test_yaml_member_removal_takes_its_lines_and_comment_only() -> None:
    text = ("distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json  # the real settings\n"
            "  zero_stage: 2   # ignored next to the file\n  zero3_init_flag: false\nnum_processes: 8\n")
    (result,) = fix_sources([Source("default_config.yaml", text, "yaml")]).files
    assert result.fixed == text.replace("  zero_stage: 2   # ignored next to the file\n", "")


def test_a_json_accelerate_config_is_fixed_as_json() -> None:
    text = '{\n  "distributed_type": "deepspeed",\n  "num_processes": 2,\n  "deepspeed_config": {"zero_stage": 2}\n}\n'
    (result,) = fix_sources([Source("default_config.json", text, "json")]).files
    assert result.fixed == text.replace('"deepspeed"', '"DEEPSPEED"')


def test_the_deepspeed_file_handed_over_gets_the_deepspeed_rules(tmp_path: Path) -> None:
    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 4}}')
    (tmp_path / "acc.yaml").write_text("distributed_type: DEEPSPEED\nnum_processes: 8\n"
                                       "deepspeed_config:\n  deepspeed_config_file: ds.json\n")
    report = lint([str(tmp_path / "acc.yaml")])
    found = {(Path(f.file).name, f.code) for f in report.findings}
    assert ("ds.json", "LINT-DS-007") in found  # stage 4, from the DeepSpeed checks
    assert not any(code == "LINT-DS-021" for _, code in found)  # accelerate fills "auto"
    both = lint([str(tmp_path / "acc.yaml"), str(tmp_path / "ds.json")])  # given too: linted once, as handed over
    assert sorted(f.code for f in both.findings) == sorted(f.code for f in report.findings)


@pytest.mark.parametrize("text", [
    '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}',  # DeepSpeed
    "base_model: meta-llama/Llama-3-8B\nfsdp_config:\n  fsdp_offload_params: true\nmicro_batch_size: 2\n",  # axolotl
    "num_layers: 24\nhidden_size: 2048\ntensor_model_parallel_size: 2\n",  # Megatron --yaml-cfg
])
def test_other_configs_are_not_taken_for_accelerate_configs(text: str) -> None:
    name = "c.json" if text.startswith("{") else "c.yaml"
    assert not any(f.code.startswith("LINT-ACC") for f in lint_text(text, name).findings)


def _launch_env(config: Path) -> dict:
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import launch as launchers

    args, _, _ = _validate_launch_command(launch_command_parser().parse_args(["--config_file", str(config), "train.py"]))
    return launchers.prepare_multi_gpu_env(args)


def test_an_old_key_name_renamed_by_a_safe_fix_reaches_accelerate_again(tmp_path: Path) -> None:
    path = _copy("accelerate/broken/fsdp_backward_prefetch_policy.yaml", tmp_path)
    path.write_text(path.read_text().replace("INDCTOR", "INDUCTOR"))  # only the renamed key left
    assert "FSDP_BACKWARD_PREFETCH" not in _launch_env(path)  # accelerate 1.15.0 drops the old name silently
    (result,) = fix([str(path)], LintOptions(), FixOptions(select=("LINT-ACC-002",))).files
    assert [(f.code, f.kind) for f in result.applied] == [("LINT-ACC-002", "safe")]
    path.write_text(result.fixed)
    assert _launch_env(path)["FSDP_BACKWARD_PREFETCH"] == "BACKWARD_PRE"
