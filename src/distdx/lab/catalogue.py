"""The scenario catalogue: ``scenarios.yaml`` loaded into typed, validated :class:`Scenario` records.

A scenario is data: which program to run under torchrun, with how many ranks, which launcher
arguments and environment, what must happen (a non-zero exit and log lines that prove the fault
fired), the taxonomy labels of the failure it reproduces, and what a correct diagnosis says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from distdx.errors import DistdxError
from distdx.knowledge.catalogue import catalogue_error, entries, fix_steps, taxonomy_target, words
from distdx.knowledge.taxonomy import DIMENSIONS, taxonomy

CATALOGUE_VERSION = 1
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
# Fixtures a scenario can ask the runner to prepare around the launch.
SETUPS = ("none", "occupy-master-port")
# Placeholders the runner fills in launcher arguments.
PLACEHOLDERS = ("{port}", "{port2}", "{scenarios}")
MIN_WORLD, MAX_WORLD = 2, 4
MAX_NODES = 2
MAX_TIMEOUT_S = 120


@dataclass(frozen=True)
class Scenario:
    """One fault-injection scenario: a small real program and the failure it must produce."""

    name: str
    """Stable, kebab-case: what `distdx lab run NAME` takes."""
    title: str
    program: str
    """File name under ``distdx/lab/scenarios/``; a plain torch.distributed script, no distdx inside."""
    labels: dict[str, str]
    """stage, symptom, root_cause, fix_pattern: taxonomy IDs, as the study would label this failure."""
    world_size: int
    """Ranks in all: ``--nproc-per-node`` is ``world_size / nodes``."""
    timeout_s: float
    """Bound on the whole launch; the program's own collective timeout (``LAB_TIMEOUT_S``) is shorter."""
    expect_log: tuple[str, ...]
    """Regexes that must all occur in the combined log: they prove the fault fired as designed."""
    diagnosis: str
    """What a correct diagnosis of this run must say."""
    fix: tuple[str, ...]
    launcher_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    setup: str = "none"
    fault: str = ""
    """Where and when the fault is injected, for people."""
    fault_rank: int | None = None
    """The rank that deviates (skips, stalls, dies, differs), when one does: what a detector must name."""
    fault_step: int | None = None
    """The training step (0-based) at which the fault fires, when there is a step loop."""
    requires: tuple[str, ...] = ("torch",)
    """Python packages the program imports, checked before the run (``requires: [torch, deepspeed]``)."""
    config: str = ""
    """A config file under ``scenarios/configs/`` the program reads: the runner copies it into the run's work
    directory and names the copy in ``LAB_CONFIG`` (unless the caller's environment names another file), so a
    repaired copy can be run in its place."""
    nodes: int = 1
    """Nodes the job spans. Two nodes are two torchrun agents on this machine (``--nnodes 2``, c10d
    rendezvous on 127.0.0.1), each with its own environment; their outputs are merged into the
    combined log as a multi-node launcher does, each line prefixed with ``node0: `` or ``node1: ``."""
    node_env: tuple[dict[str, str], ...] = ()
    """Per node, environment added to ``env`` (one mapping per node, or none)."""
    node_args: tuple[tuple[str, ...], ...] = ()
    """Per node, torchrun arguments added after the runner's own (one list per node, or none)."""
    absent_nodes: tuple[int, ...] = ()
    """Nodes that are never started (a node that never arrives)."""
    fault_node: int | None = None
    """The node at fault, when one is: what a diagnosis of the combined log must name."""

    @property
    def procs_per_node(self) -> int:
        return self.world_size // self.nodes

    @property
    def symptom(self) -> str:
        return self.labels["symptom"]

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "title": self.title,
            "stage": self.labels["stage"],
            "symptom": self.labels["symptom"],
            "root_cause": self.labels["root_cause"],
            "fix_pattern": self.labels["fix_pattern"],
            "world_size": self.world_size,
            "timeout_s": self.timeout_s,
            "program": self.program,
            "launcher_args": list(self.launcher_args),
            "env": dict(self.env),
            "setup": self.setup,
            "fault": self.fault,
            "fault_rank": self.fault_rank,
            "fault_step": self.fault_step,
            "requires": list(self.requires),
            "config": self.config,
            "nodes": self.nodes,
            "node_env": [dict(e) for e in self.node_env],
            "node_args": [list(a) for a in self.node_args],
            "absent_nodes": list(self.absent_nodes),
            "fault_node": self.fault_node,
            "expect_log": list(self.expect_log),
            "diagnosis": self.diagnosis,
            "fix": list(self.fix),
        }


def scenario_from_dict(data: dict[str, object], programs: set[str] | None = None) -> Scenario:
    """The inverse of :meth:`Scenario.to_dict` (validated like the catalogue)."""
    spec = dict(data)
    spec["labels"] = {dim: spec.pop(dim, None) for dim in DIMENSIONS}
    return _parse_scenario(spec, programs if programs is not None else _programs())


DATA_FILE = "src/distdx/lab/scenarios.yaml"


def _fail(name: str, what: str) -> DistdxError:
    return catalogue_error("DX-LAB-001", DATA_FILE, name, what)


def _strings(name: str, value: object, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise _fail(name, f"{key} must be a list of strings")
    return tuple(str(v) for v in value)


def _labels(name: str, raw: object) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise _fail(name, "labels must map stage/symptom/root_cause/fix_pattern to taxonomy IDs")
    tax = taxonomy()
    labels = {dim: taxonomy_target(raw.get(dim, ""), dim, code="DX-LAB-001", data_file=DATA_FILE, entry=name,
                                   key=f"labels.{dim}") for dim in DIMENSIONS}
    for dim in ("symptom", "root_cause"):
        if tax.nodes[labels[dim]].stage != labels["stage"]:
            raise _fail(name, f"labels.{dim} {labels[dim]} is not under stage {labels['stage']}")
    return labels


def _parse_scenario(spec: object, programs: set[str]) -> Scenario:
    if not isinstance(spec, dict):
        raise _fail("", "each scenario is a mapping")
    name = str(spec.get("name", ""))
    if not NAME_RE.match(name):
        raise _fail(name, "name must be kebab-case, e.g. collective-shape-mismatch")
    for key in ("title", "program", "labels", "world_size", "timeout_s", "expect_log", "diagnosis", "fix"):
        if spec.get(key) in (None, "", []):
            raise _fail(name, f"missing {key}")
    program = str(spec["program"])
    if program not in programs:
        raise _fail(name, f"program {program!r} is not a file in distdx/lab/scenarios/")
    world = spec["world_size"]
    if not isinstance(world, int) or not MIN_WORLD <= world <= MAX_WORLD:
        raise _fail(name, f"world_size must be an integer from {MIN_WORLD} to {MAX_WORLD}")
    timeout = spec["timeout_s"]
    if not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT_S:
        raise _fail(name, f"timeout_s must be in (0, {MAX_TIMEOUT_S}]")
    setup = str(spec.get("setup", "none"))
    if setup not in SETUPS:
        raise _fail(name, f"setup must be one of {SETUPS}")
    env = spec.get("env") or {}
    if not isinstance(env, dict):
        raise _fail(name, "env must be a mapping of variable names to values")
    expect = _strings(name, spec["expect_log"], "expect_log")
    for pattern in expect:
        try:
            re.compile(pattern)
        except re.error as e:
            raise _fail(name, f"expect_log regex {pattern!r} does not compile: {e}") from None
    fault_rank, fault_step = spec.get("fault_rank"), spec.get("fault_step")
    if fault_rank is not None and (not isinstance(fault_rank, int) or not 0 <= fault_rank < world):
        raise _fail(name, f"fault_rank must be a rank of the job (0..{world - 1})")
    if fault_step is not None and (not isinstance(fault_step, int) or fault_step < 0):
        raise _fail(name, "fault_step must be a step number >= 0")
    nodes = spec.get("nodes", 1)
    if not isinstance(nodes, int) or not 1 <= nodes <= MAX_NODES or world % nodes:
        raise _fail(name, f"nodes must be 1..{MAX_NODES} and divide world_size")
    node_env = spec.get("node_env") or []
    if not isinstance(node_env, list) or len(node_env) not in (0, nodes) or not all(isinstance(e, dict) for e in node_env):
        raise _fail(name, "node_env must be a list of one mapping per node")
    node_args = spec.get("node_args") or []
    if not isinstance(node_args, list) or len(node_args) not in (0, nodes):
        raise _fail(name, "node_args must be a list of one argument list per node")
    absent = spec.get("absent_nodes") or []
    if not isinstance(absent, list) or not all(isinstance(n, int) and 0 < n < nodes for n in absent):
        raise _fail(name, "absent_nodes must list nodes other than node 0 (the rendezvous host)")
    fault_node = spec.get("fault_node")
    if fault_node is not None and (not isinstance(fault_node, int) or not 0 <= fault_node < nodes):
        raise _fail(name, f"fault_node must be a node of the job (0..{nodes - 1})")
    config = str(spec.get("config") or "")
    if config and not resources.files("distdx.lab").joinpath("scenarios", "configs", config).is_file():
        raise _fail(name, f"config {config!r} is not a file in distdx/lab/scenarios/configs/")
    return Scenario(
        name=name,
        title=str(spec["title"]),
        program=program,
        labels=_labels(name, spec["labels"]),
        world_size=world,
        timeout_s=float(timeout),
        expect_log=expect,
        diagnosis=words(spec["diagnosis"]),
        fix=fix_steps(spec["fix"]),
        launcher_args=_strings(name, spec.get("launcher_args"), "launcher_args"),
        env={str(k): str(v) for k, v in env.items()},
        setup=setup,
        fault=words(spec.get("fault", "")),
        fault_rank=fault_rank,
        fault_step=fault_step,
        requires=_strings(name, spec.get("requires"), "requires") or ("torch",),
        config=config,
        nodes=nodes,
        node_env=tuple({str(k): str(v) for k, v in e.items()} for e in node_env),
        node_args=tuple(_strings(name, a, "node_args") for a in node_args),
        absent_nodes=tuple(absent),
        fault_node=fault_node,
    )


def config_path(scenario: Scenario) -> str | None:
    """The absolute path of the config file a scenario ships, or None when it has none."""
    if not scenario.config:
        return None
    return str(resources.files("distdx.lab").joinpath("scenarios", "configs", scenario.config))


def program_path(scenario: Scenario) -> str:
    """The absolute path of a scenario's program, ready to hand to torchrun."""
    return str(resources.files("distdx.lab").joinpath("scenarios", scenario.program))


def parse_catalogue(text: str, programs: set[str]) -> tuple[Scenario, ...]:
    specs = entries(text, "scenarios", code="DX-LAB-001", data_file=DATA_FILE, version=CATALOGUE_VERSION)
    scenarios = tuple(_parse_scenario(spec, programs) for spec in specs)
    seen: set[str] = set()
    for s in scenarios:
        if s.name in seen:
            raise _fail(s.name, "name used twice")
        seen.add(s.name)
    return scenarios


def _programs() -> set[str]:
    folder = resources.files("distdx.lab").joinpath("scenarios")
    return {e.name for e in folder.iterdir() if e.name.endswith(".py") and not e.name.startswith("_")}


@lru_cache(maxsize=1)
def load_scenarios() -> tuple[Scenario, ...]:
    """The bundled catalogue, in file order."""
    text = resources.files("distdx.lab").joinpath("scenarios.yaml").read_text(encoding="utf-8")
    return parse_catalogue(text, _programs())


def get_scenario(name: str) -> Scenario:
    scenarios = load_scenarios()
    for s in scenarios:
        if s.name == name:
            return s
    raise DistdxError(
        "DX-LAB-002",
        f"no lab scenario named {name!r}",
        why="`distdx lab run` takes one of the names in the catalogue",
        hint="run `distdx lab list` to see them; known: " + ", ".join(s.name for s in scenarios),
    )
