"""The engine ranks by evidence and position, stays honest without evidence, and keeps its contract."""

import json

from distdx.diagnose.engine import diagnose
from distdx.diagnose.textmodel import TextModel
from distdx.knowledge.known_issues import issue_from_case
from distdx.knowledge.rules import parse_rule_file
from distdx.knowledge.taxonomy import DIMENSIONS
from distdx.logs.models import FirstFailure, LogLine, ParsedLog

RULES = parse_rule_file("test.yaml", """
version: 1
rules:
  - code: DX-TEST-001
    title: CUDA out of memory
    patterns: ['CUDA out of memory']
    symptoms: {"4.2": 1.0}
    root_causes: {R4.5: 1.0}
    fix_patterns: {F5: 1.0}
    why: The GPU ran out of memory.
    fix: [Lower the micro batch size.]
  - code: DX-TEST-002
    title: NCCL watchdog timeout
    patterns: ['Watchdog caught collective operation timeout']
    symptoms: {"4.7": 1.0}
    root_causes: {R4.7: 1.0}
    fix_patterns: {F3: 1.0}
    why: A collective did not finish in time.
    fix: [Find the rank that stopped first.]
""", frozenset({"DX-TEST-002"}))  # a consequence, as cascade.yaml's `rules` would list it
EMPTY_MODEL = TextModel(())


def _parsed(lines, first=None, cascade=()):
    ff = None
    if first is not None:
        ff = FirstFailure(line=lines[first], text=lines[first].text, reason="earliest error",
                          cascade=tuple(lines[i] for i in cascade))
    return ParsedLog(sources=("job.log",), lines=tuple(lines), first_failure=ff,
                     ranks=tuple(sorted({l.rank for l in lines if l.rank is not None})), total_lines=len(lines))


def _oom_then_cascade(n_cascade=6):
    lines = [LogLine("job.log", 1, "step 10 loss 2.1", rank=0),
             LogLine("job.log", 2, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", rank=3)]
    for r in range(n_cascade):
        lines.append(LogLine("job.log", 3 + r, f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)", rank=r))
    return _parsed(lines, first=1, cascade=range(2, 2 + n_cascade))


def test_first_failure_outweighs_its_cascade():
    d = diagnose(_oom_then_cascade(), rules=RULES, model=EMPTY_MODEL)
    assert d.top("symptom") == "4.2"
    assert d.top("root_cause") == "R4.5"
    assert d.top("fix_pattern") == "F5"
    assert d.top("stage") == "S4"
    assert d.first_failure.rank == 3
    assert d.evidence[0].rule == "DX-TEST-001" and d.evidence[0].first_failure
    assert any(e.cascade for e in d.evidence if e.rule == "DX-TEST-002")


def test_without_a_first_failure_the_cascade_would_win():
    # the same lines, but nobody told the engine which error came first: the many watchdog lines still count once
    parsed = _oom_then_cascade()
    plain = ParsedLog(sources=parsed.sources, lines=parsed.lines, total_lines=parsed.total_lines)
    d = diagnose(plain, rules=RULES, model=EMPTY_MODEL)
    scores = {h.id: h.score for h in d.classification["symptom"]}
    # each rule counts once at its strongest hit: the cascade rule is down-weighted, OOM still first
    assert scores["4.2"] > scores["4.7"]


def test_cascade_type_lines_the_logs_layer_did_not_list_still_count_as_cascade():
    # a rule that is not itself marked `cascade` fires on watchdog lines of other ranks; with a
    # real first failure (the OOM) those lines are its consequence even if not in its cascade list
    rules = RULES + parse_rule_file("more.yaml", """
version: 1
rules:
  - code: DX-TEST-003
    title: NCCL operations failed
    patterns: ['Some NCCL operations have failed or timed out']
    symptoms: {"4.7": 1.0}
    root_causes: {R4.7: 1.0}
    fix_patterns: {F1: 1.0}
    why: NCCL tore the process down.
    fix: [Look at the rank that failed first.]
""")
    oom = _oom_then_cascade(2)
    extra = [LogLine("job.log", 10 + r, f"[Rank {r}] Some NCCL operations have failed or timed out.", rank=r) for r in range(4)]
    parsed = ParsedLog(sources=oom.sources, lines=oom.lines + tuple(extra), first_failure=oom.first_failure,
                       ranks=oom.ranks, total_lines=len(oom.lines) + len(extra))
    d = diagnose(parsed, rules=rules, model=EMPTY_MODEL)
    assert all(e.cascade for e in d.evidence if e.rule == "DX-TEST-003")
    assert d.top("fix_pattern") == "F5"
    # with only cascade-type errors in the input, they are the failure and keep their weight
    alone = _parsed(extra, first=0)
    d = diagnose(alone, rules=rules, model=EMPTY_MODEL)
    assert not any(e.cascade for e in d.evidence if e.rule == "DX-TEST-003")


def test_a_clean_log_is_no_failure_not_a_diagnosis():
    parsed = _parsed([LogLine("job.log", 1, "epoch 3 finished, saving"), LogLine("job.log", 2, "all good")])
    d = diagnose(parsed, rules=RULES, model=EMPTY_MODEL)
    assert d.verdict == "no_failure" and d.confidence == 0.0 and not d.fixes and not d.similar
    assert all(h.score == 0.0 for dim in DIMENSIONS for h in d.classification[dim])
    assert d.headline.startswith("No failure found")


def test_nothing_fits_is_said_plainly_with_low_scores():
    parsed = _parsed([LogLine("job.log", 1, "epoch 3 finished, saving"), LogLine("job.log", 2, "then the job broke")])
    d = diagnose(parsed, rules=RULES, model=EMPTY_MODEL)
    assert d.verdict == "unexplained"
    assert d.confidence < 0.2
    assert all(h.score < 0.2 for dim in DIMENSIONS for h in d.classification[dim])
    assert "No known failure signature" in d.headline


def _issue(i, text, symptom, stage="S4", rc="R4.5", fp="F5"):
    return issue_from_case({"id": f"x-{i}", "url": f"https://example.org/{i}", "title": f"t{i}", "context": text,
                            "log": "", "labels": {"stage": stage, "symptom": symptom, "root_cause": rc, "fix_pattern": fp}})


def test_text_model_explains_prose_and_leave_one_out_excludes():
    model = TextModel((
        _issue(1, "deepspeed checkpoint load fails missing shard zero_pp_rank file on resume", "4.10", rc="R4.1", fp="F3"),
        _issue(2, "checkpoint resume fails missing optimizer shard after changing world size", "4.10", rc="R4.1", fp="F3"),
        _issue(3, "pip install deepspeed fails building cpu_adam with nvcc error", "1.1", stage="S1", rc="R1.2", fp="F2"),
    ))
    parsed = _parsed([LogLine("<text>", 1, "resume from checkpoint fails: a shard file is missing after I changed the world size")])
    d = diagnose(parsed, rules=(), model=model)
    assert d.top("symptom") == "4.10"
    assert d.similar and d.similar[0].id == "x-2"
    d2 = diagnose(parsed, rules=(), model=model, exclude_ids=frozenset({"x-1", "x-2"}))
    assert all(s.id not in ("x-1", "x-2") for s in d2.similar)


def test_similar_issues_shown_share_the_diagnosed_symptom():
    model = TextModel((
        _issue(1, "deepspeed checkpoint load fails missing shard zero_pp_rank file on resume", "4.10", rc="R4.1", fp="F3"),
        _issue(2, "checkpoint resume fails missing optimizer shard after changing world size", "4.10", rc="R4.1", fp="F3"),
        _issue(3, "checkpoint resume is slow: loading the optimizer shard takes an hour", "4.1", rc="R4.5", fp="F5"),
    ))
    parsed = _parsed([LogLine("<text>", 1, "resume from checkpoint fails: a shard file is missing after I changed the world size")])
    d = diagnose(parsed, rules=(), model=model)
    assert d.top("symptom") == "4.10"
    assert {s.id for s in d.similar} == {"x-1", "x-2"}  # x-3 shares words, not the failure


def test_an_input_that_is_a_known_issue_is_not_its_own_evidence():
    text = "pip install deepspeed fails building cpu_adam with nvcc error"
    other = _issue(4, "training loss is nan after a few steps with fp16", "4.1", rc="R4.3", fp="F3")
    with_itself = diagnose(_parsed([LogLine("<text>", 1, text)]), rules=(), model=TextModel((_issue(3, text, "1.1", stage="S1", rc="R1.2", fp="F2"), other)))
    without = diagnose(_parsed([LogLine("<text>", 1, text)]), rules=(), model=TextModel((other,)))
    assert with_itself.similar[0].id == "x-3" and with_itself.similar[0].exact
    assert with_itself.classification == without.classification
    assert with_itself.verdict == "unexplained"


def test_json_contract():
    d = diagnose(_oom_then_cascade(), rules=RULES, model=EMPTY_MODEL)
    out = json.loads(json.dumps(d.to_dict()))
    cls = out["classification"]
    for dim in DIMENSIONS:
        ranked = cls[dim]
        assert len(ranked) >= 3
        assert all(set(h) >= {"id", "score"} for h in ranked)
        assert [h["score"] for h in ranked] == sorted((h["score"] for h in ranked), reverse=True)
    for where in (cls["first_failure"], out["first_failure"]):
        assert where["rank"] == 3 and where["line"] == 2 and "CUDA out of memory" in where["text"]
        assert "host" in where
    assert out["evidence"][0]["rule"] == "DX-TEST-001" and out["evidence"][0]["source"] == "job.log"
    assert out["fixes"][0]["step"] == "Lower the micro batch size."


def test_deterministic():
    a = diagnose(_oom_then_cascade(), rules=RULES, model=EMPTY_MODEL).to_dict()
    b = diagnose(_oom_then_cascade(), rules=RULES, model=EMPTY_MODEL).to_dict()
    assert a == b


PHASED = parse_rule_file("phased.yaml", """
version: 1
rules:
  - code: DX-TEST-020
    title: NCCL unhandled system error
    patterns: ['unhandled system error']
    symptoms: {"2.2": 0.5, "4.7": 0.5}
    root_causes: {R2.3: 0.5, R4.7: 0.5}
    fix_patterns: {F4: 1.0}
    why: x
    fix: [y]
""")


def test_phase_markers_choose_among_a_rules_own_targets():
    def top(lines):
        parsed = _parsed([LogLine("j.log", i, t) for i, t in enumerate(lines, 1)])
        return diagnose(parsed, rules=PHASED, model=EMPTY_MODEL).top("symptom")

    assert top(["init_process_group on 2 nodes via torchrun, MASTER_ADDR=n0", "NCCL error: unhandled system error"]) == "2.2"
    assert top(["step 120: loss 2.31", "loss.backward()", "NCCL error: unhandled system error"]) == "4.7"


def test_weights_are_one_object_passed_in_not_patched():
    import dataclasses

    from distdx.diagnose.engine import DEFAULT_WEIGHTS, Weights

    parsed = _oom_then_cascade()
    base = diagnose(parsed, rules=RULES, model=EMPTY_MODEL)
    assert diagnose(parsed, rules=RULES, model=EMPTY_MODEL, weights=Weights()).to_dict() == base.to_dict()
    no_rules = dataclasses.replace(DEFAULT_WEIGHTS, rule_saturation=1e9)  # rule evidence counts for ~nothing
    assert diagnose(parsed, rules=RULES, model=EMPTY_MODEL, weights=no_rules).confidence < base.confidence
    with __import__("pytest").raises(dataclasses.FrozenInstanceError):
        DEFAULT_WEIGHTS.text_weight = 0.0  # type: ignore[misc]


def test_combine_over_gathered_signals_is_the_diagnosis():
    """A sweep recombines gathered signals: the ranking it scores is the one diagnose returns."""
    import dataclasses

    from distdx.diagnose.engine import DEFAULT_WEIGHTS, combine, gather_signals

    model = TextModel(tuple(_issue(i, f"alpha beta gamma{i} out of memory", "4.2", fp="F2" if i % 3 else "F5") for i in range(9)))
    parsed = _oom_then_cascade()
    for weights in (DEFAULT_WEIGHTS, dataclasses.replace(DEFAULT_WEIGHTS, text_weight=2.0, fix_via_cause=0.0)):
        d = diagnose(parsed, rules=RULES, model=model, weights=weights)
        dists = combine(gather_signals(parsed, rules=RULES, model=model, weights=weights), weights)
        for dim in DIMENSIONS:
            ranked = [k for k, _ in sorted(dists[dim].items(), key=lambda kv: (-kv[1], kv[0]))][:5]
            assert [h.id for h in d.classification[dim]] == ranked


def test_without_evidence_the_prior_is_the_known_issues_base_rate():
    """With nothing that matches, the answer is the known issues' label shares (index_prior), or the
    study's (F2 first) with index_prior 0; the naive-Bayes fix pattern takes the shares as its class prior."""
    import dataclasses

    from distdx.diagnose.engine import DEFAULT_WEIGHTS

    model = TextModel(tuple(_issue(i, f"zeta{i} kernel launch", "4.2", fp="F5" if i < 6 else "F2") for i in range(8)))
    unrelated = _parsed([LogLine("job.log", 1, "something odd happened in the dataloader")])
    assert diagnose(unrelated, rules=(), model=model).top("fix_pattern") == "F5"
    study = dataclasses.replace(DEFAULT_WEIGHTS, index_prior=0.0, fix_class_prior=0.0, fix_via_cause=0.0)
    assert diagnose(unrelated, rules=(), model=model, weights=study).top("fix_pattern") == "F2"

    # naive Bayes has no class prior of its own: fix_class_prior multiplies in the fix-pattern shares
    shared = _parsed([LogLine("job.log", 1, "kernel launch failed")])
    text_only = dataclasses.replace(DEFAULT_WEIGHTS, nb_share=1.0, prior_weight=0.0, fix_via_cause=0.0, fix_class_prior=0.0)

    def f5_over_f2(weights):
        scores = {h.id: h.score for h in diagnose(shared, rules=(), model=model, weights=weights).classification["fix_pattern"]}
        return scores["F5"] / scores["F2"]

    from distdx.knowledge.taxonomy import taxonomy

    study = {f: taxonomy().prior(f) for f in ("F5", "F2")}
    total = sum(taxonomy().prior(f) for f in taxonomy().ids("fix_pattern"))
    shares = (6 + 2 * study["F5"] / total) / (2 + 2 * study["F2"] / total)  # 6 F5 and 2 F2, smoothed
    assert abs(f5_over_f2(dataclasses.replace(text_only, fix_class_prior=1.0)) / f5_over_f2(text_only) - shares) < 1e-6


def test_symptom_cues_name_the_kind_of_failure_in_the_stage_the_engine_believes():
    """A rule that only knows "inference failed" leaves the symptom to the words: the same uneven split
    is 5.8 in inference and 4.6 in training; without the cues the rule's own 5.1 wins."""
    import dataclasses

    from distdx.diagnose.engine import DEFAULT_WEIGHTS

    rules = parse_rule_file("t.yaml", """
version: 1
rules:
  - code: DX-TEST-010
    title: inference fails
    patterns: ['(?i)inference fails']
    symptoms: {"5.1": 0.5, "5.8": 0.3, "5.5": 0.2}
    root_causes: {R5.3: 1.0}
    fix_patterns: {F3: 1.0}
    why: An inference job failed.
    fix: [Read the first error.]
""", frozenset())
    text = ["inference fails with tensor parallel size 8", "AssertionError: 52 heads are not divisible by mp_size 8"]
    parsed = _parsed([LogLine("j.log", i, t) for i, t in enumerate(text, 1)])
    assert diagnose(parsed, rules=rules, model=EMPTY_MODEL).top("symptom") == "5.8"
    off = dataclasses.replace(DEFAULT_WEIGHTS, symptom_cues=0.0)
    assert diagnose(parsed, rules=rules, model=EMPTY_MODEL, weights=off).top("symptom") == "5.1"
