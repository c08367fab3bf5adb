from pathlib import Path

from distdx.paths import user_dir


def test_user_dirs_follow_xdg_then_home_and_an_override_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    for kind in ("cache", "data", "state"):
        monkeypatch.delenv(f"XDG_{kind.upper()}_HOME", raising=False)
    assert user_dir("cache") == tmp_path / ".cache" / "distdx"
    assert user_dir("data") == tmp_path / ".local" / "share" / "distdx"
    assert user_dir("state") == tmp_path / ".local" / "state" / "distdx"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert user_dir("state") == tmp_path / "xdg" / "distdx"
    assert user_dir("state", "/elsewhere") == Path("/elsewhere")
