"""`distdx lint` on real-world files: false errors on valid files, errors on the ones the frameworks reject.

`benchmarks/lint_realworld.yaml` names 634 DeepSpeed configs, accelerate configs and launch scripts
(Megatron-LM, Megatron-DeepSpeed, DeepSpeedExamples, LLaMA-Factory, axolotl, ms-swift, accelerate, trl, peft)
at a pinned commit, each with the error codes it should get: none for a valid file, the codes of the reasons
the framework rejects it otherwise.
The files themselves are not in this repository: they are read with `git show COMMIT:PATH` from
local clones (`--mirror DIR`, holding `OWNER+NAME/repo` git directories, or `OWNER/NAME` checkouts).

    python benchmarks/lint_realworld.py --mirror /path/to/clones [--json]

Prints per repository and in all: files read, valid files with a false error, rejected files lint
flags with an error, and every disagreement.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

from distdx.lint import LintOptions, lint_text

MANIFEST = Path(__file__).resolve().parent / "lint_realworld.yaml"


def read(mirror: Path, repo: str, commit: str, path: str) -> str | None:
    for git_dir in (mirror / repo.replace("/", "+") / "repo", mirror / repo / ".git", mirror / repo):
        if git_dir.exists():
            done = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
                                  capture_output=True, timeout=60)
            if done.returncode == 0:
                return done.stdout.decode("utf-8", "replace")
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", required=True, help="folder with the repositories' clones")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    spec = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    totals = {"files": 0, "missing": 0, "valid": 0, "false_error": 0, "rejected": 0, "flagged": 0}
    disagreements = []
    per_repo = {}
    for repo, entry in spec["repositories"].items():
        counts = dict.fromkeys(totals, 0)
        for path, expected in entry["files"].items():
            text = read(Path(args.mirror), repo, entry["commit"], path)
            if text is None:
                counts["missing"] += 1
                continue
            counts["files"] += 1
            options = LintOptions(hf=True) if "LlamaFactory" in repo else LintOptions()
            errors = sorted({f.code for f in lint_text(text, path, options).findings if f.severity == "error"})
            if expected:
                counts["rejected"] += 1
                counts["flagged"] += bool(errors)
            else:
                counts["valid"] += 1
                counts["false_error"] += bool(errors)
            if errors != sorted(expected):
                disagreements.append({"repo": repo, "path": path, "expected": expected, "got": errors})
        per_repo[repo] = counts
        for k in totals:
            totals[k] += counts[k]
    if args.json:
        print(json.dumps({"repositories": per_repo, "total": totals, "disagreements": disagreements}, indent=2))
        return 0
    if not totals["files"]:
        print(f"no file could be read under {args.mirror}: clone the repositories named in {MANIFEST.name} there")
        return 2
    print("| repository | files | valid with a false error | rejected, flagged |")
    print("|---|---|---|---|")
    for repo, c in {**per_repo, "all": totals}.items():
        kept = " (kept back)" if spec["repositories"].get(repo, {}).get("kept_back") else ""
        print(f"| {repo}{kept} | {c['files']} | {c['false_error']} of {c['valid']} | {c['flagged']} of {c['rejected']} |")
    if totals["missing"]:
        print(f"\n{totals['missing']} files could not be read (repository missing under --mirror)")
    for d in disagreements:
        print(f"- {d['repo']}:{d['path']}: expected {d['expected'] or 'no error'}, got {d['got'] or 'no error'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
