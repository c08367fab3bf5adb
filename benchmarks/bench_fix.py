"""What `distdx fix` repairs: the broken lint corpus, and a closed loop over the lab's scenarios.

Run: ``python benchmarks/bench_fix.py`` (the corpus, seconds), ``python benchmarks/bench_fix.py
--realworld --mirror DIR`` (the real-world files of lint_realworld.yaml, read from clones as that benchmark
does) and ``python benchmarks/bench_fix.py --closed-loop`` (the lab, minutes on CPU).

Real-world files: on every file the frameworks accept, `distdx fix` (with --unsafe-fixes) must propose
nothing; on the rejected ones, how many error findings get a fix. Baseline: lint's error findings.

Corpus (tests/lint/corpus). Baseline, measured in the same run: the error findings lint reports (nothing
repaired). Then, per broken file, the error findings a fix is applied to, with the safe fixes alone and with
--unsafe-fixes, and the error findings left when the fixed file is linted again.

Closed loop. Every lab scenario whose fix pattern is F1 (launch and environment), F2 (versions) or F3
(configuration) is run as shipped (the baseline: it fails), diagnosed from its log, repaired by
``distdx fix --from-log LOG --config CONFIG`` (its F3 repair, written as ``distdx fix CONFIG --write
--unsafe-fixes`` would, at the world size and Hugging Face setting read from the log) and run again. A
scenario is repaired when the second run exits 0 within its bound. F1 and F2 repairs are settings and
versions shown to a person, never applied, so those scenarios stay failed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from distdx.fix import FixOptions, fix, write_fixed  # noqa: E402
from distdx.lint import LintOptions, lint  # noqa: E402

CORPUS = ROOT / "tests" / "lint" / "corpus"


def corpus() -> None:
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text())["files"]
    errors = 0
    fixed = {False: 0, True: 0}
    left = {False: 0, True: 0}
    families: dict[str, list[int]] = {}  # family -> [error findings, fixed safe, fixed with --unsafe-fixes]
    for rel, spec in manifest.items():
        if "/broken/" not in rel:
            continue
        spec = spec or {}
        options = LintOptions(world_size=spec.get("world_size"), hf=spec.get("hf"))
        before = [f for f in lint([str(CORPUS / rel)], options=options).findings if f.severity == "error"]
        errors += len(before)
        row = families.setdefault(rel.split("/")[0], [0, 0, 0])
        row[0] += len(before)
        for unsafe in (False, True):
            (result,) = fix([str(CORPUS / rel)], options, FixOptions(unsafe=unsafe)).files
            applied = {(f.code, f.field) for f in result.applied}
            repaired = sum((f.code, f.field) in applied for f in before)
            fixed[unsafe] += repaired
            row[1 + unsafe] += repaired
            left[unsafe] += len(result.remaining)
    print(f"baseline (lint only): {errors} error findings on the broken corpus, 0 repaired")
    for unsafe in (False, True):
        label = "fix --unsafe-fixes" if unsafe else "fix (safe only)   "
        print(f"{label}: {fixed[unsafe]}/{errors} error findings get a fix ({fixed[unsafe] / errors:.0%}); "
              f"{left[unsafe]} error findings left after re-lint")
    for family, (n, safe, unsafe_too) in families.items():
        print(f"  {family:<11} {n:>3} error findings: {safe} get a safe fix, {unsafe_too} with --unsafe-fixes")


def realworld(mirror: Path) -> None:
    from lint_realworld import MANIFEST, read

    from distdx.fix import fix_sources
    from distdx.lint.engine import Source, _kind_of

    spec = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    valid = proposed_on_valid = errors = fixed = files = 0
    proposals = []
    for repo, entry in spec["repositories"].items():
        for path, expected in entry["files"].items():
            text = read(mirror, repo, entry["commit"], path)
            if text is None:
                continue
            files += 1
            options = LintOptions(hf=True) if "LlamaFactory" in repo else LintOptions()
            (result,) = fix_sources([Source(path, text, _kind_of(path, text))], options, FixOptions(unsafe=True)).files
            if not expected:
                valid += 1
                if result.applied or result.skipped_unsafe:
                    proposed_on_valid += 1
                    proposals.append(f"{repo}:{path}: {[f.code for f in result.applied]}")
                continue
            from distdx.lint import lint_text

            before = [f for f in lint_text(text, path, options).findings if f.severity == "error"]
            applied = {(f.code, f.field) for f in result.applied}
            errors += len(before)
            fixed += sum((f.code, f.field) in applied for f in before)
    print(f"real-world files read: {files}")
    print(f"valid files with a fix proposed: {proposed_on_valid} of {valid}")
    print(f"rejected files: baseline {errors} error findings (lint), {fixed} get a fix with --unsafe-fixes")
    for line in proposals:
        print("- " + line)


def closed_loop(names: list[str]) -> int:
    from distdx.errors import DistdxError
    from distdx.fix.fromlog import fixes_from_log
    from distdx.lab import load_scenarios, run_scenario
    from distdx.lab.catalogue import config_path
    from distdx.lab.runner import check_requirements

    chosen = [s for s in load_scenarios() if s.labels["fix_pattern"] in ("F1", "F2", "F3")
              and (not names or s.name in names)]
    rows, repaired, failed_before, example = [], 0, 0, ""
    for scenario in chosen:
        try:
            check_requirements(scenario)
        except DistdxError as e:
            rows.append((scenario.name, scenario.labels["fix_pattern"], "skipped", "", "", e.message))
            continue
        work = Path(tempfile.mkdtemp(prefix=f"bench-fix-{scenario.name}-"))
        try:
            env = {}
            config = None
            if scenario.config:
                config = work / scenario.config
                shutil.copyfile(config_path(scenario), config)
                env["LAB_CONFIG"] = str(config)
            before = run_scenario(scenario.name, keep=work / "before", extra_env=env)
            failed_before += before.exit_code != 0
            try:
                repairs = fixes_from_log([before.combined_log], config=str(config) if config else None)
                offered = ",".join(sorted({r.pattern for r in repairs.repairs})) or "-"
            except DistdxError as e:
                repairs, offered = None, f"none ({e.code})"
            applied = ""
            for repair in repairs.repairs if repairs is not None else ():
                if repair.pattern == "F3" and repair.file_fix is not None:  # what `distdx fix --write` would write
                    write_fixed(repair.file_fix, backup=False)
                    applied += " ".join(f"{f.code}[{f.kind}]" for f in repair.file_fix.applied)
                    example = example or repair.diff
            after = run_scenario(scenario.name, keep=work / "after", extra_env=env) if applied else None
            ok = after is not None and after.exit_code == 0 and not after.timed_out
            repaired += ok
            rows.append((scenario.name, scenario.labels["fix_pattern"], f"exit {before.exit_code}", offered,
                         applied or "-", f"exit {after.exit_code}" if after else "not re-run"))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'scenario':<26} {'fix':<4} {'before':<8} {'offered':<12} {'applied':<44} after")
    for name, pattern, before_s, offered, applied, after_s in rows:
        print(f"{name:<26} {pattern:<4} {before_s:<8} {offered:<12} {applied:<44} {after_s}")
    ran = sum(1 for r in rows if r[2] != "skipped")
    print(f"baseline (as shipped): {ran - failed_before}/{ran} scenarios succeed")
    print(f"after distdx fix:      {repaired}/{ran} scenarios succeed (repaired end to end)")
    if example:
        print("example repair:\n" + example.rstrip("\n"))
    return repaired


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--closed-loop", action="store_true", help="run the lab scenarios, fix, run again")
    parser.add_argument("--scenario", action="append", default=[], help="only this scenario (repeatable)")
    parser.add_argument("--realworld", action="store_true", help="the real-world files of lint_realworld.yaml")
    parser.add_argument("--mirror", help="with --realworld: the folder of the repositories' clones")
    args = parser.parse_args()
    if args.realworld:
        if not args.mirror:
            parser.error("--realworld needs --mirror DIR")
        sys.path.insert(0, str(ROOT / "benchmarks"))
        realworld(Path(args.mirror))
    elif args.closed_loop:
        closed_loop(args.scenario)
    else:
        corpus()


if __name__ == "__main__":
    main()
