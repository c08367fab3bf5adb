"""Version sets: the table loads, every hand-written rule has a case that must apply and one that must
not, unknowns are said, the constraints file parses, and the F2 questions are scored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from distdx.doctor.models import Environment
from distdx.doctor.versionsets import (
    CONSTRAINTS_FILE, answer_question, api_clauses, api_history, load_table, table, version_set,
    versions_in_text,
)
from distdx.errors import DistdxError

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = Path(__file__).parent / "data" / "f2_version_questions.jsonl"

# code -> (version_set keyword arguments, package asked, a version the answer must admit, one it must not)
FIXTURES = {
    "VS-TORCH-001": ({"installed": {"torch": "1.12.1"}}, "python", "3.10.4", "3.11.0"),
    "VS-TORCH-002": ({"installed": {"torch": "1.13.1"}}, "python", "3.7.9", "3.11.2"),
    "VS-TORCH-003": ({"installed": {"torch": "2.0.1"}}, "python", "3.11.4", "3.12.0"),
    "VS-TORCH-004": ({"installed": {"torch": "2.1.2"}}, "cuda", "12.1", "12.4"),
    "VS-TORCH-005": ({"installed": {"torch": "2.3.1"}}, "python", "3.12.1", "3.13.0"),
    "VS-TORCH-006": ({"installed": {"torch": "2.4.0"}}, "python", "3.8.18", "3.13.1"),
    "VS-TORCH-007": ({"installed": {"torch": "2.5.1"}}, "python", "3.13.0", "3.8.18"),
    "VS-TORCH-008": ({"installed": {"torch": "2.6.0"}}, "cuda", "12.6", "12.1"),
    "VS-TORCH-009": ({"installed": {"torch": "2.7.1"}}, "cuda", "12.8", "12.4"),
    "VS-TORCH-010": ({"installed": {"torch": "2.8.0"}}, "cuda", "12.9", "11.8"),
    "VS-TORCH-011": ({"installed": {"torch": "2.10.0"}}, "python", "3.14.0", "3.9.18"),
    "VS-TORCH-012": ({"installed": {"torch": "2.12.0"}}, "cuda", "13.2", "12.8"),
    "VS-TORCH-013": ({"installed": {"torch": "2.13.0+cpu"}}, "python", "3.15.0", "3.9.0"),
    "VS-EVID-001": ({"evidence": "ModuleNotFoundError: No module named 'torch._six'"}, "deepspeed", "0.8.2", "0.8.1"),
    "VS-ARCH-001": ({"evidence": "nvcc fatal   : Unsupported gpu architecture 'compute_61'"}, "cuda", "8.0", "7.5"),
    "VS-ARCH-002": ({"evidence": "nvcc fatal   : Unsupported gpu architecture 'compute_70'"}, "cuda", "9.0", "8.0"),
    "VS-ARCH-003": ({"evidence": "nvcc fatal   : Unsupported gpu architecture 'compute_72'"}, "cuda", "9.1", "9.0"),
    "VS-ARCH-004": ({"evidence": "nvcc fatal   : Unsupported gpu architecture 'compute_75'"}, "cuda", "10.0", "9.2"),
    "VS-ARCH-005": ({"evidence": "nvcc fatal   : Unsupported gpu architecture 'compute_80'"}, "cuda", "11.0", "10.2"),
    "VS-ARCH-006": ({"evidence": "nvcc fatal : Unsupported gpu architecture 'compute_86'"}, "cuda", "11.1", "11.0"),
    "VS-ARCH-007": ({"evidence": "nvcc fatal   : Unsupported gpu architecture 'compute_87'"}, "cuda", "11.4", "11.3"),
    "VS-ARCH-008": ({"evidence": "nvcc fatal   : Unsupported gpu architecture 'compute_90'"}, "cuda", "11.8", "11.7"),
    "VS-ARCH-009": ({"evidence": "nvcc fatal   : Unsupported gpu architecture 'compute_90a'"}, "cuda", "12.0", "11.8"),
    "VS-ARCH-010": ({"evidence": "nvcc fatal   : Unsupported gpu architecture 'compute_35'"}, "cuda", "11.8", "12.1"),
    "VS-ARCH-011": ({"evidence": "nvcc fatal   : Unsupported gpu architecture 'compute_30'"}, "cuda", "10.2", "11.0"),
    "VS-BUG-001": ({"evidence": '"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8}\n'
                                "step 120 loss 0.0 grad_norm nan"}, "deepspeed", "0.13.5", "0.13.4"),
    "VS-BUG-002": ({"evidence": "ZeRO stage 3 with offload_optimizer to cpu\n  File \"deepspeed/runtime/zero/stage3.py\", "
                                "in step\nRuntimeError: Expected all tensors to be on the same device, but found at "
                                "least two devices, cuda:0 and cpu!"}, "deepspeed", "0.14.0", "0.14.2"),
    "VS-BUG-003": ({"evidence": '"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 100, '
                                '"warmup_num_steps": 100}}\nZeroDivisionError: float division by zero'},
                   "deepspeed", "0.19.3", "0.19.2"),
    "VS-BUG-004": ({"evidence": "pydantic_core._pydantic_core.ValidationError: 1 validation error for "
                                "DeepSpeedMoEConfig\nmoe\n  Extra inputs are not permitted"}, "deepspeed", "0.19.3",
                   "0.18.9"),
    "VS-FEAT-001": ({"evidence": "AssertionError: Gated delta net does not support context parallel for now, but got "
                                 "self.context_parallel_size=2."}, "megatron-core", "0.18.0", "0.17.1"),
}
# near misses: the same words that must not fire the rule
NO_MATCH = {
    "VS-EVID-001": {"evidence": "from torch import inf  # torch six"},
    "VS-ARCH-006": {"evidence": "building for compute_86 with nvcc 12.1: ok"},
    "VS-ARCH-008": {"evidence": "nvcc fatal   : Unsupported gpu architecture 'compute_100'"},
    # hpZ without a loss or NaN symptom; the symptom without hpZ
    "VS-BUG-001": {"evidence": '"zero_hpz_partition_size": 8\nRuntimeError: CUDA out of memory\nstep 3 loss 0.52'},
    # the same device error without offload (a model left on the CPU, not this regression)
    "VS-BUG-002": {"evidence": "ZeRO-3\nRuntimeError: Expected all tensors to be on the same device, but found at "
                               "least two devices, cuda:0 and cpu!"},
    "VS-BUG-003": {"evidence": "WarmupCosineLR: warmup_num_steps=100 total_num_steps=1000\nZero division avoided"},
    "VS-BUG-004": {"evidence": "1 validation error for DeepSpeedZeroConfig\nstage\n  Input should be a valid integer"},
    # context parallelism with a model that has no gated delta net
    "VS-FEAT-001": {"evidence": "Llama-3 8B with context_parallel_size 2: CUDA out of memory"},
}


def _hand_codes() -> set[str]:
    return {r.code for r in table().rules if r.code.startswith("VS-")}


def test_every_hand_written_rule_has_a_fixture():
    assert set(FIXTURES) == _hand_codes(), f"rules without a fixture: {_hand_codes() - set(FIXTURES)}"


@pytest.mark.parametrize("code", sorted(FIXTURES))
def test_rule_fixture(code):
    kwargs, package, inside, outside = FIXTURES[code]
    vs = version_set([package], **kwargs)
    pin = vs.pin(package)
    assert pin is not None, vs.unknown
    assert code in {c.code for c in pin.clauses}
    assert pin.contains(inside) and not pin.contains(outside), pin.specifier


@pytest.mark.parametrize("code", sorted(NO_MATCH))
def test_rule_near_miss(code):
    package = FIXTURES[code][1]
    vs = version_set([package], **NO_MATCH[code])
    pin = vs.pin(package)
    assert pin is None or code not in {c.code for c in pin.clauses}


def test_known_bug_is_silent_for_a_release_outside_it():
    evidence = FIXTURES["VS-BUG-002"][0]["evidence"]
    inside = version_set(["deepspeed"], evidence=evidence, installed={"deepspeed": "0.14.2"})
    assert "VS-BUG-002" in {c.code for c in inside.pin("deepspeed").clauses}
    outside = version_set(["deepspeed"], evidence=evidence, installed={"deepspeed": "0.15.1"})
    assert outside.pin("deepspeed") is None or "VS-BUG-002" not in {c.code for c in outside.pin("deepspeed").clauses}
    # the same from a version the text quotes
    quoted = version_set(["deepspeed"], evidence=evidence + "\ndeepspeed==0.12.6")
    assert quoted.pin("deepspeed") is None or "VS-BUG-002" not in {c.code for c in quoted.pin("deepspeed").clauses}


def test_a_regression_excludes_its_releases_and_keeps_both_ways_out():
    pin = version_set(["deepspeed"], **FIXTURES["VS-BUG-002"][0]).pin("deepspeed")
    # going back to 0.14.0 and forward to 0.14.3 are both admitted; the constraints file says so as pip reads it
    assert pin.contains("0.14.0") and pin.contains("0.14.3") and pin.contains("0.16.0")
    assert not pin.contains("0.14.1") and not pin.contains("0.14.2")
    assert Requirement("deepspeed" + pin.specifier).specifier.contains("0.14.0")


def test_affects_belongs_to_evidence_rules():
    good = (ROOT / "src/distdx/doctor/compat_releases.yaml").read_text(encoding="utf-8")
    with pytest.raises(DistdxError):
        load_table("version_rules:\n  - {code: VS-X-004, when: {torch: '>=2'}, affects: {torch: '<2.1'}, "
                   "requires: {python: '>=3'}, source: s}\n", good)


def test_codes_are_unique_and_every_rule_has_a_source():
    codes = [r.code for r in table().rules]
    assert len(codes) == len(set(codes))
    assert all(r.source for r in table().rules)


def test_generated_rules_name_the_tags_they_were_read_at():
    # DeepSpeed pinned pydantic below 2 in its requirements from v0.9.2 until pydantic 2 support (v0.12.5)
    rules = [r for r in table().rules if r.when.get("deepspeed") and "pydantic" in r.requires]
    assert rules and all(" at v" in r.source for r in rules)
    vs = version_set(["deepspeed"], installed={"pydantic": "2.5.0"})
    pin = vs.pin("deepspeed")
    assert pin is not None and not pin.contains("0.10.0") and pin.contains("0.14.0"), pin.specifier


def test_backward_rule_needs_the_installed_python():
    vs = version_set(["torch"], installed={"python": "3.12.2"})
    pin = vs.pin("torch")
    assert pin.contains("2.4.1") and not pin.contains("2.1.2") and not pin.contains("1.13.1")
    # beyond the matrix (newer than its rows) the answer does not guess
    assert not pin.contains("2.99.0")


def test_machine_cuda_never_rules_a_torch_release_out():
    vs = version_set(["torch"], installed={"cuda": "12.0"})
    assert vs.pin("torch") is None and vs.unknown[0].package == "torch"


def test_unknown_outside_the_table():
    vs = version_set(["not-a-package", "torch"], installed={"python": "2.7.18"})
    unknown = {u.package: u.why for u in vs.unknown}
    assert "not in the compatibility table" in unknown["not-a-package"]
    # python 2.7 is below every row: every torch row is ruled out, so no release is left
    assert "torch" in unknown or vs.conflicts


def test_unknown_when_no_rule_bears():
    vs = version_set(["deepspeed"])
    assert vs.pins == () and vs.unknown[0].package == "deepspeed" and "no rule" in vs.unknown[0].why
    assert vs.command == ""


def test_constraints_file_parses_and_command_applies_it():
    vs = version_set(["deepspeed", "python", "colossalai"], installed={"torch": "2.0.1", "pydantic": "1.10.13"},
                     evidence="ModuleNotFoundError: No module named 'torch._six'")
    lines = [ln.split("#", 1)[0].strip() for ln in vs.constraints.splitlines()]
    reqs = [Requirement(ln) for ln in lines if ln]
    names = {r.name for r in reqs}
    assert {"deepspeed", "colossalai", "torch", "pydantic"} <= names and "python" not in names
    assert next(r for r in reqs if r.name == "torch").specifier.contains("2.0.1")
    assert vs.command.startswith(f"pip install -c {CONSTRAINTS_FILE} ") and "deepspeed" in vs.command
    assert "python" not in vs.command.split()
    assert "# python" in vs.constraints  # platform entries are comments
    assert json.loads(json.dumps(vs.to_dict()))["constraints"] == vs.constraints


def test_environment_from_doctor_is_used():
    env = Environment(python_version="3.12.3", packages={"torch": "2.0.1"}, torch_cuda="11.8")
    vs = version_set(["python", "deepspeed"], environment=env)
    assert vs.pin("python").contains("3.11.9") and not vs.pin("python").contains("3.12.3")
    assert vs.kept["torch"] == "2.0.1"


def test_api_history_answers_import_errors():
    found = api_clauses("ModuleNotFoundError: No module named 'colossalai.zero.init_ctx'")
    (clause,) = found["colossalai"]
    assert clause.contains(__import__("packaging.version").version.Version("0.2.5"))
    assert not clause.contains(__import__("packaging.version").version.Version("0.3.5"))
    # a module every release has, or one no release has, constrains nothing
    assert api_clauses("No module named 'deepspeed'") == {}
    assert api_clauses("No module named 'deepspeed.not_a_module_anywhere'") == {}
    assert {h.package for h in api_history()} >= {"deepspeed", "colossalai", "megatron-core", "transformer-engine"}


def test_versions_quoted_in_logs():
    text = ("torch version .................... 2.0.1\ndeepspeed info ................... 0.9.2, unknown, unknown\n"
            "- `transformers` version: 4.36.2\nnumpy==1.24.3\naccelerate                0.25.0\n"
            "Cuda compilation tools, release 11.8, V11.8.89\nsomething 12 of 3.4")
    assert versions_in_text(text) == {"torch": "2.0.1", "deepspeed": "0.9.2", "transformers": "4.36.2",
                                      "numpy": "1.24.3", "accelerate": "0.25.0", "cuda": "11.8"}


def test_malformed_rule_is_one_error():
    good = (ROOT / "src/distdx/doctor/compat_releases.yaml").read_text(encoding="utf-8")
    bad = "version_rules:\n  - {code: VS-X-001, when: {torch: '>=two'}, requires: {python: '>=3'}, source: s}\n"
    with pytest.raises(DistdxError) as e:
        load_table(bad, good)
    assert e.value.code == "DX-DOCTOR-006"
    with pytest.raises(DistdxError):
        load_table("version_rules:\n  - {code: VS-X-002, requires: {python: '>=3'}, source: s}\n", good)


def test_f2_questions_are_what_the_script_derives():
    out = subprocess.run([sys.executable, str(ROOT / "scripts/f2_version_questions.py"),
                          str(ROOT / "corpus/dev.jsonl"), str(ROOT / "corpus/cases.jsonl")],
                         capture_output=True, text=True, check=True).stdout
    assert out == QUESTIONS.read_text(encoding="utf-8")


def test_f2_questions_of_the_shared_cases():
    """The done-when target is 80 % hits: 10 of 12 since the known-bug entries (VS-BUG, VS-FEAT); the
    table never answers with a set that misses the named version."""
    cases = {}
    for path in (ROOT / "corpus/dev.jsonl", ROOT / "corpus/cases.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            c = json.loads(line)
            cases.setdefault(c["id"], c)
    verdicts = []
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["file"].endswith("dev.jsonl"):
            c = cases[q["id"]]
            verdicts.append(answer_question(q["package"], q["version"], q["relation"],
                                            c["context"] + "\n\n" + c["log"])[0])
    assert verdicts.count("miss") == 0
    assert verdicts.count("hit") >= 10, verdicts
    assert verdicts.count("hit") / len(verdicts) >= 0.80


def test_installed_requires_dist_constrains_the_packages_in_question():
    env = Environment(python_version="3.11.4", packages={"transformers": "4.36.2", "torch": "2.1.2"},
                      requirements={"transformers": ("tokenizers<0.19,>=0.14", "torch>=1.10; extra == 'torch'"),
                                    "torch": ("triton==2.1.0; platform_system == 'Linux'",)})
    vs = version_set(["tokenizers", "triton"], environment=env)
    assert vs.pin("tokenizers").contains("0.15.2") and not vs.pin("tokenizers").contains("0.19.1")
    assert vs.pin("triton").specifier == "==2.1.0"
    assert "DIST-transformers" in {c.code for c in vs.pin("tokenizers").clauses}


def test_contradiction_is_a_conflict_not_a_pin():
    # python 2.7 rules out every torch row of the matrix, and no torch release outside it is known
    vs = version_set(["colossalai"], installed={"torch": "1.0.0"},
                     evidence="ModuleNotFoundError: No module named 'torch._six'")
    pin = vs.pin("colossalai")
    # torch 1.0 predates every Colossal-AI requirement range that names torch, and torch._six asks >=0.2.6
    assert pin is None or pin.contains("0.2.6")
    vs = version_set(["deepspeed"], installed={"pydantic": "1.10.13"},
                     evidence="ModuleNotFoundError: No module named 'deepspeed.not_there'\n"
                              "ImportError: cannot import name 'DeepSpeedZeroOptimizer_Stage3' from "
                              "'deepspeed.runtime.zero.stage3'")
    assert vs.pin("deepspeed") is not None


def test_multi_package_when_is_rejected():
    good = (ROOT / "src/distdx/doctor/compat_releases.yaml").read_text(encoding="utf-8")
    with pytest.raises(DistdxError):
        load_table("version_rules:\n  - {code: VS-X-003, when: {torch: '>=2', python: '>=3'}, "
                   "requires: {cuda: '>=12'}, source: s}\n", good)


def test_python_history_from_typeshed():
    found = api_clauses("AttributeError: module 'math' has no attribute 'prod'")
    (clause,) = found["python"]
    from packaging.version import Version
    assert clause.contains(Version("3.8")) and not clause.contains(Version("3.7"))
    vs = version_set(["python"], evidence="ImportError: cannot import name 'cached_property' from 'functools'")
    assert vs.pin("python").contains("3.8") and not vs.pin("python").contains("3.7.9")
    # a name every Python has gives nothing
    assert api_clauses("module 'os' has no attribute 'path'") == {}
