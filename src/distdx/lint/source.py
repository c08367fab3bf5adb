"""Reading input files and parsing JSON/YAML with the line and column of every key.

JSON is parsed strictly first. When that fails, comments and trailing commas (which DeepSpeed's hjson reader
accepts) are blanked out, keeping every other character where it was, and the text is parsed again, so a
config with comments is still checked and its positions stay right.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from distdx import jsonio
from distdx.errors import DistdxError
from distdx.lint.models import Hit

MAX_BYTES = 8 * 1024 * 1024


@dataclass
class Parsed:
    """A parsed config: the data, where each dotted key sits, and syntax hits found on the way."""

    data: object
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)

    def where(self, path: str) -> tuple[int | None, int | None]:
        while path:
            if path in self.positions:
                return self.positions[path]
            path = path.rpartition(".")[0]
        return None, None


LINTABLE = (".json", ".yaml", ".yml", ".sh", ".bash", ".slurm", ".sbatch", ".py")  # what a folder is searched for


def expand_inputs(paths: list[str] | tuple[str, ...]) -> list[str]:
    """The paths, with each folder replaced by the configs and scripts under it (sorted; symlinked
    folders are not entered, so a link loop ends). A folder with none of them is an error."""
    out: list[str] = []
    for path in paths:
        if not os.path.isdir(path):
            out.append(path)
            continue
        found = []
        for dirpath, dirnames, filenames in os.walk(path):  # os.walk does not follow symlinked folders
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            found += [os.path.join(dirpath, f) for f in sorted(filenames) if f.lower().endswith(LINTABLE)]
        if not found:
            raise DistdxError("DX-LINT-001", f"{path} is a folder with no config or launch script in it",
                              why=f"lint looks for {', '.join(LINTABLE)} files under a folder",
                              hint="pass the config files or launch scripts themselves")
        out += found
    return out


def read_text(path: str) -> str:
    """The file's text; a clear error for a missing, huge, binary, non-UTF-8 or non-regular file."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise DistdxError("DX-LINT-001", f"{path}: no such file", hint="check the path; lint takes config files "
                          "and launch scripts, or a command with --command") from None
    except OSError as e:  # a symlink loop, a name too long
        raise DistdxError("DX-LINT-001", f"{path}: {e.strerror or e}", hint="check the path") from None
    if p.is_dir():
        raise DistdxError("DX-LINT-001", f"{path} is a directory", hint="pass the files inside it, e.g. dir/*.json")
    if not stat.S_ISREG(st.st_mode):  # /dev/zero, a FIFO: never ends, or blocks
        raise DistdxError("DX-LINT-001", f"{path} is not a regular file (a device, pipe or socket)",
                          why="lint reads files of known size; reading a device or pipe may never end",
                          hint="save the config to a file and lint that")
    size = st.st_size
    if size > MAX_BYTES:
        raise DistdxError("DX-LINT-002", f"{path} is {size} bytes, too large for a config or launch script",
                          why=f"lint reads files up to {MAX_BYTES // (1024 * 1024)} MiB",
                          hint="pass the config file itself, not a checkpoint or a log")
    try:
        with open(p, "rb") as f:
            raw = f.read(MAX_BYTES + 1)  # st_size may lie (a file still being written): read with the cap
    except PermissionError:
        raise DistdxError("DX-LINT-001", f"{path}: permission denied", why="lint cannot read the file",
                          hint="check its permissions (ls -l) or run as a user who can read it") from None
    except OSError as e:
        raise DistdxError("DX-LINT-001", f"{path}: cannot be read ({e.strerror or e})", hint="check the file") from None
    if len(raw) > MAX_BYTES:
        raise DistdxError("DX-LINT-002", f"{path} has more than {MAX_BYTES} bytes (it grew while read), too large for "
                          "a config or launch script", why=f"lint reads files up to {MAX_BYTES // (1024 * 1024)} MiB",
                          hint="pass the config file itself, not a checkpoint or a log")
    if b"\x00" in raw[:8192]:
        raise DistdxError("DX-LINT-003", f"{path} is a binary file", why="configs and launch scripts are text",
                          hint="pass the JSON/YAML config or the shell/Python launch script")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DistdxError("DX-LINT-004", f"{path} is not UTF-8 (byte {e.start})",
                          why="DeepSpeed, Megatron and Python read configs as UTF-8",
                          hint="re-save the file as UTF-8, e.g. `iconv -f latin1 -t utf-8`") from None


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _line_cols(text: str):  # noqa: ANN202
    """``_line_col`` for many offsets of one text: the line starts are found once (linear, not per key)."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_col(offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(starts, offset)
        return line, offset - starts[line - 1] + 1

    return line_col


def _blank_lenient(text: str) -> tuple[str, list[tuple[int, str]]]:
    """Blank out comments and trailing commas outside strings; return the text and what was blanked where."""
    out = list(text)
    found: list[tuple[int, str]] = []
    i, n = 0, len(text)
    in_str = False
    last_comma = -1
    while i < n:
        c = text[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
            continue
        if c == '"':
            in_str = True
            last_comma = -1
        elif c == "/" and text.startswith("//", i) or c == "#":
            end = text.find("\n", i)
            end = n if end < 0 else end
            found.append((i, "comment"))
            for j in range(i, end):
                out[j] = " "
            i = end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            found.append((i, "comment"))
            for j in range(i, end):
                if out[j] != "\n":
                    out[j] = " "
            i = end
            continue
        elif c == ",":
            last_comma = i
        elif c in "}]":
            if last_comma >= 0:
                found.append((last_comma, "trailing comma"))
                out[last_comma] = " "
            last_comma = -1
        elif not c.isspace():
            last_comma = -1
        i += 1
    return "".join(out), found


@dataclass(frozen=True)
class Member:
    """One ``"key": value`` of a JSON object (or ``key: value`` of a YAML mapping), as character offsets into
    the text: the key (with its quotes), the value, and the comma after the value (-1 when the member is the
    last one, and in a YAML block mapping, which has none)."""

    path: str
    parent: str
    key_start: int
    key_end: int
    value_start: int
    value_end: int
    comma: int


@dataclass(frozen=True)
class JsonLayout:
    """Where every member and object of a parsed JSON (or YAML) text sits: what an edit needs to keep the rest
    intact. ``block`` holds the paths of YAML block mappings (one member per line, no commas)."""

    members: tuple[Member, ...]
    objects: dict[str, tuple[int, int]]  # path -> offsets of "{" and "}" (first occurrence)
    block: frozenset[str] = frozenset()

    def member(self, path: str) -> Member | None:
        return next((m for m in self.members if m.path == path), None)

    def children(self, path: str) -> list[Member]:
        return [m for m in self.members if m.parent == path]


def _skip_blank(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return i


def _string_end(text: str, i: int) -> int:
    """Offset just past the string that opens at ``i``."""
    j, n = i + 1, len(text)
    while j < n and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return j + 1


def json_layout(text: str) -> JsonLayout:
    """The layout of a JSON text that parses (comments already blanked out), read without recursion."""
    members: list[Member] = []
    objects: dict[str, tuple[int, int]] = {}
    # frame: [kind, path, open offset, next array index, pending member fields or None]
    stack: list[list] = []
    i, n = _skip_blank(text, 0), len(text)

    def value_done(end: int) -> int:
        """Close the pending member of the enclosing object at ``end``; return where scanning goes on."""
        j = _skip_blank(text, end)
        comma = j if j < n and text[j] == "," else -1
        if stack and stack[-1][0] == "obj" and stack[-1][4] is not None:
            path, parent, ks, ke, vs = stack[-1][4]
            members.append(Member(path, parent, ks, ke, vs, end, comma))
            stack[-1][4] = None
        elif stack and stack[-1][0] == "arr":
            stack[-1][3] += 1
        return comma + 1 if comma >= 0 else j

    def child_path() -> str:
        if not stack:
            return ""
        frame = stack[-1]
        return frame[4][0] if frame[0] == "obj" else f"{frame[1]}.{frame[3]}" if frame[1] else str(frame[3])

    while i < n:
        i = _skip_blank(text, i)
        if i >= n:
            break
        c = text[i]
        if c in "}]":
            kind, path, start, _, _ = stack.pop()
            if kind == "obj":
                objects.setdefault(path, (start, i))
            i = value_done(i + 1)
            continue
        if stack and stack[-1][0] == "obj" and stack[-1][4] is None:  # a key
            ke = _string_end(text, i)
            try:
                key = str(jsonio.loads(text[i:ke]))
            except ValueError:
                key = text[i + 1:ke - 1]
            parent = stack[-1][1]
            colon = _skip_blank(text, ke)
            vs = _skip_blank(text, colon + 1)
            stack[-1][4] = (f"{parent}.{key}" if parent else key, parent, i, ke, vs)
            i = vs
            continue
        if c in "{[":
            stack.append(["obj" if c == "{" else "arr", child_path(), i, 0, None])
            i += 1
            continue
        if c == '"':
            end = _string_end(text, i)
        else:
            end = i
            while end < n and text[end] not in ",}] \t\r\n":
                end += 1
        i = value_done(end)
    return JsonLayout(tuple(members), objects)


def _json_positions(text: str) -> dict[str, tuple[int, int]]:
    """Map each dotted key path (list items as indices) to the line and column of its key."""
    line_col = _line_cols(text)
    positions: dict[str, tuple[int, int]] = {}
    for m in json_layout(text).members:
        positions.setdefault(m.path, line_col(m.key_start))
    return positions


def _no_duplicates(path_hits: list[Hit]):
    def hook(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                path_hits.append(Hit("LINT-SYN-003", key, None, f"key {key!r} appears more than once in the same object"))
            seen.add(key)
        return dict(pairs)

    return hook


# a placeholder where a value goes: ZERO_STAGE, CL_1st_MIN, ${zero_stage}, ${MBS:-4}, $MBS, $2, {{ lr }}
_PLACEHOLDER = re.compile(
    r"(?<=[:\[,])(\s*)((?=[A-Za-z0-9_]*[A-Z])[A-Za-z_][A-Za-z0-9_]{2,}|\$\{[^{}\s]+\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9]|\{\{\s*[\w.]+\s*\}\})"
    r"(?=\s*[,}\]\n])")


def _template_placeholders(text: str) -> list[tuple[int, str]]:
    """(offset, NAME) of the bare upper-case words standing where values go, when replacing them
    with numbers makes the text parse: a config template a script fills in (``"stage": ZERO_STAGE``)."""
    found = [(m.start(2), m.group(2)) for m in _PLACEHOLDER.finditer(text)
             if m.group(2) not in ("NaN", "Infinity", "True", "False", "None")]
    if not found:
        return []
    try:
        jsonio.loads(_PLACEHOLDER.sub(lambda m: m.group(1) + "1", text))
    except json.JSONDecodeError:
        return []
    return found


def parse_json(text: str) -> Parsed:
    _check_json_depth(text)
    dupes: list[Hit] = []
    try:
        data = jsonio.loads(text, object_pairs_hook=_no_duplicates(dupes))
        cleaned = text
        hits: list[Hit] = []
    except json.JSONDecodeError as strict_error:
        cleaned, blanked = _blank_lenient(text)
        dupes.clear()
        try:
            data = jsonio.loads(cleaned, object_pairs_hook=_no_duplicates(dupes))
        except json.JSONDecodeError:
            template = _template_placeholders(cleaned)
            if template:
                line, col = _line_col(text, template[0][0])
                names = ", ".join(dict.fromkeys(name for _, name in template))
                return Parsed(None, hits=[Hit("LINT-SYN-005", "", None,
                                              f"a template: placeholders {names} are filled in by a script before "
                                              "DeepSpeed reads it; lint the generated config", line=line, column=col)])
            e = strict_error
            return Parsed(None, hits=[Hit("LINT-SYN-001", "", None, f"JSON does not parse: {e.msg}",
                                          line=e.lineno, column=e.colno)])
        kinds = sorted({what for _, what in blanked})
        line, col = _line_col(text, blanked[0][0])
        hits = [Hit("LINT-SYN-002", "", None,
                    f"the file has {' and '.join(k + 's' for k in kinds)} ({len(blanked)} in all, first here): "
                    "DeepSpeed's hjson reader accepts them, json.load does not", line=line, column=col)]
    positions = _json_positions(cleaned)
    for hit in dupes:  # place each duplicate at its second occurrence
        hits.append(_place_duplicate(hit, cleaned))
    return Parsed(data, positions, hits)


def _place_duplicate(hit: Hit, text: str) -> Hit:
    needle = json.dumps(hit.field)
    first = text.find(needle)
    second = text.find(needle, first + 1) if first >= 0 else -1
    if second < 0:
        return hit
    line, col = _line_col(text, second)
    return Hit(hit.code, hit.field, hit.value, hit.message, line=line, column=col)


def _yaml_positions(node, path: str, out: dict[str, tuple[int, int]]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            sub = f"{path}.{key}" if path else key
            out.setdefault(sub, (key_node.start_mark.line + 1, key_node.start_mark.column + 1))
            _yaml_positions(value_node, sub, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _yaml_positions(item, f"{path}.{i}" if path else str(i), out)


MAX_DEPTH = 200  # nesting no config needs; past it parsers recurse too deep


def _too_deep(what: str, depth: int) -> DistdxError:
    return DistdxError("DX-LINT-008", f"the {what} is nested more than {MAX_DEPTH} levels deep (at least {depth})",
                       why="no DeepSpeed, Megatron or Colossal-AI config nests like that; reading it would exhaust the stack",
                       hint="check that this is the config you meant to lint")


def _check_json_depth(text: str) -> None:
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise _too_deep("JSON", depth)
        elif ch in "]}":
            depth -= 1


MAX_EXPANDED = 200_000  # values a YAML document expands to once its aliases are resolved


def _check_yaml_expansion(node: yaml.Node | None) -> None:
    """Refuse a composed YAML document whose aliases expand to a huge tree (a "billion laughs"
    file): counted on the node graph, where each alias is one shared node, so in linear time.
    (The depth is already bounded by :func:`_check_yaml_depth`.)"""
    if node is None:
        return
    sizes: dict[int, int] = {}

    def expanded(n: yaml.Node) -> int:
        if id(n) not in sizes:
            if isinstance(n, yaml.MappingNode):
                sizes[id(n)] = 1 + sum(expanded(k) + expanded(v) for k, v in n.value)
            elif isinstance(n, yaml.SequenceNode):
                sizes[id(n)] = 1 + sum(expanded(v) for v in n.value)
            else:
                sizes[id(n)] = 1
        return sizes[id(n)]

    if expanded(node) > MAX_EXPANDED:
        raise DistdxError("DX-LINT-009", f"the YAML expands to more than {MAX_EXPANDED:,} values once its aliases are resolved",
                          why="aliases of aliases grow exponentially when read (a 'billion laughs' file); no config is that large",
                          hint="write the values out, or check that this is the config you meant to lint")


def _check_yaml_depth(text: str) -> None:
    """The nesting depth from the parser's events (iterative), before anything recursive runs."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _too_deep("YAML", depth)
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return  # the parse below reports it with its line and column


def parse_yaml(text: str) -> Parsed:
    _check_yaml_depth(text)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        _check_yaml_expansion(node)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        return Parsed(None, hits=[Hit("LINT-SYN-001", "", None, f"YAML does not parse: {problem}",
                                      line=mark.line + 1 if mark else None,
                                      column=mark.column + 1 if mark else None)])
    positions: dict[str, tuple[int, int]] = {}
    if node is not None:
        _yaml_positions(node, "", positions)
    return Parsed(data, positions)


def json_text_layout(text: str) -> JsonLayout:
    """:func:`json_layout` of a config as written: comments and trailing commas (hjson) are blanked first,
    every other character stays where it is, so the offsets are offsets into ``text``."""
    return json_layout(_blank_lenient(text)[0])


def yaml_text_layout(text: str) -> JsonLayout:
    """The layout of a YAML text's mappings, from the composed nodes' marks (character offsets): block
    mappings (``key: value`` per line) and flow mappings (``{a: 1, b: 2}``, with their commas). An empty
    layout when the text does not parse."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return JsonLayout((), {})
    members: list[Member] = []
    objects: dict[str, tuple[int, int]] = {}
    block: set[str] = set()
    stack: list[tuple[yaml.Node, str]] = [(root, "")] if root is not None else []
    while stack:
        node, path = stack.pop()
        if isinstance(node, yaml.MappingNode):
            objects.setdefault(path, (node.start_mark.index, node.end_mark.index))
            if not node.flow_style:
                block.add(path)
            for key_node, value_node in node.value:
                sub = f"{path}.{key_node.value}" if path else str(key_node.value)
                end = value_node.end_mark.index
                comma = -1
                if node.flow_style:
                    after = _skip_blank(text, end)
                    comma = after if after < len(text) and text[after] == "," else -1
                members.append(Member(sub, path, key_node.start_mark.index, key_node.end_mark.index,
                                      value_node.start_mark.index, end, comma))
                stack.append((value_node, sub))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{path}.{i}" if path else str(i)) for i, item in enumerate(node.value))
    members.sort(key=lambda m: m.key_start)
    return JsonLayout(tuple(members), objects, frozenset(block))
