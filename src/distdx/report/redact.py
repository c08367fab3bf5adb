"""Redaction of secrets, and optionally of host names and IP addresses, before text is shared.

Secrets are always removed from Markdown meant for a public issue: tokens (GitHub, Hugging Face,
OpenAI, AWS, Slack, W&B), bearer headers, passwords in URLs, ``KEY=value`` assignments whose name
says secret. Hosts and IPs are replaced with stable placeholders (``host-1``, ``ip-1``) so that a
reader can still tell which lines come from the same machine.
"""

from __future__ import annotations

import re

SECRET = "[REDACTED]"

_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # credentials inside URLs: scheme://user:password@host
    (re.compile(r"(?P<pre>\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(?=@)", re.I), r"\g<pre>" + SECRET),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"), SECRET),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"), SECRET),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"), SECRET),
    (re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}\b"), SECRET),
    (re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), SECRET),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"), SECRET),
    (re.compile(r"(?P<pre>\bBearer\s+)[A-Za-z0-9._~+/=-]{8,}", re.I), r"\g<pre>" + SECRET),
    (re.compile(r"(?P<pre>\b(?:token|api[_-]?key)=)[^\s&\"']+", re.I), r"\g<pre>" + SECRET),
    # NAME=value / NAME: value where the name says it is a secret (WANDB_API_KEY, HF_TOKEN, password)
    (re.compile(
        r"(?P<pre>\b[A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|ACCESS_KEY)(?:_[A-Za-z0-9_]*)?"
        r"\s*[=:]\s*[\"']?)(?!\d+\b)(?P<val>[^\s\"',;]{4,})", re.I), r"\g<pre>" + SECRET),
)

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
    for pattern, repl in _SECRET_PATTERNS:
        text = pattern.sub(repl, text)
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
