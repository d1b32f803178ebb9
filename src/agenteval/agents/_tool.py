"""``@tool``: a plain Python function as a tool a model can call."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agenteval.llm._types import ToolSpec
from agenteval.trajectory._messages import INVALID_JSON

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns?|Yields?|Raises|Examples?|Notes?|"
    r"Attributes|See Also|Warnings?|Todo):\s*$"
)
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


class ToolArgumentsError(ValueError):
    """The model called a tool with arguments that do not match its signature."""


@dataclass(frozen=True)
class Tool:
    """A function the agent may call, with the name, description and JSON schema the model sees.

    Build it with the :func:`tool` decorator. Calling a ``Tool`` calls the function, so a
    decorated function stays usable from your own code.
    """

    fn: Callable[..., Any]
    name: str
    description: str
    parameters: dict[str, Any]
    _arguments: type[BaseModel] = field(repr=False, compare=False)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    @property
    def spec(self) -> ToolSpec:
        """What the model is told about this tool."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def invoke(self, inputs: Mapping[str, Any]) -> Any:
        """Validate the model's ``inputs`` against the signature and call the function.

        Raises :class:`ToolArgumentsError` when they do not fit (missing, unknown or
        ill-typed arguments); exceptions of the function itself propagate.
        """
        if INVALID_JSON in inputs:  # (the model's text, as OpenAIModel kept it)
            raise ToolArgumentsError(
                f"invalid arguments for {self.name!r}: they were not valid JSON: "
                f"{str(inputs[INVALID_JSON])[:200]!r}"
            )
        try:
            parsed = self._arguments.model_validate(dict(inputs))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ToolArgumentsError(f"invalid arguments for {self.name!r}: {problems}") from None
        fields = type(parsed).model_fields
        return self.fn(**{str(info.alias): getattr(parsed, name) for name, info in fields.items()})


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a plain function into a :class:`Tool` for :class:`~agenteval.agents.ToolAgent`.

    The tool's name is the function's name, its description the docstring's text before
    the first section, and its JSON schema comes from the type hints (every parameter needs
    one; defaults make a parameter optional) with each parameter described by the
    docstring's Google-style ``Args:`` section. Override ``name`` or ``description`` with
    ``@tool(name=..., description=...)``::

        @tool
        def search_orders(order_id: str, include_items: bool = False) -> dict:
            '''Look up an order by its id.

            Args:
                order_id: The order number, without the leading '#'.
                include_items: Whether to list the items in the order.
            '''
            return ORDERS[order_id]
    """

    def build(function: Callable[..., Any]) -> Tool:
        return _build(function, name, description)

    if fn is not None:
        return build(fn)
    return build


def as_tool(value: object) -> Tool:
    """``value`` if it is a :class:`Tool`; a plain function is decorated on the fly."""
    if isinstance(value, Tool):
        return value
    if callable(value):
        return _build(value, None, None)
    raise TypeError(
        f"ToolAgent: tools must be functions (ideally decorated with @tool), got "
        f"{type(value).__name__} ({value!r})"
    )


def _build(fn: Callable[..., Any], name: str | None, description: str | None) -> Tool:
    fn_name = getattr(fn, "__name__", type(fn).__name__)
    if inspect.iscoroutinefunction(fn):
        raise TypeError(f"@tool {fn_name!r}: async functions are not supported yet; use def")
    summary, arg_docs = parse_docstring(inspect.getdoc(fn) or "")
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # a hint naming an undefined type: say which function
        raise TypeError(f"@tool {fn_name!r}: could not resolve its type hints: {exc}") from exc
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            stars = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise TypeError(
                f"@tool {fn_name!r}: {stars}{param.name} cannot be described to a model; "
                f"list the parameters explicitly"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(
                f"@tool {fn_name!r}: parameter {param.name!r} is positional-only; models pass "
                f"arguments by name"
            )
        if param.name not in hints:
            raise TypeError(
                f"@tool {fn_name!r}: parameter {param.name!r} needs a type annotation (the "
                f"JSON schema the model sees is built from it)"
            )
        default = ... if param.default is param.empty else param.default
        info = Field(default, alias=param.name, description=arg_docs.get(param.name))
        # the parameter is the field's alias: any name then works (model_config, _private,
        # json), where a field of that name would clash with pydantic's own
        fields[f"p{len(fields)}"] = (hints[param.name], info)
    try:
        arguments: type[BaseModel] = create_model(
            f"{fn_name}_arguments",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        schema = arguments.model_json_schema()
    except Exception as exc:  # pydantic cannot describe some annotation
        raise TypeError(
            f"@tool {fn_name!r}: its parameters cannot be described as JSON schema: {exc}"
        ) from exc
    return Tool(
        fn=fn,
        name=name or fn_name,
        description=summary if description is None else description,
        parameters=_clean_schema(schema),
        _arguments=arguments,
    )


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated titles; keep ``type``, ``properties``, ``required``, ``$defs``."""

    def strip(node: Any, in_properties: bool = False) -> Any:
        if isinstance(node, dict):
            return {
                k: strip(v, k in ("properties", "$defs"))
                for k, v in node.items()
                if in_properties or k != "title"
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    cleaned: dict[str, Any] = strip(schema)
    cleaned.setdefault("properties", {})
    cleaned["type"] = "object"
    cleaned["additionalProperties"] = False
    return cleaned


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """A Google-style docstring's description and its ``Args:`` entries by parameter name."""
    lines = doc.expandtabs().splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    i = 0
    while i < len(lines) and not _SECTION.match(lines[i].strip()):
        description.append(lines[i])
        i += 1
    while i < len(lines):
        header = _SECTION.match(lines[i].strip())
        i += 1
        if header is None:
            continue
        section_lines: list[str] = []
        while i < len(lines) and not _SECTION.match(lines[i].strip()):
            section_lines.append(lines[i])
            i += 1
        if header.group(1) in ("Args", "Arguments", "Parameters", "Params"):
            args.update(_parse_args(section_lines))
    paragraphs = re.split(r"\n\s*\n", "\n".join(description).strip())
    # Unwrap the lines of each paragraph; keep the paragraph breaks.
    text = "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)
    return text.strip(), args


def _parse_args(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    indent: int | None = None
    current: str | None = None
    for line in lines:
        if not line.strip():
            continue
        width = len(line) - len(line.lstrip())
        if indent is None:
            indent = width
        match = _ARG_LINE.match(line.strip())
        if width <= indent and match:
            current = match.group(1).lstrip("*")
            out[current] = match.group(3).strip()
        elif current is not None:
            out[current] = (out[current] + " " + line.strip()).strip()
    return out
