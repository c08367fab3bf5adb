"""Edits that change one thing and keep the rest of the file as written.

JSON (and the hjson DeepSpeed reads): members are found by :func:`distdx.lint.source.json_text_layout`, so an
edit replaces a value, renames a key, removes a member with its comma, or adds one in the style of its
neighbours. YAML (accelerate configs): the same members, found by :func:`distdx.lint.source.yaml_text_layout`;
a key or a scalar is replaced where it is written (plain when YAML reads it back as the same value, else
quoted) and a member of a block mapping goes with its lines, its comment included. Shell: a flag's value is replaced where it is written (or, for ``--flag $VAR``, in the
``VAR=...`` assignment above the command), and a flag is removed with its own words only. Python: keyword
arguments of a call, found with :mod:`ast`.
"""

from __future__ import annotations

import ast
import json
import re

import yaml

from distdx.fix.models import Edit
from distdx.lint.source import JsonLayout, Member


def json_value(value: object) -> str:
    return json.dumps(value)


# ---------------------------------------------------------------------------------------------- JSON
def replace_value(member: Member, value: object) -> Edit:
    return Edit(member.value_start, member.value_end, json_value(value))


def rename_key(member: Member, key: str) -> Edit:
    return Edit(member.key_start, member.key_end, json.dumps(key))


def _line_start(text: str, i: int) -> int:
    return text.rfind("\n", 0, i) + 1


def _alone_on_line(text: str, start: int, end: int) -> bool:
    """Only blanks before ``start`` and after ``end`` on their lines."""
    before = text[_line_start(text, start):start]
    stop = text.find("\n", end)
    after = text[end:len(text) if stop < 0 else stop]
    return not before.strip() and not after.strip()


def remove_member(text: str, layout: JsonLayout, member: Member) -> Edit:
    siblings = layout.children(member.parent)
    index = next(i for i, m in enumerate(siblings) if m.key_start == member.key_start)
    if member.comma >= 0:  # "key": value, -> drop through the comma
        end = member.comma + 1
        if _alone_on_line(text, member.key_start, end):
            stop = text.find("\n", end)
            return Edit(_line_start(text, member.key_start), len(text) if stop < 0 else stop + 1, "")
        while end < len(text) and text[end] in " \t":
            end += 1
        return Edit(member.key_start, end, "")
    if index > 0:  # the last member: drop the comma before it instead
        previous = siblings[index - 1]
        return Edit(previous.comma, member.value_end, "")
    if _alone_on_line(text, member.key_start, member.value_end):
        stop = text.find("\n", member.value_end)
        return Edit(_line_start(text, member.key_start), len(text) if stop < 0 else stop + 1, "")
    return Edit(member.key_start, member.value_end, "")


def insert_member(text: str, layout: JsonLayout, parent: str, key: str, value: object) -> Edit | None:
    """Add ``"key": value`` as the last member of the object at ``parent`` ("" is the top level)."""
    if parent not in layout.objects:
        return None
    new = f"{json.dumps(key)}: {json_value(value)}"
    siblings = layout.children(parent)
    if not siblings:
        open_, _ = layout.objects[parent]
        return Edit(open_ + 1, open_ + 1, new)
    last = siblings[-1]
    line_start = _line_start(text, last.key_start)
    indent = text[line_start:last.key_start]
    sep = "\n" + indent if not indent.strip() else " "
    if last.comma >= 0:  # a trailing comma (hjson): keep the style, one after the new member too
        return Edit(last.comma + 1, last.comma + 1, f"{sep}{new},")
    return Edit(last.value_end, last.value_end, f",{sep}{new}")


# ---------------------------------------------------------------------------------------------- YAML
def yaml_scalar(value: object) -> str:
    """``value`` as a YAML scalar: plain when YAML reads the plain text back as the same value, else quoted."""
    if isinstance(value, str):
        if value and value.strip() == value and "\n" not in value and not value.startswith(("'", '"')) \
                and ": " not in value and " #" not in value and yaml.safe_load(value) == value:
            return value
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return json.dumps(value)


def yaml_replace_value(member: Member, value: object) -> Edit:
    """Replace a scalar value (a mapping or list under the key is not a scalar: the caller does not pass one)."""
    return Edit(member.value_start, member.value_end, yaml_scalar(value))


def yaml_rename_key(member: Member, key: str) -> Edit:
    return Edit(member.key_start, member.key_end, yaml_scalar(key))


def yaml_remove_member(text: str, layout: JsonLayout, member: Member) -> Edit:
    """Remove ``key: value``: in a block mapping its lines (through the end of the value's last line, so a comment
    after the value goes too); in a flow mapping the member with its comma."""
    if member.parent in layout.block:
        start = _line_start(text, member.key_start)
        if text[start:member.key_start].strip():  # "- key: value" opens a list item: keep the item's dash
            start = member.key_start
        end = member.value_end
        if end > 0 and text[end - 1] != "\n":
            stop = text.find("\n", end)
            end = len(text) if stop < 0 else stop + 1
        return Edit(start, end, "")
    siblings = layout.children(member.parent)
    index = next(i for i, m in enumerate(siblings) if m.key_start == member.key_start)
    if member.comma >= 0:
        end = member.comma + 1
        while end < len(text) and text[end] in " \t":
            end += 1
        return Edit(member.key_start, end, "")
    if index > 0:
        return Edit(siblings[index - 1].comma, member.value_end, "")
    return Edit(member.key_start, member.value_end, "")


# ---------------------------------------------------------------------------------------------- shell
def _command_span(text: str, line: int) -> tuple[int, int]:
    """Offsets of the command that starts at ``line`` (1-based), through its backslash continuations."""
    lines = text.splitlines(keepends=True)
    start = sum(len(x) for x in lines[:line - 1])
    end = start
    for raw in lines[line - 1:]:
        end += len(raw)
        if not raw.rstrip("\r\n").endswith("\\"):
            break
    return start, end


def _flag_pattern(flag: str) -> str:
    name = flag.lstrip("-")
    spelled = "[-_]".join(re.escape(part) for part in re.split(r"[-_]", name))
    return rf"(?<![\w-])--{spelled}(?![\w-])"


def _array_span(text: str, name: str, before: int) -> tuple[int, int] | None:
    """Offsets of the body of the last ``NAME=( ... )`` bash array assigned before ``before``."""
    found = None
    for m in re.finditer(rf"^[ \t]*(?:declare[ \t]+-a[ \t]+|local[ \t]+)?{re.escape(name)}=\(", text[:before], flags=re.M):
        depth, i, quote = 1, m.end(), ""
        while i < len(text) and depth:
            c = text[i]
            if quote:
                quote = "" if c == quote else quote
            elif c in "\"'":
                quote = c
            elif c == "#" and text[i - 1] in " \t\n":
                i = text.find("\n", i)
                i = len(text) if i < 0 else i
                continue
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            i += 1
        found = (m.end(), i - 1)
    return found


def _regions(text: str, line: int) -> list[tuple[int, int]]:
    """Where the words of the command at ``line`` are written: the command itself, then the bash arrays it
    expands (``"${MODEL_ARGS[@]}"``), as Megatron-LM's example scripts pass their arguments."""
    start, end = _command_span(text, line)
    regions = [(start, end)]
    for name in dict.fromkeys(re.findall(r"\$\{(\w+)\[[@*]\]\}", text[start:end])):
        span = _array_span(text, name, start)
        if span is not None:
            regions.append(span)
    return regions


def find_flag(text: str, line: int, flag: str) -> tuple[int, int, int, int] | None:
    """(flag start, flag end, value start, value end) of the last ``--flag value`` / ``--flag=value`` in the
    command at ``line`` or the arrays it expands (the one argparse keeps); value start == value end for a
    flag followed by no value."""
    m, end = None, 0
    for start, stop in _regions(text, line):
        for found in re.finditer(_flag_pattern(flag), text[start:stop]):
            m, end, offset = found, stop, start
    if m is None:
        return None
    f0, f1 = offset + m.start(), offset + m.end()
    if f1 < end and text[f1] == "=":
        v0 = f1 + 1
    else:
        v0 = f1
        while v0 < end and text[v0] in " \t":
            v0 += 1
        if v0 == f1 or v0 >= end or text[v0] in "-\\\r\n;|&#)":
            return f0, f1, f1, f1
    v1 = v0
    if text[v0:v0 + 1] in ("\"", "'"):
        v1 = text.find(text[v0], v0 + 1) + 1 or end
    else:
        while v1 < end and not text[v1].isspace() and text[v1] not in ";|&)":
            v1 += 1
    return f0, f1, v0, v1


_VAR = re.compile(r"""^["']?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?["']?$""")


def replace_flag_value(text: str, line: int, flag: str, value: str) -> Edit | None:
    found = find_flag(text, line, flag)
    if found is None or found[2] == found[3]:
        return None
    v0, v1 = found[2], found[3]
    var = _VAR.match(text[v0:v1])
    if var is None:
        quote = text[v0] if text[v0] in "\"'" else ""
        return Edit(v0, v1, f"{quote}{value}{quote}")
    command_start, _ = _command_span(text, line)
    assignment = None
    for m in re.finditer(rf"^[ \t]*(?:export[ \t]+)?{var.group(1)}=([\"']?)([^\s\"';#]*)\1[ \t]*(?:#.*)?$",
                         text[:min(command_start, _line_start(text, v0))], flags=re.M):
        assignment = m
    if assignment is None or "$" in assignment.group(2):
        return None  # set from the environment or computed: nothing in the file to change
    return Edit(assignment.start(2), assignment.end(2), value)


def remove_flag(text: str, line: int, flag: str, with_value: bool) -> Edit | None:
    """Remove ``--flag`` (and its value) from the command at ``line``; a flag alone on its line goes with
    its line, and on the command's last line the line before loses its continuation backslash."""
    found = find_flag(text, line, flag)
    if found is None:
        return None
    f0 = found[0]
    end = found[3] if with_value else found[1]
    line0 = _line_start(text, f0)
    newline = text.find("\n", end)
    line_end = len(text) if newline < 0 else newline
    alone = not text[line0:f0].strip()
    after = text[end:line_end].strip()
    if alone and after == "\\":
        return Edit(line0, line_end + (newline >= 0), "")
    if alone and (not after or after.startswith("#")) and line0 > 0:
        prev_start = _line_start(text, line0 - 1)
        previous = text[prev_start:line0 - 1].rstrip()
        if previous.endswith("\\"):
            return Edit(prev_start + len(previous[:-1].rstrip()), line_end, "")
        return Edit(line0, line_end + (newline >= 0), "")  # a line of a bash array
    start = f0
    while start > 0 and text[start - 1] in " \t":
        start -= 1
    return Edit(start, end, "")


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def set_env(text: str, name: str, value: str, why: str = "") -> Edit | None:
    """Set environment variable ``name`` to ``value`` in a shell script: the value of its last top-level
    assignment (``NAME=…`` or ``export NAME=…``) is replaced; without one, ``export NAME=value`` goes after the
    shebang and the comments and ``set`` lines that open the script, with ``why`` as its comment. None when it
    already has that value, or when ``name`` or ``value`` is not one plain shell word."""
    if not _ENV_NAME.match(name) or not re.fullmatch(r"[\w.:/@%+,-]+", value):
        return None
    last = None
    for m in re.finditer(rf"^[ \t]*(?:export[ \t]+)?{re.escape(name)}=(\"[^\"\n]*\"|'[^'\n]*'|[^\s;#]*)", text, re.M):
        last = m
    if last is not None:
        if last.group(1).strip("\"'") == value:
            return None
        return Edit(last.start(1), last.end(1), value)
    pos = seen = 0  # after the last non-blank line of the opening (a blank line after it stays where it is)
    for raw in text.splitlines(keepends=True):
        stripped = raw.strip()
        if stripped and not stripped.startswith("#") and not re.match(r"set[ \t]+[-+]", stripped):
            break
        seen += len(raw)
        pos = seen if stripped else pos
    if pos and not text[:pos].endswith("\n"):  # a script that is only comments, without a final newline
        return Edit(pos, pos, f"\nexport {name}={value}" + (f"  # {why}" if why else ""))
    return Edit(pos, pos, f"export {name}={value}" + (f"  # {why}" if why else "") + "\n")


# ---------------------------------------------------------------------------------------------- Python
def _offsets(text: str):  # noqa: ANN202
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())

    def offset(lineno: int, col_utf8: int) -> int:
        line_text = text[starts[lineno - 1]:]
        return starts[lineno - 1] + len(line_text.encode("utf-8")[:col_utf8].decode("utf-8", "ignore"))

    return offset


def find_call(text: str, line: int, name: str) -> ast.Call | None:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or node.lineno):
            f = node.func
            callee = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if callee == name:
                return node
    return None


def replace_kwarg(text: str, call: ast.Call, arg: str, value: object) -> Edit | None:
    """Replace the literal value of ``arg=`` (a string keeps the quote it was written with)."""
    offset = _offsets(text)
    for kw in call.keywords:
        if kw.arg == arg and isinstance(kw.value, ast.Constant):
            start, end = offset(kw.value.lineno, kw.value.col_offset), offset(kw.value.end_lineno, kw.value.end_col_offset)
            quote = text[start] if text[start] in "\"'" else '"'
            return Edit(start, end, f"{quote}{value}{quote}" if isinstance(value, str) else repr(value))
    return None


def remove_kwarg(text: str, call: ast.Call, arg: str) -> Edit | None:
    offset = _offsets(text)
    for kw in call.keywords:
        if kw.arg == arg:
            start, end = offset(kw.lineno, kw.col_offset), offset(kw.end_lineno, kw.end_col_offset)
            after = re.match(r"\s*,[ \t]*", text[end:])
            if after:
                return Edit(start, end + after.end(), "")
            before = re.search(r",\s*$", text[:start])
            return Edit(before.start() if before else start, end, "")
    return None


def add_kwarg(text: str, call: ast.Call, arg: str, source: str) -> Edit:
    offset = _offsets(text)
    close = offset(call.end_lineno, call.end_col_offset) - 1  # the ")"
    inside = text[:close].rstrip()
    sep = "" if inside.endswith(("(", ",")) else ", "
    if inside.endswith(","):
        sep = " "
    return Edit(close, close, f"{sep}{arg}={source}")


def set_values(text: str, layout: JsonLayout, values: dict[str, object]) -> list[Edit]:
    """Edits that give each dotted path its value: a member that exists gets its value replaced; one that does
    not is added to its deepest existing object, with the missing objects around it (several paths under
    one missing object become one new member)."""
    edits: list[Edit] = []
    new: dict[tuple[str, str], object] = {}
    for path, value in values.items():
        member = layout.member(path)
        if member is not None:
            edits.append(replace_value(member, value))
            continue
        parts = path.split(".")
        depth = max(i for i in range(len(parts)) if ".".join(parts[:i]) in layout.objects or i == 0)
        anchor = ".".join(parts[:depth])
        nested: object = value
        for part in reversed(parts[depth + 1:]):
            nested = {part: nested}
        key = (anchor, parts[depth])
        if isinstance(new.get(key), dict) and isinstance(nested, dict):
            new[key] = {**new[key], **nested}  # type: ignore[dict-item]
        else:
            new[key] = nested
    for (anchor, key), value in new.items():
        edit = insert_member(text, layout, anchor, key, value)
        if edit is not None:
            edits.append(edit)
    return edits
