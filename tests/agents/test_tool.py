from __future__ import annotations

import enum
from typing import Literal

import pytest

from agenteval.agents import Tool, ToolArgumentsError, tool
from agenteval.agents._tool import parse_docstring
from agenteval.llm._types import ToolSpec


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


@tool
def search_orders(
    order_id: str,
    limit: int = 5,
    include_items: bool = False,
    tags: list[str] | None = None,
    status: Literal["open", "closed"] = "open",
    priority: Priority = Priority.LOW,
    min_total: float | None = None,
) -> dict[str, object]:
    """Look up an order by its id.

    Searches the shop database, newest first.

    Args:
        order_id: The order number,
            without the leading '#'.
        limit (int): How many orders to return.
        include_items: Whether to list the items.
        tags: Only orders with these tags.
        status: Only orders in this state.
        priority: Ticket priority.
        min_total: Smallest order total.

    Returns:
        The matching orders.
    """
    return {"order_id": order_id, "limit": limit, "priority": priority.value}


def test_tool_name_and_description_from_the_function() -> None:
    assert isinstance(search_orders, Tool)
    assert search_orders.name == "search_orders"
    assert search_orders.description == (
        "Look up an order by its id.\n\nSearches the shop database, newest first."
    )


def test_tool_schema_from_type_hints_and_docstring() -> None:
    assert search_orders.parameters == {
        "type": "object",
        "additionalProperties": False,
        "$defs": {"Priority": {"enum": ["low", "high"], "type": "string"}},
        "properties": {
            "order_id": {
                "type": "string",
                "description": "The order number, without the leading '#'.",
            },
            "limit": {"type": "integer", "default": 5, "description": "How many orders to return."},
            "include_items": {
                "type": "boolean",
                "default": False,
                "description": "Whether to list the items.",
            },
            "tags": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": None,
                "description": "Only orders with these tags.",
            },
            "status": {
                "type": "string",
                "enum": ["open", "closed"],
                "default": "open",
                "description": "Only orders in this state.",
            },
            "priority": {
                "$ref": "#/$defs/Priority",
                "default": "low",
                "description": "Ticket priority.",
            },
            "min_total": {
                "anyOf": [{"type": "number"}, {"type": "null"}],
                "default": None,
                "description": "Smallest order total.",
            },
        },
        "required": ["order_id"],
    }


def test_tool_spec_is_what_the_model_sees() -> None:
    assert search_orders.spec == ToolSpec(
        name="search_orders",
        description=search_orders.description,
        parameters=search_orders.parameters,
    )


def test_tool_stays_callable_as_the_plain_function() -> None:
    assert search_orders("7", limit=1) == {"order_id": "7", "limit": 1, "priority": "low"}


def test_tool_invoke_validates_and_coerces_inputs() -> None:
    assert search_orders.invoke({"order_id": "7", "limit": "2", "priority": "high"}) == {
        "order_id": "7",
        "limit": 2,
        "priority": "high",
    }


def test_tool_invoke_rejects_bad_inputs() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        search_orders.invoke({"limit": "many", "colour": "red"})
    assert str(info.value) == (
        "invalid arguments for 'search_orders': order_id: Field required; limit: Input should "
        "be a valid integer, unable to parse string as an integer; colour: Extra inputs are "
        "not permitted"
    )


def test_tool_decorator_with_overrides() -> None:
    @tool(name="lookup", description="Find things.")
    def find(query: str) -> str:
        """Ignored summary."""
        return query

    assert (find.name, find.description) == ("lookup", "Find things.")
    assert find.parameters["required"] == ["query"]


def test_tool_without_docstring_or_parameters() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert ping.description == ""
    assert ping.parameters == {"type": "object", "properties": {}, "additionalProperties": False}
    assert ping.invoke({}) == "pong"


def test_tool_requires_annotations() -> None:
    def untyped(order_id):  # type: ignore[no-untyped-def]
        return order_id

    with pytest.raises(TypeError) as info:
        tool(untyped)
    assert str(info.value) == (
        "@tool 'untyped': parameter 'order_id' needs a type annotation (the JSON schema the "
        "model sees is built from it)"
    )


def test_tool_rejects_var_args() -> None:
    def loose(*args: str) -> None:
        return None

    with pytest.raises(TypeError) as info:
        tool(loose)
    assert str(info.value) == (
        "@tool 'loose': *args cannot be described to a model; list the parameters explicitly"
    )


class _Thing:
    pass


def test_tool_names_itself_when_a_parameter_type_has_no_schema() -> None:
    # pydantic's own error, raised where the model of the parameters is made, named no tool
    def handle(thing: _Thing) -> str:
        return "x"

    with pytest.raises(TypeError) as info:
        tool(handle)
    assert str(info.value).startswith(
        "@tool 'handle': its parameters cannot be described as JSON schema: "
    )


def test_tool_rejects_async_functions() -> None:
    async def fetch(url: str) -> str:
        return url

    with pytest.raises(TypeError) as info:
        tool(fetch)
    assert str(info.value) == "@tool 'fetch': async functions are not supported yet; use def"


def test_parse_docstring_google_sections() -> None:
    summary, args = parse_docstring(
        "Refund an order.\n\nArgs:\n    order_id: Which order.\n    amount: How much,\n"
        "        in euros.\n\nRaises:\n    ValueError: never.\n"
    )
    assert summary == "Refund an order."
    assert args == {"order_id": "Which order.", "amount": "How much, in euros."}


def test_tool_parameters_may_have_any_name_pydantic_uses_itself() -> None:
    # a field named model_config, _x or schema would clash with pydantic's own names
    import warnings

    def lookup(model_config: str, _x: int, schema: str = "s", json: bool = False) -> str:
        """Look it up."""
        return f"{model_config} {_x} {schema} {json}"

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ("shadows an attribute in parent BaseModel")
        described = tool(lookup)
    assert list(described.parameters["properties"]) == ["model_config", "_x", "schema", "json"]
    assert described.parameters["required"] == ["model_config", "_x"]
    assert described.invoke({"model_config": "a", "_x": 1}) == "a 1 s False"
    with pytest.raises(ToolArgumentsError, match=r"_x: Field required"):
        described.invoke({"model_config": "a"})
    with pytest.raises(ToolArgumentsError, match=r"p0: Extra inputs are not permitted"):
        described.invoke({"model_config": "a", "_x": 1, "p0": "internal name"})


def test_tool_arguments_that_were_not_json_are_said_to_be_so() -> None:
    @tool
    def add(a: int) -> int:
        """Add."""
        return a

    with pytest.raises(ToolArgumentsError) as info:
        add.invoke({"_invalid_json_arguments": "{a: 1"})
    assert str(info.value) == "invalid arguments for 'add': they were not valid JSON: '{a: 1'"
