"""Records built for items: what is shared between items, and what must never be."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agenteval import BaseEvaluator
from agenteval._errors import ProviderUnavailableError
from agenteval._item import ItemTask, execute_item, record_json
from agenteval._results import NO_ITEM_USAGE, ItemResult
from agenteval._serialize import to_jsonable
from agenteval.agents import ToolAgent
from agenteval.assertions import StringContains
from agenteval.llm import ModelResponse
from agenteval.testing import ScriptedModel
from agenteval.trajectory import Usage


class Checks(BaseEvaluator):
    """Two call sites of one assertion, a soft twin of the first, and a usage report."""

    def get_dataset(self) -> list[Any]:
        return []

    def run(self, item: Any) -> Any:
        if item.get("tokens"):
            self.report_usage(Usage(input_tokens=item["tokens"]))
        return item["text"]

    def evaluate(self, output: Any, item: Any) -> None:
        self.assert_that(StringContains("order"), output)
        self.assert_that(StringContains("order"), output)
        self.assert_that(StringContains("order"), output, soft=True)


def run(item: dict[str, Any], index: int = 0) -> ItemResult:
    return execute_item(Checks(), ItemTask("e.py::Checks", index, index, item))


def test_passes_at_one_call_site_share_one_record_that_says_where() -> None:
    first, second = run({"text": "my order"}), run({"text": "your order"}, 1)
    assert [a is b for a, b in zip(first.assertions, second.assertions, strict=True)] == [True] * 3
    a, b, soft = first.assertions
    assert a is not b and a.line is not None and b.line == a.line + 1
    assert a.file is not None and a.file.endswith("test_item_records.py")
    assert (a.soft, soft.soft, soft.line) == (False, True, a.line + 2)
    # the shared records still serialize per item, with the item's own fields around them
    assert '"id":1' in record_json(second) and f'"line":{a.line}' in record_json(second)


def test_failures_are_recorded_afresh_for_each_item() -> None:
    first, second = run({"text": "no"}), run({"text": "nope"}, 1)
    assert first.status == second.status == "failed"
    assert first.assertions[0] is not second.assertions[0]
    assert "'no'" in first.assertions[0].message and "'nope'" in second.assertions[0].message


def test_shared_records_cannot_be_changed_through_one_item() -> None:
    record = run({"text": "my order"}).assertions[0]
    with pytest.raises(ValidationError):
        record.passed = False  # type: ignore[misc]
    with pytest.raises(ValidationError):
        NO_ITEM_USAGE.judge_calls = 3  # type: ignore[misc]


def test_an_item_that_spent_nothing_has_the_empty_usage_others_their_own() -> None:
    assert run({"text": "order"}).usage == NO_ITEM_USAGE
    spent = run({"text": "order", "tokens": 7}).usage
    assert spent.agent.input_tokens == 7 and spent is not NO_ITEM_USAGE


class Chatting(BaseEvaluator):
    """An agent whose model needed retries but reported no tokens, and no judge."""

    def get_dataset(self) -> list[Any]:
        return []

    def run(self, item: Any) -> Any:
        return ToolAgent(ScriptedModel([ModelResponse(text="hi", retries=2)])).chat("q")

    def evaluate(self, output: Any, item: Any) -> None:
        pass


def test_retries_of_the_agents_model_are_kept_without_tokens_or_judges() -> None:
    record = execute_item(Chatting(), ItemTask("c.py::Chatting", 0, 0, {}))
    assert record.output == "hi" and record.usage.retries == 2


class Unavailable(ScriptedModel):
    def complete(self, request: Any) -> ModelResponse:
        error = ProviderUnavailableError("still failing after 3 attempts")
        error.retries = 2
        raise error


class FailingAgent(Chatting):
    def run(self, item: Any) -> Any:
        return ToolAgent(Unavailable([])).chat("q")


def test_retries_of_an_agent_model_call_that_failed_for_good_are_kept() -> None:
    # a judge's were counted, an agent's not: 0 retries on an item that made 3 attempts
    record = execute_item(FailingAgent(), ItemTask("c.py::FailingAgent", 0, 0, {}))
    assert record.status == "error" and record.error is not None
    assert (record.error.type, record.usage.retries) == ("ProviderUnavailableError", 2)


EVALUATOR = """from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class {name}(BaseEvaluator):
    def get_dataset(self):
        return []

    def run(self, item):
        return "ok"

    def evaluate(self, output, item):
        self.assert_that(StringContains("ok"), output)
"""


def test_the_same_code_in_two_files_is_recorded_with_each_file(tmp_path: Path) -> None:
    sites = []
    for name in ("First", "Second"):  # equal code objects apart from their file
        path = tmp_path / f"{name.lower()}_eval.py"
        path.write_text(EVALUATOR.format(name=name), encoding="utf-8")
        spec = importlib.util.spec_from_file_location(f"_records_{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        record = execute_item(getattr(module, name)(), ItemTask(name, 0, 0, {}))
        (assertion,) = record.assertions
        sites.append((Path(assertion.file or "").name, assertion.line))
    assert sites == [("first_eval.py", 13), ("second_eval.py", 13)]


class Text(str):
    pass


def test_flat_values_are_copied_as_they_are_and_the_rest_still_converted() -> None:
    value = {
        "a": 1,
        "b": "x",
        "c": None,
        "d": True,
        "e": math.nan,
        "f": (1, math.inf),
        "g": Text("t"),
    }
    out = to_jsonable(value)
    assert {k: out[k] for k in "abcdg"} == {"a": 1, "b": "x", "c": None, "d": True, "g": "t"}
    assert out["e"]["unserializable"] == "builtins.float"
    assert out["f"][0] == 1 and out["f"][1]["unserializable"] == "builtins.float"
    assert out is not value and to_jsonable([1, "x", [math.nan]])[2][0]["repr"] == "nan"


def test_to_jsonable_keeps_keys_that_are_alike_as_text_and_refuses_huge_ints() -> None:
    assert to_jsonable({1: "int", "1": "str", 2: "two"}) == {
        "1 (int)": "int",
        "1": "str",
        "2": "two",
    }
    assert to_jsonable({"1": "str", 1: "int"}) == {"1": "str", "1 (int)": "int"}
    assert to_jsonable([2**13_999, -(2**13_999)]) == [2**13_999, -(2**13_999)]
    assert to_jsonable({"n": 2**14_000}) == {
        "n": {"unserializable": "builtins.int", "repr": "<an int of 14,001 bits>"}
    }


class Shouts(BaseEvaluator):
    def get_dataset(self) -> list[Any]:
        return []

    def run(self, item: Any) -> Any:
        raise ValueError("m" * 5_000_000)

    def evaluate(self, output: Any, item: Any) -> None:
        pass


def test_a_huge_error_message_is_capped_in_the_record() -> None:
    record = execute_item(Shouts(), ItemTask("s.py::Shouts", 0, 0, {}))
    assert record.status == "error" and record.error is not None
    message = record.error.message
    assert message == "m" * 65536 + "… [4934464 more characters not kept]"
    assert len(record.error.traceback) < 70_000
    assert len(record_json(record)) < 150_000


def test_an_output_nested_too_deeply_says_so() -> None:
    deep: list[Any] = []
    inner = deep
    for _ in range(5000):
        inner.append([])
        inner = inner[0]
    record = to_jsonable(deep)
    for _ in range(51):
        (record,) = record
    assert record == {
        "unserializable": "builtins.list",
        "repr": "<nested more than 50 levels deep>",
    }


class Surrogates(BaseEvaluator):
    def get_dataset(self) -> list[Any]:
        return []

    def run(self, item: Any) -> Any:
        return {"answer": "ok\ud800"}  # a lone surrogate, as json.loads('"\\ud800"') makes

    def evaluate(self, output: Any, item: Any) -> None:
        self.assert_that(StringContains("ok"), output["answer"])


@pytest.mark.parametrize("limit", [None, 1024 * 1024, 10])
def test_a_lone_surrogate_inside_an_output_costs_the_item_nothing(limit: int | None) -> None:
    record = execute_item(Surrogates(), ItemTask("s.py::S", 0, 0, {}), max_output_bytes=limit)
    assert record.status == "passed", record.error
    assert record.truncated == (limit == 10)
    if not record.truncated:
        assert "\ufffd" in record_json(record)


def test_a_record_that_cannot_be_built_is_the_items_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import agenteval._item as item_module

    def broken(*args: Any) -> Any:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(item_module, "recorded_output", broken)
    record = run({"text": "my order"})
    assert record.status == "error" and record.error is not None
    assert (record.error.stage, record.error.type) == ("executor", "RuntimeError")
    assert record.error.message == "the item's record could not be built: a bug of ours"


class Reports(BaseEvaluator):
    def get_dataset(self) -> list[Any]:
        return []

    def run(self, item: Any) -> Any:
        how = item["how"]
        if how == "counts":
            self.report_usage(input_tokens=5, output_tokens=1)
        elif how == "dict":
            self.report_usage({"input_tokens": 5, "cache_read_tokens": 2})
        elif how == "unknown":
            self.report_usage({"prompt_tokens": 5})  # (Usage(**...) took it for nothing)
        else:
            self.report_usage(input_tokens=-1)
        return ""

    def evaluate(self, output: Any, item: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("how", "usage", "error"),
    [
        ("counts", Usage(input_tokens=5, output_tokens=1), None),
        ("dict", Usage(input_tokens=5, cache_read_tokens=2), None),
        (
            "unknown",
            None,
            "report_usage(): unknown count 'prompt_tokens': the counts are input_tokens, "
            "output_tokens, cache_read_tokens, cache_write_tokens",
        ),
        (
            "negative",
            None,
            "report_usage(): input_tokens must be a whole number, 0 or more, got -1",
        ),
    ],
)
def test_report_usage_takes_counts_and_refuses_what_it_cannot_count(
    how: str, usage: Usage | None, error: str | None
) -> None:
    record = execute_item(Reports(), ItemTask("e.py::Reports", 0, 0, {"how": how}))
    if error is None:
        assert (record.status, record.usage.agent) == ("passed", usage)
    else:
        assert record.error is not None and record.error.message == error


class InThreads(BaseEvaluator):
    """Assertions and usage reported from threads the item starts in its own context."""

    def get_dataset(self) -> list[Any]:
        return []

    def run(self, item: Any) -> Any:
        import contextvars
        import threading

        report = contextvars.copy_context().run
        worker = threading.Thread(
            target=report, args=(self.report_usage,), kwargs={"input_tokens": 7}
        )
        worker.start()
        worker.join()
        return item["text"]

    def evaluate(self, output: Any, item: Any) -> None:
        import contextvars
        from concurrent.futures import ThreadPoolExecutor

        checks = [StringContains("order"), StringContains("refund")]
        with ThreadPoolExecutor(2) as pool:
            for check in checks:
                pool.submit(
                    contextvars.copy_context().run, self.assert_that, check, output
                ).result()


def test_threads_an_item_starts_in_its_context_report_into_it() -> None:
    result = execute_item(InThreads(), ItemTask("e.py::InThreads", 0, 0, {"text": "order"}))
    assert result.status == "failed"
    assert sorted((a.name, a.passed) for a in result.assertions) == [
        ("StringContains", False),
        ("StringContains", True),
    ]
    assert result.usage.agent.input_tokens == 7


class InAPlainPool(Checks):
    def evaluate(self, output: Any, item: Any) -> None:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            pool.submit(self.assert_that, StringContains("order"), output).result()


def test_a_plain_threads_assertion_is_the_items_error_saying_how_to_carry_the_item() -> None:
    # (the same under every executor: a pool's threads know no item by themselves)
    result = execute_item(InAPlainPool(), ItemTask("e.py::P", 0, 0, {"text": "order"}))
    assert result.status == "error" and result.error is not None
    assert result.error.message.endswith(
        "a thread knows its item only if the item's code starts it in its own context — "
        "pool.submit(contextvars.copy_context().run, self.assert_that, ...), or asyncio.to_thread"
    )


def test_outside_an_item_a_thread_is_told_how_to_carry_the_item_along() -> None:
    import threading

    errors: list[str] = []

    def call() -> None:
        try:
            InThreads().assert_that(StringContains("x"), "x")
        except RuntimeError as exc:
            errors.append(str(exc))

    worker = threading.Thread(target=call)
    worker.start()
    worker.join()
    assert errors == [
        "assert_that() can only be called while an item is being evaluated (from evaluate() "
        "or run()): a thread knows its item only if the item's code starts it in its own "
        "context — pool.submit(contextvars.copy_context().run, self.assert_that, ...), or "
        "asyncio.to_thread"
    ]


def test_an_asyncio_error_is_named_by_its_public_name() -> None:
    import asyncio

    from agenteval._item import error_info

    for exc in (asyncio.CancelledError("x"), asyncio.InvalidStateError()):
        assert error_info("run", exc).type == f"asyncio.{type(exc).__name__}"


class Weighted(StringContains):
    """A score scaled past what a score is, through model_copy (which skips validation)."""

    def __init__(self, weight: float) -> None:
        super().__init__("order")
        object.__setattr__(self, "weight", weight)

    def evaluate(self, actual: Any) -> Any:
        result = super().evaluate(actual)
        return result.model_copy(update={"score": result.score * self.weight})  # type: ignore[attr-defined]


class Scaled(Checks):
    def evaluate(self, output: Any, item: Any) -> None:
        self.assert_that(Weighted(item["weight"]), output)


@pytest.mark.parametrize("weight", [math.nan, 1.5, -1.0])
def test_a_score_outside_0_to_1_is_the_items_error(weight: float) -> None:
    # a NaN passed (a report of bare NaN, not JSON) sequentially, and crashed under fork
    record = execute_item(
        Scaled(), ItemTask("s.py::Scaled", 0, 0, {"text": "order", "weight": weight})
    )
    assert record.status == "error" and record.error is not None
    assert record.error.message == (
        f"Weighted.evaluate() returned a score of {1.0 * weight!r}: a score is a number from 0 to 1"
    )


class LeavesAThread(Checks):
    def run(self, item: Any) -> Any:
        import threading

        def late() -> None:
            item["go"].wait(5)
            try:
                self.report_usage(input_tokens=9)
            except RuntimeError as exc:  # (no item: refused, not counted in another's)
                item["refused"] = str(exc)

        if item["text"] == "first":  # a thread that outlives its item, and reports late
            item["thread"] = threading.Thread(target=late)
            item["thread"].start()
        return item["text"]

    def evaluate(self, output: Any, item: Any) -> None:
        pass


def test_a_thread_left_by_an_item_is_not_the_next_items() -> None:
    # its late report was counted in the next item's record
    import threading

    go = threading.Event()
    first: dict[str, Any] = {"text": "first", "go": go}
    execute_item(LeavesAThread(), ItemTask("l.py::LeavesAThread", 0, 0, first))

    class Second(LeavesAThread):
        def run(self, item: Any) -> Any:
            go.set()
            first["thread"].join(5)
            return "second"

    record = execute_item(Second(), ItemTask("l.py::Second", 1, 1, {"text": "second"}))
    assert record.usage.agent.input_tokens == 0
    assert first["refused"].startswith("report_usage() can only be called while an item")
