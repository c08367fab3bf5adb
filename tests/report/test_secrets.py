"""Every secret pattern against its fixtures, and a corpus of planted secrets through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from distdx.report.redact import SECRET, redact_secrets, secret_patterns

PATTERNS = secret_patterns()
MATCHES = [(p.code, f) for p in PATTERNS for f in p.match]
NO_MATCHES = [(p.code, f) for p in PATTERNS for f in p.no_match]


def test_every_pattern_has_fixtures_both_ways_and_a_stable_code():
    codes = [p.code for p in PATTERNS]
    assert len(codes) == len(set(codes)) and all(c.startswith("SECRET-") for c in codes)
    assert all(p.match and p.no_match for p in PATTERNS)


@pytest.mark.parametrize("code, fixture", MATCHES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(MATCHES)])
def test_pattern_removes_its_secret(code, fixture):
    text, _, secret = fixture.rpartition(" => ")
    out = redact_secrets(text)
    assert secret not in out and SECRET in out, out


@pytest.mark.parametrize("code, fixture", NO_MATCHES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(NO_MATCHES)])
def test_near_miss_is_left_alone(code, fixture):
    assert redact_secrets(fixture) == fixture


PLANTED = [fixture.rpartition(" => ") for _, fixture in MATCHES]


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_no_planted_secret_reaches_shareable_output(fmt):
    log = "\n".join(text for text, _, _ in PLANTED) + "\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    run = subprocess.run([sys.executable, "-m", "distdx", "diagnose", "-", "--format", fmt, "-v"],
                         input=log.encode(), capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = run.stdout.decode()
    leaked = [secret for _, _, secret in PLANTED if secret in out]
    assert not leaked
    if fmt == "json":
        json.loads(out)
    assert len(PLANTED) >= 40
