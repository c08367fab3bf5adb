"""Lint, fix, lint again: the loop behind ``distdx fix``.

Each round lints every input together (a config's world size may come from the script that launches it),
asks the fixer of each selected finding for its edits, applies the edits that do not overlap, and lints
again. A round whose edits make a file unparseable is undone for that file. The loop stops at a fixed point
(no new fix) or after ``MAX_ROUNDS``; a fix is applied at most once per (file, code, field), so a fix that
does not remove its finding cannot loop. What is still reported at the end is in ``FileFix.remaining``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from distdx.errors import DistdxError
from distdx.fix.fixers import FIXERS, FileContext
from distdx.fix.models import Edit, FileFix, Fix, FixReport
from distdx.lint import Finding, LintOptions, lint_rules
from distdx.lint.engine import Source, _kind_of, lint_sources
from distdx.lint.source import expand_inputs, read_text

MAX_ROUNDS = 5


@dataclass(frozen=True)
class FixOptions:
    """Which findings to fix. By default every finding of severity error; ``select`` adds codes (or code
    prefixes such as ``LINT-DS``) of any severity and then only those are fixed; ``ignore`` removes codes."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe: bool = False  # --unsafe-fixes: apply fixes that change behaviour too

    def wants(self, finding: Finding) -> bool:
        def named(patterns: tuple[str, ...]) -> bool:
            return any(finding.code == p or finding.code.startswith(p.rstrip("-") + "-") for p in patterns)

        if named(self.ignore):
            return False
        return named(self.select) if self.select else finding.severity == "error"


def _check_codes(options: FixOptions) -> None:
    codes = set(lint_rules())
    for pattern in (*options.select, *options.ignore):
        if not any(c == pattern or c.startswith(pattern.rstrip("-") + "-") for c in codes):
            raise DistdxError("DX-FIX-001", f"--select/--ignore {pattern!r} names no lint rule",
                              why="fix selects findings by their lint code or a code prefix",
                              hint="run `distdx lint --list-rules` for the codes, e.g. --select LINT-DS-010 or LINT-DS")


def apply_edits(text: str, edits: list[Edit]) -> str:
    """``text`` with non-overlapping ``edits`` applied (the caller guarantees they do not overlap)."""
    out, last = [], 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        out.append(text[last:e.start])
        out.append(e.replacement)
        last = e.end
    out.append(text[last:])
    return "".join(out)


def _overlaps(a: tuple[Edit, ...], taken: list[Edit]) -> bool:
    return any(e.start < t.end and t.start < e.end or e.start == t.start for e in a for t in taken)


def propose(finding: Finding, ctx: FileContext) -> Fix | None:
    """The fix for one finding, or None when its rule has none or the file does not say enough."""
    rule = lint_rules()[finding.code]
    fixer = FIXERS.get(finding.code)
    if rule.fix_kind == "none" or fixer is None:
        return None
    proposal = fixer(ctx, finding)
    if proposal is None:
        return None
    kind = "unsafe" if proposal.unsafe or rule.fix_kind == "unsafe" else "safe"
    return Fix(code=finding.code, file=finding.file, field=finding.field, kind=kind,
               description=proposal.description, edits=proposal.edits, line=finding.line)


def fix_sources(sources: list[Source], lint_options: LintOptions = LintOptions(),
                options: FixOptions = FixOptions()) -> FixReport:
    """Fix the inputs given as text; nothing is read or written."""
    _check_codes(options)
    texts = {s.name: s.text for s in sources}
    kinds = {s.name: s.kind for s in sources}
    applied: dict[str, list[Fix]] = {s.name: [] for s in sources}
    skipped: dict[str, dict[tuple[str, str], Fix]] = {s.name: {} for s in sources}
    done: set[tuple[str, str, str]] = set()
    rounds = 0
    report = lint_sources(sources, lint_options)
    while rounds < MAX_ROUNDS:
        world = report.world_size
        contexts = {n: FileContext(n, texts[n], kinds[n], world, lint_options.gpus_per_node) for n in texts}
        chosen: dict[str, list[Fix]] = {n: [] for n in texts}
        taken: dict[str, list[Edit]] = {n: [] for n in texts}
        for finding in report.findings:
            key = (finding.file, finding.code, finding.field)
            if finding.file not in texts or key in done or not options.wants(finding):
                continue
            fix = propose(finding, contexts[finding.file])
            if fix is None:
                continue
            if fix.kind == "unsafe" and not options.unsafe:
                skipped[finding.file].setdefault((fix.code, fix.field), fix)
                continue
            if _overlaps(fix.edits, taken[finding.file]):
                continue  # the next round, against the text this one leaves
            chosen[finding.file].append(fix)
            taken[finding.file].extend(fix.edits)
        if not any(chosen.values()):
            break
        rounds += 1
        unparsable = {f.file for f in report.findings if f.code == "LINT-SYN-001"}
        before = dict(texts)
        for name, fixes in chosen.items():
            if fixes:
                texts[name] = apply_edits(texts[name], taken[name])
        report = lint_sources([Source(n, texts[n], kinds[n]) for n in texts], lint_options)
        broken = {f.file for f in report.findings if f.code == "LINT-SYN-001"} - unparsable
        for name in broken:  # an edit that breaks the syntax is a fixer's bug: never keep it, never retry it
            texts[name] = before[name]
            done.update((f.file, f.code, f.field) for f in chosen[name])
            chosen[name] = []
        if broken:
            report = lint_sources([Source(n, texts[n], kinds[n]) for n in texts], lint_options)
        for name, fixes in chosen.items():
            applied[name].extend(fixes)
            done.update((f.file, f.code, f.field) for f in fixes)
    originals = {s.name: s.text for s in sources}
    files = []
    for name in texts:
        remaining = tuple(f"{f.code} {f.field}".rstrip() for f in report.findings
                          if f.file == name and f.severity == "error")
        still = {(f.code, f.field) for f in report.findings if f.file == name}  # an unsafe fix made moot is no news
        files.append(FileFix(name, originals[name], texts[name], tuple(applied[name]),
                             tuple(v for k, v in skipped[name].items() if k in still), remaining, rounds))
    return FixReport(tuple(files), report.notes)


def fix(paths: list[str] | tuple[str, ...], lint_options: LintOptions = LintOptions(),
        options: FixOptions = FixOptions()) -> FixReport:
    """Read the files (folders are searched as lint does) and compute their fixes; nothing is written."""
    if not paths:
        raise DistdxError("DX-FIX-002", "nothing to fix", hint="pass config files or launch scripts")
    sources = []
    for path in expand_inputs(paths):
        text = read_text(path)
        sources.append(Source(path, text, _kind_of(path, text)))
    return fix_sources(sources, lint_options, options)


def _free_backup(path: str) -> str:
    candidate, n = f"{path}.bak", 1
    while os.path.lexists(candidate):
        candidate, n = f"{path}.bak{n}", n + 1
    return candidate


def write_fixed(file: FileFix, out: str | None = None, backup: bool = True, force: bool = False) -> tuple[str, str | None]:
    """Write one fixed file: in place (refusing when it changed since it was read; the original kept as
    ``FILE.bak`` unless ``backup`` is False) or, with ``out``, to a new file. Both through
    :func:`distdx.paths.write_atomic`, so an interrupted write leaves the original whole. Returns the path
    written and the backup's path (or None)."""
    from distdx.paths import write_atomic

    if out is not None:
        write_atomic(out, file.fixed, force=force, what="fixed copy")
        return out, None
    try:
        now = read_text(file.file)
        mode = os.stat(file.file).st_mode & 0o7777
    except DistdxError:
        now, mode = None, None
    if now != file.original:
        raise DistdxError("DX-FIX-003", f"{file.file} changed since distdx read it; nothing was written",
                          why="writing the fixes would lose the changes made in between",
                          hint="run `distdx fix --write` again on the file as it is now")
    saved = None
    if backup:
        saved = _free_backup(file.file)
        write_atomic(saved, file.original, what="backup", mode=mode)
    write_atomic(file.file, file.fixed, force=True, what="fixed file", mode=mode)
    return file.file, saved


def fix_example(code: str) -> str | None:
    """A rule's docs example after ``distdx fix --unsafe-fixes`` (world size 8, "auto" not filled in by Hugging
    Face), or None when the fix leaves it as it is. Megatron examples are argument lists: they are run as
    ``python pretrain_gpt.py ARGS`` and shown without that prefix. rules.yaml keeps the result as
    ``fixed_example``, so the docs page shows a before and after; tests/fix checks the two agree."""
    rule = lint_rules()[code]
    text, prefix = rule.example, ""
    if text.startswith("--"):
        prefix = "python pretrain_gpt.py "
        text = prefix + text
    name = ("default_config.yaml" if rule.applies_to == "accelerate" else "ds_config.json"
            if text.lstrip().startswith(("{", "[")) else "train.py" if "Plugin(" in text else "launch.sh")
    result = fix_sources([Source(name, text, _kind_of(name, text))], LintOptions(world_size=8, hf=False),
                         FixOptions(select=(code,), unsafe=True)).files[0]
    if not result.applied:
        return None
    return result.fixed.strip()[len(prefix):]
