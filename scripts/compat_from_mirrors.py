"""Regenerate ``src/distdx/doctor/compat_releases.yaml``: what each release of a framework declares it
needs, read from the framework's own requirement files at every release tag of its git repository.

    python scripts/compat_from_mirrors.py --mirror DIR > src/distdx/doctor/compat_releases.yaml

DIR holds bare clones named ``owner+name/repo`` (deepspeedai+DeepSpeed, hpcaitech+ColossalAI,
NVIDIA+Megatron-LM, hiyouga+LlamaFactory, modelscope+ms-swift). Only final releases are read (no rc,
alpha, beta tags). Consecutive releases that declare the same specifier on a dependency become one
rule, so the file stays small and every rule names the tags it was read from.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

# package name on PyPI, mirror folder, tag prefix, files holding its requirements
PROJECTS = (
    ("deepspeed", "deepspeedai+DeepSpeed", "v", ("requirements/requirements.txt", "setup.py")),
    ("colossalai", "hpcaitech+ColossalAI", "v", ("requirements/requirements.txt", "setup.py")),
    ("megatron-core", "NVIDIA+Megatron-LM", "core_v",
     ("megatron/core/requirements.txt", "pyproject.toml", "setup.py")),
    ("llamafactory", "hiyouga+LlamaFactory", "v", ("requirements.txt", "pyproject.toml", "setup.py")),
    ("ms-swift", "modelscope+ms-swift", "v", ("requirements/framework.txt", "requirements/megatron.txt", "setup.py")),
)
# the dependencies a version set is asked about; others (tqdm, rich...) are left out
WATCHED = {"torch", "transformers", "accelerate", "peft", "deepspeed", "numpy", "pydantic", "flash-attn", "vllm",
           "trl", "datasets", "megatron-core", "transformer-engine", "triton", "bitsandbytes", "xformers",
           "python"}
_PYTHON_REQUIRES = re.compile(r"python_requires\s*=\s*['\"]([^'\"]+)['\"]")
_QUOTED = re.compile(r"['\"]([A-Za-z][A-Za-z0-9_.\-]*\s*[<>=!~][^'\"]*)['\"]")


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
    if path.endswith(".py"):
        lines = [f"python{m.group(1)}" for m in _PYTHON_REQUIRES.finditer(text)]
        return lines + [m.group(1) for m in _QUOTED.finditer(text)]
    return [ln.split("#", 1)[0].strip() for ln in text.splitlines()]


def declared(repo: Path, tag: str, files: tuple[str, ...]) -> dict[str, str]:
    """dependency -> specifier the release at ``tag`` declares (the first file that names it wins)."""
    found: dict[str, str] = {}
    for path in files:
        text = _git(repo, "show", f"{tag}:{path}")
        if text is None:
            continue
        for line in _requirement_lines(path, text):
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            name = _norm(req.name)
            if name in WATCHED and req.specifier and (req.marker is None or "extra" not in str(req.marker)):
                found.setdefault(name, str(req.specifier))
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
        if not v.is_prerelease:
            out.append((v, tag))
    return sorted(out)


def rules_for(package: str, repo: Path, prefix: str, files: tuple[str, ...]) -> list[dict]:
    tagged = releases(repo, prefix)
    table = [(v, tag, declared(repo, tag, files)) for v, tag in tagged]
    repo_name = repo.parent.name.replace("+", "/")
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
                rules.append({"when": {package: when}, "requires": {dep: spec},
                              "source": f"{repo_name} {' '.join(files)} at {tags}"})
            i = j + 1
    known = [str(v) for v, _ in tagged]
    return rules, known


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", required=True, type=Path)
    args = ap.parse_args(argv)
    rules: list[dict] = []
    known: dict[str, list[str]] = {}
    commits = []
    for package, folder, prefix, files in PROJECTS:
        repo = args.mirror / folder / "repo"
        head = (_git(repo, "rev-parse", "HEAD") or "?").strip()
        commits.append(f"{folder.replace('+', '/')} {head}")
        r, k = rules_for(package, repo, prefix, files)
        rules += r
        known[package] = k
    header = ("# Generated by scripts/compat_from_mirrors.py from each project's release tags; do not edit.\n"
              "# A rule: every release of the `when` package in that range declares `requires` (its own\n"
              "# requirement files, read at the tags named in `source`). Repositories at:\n"
              + "".join(f"#   {c}\n" for c in commits))
    body = yaml.safe_dump({"version": 1, "releases": known, "rules": rules}, sort_keys=False, width=120,
                          default_flow_style=None)
    sys.stdout.write(header + body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
