"""Running one command builds only that command's parser; what it accepts, prints and refuses must
be what the parser of every command gives."""

import contextlib
import io

import pytest

from distdx.cli import COMMANDS, build_parser


def _outcome(parser, argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:
            return ("exit", e.code, out.getvalue(), err.getvalue())
    return ("args", sorted((k, repr(v)) for k, v in vars(args).items() if k != "func"), getattr(args.func, "__qualname__", None))


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("tail", [["--help"], [], ["--no-such-option"]], ids=["help", "bare", "bad-option"])
def test_one_commands_parser_behaves_as_the_full_one(command, tail):
    argv = [command, *tail]
    assert _outcome(build_parser(command), argv) == _outcome(build_parser(), argv)


def test_a_real_invocation_parses_alike():
    argv = ["diagnose", "a.log", "b.log", "--format", "json", "--redact-hosts"]
    assert _outcome(build_parser("diagnose"), argv) == _outcome(build_parser(), argv)
