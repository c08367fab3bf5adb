"""The command-line layer: the only part of distdx that prints.

Each subcommand lives in its own module here and exposes ``register(subparsers)``, which adds
its parser and sets ``func(args) -> int``. A command parses, calls one library function and
renders the result; a :class:`~distdx.errors.DistdxError` becomes a message and an exit code,
never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import math
import re
import sys

from distdx import __version__
from distdx.errors import EXIT_INTERNAL, DistdxError

# Order is the order of `distdx --help`.
COMMANDS = (
    "diagnose",
    "eval",
    "taxonomy",
    "rules",
    "doctor",
    "lint",
    "fix",
    "estimate",
    "run",
    "lab",
    "study",
    "kb",
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of the command ``only`` alone (what running one command
    needs: its parser and error messages are the same, without importing every other command)."""
    parser = argparse.ArgumentParser(
        prog="distdx",
        description="Diagnose, prevent, detect and reproduce failures of distributed deep-learning jobs.",
    )
    parser.add_argument("--version", action="version", version=f"distdx {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (only,) if only in COMMANDS else COMMANDS:
        try:
            module = importlib.import_module(f"distdx.cli.{name}_cmd")
        except ModuleNotFoundError as e:
            if e.name == f"distdx.cli.{name}_cmd":
                continue  # a capability not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except DistdxError as e:
        print(e.render(), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (e.g. `| head`); nothing left to say
        sys.stderr.close()
        return 0
    except Exception as e:  # a bug in distdx: say so plainly, keep the details for the report
        import traceback

        print(
            f"error[DX-INTERNAL-001]: distdx failed unexpectedly: {type(e).__name__}: {e}\n"
            "  this is a bug in distdx; please report it with the command you ran.\n"
            "  set DISTDX_DEBUG=1 to see the traceback.",
            file=sys.stderr,
        )
        import os

        if os.environ.get("DISTDX_DEBUG"):
            traceback.print_exc()
        return EXIT_INTERNAL


def add_format_option(parser: argparse.ArgumentParser, choices: tuple[str, ...] = ("text", "json", "markdown")) -> None:
    parser.add_argument("--format", "-f", choices=choices, default="text", help="output format (default: text)")


def positive(text: str) -> float:
    """argparse type: a finite number above zero (seconds, sizes)."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be above zero")
    return value


def non_negative(text: str) -> float:
    """argparse type: a finite number, zero or more."""
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    return value


def whole(low: int, high: int):  # noqa: ANN201 - an argparse type
    """argparse type: a whole number from ``low`` to ``high`` (ports, timeouts, counts)."""
    def parse(text: str) -> int:
        if not re.fullmatch(r"\s*[+-]?[0-9]{1,20}\s*", text):
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number")
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range: use {low} to {high:,}")
        return value

    return parse


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def emit(text: str) -> None:
    """Write a rendered result to stdout, ending with exactly one newline."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
