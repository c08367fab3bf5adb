from pathlib import Path

import pytest

from distdx.errors import DistdxError
from distdx.paths import user_dir, write_atomic


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


def test_write_atomic_never_replaces_without_force_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "sub" / "labels.jsonl"
    assert write_atomic(target, "one\n") == target and target.read_text() == "one\n"
    with pytest.raises(DistdxError) as e:
        write_atomic(target, "two\n", what="labels")
    assert e.value.code == "DX-PATH-001" and "--force" in e.value.hint
    assert target.read_text() == "one\n"
    write_atomic(target, b"two\n", force=True)
    assert target.read_text() == "two\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["labels.jsonl"]
    dangling = tmp_path / "link"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(DistdxError):
        write_atomic(dangling, "x")


def test_write_atomic_names_the_real_cause(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("kept")
    with pytest.raises(DistdxError) as e:
        write_atomic(blocker / "x.jsonl", "x")  # its folder would have to be a file
    assert e.value.code == "DX-PATH-002" and "is a file, not a folder" in e.value.message
    assert blocker.read_text() == "kept"
    with pytest.raises(DistdxError) as e:
        write_atomic(tmp_path, "x", force=True)
    assert e.value.code == "DX-PATH-002" and "folder" in e.value.message
