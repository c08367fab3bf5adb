"""Real DeepSpeed (CPU) accepts every broken corpus config that `distdx fix` repairs to lint-clean, where it
rejected it before: with the safe fixes alone, and with --unsafe-fixes."""

from __future__ import annotations

from pathlib import Path

import pytest

from distdx.fix import FixOptions, fix
from distdx.lint import LintOptions

from tests.benchmarks import load_benchmark

pytest.importorskip("deepspeed", reason="the check against DeepSpeed needs deepspeed installed (it is in the dev venv)")

bench = load_benchmark("lint_vs_deepspeed")


@pytest.mark.slow
def test_deepspeed_accepts_what_fix_repaired(tmp_path: Path) -> None:
    entries = [e for e in bench.manifest() if e.family == "deepspeed" and e.broken and e.hf is not True]
    fixed_files: list[tuple[Path, int, str, Path]] = []
    for e in entries:
        for unsafe in (False, True):
            (result,) = fix([str(e.path)], LintOptions(world_size=e.world_size, hf=e.hf), FixOptions(unsafe=unsafe)).files
            if result.changed and not result.remaining:
                out = tmp_path / f"{'unsafe' if unsafe else 'safe'}-{e.path.name}"
                out.write_text(result.fixed)
                fixed_files.append((e.path, e.world_size or 1, "unsafe" if unsafe else "safe", out))
    verdicts = bench.deepspeed_verdicts([(p, w) for p, w, _, _ in fixed_files] + [(o, w) for _, w, _, o in fixed_files],
                                        timeout=300)
    rejected = [f for f in fixed_files if not verdicts[str(f[0])][0]]
    # measured on the corpus: 2 rejected configs fixed clean by safe fixes alone, 22 with --unsafe-fixes
    assert sum(f[2] == "safe" for f in rejected) >= 2 and len(rejected) >= 20, len(rejected)
    for original, _, kind, out in fixed_files:
        if not verdicts[str(original)][0]:
            assert verdicts[str(out)][0], (original.name, kind, verdicts[str(out)][1])
