"""Event files round-trip; options come from keywords and DISTDX_GUARD_* with clear errors."""

import json

import pytest

from distdx.errors import DistdxError
from distdx.guard import GuardConfig, GuardEvent, read_events
from distdx.guard.events import EventLog


def test_event_round_trip_and_schema_fields(tmp_path):
    log = EventLog(tmp_path, 1)
    event = GuardEvent(kind="hang", message="hang at step 4: ...", rank=1, step=4, host="h", time=12.5, reporter=0,
                       fields={"waiting": [0], "lagging": [1]})
    log.append(event)
    line = (tmp_path / "guard-rank1.jsonl").read_text().splitlines()[0]
    data = json.loads(line)
    for key in ("distdx", "kind", "severity", "rank", "host", "step", "time", "message"):
        assert key in data
    assert data["distdx"] == 1 and data["lagging"] == [1]
    assert read_events(tmp_path) == [event]


def test_read_events_skips_other_lines_and_cut_lines(tmp_path):
    path = tmp_path / "guard-rank0.jsonl"
    path.write_text('not json\n{"distdx": 1, "kind": "x", "message": "m", "rank": 0, "time": 2}\n{"other": 1}\n{"distdx": 1, "ki')
    (event,) = read_events(path)
    assert event.kind == "x" and event.rank == 0


def test_read_events_unreadable_is_a_distdx_error(tmp_path):
    with pytest.raises(DistdxError) as e:
        read_events(tmp_path / "missing.jsonl")
    assert e.value.code == "DX-GUARDCFG-002"


def test_config_from_env_and_overrides():
    cfg = GuardConfig.from_env({"DISTDX_GUARD_DIR": "/x", "DISTDX_GUARD_HANG_S": "3", "DISTDX_GUARD_FAIL_FAST": "yes"})
    assert cfg.out_dir == "/x" and cfg.hang_s == 3.0 and cfg.fail_fast is True
    assert cfg.with_options(hang_s="7.5").hang_s == 7.5


@pytest.mark.parametrize("env", [{"DISTDX_GUARD_HANG_S": "soon"}, {"DISTDX_GUARD_FAIL_FAST": "maybe"}])
def test_config_bad_values_are_distdx_errors(env):
    with pytest.raises(DistdxError) as e:
        GuardConfig.from_env(env)
    assert e.value.code == "DX-GUARDCFG-003" and "DISTDX_GUARD_" in e.value.message


def test_config_unknown_option():
    with pytest.raises(DistdxError) as e:
        GuardConfig().with_options(hang_secs=3)
    assert "hang_s" in (e.value.hint or "")
