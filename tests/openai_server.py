"""A real OpenAI-style Responses API server on 127.0.0.1, for the ``codex`` CLI in tests.

Codex (0.171) speaks the Responses API only: ``POST /v1/responses`` with ``"stream": true``,
answered as server-sent events (``response.created``, ``response.output_item.added`` /
``.done`` per output item, ``response.output_text.delta`` for text, ``response.completed``
carrying the usage). It also asks ``GET /v1/models``. This module serves exactly that, with
replies scripted by the test through a responder that sees the request body::

    from tests.openai_server import Call, OpenAIServer, Said

    with OpenAIServer(api_key="sk-test") as server:
        server.respond_with(lambda req: Said(calls=[Call("exec_command", {"cmd": "ls"})]))
        ... point codex at server.url (``OPENAI_BASE_URL``) ...

A request with another bearer token than ``api_key`` gets ``401``; a responder that raises gets
``500`` (kept in ``server.responder_errors``). Credentials are never recorded. Usage is
estimated like tests/llm_server.py does: four characters a token.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.llm_server import MessagesServer, RecordedRequest, request_text

JsonDict = dict[str, Any]


@dataclass
class Call:
    """One function call of a scripted reply (codex's tools: ``exec_command``, …)."""

    name: str
    arguments: JsonDict = field(default_factory=dict)


@dataclass
class Said:
    """A scripted reply: assistant text and/or function calls."""

    text: str = ""
    calls: list[Call] = field(default_factory=list)


Responder = Callable[[JsonDict], Said]


def input_text(req: JsonDict) -> str:
    """Every text the request carries (instructions, messages, tool outputs), joined."""
    said = request_text({"system": req.get("instructions"), "messages": req.get("input")})
    return "\n".join([said, *tool_outputs(req)])


def tool_outputs(req: JsonDict) -> list[str]:
    """The outputs of the function calls the request reports back, in order."""
    return [
        str(item.get("output"))
        for item in req.get("input") or []
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


class OpenAIServer(MessagesServer):
    """The Messages-API test server's lifecycle, credentials and records, speaking the
    Responses API instead."""

    def __init__(self, *, api_key: str | None = None) -> None:
        super().__init__(api_key=api_key)
        self._said: Responder | None = None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _Handler

    @property
    def url(self) -> str:
        """The base URL to give codex (``OPENAI_BASE_URL``): the API's root, with ``/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def respond_with(self, responder: Responder | None) -> None:  # type: ignore[override]
        self._said = responder

    @property
    def response_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.startswith("/v1/responses")]

    def record(self, handler: BaseHTTPRequestHandler, body: Any, credential: str | None) -> None:
        self._record(
            RecordedRequest(
                method=handler.command,
                path=handler.path,
                query={},
                headers={},
                json=body,
                has_credentials=credential is not None,
            )
        )

    def next_id(self, prefix: str) -> str:
        return self._next_id(prefix)


def response_events(server: OpenAIServer, req: JsonDict, said: Said) -> Iterator[JsonDict]:
    """The SSE events of one streamed response, in the order the Responses API sends them."""
    response_id = server.next_id("resp")
    yield {"type": "response.created", "response": {"id": response_id, "status": "in_progress"}}
    items: list[JsonDict] = []
    if said.text:
        items.append(
            {
                "type": "message",
                "id": server.next_id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": said.text, "annotations": []}],
            }
        )
    for call in said.calls:
        items.append(
            {
                "type": "function_call",
                "id": server.next_id("fc"),
                "call_id": server.next_id("call"),
                "name": call.name,
                "arguments": json.dumps(call.arguments),
                "status": "completed",
            }
        )
    for index, item in enumerate(items):
        if item["type"] == "message":
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "content": [], "status": "in_progress"},
            }
            yield {
                "type": "response.output_text.delta",
                "item_id": item["id"],
                "output_index": index,
                "content_index": 0,
                "delta": said.text,
            }
        else:
            yield {"type": "response.output_item.added", "output_index": index, "item": item}
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
    prompt_tokens = max(1, len(json.dumps(req)) // 4)
    output_tokens = max(1, len(json.dumps(items)) // 4)
    usage = {
        "input_tokens": prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt_tokens + output_tokens,
    }
    yield {
        "type": "response.completed",
        "response": {"id": response_id, "status": "completed", "output": items, "usage": usage},
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_state: OpenAIServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _credential(self) -> str | None:
        auth = self.headers.get("authorization", "")
        return auth[7:] if auth.lower().startswith("bearer ") else None

    def _send_json(self, status: int, body: JsonDict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refused(self) -> bool:
        if self.server_state.api_key is None or self._credential() == self.server_state.api_key:
            return False
        error = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
        self._send_json(401, {"error": error | {"code": "invalid_api_key"}})
        return True

    def do_GET(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server_state.record(self, body or None, self._credential())
        if self._refused():
            return
        if self.path.split("?")[0] == "/v1/models":
            models = [{"id": "gpt-test", "object": "model", "owned_by": "tests"}]
            self._send_json(200, {"object": "list", "data": models})
            return
        self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            req = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "body is not JSON", "type": "invalid"}})
            return
        self.server_state.record(self, req, self._credential())
        if self._refused():
            return
        if self.path.split("?")[0] != "/v1/responses":
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "nf"}})
            return
        responder = self.server_state._said
        try:
            if responder is None:
                raise RuntimeError("no responder scripted")
            said = responder(req)
        except Exception as exc:
            self.server_state.responder_errors.append(exc)
            self._send_json(500, {"error": {"message": str(exc), "type": "server_error"}})
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        for event in response_events(self.server_state, req, said):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True
