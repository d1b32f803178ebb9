"""Outcome rules and every summary figure."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from agenteval import AssertionResult, EvaluatorSummary, ItemResult, RunSummary
from agenteval._results import AssertionRecord, ErrorInfo, item_status, mean_score


def _a(
    passed: bool, score: float, *, soft: bool = False, name: str = "Check", line: int = 10
) -> AssertionRecord:
    return AssertionRecord(
        name=name, passed=passed, soft=soft, score=score, file="ev.py", line=line
    )


def _item(
    index: int, status: str, assertions: list[AssertionRecord] = (), duration: float = 1.0
) -> ItemResult:  # type: ignore[assignment]
    return ItemResult(
        id=index, index=index, status=status, assertions=list(assertions), duration_s=duration
    )  # type: ignore[arg-type]


def test_assertion_result_helpers() -> None:
    assert AssertionResult.pass_() == AssertionResult(passed=True, score=1.0)
    failed = AssertionResult.fail(0.25, "too far", {"d": 3})
    assert (failed.passed, failed.score, failed.message, failed.context) == (
        False,
        0.25,
        "too far",
        {"d": 3},
    )


@pytest.mark.parametrize("score", [-0.1, 1.5, math.nan])
def test_assertion_result_rejects_scores_outside_unit_interval(score: float) -> None:
    with pytest.raises(ValidationError):
        AssertionResult(passed=True, score=score)


def test_assertion_result_is_frozen() -> None:
    result = AssertionResult.pass_()
    with pytest.raises(ValidationError):
        result.score = 0.5  # type: ignore[misc]


def test_item_status_rules() -> None:
    err = ErrorInfo(stage="run", type="ValueError", message="x")
    assert item_status([], None) == "passed"
    assert item_status([_a(True, 1.0), _a(False, 0.0, soft=True)], None) == "passed"
    assert item_status([_a(True, 1.0), _a(False, 0.0)], None) == "failed"
    assert item_status([_a(True, 1.0)], err) == "error"


def test_mean_score_includes_soft_assertions() -> None:
    assert mean_score([]) is None
    assert mean_score([_a(True, 1.0), _a(False, 0.5, soft=True)]) == 0.75


def test_evaluator_summary_figures() -> None:
    items = [
        _item(0, "passed", [_a(True, 1.0), _a(True, 0.8)], duration=1.0),
        _item(1, "failed", [_a(False, 0.2, name="A", line=5), _a(True, 1.0)], duration=2.0),
        _item(2, "error", [_a(False, 0.0, name="A", line=5)], duration=3.0),
        _item(3, "timeout", duration=4.0),
        _item(4, "passed", [_a(False, 0.4, soft=True)], duration=5.0),
    ]
    s = EvaluatorSummary.build(name="E", items=reversed(items), wall_time=2.5)
    assert [i.index for i in s.items] == [0, 1, 2, 3, 4]
    assert (s.total, s.passed, s.failed, s.errored, s.cancelled) == (5, 2, 1, 2, 0)
    assert s.success_rate == 2 / 5
    assert (s.assertions.total, s.assertions.passed, s.assertions.failed) == (6, 3, 3)
    assert s.assertions.success_rate == 0.5
    assert s.score.average == pytest.approx((1.0 + 0.8 + 0.2 + 1.0 + 0.0 + 0.4) / 6)
    assert (s.score.min, s.score.max) == (0.0, 1.0)
    assert s.duration_s.total == 2.5
    assert s.duration_s.average == 3.0  # mean item duration may exceed total / count
    assert s.soft_failures == 1
    assert [(g.key, g.count, g.items) for g in s.failures_by_assertion] == [("A", 2, [1, 2])]
    assert [(g.key, g.count) for g in s.failures_by_site] == [("ev.py:5", 2)]
    assert s.status == "error"


def test_evaluator_summary_empty_is_all_zero_and_has_no_score() -> None:
    s = EvaluatorSummary.build(name="E", items=[], wall_time=0.0)
    assert (s.total, s.success_rate, s.assertions.success_rate) == (0, 0.0, 0.0)
    assert (s.score.average, s.score.min, s.score.max) == (None, None, None)
    assert s.duration_s.average == 0.0
    assert s.status == "passed"


def test_evaluator_summary_status_precedence() -> None:
    err = ErrorInfo(stage="set_up", type="E", message="m")
    assert EvaluatorSummary.build(name="E", items=[], wall_time=0, error=err).status == "error"
    assert (
        EvaluatorSummary.build(name="E", items=[], wall_time=0, skip_reason="no key").status
        == "skipped"
    )
    assert (
        EvaluatorSummary.build(name="E", items=[_item(0, "failed")], wall_time=0).status == "failed"
    )
    # only an interrupt cancels items: the evaluator did not run them all
    cut_off = EvaluatorSummary.build(name="E", items=[_item(0, "cancelled")], wall_time=0)
    assert (cut_off.status, cut_off.complete) == ("interrupted", False)


def test_run_summary_aggregates() -> None:
    a = EvaluatorSummary.build(
        name="A", items=[_item(0, "passed"), _item(1, "failed")], wall_time=1
    )
    b = EvaluatorSummary.build(
        name="B", items=[_item(0, "crashed"), _item(1, "passed")], wall_time=1
    )
    run = RunSummary(id="r", started_at="t", duration_s=2, agenteval_version="0", evaluators=[a, b])
    assert (run.total, run.passed, run.failed, run.errored) == (4, 2, 1, 1)
    assert run.success_rate == 0.5


def test_summary_keeps_journaled_records_on_disk(tmp_path: Path) -> None:
    from agenteval._journal import Journal
    from agenteval._results import SummaryBuilder

    journal = Journal.create(tmp_path, "run", {"run_id": "run"})
    builder = SummaryBuilder(journal.records_path)
    for index in (2, 0, 1):  # completion order differs from dataset order
        item = _item(index, "passed", [_a(True, 1.0)])
        builder.add(item, at=journal.append(item.model_dump_json()))
    kept = _item(3, "failed", [_a(False, 0.0)])
    builder.add(kept, raw=kept.model_dump_json())
    journal.close()
    summary = builder.finish(name="E", wall_time=1.0)
    assert [i.index for i in summary.items] == [0, 1, 2, 3]
    assert (summary.total, summary.passed, summary.failed) == (4, 3, 1)
    assert [i.index for i in summary.notable_items] == [3]


def test_average_score_does_not_depend_on_completion_order() -> None:
    # (0.1 + 0.2) + 0.3 and 0.1 + (0.2 + 0.3) differ in the last bit as floats: a resumed
    # run, whose kept records are added before the re-run ones, must report the same figure
    from agenteval._results import SummaryBuilder

    averages = set()
    for order in ((0, 1, 2), (2, 1, 0), (1, 2, 0)):
        builder = SummaryBuilder()
        for index in order:
            builder.add(_item(index, "passed", [_a(True, (0.1, 0.2, 0.3)[index])]))
        averages.add(builder.finish(name="E", wall_time=1.0).score.average)
    assert averages == {0.6 / 3}


def test_failure_groups_of_equal_count_are_in_dataset_order_whatever_finished_first() -> None:
    # parallel runs put the group whose items finished first first: reports differed
    from agenteval._results import SummaryBuilder

    orders = set()
    for order in ((0, 1, 2, 3), (3, 2, 1, 0), (1, 0, 3, 2)):
        builder = SummaryBuilder()
        for index in order:
            name, line = ("Contains", 17) if index % 2 == 0 else ("StartsWith", 19)
            builder.add(_item(index, "failed", [_a(False, 0.0, name=name, line=line)]))
        summary = builder.finish(name="E", wall_time=1.0)
        orders.add(
            (
                tuple(g.key for g in summary.failures_by_assertion),
                tuple(g.key for g in summary.failures_by_site),
            )
        )
    assert orders == {(("Contains", "StartsWith"), ("ev.py:17", "ev.py:19"))}
