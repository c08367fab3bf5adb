"""How often the version-set table answers the version question of an F2 case with a set that holds
the version the resolution names, beside a baseline measured in the same run.

Questions: tests/doctor/data/f2_version_questions.jsonl, derived from the resolutions of the F2 cases
of ../shared/cases (dev) and corpus/cases.jsonl by scripts/f2_version_questions.py. The table answers
from the case's own text (context and log): the versions it quotes are kept, its errors are evidence.

Knowledge compared:
- "table": everything (compat.yaml version_rules with the known-bug entries, compat_releases.yaml, api_history.json.gz: API history
  from release tags and PyPI wheels, and the messages later releases removed);
- "messages applied": the same, with the removed-message evidence also constraining the answer (it is
  only reported by default: this row measures what applying it would change);
- "requirements only": the release requirement rules and PyTorch's matrix, no evidence rules and no
  API history (what a table of requirement files alone would say).

    python benchmarks/bench_versionsets.py [--json] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from distdx.doctor.versionsets import Table, answer_question, table

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "tests" / "doctor" / "data" / "f2_version_questions.jsonl"
CASE_FILES = (ROOT / "corpus" / "dev.jsonl", ROOT / "corpus" / "cases.jsonl")


def load() -> tuple[list[dict], dict[str, dict]]:
    cases: dict[str, dict] = {}
    for path in CASE_FILES:
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            cases.setdefault(case["id"], case)
    questions = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]
    return questions, cases


def score(questions: list[dict], cases: dict[str, dict], **knowledge) -> dict[str, dict]:
    """Per set (the file a question came from): hit / miss / unknown counts and each verdict."""
    out: dict[str, dict] = {}
    for q in questions:
        case = cases[q["id"]]
        verdict, vs = answer_question(q["package"], q["version"], q["relation"],
                                      case["context"] + "\n\n" + case["log"], **knowledge)
        pin = vs.pin(q["package"])
        s = out.setdefault(q["file"], {"counts": Counter(), "verdicts": []})
        s["counts"][verdict] += 1
        s["verdicts"].append({**{k: q[k] for k in ("id", "package", "relation", "version")}, "verdict": verdict,
                              "answer": pin.specifier if pin else "unknown"})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="every question and its answer")
    args = ap.parse_args(argv)
    questions, cases = load()
    full = table()
    baseline = Table(rules=tuple(r for r in full.rules if r.evidence is None), releases=full.releases)
    results = {"table": score(questions, cases), "messages applied": score(questions, cases, apply_changes=True),
               "requirements only": score(questions, cases, rules=baseline, histories=())}
    if args.json:
        print(json.dumps({k: {f: {"counts": dict(v["counts"]), "verdicts": v["verdicts"]} for f, v in r.items()}
                          for k, r in results.items()}, indent=1))
        return 0
    for name, by_file in results.items():
        for f, s in sorted(by_file.items()):
            n = sum(s["counts"].values())
            c = s["counts"]
            print(f"{name:18} {f:20} questions {n:3}  hit {c['hit']:3} ({c['hit'] / n:5.1%})  "
                  f"miss {c['miss']:3}  unknown {c['unknown']:3}")
            if args.verbose and name == "table":
                for v in s["verdicts"]:
                    print(f"    {v['id']:40} {v['package']:18} {v['relation']:2} {v['version']:8} "
                          f"{v['verdict']:7} {v['answer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
