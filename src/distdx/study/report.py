"""The study's figures and findings, recomputed for a labelled data set.

:func:`analyse` counts what the study's figures show: issues per stage and symptom with the
distributed-only share (its Fig. 2), root cause x symptom per stage (Figs. 3-7), root cause ->
fix pattern (Fig. 9), comments and open duration per framework (Fig. 8) and the high-effort
subset (open > 67 days and > 6 comments), where the data has them, and a findings table set
against the study's own numbers. :func:`write_report` renders it as one self-contained HTML
page (figures inlined) with every figure also written as PNG and SVG next to it.
"""

from __future__ import annotations

import base64
import html
import io
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import UNKNOWN, taxonomy
from distdx.paths import ensure_new, write_atomic
from distdx.study.agreement import agreement
from distdx.study.dataset import framework_of
from distdx.study.records import LabelledIssue

# The high-effort subset as the study defined it.
EFFORT_DAYS = 67
EFFORT_COMMENTS = 6

# Numbers the study reports in its text (849 issues); the rest come from taxonomy.yaml.
STUDY_DIST_ONLY = 0.451  # share of symptoms unique to distributed frameworks (F.1)
STUDY_EFFORT_F2_F3 = 0.614  # high-effort issues resolved by managing versions or tuning APIs
STUDY_N = 849


@dataclass(frozen=True)
class Finding:
    id: str
    statement: str
    here: str
    study: str


@dataclass(frozen=True)
class Heatmap:
    stage: str
    root_causes: tuple[str, ...]
    symptoms: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]  # [root cause][symptom]


@dataclass(frozen=True)
class Effort:
    with_data: int  # issues that have both comment count and open duration
    comments: dict[str, tuple[int, ...]]  # framework -> comment counts
    open_days: dict[str, tuple[float, ...]]
    high_effort: int
    high_effort_fix: dict[str, int]


@dataclass(frozen=True)
class Analysis:
    source: str
    n: int
    frameworks: dict[str, int]
    label_sources: dict[str, int]
    stages: dict[str, dict[str, int]]  # id -> count, distributed_only, distributed_unknown
    symptoms: dict[str, dict[str, int]]
    root_causes: dict[str, int]
    fix_patterns: dict[str, int]
    distributed: dict[str, int]  # true / false / unknown
    heatmaps: tuple[Heatmap, ...]
    root_cause_fix: dict[str, dict[str, int]]
    effort: Effort
    agreement: dict[str, dict] | None
    findings: tuple[Finding, ...] = field(default=())

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "n": self.n,
            "frameworks": self.frameworks,
            "label_sources": self.label_sources,
            "distributed_specific": self.distributed,
            "stages": self.stages,
            "symptoms": self.symptoms,
            "root_causes": self.root_causes,
            "fix_patterns": self.fix_patterns,
            "heatmaps": {h.stage: {"root_causes": list(h.root_causes), "symptoms": list(h.symptoms),
                                   "counts": [list(r) for r in h.counts]} for h in self.heatmaps},
            "root_cause_fix": self.root_cause_fix,
            "effort": {
                "with_data": self.effort.with_data,
                "high_effort": self.effort.high_effort,
                "high_effort_fix_patterns": self.effort.high_effort_fix,
                "per_framework": {fw: _stats(self.effort.comments.get(fw, ()), self.effort.open_days.get(fw, ()))
                                  for fw in sorted(set(self.effort.comments) | set(self.effort.open_days))},
            },
            "agreement": self.agreement,
            "findings": [vars(f) for f in self.findings],
        }


def _stats(comments: tuple[int, ...], days: tuple[float, ...]) -> dict:
    def s(values):
        if not values:
            return None
        return {"n": len(values), "mean": round(statistics.fmean(values), 3), "median": statistics.median(values),
                "stdev": round(statistics.stdev(values), 3) if len(values) > 1 else 0.0, "max": max(values)}
    return {"comments": s(comments), "open_days": s(days)}


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def analyse(issues: list[LabelledIssue], source: str = "") -> Analysis:
    if not issues:
        raise DistdxError("DX-STUDY-090", f"the data set {source} has no labelled issue",
                          hint="adjudicate first (`distdx study adjudicate`) or give a case-format .jsonl file")
    tax = taxonomy()
    stage_ids = tax.ids("stage")

    def order(dimension: str, counter: Counter) -> dict[str, int]:
        ids = tax.ids(dimension) + [UNKNOWN]
        return {i: counter[i] for i in ids if counter[i]} | {k: v for k, v in counter.items() if k not in ids}

    stages = {s: {"count": 0, "distributed_only": 0, "distributed_unknown": 0} for s in stage_ids}
    symptoms: dict[str, dict[str, int]] = {}
    for i in issues:
        lab = i.labels
        for bucket in (stages.setdefault(lab.stage, {"count": 0, "distributed_only": 0, "distributed_unknown": 0}),
                       symptoms.setdefault(lab.symptom, {"count": 0, "distributed_only": 0, "distributed_unknown": 0})):
            bucket["count"] += 1
            bucket["distributed_only"] += lab.distributed_specific is True
            bucket["distributed_unknown"] += lab.distributed_specific is None
    symptom_order = [s for s in tax.ids("symptom") + [UNKNOWN] if s in symptoms]
    symptoms = {s: symptoms[s] for s in symptom_order}
    root_causes = order("root_cause", Counter(i.labels.root_cause for i in issues))
    fix_patterns = order("fix_pattern", Counter(i.labels.fix_pattern for i in issues))
    distributed = dict(Counter(i.labels.value("distributed_specific") for i in issues))

    heatmaps = []
    for s in stage_ids:
        in_stage = [i for i in issues if i.labels.stage == s]
        syms = [x.id for x in tax.children(s, "symptom")]
        rcs = [x.id for x in tax.children(s, "root_cause")] + [UNKNOWN]
        for i in in_stage:  # labels from another stage still get a row or column
            if i.labels.symptom not in syms:
                syms.append(i.labels.symptom)
            if i.labels.root_cause not in rcs:
                rcs.append(i.labels.root_cause)
        pairs = Counter((i.labels.root_cause, i.labels.symptom) for i in in_stage)
        heatmaps.append(Heatmap(s, tuple(rcs), tuple(syms), tuple(tuple(pairs[(r, y)] for y in syms) for r in rcs)))

    root_cause_fix: dict[str, dict[str, int]] = {}
    for rc in root_causes:
        fixes = Counter(i.labels.fix_pattern for i in issues if i.labels.root_cause == rc)
        root_cause_fix[rc] = order("fix_pattern", fixes)

    comments: dict[str, list[int]] = {}
    days: dict[str, list[float]] = {}
    with_data = 0
    high = []
    for i in issues:
        fw = framework_of(i)
        if i.comments is not None:
            comments.setdefault(fw, []).append(i.comments)
        if i.open_days is not None:
            days.setdefault(fw, []).append(i.open_days)
        if i.comments is not None and i.open_days is not None:
            with_data += 1
            if i.open_days > EFFORT_DAYS and i.comments > EFFORT_COMMENTS:
                high.append(i)
    effort = Effort(with_data, {k: tuple(v) for k, v in comments.items()}, {k: tuple(v) for k, v in days.items()},
                    len(high), order("fix_pattern", Counter(i.labels.fix_pattern for i in high)))

    agree = None
    names = sorted({a for i in issues for a in i.annotations})
    if len(names) >= 2:
        sets = {a: {i.id: i.annotations[a] for i in issues if a in i.annotations} for a in names}
        try:
            agree = {d: {"kappa": None if v.kappa is None else round(v.kappa, 4), "n": v.n, "method": v.method}
                     for d, v in agreement(sets).dimensions.items()}
        except DistdxError:
            agree = None

    analysis = Analysis(
        source=source, n=len(issues), frameworks=dict(Counter(framework_of(i) for i in issues).most_common()),
        label_sources=dict(Counter(i.label_source or "unspecified" for i in issues).most_common()),
        stages=stages, symptoms=symptoms, root_causes=root_causes, fix_patterns=fix_patterns,
        distributed=distributed, heatmaps=tuple(heatmaps), root_cause_fix=root_cause_fix, effort=effort,
        agreement=agree,
    )
    return Analysis(**{**vars(analysis), "findings": _findings(analysis)})


def _findings(a: Analysis) -> tuple[Finding, ...]:
    tax = taxonomy()
    known_ds = a.distributed.get("true", 0) + a.distributed.get("false", 0)
    out = [Finding("F.1", "Share of issues whose symptom occurs only in distributed frameworks",
                   _pct(a.distributed.get("true", 0) / known_ds if known_ds else None), _pct(STUDY_DIST_ONLY))]
    dist_sym = sorted(((v["distributed_only"], k) for k, v in a.symptoms.items() if v["distributed_only"]), reverse=True)
    out.append(Finding("F.2", "Most common distributed-only symptoms",
                       ", ".join(f"{tax.label(k)} ({n})" for n, k in dist_sym[:3]) or "none",
                       "initialization & launch setup failures, memory issues, unexpected performance"))
    s2 = a.stages.get("S2", {})
    s2_known = s2.get("count", 0) - s2.get("distributed_unknown", 0)
    out.append(Finding("F.3", "Communication-setup issues that are distributed-only",
                       _pct(s2["distributed_only"] / s2_known if s2_known else None) + f" of {s2.get('count', 0)}",
                       _pct(tax.nodes["S2"].dist_only)))
    for fid, stage in (("F.4", "S3"), ("F.5", "S4"), ("F.6", "S5")):
        counts = Counter({rc: n for rc, n in a.root_causes.items() if tax.stage_of(rc) == stage})
        total = a.stages.get(stage, {}).get("count", 0)
        top = counts.most_common(1)
        here = f"{tax.label(top[0][0])}: {top[0][1]} of {total} ({top[0][1] / total:.1%})" if top and total else "none"
        study_top = max(tax.children(stage, "root_cause"), key=lambda n: n.share)
        out.append(Finding(fid, f"Most common root cause in {tax.label(stage)}", here,
                           f"{tax.label(study_top.id)} ({study_top.share:.1%})"))
    fixed = {k: v for k, v in a.fix_patterns.items() if k != UNKNOWN}
    total_fixed = sum(fixed.values())
    running, cover = 0, 0
    for _, v in sorted(fixed.items(), key=lambda kv: -kv[1]):
        running += v
        cover += 1
        if running >= 0.9 * total_fixed:
            break
    out.append(Finding("F.7", "Share fixed by managing versions (F2) / tuning distributed APIs (F3)",
                       f"{_pct(fixed.get('F2', 0) / total_fixed if total_fixed else None)} / "
                       f"{_pct(fixed.get('F3', 0) / total_fixed if total_fixed else None)}; "
                       f"{cover} pattern(s) cover 90%",
                       f"{tax.nodes['F2'].share:.1%} / {tax.nodes['F3'].share:.1%}; four cover over 90%"))
    e = a.effort
    if e.with_data:
        f23 = e.high_effort_fix.get("F2", 0) + e.high_effort_fix.get("F3", 0)
        here = (f"{e.high_effort} of {e.with_data} issues; {_pct(f23 / e.high_effort if e.high_effort else None)} "
                "resolved by F2 or F3")
    else:
        here = "not available: the data set has no comment counts or open durations"
    out.append(Finding("Effort", f"High-effort issues (open > {EFFORT_DAYS} days, > {EFFORT_COMMENTS} comments)",
                       here, f"25% of issues; {STUDY_EFFORT_F2_F3:.1%} resolved by F2 or F3"))
    return tuple(out)


# -- rendering -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Figure:
    name: str
    caption: str
    png: bytes


@dataclass(frozen=True)
class ReportFiles:
    html: Path
    figures: tuple[Path, ...]
    notes: tuple[str, ...]


def _figures(a: Analysis) -> tuple[list[Figure], list[str]]:
    try:
        import matplotlib
    except ImportError:
        raise DistdxError("DX-STUDY-091", "the report's figures need matplotlib",
                          hint="pip install 'distdx[study]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    tax = taxonomy()
    figs: list[tuple[str, str, object]] = []
    notes: list[str] = []

    # taxonomy tree: symptoms by stage, total and distributed-only
    syms = [s for s in a.symptoms]
    fig, ax = plt.subplots(figsize=(9, max(3.0, 0.28 * len(syms) + 1)))
    ys = range(len(syms))[::-1]
    totals = [a.symptoms[s]["count"] for s in syms]
    dist = [a.symptoms[s]["distributed_only"] for s in syms]
    ax.barh(list(ys), totals, color="#c6dbef", label="all issues")
    ax.barh(list(ys), dist, color="#2171b5", label="distributed-only")
    ax.set_yticks(list(ys), [f"{s} {tax.nodes[s].name if s in tax else s}  {t} ({d})"
                             for s, t, d in zip(syms, totals, dist)], fontsize=7)
    ax.set_xlabel("issues")
    ax.set_title("Symptoms per stage: total (distributed-only)")
    ax.legend(loc="lower right", fontsize=8)
    figs.append(("symptoms", "Issues per symptom, with the distributed-only part (the study's Fig. 2).", fig))

    for h in a.heatmaps:
        if not any(any(r) for r in h.counts):
            notes.append(f"{tax.label(h.stage)}: no issues in this data set, so no heatmap.")
            continue
        fig, ax = plt.subplots(figsize=(1.0 + 0.6 * len(h.symptoms), 1.0 + 0.4 * len(h.root_causes)))
        ax.imshow(h.counts, cmap="Blues", aspect="auto")
        ax.set_xticks(range(len(h.symptoms)), h.symptoms, fontsize=8)
        ax.set_yticks(range(len(h.root_causes)), h.root_causes, fontsize=8)
        top = max(max(r) for r in h.counts)
        for y, row in enumerate(h.counts):
            for x, v in enumerate(row):
                if v:
                    ax.text(x, y, str(v), ha="center", va="center", fontsize=8,
                            color="white" if v > top / 2 else "black")
        ax.set_xlabel("symptom")
        ax.set_ylabel("root cause")
        ax.set_title(f"{tax.label(h.stage)}: root cause x symptom", fontsize=9)
        figs.append((f"heatmap_{h.stage}", f"Root causes x symptoms in {tax.label(h.stage)} (the study's Figs. 3-7).", fig))

    rcs = list(a.root_cause_fix)
    fps = [f for f in tax.ids("fix_pattern") + [UNKNOWN] if any(a.root_cause_fix[r].get(f) for r in rcs)]
    grid = [[a.root_cause_fix[r].get(f, 0) for f in fps] for r in rcs]
    fig, ax = plt.subplots(figsize=(2 + 0.7 * len(fps), 1 + 0.3 * len(rcs)))
    ax.imshow(grid, cmap="Greens", aspect="auto")
    ax.set_xticks(range(len(fps)), fps, fontsize=8)
    ax.set_yticks(range(len(rcs)), rcs, fontsize=7)
    for y, row in enumerate(grid):
        for x, v in enumerate(row):
            if v:
                ax.text(x, y, str(v), ha="center", va="center", fontsize=7)
    ax.set_title("Root cause -> fix pattern", fontsize=9)
    figs.append(("rootcause_fix", "How each root cause was fixed (the study's Fig. 9).", fig))

    e = a.effort
    frameworks = [fw for fw in a.frameworks if len(e.comments.get(fw, ())) >= 2 and len(e.open_days.get(fw, ())) >= 2]
    if frameworks:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
        ax1.violinplot([e.comments[fw] for fw in frameworks], showmedians=True)
        ax1.set_xticks(range(1, len(frameworks) + 1), frameworks, fontsize=8)
        ax1.set_title("comments per issue", fontsize=9)
        ax2.violinplot([e.open_days[fw] for fw in frameworks], showmedians=True)
        ax2.set_xticks(range(1, len(frameworks) + 1), frameworks, fontsize=8)
        ax2.set_title("days open", fontsize=9)
        figs.append(("effort_violins", "Comments and open duration per framework (the study's Fig. 8).", fig))
    else:
        notes.append("Comments and open duration per framework (the study's Fig. 8) are not drawn: "
                     f"{a.n - e.with_data} of {a.n} issues have no comment count or open duration in this data set.")
    if e.high_effort:
        fig, ax = plt.subplots(figsize=(5, 2.5))
        keys = list(e.high_effort_fix)
        ax.bar(keys, [e.high_effort_fix[k] for k in keys], color="#6baed6")
        ax.set_title(f"Fix patterns of the {e.high_effort} high-effort issues", fontsize=9)
        figs.append(("high_effort_fix", "Fix patterns resolving the high-effort subset.", fig))
    elif e.with_data:
        notes.append("No issue in this data set is open more than 67 days with more than 6 comments.")
    else:
        notes.append("The high-effort subset (open > 67 days and > 6 comments) cannot be formed: "
                     "the data set has no comment counts or open durations.")

    out = []
    for name, caption, fig in figs:
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        svg = io.BytesIO()
        fig.savefig(svg, format="svg")
        plt.close(fig)
        out.append(Figure(name, caption, buf.getvalue()))
        out.append(Figure(name + ".svg", caption, svg.getvalue()))
    return out, notes


def _table(head: list[str], rows: list[list[object]]) -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:14px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f3f3f3}figure{margin:1.5em 0}img{max-width:100%}figcaption{font-size:13px;color:#555}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:.5em 1em}"""


def write_report(a: Analysis, out_dir: str | Path, *, force: bool = False) -> ReportFiles:
    """Write ``index.html`` (figures inlined) and ``figures/*.png|svg`` into ``out_dir``, each file
    atomically; a report already there is replaced only with ``force``."""
    out = Path(out_dir)
    if not force:
        ensure_new(out / "index.html", "report")
    try:
        (out / "figures").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DistdxError("DX-STUDY-092", f"cannot create {out}: {e.strerror}", hint="pick another --out") from None
    tax = taxonomy()
    figures, notes = _figures(a)
    paths = []
    for f in figures:
        path = out / "figures" / (f.name if f.name.endswith(".svg") else f.name + ".png")
        write_atomic(path, f.png, force=True, what="figure")
        paths.append(path)
    fig_html = {f.name: f'<figure id="fig-{f.name}"><img alt="{html.escape(f.caption)}" src="data:image/png;base64,'
                f'{base64.b64encode(f.png).decode()}"><figcaption>{html.escape(f.caption)} '
                f'(<a href="figures/{f.name}.svg">SVG</a>)</figcaption></figure>'
                for f in figures if not f.name.endswith(".svg")}

    def pct(n: int, d: int) -> str:
        return f"{n / d:.1%}" if d else "n/a"

    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Distributed DL bug study: "
             f"{html.escape(a.source)}</title><style>{_CSS}</style></head><body>",
             f"<h1>Bugs in distributed deep learning: {a.n} labelled issues</h1>",
             f"<p>Data set: <code>{html.escape(a.source)}</code>. Frameworks: "
             + ", ".join(f"{html.escape(k)} {v}" for k, v in a.frameworks.items())
             + ". Labels: " + ", ".join(f"{html.escape(k)} {v}" for k, v in a.label_sources.items())
             + f". The study this reproduces labelled {STUDY_N} issues of DeepSpeed, Megatron-LM and Colossal-AI.</p>"]
    parts.append("<h2>Findings</h2>" + _table(["", "finding", "this data set", "the study"],
                                              [[f.id, f.statement, f.here, f.study] for f in a.findings]))
    parts.append("<h2>Stages and symptoms</h2>")
    parts.append(_table(["stage", "issues", "share", "distributed-only", "study share", "study distributed-only"],
                        [[tax.label(s), v["count"], pct(v["count"], a.n),
                          pct(v["distributed_only"], v["count"] - v["distributed_unknown"]),
                          f"{tax.nodes[s].share:.1%}" if s in tax else "",
                          f"{tax.nodes[s].dist_only:.1%}" if s in tax and tax.nodes[s].dist_only else ""]
                         for s, v in a.stages.items()]))
    parts.append(fig_html.get("symptoms", ""))
    parts.append(_table(["symptom", "issues", "distributed-only", "share of its stage"],
                        [[tax.label(s), v["count"], v["distributed_only"],
                          pct(v["count"], a.stages.get(tax.stage_of(s) or "", {}).get("count", 0))]
                         for s, v in a.symptoms.items()]))
    parts.append("<h2>Root causes per stage</h2>")
    parts.extend(fig_html[f"heatmap_{h.stage}"] for h in a.heatmaps if f"heatmap_{h.stage}" in fig_html)
    parts.append(_table(["root cause", "issues"], [[tax.label(k), v] for k, v in a.root_causes.items()]))
    parts.append("<h2>Fix patterns</h2>")
    parts.append(_table(["fix pattern", "issues", "share", "study share"],
                        [[tax.label(k), v, pct(v, a.n), f"{tax.nodes[k].share:.1%}" if k in tax else ""]
                         for k, v in a.fix_patterns.items()]))
    parts.append(fig_html.get("rootcause_fix", ""))
    parts.append("<h2>Effort: comments, open duration and the high-effort subset</h2>")
    parts.append(fig_html.get("effort_violins", ""))
    if a.effort.high_effort:
        parts.append(f"<p>{a.effort.high_effort} of {a.effort.with_data} issues with data are open more than "
                     f"{EFFORT_DAYS} days with more than {EFFORT_COMMENTS} comments.</p>")
        parts.append(_table(["fix pattern", "high-effort issues"],
                            [[tax.label(k), v] for k, v in a.effort.high_effort_fix.items()]))
        parts.append(fig_html.get("high_effort_fix", ""))
    if a.agreement:
        parts.append("<h2>Agreement between annotators</h2>")
        parts.append(_table(["dimension", "kappa", "issues", "method"],
                            [[d, "undefined" if v["kappa"] is None else f"{v['kappa']:.3f}", v["n"], v["method"]]
                             for d, v in a.agreement.items()]))
    if notes:
        parts.append("<h2>Not reproduced from this data</h2>")
        parts.extend(f'<p class="note">{html.escape(n)}</p>' for n in notes)
    parts.append("</body></html>")
    index = out / "index.html"
    write_atomic(index, "\n".join(p for p in parts if p), force=True, what="report")
    return ReportFiles(index, tuple(paths), tuple(notes))


def render_text(a: Analysis) -> str:
    tax = taxonomy()
    lines = [f"{a.n} labelled issues from {a.source}"]
    lines.append("stages:")
    lines += [f"  {tax.label(s):<40} {v['count']:>4}  distributed-only {v['distributed_only']}"
              for s, v in a.stages.items()]
    lines.append("symptoms:")
    lines += [f"  {tax.label(s):<40} {v['count']:>4}  distributed-only {v['distributed_only']}"
              for s, v in a.symptoms.items()]
    lines.append("root causes:")
    lines += [f"  {tax.label(k):<60} {v:>4}" for k, v in a.root_causes.items()]
    lines.append("fix patterns:")
    lines += [f"  {tax.label(k):<60} {v:>4}" for k, v in a.fix_patterns.items()]
    lines.append("findings:")
    lines += [f"  {f.id:<6} {f.statement}: {f.here}  (study: {f.study})" for f in a.findings]
    return "\n".join(lines)
