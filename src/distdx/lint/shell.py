"""Enough of bash to read launch scripts: variables, arrays, defaults, arithmetic and line continuations.

A launch script is read line by line the way bash would expand it for the commands lint cares about:
``NAME=value`` and ``export NAME=value`` set variables, ``NAME=( ... )`` sets an array (comments allowed
inside), ``$NAME``, ``${NAME}``, ``${NAME:-default}``, ``${NAME[@]}`` and ``$(( arithmetic ))`` expand.
Anything lint cannot know (``$1``, ``$(hostname)``, an unset variable) stays as written, and checks that need
that value skip it. Nothing is executed.
"""

from __future__ import annotations

import ast
import operator
import re
import shlex
from dataclasses import dataclass, field

_ASSIGN = re.compile(r"^(?:export\s+|declare\s+(?:-\w+\s+)*|local\s+|readonly\s+)?([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)$", re.S)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(\[@\]|\[\*\])?(?:(:?[-=])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_ARITH = re.compile(r"\$\(\(([^()]*(?:\([^()]*\)[^()]*)*)\)\)")
MAX_GROWTH = 1 << 16  # characters one expansion may add; no launch script needs more
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Div: operator.floordiv, ast.Mod: operator.mod}


@dataclass(frozen=True)
class Command:
    """One simple command: its words after expansion, the environment set before it, where it starts."""

    argv: tuple[str, ...]
    env: dict[str, str]
    line: int


@dataclass(frozen=True)
class Heredoc:
    """A here-document: the file it is written to (``cat <<EOF > ds.json``), its body as bash would
    write it (variables expanded unless the delimiter is quoted), and the line of its first body line."""

    target: str | None
    body: str
    line: int


@dataclass
class Script:
    commands: list[Command] = field(default_factory=list)
    variables: dict[str, str] = field(default_factory=dict)
    unreadable: list[int] = field(default_factory=list)  # lines with a quote this reader could not close
    heredocs: list[Heredoc] = field(default_factory=list)


def _arith(expr: str, variables: dict[str, str]) -> str | None:
    text = re.sub(r"\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: variables.get(m.group(1), m.group(0)), expr)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return None

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = ev(node.left), ev(node.right)
            if max(abs(left), abs(right)) >= 2**64:  # each step stays bounded: no 10**100000 in memory
                raise ValueError("out of range")
            return _OPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError("not arithmetic")

    try:
        value = ev(tree)
    except (ValueError, ZeroDivisionError):
        return None
    return str(value) if -2**63 <= value < 2**63 else None  # past bash's 64 bits: not a value to reason with


def expand(text: str, variables: dict[str, str], arrays: dict[str, list[str]]) -> str:
    """Expand variables and arithmetic in ``text``; what cannot be known stays as written."""
    def var(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(5)
        if m.group(2):
            return " ".join(shlex.quote(w) for w in arrays.get(name, [])) if name in arrays else m.group(0)
        if name in arrays and name not in variables:
            return shlex.quote(arrays[name][0]) if arrays[name] else ""
        if name in variables and variables[name] != "":
            return variables[name]
        if m.group(3):  # ${NAME:-default}
            return expand(m.group(4) or "", variables, arrays)
        return variables.get(name, m.group(0))

    written = text
    for _ in range(3):  # nested ${A:-${B}}
        new = _VAR.sub(var, text)
        new = _ARITH.sub(lambda m: _arith(m.group(1), variables) or m.group(0), new)
        if len(new) > len(written) + MAX_GROWTH:  # V=$V$V$V$V in a loop: unknown, not 4^n characters
            return written
        if new == text:
            break
        text = new
    return text


_QUOTED_ARRAY = re.compile(r'(?<![\w\\])"(\$\{[A-Za-z_][A-Za-z0-9_]*\[@\]\})"')


def _command_words(text: str, variables: dict[str, str], arrays: dict[str, list[str]]) -> list[str] | None:
    """The words of a command line after expansion. ``"${A[@]}"`` is one word per element, as bash makes it
    (each element quoted on its own), not one word of all of them."""
    return _split(expand(_QUOTED_ARRAY.sub(r"\1", text), variables, arrays))


def _open_quote(line: str, quote: str) -> str:
    """The quote still open at the end of ``line`` ('' for none), given the one open at its start."""
    i = 0
    while i < len(line):
        ch = line[i]
        if quote == "'":
            if ch == "'":
                quote = ""
        elif quote == '"':
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = ""
        elif ch == "\\":
            i += 1
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            break  # a comment: quotes in it do not count
        i += 1
    return quote


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Physical lines joined as bash joins them: after a trailing backslash, and while a quoted
    string is open (a multi-line "..." is one word with its newlines)."""
    out: list[tuple[int, str]] = []
    buf, start, quote = "", 0, ""
    for n, line in enumerate(text.splitlines(), start=1):
        if not buf:
            start = n
        continues = line.rstrip().endswith("\\") and (quote or not line.lstrip().startswith("#"))
        quote = _open_quote(line, quote)
        if continues and quote != "'":
            buf += line.rstrip()[:-1] + ("" if quote else " ")
            continue
        buf += line
        if quote:
            buf += "\n"
            continue
        out.append((start, buf))
        buf = ""
    if buf:
        out.append((start, buf))
    return out


def _split(text: str) -> list[str] | None:
    lex = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lex.whitespace_split = True
    lex.commenters = "#"
    try:
        return list(lex)
    except ValueError:
        return None


def bash_syntax_error(text: str) -> tuple[int, str] | None:
    """(line, message) of the first error ``bash -n`` finds in ``text`` (it parses, runs nothing);
    None when bash accepts the script or is not installed."""
    import shutil
    import subprocess

    bash = shutil.which("bash")
    if bash is None:
        return None
    try:
        done = subprocess.run([bash, "-n"], input=text, capture_output=True, text=True, timeout=20,
                              env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode == 0:
        return None
    first = next((l for l in done.stderr.splitlines() if l.strip()), "syntax error")
    m = re.search(r"line (\d+): (.*)$", first)
    return (int(m.group(1)), m.group(2).strip()) if m else (0, first.strip())


@dataclass
class _Conditional:
    """An if ... fi being read: the variables before it and those each finished arm left."""

    before: dict[str, str]
    arms: list[dict[str, str]] = field(default_factory=list)
    has_else: bool = False


def _merge(cond: _Conditional) -> dict[str, str]:
    """The variables after ``fi``: a value every path agrees on is known, any other is unknown
    (dropped), since lint cannot tell which arm bash would take."""
    paths = cond.arms + ([] if cond.has_else else [cond.before])
    names = set().union(*paths) if paths else set()
    out = {}
    for name in names:
        values = {path.get(name) for path in paths}
        if len(values) == 1 and None not in values:
            out[name] = values.pop()
    return out


_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
_REDIRECT = re.compile(r"(?:>>?|\btee\s+(?:-a\s+)?)\s*([^\s;&|<>]+)")


def _cut_heredocs(text: str) -> tuple[str, dict[int, tuple[str, bool, str | None]]]:
    """The text with every here-document body blanked (line numbers kept), and per line that opens
    one: (body, delimiter quoted, target file). An unterminated body runs to the end, as in bash."""
    lines = text.split("\n")
    found: dict[int, tuple[str, bool, str | None]] = {}
    i = 0
    while i < len(lines):
        m = _HEREDOC.search(_strip_comment_lines(lines[i]))
        if not m:
            i += 1
            continue
        dash, quote, word = m.group(1), m.group(2), m.group(3)
        target = _REDIRECT.search(lines[i][: m.start()] + " " + lines[i][m.end():])
        body, j = [], i + 1
        while j < len(lines) and (lines[j].lstrip("\t") if dash else lines[j]).rstrip("\r") != word:
            body.append(lines[j].lstrip("\t") if dash else lines[j])
            lines[j] = ""
            j += 1
        if j < len(lines):
            lines[j] = ""
        found[i + 1] = ("\n".join(body), bool(quote), target.group(1) if target else None)
        i = j + 1
    return "\n".join(lines), found


def parse_script(text: str) -> Script:
    script = Script()
    arrays: dict[str, list[str]] = {}
    open_ifs: list[_Conditional] = []
    text, heredocs = _cut_heredocs(text)
    lines = _logical_lines(text)
    i = 0
    while i < len(lines):
        lineno, line = lines[i]
        i += 1
        stripped = line.strip()
        for start in [n for n in heredocs if lineno <= n < lineno + line.count("\n") + 1]:
            body, quoted, target = heredocs.pop(start)
            script.heredocs.append(Heredoc(target and expand(target, script.variables, arrays).strip("'\""),
                                           body if quoted else expand(body, script.variables, arrays), start + 1))
        if not stripped or stripped.startswith("#"):
            continue
        m = _ASSIGN.match(stripped)
        if m and m.group(3).startswith("("):  # NAME=( ... ) or NAME+=( ... ), possibly over several lines
            body = m.group(3)[1:]
            while ")" not in _strip_comment(body) and i < len(lines):
                body += "\n" + lines[i][1]
                i += 1
            body = _strip_comment_lines(body)
            inner = body[: body.rfind(")")] if ")" in body else body
            words = _command_words(inner, script.variables, arrays) or []
            arrays[m.group(1)] = (arrays.get(m.group(1), []) if m.group(2) else []) + words
            continue
        words = _command_words(stripped, script.variables, arrays)
        if words is None:  # bash may still accept it ($'...', odd escapes): the caller asks bash
            script.unreadable.append(lineno)
            continue
        for segment in _segments(words):
            keyword = segment[0] if segment else ""
            if keyword == "if":
                open_ifs.append(_Conditional(dict(script.variables)))
                continue
            if keyword in ("elif", "else") and open_ifs:
                open_ifs[-1].arms.append(dict(script.variables))
                open_ifs[-1].has_else |= keyword == "else"
                script.variables = dict(open_ifs[-1].before)
                if keyword == "elif":
                    continue
                segment = segment[1:]
            elif keyword == "fi" and open_ifs:
                cond = open_ifs.pop()
                cond.arms.append(dict(script.variables))
                script.variables = _merge(cond)
                continue
            while segment and segment[0] in ("then", "do", "else"):
                segment = segment[1:]
            if not segment:
                continue
            env: dict[str, str] = {}
            k = 0
            while k < len(segment) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", segment[k]):
                name, _, value = segment[k].partition("=")
                env[name] = value
                k += 1
            if k < len(segment) and segment[k] in ("export", "declare", "local", "readonly"):
                for word in segment[k + 1:]:
                    if "=" in word and not word.startswith("-"):
                        name, _, value = word.partition("=")
                        script.variables[name] = value
                continue
            if k == len(segment):
                script.variables.update(env)
                continue
            script.commands.append(Command(tuple(segment[k:]), env, lineno))
    return script


def _strip_comment(text: str) -> str:
    return "\n".join(_strip_comment_lines(line) for line in text.split("\n"))


def _strip_comment_lines(text: str) -> str:
    out = []
    for line in text.split("\n"):
        words = []
        in_quote = ""
        for idx, ch in enumerate(line):
            if in_quote:
                if ch == in_quote:
                    in_quote = ""
            elif ch in "\"'":
                in_quote = ch
            elif ch == "#" and (idx == 0 or line[idx - 1].isspace()):
                break
            words.append(ch)
        out.append("".join(words))
    return "\n".join(out)


def _segments(words: list[str]) -> list[list[str]]:
    """Split on ; && || | so each simple command stands alone."""
    out, cur = [], []
    for w in words:
        if w in (";", "&&", "||", "|", "&"):
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(w)
    if cur:
        out.append(cur)
    return out
