"""Hostfiles in the DeepSpeed/pdsh and MPI forms parse; bad lines name line, column and what."""

import pytest

from distdx.doctor.hostfile import HostEntry, parse_hostfile
from distdx.errors import DistdxError

DEEPSPEED = """# two nodes, 8 GPUs each
worker-1 slots=8
worker-2 slots=8   # trailing comment

"""


def test_deepspeed_hostfile():
    assert parse_hostfile(DEEPSPEED, "hostfile") == [HostEntry("worker-1", 8, 2), HostEntry("worker-2", 8, 3)]
    assert parse_hostfile(DEEPSPEED, "hostfile", dialect="deepspeed")[1].slots == 8


def test_mpi_forms():
    text = "node1 slots=2 max_slots=4\nnode2:4\nnode3\n10.0.0.7 max-slots=2 slots=1\n"
    entries = parse_hostfile(text, "mpi.hosts")
    assert [(e.host, e.slots, e.max_slots, e.line) for e in entries] == [
        ("node1", 2, 4, 1), ("node2", 4, None, 2), ("node3", 1, None, 3), ("10.0.0.7", 1, 2, 4)]


@pytest.mark.parametrize("text,dialect,where,what", [
    ("worker-1 slots=8\nworker-2 slots=eight\n", "any", "h:2:16", "slots must be a whole number"),
    ("worker-1 slots=0\n", "any", "h:1:16", ">= 1"),
    ("worker-1 gpus=8\n", "any", "h:1:10", "unexpected 'gpus=8'"),
    ("worker-1 slots=8\nworker-1 slots=8\n", "any", "h:2:1", "listed again (first on line 1)"),
    ("worker-1\n", "deepspeed", "h:1:9", "no `slots=N`"),
    ("worker-1:8\n", "deepspeed", "h:1:9", "MPICH"),
    ("worker-1 slots=2 max_slots=4\n", "deepspeed", "h:1:18", "max_slots"),
    ("node1 slots=4 max_slots=2\n", "any", "h:1:1", "below slots"),
    ("wor'ker slots=1\n", "any", "h:1:4", "bad host name"),
    ("node:x\n", "any", "h:1:6", "slot count"),
    ("# only comments\n\n", "any", "h:1:1", "no hosts"),
    ("\x00\x01binary", "any", "h:1:1", "NUL bytes"),
    ("node1 slots=\u00b2\n", "any", "h:1:13", "whole number"),
    ("node1 slots=99999999999999999999\n", "any", "h:1:13", "whole number"),
    ("-oProxyCommand slots=1\n", "any", "h:1:1", "starts with `-`"),
    ("-v\n", "any", "h:1:1", "starts with `-`"),
])
def test_bad_lines_are_located(text, dialect, where, what):
    with pytest.raises(DistdxError) as e:
        parse_hostfile(text, "h", dialect=dialect)
    assert e.value.code == "DX-HOSTFILE-001"
    assert e.value.message.startswith(where + ": "), e.value.message
    assert what in e.value.message
    assert e.value.hint


def test_unknown_dialect():
    with pytest.raises(DistdxError, match="dialect"):
        parse_hostfile("a slots=1", "h", dialect="slurm")
