"""A real Messages-API server on 127.0.0.1 for tests of the anthropic SDK and the `claude` CLI.

Tests must exercise the real SDK (and the real Claude Code CLI) end to end, so instead of mocking
a client this module serves the wire protocol itself: ``POST /v1/messages`` (JSON, or SSE when the
body says ``"stream": true``), ``POST /v1/messages/count_tokens``, Anthropic-shaped error bodies,
and ``404 not_found_error`` for everything else. Replies are scripted by the test.

``tests/conftest.py`` registers this module as a plugin, so any test may ask for the
``messages_server`` fixture without importing it::

    from tests.llm_server import MessagesServer, Reply, ToolUse, last_user_text

    def test_x(messages_server: MessagesServer) -> None:
        messages_server.reply("first answer", Reply(tool_uses=[ToolUse("grep", {"q": "x"})]))
        messages_server.respond_with(lambda req: Reply(text="echo " + last_user_text(req)))
        messages_server.fail_next(2, status=429)           # the next 2 message requests fail
        ... point ANTHROPIC_BASE_URL (or base_url=) at messages_server.url ...
        assert messages_server.message_requests[0].json["system"][0]["cache_control"]

Outside pytest (a benchmark script, a manual run of the `claude` CLI),
``with MessagesServer() as server:`` starts and stops it.

Scripting: queued replies (``reply``) are served first, in order; then the responder callable
(``respond_with``) is asked. A responder may return a :class:`Reply` or a plain string. With
neither, the server answers ``400 invalid_request_error`` (not retried by clients) so a test whose
script ran dry fails loudly; a responder that raises is answered ``500`` with
``x-should-retry: false`` and the exception is kept in ``server.responder_errors``.

Usage is simulated like the real API: input tokens are estimated (4 characters per token) from the
tools, system and messages; the prefix up to the last ``cache_control`` marker is written to a
server-side cache on first sight (``cache_creation_input_tokens``) and read from it afterwards
(``cache_read_input_tokens``), and ``input_tokens`` counts only the uncached rest. Any field set on
a :class:`Reply` overrides the simulation.

Credentials: the SDK sends ``Authorization: Bearer``, the CLI ``x-api-key``; both are accepted.
With ``api_key=`` set, any other credential is answered ``401 authentication_error``. Credentials
are never recorded (``RecordedRequest.has_credentials`` says whether one was sent).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

JsonDict = dict[str, Any]

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_SECRET_HEADERS = {"authorization", "x-api-key", "cookie", "proxy-authorization"}
_TEXT_CHUNK = 12
_JSON_CHUNK = 16


@dataclass
class ToolUse:
    """One ``tool_use`` block of a scripted reply (id generated when not given)."""

    name: str
    input: JsonDict = field(default_factory=dict)
    id: str | None = None


@dataclass
class Reply:
    """A scripted assistant message: text first, then tool_use blocks.

    ``stop_reason`` defaults to ``tool_use`` when there are tool uses, else ``end_turn``. Token
    fields left ``None`` are simulated from the request (see the module docstring).
    """

    text: str | None = None
    tool_uses: list[ToolUse] = field(default_factory=list)
    stop_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    model: str | None = None


@dataclass
class Failure:
    """An injected error for one upcoming ``/v1/messages`` request."""

    status: int
    message: str
    retry_after_s: float | None
    during_stream: bool


@dataclass
class RecordedRequest:
    """What a client sent, minus its credentials."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    json: Any
    has_credentials: bool
    body_bytes: int = 0  # the size of the body as it arrived, before any parsing


Responder = Callable[[JsonDict], "Reply | str"]


def estimate_tokens(obj: Any) -> int:
    """Tokens of a JSON value, at the usual 4 characters per token (0 for nothing)."""
    if obj is None or obj == "" or obj == []:
        return 0
    text = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, ensure_ascii=False)
    return max(1, (len(text) + 3) // 4)


def request_text(req: JsonDict) -> str:
    """All text a request carries (system, messages, tool results) joined by newlines.

    Lets a responder decide on substrings, e.g. whether a skill's text reached the model.
    """
    parts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            parts.append(node)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if isinstance(node.get("text"), str):
                parts.append(node["text"])
            if "content" in node:
                walk(node["content"])
            if node.get("type") == "tool_use":
                parts.append(json.dumps(node.get("input", {}), sort_keys=True))

    walk(req.get("system"))
    walk(req.get("messages"))
    return "\n".join(parts)


def last_user_text(req: JsonDict) -> str:
    """The text of the last user message (its text blocks and tool results)."""
    for message in reversed(req.get("messages") or []):
        if message.get("role") == "user":
            return request_text({"messages": [message]})
    return ""


def tool_results(req: JsonDict) -> list[JsonDict]:
    """The ``tool_result`` blocks of the last user message, in order."""
    for message in reversed(req.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return [
                    b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
            return []
    return []


def _prompt_blocks(req: JsonDict) -> tuple[list[Any], list[int]]:
    """The request as one block sequence (tools → system → messages) and its cache breakpoints.

    A breakpoint is the end (exclusive) of a block marked ``cache_control``, or of the whole
    sequence when the request carries a top-level ``cache_control``. The markers themselves are
    stripped, as the real cache ignores them. A request writes the prefixes at its breakpoints
    and reads the longest prefix (at any block boundary) written before, so a client that moves
    its marker to the newest message each turn still reads what it wrote on the last turn.
    """
    raw: list[Any] = list(req.get("tools") or [])
    system = req.get("system")
    raw.extend(system if isinstance(system, list) else [system] if system else [])
    for message in req.get("messages") or []:
        content = message.get("content")
        raw.extend(content if isinstance(content, list) else [content])
    marked = [
        i + 1 for i, block in enumerate(raw) if isinstance(block, dict) and "cache_control" in block
    ]
    if req.get("cache_control"):
        marked.append(len(raw))
    blocks = [
        {k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b
        for b in raw
    ]
    return blocks, marked


class MessagesServer:
    """A threaded HTTP server speaking enough of the Messages API for the SDK and the CLI."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        api_key: str | None = None,
        simulate_cache: bool = True,
    ) -> None:
        self._lock = threading.Lock()
        self._responder = responder
        self._queue: deque[Reply | str] = deque()
        self._failures: deque[Failure] = deque()
        self._cache: set[str] = set()
        self._ids = itertools.count(1)
        self.api_key = api_key
        self.simulate_cache = simulate_cache
        self.requests: list[RecordedRequest] = []
        self.responder_errors: list[BaseException] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> MessagesServer:
        handler = type("Handler", (self._handler(),), {"server_state": self})
        self._httpd = _QuietHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="messages-server", daemon=True
        )
        self._thread.start()
        return self

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        """The protocol spoken (a subclass serving another API swaps it)."""
        return _Handler

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> MessagesServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("MessagesServer is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The base URL to give the SDK (``base_url=``) or the CLI (``ANTHROPIC_BASE_URL``)."""
        return f"http://127.0.0.1:{self.port}"

    # -- scripting ------------------------------------------------------------------------------
    def reply(self, *replies: Reply | str) -> None:
        """Queue replies served in order before the responder is asked."""
        with self._lock:
            self._queue.extend(replies)

    def respond_with(self, responder: Responder | None) -> None:
        with self._lock:
            self._responder = responder

    def fail_next(
        self,
        n: int = 1,
        status: int = 529,
        *,
        message: str | None = None,
        retry_after_s: float | None = 0.01,
        during_stream: bool = False,
    ) -> None:
        """Answer the next ``n`` message requests with an error of ``status``.

        ``retry_after_s`` is sent as ``retry-after-ms`` and ``retry-after`` (None sends neither,
        so a client falls back to its own backoff). ``during_stream`` makes a streaming request
        start normally and then carry an SSE ``error`` event, as the real API does when it gets
        overloaded mid-answer.
        """
        text = message or f"injected {ERROR_TYPES.get(status, 'api_error')}"
        with self._lock:
            self._failures.extend(
                Failure(status, text, retry_after_s, during_stream) for _ in range(n)
            )

    @property
    def message_requests(self) -> list[RecordedRequest]:
        """Recorded ``POST /v1/messages`` requests (failed attempts included), oldest first."""
        with self._lock:
            return [r for r in self.requests if urlsplit(r.path).path == "/v1/messages"]

    # -- used by the handler --------------------------------------------------------------------
    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_failure(self) -> Failure | None:
        with self._lock:
            return self._failures.popleft() if self._failures else None

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            n = next(self._ids)
        return f"{prefix}_{n:024x}"

    def _scripted(self, req: JsonDict) -> Reply:
        with self._lock:
            queued = self._queue.popleft() if self._queue else None
            responder = self._responder
        if queued is None:
            if responder is None:
                raise _NoScript()
            queued = responder(req)
        return Reply(text=queued) if isinstance(queued, str) else queued

    def _usage(self, req: JsonDict, reply: Reply, content: list[JsonDict]) -> JsonDict:
        blocks, breakpoints = _prompt_blocks(req)
        total = estimate_tokens(blocks)
        read = written = 0
        if self.simulate_cache and breakpoints:
            digest = hashlib.sha256(json.dumps(req.get("model")).encode())
            keys = []  # keys[i]: the prefix of the first i + 1 blocks
            for block in blocks[: breakpoints[-1]]:
                digest.update(json.dumps(block, sort_keys=True).encode())
                keys.append(digest.copy().hexdigest())
            with self._lock:
                hits = [i + 1 for i, key in enumerate(keys) if key in self._cache]
                self._cache.update(keys[end - 1] for end in breakpoints)
            read = estimate_tokens(blocks[: max(hits)]) if hits else 0
            written = max(0, estimate_tokens(blocks[: breakpoints[-1]]) - read)
        return {
            "input_tokens": _pick(reply.input_tokens, max(1, total - read - written)),
            "output_tokens": _pick(reply.output_tokens, max(1, estimate_tokens(content))),
            "cache_read_input_tokens": _pick(reply.cache_read_tokens, read),
            "cache_creation_input_tokens": _pick(reply.cache_write_tokens, written),
        }

    def _message(self, req: JsonDict, reply: Reply) -> JsonDict:
        content: list[JsonDict] = []
        if reply.text is not None:
            content.append({"type": "text", "text": reply.text})
        for tool in reply.tool_uses:
            content.append(
                {
                    "type": "tool_use",
                    "id": tool.id or self._next_id("toolu"),
                    "name": tool.name,
                    "input": tool.input,
                }
            )
        stop = reply.stop_reason or ("tool_use" if reply.tool_uses else "end_turn")
        return {
            "id": self._next_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": reply.model or req.get("model") or "unknown",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": self._usage(req, reply, content),
        }


def _pick(override: int | None, simulated: int) -> int:
    return simulated if override is None else override


class _QuietHTTPServer(ThreadingHTTPServer):
    """Threads die with the test; a client that hung up mid-reply is not an error worth a trace."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _NoScript(Exception):
    """The test gave the server nothing to answer with."""


def _sse(event: str, data: JsonDict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def stream_events(message: JsonDict) -> Iterator[bytes]:
    """The SSE byte frames the real API sends for ``message``, in its exact order."""
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None, stop_sequence=None)
    start["usage"] = dict(usage, output_tokens=1)
    yield _sse("message_start", {"type": "message_start", "message": start})
    yield _sse("ping", {"type": "ping"})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening: JsonDict = {"type": "text", "text": ""}
            deltas = [
                {"type": "text_delta", "text": c} for c in _chunks(block["text"], _TEXT_CHUNK)
            ]
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": ""}] + [
                {"type": "input_json_delta", "partial_json": c} for c in _chunks(raw, _JSON_CHUNK)
            ]
        yield _sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        )
        for delta in deltas:
            yield _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": usage,
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})


def error_body(status: int, message: str, request_id: str) -> JsonDict:
    """The Anthropic error JSON shape."""
    return {
        "type": "error",
        "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message},
        "request_id": request_id,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_state: MessagesServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr lines; requests are recorded instead."""

    # -- plumbing ---------------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(
        self, status: int, body: JsonDict, headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", self._request_id)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send_json(status, error_body(status, message, self._request_id), headers)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", self._request_id)
        self.end_headers()

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -- routes -----------------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._request_id = self.server_state._next_id("req")
        self._read_body()
        self._record(None)
        self._send_error(404, f"no route for GET {urlsplit(self.path).path}")

    def do_POST(self) -> None:
        state = self.server_state
        self._request_id = state._next_id("req")
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        credential = self._credential()
        self._record(body, len(raw))
        route = urlsplit(self.path).path
        if route not in ("/v1/messages", "/v1/messages/count_tokens"):
            self._send_error(404, f"no route for POST {route}")
            return
        if state.api_key is not None and credential != state.api_key:
            self._send_error(401, "invalid x-api-key")
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._send_error(400, "messages: field required (body must be a JSON object)")
            return
        if route == "/v1/messages/count_tokens":
            tokens = sum(estimate_tokens(body.get(k)) for k in ("tools", "system", "messages"))
            self._send_json(200, {"input_tokens": tokens})
            return
        if not isinstance(body.get("model"), str) or not isinstance(body.get("max_tokens"), int):
            self._send_error(400, "model and max_tokens: field required")
            return
        self._messages(body)

    def _credential(self) -> str | None:
        key = self.headers.get("x-api-key")
        if key:
            return key
        auth = self.headers.get("authorization", "")
        return auth[7:] if auth.lower().startswith("bearer ") else None

    def _record(self, body: Any, body_bytes: int = 0) -> None:
        parts = urlsplit(self.path)
        self.server_state._record(
            RecordedRequest(
                method=self.command,
                path=self.path,
                query=parse_qs(parts.query),
                headers={
                    k.lower(): v
                    for k, v in self.headers.items()
                    if k.lower() not in _SECRET_HEADERS
                },
                json=body,
                has_credentials=self._credential() is not None,
                body_bytes=body_bytes,
            )
        )

    def _messages(self, body: JsonDict) -> None:
        state = self.server_state
        failure = state._next_failure()
        if failure is not None and not (failure.during_stream and body.get("stream")):
            headers = {}
            if failure.retry_after_s is not None:
                headers["retry-after-ms"] = str(int(failure.retry_after_s * 1000))
                headers["retry-after"] = str(max(0, round(failure.retry_after_s)))
            self._send_error(failure.status, failure.message, headers)
            return
        try:
            reply = state._scripted(body)
        except _NoScript:
            self._send_error(400, "MessagesServer: no scripted reply left for this request")
            return
        except Exception as exc:
            state.responder_errors.append(exc)
            self._send_error(500, f"responder failed: {exc!r}", {"x-should-retry": "false"})
            return
        message = state._message(body, reply)
        if not body.get("stream"):
            self._send_json(200, message)
            return
        self._start_stream()
        events = stream_events(message)
        if failure is not None:
            self._send_chunk(next(events))
            error = error_body(failure.status, failure.message, self._request_id)
            self._send_chunk(_sse("error", error))
        else:
            for frame in events:
                self._send_chunk(frame)
        self._end_stream()


@pytest.fixture
def messages_server() -> Iterator[MessagesServer]:
    """A started :class:`MessagesServer` with an empty script; stopped after the test."""
    with MessagesServer() as server:
        yield server
