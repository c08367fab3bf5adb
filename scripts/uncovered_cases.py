"""List the labelled cases on which no signature rule fires with evidence, with their error-like lines.

Reads the corpus's train split (never the test split, never the kept-back batches of
``benchmarks/bench_accuracy.py``) and, with ``--dev``, ``corpus/dev.jsonl``; prints,
per case without a rule, its repository, labels and the lines that read like an error message, grouped
by repository. This is the worklist for writing rules from the frameworks' own messages::

    PYTHONPATH=src python scripts/uncovered_cases.py [--dev] [--all] [--strict]

``--all`` also lists the cases where a rule fired (with the codes), to check a new rule's precision.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

from distdx.diagnose.engine import diagnose
from distdx.diagnose.evaluate import case_input
from distdx.knowledge.known_issues import read_cases
from distdx.knowledge.rules import load_rules
from distdx.logs import parse_text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_accuracy import KEPT_BACK  # noqa: E402  (one list of the batches kept back, shared with the benchmarks)

ERRORISH = re.compile(r"error|exception|traceback|assert|fail|abort|timed? ?out|killed|segmentation|"
                      r"not supported|cannot|can't|unable|invalid|illegal|nan\b|oom|out of memory|hang|stuck",
                      re.I)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", action="store_true", help="read corpus/dev.jsonl instead of the train split")
    parser.add_argument("--all", action="store_true", help="also list the cases where a rule fired")
    parser.add_argument("--lines", type=int, default=4, help="error-like lines shown per case")
    parser.add_argument("--strict", action="store_true",
                        help="leave out, per case, the rules that cite its URL (how the rules do on unseen issues)")
    args = parser.parse_args()
    path = ROOT / "corpus" / ("dev.jsonl" if args.dev else "cases.jsonl")
    # the frozen test split and the kept-back batches are never read
    cases = [c for c in read_cases(path) if c.get("split") != "test" and c.get("batch") not in KEPT_BACK]
    groups: dict[str, list[str]] = defaultdict(list)
    covered = 0
    all_rules = load_rules()
    for case in cases:
        text = case_input(case)
        rules = all_rules
        if args.strict:
            rules = tuple(r for r in all_rules if all(ref.url != case.get("url") for ref in r.references))
        d = diagnose(parse_text(text, source=str(case.get("id"))), exclude_ids=frozenset({str(case.get("id"))}),
                     rules=rules)
        fired = list(dict.fromkeys(e.rule for e in d.evidence))
        covered += bool(fired)
        if fired and not args.all:
            continue
        labels = case.get("labels") or {}
        head = (f"{case.get('id')} [{labels.get('stage')} {labels.get('symptom')} {labels.get('root_cause')} "
                f"{labels.get('fix_pattern')}] log={'y' if (case.get('log') or '').strip() else 'n'}"
                + (f" fired={','.join(fired)}" if fired else ""))
        lines = [l.strip() for l in (case.get("log") or "").splitlines() if ERRORISH.search(l)]
        ctx = [s.strip() for s in re.split(r"(?<=[.;])\s+", case.get("context") or "") if ERRORISH.search(s)]
        body = [f"    log| {l[:220]}" for l in dict.fromkeys(lines[: args.lines])]
        body += [f"    ctx| {s[:220]}" for s in ctx[:2]]
        body.append(f"    title| {case.get('title', '')[:200]}")
        groups[str(case.get("repo", "?"))].append("\n".join([head, *body]))
    for repo in sorted(groups, key=lambda r: -len(groups[r])):
        print(f"## {repo} ({len(groups[repo])})")
        print("\n".join(groups[repo]))
    print(f"\na rule fired with evidence on {covered}/{len(cases)} cases", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
