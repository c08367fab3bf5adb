"""Derive the version questions of the F2 cases: for each case whose fix pattern is F2 and whose
resolution names a package version as the way out, the package, the version and how it is named.

    python scripts/f2_version_questions.py ../shared/cases/dev.jsonl corpus/cases.jsonl \\
        > tests/doctor/data/f2_version_questions.jsonl

A mention is a package name followed within a few words by a version (``0.13.5``, ``v0.3.1``,
``release_v1.12``, ``1.x``). Its relation comes from the words around it: ``>=`` for "or newer",
"from ... on", "upgrade", "fixed/shipped in", "needs", "required"; ``<`` for "older than", "before";
and ``==`` for "pin", "downgrade to", "works with", "does not occur with", "installed fine". A mention with
no such cue, one the words around it name as the broken version ("from X to Y" keeps Y,
"regression", "had started", "instead of"), one with another package named between name and
version, a container tag or a slash list is not a question. The file is written by this script, never by hand.
"""

from __future__ import annotations

import json
import re
import sys

PACKAGES = {
    "torch": r"[Pp]y[Tt]orch|torch", "deepspeed": r"DeepSpeed|deepspeed", "colossalai": r"Colossal-?AI|colossalai",
    "transformers": r"[Tt]ransformers", "accelerate": r"[Aa]ccelerate", "peft": r"PEFT|peft",
    "megatron-core": r"[Mm]egatron-?[Cc]ore|megatron\.core", "transformer-engine": r"Transformer Engine|TE",
    "flash-attn": r"flash-?attn|FlashAttention|flash attention", "vllm": r"vLLM|vllm", "xformers": r"xformers",
    "bitsandbytes": r"bitsandbytes", "triton": r"[Tt]riton", "numpy": r"[Nn]um[Pp]y", "pydantic": r"[Pp]ydantic",
    "python": r"Python", "cuda": r"CUDA(?: toolkit)?", "nccl": r"NCCL", "trl": r"TRL|trl",
}
VERSION = r"(?:release_)?v?(\d+\.(?:\d+|x)(?:\.\d+)?)(\+)?"
MENTION = re.compile(r"\b(" + "|".join(f"(?P<p{i}>{p})" for i, p in enumerate(PACKAGES.values()))
                     + r")\b[\s(]+(?:[A-Za-z][\w-]*\s+){0,3}?[(]?" + VERSION + r"(?:\s+to\s+" + VERSION + ")?")
MENTION_AFTER = re.compile(VERSION + r"\s+(?:of\s+|or newer\s+of\s+)?(?:the\s+)?\b("
                           + "|".join(PACKAGES.values()) + r")\b")
GE = re.compile(r"or newer|or later|and (?:above|later|newer)|\bon\b|upgrad|newer|fixed in|shipped in|needs|"
                r"requir|at least|\+", re.I)
LT = re.compile(r"older than|before|below|predat", re.I)
EQ = re.compile(r"\bpin|downgrad|works? with|does not occur with|installed fine|matching", re.I)
BAD = re.compile(r"regression|had started|broke|not supported|not match|instead of", re.I)


# another package named between a name and a version ("Colossal-AI requires Python 3.7"): the version
# is that package's; a container tag ("PyTorch 24.10 container") or a slash list ("colossalai/xformers
# pinned to 0.2.5/0.12.0") does not say which version belongs to which name
_OTHER_PACKAGE = re.compile(r"\b(?:" + "|".join(PACKAGES.values()) + r")\b")
_NOT_A_RELEASE = re.compile(r"\s*(?:/\d|\S*\s+container)")


def _clause(sentence: str, at: int) -> str:
    """The clause of ``sentence`` around position ``at``: between commas, semicolons, "while" and "but"."""
    cuts = [0] + [m.end() for m in re.finditer(r"[,;:]|\bwhile\b|\bbut\b", sentence)] + [len(sentence)]
    lo = max(c for c in cuts if c <= at)
    hi = min((c for c in cuts if c > at), default=len(sentence))
    return sentence[lo:hi]


def _package(match_text: str) -> str | None:
    for name, pattern in PACKAGES.items():
        if re.fullmatch(pattern, match_text):
            return name
    return None


def questions(case: dict) -> list[dict]:
    out = []
    for sentence in re.split(r"(?<=[.;])\s+", case["resolution"]):
        n = len(PACKAGES)
        hits = [(m.start(), m.end(), m.group(1), m.group(n + 4) or m.group(n + 2), m.group(n + 5) or m.group(n + 3),
                 m.group(0)[len(m.group(1)):]) for m in MENTION.finditer(sentence)]
        hits += [(m.start(), m.end(), m.group(3), m.group(1), m.group(2), "") for m in MENTION_AFTER.finditer(sentence)]
        for start, end, pkg_text, version, plus, between in hits:
            pkg = _package(pkg_text)
            if pkg is None or _OTHER_PACKAGE.search(between) or _NOT_A_RELEASE.match(sentence[end:]):
                continue
            window = _clause(sentence, start)
            if plus:
                relation = ">="
            elif LT.search(window):
                relation = "<"
            elif EQ.search(window):
                relation = "=="
            elif GE.search(window):
                relation = ">="
            else:
                continue
            if BAD.search(sentence[max(0, start - 25):start + len(pkg_text) + 40]):
                continue
            out.append({"id": case["id"], "package": pkg, "version": version, "relation": relation,
                        "sentence": sentence})
    seen, unique = set(), []
    for q in out:
        key = (q["package"], q["version"])
        if key not in seen:
            seen.add(key)
            unique.append(q)
    return unique


def main(paths: list[str]) -> int:
    for path in paths:
        for line in open(path, encoding="utf-8"):
            case = json.loads(line)
            if case.get("labels", {}).get("fix_pattern") != "F2":
                continue
            for q in questions(case):
                q["file"] = path.rsplit("/", 1)[-1]
                sys.stdout.write(json.dumps(q, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
