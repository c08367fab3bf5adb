"""Redaction of secrets, and optionally of host names and IP addresses, before text is shared.

Secrets are removed from everything meant to be shared (JSON, Markdown, the doctor's issue block):
the patterns of ``secrets.yaml`` (tokens of the common services, authorization headers and cookies,
private keys, passwords on command lines and in URLs, connection strings, and every key or variable
whose name says key, token, secret or password), each with fixtures that must and must not match.
Hosts and IPs are replaced with stable placeholders (``host-1``, ``ip-1``) so that a reader can
still tell which lines come from the same machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from distdx.errors import DistdxError
from distdx.paths import cached
from distdx.yamlio import load_yaml

SECRET = "[REDACTED]"


@dataclass(frozen=True)
class SecretPattern:
    code: str
    name: str
    pattern: re.Pattern[str]
    match: tuple[str, ...]  # fixtures: "text => the secret in it"
    no_match: tuple[str, ...]  # fixtures that must come out unchanged


@lru_cache(maxsize=1)
def secret_patterns() -> tuple[SecretPattern, ...]:
    """The patterns of ``secrets.yaml``, compiled."""
    raw = resources.files("distdx.report").joinpath("secrets.yaml").read_bytes()
    data = cached("secrets", [raw], lambda: load_yaml(raw.decode("utf-8")))
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("patterns"), list):
        raise DistdxError("DX-REPORT-001", "secrets.yaml must have `version: 1` and a list of patterns",
                          hint="fix src/distdx/report/secrets.yaml", exit_code=3)
    out = []
    for spec in data["patterns"]:
        try:
            pattern = re.compile(spec["pattern"])
        except (KeyError, TypeError, re.error) as e:
            raise DistdxError("DX-REPORT-001", f"secrets.yaml: {spec.get('code', '?')}: bad pattern ({e})",
                              hint="fix src/distdx/report/secrets.yaml", exit_code=3) from None
        out.append(SecretPattern(str(spec["code"]), str(spec.get("name", "")), pattern,
                                 tuple(spec.get("match") or ()), tuple(spec.get("no_match") or ())))
    return tuple(out)


def _replace_secret(m: re.Match[str]) -> str:
    if "secret" not in m.re.groupindex or m.start("secret") < 0:
        return SECRET
    whole, start = m.group(0), m.start()
    return whole[: m.start("secret") - start] + SECRET + whole[m.end("secret") - start:]


_IPV4 = re.compile(r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\d.])")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}(?![\w:])")
# host names: dotted names with a letter in the last label (node01.cluster.local), and the
# bare names launchers print as prefixes (`worker-3:`) when given explicitly
_FQDN = re.compile(r"\b(?=[a-z0-9-]*[a-z])[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63})*\.(?:local|internal|lan|cluster|com|net|org|io|ai|edu|cloud)\b", re.I)
_KEEP_IPS = {"127.0.0.1", "0.0.0.0", "255.255.255.255"}
# public sites that name software, not the user's machines
_PUBLIC_HOSTS = re.compile(
    r"(?:^|\.)(?:github\.com|githubusercontent\.com|pypi\.org|pythonhosted\.org|huggingface\.co|"
    r"pytorch\.org|nvidia\.com|microsoft\.com|deepspeed\.ai|colossalai\.org|readthedocs\.io|python\.org)$",
    re.I,
)


def redact_secrets(text: str) -> str:
    for secret in secret_patterns():
        text = secret.pattern.sub(_replace_secret, text)
    return text


def redact_hosts(text: str, hosts: tuple[str, ...] | list[str] = ()) -> str:
    """Replace IPs, dotted host names and the given bare host names with stable placeholders."""
    mapping: dict[str, str] = {}

    def sub(prefix: str):
        def repl(m: re.Match[str]) -> str:
            value = m.group(0)
            if value in _KEEP_IPS or value.lower() == "localhost" or _PUBLIC_HOSTS.search(value):
                return value
            if value not in mapping:
                mapping[value] = f"{prefix}-{sum(1 for v in mapping.values() if v.startswith(prefix)) + 1}"
            return mapping[value]
        return repl

    text = _IPV6.sub(sub("ip"), text)
    text = _IPV4.sub(sub("ip"), text)
    for host in sorted(set(h for h in hosts if h and h != "localhost"), key=len, reverse=True):
        text = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", sub("host"), text)
    return _FQDN.sub(sub("host"), text)


def redact(text: str, *, hosts: bool = False, host_names: tuple[str, ...] | list[str] = ()) -> str:
    """Secrets always; host names and IPs when ``hosts`` is true."""
    text = redact_secrets(text)
    return redact_hosts(text, host_names) if hosts else text
