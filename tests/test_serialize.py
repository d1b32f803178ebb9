"""Cutting an output down to --max-output-bytes without changing what kind of value it is."""

from __future__ import annotations

import random
from typing import Any

import pytest

from agenteval._item import recorded_output
from agenteval._serialize import json_size, shrink


@pytest.mark.parametrize(
    ("value", "limit", "kept"),
    [
        ("abcdef", 5, "abc"),  # 3 bytes of text and its quotes
        ("ééé", 6, "éé"),  # never half a character
        ({"answer": "x" * 50, "steps": [1, 2]}, 20, {"answer": "xxxxxxx"}),
        ({"a": 1, "b": [1, 2, [3, 4, "abcdefgh"]]}, 28, {"a": 1, "b": [1, 2, [3, 4, "ab"]]}),
        ([1, 2, 3, 40000], 9, [1, 2, 3]),  # a number is kept whole or not at all
        ({"q": 'a"b"c"d'}, 12, {"q": 'a"b'}),  # escapes count
        ({"k": "long text"}, 7, {}),  # no "k": "" that the output never had
        ([[1, 2, 3]], 1, []),  # under 2 bytes: the empty value
        ("\x00" * 20, 14, "\x00\x00"),  # escapes count: "\u0000" is 6 bytes of JSON
        # a placeholder is kept whole or left out: cut, it would name a made-up type
        ([1, {"unserializable": "builtins.int", "repr": "x" * 40}], 40, [1]),
    ],
)
def test_shrink_keeps_the_start_of_the_value(value: Any, limit: int, kept: Any) -> None:
    assert json_size(value) > limit
    assert shrink(value, limit) == kept


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 4 or roll < 0.3:
        text = 'ab"c\\é\n' * rng.randint(0, 5)
        return rng.choice([1, 2.5, True, None, 10**30, text, "\ud83d"])
    if roll < 0.65:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 6))]
    keys = (f"k{i}" * rng.randint(1, 3) for i in range(rng.randint(0, 6)))
    return {key: _random_value(rng, depth + 1) for key in keys}


def _is_start_of(kept: Any, value: Any) -> bool:
    """Whether ``kept`` is what a cut of ``value`` may be: a prefix, level by level."""
    if isinstance(value, str):
        return isinstance(kept, str) and value.startswith(kept)
    if isinstance(value, list):
        head = kept[:-1] if kept and kept != value[: len(kept)] else kept
        return head == value[: len(head)] and (
            head is kept or _is_start_of(kept[-1], value[len(head)])
        )
    if isinstance(value, dict):
        keys = list(value)
        return list(kept) == keys[: len(kept)] and all(
            kept[k] == value[k] or (k == keys[len(kept) - 1] and _is_start_of(kept[k], value[k]))
            for k in kept
        )
    return kept == value


def test_shrink_fits_the_limit_and_keeps_a_start_of_any_value() -> None:
    rng = random.Random(7)
    checked = 0
    for _ in range(1000):
        value = _random_value(rng)
        for limit in (2, 3, 5, 17, 64, 200):
            if isinstance(value, (str, list, dict)) and json_size(value) > limit:
                kept = shrink(value, limit)
                assert type(kept) is type(value)
                assert json_size(kept) <= limit, (value, limit, kept)
                assert _is_start_of(kept, value), (value, limit, kept)
                checked += 1
    assert checked > 2500


def test_text_full_of_escapes_is_measured_as_json_holds_it() -> None:
    output, truncated, size, _ = recorded_output("\x00" * 9000, 10_000)
    assert (truncated, size) == (True, 6 * 9000 + 2)
    assert json_size(output) <= 10_000


def test_a_recorded_output_above_the_limit_is_cut_to_its_shape() -> None:
    rows = [{"id": i, "text": "lorem ipsum " * 10} for i in range(5000)]
    output, truncated, size, _ = recorded_output({"rows": rows}, 100_000)
    assert (truncated, size) == (True, json_size({"rows": rows}))
    assert 99_000 < json_size(output) <= 100_000  # nearly all the room is used
    assert output["rows"][:-1] == rows[: len(output["rows"]) - 1]
    # below the limit nothing changes, and the output is not flagged
    assert recorded_output({"rows": rows[:2]}, 100_000)[:3] == ({"rows": rows[:2]}, False, None)
