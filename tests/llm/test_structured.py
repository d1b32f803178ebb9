"""Finding the JSON verdict in a reply that wraps it in prose, fences or thinking."""

from __future__ import annotations

from typing import Any

import pytest

from agenteval.llm._structured import extract_json_object

VERDICT = {"reasoning": "Says Lyon, not Paris.", "score": 0.0}
DRAFT = '{"reasoning": "matches", "score": 1.0}'
FINAL = '{"reasoning": "Says Lyon, not Paris.", "score": 0.0}'


@pytest.mark.parametrize(
    ("reply", "found"),
    [
        (FINAL, VERDICT),
        (f"Here is my verdict:\n```json\n{FINAL}\n```\nHope it helps.", VERDICT),
        (f"<think>A perfect answer would get {DRAFT}. It says Lyon.</think>\n{FINAL}", VERDICT),
        # the chat template opened the thinking itself: only its end is in the reply
        (f"A perfect answer would get {DRAFT}. But it says Lyon.</think>\n{FINAL}", VERDICT),
        (f"<THINK>draft {DRAFT}</THINK> first </think> {FINAL}", VERDICT),
        ("[1, 2]", None),
        ("no JSON at all", None),
        (f"<think>only thinking {DRAFT}</think>", None),
    ],
)
def test_the_verdict_is_the_first_object_outside_the_thinking(reply: str, found: Any) -> None:
    assert extract_json_object(reply) == found
