from distdx.diagnose.engine import diagnose
from distdx.diagnose.textmodel import TextModel
from distdx.knowledge.rules import parse_rule_file
from distdx.logs.models import FirstFailure, LogLine, ParsedLog
from distdx.report.diagnosis import render_markdown, render_text

RULES = parse_rule_file("t.yaml", """
version: 1
rules:
  - code: DX-TEST-010
    title: Connection refused by the rendezvous host
    patterns: ['Connection refused']
    symptoms: {"2.2": 1.0}
    root_causes: {R2.3: 1.0}
    fix_patterns: {F4: 1.0}
    why: Nothing listened on the master port.
    fix: [Open MASTER_PORT on the master node.]
""")


def _diagnosis():
    line = LogLine("run.log", 7, "RuntimeError: Connection refused (node02.cluster.local 10.1.2.3) token=ghp_abcdefghijklmnopqrstuvwxyz0123", rank=1, host="node02")
    parsed = ParsedLog(("run.log",), (line,), first_failure=FirstFailure(line, line.text, "earliest error"), ranks=(1,), total_lines=1)
    return diagnose(parsed, rules=RULES, model=TextModel(()))


def test_text_names_rank_location_evidence_and_fix():
    text = render_text(_diagnosis())
    assert "first failure: rank 1 (node02) at run.log:7" in text
    assert "DX-TEST-010" in text and "run.log:7" in text
    assert "1. Open MASTER_PORT on the master node." in text
    assert "2.2 Connection & timeout error" in text


def test_markdown_always_redacts_secrets_and_hosts_on_request():
    md = render_markdown(_diagnosis())
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123" not in md and "[REDACTED]" in md
    assert "node02.cluster.local" in md
    md_hosts = render_markdown(_diagnosis(), redact_hosts=True)
    assert "node02" not in md_hosts and "10.1.2.3" not in md_hosts
    assert "| symptom | 2.2 Connection & timeout error" in md
