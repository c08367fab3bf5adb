"""Text, JSON and Markdown renderings of doctor reports (strings; the CLI prints them)."""

from __future__ import annotations

import json

from distdx.doctor.compare import Comparison
from distdx.doctor.models import CheckSpec, DoctorReport
from distdx.report.redact import redact

MARK = {"pass": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "skip"}


def summary_line(report: DoctorReport) -> str:
    n = report.counts()
    verdict = "FAILED" if report.failed else "ok"
    return (f"doctor: {verdict}: {n['pass']} passed, {n['warn']} warnings, {n['fail']} failed, "
            f"{n['skip']} skipped ({len(report.checks)} checks, {report.elapsed_s:.2f} s)")


def render_text(report: DoctorReport, *, verbose: bool = False) -> str:
    lines: list[str] = []
    area = None
    for c in report.checks:
        group = c.code.split("-")[1]
        if group != area:
            area = group
            lines.append(f"[{group}]")
        if c.status == "skip" and not verbose:
            lines.append(f"  {MARK[c.status]} {c.code} {c.title}: {c.message}")
            continue
        lines.append(f"  {MARK[c.status]} {c.code} {c.title}: {c.message}")
        if c.fix:
            lines.append(f"         fix: {c.fix}")
            lines.append(f"         prevents {c.symptom} / {c.root_cause} / {c.fix_pattern}")
    lines.append(summary_line(report))
    return "\n".join(lines)


def render_json(report: DoctorReport) -> str:
    return json.dumps(report.to_dict(), indent=2, default=str)


def render_markdown(report: DoctorReport) -> str:
    """An environment block to paste into a GitHub issue; secrets redacted."""
    f = report.facts
    lines = ["### Environment (`distdx doctor --format markdown`)", ""]
    for key, value in f.items():
        if key in ("env", "hostname") or value is None:
            continue
        shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        lines.append(f"- **{key}**: {shown or 'none'}")
    if f.get("gpus") is None:
        lines.append("- **gpus**: not read")
    env = f.get("env") or {}
    if env:
        lines += ["", "<details><summary>relevant environment variables</summary>", "", "```"]
        lines += [f"{k}={v}" for k, v in env.items()]  # type: ignore[union-attr]
        lines += ["```", "</details>"]
    problems = [c for c in report.checks if c.status in ("warn", "fail")]
    lines += ["", "### Doctor findings", ""]
    if problems:
        lines += ["| code | status | finding |", "|---|---|---|"]
        lines += [f"| {c.code} | {c.status} | {c.message.replace('|', '/')} |" for c in problems]
    else:
        lines.append("All checks passed or were skipped.")
    lines += ["", summary_line(report)]
    return redact("\n".join(lines))


def render_catalogue(specs: tuple[CheckSpec, ...]) -> str:
    return "\n".join(f"{s.code:<14} {s.severity:<8} {s.title}  [{s.symptom} / {s.root_cause} / {s.fix_pattern}]"
                     for s in specs)


def render_comparison(comparison: Comparison, label: str = "node") -> str:
    if not comparison.differences:
        return f"all {len(comparison.members)} {label}s agree on every version, reading and check"
    lines = [f"{len(comparison.differences)} difference(s) between {len(comparison.members)} {label}s:"]
    for d in comparison.differences:
        if d.majority is not None:
            odd = ", ".join(f"{m}={d.values[m]}" for m in d.odd)
            lines.append(f"  {d.key}: {odd} (the others: {d.majority})")
        else:
            lines.append(f"  {d.key}: " + ", ".join(f"{m}={v}" for m, v in d.values.items()))
    if comparison.odd_members:
        lines.append(f"odd {label} out: {', '.join(comparison.odd_members)}")
    return "\n".join(lines)


def render_cluster(cluster) -> str:  # type: ignore[no-untyped-def]
    """Rank 0's report of a ``--distributed`` run (a :class:`~distdx.doctor.distributed.ClusterReport`)."""
    lines = [f"distributed doctor: {cluster.world_size} ranks, backend {cluster.backend}"]
    for r in cluster.ranks:
        s = r.smoke
        answers = (("all_reduce", s.all_reduce_ok), ("all_gather", s.all_gather_ok), ("broadcast", s.broadcast_ok))
        ops = ", ".join(f"{name} {'ok' if good else 'WRONG'}" for name, good in answers)
        bw = f"{s.bus_bandwidth_gbps:.3f} GB/s bus bandwidth ({s.payload_bytes // 2**20} MiB all_reduce)" \
            if s.bus_bandwidth_gbps is not None else "no bandwidth figure"
        n = r.report.counts()
        lines.append(f"  {r.member}: {ops}; {bw}; checks {n['pass']} ok, {n['warn']} warn, {n['fail']} fail")
        lines += [f"      error: {e}" for e in s.errors]
        lines += [f"      FAIL {c.code} {c.message}" for c in r.report.checks if c.status == "fail"]
    lines.append(render_comparison(cluster.comparison, label="rank"))
    lines.append(f"cluster: {'FAILED' if cluster.failed else 'ok'} ({cluster.elapsed_s:.1f} s)")
    return "\n".join(lines)


def render_nodes(multi) -> str:  # type: ignore[no-untyped-def]
    """The report of ``--hostfile`` (a :class:`~distdx.doctor.remote.MultiNodeReport`)."""
    lines = [f"multi-node doctor: {len(multi.nodes)} node(s)"]
    for node in multi.nodes:
        if node.report is not None:
            lines.append(f"  {node.host}: reachable; {summary_line(node.report)}")
            lines += [f"      FAIL {c.code} {c.message}" for c in node.report.checks if c.status == "fail"]
        else:
            state = "UNREACHABLE" if not node.reachable else "NO REPORT"
            lines.append(f"  {node.host}: {state} after {node.elapsed_s:.1f} s: {node.error}")
            if node.hint:
                lines.append(f"      fix: {node.hint}")
    lines.append(render_comparison(multi.comparison, label="node"))
    return "\n".join(lines)
