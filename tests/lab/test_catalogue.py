"""The scenario catalogue: valid labels, existing plain programs, bounds; and its validation of bad data."""

import json
from importlib import resources

import pytest

from distdx.cli import main
from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import taxonomy
from distdx.lab import get_scenario, load_scenarios, run_scenario
from distdx.lab.catalogue import MAX_TIMEOUT_S, parse_catalogue, scenario_from_dict

SCENARIOS = load_scenarios()
# the failures issue 4 asks the lab to reproduce, each by its own scenario
REQUIRED = {
    "collective-shape-mismatch", "rank-skips-collective", "rank-dependent-model", "uneven-batches",
    "nan-at-step", "loss-scale-overflow", "master-port-in-use", "unreachable-master-addr",
    "world-size-too-large", "rank-killed", "memory-exhaustion", "checkpoint-shard-missing",
    "module-missing-on-one-rank", "bad-deepspeed-config",
}

GOOD = """
version: 1
scenarios:
  - name: demo
    title: t
    program: healthy_ddp.py
    labels: {stage: S4, symptom: "4.6", root_cause: R4.6, fix_pattern: F6}
    world_size: 2
    timeout_s: 30
    expect_log: ["x"]
    diagnosis: d
    fix: [f]
"""


def test_catalogue_has_every_required_scenario():
    names = {s.name for s in SCENARIOS}
    assert REQUIRED <= names
    assert len(SCENARIOS) >= 14


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario_labels_are_taxonomy_ids_and_consistent(scenario):
    tax = taxonomy()
    for dim, node_id in scenario.labels.items():
        assert tax.get(node_id).dimension == dim
    assert tax.nodes[scenario.symptom].stage == scenario.labels["stage"]
    assert tax.nodes[scenario.labels["root_cause"]].stage == scenario.labels["stage"]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario_program_is_plain_and_bounded(scenario):
    program = resources.files("distdx.lab").joinpath("scenarios", scenario.program)
    source = program.read_text(encoding="utf-8")
    compile(source, scenario.program, "exec")
    assert "distdx" not in source, "scenario programs must not use distdx (the guard must catch them unmodified)"
    assert 2 <= scenario.world_size <= 4
    assert 0 < scenario.timeout_s <= 90, "keep each scenario short: all of them run in CI"
    assert scenario.expect_log and scenario.diagnosis and scenario.fix
    if "init_process_group" in source:
        # a hang must end at the program's own collective timeout, well inside the launch bound
        assert "LAB_TIMEOUT_S" in source
        assert float(scenario.env.get("LAB_TIMEOUT_S", 30)) * 3 < scenario.timeout_s


def test_list_json_contract(capsys):
    assert main(["lab", "list", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {row["name"]: row for row in data["scenarios"]}
    assert set(rows) == {s.name for s in SCENARIOS}
    for row in rows.values():
        for key in ("name", "title", "symptom", "root_cause", "fix_pattern", "world_size", "timeout_s"):
            assert row[key] not in (None, "")
    assert rows["rank-killed"]["symptom"] == "4.8"


def test_list_text(capsys):
    assert main(["lab", "list"]) == 0
    out = capsys.readouterr().out
    assert "collective-shape-mismatch" in out and "4.6" in out


def test_parse_accepts_a_minimal_scenario():
    (s,) = parse_catalogue(GOOD, {"healthy_ddp.py"})
    assert s.name == "demo" and s.labels["stage"] == "S4" and s.setup == "none"


@pytest.mark.parametrize(
    "broken, what",
    [
        ("version: 2\nscenarios: []", "version: 1"),
        ("scenarios: [oops", "does not parse"),
        (GOOD.replace('"4.6"', '"4.99"'), "not a symptom ID"),
        (GOOD.replace("R4.6", "R2.1"), "not under stage S4"),
        (GOOD.replace("healthy_ddp.py", "nope.py"), "is not a file"),
        (GOOD.replace("world_size: 2", "world_size: 16"), "world_size"),
        (GOOD.replace("timeout_s: 30", f"timeout_s: {MAX_TIMEOUT_S + 1}"), "timeout_s"),
        (GOOD.replace("name: demo", "name: Demo_1"), "kebab-case"),
        (GOOD.replace('expect_log: ["x"]', 'expect_log: ["("]'), "does not compile"),
        (GOOD.replace("    diagnosis: d\n", ""), "missing diagnosis"),
        (GOOD + GOOD.split("scenarios:\n")[1], "used twice"),
        (GOOD + "    fault_rank: 2\n", "fault_rank"),
        (GOOD + "    fault_step: -1\n", "fault_step"),
        (GOOD + "    config: nope.json\n", "not a file in distdx/lab/scenarios/configs/"),
    ],
)
def test_parse_rejects_bad_catalogues(broken, what):
    with pytest.raises(DistdxError) as e:
        parse_catalogue(broken, {"healthy_ddp.py"})
    assert e.value.code == "DX-LAB-001"
    assert what in e.value.message


def test_unknown_scenario_is_a_clear_error(capsys):
    with pytest.raises(DistdxError) as e:
        get_scenario("no-such-thing")
    assert e.value.code == "DX-LAB-002" and "distdx lab list" in e.value.hint
    assert main(["lab", "run", "no-such-thing"]) == 2
    assert "error[DX-LAB-002]" in capsys.readouterr().err


def test_keep_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "precious.txt").write_text("x")
    with pytest.raises(DistdxError) as e:
        run_scenario("collective-shape-mismatch", keep=tmp_path)
    assert e.value.code == "DX-LAB-003"
    assert (tmp_path / "precious.txt").read_text() == "x"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario_json_round_trip(scenario):
    assert scenario_from_dict(json.loads(json.dumps(scenario.to_dict()))) == scenario


@pytest.mark.parametrize("bad", ["-1", "0", "99999"])
def test_run_rejects_an_unbounded_timeout(bad, capsys):
    assert main(["lab", "run", "rank-killed", "--timeout", bad]) == 2
    assert "error[DX-LAB-005]" in capsys.readouterr().err


def test_keep_refuses_a_file(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("x")
    with pytest.raises(DistdxError) as e:
        run_scenario("rank-killed", keep=target)
    assert e.value.code == "DX-LAB-003"


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if "LAB_FAULT_STEP" in s.env], ids=lambda s: s.name)
def test_fault_step_matches_what_the_program_is_told(scenario):
    assert scenario.fault_step == int(scenario.env["LAB_FAULT_STEP"])
    assert scenario.fault_rank is not None


def test_a_scenario_needing_a_missing_package_is_refused_before_it_runs():
    import dataclasses

    import pytest

    from distdx.errors import DistdxError
    from distdx.lab.catalogue import get_scenario
    from distdx.lab.runner import check_requirements

    assert get_scenario("bad-deepspeed-config").requires == ("torch", "deepspeed")
    assert get_scenario("rank-killed").requires == ("torch",)
    missing = dataclasses.replace(get_scenario("rank-killed"), requires=("torch", "no_such_package_xyz"))
    with pytest.raises(DistdxError) as e:
        check_requirements(missing)
    assert e.value.code == "DX-LAB-006" and "no_such_package_xyz" in e.value.message and e.value.exit_code == 2


def test_a_shipped_config_is_copied_into_the_run_and_can_be_replaced(tmp_path):
    from pathlib import Path

    from distdx.lab.catalogue import config_path
    from distdx.lab.runner import launch_env

    with_config = [s for s in SCENARIOS if s.config]
    assert len(with_config) >= 8
    for scenario in with_config:
        assert Path(config_path(scenario)).is_file()
        assert launch_env(scenario, tmp_path, "r")["LAB_CONFIG"] == str(tmp_path / scenario.config)
        replaced = launch_env(scenario, tmp_path, "r", {"LAB_CONFIG": "/elsewhere/fixed.json"})
        assert replaced["LAB_CONFIG"] == "/elsewhere/fixed.json"

def test_two_node_scenarios_are_listed_with_their_nodes(capsys):
    assert main(["lab", "list", "--format", "json"]) == 0
    listed = {s["name"]: s for s in json.loads(capsys.readouterr().out)["scenarios"]}
    assert all(s["nodes"] in (1, 2) for s in listed.values())
    two = {n for n, s in listed.items() if s["nodes"] == 2}
    assert {"two-node-node-dies", "two-node-never-arrives", "two-node-master-port-mismatch", "two-node-mixed-versions"} <= two
    assert listed["two-node-never-arrives"]["absent_nodes"] == [1]
    assert listed["collective-shape-mismatch"]["nodes"] == 1


def test_two_node_launch_commands_meet_at_one_c10d_rendezvous(tmp_path):
    from distdx.lab.runner import launch_command, launch_env

    s = get_scenario("two-node-master-port-mismatch")
    node0 = launch_command(s, 1234, tmp_path, node=0, port2=5678, run_id="r")
    node1 = launch_command(s, 1234, tmp_path, node=1, port2=5678, run_id="r")
    for n, cmd in enumerate((node0, node1)):
        assert cmd[cmd.index("--nnodes") + 1] == "2" and cmd[cmd.index("--node-rank") + 1] == str(n)
        assert cmd[cmd.index("--rdzv-backend") + 1] == "c10d" and cmd[cmd.index("--rdzv-endpoint") + 1] == "127.0.0.1:1234"
    assert node1[-4:-1] == ["127.0.0.1:5678", "--rdzv-conf", "is_host=false,read_timeout=3"]  # its own, later, port
    env1 = launch_env(get_scenario("two-node-mixed-versions"), tmp_path, "r", node=1)
    assert env1["LAB_NODE"] == "node1" and "labmodel-2.0" in env1["PYTHONPATH"].split(":")[0]
    assert env1["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] == "[rank${rank}]:"


@pytest.mark.parametrize("change, message", [
    ({"nodes": 3}, "nodes must be"),
    ({"nodes": 2, "world_size": 3}, "divide world_size"),
    ({"nodes": 2, "node_env": [{}]}, "node_env"),
    ({"nodes": 2, "absent_nodes": [0]}, "absent_nodes"),
    ({"nodes": 2, "fault_node": 2}, "fault_node"),
])
def test_bad_node_fields_are_refused(change, message):
    import yaml

    spec = yaml.safe_load(GOOD)
    spec["scenarios"][0].update(change)
    with pytest.raises(DistdxError, match=message):
        parse_catalogue(yaml.safe_dump(spec), {"healthy_ddp.py"})
