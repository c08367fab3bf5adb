"""Cross-rank comparisons on published values: each finding names the right ranks, step and difference."""

from distdx.guard import compare


def test_compare_facts_names_the_odd_rank_and_both_values():
    facts = {
        0: {"version:torch": "2.13.0", "env:MASTER_PORT": "29500", "size:world_size": "3"},
        1: {"version:torch": "2.12.1", "env:MASTER_PORT": "29500", "size:world_size": "3"},
        2: {"version:torch": "2.13.0", "env:MASTER_PORT": "29501", "size:world_size": "3"},
    }
    findings = {f.kind: f for f in compare.compare_facts(facts)}
    assert set(findings) == {"version_mismatch", "env_mismatch"}
    v = findings["version_mismatch"]
    assert v.ranks == (1,) and v.severity == "error"
    assert v.message == "version mismatch across ranks: torch is 2.13.0 on ranks 0, 2 and 2.12.1 on rank 1"
    assert findings["env_mismatch"].ranks == (2,) and findings["env_mismatch"].severity == "warning"


def test_compare_facts_counts_a_missing_key_as_unset():
    findings = compare.compare_facts({0: {"env:NCCL_IB_DISABLE": "1"}, 1: {}, 2: {}})
    assert findings[0].ranks == (0,)
    assert "NCCL_IB_DISABLE is 1 on rank 0 and <unset> on ranks 1, 2" in findings[0].message


def test_compare_facts_agreeing_ranks_give_nothing():
    same = {"version:torch": "2.13.0"}
    assert compare.compare_facts({0: same, 1: dict(same)}) == []


def test_compare_models_names_parameter_shape_and_missing_one():
    ref = [["fc.weight", [4, 8], "float32", True], ["fc.bias", [4], "float32", True]]
    odd = [["fc.weight", [4, 16], "float32", True]]
    finding = compare.compare_models({0: ref, 1: ref, 2: odd})
    assert finding is not None and finding.ranks == (2,)
    assert "rank 2 has fc.weight [4, 16] float32 where rank 0 has [4, 8] float32" in finding.message
    assert "rank 2 lacks fc.bias [4] float32" in finding.message
    assert compare.compare_models({0: ref, 1: list(ref)}) is None


def test_compare_models_reports_frozen_parameters():
    a = [["w", [2], "float32", True]]
    b = [["w", [2], "float32", False]]
    finding = compare.compare_models({0: a, 1: a, 2: b})
    assert "rank 2 has w [2] float32 (frozen) where rank 0 has [2] float32" in finding.message


def rec(seq, op="all_reduce", shape="[4, 4]", site="train.py:60", step=3, root=None, group="world"):
    return [group, seq, op, shape, "float32", root, site, step]


def test_rings_shape_mismatch_at_same_seq():
    rings = {0: [rec(3), rec(4)], 1: [rec(3), rec(4, shape="[4, 8]")]}
    (finding,) = compare.compare_rings(rings)
    assert finding.kind == "collective_mismatch" and finding.ranks == (1,) and finding.step == 3
    assert finding.fields["seq"] == 4
    assert "rank 1 called all_reduce(shape=[4, 8], dtype=float32) at train.py:60 while rank 0 called all_reduce(shape=[4, 4]" in finding.message


def test_rings_other_op_or_other_site_is_a_divergence():
    rings = {0: [rec(3, op="all_reduce", step=2)], 1: [rec(3, op="barrier", shape="", site="train.py:70", step=0)]}
    (finding,) = compare.compare_rings(rings)
    assert finding.kind == "collective_diverged" and finding.ranks == (1,) and finding.step == 2
    rings = {0: [rec(5, site="a.py:1")], 1: [rec(5, site="a.py:9")], 2: [rec(5, site="a.py:1")]}
    (finding,) = compare.compare_rings(rings)
    assert finding.kind == "collective_diverged" and finding.ranks == (1,)


def test_rings_agree_and_wildcard_shapes_are_not_compared():
    assert compare.compare_rings({0: [rec(1), rec(2)], 1: [rec(1), rec(2)]}) == []
    a2a = {0: [rec(1, op="all_to_all_single", shape="*")], 1: [rec(1, op="all_to_all_single", shape="*")]}
    assert compare.compare_rings(a2a) == []


def test_rings_only_the_first_divergence_per_group():
    rings = {0: [rec(1), rec(2), rec(3)], 1: [rec(1), rec(2, shape="[1]"), rec(3, shape="[2]")]}
    findings = compare.compare_rings(rings)
    assert [f.fields["seq"] for f in findings] == [2]


def hb(rank, *, act=None, counts=None, step=0, state="running", last=None, loaders=None, pending=False):
    return {
        "rank": rank, "pid": 100 + rank, "host": "h", "beat": 1, "state": state, "step": step, "pending": pending,
        "counts": counts or {}, "groups": {"world": [0, 1]}, "act": act, "ring": [], "last": last,
        "last_by_group": {"world": last} if last else {}, "loaders": loaders or {}, "drift": None,
    }


def test_find_hang_names_waiting_and_lagging_ranks():
    now = 1000.0
    beats = {
        0: hb(0, act=["collective", "world", 7, "all_reduce", "t.py:5", now - 30], counts={"world": 7}, step=4),
        1: hb(1, act=["backward", "ddp", 5, "backward", "t.py:3", now - 30], counts={"world": 6}, step=5,
              last=rec(6, step=3)),
    }
    finding = compare.find_hang(beats, now, 20.0, {})
    assert finding.kind == "hang" and finding.ranks == (1,)
    assert finding.fields["waiting"] == [0] and finding.fields["lagging"] == [1]
    assert finding.message.startswith("hang at step 4: rank 0 has waited 30.0 s in all_reduce seq 7 on group world at t.py:5")
    assert "rank 1 has not reached it" in finding.message and "in backward at t.py:3" in finding.message
    assert compare.find_hang(beats, now, 40.0, {}) is None


def test_find_hang_all_inside_the_same_collective_is_the_transport():
    now = 50.0
    act = ["collective", "world", 3, "all_reduce", "t.py:5", now - 25]
    beats = {0: hb(0, act=act, counts={"world": 3}), 1: hb(1, act=list(act), counts={"world": 3})}
    finding = compare.find_hang(beats, now, 20.0, {})
    assert finding.fields["lagging"] == [] and "transport itself is stuck" in finding.message


def test_find_hang_counts_lost_ranks_as_lagging():
    now = 50.0
    beats = {0: hb(0, act=["collective", "world", 3, "barrier", "t.py:9", now - 25], counts={"world": 3})}
    finding = compare.find_hang(beats, now, 20.0, {1: "has exited"})
    assert finding.ranks == (1,) and "rank 1 has exited" in finding.message


def test_find_hang_uses_the_threshold_each_rank_publishes():
    now = 100.0
    waiting = hb(0, act=["collective", "world", 7, "all_reduce", "t.py:5", now - 6, 5.0], counts={"world": 7}, step=4)
    lagging = hb(1, counts={"world": 6}, step=4, last=rec(6, step=3))
    finding = compare.find_hang({0: waiting, 1: lagging}, now, 20.0, {})
    assert finding.ranks == (1,) and finding.fields["threshold_s"] == 5.0
    waiting["act"][6] = 8.0  # a slower call: 6 s is within its pace
    assert compare.find_hang({0: waiting, 1: lagging}, now, 20.0, {}) is None
    del waiting["act"][6]  # merged from an announcement: no threshold, hang_s applies
    assert compare.find_hang({0: waiting, 1: lagging}, now, 20.0, {}) is None
    assert compare.find_hang({0: waiting, 1: lagging}, now, 5.5, {}).ranks == (1,)


def test_find_hang_waits_out_a_slow_phase_of_a_lagging_rank():
    now = 100.0
    waiting = hb(0, act=["collective", "world", 7, "all_reduce", "t.py:5", now - 30, 5.0], counts={"world": 7})
    saving = dict(hb(1, counts={"world": 6}, last=rec(6)), phase=["checkpoint save", now - 31])
    assert compare.find_hang({0: waiting, 1: saving}, now, 20.0, {}, slow_phase_s=600.0) is None
    assert compare.find_hang({0: waiting, 1: saving}, now, 20.0, {}, slow_phase_s=25.0).ranks == (1,)
    # the save ended 2 s ago and the rank is on its way to the call: not a hang yet
    back = dict(saving, phase=None, phase_end=now - 2)
    assert compare.find_hang({0: waiting, 1: back}, now, 20.0, {}, slow_phase_s=600.0) is None
    back["phase_end"] = now - 6
    finding = compare.find_hang({0: waiting, 1: back}, now, 20.0, {}, slow_phase_s=600.0)
    assert finding.ranks == (1,) and "waited 30.0 s" in finding.message


def test_find_hang_all_inside_counts_from_the_last_arrival():
    now = 50.0
    early = ["collective", "world", 3, "all_reduce", "t.py:5", now - 25, 5.0]
    late = [*early[:5], now - 1, 5.0]
    beats = {0: hb(0, act=early, counts={"world": 3}), 1: hb(1, act=late, counts={"world": 3})}
    assert compare.find_hang(beats, now, 20.0, {}) is None
    beats[1]["act"][5] = now - 6
    assert "transport itself is stuck" in compare.find_hang(beats, now, 20.0, {}).message


def test_hang_threshold_follows_the_pace_of_the_call():
    from distdx.guard.config import GuardConfig
    from distdx.guard.session import Session

    s = Session.__new__(Session)  # only the pace bookkeeping: no process group needed
    s.config, s._pace = GuardConfig(), {}
    act = ["collective", "world", 1, "all_reduce", "t.py:5", 0.0]
    for t in (0.0, 1.0, 3.0):
        assert Session.hang_threshold(s, act) == 20.0  # first calls: hang_s
        Session._tick(s, ("world", "all_reduce", "t.py:5"), t)
    assert Session.hang_threshold(s, act) == 20.0  # 10 x the larger of two periods (1 s, 2 s)
    Session._tick(s, ("world", "all_reduce", "t.py:5"), 4.0)
    assert Session.hang_threshold(s, act) == 10.0  # 10 x the median period, 1 s
    for t in (3.01, 3.02, 3.03, 3.04, 3.05):
        Session._tick(s, ("world", "all_reduce", "t.py:5"), t)
    assert Session.hang_threshold(s, act) == 5.0  # a fast loop: the floor
    for t in (10.0, 12.0, 14.0):  # training steps of 2 s: a call made many times a step waits for them
        Session._tick(s, ("step",), t)
    assert Session.hang_threshold(s, act) == 20.0
    s.config = GuardConfig(hang_factor=0)
    assert Session.hang_threshold(s, act) == 20.0
    backward = ["backward", "ddp", 1, "backward", "t.py:9", 0.0]
    assert Session.hang_threshold(s, backward) == 20.0  # its own history, none yet


def test_find_skipped_names_the_rank_that_moved_on():
    now = 10.0
    beats = {
        0: hb(0, act=["collective", "world", 4, "all_reduce", "t.py:60", now - 1], counts={"world": 4}, step=3,
              last=rec(4, step=3)),
        1: hb(1, act=["backward", "ddp", 4, "backward", "t.py:53", now - 1], counts={"world": 3}, step=4),
    }
    (finding,) = compare.find_skipped(beats, now)
    assert finding.kind == "collective_skipped" and finding.ranks == (1,) and finding.step == 3
    assert "rank 1 never called all_reduce(shape=[4, 4], dtype=float32) at train.py:60" in finding.message
    # a peer at the same step is only behind, not past it
    beats[1]["step"] = 3
    assert compare.find_skipped(beats, now) == []


def test_find_lost_infers_the_step_it_died_in():
    beats = {
        0: hb(0, counts={"world": 3}, step=3),
        1: hb(1, act=["collective", "world", 3, "all_reduce", "t.py:60", 0.0], counts={"world": 3}, step=2,
              pending=True, last=rec(3, step=2)),
    }
    (finding,) = compare.find_lost(beats, {1: "process 101 on h is gone (killed or crashed)"})
    assert finding.kind == "rank_lost" and finding.ranks == (1,) and finding.step == 3
    # in lockstep (DDP) a rank is never behind its peers by more than the step they are in
    beats[1].update(act=None, pending=False, step=0)
    (finding,) = compare.find_lost(beats, {1: "gone"}, lockstep=True)
    assert finding.step == 3


def test_compare_loaders_lengths_and_early_end():
    beats = {0: hb(0, loaders={"t.py:25": [0, 3, 1, False]}), 1: hb(1, loaders={"t.py:25": [0, 2, 1, False]})}
    (finding,) = compare.compare_loaders(beats)
    assert finding.kind == "uneven_batches" and finding.ranks == (0,) and finding.step == 2
    assert "rank 0 has 3 batches while rank 1 has 2 batches" in finding.message
    # unknown lengths (iterable datasets): one rank's epoch ended while another went past it
    beats = {0: hb(0, loaders={"x": [1, -1, 5, True]}), 1: hb(1, loaders={"x": [1, -1, 6, False]}),
             2: hb(2, loaders={"x": [1, -1, 5, True]})}
    (finding,) = compare.compare_loaders(beats)
    assert finding.ranks == (1,) and finding.fields["epoch"] == 1
    beats = {0: hb(0, loaders={"x": [0, 4, 4, True]}), 1: hb(1, loaders={"x": [0, 4, 2, False]})}
    assert compare.compare_loaders(beats) == []


def test_compare_drift_names_the_parameter():
    beats = {0: hb(0), 1: hb(1), 2: hb(2)}
    beats[0]["drift"] = [200, "aa", [1.0, 2.0]]
    beats[1]["drift"] = [200, "aa", [1.0, 2.0]]
    beats[2]["drift"] = [200, "bb", [1.0, 2.5]]
    (finding,) = compare.compare_drift(beats, ["fc.weight", "fc.bias"])
    assert finding.ranks == (2,) and finding.step == 200 and "in fc.bias" in finding.message


def test_merge_announced_brings_a_stale_heartbeat_up_to_date():
    beat = hb(0, counts={"world": 1}, step=0)
    beat["t"] = 10.0
    compare.merge_announced(beat, [*rec(4, step=3), 11.0])
    assert beat["counts"]["world"] == 4 and beat["step"] == 3 and beat["last"][1] == 4
    assert beat["act"][:3] == ["collective", "world", 4]
    before = dict(beat)
    compare.merge_announced(beat, [*rec(2, step=1), 12.0])  # older than what the heartbeat has
    assert beat == before


def test_hang_step_is_the_step_of_the_call_being_waited_in():
    # a script without optimizer steps publishes step 0; its records carry the loop iteration
    now = 1000.0
    beats = {
        0: hb(0, act=["collective", "world", 3, "all_reduce", "s.py:24", now - 25], counts={"world": 3}, step=0,
              last=rec(3, step=2)),
        1: hb(1, counts={"world": 2}, step=0, last=rec(2, step=1)),
    }
    finding = compare.find_hang(beats, now, 20.0, {})
    assert finding.ranks == (1,) and finding.step == 2
    assert finding.message.startswith("hang at step 2: rank 0 has waited 25.0 s in all_reduce seq 3")
