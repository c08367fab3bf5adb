"""SSH reachability fails fast and clearly on a closed loopback port; cross-node differences are
named from injected per-node reports."""

import shutil
import socket
import time

import pytest

from distdx.doctor.compare import compare_reports
from distdx.doctor.engine import run_checks
from distdx.doctor.hostfile import HostEntry
from distdx.doctor.probe import facts
from distdx.errors import DistdxError
from distdx.doctor.remote import check_node, doctor_nodes, ssh_command
from distdx.doctor.render import render_comparison, render_nodes

from .doctor_envs import make, with_env


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_ssh_command_is_non_interactive_and_bounded():
    cmd = ssh_command("127.0.0.1", "distdx doctor --format json", port=2222, connect_timeout=3)
    assert cmd[:1] == ["ssh"]
    assert "BatchMode=yes" in cmd and "ConnectTimeout=3" in cmd
    assert cmd[-3:] == ["--", "127.0.0.1", "distdx doctor --format json"]  # options end before the host


def test_a_host_that_looks_like_an_option_is_refused():
    with pytest.raises(DistdxError) as e:
        ssh_command("-oProxyCommand=touch /tmp/x", "distdx doctor")
    assert e.value.code == "DX-HOSTFILE-001" and "starts with `-`" in e.value.message


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs an OpenSSH client")
def test_unreachable_node_fails_fast_with_a_clear_verdict():
    start = time.perf_counter()
    result = check_node("127.0.0.1", port=closed_port(), connect_timeout=3, run_timeout=10)
    assert time.perf_counter() - start < 8
    assert not result.reachable and result.report is None
    assert "Connection refused" in result.error and "nothing listens" in result.error
    assert "sshd" in result.hint
    multi = doctor_nodes([HostEntry("127.0.0.1", 1, 1)], port=closed_port(), connect_timeout=3, run_timeout=10)
    assert multi.failed
    assert "UNREACHABLE" in render_nodes(multi)


def _report(**overrides):
    env = make(**overrides)
    return run_checks(env, facts=facts(env))


def test_comparison_names_the_odd_node():
    reports = {
        "node1": _report(),
        "node2": _report(),
        "node3": _report(driver_version="535.104.05", **with_env(NCCL_SOCKET_IFNAME="ib")),
    }
    cmp = compare_reports(reports)
    keys = {d.key: d for d in cmp.differences}
    assert keys["driver"].odd == ("node3",) and keys["driver"].majority == "550.54.15"
    assert keys["env.NCCL_SOCKET_IFNAME"].values["node1"] == "(unset)"
    assert cmp.odd_members[0] == "node3"
    text = render_comparison(cmp)
    assert "driver: node3=535.104.05 (the others: 550.54.15)" in text
    assert "odd node out: node3" in text


def test_identical_nodes_have_no_difference_and_ties_name_no_one():
    same = compare_reports({"a": _report(), "b": _report()})
    assert same.differences == () and "agree" in render_comparison(same)
    tie = compare_reports({"a": _report(), "b": _report(packages={**make().packages, "torch": "2.4.0"})})
    torch = next(d for d in tie.differences if d.key == "torch")
    assert torch.majority is None and torch.odd == ()


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs an OpenSSH client")
def test_cli_hostfile_reports_unreachable_nodes_as_json(tmp_path, capsys):
    from distdx.cli import main

    hostfile = tmp_path / "hostfile"
    hostfile.write_text("# loopback only\n127.0.0.1 slots=2\n")
    assert main(["doctor", "--hostfile", str(hostfile), "--ssh-port", str(closed_port()), "--ssh-timeout", "3",
                 "--format", "json"]) == 1
    data = __import__("json").loads(capsys.readouterr().out)
    assert data["ok"] is False
    node = data["nodes"][0]
    assert node["host"] == "127.0.0.1" and node["reachable"] is False and "Connection refused" in node["error"]
