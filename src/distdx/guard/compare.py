"""Cross-rank comparisons: pure functions over what each rank published (no torch, no store).

Every function takes ``{rank: published value}`` and returns findings that name the ranks that
disagree with the majority and the exact difference. Ties go to the group holding the lowest rank.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Finding:
    kind: str
    message: str
    ranks: tuple[int, ...]  # the ranks at fault (the minority, the lagging, the lost)
    step: int | None = None
    severity: str = "error"
    key: str = ""  # identity for de-duplication across ranks and repeats
    fields: dict = field(default_factory=dict)


def _rank_list(ranks: list[int] | tuple[int, ...]) -> str:
    ranks = sorted(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks)


def split_majority(values: dict[int, object]) -> tuple[object, list[int], dict[object, list[int]]]:
    """``(majority value, minority ranks, {value: ranks})``."""
    groups: dict[object, list[int]] = defaultdict(list)
    for rank in sorted(values):
        groups[values[rank]].append(rank)
    majority = max(groups, key=lambda v: (len(groups[v]), -min(groups[v])))
    minority = sorted(r for v, rs in groups.items() if v != majority for r in rs)
    return majority, minority, dict(groups)


# ---------------------------------------------------------------- agreement before the first step

FACT_KINDS = {
    "version": ("version_mismatch", "error", "version mismatch across ranks"),
    "size": ("size_mismatch", "error", "world size mismatch across ranks"),
    "env": ("env_mismatch", "warning", "environment mismatch across ranks"),
    "config": ("config_mismatch", "warning", "config mismatch across ranks"),
}


def compare_facts(facts: dict[int, dict[str, str]]) -> list[Finding]:
    """Facts are flat ``{"version:torch": "2.13.0", "env:MASTER_PORT": "29500", ...}`` per rank;
    a key one rank lacks counts as the value ``<unset>``."""
    keys = sorted({k for f in facts.values() for k in f})
    by_kind: dict[str, list[tuple[str, object, list[int], dict]]] = defaultdict(list)
    for key in keys:
        values = {r: f.get(key, "<unset>") for r, f in facts.items()}
        majority, minority, groups = split_majority(values)
        if minority:
            by_kind[key.split(":", 1)[0]].append((key, majority, minority, groups))
    findings = []
    for kind, diffs in by_kind.items():
        event_kind, severity, title = FACT_KINDS.get(kind, ("config_mismatch", "warning", "config mismatch across ranks"))
        parts = []
        for key, _majority, _minority, groups in diffs:
            name = key.split(":", 1)[1]
            parts.append(
                f"{name} is "
                + " and ".join(f"{v} on {_rank_list(rs)}" for v, rs in sorted(groups.items(), key=lambda kv: min(kv[1])))
            )
        culprits = sorted({r for _k, _m, minority, _g in diffs for r in minority})
        findings.append(
            Finding(
                kind=event_kind,
                message=f"{title}: " + "; ".join(parts),
                ranks=tuple(culprits),
                severity=severity,
                key=f"{event_kind}",
                fields={"differences": {k.split(":", 1)[1]: {str(v): rs for v, rs in g.items()} for k, _m, _mi, g in diffs}},
            )
        )
    return findings


def _param_text(entry: list) -> str:
    _name, shape, dtype, requires_grad = entry
    return f"{list(shape)} {dtype}" + ("" if requires_grad else " (frozen)")


def compare_models(details: dict[int, list[list]], *, limit: int = 5) -> Finding | None:
    """Each rank's ``[[name, shape, dtype, requires_grad], ...]``; None when all agree."""
    digests = {r: repr(d) for r, d in details.items()}
    majority, minority, groups = split_majority(digests)
    if not minority:
        return None
    ref_rank = groups[majority][0]
    ref = {e[0]: e for e in details[ref_rank]}
    diffs: list[str] = []
    for rank in minority:
        mine = {e[0]: e for e in details[rank]}
        for name, entry in mine.items():
            if name not in ref:
                diffs.append(f"rank {rank} has {name} {_param_text(entry)} that rank {ref_rank} lacks")
            elif entry != ref[name]:
                diffs.append(f"rank {rank} has {name} {_param_text(entry)} where rank {ref_rank} has {_param_text(ref[name])}")
        diffs.extend(f"rank {rank} lacks {name} {_param_text(e)}" for name, e in ref.items() if name not in mine)
        if not any(d.startswith(f"rank {rank} ") for d in diffs):
            diffs.append(f"rank {rank} has the same parameters as rank {ref_rank} in a different order")
    counts = ", ".join(f"rank {r}: {len(details[r])}" for r in sorted(details))
    shown = diffs[:limit] + ([f"and {len(diffs) - limit} more"] if len(diffs) > limit else [])
    return Finding(
        kind="model_mismatch",
        message=f"model mismatch across ranks ({counts} parameters): " + "; ".join(shown),
        ranks=tuple(minority),
        key="model_mismatch",
        fields={"differences": diffs, "reference_rank": ref_rank},
    )


# ---------------------------------------------------------------- collective sequences

# A published collective record: [group, seq, op, shape, dtype, root, site, step]
G, SEQ, OP, SHAPE, DTYPE, ROOT, SITE, STEP = range(8)


def describe_call(rec: list, *, site: bool = True) -> str:
    args = []
    if rec[SHAPE] not in ("", "*"):
        args.append(f"shape={rec[SHAPE]}")
    if rec[DTYPE]:
        args.append(f"dtype={rec[DTYPE]}")
    if rec[ROOT] is not None:
        args.append(f"root={rec[ROOT]}")
    text = f"{rec[OP]}({', '.join(args)})"
    return f"{text} at {rec[SITE]}" if site and rec[SITE] else text


def _signature(rec: list) -> tuple:
    return (rec[OP], rec[SHAPE] if rec[SHAPE] != "*" else "*", rec[DTYPE], rec[ROOT])


def compare_rings(rings: dict[int, list[list]]) -> list[Finding]:
    """The first disagreement per group among the collectives every rank recorded: a different
    op, shape, dtype or root at the same sequence number (``collective_mismatch``), or the same
    call from different places in the code (``collective_diverged``: a rank skipped or added a
    collective and the calls now pair up wrongly)."""
    by_key: dict[tuple[str, int], dict[int, list]] = defaultdict(dict)
    for rank, ring in rings.items():
        for rec in ring:
            by_key[(rec[G], rec[SEQ])][rank] = rec
    first: dict[str, Finding] = {}
    for (group, seq), recs in sorted(by_key.items(), key=lambda kv: kv[0][1]):
        if group in first or len(recs) < 2:
            continue
        sigs = {r: _signature(rec) for r, rec in recs.items()}
        shapes = {s[1] for s in sigs.values()}
        if "*" in shapes:  # an op whose shapes may differ by design (all_to_all with splits)
            sigs = {r: (s[0], "*", s[2], s[3]) for r, s in sigs.items()}
        majority, minority, groups = split_majority(sigs)
        # the same op with other shapes is a tensor mismatch; another op at the same place in
        # the sequence means a rank skipped or added a call
        kind = "collective_mismatch" if len({s[0] for s in sigs.values()}) == 1 else "collective_diverged"
        if not minority:
            majority, minority, groups = split_majority({r: rec[SITE] for r, rec in recs.items()})
            kind = "collective_diverged"
            if not minority:
                continue
        ref = recs[groups[majority][0]]
        odd = recs[minority[0]]
        step = ref[STEP]  # the step of the call the odd rank did not make the same way
        if kind == "collective_mismatch":
            message = (
                f"collective mismatch at seq {seq} on group {group}"
                + (f" (step {step})" if step is not None else "")
                + f": {_rank_list(minority)} called {describe_call(odd)} while {_rank_list(groups[majority])} called {describe_call(ref)}"
            )
        else:
            message = (
                f"collective order diverged at seq {seq} on group {group}"
                + (f" (step {step})" if step is not None else "")
                + f": {_rank_list(minority)} called {describe_call(odd)} while {_rank_list(groups[majority])} called {describe_call(ref)};"
                " a rank skipped or added a collective, so the calls pair up wrongly"
            )
        first[group] = Finding(
            kind=kind,
            message=message,
            ranks=tuple(minority),
            step=step,
            key=f"{kind}:{group}:{seq}",
            fields={
                "group": group,
                "seq": seq,
                "op": odd[OP],
                "calls": {str(r): describe_call(rec) for r, rec in sorted(recs.items())},
                "shapes": {str(r): rec[SHAPE] for r, rec in sorted(recs.items())},
            },
        )
    return sorted(first.values(), key=lambda f: f.fields["seq"])


# ---------------------------------------------------------------- hangs and lost ranks

# A heartbeat: {"rank", "pid", "host", "beat", "step", "counts": {group: seq},
#   "groups": {group: [ranks]}, "act": [kind, group, seq, op, site, since, hang threshold s] | None
#   (the threshold is absent in an act merged from an announcement), "phase": [name, since] | None,
#   "phase_end": when the last slow phase ended (0.0: none yet),
#   "last": record | None, "state": "running" | "exited", "loaders": {...}, "drift": [...]}


def merge_announced(hb: dict, announced: list) -> None:
    """Fold a rank's last announced collective (``record + [time]``, published before each call)
    into its heartbeat (published less often): counts, ring, last call, step, and, when the
    announcement is newer than the heartbeat, the call it is in."""
    rec, when = announced[:8], announced[8]
    group, seq = rec[G], rec[SEQ]
    counts = hb.setdefault("counts", {})
    if seq <= counts.get(group, 0):
        return
    counts[group] = seq
    hb.setdefault("ring", []).append(rec)
    hb["last"] = rec
    hb.setdefault("last_by_group", {})[group] = rec
    if rec[STEP] is not None and (hb.get("step") is None or rec[STEP] > hb["step"]):
        hb["step"] = rec[STEP]
    if when > hb.get("t", 0):
        hb["act"] = ["collective", group, seq, rec[OP], rec[SITE], when]


def _whereabouts(hb: dict, now: float) -> str:
    act = hb.get("act")
    if hb.get("state") == "exited":
        return "has exited"
    if act:
        kind, group, seq, op, site, since = act[:6]
        what = f"{op} seq {seq} on group {group}" if kind == "collective" else f"{kind}"
        return f"is in {what}" + (f" at {site}" if site else "") + f" for {now - since:.1f} s"
    phase = hb.get("phase")
    if phase:
        return f"is in {phase[0]} for {now - phase[1]:.1f} s"
    return "is running other code"


def _threshold(act: list, hang_s: float) -> float:
    return act[6] if len(act) > 6 and act[6] else hang_s


def find_hang(heartbeats: dict[int, dict], now: float, hang_s: float, lost: dict[int, str], *,
              slow_phase_s: float | None = None) -> Finding | None:
    """A rank inside one collective (or backward) for longer than its threshold (the one its
    heartbeat carries, adaptive to that call's pace, else ``hang_s``) while a peer is elsewhere:
    names the stuck ranks, the lagging or lost peers, and where each one is. While the stuck rank
    or a lagging one is in a known slow phase (checkpoint save, evaluation), only a wait past
    ``slow_phase_s`` is a hang."""
    stuck = {r: hb for r, hb in heartbeats.items()
             if hb.get("act") and now - hb["act"][5] > _threshold(hb["act"], hang_s) and r not in lost}
    if not stuck:
        return None
    rank = min(stuck, key=lambda r: (stuck[r]["act"][5], r))
    hb = stuck[rank]
    kind, group, seq, op, site, since = hb["act"][:6]
    threshold = _threshold(hb["act"], hang_s)
    members = hb.get("groups", {}).get(group) if kind == "collective" else None
    peers = [p for p in (members or sorted(heartbeats) + sorted(lost)) if p != rank]
    waiting, lagging, notes = [rank], [], []
    for p in sorted(set(peers)):
        if p in lost:
            lagging.append(p)
            notes.append(f"rank {p} {lost[p]}")
            continue
        phb = heartbeats.get(p)
        if phb is None:
            lagging.append(p)
            notes.append(f"rank {p} never published a heartbeat")
            continue
        pact = phb.get("act")
        if pact and pact[:3] == hb["act"][:3]:
            waiting.append(p)
            continue
        if kind == "collective":
            done = phb.get("counts", {}).get(group, 0)
            last = phb.get("last_by_group", {}).get(group)
            if done < seq:
                lagging.append(p)
                prev = (f"; its last call on group {group} was seq {done} {describe_call(last)}" if last and done
                        else f"; it has made no call on group {group}")
                notes.append(f"rank {p} has not reached it{prev}; it {_whereabouts(phb, now)} (step {phb.get('step')})")
            else:
                lagging.append(p)
                notes.append(f"rank {p} already went past seq {seq} (at seq {done}); it {_whereabouts(phb, now)}")
        elif pact is None or pact[0] != kind:
            lagging.append(p)
            notes.append(f"rank {p} {_whereabouts(phb, now)} (step {phb.get('step')})")
        else:
            waiting.append(p)
    involved = [heartbeats.get(p) or {} for p in [*waiting, *lagging] if p not in lost]  # a lost rank: its own report
    if slow_phase_s is not None and any(h.get("phase") for h in involved) and now - since <= slow_phase_s:
        return None  # a checkpoint save or an evaluation on a lagging rank is slow, not stuck
    # a wait counts from the end of the last slow phase of a rank it involves, and, when every rank
    # is inside the call, from the last one's arrival: a peer that just came back is not stuck
    started = max([since, *(h.get("phase_end") or 0.0 for h in involved)]
                  + ([] if lagging else [(h.get("act") or [0] * 6)[5] for h in involved]))
    if now - started <= threshold:
        return None
    what = f"{op} seq {seq} on group {group}" + (f" at {site}" if site else "") if kind == "collective" else f"{kind}"
    # the step of the call being waited in: without optimizer steps the published step stays 0,
    # while each record carries the loop iteration it was made in
    current = hb.get("last_by_group", {}).get(group) if kind == "collective" else None
    at_call = current[STEP] if current and current[SEQ] == seq and current[STEP] is not None else None
    step = at_call if at_call is not None else hb.get("step")
    head = f"hang at step {step}: {_rank_list(waiting)} {'has' if len(waiting) == 1 else 'have'} waited {now - since:.1f} s in {what}"
    if lagging:
        message = f"{head}; " + "; ".join(notes)
    else:
        message = f"{head}; every rank of the group is inside it, so the transport itself is stuck"
    culprits = tuple(lagging) if lagging else tuple(waiting)
    return Finding(
        kind="hang",
        message=message,
        ranks=culprits,
        step=step if not lagging or at_call is not None else heartbeats.get(lagging[0], {}).get("step", step),
        key=f"hang:{group}:{seq}:{kind}",
        fields={"waiting": waiting, "lagging": lagging, "op": op, "seq": seq, "group": group,
                "waited_s": round(now - since, 1), "threshold_s": threshold},
    )


def find_lost(heartbeats: dict[int, dict], lost: dict[int, str], *, lockstep: bool = False) -> list[Finding]:
    """Lost ranks with the step they were in: the last published step, or the next one when
    that rank had finished its optimizer step and the collective it was in has completed on a
    peer (so it died after the last thing it published)."""
    out = []
    for rank, why in sorted(lost.items()):
        hb = heartbeats.get(rank, {})
        last = hb.get("last")
        step = hb.get("step")
        act = hb.get("act")
        finished = act is None or (
            act[0] == "collective"
            and any(
                p != rank and p not in lost and (phb.get("counts") or {}).get(act[1], 0) >= act[2]
                and (phb.get("act") or [None] * 3)[:3] != act[:3]
                for p, phb in heartbeats.items()
            )
        )
        if step is not None and hb.get("pending") and finished:
            step += 1
        live_steps = [phb.get("step") for p, phb in heartbeats.items() if p not in lost and phb.get("step") is not None]
        if lockstep and live_steps and step is not None:
            # data-parallel ranks all-reduce every step, so none is more than a step apart: the
            # lost rank reached at least the step its peers are in
            step = max(step, min(live_steps))
        where = f"; its last collective was {describe_call(last)} seq {last[SEQ]}" if last else ""
        out.append(
            Finding(
                kind="rank_lost",
                message=f"rank {rank} lost at step {step}: {why}{where}",
                ranks=(rank,),
                step=step,
                key=f"rank_lost:{rank}",
                fields={"pid": hb.get("pid"), "host": hb.get("host")},
            )
        )
    return out


# ---------------------------------------------------------------- data balance and replicas


def compare_loaders(heartbeats: dict[int, dict]) -> list[Finding]:
    """``loaders = {index: [epoch, length, count, done]}``: different lengths for the same epoch,
    or one rank's epoch ending at a different batch count than another's."""
    out = []
    indexes = sorted({i for hb in heartbeats.values() for i in hb.get("loaders", {})})
    for idx in indexes:
        states = {r: hb["loaders"][idx] for r, hb in heartbeats.items() if idx in hb.get("loaders", {})}
        epochs = {s[0] for s in states.values()}
        for epoch in sorted(epochs):
            same = {r: s for r, s in states.items() if s[0] == epoch}
            if len(same) < 2:
                continue
            lengths = {r: s[1] for r, s in same.items() if s[1] >= 0}
            finals = {r: s[2] for r, s in same.items() if s[3]}
            counts = dict(lengths)
            if len(set(lengths.values())) <= 1:
                counts = dict(finals)
                if finals:
                    shortest = min(finals.values())
                    counts.update({r: s[2] for r, s in same.items() if not s[3] and s[2] > shortest})
                if len(set(counts.values())) <= 1:
                    continue
            majority, minority, groups = split_majority(counts)
            first_unpaired = min(counts.values())  # the first batch index only some ranks have
            if len(groups) == 2 and all(len(rs) == len(groups[majority]) for rs in groups.values()):
                # an even split: the ranks with more batches are the ones that will wait alone
                minority = groups[max(groups, key=lambda v: v)]
                majority = min(groups, key=lambda v: v)
            parts = [f"{_rank_list(rs)} {'has' if len(rs) == 1 else 'have'} {v} batches" for v, rs in sorted(groups.items(), key=lambda kv: min(kv[1]))]
            out.append(
                Finding(
                    kind="uneven_batches",
                    message=f"uneven batches in epoch {epoch} of the DataLoader at {idx}: " + " while ".join(parts)
                    + "; the ranks with more batches will wait in a collective the others never join",
                    ranks=tuple(sorted(minority)),
                    step=first_unpaired,
                    key=f"uneven_batches:{idx}:{epoch}",
                    fields={"loader": idx, "epoch": epoch, "batches": {str(r): c for r, c in sorted(counts.items())}},
                )
            )
    return out


def compare_drift(heartbeats: dict[int, dict], names: list[str]) -> list[Finding]:
    """``drift = [step, digest, sums]`` per rank; replicas of a data-parallel model must agree."""
    by_step: dict[int, dict[int, list]] = defaultdict(dict)
    for r, hb in heartbeats.items():
        if hb.get("drift"):
            by_step[hb["drift"][0]][r] = hb["drift"]
    out = []
    for step, entries in sorted(by_step.items()):
        if len(entries) < 2:
            continue
        majority, minority, groups = split_majority({r: e[1] for r, e in entries.items()})
        if not minority:
            continue
        ref = entries[groups[majority][0]][2]
        odd = entries[minority[0]][2]
        differing = [names[i] if i < len(names) else f"#{i}" for i, (a, b) in enumerate(zip(ref, odd)) if a != b]
        shown = ", ".join(differing[:5]) + (f" and {len(differing) - 5} more" if len(differing) > 5 else "")
        out.append(
            Finding(
                kind="param_drift",
                message=f"parameters drifted apart across data-parallel ranks at step {step}: "
                f"{_rank_list(minority)} differ from {_rank_list(groups[majority])} in {shown or 'parameter order'}",
                ranks=tuple(minority),
                step=step,
                key=f"param_drift:{step}",
                fields={"parameters": differing[:50]},
            )
        )
    return out


def find_skipped(heartbeats: dict[int, dict], now: float, min_wait_s: float = 0.0) -> list[Finding]:
    """A rank waiting in collective ``seq`` of a group while a member has not made that call but
    is already at a later step: that member skipped the collective (its next collectives, or
    DDP's gradient all-reduce, now pair up with the wrong calls)."""
    out = []
    for rank, hb in sorted(heartbeats.items()):
        act = hb.get("act")
        if not act or act[0] != "collective" or now - act[5] < min_wait_s:
            continue
        _kind, group, seq, op, site, since = act[:6]
        rec = (hb.get("last_by_group") or {}).get(group)
        step = rec[STEP] if rec and rec[SEQ] == seq else hb.get("step")
        members = hb.get("groups", {}).get(group) or sorted(heartbeats)
        for p in members:
            phb = heartbeats.get(p)
            if p == rank or not phb or phb.get("state") == "exited":
                continue
            done = phb.get("counts", {}).get(group, 0)
            pstep = phb.get("step")
            if done < seq and pstep is not None and step is not None and pstep > step:
                pact = phb.get("act")
                where = f"{pact[0]} at {pact[4]}" if pact and pact[0] != "collective" else _whereabouts(phb, now)
                out.append(
                    Finding(
                        kind="collective_skipped",
                        message=f"collective skipped at step {step}: rank {p} never called {describe_call(rec) if rec else op} "
                        f"(seq {seq} on group {group}) that rank {rank} is waiting in; rank {p} moved on to step {pstep} ({where})",
                        ranks=(p,),
                        step=step,
                        key=f"collective_skipped:{group}:{seq}",
                        fields={"group": group, "seq": seq, "op": op, "waiting": [rank], "skipped_by": [p]},
                    )
                )
    return out
