"""Labels in and out: CSV, JSONL in the case format of ``shared/cases``, and Label Studio JSON.

The format is chosen by the file's extension (``.csv``, ``.jsonl``, ``.json`` for Label Studio)
unless given. Every reader validates labels against the taxonomy and names the line or task
that is wrong.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from distdx import jsonio
from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import UNKNOWN, taxonomy
from distdx.paths import ensure_new, write_atomic
from distdx.study.records import DIMENSIONS, TAXONOMY_DIMENSIONS, LabelSet

FORMATS = ("csv", "jsonl", "labelstudio")
CSV_COLUMNS = ("id", "url", "annotator", *DIMENSIONS, "note")


@dataclass(frozen=True)
class LabelRecord:
    """One issue's labels from one annotator (or final labels when ``annotator`` is empty)."""

    id: str
    url: str
    labels: LabelSet
    annotator: str = ""
    note: str = ""
    case: dict = field(default_factory=dict)  # other case-format fields (title, context, log, ...)


def format_of(path: str | Path, fmt: str | None = None) -> str:
    if fmt:
        return fmt
    suffix = Path(path).suffix.lower()
    found = {".csv": "csv", ".jsonl": "jsonl", ".json": "labelstudio"}.get(suffix)
    if not found:
        raise DistdxError("DX-STUDY-050", f"cannot tell the label format of {path}",
                          why="the format comes from the extension: .csv, .jsonl (case format), .json (Label Studio)",
                          hint="rename the file or pass --io-format csv|jsonl|labelstudio")
    return found


def _read_text(path: str | Path) -> str:
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise DistdxError("DX-STUDY-051", f"cannot read {path}: {e.strerror}", hint="check the path") from None
    if b"\x00" in raw[:4096]:
        raise DistdxError("DX-STUDY-052", f"{path} is a binary file, not labels",
                          hint="give a .csv, .jsonl or Label Studio .json file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DistdxError("DX-STUDY-052", f"{path} is not UTF-8 text (byte {e.start})",
                          hint="save it as UTF-8") from None


def _bad(path: str | Path, where: str, what: str) -> DistdxError:
    return DistdxError("DX-STUDY-053", f"{path}:{where}: {what}",
                       hint="see docs/study.md for the label file formats")


def read_labels(path: str | Path, fmt: str | None = None) -> list[LabelRecord]:
    fmt = format_of(path, fmt)
    text = _read_text(path)
    if fmt == "jsonl":
        return _read_jsonl(path, text)
    if fmt == "csv":
        return _read_csv(path, text)
    return _read_labelstudio(path, text)


def _read_jsonl(path, text: str) -> list[LabelRecord]:
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = jsonio.loads(line)
        except json.JSONDecodeError as e:
            raise _bad(path, str(lineno), f"not JSON ({e.msg})") from None
        if not isinstance(obj, dict) or not obj.get("id"):
            raise _bad(path, str(lineno), "not an object with an id")
        labels = LabelSet.from_dict(obj.get("labels"), f"{path}:{lineno}")
        case = {k: v for k, v in obj.items() if k not in ("id", "url", "labels", "annotator", "note")}
        out.append(LabelRecord(str(obj["id"]), str(obj.get("url") or ""), labels, str(obj.get("annotator") or ""),
                               str(obj.get("note") or ""), case))
    return out


def _read_csv(path, text: str) -> list[LabelRecord]:
    csv.field_size_limit(max(csv.field_size_limit(), len(text)))  # a long note is data, not an error
    reader = csv.DictReader(io.StringIO(text), strict=True)  # a quote never closed is an error, not data
    try:
        return _csv_records(path, reader)
    except csv.Error as e:  # a quote never closed, a NUL byte
        raise _bad(path, str(reader.line_num), f"not CSV ({e})") from None


def _csv_records(path, reader: csv.DictReader) -> list[LabelRecord]:
    missing = [c for c in ("id", *TAXONOMY_DIMENSIONS) if c not in (reader.fieldnames or [])]
    if missing:
        raise _bad(path, "1", f"missing column(s) {', '.join(missing)}")
    out = []
    for lineno, row in enumerate(reader, 2):
        if not (row.get("id") or "").strip():
            raise _bad(path, str(lineno), "empty id")
        labels = LabelSet.from_dict({d: row.get(d) for d in DIMENSIONS}, f"{path}:{lineno}")
        out.append(LabelRecord(row["id"].strip(), (row.get("url") or "").strip(), labels,
                               (row.get("annotator") or "").strip(), row.get("note") or ""))
    return out


def _ls_value(result: list, name: str):
    for r in result:
        if isinstance(r, dict) and r.get("from_name") == name:
            choices = (r.get("value") or {}).get("choices") or []
            return choices[0] if choices else None
    return None


def _read_labelstudio(path, text: str) -> list[LabelRecord]:
    try:
        tasks = jsonio.loads(text)
    except json.JSONDecodeError as e:
        raise _bad(path, str(e.lineno), f"not JSON ({e.msg})") from None
    if not isinstance(tasks, list):
        raise _bad(path, "1", "a Label Studio export is a JSON list of tasks")
    out = []
    for n, task in enumerate(tasks, 1):
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict) or not data.get("id"):
            raise _bad(path, f"task {n}", "task has no data.id")
        for ann in task.get("annotations") or []:
            result = ann.get("result") if isinstance(ann, dict) else None
            if not isinstance(result, list) or ann.get("was_cancelled"):
                continue
            raw = {d: _ls_value(result, d) for d in DIMENSIONS}
            labels = LabelSet.from_dict(raw, f"{path}:task {n}")
            who = ann.get("completed_by")
            if isinstance(who, dict):
                who = who.get("email") or who.get("id")
            annotator = str(data.get("annotator") or who or "")
            out.append(LabelRecord(str(data["id"]), str(data.get("url") or ""), labels, annotator))
    return out


def write_labels(records: list[LabelRecord], path: str | Path, fmt: str | None = None, *, force: bool = False) -> str:
    """Write records atomically; returns the format used. An existing file is replaced only with
    ``force``. Label Studio also gets its labelling config."""
    fmt = format_of(path, fmt)
    path = Path(path)
    if fmt == "jsonl":
        lines = []
        for r in records:
            obj = {"id": r.id, "url": r.url, **r.case, "labels": r.labels.to_dict()}
            if r.annotator:
                obj["annotator"] = r.annotator
            if r.note:
                obj["note"] = r.note
            lines.append(json.dumps(obj, ensure_ascii=False) + "\n")
        write_atomic(path, "".join(lines), force=force, what="labels")
    elif fmt == "csv":
        buf = io.StringIO(newline="")
        w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for r in records:
            w.writerow({"id": r.id, "url": r.url, "annotator": r.annotator, "note": r.note,
                        **{d: r.labels.value(d) for d in DIMENSIONS}})
        write_atomic(path, buf.getvalue(), force=force, what="labels")
    else:
        tasks = []
        for r in records:
            text = "\n\n".join(str(r.case.get(k) or "") for k in ("title", "context", "log") if r.case.get(k))
            task: dict = {"data": {"id": r.id, "url": r.url, "annotator": r.annotator, "text": text}}
            result = [{"from_name": d, "to_name": "text", "type": "choices",
                       "value": {"choices": [r.labels.value(d)]}} for d in DIMENSIONS]
            task["annotations"] = [{"result": result}]
            tasks.append(task)
        config = path.with_suffix(".label_config.xml")
        if not force:  # both files are checked before either is written
            ensure_new(path, "labels")
            ensure_new(config, "Label Studio config")
        write_atomic(path, json.dumps(tasks, ensure_ascii=False, indent=1), force=force, what="labels")
        write_atomic(config, label_studio_config(), force=True, what="Label Studio config")
    return fmt


def label_studio_config() -> str:
    """A Label Studio labelling interface with one single-choice question per dimension."""
    tax = taxonomy()
    lines = ['<View>', '  <Text name="text" value="$text"/>']
    for dim in DIMENSIONS:
        if dim == "distributed_specific":
            choices = ["true", "false", UNKNOWN]
        else:
            choices = tax.ids(dim) + ([UNKNOWN] if dim in ("root_cause", "fix_pattern") else [])
        lines.append(f'  <Header value="{dim}"/>')
        lines.append(f'  <Choices name="{dim}" toName="text" choice="single" showInLine="true">')
        for c in choices:
            hint = escape(tax.nodes[c].name, {'"': "&quot;"}) if c in tax else c
            lines.append(f'    <Choice value="{c}" hint="{hint}"/>')
        lines.append("  </Choices>")
    lines.append("</View>")
    return "\n".join(lines) + "\n"


def annotation_sets(path: str | Path) -> dict[str, dict[str, LabelSet]]:
    """Per annotator, id -> labels, from a case-format file's ``annotations`` field."""
    sets: dict[str, dict[str, LabelSet]] = {}
    for lineno, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = jsonio.loads(line)
        except json.JSONDecodeError as e:
            raise _bad(path, str(lineno), f"not JSON ({e.msg})") from None
        anns = obj.get("annotations") if isinstance(obj, dict) else None
        if not isinstance(anns, dict):
            continue
        for who, labels in anns.items():
            sets.setdefault(str(who), {})[str(obj.get("id"))] = LabelSet.from_dict(labels, f"{path}:{lineno}")
    return sets
