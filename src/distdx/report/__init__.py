"""Rendering shared by every command: text for people, JSON, Markdown to paste into an issue,
and redaction of secrets (always) and of host names and IPs (on request)."""

from distdx.report.redact import redact

__all__ = ["redact"]
