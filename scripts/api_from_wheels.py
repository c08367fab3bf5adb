"""API history of packages without a git mirror, read from their PyPI wheels (called by
``scripts/compat_from_mirrors.py``; the wheels of transformers' whole history would be a 2 GB clone).

For the first final release of each minor series (``4.19.0``, ``4.20.0``...) pip downloads the pure-Python
wheel, the same lines ``compat_from_mirrors.api_history`` greps at a tag and the same messages
``compat_from_mirrors.message_history`` parses are read from its ``.py`` files, and the wheel is deleted.
Only the module, public-name and message lists of a release are kept, one JSON file per release in the
cache folder, so that a second run downloads only the releases published since.

    python scripts/api_from_wheels.py --cache DIR transformers
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from packaging.version import InvalidVersion, Version

from compat_from_mirrors import API_LINE, history_from_releases, release_api, source_messages, specific

# package on PyPI, its import root, the oldest series read, whether the root lazily re-exports the public
# names of its submodules (transformers' `_import_structure`: `from transformers import X` for any model)
WHEEL_PROJECTS = (("transformers", "transformers", "2.0", True),)


def _pip(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pip {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def minor_releases(package: str, oldest: str) -> list[str]:
    """The first final release of each minor series from ``oldest`` on, as the package index lists them."""
    listed = re.search(r"Available versions:\s*(.+)", _pip("index", "versions", package))
    firsts: dict[tuple[int, int], Version] = {}
    for text in (listed.group(1).split(", ") if listed else ()):
        try:
            v = Version(text.strip())
        except InvalidVersion:
            continue
        if v.is_prerelease or v.is_devrelease or v < Version(oldest):
            continue
        key = v.release[:2]
        if key not in firsts or v < firsts[key]:
            firsts[key] = v
    return [str(v) for _, v in sorted(firsts.items())]


def wheel_release(wheel: Path, root: str) -> dict:
    """A wheel's modules and public (module, name) pairs under ``root`` (the API lines
    ``compat_from_mirrors.api_history`` greps at a tag) and its specific messages."""
    api_line = re.compile(API_LINE)
    paths, lines, messages = [], [], set()
    with zipfile.ZipFile(wheel) as z:
        for path in sorted(z.namelist()):
            if not (path.startswith(root + "/") and path.endswith(".py")):
                continue
            paths.append(path)
            text = z.read(path).decode("utf-8", errors="replace")
            lines += [(path, line) for line in text.splitlines() if api_line.match(line)]
            messages |= source_messages(text)
    modules, names = release_api(paths, lines, root)
    return {"modules": sorted(modules), "names": sorted(names), "messages": sorted(messages)}


def release_names(package: str, version: str, root: str, cache: Path) -> dict:
    """One release's :func:`wheel_release`, from the cache or its downloaded wheel."""
    kept = cache / f"{package}-{version}.json"
    if kept.exists():
        data = json.loads(kept.read_text(encoding="utf-8"))
        if "messages" in data:
            return data
    with tempfile.TemporaryDirectory() as tmp:
        _pip("download", "--no-deps", "--only-binary=:all:", f"{package}=={version}", "-d", tmp)
        data = wheel_release(next(Path(tmp).glob("*.whl")), root)
    cache.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(data) + "\n", encoding="utf-8")
    return data


def wheel_history(package: str, root: str, oldest: str, reexports: bool, cache: Path) \
        -> tuple[dict, list[set[tuple[str, ...]]]]:
    """The ``api_history.json.gz`` entry of ``package`` (its releases, which of them have each module,
    public name and method) and each release's messages."""
    versions = minor_releases(package, oldest)
    releases = [release_names(package, v, root, cache) for v in versions]
    return {"root": root, "releases": versions, "reexports": reexports,
            "source": f"PyPI wheels of {package} {versions[0]}..{versions[-1]} (first release of each minor)",
            **history_from_releases([(set(r["modules"]), {tuple(n) for n in r["names"]}) for r in releases])}, \
        [{tuple(m) for m in r["messages"] if specific(tuple(m))} for r in releases]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, type=Path, help="folder of the per-release name lists")
    ap.add_argument("packages", nargs="*", help="default: every package of WHEEL_PROJECTS")
    args = ap.parse_args(argv)
    for package, *how in WHEEL_PROJECTS:
        if not args.packages or package in args.packages:
            h, _ = wheel_history(package, *how, args.cache)
            print(f"{package}: {len(h['releases'])} releases, {len(h['modules'])} modules")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
