import pytest

from distdx.report.redact import redact


@pytest.mark.parametrize("secret", [
    "ghp_0123456789abcdefghijABCDEFGHIJ",
    "hf_abcdefghijklmnopqrstuvwxyz",
    "sk-proj-abcdefghijklmnopqrstuvwx",
    "AKIAABCDEFGHIJKLMNOP",
    "xoxb-1234567890-abcdefghij",
])
def test_known_token_shapes_are_removed(secret):
    assert secret not in redact(f"export X={secret} and more")


def test_password_in_url_and_secret_assignments():
    out = redact("git clone https://alice:s3cr3tpass@gitlab.example.com/r.git WANDB_API_KEY=abcd1234efgh")
    assert "s3cr3tpass" not in out and "abcd1234efgh" not in out
    assert "https://alice:[REDACTED]@gitlab.example.com/r.git" in out


def test_hosts_and_ips_get_stable_placeholders():
    out = redact("worker-7: connect to 10.0.0.5 failed; worker-7 retries 10.0.0.5; see github.com/x", hosts=True, host_names=["worker-7"])
    assert out.count("host-1") == 2 and out.count("ip-1") == 2
    assert "github.com" in out and "worker-7" not in out


def test_benign_text_is_left_alone():
    text = "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error, NCCL version 2.18.1"
    assert redact(text) == text
    assert redact("tokenizer loaded; max_tokens=2048") == "tokenizer loaded; max_tokens=2048"
