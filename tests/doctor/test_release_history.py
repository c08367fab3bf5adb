"""Knowledge from release history: the API of packages read from their PyPI wheels (transformers), and the
messages a framework's later releases removed, from extraction (scripts/compat_from_mirrors.py) to the
version set they give."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from packaging.version import Version

from distdx.doctor.versionsets import Message, api_clauses, api_history, message_clauses, version_set

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
mirrors = importlib.import_module("compat_from_mirrors")

SOURCE = '''
import logging, warnings
logger = logging.getLogger(__name__)

class Engine:
    def __init__(self, module, size):
        if not isinstance(module, Module):
            raise ValueError(f"model must be a torch.nn.Module, got {type(module)}")
        assert size % 2 == 0, "tensor parallel size must divide the number of attention heads"
        logger.warning("Skipping step %d: the loss scale %s overflowed in fp16 mixed precision training", 3, 2)
        warnings.warn("the " + str(module) + " argument is deprecated and will be removed soon")
        raise RuntimeError("invalid value")  # too short to name a code path
        HELP = "this string is assigned, never raised or logged by the engine"
'''


def _history(package: str):
    return next(h for h in api_history() if h.package == package)


def test_messages_are_the_specific_raised_asserted_and_logged_strings():
    found = mirrors.source_messages(SOURCE)
    assert ("model must be a torch.nn.Module, got ",) in found
    assert ("tensor parallel size must divide the number of attention heads",) in found
    assert ("Skipping step ", ": the loss scale ", " overflowed in fp16 mixed precision training") in found
    assert ("the ", " argument is deprecated and will be removed soon") in found
    assert not any("invalid value" in p for m in found for p in m)
    assert not any("assigned" in p for m in found for p in m)
    assert mirrors.source_messages("def broken(:\n") == set()


def test_removed_messages_keep_only_what_the_last_release_lost():
    old = ("the optimizer state was offloaded to the cpu device",)
    kept = ("gradient accumulation steps must be a positive integer",)
    reworded = ("checkpoint tag was not found in the folder given",)
    releases = [{old, kept, reworded}, {old, kept, reworded},
                {kept, ("the checkpoint tag was not found in the folder given; pass tag=",)}]
    assert mirrors.removed_messages(releases) == [[list(old), [[0, 1]]]]


def test_message_matches_its_literal_parts_in_order():
    msg = Message(("Skipping step ", ": the loss scale ", " overflowed in fp16 training"), ((0, 3),))
    assert msg.occurs_in("[rank0] Skipping step 120: the loss scale 65536.0 overflowed in fp16 training")
    # its longest part alone, or the parts in another order, are not the message
    assert not msg.occurs_in("the loss scale overflowed in fp16 training")
    assert not msg.occurs_in(" overflowed in fp16 training: the loss scale 2.0 Skipping step 3")
    assert not msg.occurs_in("")


def test_transformers_history_from_wheels():
    h = _history("transformers")
    assert "PyPI wheels" in h.source and Version(h.releases[-1]) >= Version("4.57")
    # OPT came with transformers 4.19.0
    (clause,) = api_clauses("AttributeError: module 'transformers.models' has no attribute 'opt'")["transformers"]
    assert clause.contains(Version("4.19.0")) and clause.contains(Version("4.21.1"))
    assert not clause.contains(Version("4.18.0"))
    vs = version_set(["transformers"], evidence="ModuleNotFoundError: No module named 'transformers.models.opt'")
    assert vs.pin("transformers").contains("4.19.0") and not vs.pin("transformers").contains("4.18.0")
    # the models package came with 4.0.0; a module every release has constrains nothing
    (clause,) = api_clauses("No module named 'transformers.models'")["transformers"]
    assert clause.alternatives == (">=4.0.0",)
    assert "transformers" not in api_clauses("No module named 'transformers.modeling_utils'")
    # a class a later release removed: the releases that had it
    (clause,) = api_clauses("ImportError: cannot import name 'LlamaFlashAttention2' from "
                            "'transformers.models.llama.modeling_llama'")["transformers"]
    assert clause.contains(Version("4.34.0")) and clause.contains(Version("4.47.0"))
    assert not clause.contains(Version("4.33.0")) and not clause.contains(Version("4.48.0"))
    # the root re-exports every model class: Llama came with 4.28.0
    (clause,) = api_clauses("ImportError: cannot import name 'LlamaForCausalLM' from 'transformers' "
                            "(/usr/lib/python3/site-packages/transformers/__init__.py)")["transformers"]
    assert clause.contains(Version("4.28.0")) and not clause.contains(Version("4.27.0"))
    assert api_clauses("ImportError: cannot import name 'NoSuchModelAnywhere' from 'transformers'") == {}


def test_real_removed_message_gives_evidence_not_a_requirement():
    # DeepSpeed's inference engine raised this for a non-Module model from v0.5.6 to v0.16.2
    h = _history("deepspeed")
    log = ('  File "/usr/lib/python3.9/site-packages/deepspeed/inference/engine.py", line 52, in __init__\n'
           "ValueError: model must be a torch.nn.Module, got <class 'diffusers.StableDiffusionPipeline'>")
    (clause,) = message_clauses(log)["deepspeed"]
    assert clause.kind == "changes" and clause.code == "MSG-deepspeed"
    assert clause.alternatives == (">0.16.2",) and "0.16.2" in clause.reason
    assert h.releases[h.releases.index("0.16.2") + 1] in clause.reason
    # reported apart from the pins, and kept out of them unless asked (it named a later release than the
    # fix the resolutions name: benchmarks/bench_versionsets.py)
    vs = version_set(["deepspeed"], evidence=log)
    assert vs.pin("deepspeed") is None and vs.changes["deepspeed"] == (clause,)
    assert "# evidence, not a requirement (not applied): deepspeed>0.16.2" in vs.constraints
    assert vs.to_dict()["changes"]["deepspeed"][0]["kind"] == "changes"
    applied = version_set(["deepspeed"], evidence=log, apply_changes=True)
    assert applied.pin("deepspeed").contains("0.16.3") and not applied.pin("deepspeed").contains("0.16.2")
    assert "(evidence, not a requirement)" in applied.constraints and "(not applied)" not in applied.constraints
    # what the installed version already is past cannot have printed it: no evidence
    assert version_set(["torch"], installed={"deepspeed": "0.17.0"}, evidence=log).changes == {}
    assert "deepspeed" in version_set(["torch"], installed={"deepspeed": "0.7.3"}, evidence=log).changes


def test_near_miss_messages_give_nothing():
    for text in ("deepspeed: ValueError: module must be a torch.nn.Module",
                 "deepspeed: model must be a torch.nn.Module",  # the part ends with ", got"
                 "deepspeed: RuntimeError: invalid value",
                 # the message, but nothing in the text shows DeepSpeed: another project's copy
                 "ValueError: model must be a torch.nn.Module, got <class 'Pipeline'>"):
        assert message_clauses(text) == {}, text


def test_every_kept_message_is_specific():
    for h in api_history():
        assert all(mirrors.specific(m.parts) for m in h.messages), h.package
        assert all(m.releases and m.releases[-1][1] < len(h.releases) - 1 for m in h.messages), h.package


def test_a_wheel_is_read_like_a_release_tag(tmp_path):
    import zipfile

    wheels = importlib.import_module("api_from_wheels")
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pkg/__init__.py", "from .core import Engine\n")
        z.writestr("pkg/core.py", SOURCE + "\ndef helper():\n    pass\n")
        z.writestr("pkg-1.0.dist-info/METADATA", "Name: pkg\n")
        z.writestr("other/mod.py", "def not_ours():\n    raise ValueError('a message of some other package, not ours')\n")
    release = wheels.wheel_release(wheel, "pkg")
    assert release["modules"] == ["pkg", "pkg.core"]
    names = {tuple(n) for n in release["names"]}
    assert {("pkg", "Engine"), ("pkg.core", "Engine"), ("pkg.core", "helper"), ("pkg.core", "logger")} <= names
    assert ("pkg.core", "Engine.__init__") not in names and not any(m == "other.mod" for m, _ in names)
    assert ("model must be a torch.nn.Module, got ",) in release["messages"]
    assert not any("other package" in p for m in release["messages"] for p in m)


def _serve_with_ranges(folder: Path):
    """A local HTTP server over ``folder`` that answers Range requests (206), as the package index does."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            data = (folder / self.path.lstrip("/")).read_bytes()
            rng = self.headers.get("Range")
            if rng:
                start, end = (int(x) for x in rng.removeprefix("bytes=").split("-"))
                data, status = data[start:end + 1], 206
            else:
                status = 200
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.server.requests.append(rng)

        def log_message(self, *args):  # noqa: ANN002
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.requests = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_requirements_read_from_a_remote_wheel_by_range_requests(tmp_path):
    import os
    import zipfile

    reader = importlib.import_module("requires_from_wheels")
    wheel = tmp_path / "eng-0.3.3-cp310-cp310-manylinux1_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("eng/_kernels.so", os.urandom(3 << 20))  # the compiled part, never fetched
        z.writestr("eng-0.3.3.dist-info/METADATA", "Metadata-Version: 2.1\nName: eng\nRequires-Dist: torch ==2.1.2\n"
                   "Requires-Dist: xformers ==0.0.23.post1\nRequires-Dist: pytest ; extra == 'test'\n")
    server = _serve_with_ranges(tmp_path)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{wheel.name}"
        lines = reader.requires_dist(url, wheel.stat().st_size)
    finally:
        server.shutdown()
    assert lines == ["torch ==2.1.2", "xformers ==0.0.23.post1", "pytest ; extra == 'test'"]
    assert all(r and r.startswith("bytes=") for r in server.requests)  # only ranges, never the whole wheel
    fetched = sum(int(b) - int(a) + 1 for a, b in (r.removeprefix("bytes=").split("-") for r in server.requests))
    assert fetched < wheel.stat().st_size / 10
    # the extra's requirement is not one
    assert mirrors.watched(lines) == {"torch": "==2.1.2", "xformers": "==0.0.23.post1"}


def test_consecutive_releases_with_one_requirement_are_one_rule():
    table = [(Version(v), v, deps) for v, deps in (("0.3.3", {"torch": "==2.1.2"}), ("0.4.0", {"torch": "==2.1.2"}),
                                                    ("0.4.1", {"torch": "==2.2.1"}), ("0.4.2", {}))]
    rules = mirrors.rules_from_table("eng", table, "PyPI eng wheel METADATA of")
    assert rules == [
        {"when": {"eng": ">=0.3.3,<0.4.1"}, "requires": {"torch": "==2.1.2"}, "source": "PyPI eng wheel METADATA of 0.3.3..0.4.0"},
        {"when": {"eng": ">=0.4.1,<0.4.2"}, "requires": {"torch": "==2.2.1"}, "source": "PyPI eng wheel METADATA of 0.4.1"}]
