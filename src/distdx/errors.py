"""The one error type distdx raises for problems a user can act on.

Every error says *what* went wrong, *why*, and *how to fix it*. The CLI renders it with
:meth:`DistdxError.render` and exits with :attr:`DistdxError.exit_code`; it never shows a
traceback for a ``DistdxError``. Every code (``DX-AREA-NNN``) is registered with its meaning in
``errors.yaml`` (:func:`registry`); ``docs/errors.md`` is generated from it (:func:`errors_markdown`).
"""

from __future__ import annotations

# Exit codes shared by every command.
EXIT_OK = 0
EXIT_FINDINGS = 1  # the command ran and found problems (lint errors, failed checks)
EXIT_USAGE = 2  # bad arguments or unusable input
EXIT_INTERNAL = 3  # a bug in distdx
EXIT_NO_FAILURE = 4  # diagnose: the input reports no failure (blank, or a clean log)


MAX_SHOWN = 600  # characters of one part of an error; a hostile value is quoted, not dumped


def _capped(text: str) -> str:
    if len(text) <= MAX_SHOWN:
        return text
    return f"{text[:MAX_SHOWN // 2]} … ({len(text) - MAX_SHOWN + 80:,} characters left out) … {text[-(MAX_SHOWN // 2 - 80):]}"


class DistdxError(Exception):
    """A diagnostic error: a stable code, what happened, why, and a hint on how to fix it."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        why: str | None = None,
        hint: str | None = None,
        exit_code: int = EXIT_USAGE,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.why = why
        self.hint = hint
        self.exit_code = exit_code

    def render(self) -> str:
        lines = [f"error[{self.code}]: {_capped(self.message)}"]
        if self.why:
            lines.append(f"  why: {_capped(self.why)}")
        if self.hint:
            lines.append(f"  fix: {_capped(self.hint)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "why": self.why, "hint": self.hint}

    def __str__(self) -> str:
        return self.render()


def registry() -> dict[str, object]:
    """``errors.yaml``: ``{"areas": {AREA: what}, "codes": {CODE: meaning}}``."""
    from importlib import resources

    import yaml

    return yaml.safe_load(resources.files("distdx").joinpath("errors.yaml").read_text(encoding="utf-8"))


def errors_markdown() -> str:
    """The docs page of every error code, by area."""
    reg = registry()
    out = ["# Error codes", "",
           "Generated from `src/distdx/errors.yaml`; regenerate with "
           "`python -c \"from distdx.errors import errors_markdown; print(errors_markdown(), end='')\" > docs/errors.md`.",
           "Every error prints `error[CODE]: what`, then `why:` and `fix:` lines; exit code 2 for bad input, 3 for a bug.",
           ""]
    for area, what in reg["areas"].items():
        out += [f"## {area}: {what}", "", "| code | meaning |", "|---|---|"]
        out += [f"| `{code}` | {meaning} |" for code, meaning in reg["codes"].items() if code.split("-")[1] == area]
        out.append("")
    return "\n".join(out)
