"""`distdx study mine|select|annotate|agreement|adjudicate|rounds|report`: rerun the bug study."""

from __future__ import annotations

import argparse
import json
import sys

from distdx.cli import add_format_option, emit
from distdx.errors import EXIT_USAGE, DistdxError

DB_HELP = "study database: a path (SQLite) or an SQLAlchemy URL (default: study.db)"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("study", help="mine, select, annotate and analyse GitHub issues as the bug study did")
    s = p.add_subparsers(dest="study_command", metavar="STEP")
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])

    m = s.add_parser("mine", help="fetch a repository's issues, comments and timelines from the GitHub API")
    m.add_argument("repo", help="OWNER/REPO, e.g. microsoft/DeepSpeed")
    m.add_argument("--db", default="study.db", help=DB_HELP)
    m.add_argument("--since", help="only issues updated since this ISO date (default: since the last complete run)")
    m.add_argument("--state", default="all", choices=("all", "open", "closed"), help="issue state (default: all)")
    m.add_argument("--label", dest="labels", help="only issues with these labels (comma-separated), e.g. bug")
    m.add_argument("--api-url", default=None, help="GitHub API root (default https://api.github.com)")
    m.add_argument("--per-page", type=int, default=100, help="items per page, 1..100 (default 100)")
    m.add_argument("--restart", action="store_true", help="drop an unfinished run instead of resuming it")
    m.add_argument("--progress", dest="progress", action="store_true", default=None, help="show a progress bar")
    m.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    add_format_option(m, ("text", "json"))
    m.set_defaults(func=run_mine)

    im = s.add_parser("import", help="store an offline dump of issues (JSON or JSONL) as if it had been mined",
                      description=_dump_doc(), formatter_class=argparse.RawDescriptionHelpFormatter)
    im.add_argument("dump", nargs="+", help="one or more .json (list of issues) or .jsonl (an issue a line) files")
    im.add_argument("--db", default="study.db", help=DB_HELP)
    add_format_option(im, ("text", "json"))
    im.set_defaults(func=run_import)

    sel = s.add_parser("select", help="apply the study's selection criteria and show the funnel")
    sel.add_argument("--db", default="study.db", help=DB_HELP)
    _selection_options(sel)
    sel.add_argument("--list", action="store_true", help="also list the selected issues")
    add_format_option(sel, ("text", "json", "markdown"))
    sel.set_defaults(func=run_select)

    a = s.add_parser("annotate", help="label issues in the terminal (blind), or import/export labels")
    a.add_argument("--db", default="study.db", help=DB_HELP)
    a.add_argument("--annotator", help="your name or initials (labels are kept per annotator)")
    a.add_argument("--round", type=int, default=1, help="annotation round, for saturation (default 1)")
    a.add_argument("--suggest", action="store_true", help="show the diagnosis engine's suggestion (off: blind)")
    a.add_argument("--limit", type=int, help="label at most this many issues in this session")
    _selection_options(a)
    a.add_argument("--import", dest="import_path", metavar="FILE", help="import labels (.csv, .jsonl, .json Label Studio)")
    a.add_argument("--export", dest="export_path", metavar="FILE", help="export labels (.csv, .jsonl, .json Label Studio)")
    a.add_argument("--final", action="store_true", help="with --import/--export: the adjudicated labels")
    a.add_argument("--force", action="store_true", help="with --export: replace the file if it exists")
    a.add_argument("--io-format", choices=("csv", "jsonl", "labelstudio"), help="label file format (default: by extension)")
    add_format_option(a, ("text", "json"))
    a.set_defaults(func=run_annotate)

    g = s.add_parser("agreement", help="Cohen's kappa (two annotators) or Fleiss' kappa (three or more) per dimension")
    g.add_argument("files", nargs="+", help="one label file per annotator, or one case file with `annotations`")
    g.add_argument("--io-format", choices=("csv", "jsonl", "labelstudio"), help="label file format (default: by extension)")
    g.add_argument("--max-disagreements", type=int, default=20, help="disagreements listed per dimension in text")
    add_format_option(g, ("text", "json", "markdown"))
    g.set_defaults(func=run_agreement)

    d = s.add_parser("adjudicate", help="record final labels: agreed ones at once, the others by asking")
    d.add_argument("--db", default="study.db", help=DB_HELP)
    d.add_argument("--adjudicator", default="", help="your name (recorded with each decision)")
    d.add_argument("--annotators", help="whose labels to compare (comma-separated; default: all)")
    d.add_argument("--decisions", metavar="FILE",
                   help="a third reading's labels (.csv, .jsonl, .json): they settle the dimensions the annotators "
                        "differ on, without asking; issues it does not cover are asked as usual")
    d.add_argument("--io-format", choices=("csv", "jsonl", "labelstudio"), help="decisions file format (default: by extension)")
    add_format_option(d, ("text", "json"))
    d.set_defaults(func=run_adjudicate)

    r = s.add_parser("rounds", help="per annotation round: issues, new categories and kappa (saturation)")
    r.add_argument("--db", default="study.db", help=DB_HELP)
    add_format_option(r, ("text", "json"))
    r.set_defaults(func=run_rounds)

    rp = s.add_parser("report", help="the study's figures and findings for a labelled data set, as HTML")
    rp.add_argument("--dataset", required=True, help="case-format .jsonl file, or a study database")
    rp.add_argument("--out", help="folder for index.html and figures/ (omit to print the numbers only)")
    rp.add_argument("--force", action="store_true", help="replace a report already in --out")
    add_format_option(rp, ("text", "json"))
    rp.set_defaults(func=run_report)


def _selection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", action="append", default=[], help="only this repository (repeatable)")
    p.add_argument("--filters", help="comma-separated filters in order (default: closed,bug,no-linked-pr,commented,described)")
    p.add_argument("--bug-label", action="append", default=[], help="label names that mean bug (default: bug)")
    p.add_argument("--min-comments", type=int, default=1, help="for `commented` (default 1)")
    p.add_argument("--min-description-chars", type=int, default=80, help="for `described` (default 80)")


def _selection(store, args):
    from distdx.study.select import SelectOptions, load_issues, parse_filters, select

    options = SelectOptions(bug_labels=tuple(args.bug_label) or ("bug",), min_comments=args.min_comments,
                            min_description_chars=args.min_description_chars)
    return select(load_issues(store, tuple(args.repo)), parse_filters(args.filters), options)


class ProgressBar:
    """A one-line progress bar on stderr (redrawn with carriage returns)."""

    def __init__(self, stream=None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width

    def __call__(self, p) -> None:
        if p.total:
            filled = int(self.width * min(p.done, p.total) / p.total)
            bar = "#" * filled + "-" * (self.width - filled)
            line = f"\r{p.phase:<9} [{bar}] {p.done}/{p.total} {p.detail}"
        else:
            line = f"\r{p.phase:<9} {p.done} {p.detail}"
        self.stream.write(line[:120].ljust(60))
        self.stream.flush()

    def wait(self, w) -> None:
        self.stream.write(f"\nwaiting {w.seconds:.0f}s ({w.reason})\n")
        self.stream.flush()

    def end(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def run_mine(args: argparse.Namespace) -> int:
    from distdx.study.github import DEFAULT_API_URL, GitHubClient, find_token
    from distdx.study.mine import MineOptions, StoreCache, check_options, mine
    from distdx.study.store import open_store

    options = MineOptions(repo=args.repo, state=args.state, labels=args.labels, since=args.since,
                          per_page=args.per_page, restart=args.restart)
    check_options(options)
    api_url = args.api_url or DEFAULT_API_URL
    host = "github.com" if api_url == DEFAULT_API_URL else api_url.split("://", 1)[-1].split("/", 1)[0]
    token = find_token(host=host)
    show = sys.stderr.isatty() if args.progress is None else args.progress
    bar = ProgressBar() if show else None
    with open_store(args.db) as store, GitHubClient(api_url, token, cache=StoreCache(store),
                                                    on_wait=bar.wait if bar else None) as client:
        try:
            result = mine(store, client, options, progress=bar)
        except KeyboardInterrupt:
            print("\ninterrupted: what was fetched is saved; run the same command to resume", file=sys.stderr)
            return 130
        finally:
            if bar:
                bar.end()
    if args.format == "json":
        emit(json.dumps(result.to_dict(), indent=2))
        return 0
    waited = sum(s for _, s in result.waits)
    emit("\n".join([
        f"{result.repo}: {'resumed an unfinished run; ' if result.resumed else ''}"
        f"{result.issues_listed} issues listed on {result.pages} pages "
        f"({result.pull_requests_skipped} pull requests skipped), {result.timelines} timelines "
        f"({result.comments} comments, {result.events} events)",
        f"requests {result.requests} ({result.not_modified} not modified), waited {waited:.0f}s in "
        f"{len(result.waits)} waits; {result.issues_total} issues stored; next --since {result.cursor or '-'}",
        "" if token else "note: no token (GITHUB_TOKEN or gh auth login): GitHub allows 60 requests an hour without one",
    ]).rstrip())
    return 0


def _dump_doc() -> str:
    from distdx.study import dump

    return dump.__doc__.split("\n\n", 1)[1].strip()


def run_import(args: argparse.Namespace) -> int:
    from distdx.study.dump import import_dump
    from distdx.study.store import open_store

    with open_store(args.db) as store:
        results = [import_dump(store, path) for path in args.dump]
    if args.format == "json":
        emit(json.dumps([vars(r) for r in results], indent=2))
    else:
        emit("\n".join(f"{r.path}: {r.issues} issues, {r.comments} comments, {r.linked_prs} linked pull requests"
                        for r in results) + f"\nnext: distdx study select --db {args.db}")
    return 0


def run_select(args: argparse.Namespace) -> int:
    from distdx.study.store import open_store

    with open_store(args.db, must_exist=True) as store:
        sel = _selection(store, args)
    if args.format == "json":
        emit(json.dumps(sel.to_dict(), indent=2))
        return 0
    if args.format == "markdown":
        lines = ["| step | criterion | left | removed |", "|---|---|---:|---:|", f"| mined | all issues | {sel.total} | |"]
        lines += [f"| {s.name} | {s.description} | {s.remaining} | {s.removed} |" for s in sel.steps]
    else:
        lines = [f"{'mined':<14} {sel.total:>6}  issues in {', '.join(sel.repos) or 'the database'}"]
        lines += [f"{s.name:<14} {s.remaining:>6}  (-{s.removed}) {s.description}" for s in sel.steps]
    if args.list:
        lines += [""] + [f"{'- ' if args.format == 'markdown' else ''}{i.key}  {i.title}" for i in sel.selected]
    text = "\n".join(lines)
    if args.format == "markdown":  # pasted into an issue: no secrets from issue titles
        from distdx.report.redact import redact

        text = redact(text)
    emit(text)
    return 0


def run_annotate(args: argparse.Namespace) -> int:
    from distdx.study.annotate import annotate_session, engine_suggestion, export_records, import_labels
    from distdx.paths import ensure_new
    from distdx.study.labelio import read_labels, write_labels
    from distdx.study.store import open_store

    if args.import_path and args.export_path:
        raise DistdxError("DX-STUDY-110", "--import and --export together", hint="do one, then the other")
    if args.export_path and not args.force:  # before the store is opened: a refused export touches nothing
        ensure_new(args.export_path, "labels")
    with open_store(args.db, must_exist=not args.import_path) as store:
        if args.import_path:
            records = read_labels(args.import_path, args.io_format)
            n = import_labels(store, records, annotator=args.annotator or "", round_no=args.round, final=args.final,
                              adjudicator=args.annotator or "")
            summary = {"imported": n, "from": args.import_path, "final": args.final}
        elif args.export_path:
            records = export_records(store, annotator=args.annotator, final=args.final)
            fmt = write_labels(records, args.export_path, args.io_format, force=args.force)
            summary = {"exported": len(records), "to": args.export_path, "format": fmt, "final": args.final}
        else:
            if not args.annotator:
                raise DistdxError("DX-STUDY-111", "annotating needs --annotator NAME",
                                  why="labels are kept per annotator so that agreement can be measured",
                                  hint="e.g. distdx study annotate --annotator A")
            queue = list(_selection(store, args).selected)[: args.limit] if args.limit else \
                list(_selection(store, args).selected)
            suggest = None
            if args.suggest:
                suggest = _safe_suggestion(engine_suggestion)
            result = annotate_session(store, queue, args.annotator, _ask, _say, round_no=args.round, suggest=suggest)
            summary = vars(result)
    if args.format == "json":
        emit(json.dumps(summary, indent=2))
    else:
        emit(", ".join(f"{k} {v}" for k, v in summary.items()))
    return 0


def _safe_suggestion(engine):
    def suggest(text: str):
        try:
            return engine(text)
        except (ImportError, DistdxError):  # a hint only: labelling goes on without it
            return None
    return suggest


def _ask(prompt: str) -> str:
    return input(prompt)


def _say(text: str) -> None:
    print(text, flush=True)


def run_agreement(args: argparse.Namespace) -> int:
    from distdx.study.agreement import agreement
    from distdx.study.labelio import annotation_sets, read_labels

    if len(args.files) == 1:
        sets = annotation_sets(args.files[0])
    else:
        sets = {}
        for n, path in enumerate(args.files, 1):
            records = read_labels(path, args.io_format)
            names = {r.annotator for r in records if r.annotator}
            name = names.pop() if len(names) == 1 else path
            if name in sets:
                name = f"{name} ({path})"
            sets[name] = {r.id: r.labels for r in records}
    result = agreement(sets)
    if args.format == "json":
        emit(json.dumps(result.to_dict(), indent=2))
        return 0
    md = args.format == "markdown"
    lines = [f"annotators: {', '.join(result.annotators)}; method: {'Cohen' if len(result.annotators) == 2 else 'Fleiss'}"
             f"; issues labelled by all: {next(iter(result.dimensions.values())).n}"
             + (f" ({result.only_some} labelled by some only, left out)" if result.only_some else "")]
    if md:
        lines += ["", "| dimension | kappa | agreement | n |", "|---|---:|---:|---:|"]
    for dim, d in result.dimensions.items():
        kappa = "undefined" if d.kappa is None else f"{d.kappa:.3f}"
        lines.append(f"| {dim} | {kappa} | {d.observed:.1%} | {d.n} |" if md else
                     f"  {dim:<22} kappa {kappa:>9}   agree {d.observed:6.1%}   n {d.n}")
    for dim, d in result.dimensions.items():
        if d.disagreements:
            lines.append(f"\ndisagreements on {dim} ({len(d.disagreements)}):")
            for x in d.disagreements[: args.max_disagreements]:
                lines.append(("- " if md else "  ") + f"{x.id}: " + ", ".join(f"{k}={v}" for k, v in x.labels.items()))
            if len(d.disagreements) > args.max_disagreements:
                lines.append(f"  ... {len(d.disagreements) - args.max_disagreements} more (--format json lists all)")
    text = "\n".join(lines)
    if md:
        from distdx.report.redact import redact

        text = redact(text)
    emit(text)
    return 0


def run_adjudicate(args: argparse.Namespace) -> int:
    from distdx.study.annotate import adjudicate_session
    from distdx.study.store import open_store

    from distdx.study.labelio import read_labels

    annotators = tuple(a.strip() for a in (args.annotators or "").split(",") if a.strip())
    decisions = read_labels(args.decisions, args.io_format) if args.decisions else ()
    with open_store(args.db, must_exist=True) as store:
        result = adjudicate_session(store, _ask, _say, annotators=annotators, adjudicator=args.adjudicator,
                                    decisions=decisions)
    if args.format == "json":
        emit(json.dumps(vars(result), indent=2))
    else:
        emit(f"agreed {result.agreed}, adjudicated {result.adjudicated}, still to decide {result.remaining}")
    return 0


def run_rounds(args: argparse.Namespace) -> int:
    from distdx.study.agreement import saturation
    from distdx.study.annotate import load_annotations
    from distdx.study.store import open_store

    with open_store(args.db, must_exist=True) as store:
        result = saturation((a.round, a.annotator, f"{a.repo}#{a.number}", a.labels) for a in load_annotations(store))
    if args.format == "json":
        emit(json.dumps(result.to_dict(), indent=2))
        return 0
    if not result.rounds:
        emit("no annotations yet: run `distdx study annotate --annotator NAME --round 1` first")
        return 0
    lines = []
    for r in result.rounds:
        kappas = ", ".join(f"{d} {'-' if k is None else f'{k:.2f}'}" for d, k in r.kappa.items())
        new = "; ".join(f"{d}: {', '.join(v)}" for d, v in r.new_categories.items() if v) or "none"
        lines.append(f"round {r.round}: {r.issues} issues, {r.new_total} new categories ({new}); kappa {kappas}")
    lines.append("saturated: the last round added no category" if result.saturated else
                 "not saturated yet: the last round added categories (or there is only one round)")
    emit("\n".join(lines))
    return 0


def run_report(args: argparse.Namespace) -> int:
    from distdx.study.dataset import load_dataset
    from distdx.study.report import analyse, render_text, write_report

    analysis = analyse(load_dataset(args.dataset), args.dataset)
    files = write_report(analysis, args.out, force=args.force) if args.out else None
    if args.format == "json":
        out = analysis.to_dict()
        if files:
            out["report"] = {"html": str(files.html), "figures": [str(p) for p in files.figures], "notes": list(files.notes)}
        emit(json.dumps(out, indent=2))
    else:
        text = render_text(analysis)
        if files:
            text += f"\nreport: {files.html} ({len(files.figures)} figure files)"
        emit(text)
    return 0 if analysis.n else EXIT_USAGE
