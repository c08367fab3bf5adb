"""How much of what lint reports `distdx fix` repairs, on the broken lint corpus (tests/lint/corpus).

Run: ``python benchmarks/bench_fix.py``. Baseline, measured in the same run: the error findings lint reports
(nothing repaired). For each broken file: its error findings, those a fix is applied to with the safe fixes
alone and with --unsafe-fixes, and the error findings left after fixing (re-linted). The closed loop over lab
scenarios (run, diagnose, fix, re-run) is not built yet.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from distdx.fix import FixOptions, fix  # noqa: E402
from distdx.lint import LintOptions, lint  # noqa: E402

CORPUS = ROOT / "tests" / "lint" / "corpus"


def main() -> None:
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text())["files"]
    errors = 0
    fixed = {False: 0, True: 0}
    left = {False: 0, True: 0}
    for rel, spec in manifest.items():
        if "/broken/" not in rel:
            continue
        spec = spec or {}
        options = LintOptions(world_size=spec.get("world_size"), hf=spec.get("hf"))
        before = [f for f in lint([str(CORPUS / rel)], options=options).findings if f.severity == "error"]
        errors += len(before)
        for unsafe in (False, True):
            (result,) = fix([str(CORPUS / rel)], options, FixOptions(unsafe=unsafe)).files
            applied = {(f.code, f.field) for f in result.applied}
            fixed[unsafe] += sum((f.code, f.field) in applied for f in before)
            left[unsafe] += len(result.remaining)
    print(f"baseline (lint only): {errors} error findings on the broken corpus, 0 repaired")
    for unsafe in (False, True):
        label = "fix --unsafe-fixes" if unsafe else "fix (safe only)   "
        print(f"{label}: {fixed[unsafe]}/{errors} error findings get a fix ({fixed[unsafe] / errors:.0%}); "
              f"{left[unsafe]} error findings left after re-lint")


if __name__ == "__main__":
    main()
