"""Regenerate ``src/distdx/doctor/compat_releases.yaml``, what each release of a framework declares it
needs (its own requirement files at every release tag of its git repository), and
``api_history.json.gz``, which releases have each of its modules, public names and methods, and which
messages (raised, asserted, logged) its later releases no longer have; packages without a mirror
(transformers) are read from their PyPI wheels by ``scripts/api_from_wheels.py``, and what the releases of
vLLM, SGLang and sgl-kernel require from their wheels' METADATA by ``scripts/requires_from_wheels.py``
(range requests, no download).

    python scripts/compat_from_mirrors.py --mirror DIR --out src/distdx/doctor [--wheel-cache DIR]

DIR holds bare clones named ``owner+name/repo`` (deepspeedai+DeepSpeed, hpcaitech+ColossalAI,
NVIDIA+Megatron-LM, hiyouga+LlamaFactory, modelscope+ms-swift). Only final releases are read (no rc,
alpha, beta tags). Consecutive releases that declare the same specifier on a dependency become one
rule, so the file stays small and every rule names the tags it was read from.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Iterable

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

# package name on PyPI, mirror folder, tag prefix, files holding its requirements, its import root
PROJECTS = (
    ("deepspeed", "deepspeedai+DeepSpeed", "v", ("requirements/requirements.txt", "setup.py"), "deepspeed"),
    ("colossalai", "hpcaitech+ColossalAI", "v", ("requirements/requirements.txt", "setup.py"), "colossalai"),
    ("megatron-core", "NVIDIA+Megatron-LM", "core_v",
     ("megatron/core/requirements.txt", "pyproject.toml", "setup.py"), "megatron/core"),
    ("llamafactory", "hiyouga+LlamaFactory", "v", ("requirements.txt", "pyproject.toml", "setup.py"), None),
    ("ms-swift", "modelscope+ms-swift", "v", ("requirements/framework.txt", "requirements/megatron.txt", "setup.py"),
     None),
    ("accelerate", "huggingface+accelerate", "v", ("setup.py", "pyproject.toml"), "src/accelerate"),
    ("peft", "huggingface+peft", "v", ("requirements.txt", "setup.py", "pyproject.toml"), "src/peft"),
    ("trl", "huggingface+trl", "v", ("requirements.txt", "setup.py", "setup.cfg", "pyproject.toml"), "trl"),
    ("xformers", "facebookresearch+xformers", "v", ("requirements.txt", "setup.py", "pyproject.toml"), None),
    ("transformer-engine", "NVIDIA+TransformerEngine", "v",
     ("build_tools/pytorch.py", "transformer_engine/pytorch/setup.py", "setup.py", "pyproject.toml"),
     "transformer_engine"),
    ("flash-attn", "Dao-AILab+flash-attention", "v", ("setup.py", "pyproject.toml"), "flash_attn"),
    ("bitsandbytes", "bitsandbytes-foundation+bitsandbytes", "", ("requirements.txt", "setup.py", "pyproject.toml"),
     "bitsandbytes"),
)
# the dependencies a version set is asked about; others (tqdm, rich...) are left out
WATCHED = {"torch", "transformers", "accelerate", "peft", "deepspeed", "numpy", "pydantic", "flash-attn", "vllm",
           "trl", "datasets", "megatron-core", "transformer-engine", "triton", "bitsandbytes", "xformers",
           "python", "sgl-kernel", "flashinfer-python"}
_PYTHON_REQUIRES = re.compile(r"python_requires\s*=\s*['\"]([^'\"]+)['\"]")
_QUOTED = re.compile(r"['\"]([A-Za-z][A-Za-z0-9_.\-]*\s*[<>=!~][^'\"]*)['\"]")



def release_ranges(idx: list[int], last: int) -> list[list[int]] | None:
    """Sorted release indexes as [first, last] runs; None when they are every release 0..last."""
    if idx[0] == 0 and idx[-1] == last and len(idx) == last + 1:
        return None
    out: list[list[int]] = []
    for i in idx:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out

def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _git(repo: Path, *args: str) -> str | None:
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def _requirement_lines(path: str, text: str) -> list[str]:
    if path.endswith(".toml"):
        try:
            project = tomllib.loads(text).get("project", {})
        except tomllib.TOMLDecodeError:
            return []
        lines = [str(x) for x in project.get("dependencies", [])]
        if project.get("requires-python"):
            lines.append(f"python{project['requires-python']}")
        return lines
    if path.endswith("setup.py"):
        lines = [f"python{m.group(1)}" for m in _PYTHON_REQUIRES.finditer(text)]
        return lines + [m.group(1) for m in _QUOTED.finditer(_install_requires(text))]
    if path.endswith(".py"):  # a build helper whose function returns the requirement list
        return [m.group(1) for m in _QUOTED.finditer(text)]
    if path.endswith(".cfg"):
        block = re.search(r"install_requires\s*=\s*\n((?:[ \t]+\S.*\n)+)", text)
        return [ln.strip() for ln in block.group(1).splitlines()] if block else []
    return [ln.split("#", 1)[0].strip() for ln in text.splitlines()]


def _bracketed(text: str, at: int) -> str:
    """The text of the [...] list opening at ``text[at]``."""
    depth = 0
    for i in range(at, len(text)):
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if depth == 0:
            return text[at:i + 1]
    return ""


def _install_requires(setup_py: str) -> str:
    """The install_requires list of a setup.py, literal or through the name it is assigned to (extras
    are left out: they are not requirements)."""
    m = re.search(r"install_requires\s*=\s*(\[|[A-Za-z_]\w*)", setup_py)
    if not m:
        return ""
    if m.group(1) == "[":
        return _bracketed(setup_py, m.start(1))
    assigned = re.search(rf"^{re.escape(m.group(1))}\s*=\s*\[", setup_py, re.M)
    return _bracketed(setup_py, assigned.end() - 1) if assigned else ""


def watched(lines: Iterable[str], found: dict[str, str] | None = None) -> dict[str, str]:
    """dependency -> specifier of the watched dependencies ``lines`` declare (the first that names one wins;
    those only an extra asks for are not requirements)."""
    found = {} if found is None else found
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        name = _norm(req.name)
        if name in WATCHED and req.specifier and (req.marker is None or "extra" not in str(req.marker)):
            found.setdefault(name, str(req.specifier))
    return found


def declared(repo: Path, tag: str, files: tuple[str, ...]) -> dict[str, str]:
    """dependency -> specifier the release at ``tag`` declares (the first file that names it wins)."""
    found: dict[str, str] = {}
    for path in files:
        text = _git(repo, "show", f"{tag}:{path}")
        if text is not None:
            watched(_requirement_lines(path, text), found)
    return found


def releases(repo: Path, prefix: str) -> list[tuple[Version, str]]:
    out = []
    for tag in (_git(repo, "tag") or "").split():
        if not tag.startswith(prefix):
            continue
        try:
            v = Version(tag[len(prefix):])
        except InvalidVersion:
            continue
        # a tag that is not written as its version ("v0.03") would sort somewhere it does not belong
        if not v.is_prerelease and str(v) == tag[len(prefix):]:
            out.append((v, tag))
    return sorted(out)


def rules_for(package: str, repo: Path, prefix: str, files: tuple[str, ...]) -> list[dict]:
    tagged = releases(repo, prefix)
    table = [(v, tag, declared(repo, tag, files)) for v, tag in tagged]
    repo_name = repo.parent.name.replace("+", "/")
    return rules_from_table(package, table, f"{repo_name} {' '.join(files)} at"), [str(v) for v, _ in tagged]


def rules_from_table(package: str, table: list[tuple[Version, str, dict[str, str]]], source: str) -> list[dict]:
    """One rule per run of consecutive releases that declare the same specifier for a dependency.
    ``table``: (version, its tag or label, what it declares), oldest first; ``source`` is followed by the
    tags of the run."""
    rules = []
    for dep in sorted({d for _, _, deps in table for d in deps}):
        i = 0
        while i < len(table):
            spec = table[i][2].get(dep)
            j = i
            while j + 1 < len(table) and table[j + 1][2].get(dep) == spec:
                j += 1
            if spec:
                first, last = table[i], table[j]
                when = f">={first[0]},<{table[j + 1][0]}" if j + 1 < len(table) else f">={first[0]},<={last[0]}"
                tags = first[1] if i == j else f"{first[1]}..{last[1]}"
                rules.append({"when": {package: when}, "requires": {dep: spec}, "source": f"{source} {tags}"})
            i = j + 1
    return rules


_DEFINES = re.compile(r"^(?:(?:async\s+)?def|class)\s+([A-Za-z]\w*)|^([A-Za-z]\w*)\s*(?::[^=]*)?=(?!=)"
                      r"|^from\s+\S+\s+import\s+([A-Za-z][\w, ]*)$")


_METHOD = re.compile(r"^    (?:async\s+)?def\s+([A-Za-z]\w*)")


def _module(path: str, root: str) -> str:
    top = root.rsplit("/", 1)[0] + "/" if "/" in root and root.startswith("src/") else ""
    return path[len(top):-3].replace("/", ".").removesuffix(".__init__")


# the lines that define a public name: top-level def/class/assignment/single-line re-export, and a method
API_LINE = (r"^((async )?def |class |[A-Za-z]\w*\s*(:[^=]*)?=[^=]|from \S+ import [A-Za-z]"
            r"|    (async )?def [A-Za-z])")


def release_api(paths: Iterable[str], lines: Iterable[tuple[str, str]], root: str) \
        -> tuple[set[str], set[tuple[str, str]]]:
    """One release's modules (from its file ``paths`` under ``root``) and public ``(module, name)`` pairs
    (each public top-level name and ``Class.method``), from its ``API_LINE`` lines ``(path, text)`` in file
    order: a method line belongs to the class line above it in the same file."""
    modules = {_module(path, root) for path in paths if path.endswith(".py")}
    names: set[tuple[str, str]] = set()
    in_class: tuple[str, str] | None = None  # (path, class) whose body the next method lines are in
    for path, text in lines:
        method = _METHOD.match(text)
        if method:
            if in_class and in_class[0] == path and not method.group(1).startswith("_"):
                names.add((_module(path, root), f"{in_class[1]}.{method.group(1)}"))
            continue
        m = _DEFINES.match(text)
        in_class = (path, m.group(1)) if m and text.startswith("class ") else None
        if not m:
            continue
        found = [m.group(1) or m.group(2)] if not m.group(3) else [n.strip() for n in m.group(3).split(",")]
        names.update((_module(path, root), n) for n in found if n and not n.startswith("_") and n.isidentifier())
    return modules, names


def history_from_releases(per_release: list[tuple[set[str], set[tuple[str, str]]]]) -> dict:
    """``modules`` and ``names`` of one package's history from each release's :func:`release_api`, as
    index ranges into the release list."""
    modules: dict[str, list[int]] = {}
    names: dict[tuple[str, str], list[int]] = {}
    for i, (mods, pairs) in enumerate(per_release):
        for m in mods:
            modules.setdefault(m, []).append(i)
        for pair in pairs:
            names.setdefault(pair, []).append(i)
    last = len(per_release) - 1

    def ranges(idx: list[int]) -> list[list[int]] | None:
        return release_ranges(idx, last)

    # every module and name is listed, so that "never had it" differs from "always had it": null stands
    # for every release (a module) or the same releases as its parent (a name: its module; a method: its class)
    mods = {m: ranges(idx) for m, idx in sorted(modules.items())}
    by_module: dict[str, dict[str, list[list[int]] | None]] = {}
    for (m, n), idx in sorted(names.items()):
        parent = names.get((m, n.split(".")[0])) if "." in n else modules.get(m)
        by_module.setdefault(m, {})[n] = None if idx == parent else ranges(idx)
    return {"modules": mods, "names": by_module}


def api_history(repo: Path, tagged: list[tuple[Version, str]], root: str) -> dict:
    """Which releases (tags) of a git repository have each module under ``root``, public name and method."""
    per_release = []
    for _, tag in tagged:
        paths = (_git(repo, "ls-tree", "-r", "--name-only", tag, "--", root) or "").split()
        grep = _git(repo, "grep", "-E", API_LINE, tag, "--", f"{root}/*.py") or ""
        lines = (tuple(line.split(":", 2)[1:]) for line in grep.splitlines())
        per_release.append(release_api(paths, lines, root))
    return history_from_releases(per_release)


# Messages: the string literals a release raises, asserts, logs or warns with, as their literal parts (an
# f-string, ``%s`` or ``{}`` placeholder is a hole). Only messages specific enough to identify their code
# path are kept: a literal part of MESSAGE_MIN_PART characters and MESSAGE_MIN_WORDS words (at 24
# characters, torch's "shape '...' is invalid for input of size" copied into Colossal-AI passed).
MESSAGE_MIN_PART, MESSAGE_MIN_WORDS = 30, 4
_REPORTING = re.compile(r"warn|log|info|debug|error|critical|fatal|exception|print", re.I)
_PLACEHOLDER = re.compile(r"%[-#0 +]*\d*(?:\.\d+)?[sdifrxXeEgGc]|\{[^{}]*\}")


def _template(node: ast.AST) -> list[str] | None:
    """The literal parts of a string expression ("" stands for a hole); None when it is no string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        pieces = _PLACEHOLDER.split(node.value)
        return [x for piece in pieces for x in (piece, "")][:-1]
    if isinstance(node, ast.JoinedStr):
        return [v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "" for v in node.values]
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        left = _template(node.left)
        if isinstance(node.op, ast.Mod):
            return left
        right = _template(node.right)
        return None if left is None and right is None else (left or [""]) + (right or [""])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _template(node.func.value)
    return None


def _parts(template: list[str]) -> tuple[str, ...]:
    """Merge literals across empty holes and drop the holes: the literal parts, in order."""
    out, current = [], ""
    for piece in template:
        if piece:
            current += piece
        elif current:
            out.append(current)
            current = ""
    return tuple(p for p in (*out, current) if p.strip())


def specific(parts: tuple[str, ...]) -> bool:
    """Whether a message is specific enough to say which code path printed it."""
    longest = max((p.strip() for p in parts), key=len, default="")
    return len(longest) >= MESSAGE_MIN_PART and len(re.findall(r"[A-Za-z]{2,}", longest)) >= MESSAGE_MIN_WORDS


def source_messages(text: str) -> set[tuple[str, ...]]:
    """The specific messages of one Python source: string arguments of ``raise``, ``assert`` and of
    calls whose name reports (logger.warning, warnings.warn, print_rank_0...)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and node.msg is not None:
            found.append(node.msg)
        elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            found += [*node.exc.args, *(k.value for k in node.exc.keywords)]
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if _REPORTING.search(name or "") and name != "format":
                found += [*node.args, *(k.value for k in node.keywords)]
    out = set()
    for arg in found:
        template = _template(arg)
        if template and specific(parts := _parts(template)):
            out.add(parts)
    return out


def removed_messages(per_release: list[set[tuple[str, ...]]], elsewhere: str = "") -> list[list]:
    """``[parts, ranges]`` of every message some release had and the last release no longer has, unless
    a message of the last release contains it (a log with the newer message would match it too) or
    ``elsewhere`` does (the messages of the other packages: a copied message does not say whose it is)."""
    last = len(per_release) - 1
    current = "\n".join("\x00".join(m) for m in per_release[-1]) if per_release else ""
    where: dict[tuple[str, ...], list[int]] = {}
    for i, messages in enumerate(per_release):
        for m in messages:
            where.setdefault(m, []).append(i)
    out = []
    for m, idx in sorted(where.items()):
        if idx[-1] != last and max(m, key=len) not in current and max(m, key=len) not in elsewhere:
            out.append([list(m), release_ranges(idx, last)])
    return out


def message_history(repo: Path, tagged: list[tuple[Version, str]], root: str) -> list[set[tuple[str, ...]]]:
    """The :func:`source_messages` of each release tag of a git repository (each file version parsed once)."""
    blob_messages: dict[str, set[tuple[str, ...]]] = {}
    per_release = []
    for _, tag in tagged:
        blobs = [line.split()[2] for line in (_git(repo, "ls-tree", "-r", tag, "--", root) or "").splitlines()
                 if line.endswith(".py") and line.split()[1] == "blob"]
        todo = [b for b in blobs if b not in blob_messages]
        if todo:
            out = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch"],
                                 input=("\n".join(todo) + "\n").encode(), capture_output=True).stdout
            at = 0
            for sha in todo:
                header_end = out.index(b"\n", at)
                size = int(out[at:header_end].split()[2])
                text = out[header_end + 1:header_end + 1 + size].decode("utf-8", errors="replace")
                blob_messages[sha] = source_messages(text)
                at = header_end + 1 + size + 1
        per_release.append(set().union(*(blob_messages[b] for b in blobs)))
    return per_release


# Python's own library, from typeshed's stubs: stdlib/VERSIONS gives each module's lifetime and
# `if sys.version_info >= (3, N):` blocks each name's. typeshed drops the conditions of Pythons it no
# longer supports, so an older snapshot (from when it supported 3.6) gives the older facts.
PYTHONS = tuple(f"3.{n}" for n in range(6, 16))
TYPESHED_OLD = "96e0660fba564d574d9bc69b6b151400d00c7f0a"  # typeshed on 2021-07-01 (3.6 supported)
_VERSION_IF = re.compile(r"^(?:if|elif) sys\.version_info (>=|<) \(3, (\d+)\):")
_STUB_NAME = re.compile(r"^    (?:(?:async\s+)?def|class)\s+([A-Za-z]\w*)|^    ([A-Za-z]\w*)\s*[:=]")
_TOP_NAME = re.compile(r"^(?:(?:async\s+)?def|class)\s+([A-Za-z]\w*)|^([A-Za-z]\w*)\s*[:=]")


def _minor_range(lo: int, hi: int) -> list[int]:
    """Indices into PYTHONS for 3.lo .. 3.hi (clipped to the Pythons listed)."""
    return [i for i, v in enumerate(PYTHONS) if lo <= int(v.split(".")[1]) <= hi]


def _stub_names(text: str) -> dict[str, tuple[int, int]]:
    """name -> (first minor, last minor) it exists in, for the top-level names of one stub; a name
    also defined unconditionally (or in both branches) exists in every version."""
    spans: dict[str, set[tuple[int, int]]] = {}
    cond: tuple[int, int] | None = None
    chain: list[tuple[int, int]] = []  # the conditions of the current if/elif chain
    for line in text.splitlines():
        m = _VERSION_IF.match(line)
        if m:
            n = int(m.group(2))
            new = (n, 99) if m.group(1) == ">=" else (0, n - 1)
            if line.startswith("elif") and chain:
                # an elif holds only where the branches above did not
                new = (new[0], min([new[1]] + [lo - 1 for lo, hi in chain if hi == 99]))
                chain.append(new)
            else:
                chain = [new]
            cond = new
            continue
        if line.startswith("elif"):  # some other condition (platform): its names are not version facts
            cond, chain = None, []
            continue
        if line.startswith("else:") and chain:
            # what no branch above covered: below the lowest ">=" bound, or above a lone "<" bound
            cond = (0, min(lo for lo, _ in chain) - 1) if chain[0][1] == 99 else (chain[0][1] + 1, 99)
            chain = []
            continue
        if line and not line.startswith((" ", "#")):
            cond, chain = None, []
            top = _TOP_NAME.match(line)
            if top:
                spans.setdefault(top.group(1) or top.group(2), set()).add((0, 99))
            continue
        inner = _STUB_NAME.match(line)
        if inner and cond is not None:
            spans.setdefault(inner.group(1) or inner.group(2), set()).add(cond)
    out = {}
    for name, ss in spans.items():
        if name.startswith("_"):
            continue
        out[name] = (min(a for a, _ in ss), max(b for _, b in ss))
    return out


def python_history(repo: Path) -> dict:
    """The stdlib modules and names that some listed Python lacks, as index ranges into PYTHONS."""
    head = (_git(repo, "rev-parse", "HEAD") or "").strip()
    modules: dict[str, list[int]] = {}
    names: dict[str, dict[str, list[int]]] = {}
    for commit in (TYPESHED_OLD, head):
        for line in (_git(repo, "show", f"{commit}:stdlib/VERSIONS") or "").splitlines():
            m = re.match(r"^([\w.]+):\s*(\d+)\.(\d+)-(?:(\d+)\.(\d+))?", line)
            if m:
                lo = int(m.group(3)) if m.group(2) == "3" else 0
                hi = int(m.group(5)) if m.group(4) else 99
                span = _minor_range(lo, hi)
                # the newer snapshot knows the later Pythons; the older one the earlier
                modules[m.group(1)] = sorted(set(modules.get(m.group(1), [])) | set(span)) if commit == head \
                    else span
        for path in (_git(repo, "ls-tree", "-r", "--name-only", commit, "--", "stdlib") or "").split():
            if not path.endswith(".pyi"):
                continue
            module = path[len("stdlib/"):-4].replace("/", ".").removesuffix(".__init__")
            for name, (lo, hi) in _stub_names(_git(repo, "show", f"{commit}:{path}") or "").items():
                span = _minor_range(lo, hi)
                known = names.setdefault(module, {})
                if commit == head and name in known:
                    # the old snapshot decides for Pythons up to the one it knew last (3.10)
                    span = sorted({i for i in known[name] if i <= 4} | {i for i in span if i > 4})
                known[name] = span
    last = len(PYTHONS) - 1

    def ranges(idx: list[int]) -> list[list[int]] | None:
        return release_ranges(idx, last) if idx else None

    mods = {m: ranges(idx) for m, idx in sorted(modules.items()) if idx}
    by_module = {m: {n: r for n, idx in sorted(ns.items()) if (r := ranges(idx))} for m, ns in sorted(names.items())}
    return {"modules": mods, "names": {m: ns for m, ns in by_module.items() if ns}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path,
                    help="the folder of compat_releases.yaml and api_history.json.gz")
    ap.add_argument("--wheel-cache", type=Path, default=Path.home() / ".cache" / "distdx-wheel-api",
                    help="where scripts/api_from_wheels.py keeps each release's name lists")
    args = ap.parse_args(argv)
    from api_from_wheels import WHEEL_PROJECTS, wheel_history  # it reads wheels with this module's readers
    from requires_from_wheels import METADATA_PROJECTS, release_requirements

    rules: list[dict] = []
    known: dict[str, list[str]] = {}
    history: dict[str, dict] = {}
    messages: dict[str, list[set[tuple[str, ...]]]] = {}  # each release's messages, per package
    commits = []
    for package, folder, prefix, files, root in PROJECTS:
        repo = args.mirror / folder / "repo"
        head = (_git(repo, "rev-parse", "HEAD") or "?").strip()
        commits.append(f"{folder.replace('+', '/')} {head}")
        r, k = rules_for(package, repo, prefix, files)
        rules += r
        known[package] = k
        if root:
            history[package] = {"root": root.removeprefix("src/").replace("/", "."), "releases": k,
                                "source": f"{folder.replace('+', '/')} {head}, release tags",
                                **api_history(repo, releases(repo, prefix), root)}
            messages[package] = message_history(repo, releases(repo, prefix), root)
    for package, *how in WHEEL_PROJECTS:
        history[package], messages[package] = wheel_history(package, *how, args.wheel_cache)
    for package, oldest in METADATA_PROJECTS:  # no mirror and no API history: what each release's wheel requires
        table = [(Version(v), v, watched(lines)) for v, lines in release_requirements(package, oldest, args.wheel_cache)]
        rules += rules_from_table(package, table, f"PyPI {package} wheel METADATA (Requires-Dist) of")
        known[package] = [str(v) for v, _, _ in table]
    for package, per_release in messages.items():
        elsewhere = "\n".join("\x00".join(m) for other, rs in messages.items() if other != package
                               for m in set().union(*rs))
        history[package]["messages"] = removed_messages(per_release, elsewhere)
    typeshed = args.mirror / "python+typeshed" / "repo"
    head = (_git(typeshed, "rev-parse", "HEAD") or "?").strip()
    history["python"] = {"root": "", "releases": list(PYTHONS),
                         "source": f"python/typeshed stdlib stubs at {TYPESHED_OLD[:12]} and {head[:12]}",
                         **python_history(typeshed)}
    header = ("# Generated by scripts/compat_from_mirrors.py from each project's release tags; do not edit.\n"
              "# A rule: every release of the `when` package in that range declares `requires` (its own\n"
              "# requirement files, read at the tags named in `source`). Repositories at:\n"
              + "".join(f"#   {c}\n" for c in commits))
    body = yaml.safe_dump({"version": 1, "releases": known, "rules": rules}, sort_keys=False, width=120,
                          default_flow_style=None)
    (args.out / "compat_releases.yaml").write_text(header + body, encoding="utf-8")
    # gzip with a fixed mtime: 2 MB of JSON becomes 0.3 MB, byte for byte the same on every run
    text = json.dumps({"version": 1, "packages": history}, sort_keys=True, separators=(",", ":")) + "\n"
    (args.out / "api_history.json.gz").write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
