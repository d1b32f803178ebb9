"""``FakeProvider``: a loopback HTTP server that speaks the Anthropic and OpenAI wire formats.

The real ``anthropic`` and ``openai`` SDKs are pointed at it, so provider code is tested
end to end (HTTP, status codes, headers, streaming) without a network or a key.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import math
import select
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from .._usage import Usage
from ..trajectory._messages import ToolCall

ReplyKind = Literal["message", "embeddings", "error", "stream_error", "hang", "disconnect", "raw"]
Api = Literal["anthropic", "openai", "embeddings", "other"]

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    429: "requests",
}
_NO_REPLY_STATUS = 418  # a client error: never retried, so a missing reply fails fast


@dataclass(frozen=True)
class RecordedRequest:
    """One request :class:`FakeProvider` received, in arrival order (``index`` from 0).

    ``headers`` keep their values (the key included, for assertions) under lower-case names.
    """

    index: int
    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        """The body parsed as JSON (``None`` if it is not JSON)."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    @property
    def api(self) -> Api:
        """Which API the request is for, from its path."""
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/messages"):
            return "anthropic"
        if path.endswith("/chat/completions"):
            return "openai"
        if path.endswith("/embeddings"):
            return "embeddings"
        return "other"

    @property
    def api_key(self) -> str | None:
        """The key sent in ``x-api-key`` or as an ``Authorization: Bearer`` token."""
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        auth = self.headers.get("authorization", "")
        return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None

    @property
    def stream(self) -> bool:
        """Whether the client asked for a streamed response."""
        body = self.json
        return isinstance(body, dict) and bool(body.get("stream"))


@dataclass(frozen=True)
class FakeReply:
    """What :class:`FakeProvider` sends for one request; build it with its static methods.

    A ``"message"`` reply is rendered in the format of the API the request came to, so one
    script works for both providers.
    """

    kind: ReplyKind = "message"
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    structured: Mapping[str, Any] | None = None
    vectors: tuple[tuple[float, ...], ...] | None = None
    usage: Usage = field(default_factory=lambda: Usage(input_tokens=10, output_tokens=5))
    stop_reason: str | None = None
    model: str | None = None
    status: int = 200
    error_type: str | None = None
    error_code: str | None = None
    message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0

    def delayed(self, seconds: float) -> FakeReply:
        """This reply, sent after ``seconds`` (a client timeout shorter than that fires)."""
        return replace(self, delay=seconds)


ReplyLike = FakeReply | str | Mapping[str, Any] | Callable[[RecordedRequest], Any]
"""A reply, ``str`` (assistant text), ``dict`` (a structured JSON reply) or a callable."""


class FakeProvider:
    """A fake Anthropic/OpenAI server on ``127.0.0.1`` for offline tests of real SDK code.

    Use it to test code that calls providers through the official SDKs: point
    ``AnthropicModel(base_url=fake.anthropic_base_url)`` or
    ``OpenAIModel(base_url=fake.openai_base_url)`` at it and script the replies. Replies
    are taken from a queue in order; when the queue is empty, ``responder`` (a function of
    the :class:`RecordedRequest`) answers; with neither, the request gets HTTP 418 with a
    message saying so. Every request is recorded in :attr:`requests`. Example::

        with FakeProvider([FakeProvider.rate_limited(retry_after=0), "Hello!"]) as fake:
            reply = OpenAIModel("gpt-x", api_key="sk-test",
                                base_url=fake.openai_base_url).complete(request)
            assert reply.text == "Hello!" and len(fake.requests) == 2

    Faults: :meth:`error` (any status, provider-shaped body, ``retry-after`` headers),
    :meth:`rate_limited`, :meth:`overloaded`, :meth:`server_error`,
    :meth:`quota_exhausted`, :meth:`unauthorized`, :meth:`hang`, :meth:`disconnect`,
    :meth:`stream_error` and :meth:`FakeReply.delayed`.
    """

    def __init__(
        self,
        replies: Iterable[ReplyLike] = (),
        *,
        responder: Callable[[RecordedRequest], Any] | None = None,
    ) -> None:
        self._queue: deque[ReplyLike] = deque(replies)
        self._responder = responder
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._ids = itertools.count(1)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.server_errors: list[str] = []
        """Exceptions raised while answering (a bad responder, say), as ``"Type: message"``."""

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> FakeProvider:
        """Start serving on an ephemeral port (``with FakeProvider() as fake`` does this)."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="agenteval-fake-provider",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: hung replies are released and every connection is closed."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if thread is not None:
            thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses ---------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._server is None:
            raise RuntimeError("FakeProvider is not running: use `with FakeProvider() as fake:`")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def anthropic_base_url(self) -> str:
        """The ``base_url`` for the ``anthropic`` SDK (it appends ``/v1/messages``)."""
        return self.base_url

    @property
    def openai_base_url(self) -> str:
        """The ``base_url`` for the ``openai`` SDK (it appends ``/chat/completions``)."""
        return f"{self.base_url}/v1"

    # -- scripting ---------------------------------------------------------------------

    def add(self, *replies: ReplyLike) -> FakeProvider:
        """Queue replies, answered in order after those already queued."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def respond_with(self, responder: Callable[[RecordedRequest], Any] | None) -> None:
        """Answer requests with ``responder(request)`` once the queue is empty."""
        self._responder = responder

    @property
    def pending(self) -> int:
        """Queued replies not yet sent."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        with self._lock:
            return list(self._requests)

    # -- reply builders ----------------------------------------------------------------

    @staticmethod
    def text(
        text: str,
        *,
        input_tokens: int = 10,
        output_tokens: int = 5,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        stop_reason: str | None = None,
        model: str | None = None,
    ) -> FakeReply:
        """An assistant reply with ``text`` and the given token usage."""
        return FakeReply(
            text=text,
            usage=Usage(
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cache_read_tokens=cache_read_tokens,
                cache_write_tokens=cache_write_tokens,
            ),
            stop_reason=stop_reason,
            model=model,
        )

    @staticmethod
    def tool_call(
        name: str,
        inputs: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        text: str = "",
    ) -> FakeReply:
        """An assistant reply calling one tool (OpenAI ``tool_calls`` / Anthropic ``tool_use``)."""
        return FakeProvider.tool_calls([(name, dict(inputs or {}))], text=text, ids=[id])

    @staticmethod
    def tool_calls(
        calls: Iterable[tuple[str, Mapping[str, Any]]],
        *,
        text: str = "",
        ids: Iterable[str | None] = (),
    ) -> FakeReply:
        """An assistant reply calling several tools, as ``(name, inputs)`` pairs.

        A call without an id in ``ids`` gets one when the reply is sent, unique to the
        request (``call_fake_<request number>_<position>``), as providers give.
        """
        call_list = list(calls)
        id_list = list(ids) + [None] * len(call_list)
        built = tuple(
            ToolCall(id=call_id or "", name=name, inputs=dict(inputs))
            for (name, inputs), call_id in zip(call_list, id_list, strict=False)
        )
        return FakeReply(text=text, tool_calls=built)

    @staticmethod
    def structured(
        obj: Mapping[str, Any], *, input_tokens: int = 10, output_tokens: int = 5
    ) -> FakeReply:
        """A structured-output reply: the forced tool's input (Anthropic) or JSON text (OpenAI)."""
        reply = FakeProvider.text("", input_tokens=input_tokens, output_tokens=output_tokens)
        return replace(reply, structured=dict(obj))

    @staticmethod
    def embeddings(vectors: Iterable[Iterable[float]] | None = None) -> FakeReply:
        """An embeddings reply; without ``vectors``, a deterministic one per input text."""
        rows = None if vectors is None else tuple(tuple(float(x) for x in v) for v in vectors)
        return FakeReply(kind="embeddings", vectors=rows)

    @staticmethod
    def error(
        status: int,
        message: str = "",
        *,
        type: str | None = None,
        code: str | None = None,
        retry_after: float | str | None = None,
        retry_after_ms: float | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> FakeReply:
        """An HTTP error with a provider-shaped body (``type`` defaults from the status).

        ``retry_after`` may be seconds or an HTTP date string; ``code`` is OpenAI's
        ``error.code`` or Anthropic's ``error.details.error_code``.
        """
        all_headers = dict(headers or {})
        if retry_after is not None:
            all_headers["retry-after"] = (
                retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
            )
        if retry_after_ms is not None:
            all_headers["retry-after-ms"] = f"{retry_after_ms:g}"
        return FakeReply(
            kind="error",
            status=status,
            message=message or f"fake error {status}",
            error_type=type,
            error_code=code,
            headers=all_headers,
        )

    @staticmethod
    def rate_limited(
        retry_after: float | str | None = None, *, retry_after_ms: float | None = None
    ) -> FakeReply:
        """HTTP 429 (a rate limit, retried), optionally with ``retry-after`` headers."""
        return FakeProvider.error(
            429, "Rate limit exceeded", retry_after=retry_after, retry_after_ms=retry_after_ms
        )

    @staticmethod
    def overloaded() -> FakeReply:
        """Anthropic's HTTP 529 ``overloaded_error`` (retried)."""
        return FakeProvider.error(529, "Overloaded", type="overloaded_error")

    @staticmethod
    def server_error(status: int = 500) -> FakeReply:
        """An HTTP 5xx error (retried)."""
        return FakeProvider.error(status, "Internal server error", type="api_error")

    @staticmethod
    def quota_exhausted() -> FakeReply:
        """Out of credit: OpenAI's 429 ``insufficient_quota``, Anthropic's 402 ``billing_error``."""
        return FakeReply(kind="error", status=0, message="You exceeded your current quota")

    @staticmethod
    def unauthorized(message: str = "invalid x-api-key") -> FakeReply:
        """HTTP 401 (never retried)."""
        return FakeProvider.error(401, message)

    @staticmethod
    def hang() -> FakeReply:
        """Never answer: the client times out (the server still stops promptly)."""
        return FakeReply(kind="hang")

    @staticmethod
    def raw(body: str, *, content_type: str = "application/json", status: int = 200) -> FakeReply:
        """Exactly ``body``, as it is: a broken server's reply (JSON cut short, a web page
        from a wrong URL, a field of the wrong type)."""
        return FakeReply(
            kind="raw", text=body, status=status, headers={"Content-Type": content_type}
        )

    @staticmethod
    def disconnect() -> FakeReply:
        """Close the connection without a response (a connection reset, retried)."""
        return FakeReply(kind="disconnect")

    @staticmethod
    def stream_error(
        error_type: str = "overloaded_error", message: str = "Overloaded", *, text: str = ""
    ) -> FakeReply:
        """HTTP 200, then an error event in the stream (after ``text``, if any).

        A request that did not ask for a stream gets the same error as HTTP 529 (Anthropic)
        or 503 (OpenAI).
        """
        return FakeReply(kind="stream_error", text=text, error_type=error_type, message=message)

    # -- serving -----------------------------------------------------------------------

    def _record(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Any:
        with self._lock:
            request = RecordedRequest(len(self._requests), method, path, dict(headers), body)
            self._requests.append(request)
            item: Any = self._queue.popleft() if self._queue else self._responder
        return request, item

    def _serve(self, handler: _Handler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        request, item = self._record(handler.command, handler.path, headers, body)
        if request.api == "other":
            handler.send_json(
                404, {"error": {"message": f"FakeProvider: no API at {request.path}"}}
            )
            return
        try:
            reply = _resolve(item, request)
        except Exception as exc:
            self.server_errors.append(f"{type(exc).__name__}: {exc}")
            handler.send_json(
                _NO_REPLY_STATUS,
                _error_body(
                    request.api,
                    "invalid_request_error",
                    f"FakeProvider responder raised {type(exc).__name__}: {exc}",
                    None,
                ),
            )
            return
        if reply is None:
            handler.send_json(
                _NO_REPLY_STATUS,
                _error_body(
                    request.api,
                    "invalid_request_error",
                    f"FakeProvider has no scripted reply for request #{request.index + 1} "
                    f"({request.method} {request.path}): add replies with fake.add(...)",
                    None,
                ),
            )
            return
        if reply.delay and self._stopping.wait(reply.delay):
            return
        reply = _with_call_ids(request, reply)
        if reply.kind == "hang":
            self._hang(handler)
        elif reply.kind == "disconnect":
            handler.close_connection = True
        elif reply.kind == "raw":
            handler.send_body(reply.status, reply.text.encode(), reply.headers)
        elif reply.kind == "error":
            self._send_error(handler, request, reply)
        elif reply.kind == "stream_error":
            self._send_stream_error(handler, request, reply)
        elif request.api == "embeddings":
            handler.send_json(200, self._embeddings_body(request, reply))
        elif request.api == "anthropic":
            self._send_anthropic(handler, request, reply)
        else:
            self._send_openai(handler, request, reply)

    def _hang(self, handler: _Handler) -> None:
        sock = handler.connection
        while not self._stopping.wait(0.02):
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        break  # the client gave up and closed the connection
                except OSError:
                    break
        handler.close_connection = True

    def _send_error(self, handler: _Handler, request: RecordedRequest, reply: FakeReply) -> None:
        status, error_type, code = reply.status, reply.error_type, reply.error_code
        if status == 0:  # quota_exhausted(): shaped per provider
            if request.api == "anthropic":
                status, error_type = 402, "billing_error"
            else:
                status, error_type, code = 429, "insufficient_quota", "insufficient_quota"
        if error_type is None:
            table = _ANTHROPIC_ERROR_TYPES if request.api == "anthropic" else _OPENAI_ERROR_TYPES
            default = "api_error" if request.api == "anthropic" else "server_error"
            error_type = table.get(status, default)
        body = _error_body(request.api, error_type, reply.message, code)
        handler.send_json(status, body, reply.headers)

    def _send_stream_error(
        self, handler: _Handler, request: RecordedRequest, reply: FakeReply
    ) -> None:
        error_type = reply.error_type or "overloaded_error"
        if not request.stream:
            status = 529 if request.api == "anthropic" else 503
            handler.send_json(status, _error_body(request.api, error_type, reply.message, None))
            return
        error = {"type": error_type, "message": reply.message}
        if request.api == "anthropic":
            events: list[tuple[str | None, Any]] = [
                ("message_start", {"type": "message_start", "message": self._message_head(request)})
            ]
            if reply.text:
                events += _anthropic_text_events(0, reply.text)
            events.append(("error", {"type": "error", "error": error}))
        else:
            events = []
            if reply.text:
                events.append((None, self._chunk(request, {"content": reply.text}, None)))
            events.append((None, {"error": {**error, "param": None, "code": None}}))
        handler.send_sse(events)

    # Anthropic Messages API

    def _message_head(self, request: RecordedRequest, usage: Usage | None = None) -> dict[str, Any]:
        usage = usage or Usage(input_tokens=10)
        return {
            "id": f"msg_fake_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": _model_of(request),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input_tokens,
                "output_tokens": 1,
                "cache_read_input_tokens": usage.cache_read_tokens,
                "cache_creation_input_tokens": usage.cache_write_tokens,
            },
        }

    def _send_anthropic(
        self, handler: _Handler, request: RecordedRequest, reply: FakeReply
    ) -> None:
        blocks = _anthropic_blocks(request, reply)
        stop_reason = reply.stop_reason or (
            "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        )
        head = self._message_head(request, reply.usage)
        if reply.model:
            head["model"] = reply.model
        if not request.stream:
            head["content"] = blocks
            head["stop_reason"] = stop_reason
            head["usage"]["output_tokens"] = reply.usage.output_tokens
            handler.send_json(200, head)
            return
        events: list[tuple[str | None, Any]] = [
            ("message_start", {"type": "message_start", "message": head})
        ]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                events += _anthropic_text_events(index, block["text"])
            else:
                start = {**block, "input": {}}
                events.append(
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": start},
                    )
                )
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {
                                "type": "input_json_delta",
                                "partial_json": json.dumps(block["input"]),
                            },
                        },
                    )
                )
                events.append(
                    ("content_block_stop", {"type": "content_block_stop", "index": index})
                )
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": reply.usage.output_tokens},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        handler.send_sse(events)

    # OpenAI Chat Completions API

    def _chunk(
        self, request: RecordedRequest, delta: dict[str, Any], finish: str | None
    ) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": _model_of(request),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def _send_openai(self, handler: _Handler, request: RecordedRequest, reply: FakeReply) -> None:
        content = json.dumps(dict(reply.structured)) if reply.structured is not None else reply.text
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.inputs)},
            }
            for call in reply.tool_calls
        ]
        finish = reply.stop_reason or ("tool_calls" if calls else "stop")
        usage = _openai_usage(reply.usage)
        model = reply.model or _model_of(request)
        if not request.stream:
            message: dict[str, Any] = {"role": "assistant", "content": content or None}
            if calls:
                message["tool_calls"] = calls
            handler.send_json(
                200,
                {
                    "id": f"chatcmpl-fake-{next(self._ids)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [
                        {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
                    ],
                    "usage": usage,
                },
            )
            return
        events: list[tuple[str | None, Any]] = [
            (None, self._chunk(request, {"role": "assistant", "content": content}, None))
        ]
        for index, call in enumerate(calls):
            events.append(
                (None, self._chunk(request, {"tool_calls": [{"index": index, **call}]}, None))
            )
        events.append((None, self._chunk(request, {}, finish)))
        body = request.json
        options = body.get("stream_options") if isinstance(body, dict) else None
        if isinstance(options, dict) and options.get("include_usage"):
            chunk = self._chunk(request, {}, None)
            chunk["choices"] = []
            chunk["usage"] = usage
            events.append((None, chunk))
        events.append((None, "[DONE]"))
        handler.send_sse(events)

    # OpenAI embeddings API

    def _embeddings_body(self, request: RecordedRequest, reply: FakeReply) -> dict[str, Any]:
        body = request.json if isinstance(request.json, dict) else {}
        raw = body.get("input", [])
        texts = [raw] if isinstance(raw, str) else [str(t) for t in raw]
        vectors = (
            [list(v) for v in reply.vectors]
            if reply.vectors is not None
            else [_text_vector(t) for t in texts]
        )
        as_base64 = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": _base64_floats(v) if as_base64 else v,
            }
            for i, v in enumerate(vectors)
        ]
        tokens = sum(len(t.split()) for t in texts)
        return {
            "object": "list",
            "data": data,
            "model": _model_of(request),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


class _Server(ThreadingHTTPServer):
    # Handler threads are joined on close, so a stopped FakeProvider leaves nothing running.
    daemon_threads = False
    block_on_close = True
    # many clients connect at once (an async run at -c 50, forked children): the default
    # backlog of 5 drops connections before they reach a handler, as no real provider does
    request_queue_size = 256
    fake: FakeProvider

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and closed its socket is expected; anything else is kept.
        import sys

        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, TimeoutError)):
            self.fake.server_errors.append(f"{type(exc).__name__}: {exc}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # a safety net: no connection can keep a handler thread forever
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.fake._lock:
            self.server.fake._sockets.add(self.connection)

    def finish(self) -> None:
        with self.server.fake._lock:
            self.server.fake._sockets.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_POST(self) -> None:
        self.server.fake._serve(self)

    def do_GET(self) -> None:
        self.server.fake._serve(self)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default access log on stderr."""

    def send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        """Send one JSON response and close the connection."""
        self.send_body(
            status,
            json.dumps(body).encode(),
            {"Content-Type": "application/json", **(headers or {})},
        )

    def send_body(self, status: int, payload: bytes, headers: Mapping[str, str]) -> None:
        """Send one response of ``payload`` (``headers`` with its Content-Type) and close the
        connection."""
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        # One request per connection: no idle keep-alive sockets to leak or to race with.
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self._write(payload)

    def send_sse(self, events: Iterable[tuple[str | None, Any]]) -> None:
        """Send a 200 server-sent-events stream, then close the connection."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            frame = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
            if not self._write(frame.encode()):
                return

    def _write(self, payload: bytes) -> bool:
        try:
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True


def _resolve(item: Any, request: RecordedRequest) -> FakeReply | None:
    while callable(item) and not isinstance(item, FakeReply):
        item = item(request)
    if item is None or isinstance(item, FakeReply):
        return item
    if isinstance(item, str):
        return FakeProvider.text(item)
    if isinstance(item, Mapping):
        return FakeProvider.structured(item)
    raise TypeError(
        f"reply for request #{request.index + 1} must be a FakeReply, str, dict or callable, "
        f"got {type(item).__name__}"
    )


def _with_call_ids(request: RecordedRequest, reply: FakeReply) -> FakeReply:
    """``reply`` with an id for each tool call scripted without one, unique to the request."""
    if all(call.id for call in reply.tool_calls):
        return reply
    calls = tuple(
        call if call.id else call.model_copy(update={"id": f"call_fake_{request.index + 1}_{i}"})
        for i, call in enumerate(reply.tool_calls)
    )
    return replace(reply, tool_calls=calls)


def _model_of(request: RecordedRequest) -> str:
    body = request.json
    model = body.get("model") if isinstance(body, dict) else None
    return str(model) if model else "fake-model"


def _error_body(api: Api, error_type: str, message: str, code: str | None) -> dict[str, Any]:
    if api == "anthropic":
        error: dict[str, Any] = {"type": error_type, "message": message}
        if code:
            error["details"] = {"error_code": code}
        return {"type": "error", "error": error, "request_id": "req_fake"}
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def _anthropic_blocks(request: RecordedRequest, reply: FakeReply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text or (not reply.tool_calls and reply.structured is None):
        blocks.append({"type": "text", "text": reply.text})
    if reply.structured is not None:
        body = request.json if isinstance(request.json, dict) else {}
        choice = body.get("tool_choice")
        name = choice.get("name") if isinstance(choice, dict) else None
        blocks.append(
            {
                "type": "tool_use",
                "id": "toolu_fake_structured",
                "name": name or "response",
                "input": dict(reply.structured),
            }
        )
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.inputs}
        for call in reply.tool_calls
    )
    return blocks


def _anthropic_text_events(index: int, text: str) -> list[tuple[str | None, Any]]:
    return [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": text},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _openai_usage(usage: Usage) -> dict[str, Any]:
    prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {
            "cached_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
    }


def _text_vector(text: str, dimensions: int = 8) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    raw = [(b - 127.5) / 127.5 for b in digest[:dimensions]]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


def _base64_floats(vector: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
