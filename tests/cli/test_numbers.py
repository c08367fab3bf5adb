"""Numeric options (seconds, sizes) refuse negative, zero, NaN and infinite values up front."""

import argparse

import pytest

from distdx.cli import main, non_negative, positive


@pytest.mark.parametrize("argv", [
    ["run", "--timeout", "-5", "--", "true"],
    ["run", "--timeout", "inf", "--", "true"],
    ["doctor", "--min-free-gb", "nan"],
    ["doctor", "--min-free-gb", "-1"],
    ["doctor", "--distributed", "--payload-mb", "0"],
    ["doctor", "--distributed", "--timeout", "-3"],
])
def test_bad_numbers_are_usage_errors(capsys, argv):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "error: argument" in err and "Traceback" not in err


def test_number_types():
    assert positive("0.5") == 0.5 and non_negative("0") == 0.0
    for bad in ("0", "-1", "nan", "-inf", "ten"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive(bad)
    with pytest.raises(argparse.ArgumentTypeError):
        non_negative("-0.1")
