"""End to end, one scenario at a time: it really fails the way it should, within its bound, leaves
no process behind, and `distdx diagnose` on the log it produced names the scenario's symptom first."""

import glob
import json
import os
import tempfile

import pytest

from distdx.cli import main
from distdx.lab import load_scenarios, run_scenario
from distdx.lab.runner import marked_processes

pytest.importorskip("torch", reason="the lab's scenarios are torch.distributed programs")

SCENARIOS = load_scenarios()
_RUNS: dict = {}


@pytest.fixture(scope="module")
def lab_run(tmp_path_factory):
    """Run each scenario once (keeping its logs) and share the result between this module's tests."""

    def get(scenario):
        if scenario.name not in _RUNS:
            if "deepspeed" in scenario.requires:
                pytest.importorskip("deepspeed", reason=f"{scenario.name} runs DeepSpeed code")
            keep = tmp_path_factory.mktemp(scenario.name) / "run"
            _RUNS[scenario.name] = run_scenario(scenario.name, keep=keep)
        return _RUNS[scenario.name]

    return get


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario_fails_as_expected_within_its_bound(scenario, lab_run):
    run = lab_run(scenario)
    assert not run.timed_out, f"{scenario.name} ran past its {scenario.timeout_s}s bound:\n{run.log_tail}"
    assert run.exit_code not in (0, None)
    assert not run.missing_log, f"{scenario.name} did not print {run.missing_log}:\n{run.log_tail}"
    assert run.failed_as_expected
    assert run.duration_s < scenario.timeout_s
    assert marked_processes(run.run_id) == [], "a process of the run survived it"
    if scenario.setup == "none" and not scenario.launcher_args:  # the workers started
        assert run.rank_logs, "torchrun wrote no per-rank log"


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_diagnose_names_the_scenario_symptom_first(scenario, lab_run, capsys):
    run = lab_run(scenario)
    capsys.readouterr()
    main(["diagnose", run.combined_log, "--format", "json"])
    diagnosis = json.loads(capsys.readouterr().out)
    ranked = diagnosis["classification"]["symptom"]
    assert ranked and ranked[0]["id"] == scenario.symptom, (
        f"{scenario.name}: `distdx diagnose` ranks {[(h['id'], h['score']) for h in ranked[:3]]}, "
        f"expected {scenario.symptom} first; headline: {diagnosis.get('headline')}"
    )
    # `distdx lab run` reports the same diagnosis of the same log
    assert run.diagnosed_symptom == scenario.symptom, run.diagnosis_error


@pytest.mark.slow
def test_lab_run_cli_json_includes_diagnosis(capsys, tmp_path):
    code = main(["lab", "run", "module-missing-on-one-rank", "--keep", str(tmp_path / "k"), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["failed_as_expected"] is True and out["exit_code"] == 1
    assert out["combined_log"].endswith("combined.log")
    assert "classification" in out["diagnosis"]
    assert out["diagnosed_symptom"] == "1.2"


@pytest.mark.slow
def test_lab_run_cli_text_and_cleanup(capsys):
    pattern = os.path.join(tempfile.gettempdir(), "distdx-lab-master-port-in-use-*")
    before = set(glob.glob(pattern))
    assert main(["lab", "run", "master-port-in-use", "--no-diagnose"]) == 0
    out = capsys.readouterr().out
    assert "failed as expected: exit code 1" in out
    assert "\nlog " not in out  # nothing kept
    assert set(glob.glob(pattern)) == before, "the temporary work directory was not removed"


@pytest.mark.slow
def test_time_bound_kills_the_whole_run():
    # a 3 s bound on a scenario whose hang now lasts until a 30 s collective timeout
    run = run_scenario("rank-skips-collective", timeout_s=3, diagnose=False, extra_env={"LAB_TIMEOUT_S": "30"})
    assert run.timed_out and not run.failed_as_expected
    assert run.duration_s < 3 + 10
    assert marked_processes(run.run_id) == []


TWO_NODE = [s for s in SCENARIOS if s.nodes == 2]


@pytest.mark.slow
@pytest.mark.parametrize("scenario", TWO_NODE, ids=lambda s: s.name)
def test_two_node_diagnosis_names_the_failing_node_and_rank(scenario, lab_run):
    run = lab_run(scenario)
    started = [n for n in range(scenario.nodes) if n not in scenario.absent_nodes]
    assert [c is not None for c in run.node_exit_codes] == [n in started for n in range(scenario.nodes)]
    first = run.diagnosis["first_failure"]
    lines = open(run.combined_log, encoding="utf-8").read().splitlines()
    # a node that never started wrote nothing: the first failure is then the timeout of a node that did
    reporting = scenario.fault_node if scenario.fault_node in started else started[0]
    assert lines[first["line"] - 1].startswith(f"node{reporting}: "), (first, lines[first["line"] - 1])
    assert first["host"] == f"node{reporting}", first  # the node, not the "localhost" each node calls itself
    if scenario.fault_rank is not None:
        assert first["rank"] == scenario.fault_rank, first
    if scenario.fault_node not in started:
        assert not any(line.startswith(f"node{scenario.fault_node}: ") for line in lines)
