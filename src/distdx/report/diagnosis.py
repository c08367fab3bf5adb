"""Renderers of a :class:`~distdx.diagnose.Diagnosis`: text for people, JSON, Markdown for an issue."""

from __future__ import annotations

import json

from distdx.diagnose.models import Diagnosis
from distdx.knowledge.taxonomy import taxonomy
from distdx.report.redact import redact, redact_secrets

_DIM_LABELS = {"stage": "stage", "symptom": "symptom", "root_cause": "root cause", "fix_pattern": "fix pattern"}


def _where(source: str, line: int) -> str:
    return f"{source}:{line}"


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _hosts_of(d: Diagnosis) -> list[str]:
    ff = d.first_failure
    return [e.line.host for e in d.evidence if e.line.host] + ([ff.host] if ff is not None and ff.host else [])


def shareable(text: str, d: Diagnosis, *, secrets: bool, hosts: bool) -> str:
    """``text`` rendered from ``d`` with secrets (and host names and IPs) replaced by placeholders.
    The placeholders hold no quote or backslash, so JSON stays JSON."""
    if hosts:
        return redact(text, hosts=True, host_names=_hosts_of(d))
    return redact_secrets(text) if secrets else text


def render_json(d: Diagnosis, *, redact_secrets: bool = True, redact_hosts: bool = False,
                extra: dict | None = None) -> str:
    """``extra``: more top-level fields (``repairs`` of ``diagnose --fix``), redacted like the rest."""
    return shareable(json.dumps({**d.to_dict(), **(extra or {})}, indent=2, ensure_ascii=False), d,
                     secrets=redact_secrets, hosts=redact_hosts)


def render_text(d: Diagnosis, *, verbose: bool = False, redact_hosts: bool = False,
                repairs: list[str] | tuple[str, ...] = ()) -> str:
    """For the terminal: secrets are kept unless host redaction is asked for (which redacts both).
    ``repairs``: the lines of ``diagnose --fix``, shown after the diagnosis."""
    text = _text(d, verbose)
    if repairs:
        text = text.rstrip("\n") + "\n\nrepairs (what `distdx fix --from-log` would do):\n" + "\n".join(repairs) + "\n"
    return shareable(text, d, secrets=False, hosts=redact_hosts)


SETTLE = ("the failing rank's full log (every rank's, if unsure), the launcher's summary or error files, "
          "and `distdx doctor` run on the nodes")


def _tier_words(d: Diagnosis) -> str:
    ranked = d.classification.get("symptom") or ()
    p = ranked[0].probability if ranked else None
    chance = f" (symptom right about {p:.0%} of the time at this score)" if p is not None else ""
    return d.tier + chance


def _text(d: Diagnosis, verbose: bool) -> str:
    tax = taxonomy()
    out = [f"distdx: {d.headline}", f"verdict: {d.verdict} (confidence {d.confidence:.2f})"]
    if d.verdict == "no_failure":
        out += ["", "If the job did fail, give distdx the failing rank's full log (every rank's, if unsure), "
                    "the launcher's summary or error files, or a sentence saying what went wrong."]
        out += [f"note: {n}" for n in d.notes]
        return "\n".join(out)
    out[-1] += f"; {_tier_words(d)}"
    if d.tier == "weak":
        out.append(f"to settle it: {SETTLE}")
    out.append("")
    for dim, label in _DIM_LABELS.items():
        ranked = d.classification.get(dim, ())
        if not ranked:
            continue
        best = ranked[0]
        alts = ", ".join(f"{h.id} {h.score:.2f}" for h in ranked[1 : 5 if verbose else 3])
        line = f"  {label:<12} {tax.label(best.id):<58} {best.score:.2f}"
        out.append(line + (f"   (then {alts})" if alts else ""))
    ff = d.first_failure
    if ff is not None:
        who = f"rank {ff.rank}" if ff.rank is not None else "no rank prefix"
        if ff.host:
            who += f" ({ff.host})"
        out += ["", f"first failure: {who} at {_where(ff.line.source, ff.line.lineno)}", f"  {_short(ff.text, 240)}"]
        if ff.cascade:
            out.append(f"  ({len(ff.cascade)} later error lines look like its cascade)")
        if verbose and ff.reason:
            out.append(f"  chosen because: {ff.reason}")
    if d.evidence:
        out += ["", "evidence:"]
        shown = d.evidence if verbose else d.evidence[:6]
        for e in shown:
            tags = [t for t, on in (("first failure", e.first_failure), ("cascade", e.cascade)) if on]
            rank = f"rank {e.line.rank}" if e.line.rank is not None else "-"
            out.append(f"  {e.rule:<14} {rank:<9} {_where(e.line.source, e.line.lineno):<28} {_short(e.line.text, 90)}"
                       + (f"  [{', '.join(tags)}]" if tags else ""))
        if len(d.evidence) > len(shown):
            out.append(f"  … {len(d.evidence) - len(shown)} more (use -v)")
    if d.explanation:
        out += ["", f"why: {d.explanation}"]
    if d.fixes:
        out += ["", "fix:"]
        out += [f"  {i}. {f.step}" for i, f in enumerate(d.fixes if verbose else d.fixes[:5], 1)]
    if d.similar:
        out += ["", "similar known issues:"]
        for s in d.similar:
            tag = " [this very issue]" if s.exact else ""
            out.append(f"  - {s.title} ({s.similarity:.2f}){tag}\n    {s.url}")
            if verbose and s.resolution:
                out.append(f"    resolved: {_short(s.resolution, 200)}")
    if verbose and d.references:
        out += ["", "references:"] + [f"  - {r['url']}" + (f" ({r['title']})" if r.get("title") else "") for r in d.references]
    if d.notes or not d.complete:
        out += [""]
        if not d.complete:
            out.append(f"note: large input ({d.total_bytes / 1e6:.0f} MB, {d.total_lines} lines): only salient lines were kept")
        out += [f"note: {n}" for n in d.notes]
    return "\n".join(out)


def render_markdown(d: Diagnosis, *, redact_secrets: bool = True, redact_hosts: bool = False,
                    repairs: list[str] | tuple[str, ...] = ()) -> str:
    tax = taxonomy()
    out = ["## distdx diagnosis", "", f"**{d.headline}**", "",
           f"Verdict: {d.verdict}, confidence {d.confidence:.2f}; {_tier_words(d)}."
           + (f" To settle it: {SETTLE}." if d.tier == "weak" else ""), "",
           "| dimension | best | score | next |", "|---|---|---|---|"]
    for dim, label in _DIM_LABELS.items():
        ranked = d.classification.get(dim, ())
        if ranked:
            alts = ", ".join(f"{h.id} ({h.score:.2f})" for h in ranked[1:3])
            out.append(f"| {label} | {tax.label(ranked[0].id)} | {ranked[0].score:.2f} | {alts} |")
    ff = d.first_failure
    if ff is not None:
        who = f"rank {ff.rank}" if ff.rank is not None else "unknown rank"
        out += ["", f"### First failure ({who}, `{_where(ff.line.source, ff.line.lineno)}`)", "", "```", ff.text, "```"]
    if d.evidence:
        out += ["", "### Evidence", "", "```"]
        for e in d.evidence[:10]:
            rank = f"rank {e.line.rank}" if e.line.rank is not None else "-"
            out.append(f"{e.rule} {rank} {_where(e.line.source, e.line.lineno)}: {_short(e.line.text, 200)}")
        out.append("```")
    if d.explanation:
        out += ["", "### Why", "", d.explanation]
    if d.fixes:
        out += ["", "### Fix", ""] + [f"{i}. {f.step}" for i, f in enumerate(d.fixes, 1)]
    if d.similar:
        out += ["", "### Similar known issues", ""] + [f"- [{s.title}]({s.url}) (similarity {s.similarity:.2f})" for s in d.similar]
    if repairs:
        out += ["", "### Repairs", "", "```", *repairs, "```"]
    return shareable("\n".join(out) + "\n", d, secrets=redact_secrets, hosts=redact_hosts)
