"""`distdx doctor --hostfile` against a real SSH server on loopback (asyncssh's server), through the
system's own OpenSSH client: each node of the hostfile fails in its own way, or answers, and is
reported under its own name with what to do."""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stdout

import pytest

from distdx.cli import main

from .ssh_server import Node, SSHServer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("ssh") is None, reason="needs an OpenSSH client (ssh) on PATH"),
]

NODES = [
    Node("node-a"),
    Node("node-b"),
    Node("node-odd", packages=(("torch", "2.4.0"), ("nvidia-nccl-cu12", "2.20.5"))),
    Node("node-slow", delay_s=60),
    Node("node-bare", distdx=False),
]
FAILING = ["node-refused", "node-wrong-key", "node-new-host-key"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    try:
        srv = SSHServer(tmp_path_factory.mktemp("sshd"), NODES).start()
    except OSError as e:
        pytest.skip(f"no SSH server could be started on loopback: {e}")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def report(server, tmp_path_factory):
    hostfile = tmp_path_factory.mktemp("hosts") / "hostfile"
    hostfile.write_text("".join(f"{n} slots=1\n" for n in [*(n.name for n in NODES), *FAILING]))
    out = io.StringIO()  # the CLI prints its report
    with redirect_stdout(out):
        code = main(["doctor", "--hostfile", str(hostfile), "--ssh-config", str(server.config),
                     "--ssh-timeout", "3", "--remote-timeout", "5", "--format", "json"])
    data = json.loads(out.getvalue())
    return code, {n["host"]: n for n in data["nodes"]}, data


def test_healthy_nodes_answer_with_their_report(report):
    code, nodes, data = report
    assert code != 0 and data["ok"] is False  # some nodes fail: the command says so
    for name in ("node-a", "node-b"):
        assert nodes[name]["reachable"] and nodes[name]["error"] is None
        assert nodes[name]["report"]["facts"]["torch"] == nodes["node-a"]["report"]["facts"]["torch"]


def test_refused_port_is_named_with_its_fix(report):
    node = report[1]["node-refused"]
    assert not node["reachable"] and "Connection refused" in node["error"] and "nothing listens" in node["error"]
    assert "sshd" in node["hint"]


def test_wrong_key_is_named_with_its_fix(report):
    node = report[1]["node-wrong-key"]
    assert not node["reachable"] and "Permission denied" in node["error"]
    assert "ssh-copy-id node-wrong-key" in node["hint"]


def test_changed_host_key_is_named_and_not_waved_through(report):
    node = report[1]["node-new-host-key"]
    assert not node["reachable"] and "host key is not the one recorded" in node["error"]
    assert "ssh-keygen -R node-new-host-key" in node["hint"] and "do not turn StrictHostKeyChecking off" in node["hint"]


def test_slow_node_is_cut_off_at_the_remote_timeout(report):
    node = report[1]["node-slow"]
    assert node["reachable"] and node["report"] is None
    assert "did not finish within 5 s" in node["error"]
    assert 5 <= node["elapsed_s"] < 15 and "node-slow" in node["hint"]


def test_node_without_distdx_says_what_to_install(report):
    node = report[1]["node-bare"]
    assert node["reachable"] and node["report"] is None
    assert "not found on node-bare" in node["error"] and "install distdx" in node["hint"]


def test_odd_node_out_is_named_by_the_comparison(report):
    comparison = report[2]["comparison"]
    assert comparison["odd_members"][0] == "node-odd"
    diffs = {d["key"]: d for d in comparison["differences"]}
    assert diffs["torch"]["odd"] == ["node-odd"] and diffs["torch"]["values"]["node-odd"] == "2.4.0"
    assert diffs["nccl"]["odd"] == ["node-odd"] and diffs["nccl"]["values"]["node-odd"] == "2.20.5"


def test_missing_ssh_config_is_one_error(tmp_path, capsys):
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("node-a slots=1\n")
    assert main(["doctor", "--hostfile", str(hostfile), "--ssh-config", str(tmp_path / "nope")]) == 2
    assert "DX-DOCTOR-007" in capsys.readouterr().err
