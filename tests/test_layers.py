"""The package import graph: each subpackage imports only from layers below its own, so there are no
cycles between subpackages and no lower layer reaches up (the base modules stay free of everything)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "distdx"
LAYERS = {  # a package may import from packages of a lower number only
    "errors": 0, "__version__": 0,
    "jsonio": 1, "yamlio": 1, "events": 1, "paths": 1,
    "knowledge": 2, "logs": 2,
    "diagnose": 3,
    "report": 4, "doctor": 5,
    "estimate": 6, "lint": 6, "guard": 6, "lab": 6, "study": 6,
    "runner": 7, "fix": 7,
    "cli": 8, "__main__": 9,
}


def imports() -> set[tuple[str, str, str]]:
    """(importing package, imported package, file) for every `distdx.*` import, at any depth of a file."""
    found = set()
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        source = parts[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "distdx":
                targets = [node.module.split(".")[1]] if "." in node.module else [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name.split(".")[1] for a in node.names if a.name.startswith("distdx.")]
            else:
                continue
            found.update((source, target, str(path.relative_to(SRC))) for target in targets if target != source)
    return found


def test_every_package_has_a_layer():
    packages = {p.name if p.is_dir() else p.stem for p in SRC.iterdir()
                if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.stem != "__init__")}
    assert packages - set(LAYERS) == set(), "give a new package its layer here"


def test_no_package_imports_its_own_layer_or_above():
    upward = sorted(f"{file}: {source} (layer {LAYERS[source]}) imports {target} (layer {LAYERS.get(target)})"
                    for source, target, file in imports() if LAYERS.get(target, 99) >= LAYERS[source])
    assert upward == []


def test_the_guard_and_the_logs_reader_share_one_event_record():
    from distdx.events import GuardEvent
    from distdx.guard import GuardEvent as FromGuard
    from distdx.logs import GuardEvent as FromLogs
    from distdx.logs.lines import guard_event

    assert FromGuard is GuardEvent and FromLogs is GuardEvent
    event = GuardEvent(kind="hang", message="m", rank=1, step=4, time=2.5, reporter=0, fields={"lagging": [1]})
    import json

    read = guard_event(json.dumps(event.to_dict()))
    assert read == event and hash(read) == hash(event)
