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

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

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


@dataclass
class Recorded:
    method: str
    path: str
    json: Any
    has_credentials: bool


Responder = Callable[[JsonDict], Said]


def input_text(req: JsonDict) -> str:
    """Every text the request carries (instructions, messages, tool outputs), joined."""
    parts: list[str] = [str(req.get("instructions") or "")]

    def walk(node: Any) -> None:
        if isinstance(node, str):
            parts.append(node)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for key in ("text", "output", "content", "arguments"):
                walk(node.get(key))

    walk(req.get("input"))
    return "\n".join(parts)


def tool_outputs(req: JsonDict) -> list[str]:
    """The outputs of the function calls the request reports back, in order."""
    return [
        str(item.get("output"))
        for item in req.get("input") or []
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


class OpenAIServer:
    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.requests: list[Recorded] = []
        self.responder_errors: list[BaseException] = []
        self._responder: Responder | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None

    def start(self) -> OpenAIServer:
        handler = type("Handler", (_Handler,), {"state": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def respond_with(self, responder: Responder) -> None:
        self._responder = responder

    @property
    def response_requests(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path.startswith("/v1/responses")]

    def next_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_{next(self._ids):016x}"

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)


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
    state: OpenAIServer

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
        if self.state.api_key is None or self._credential() == self.state.api_key:
            return False
        error = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
        self._send_json(401, {"error": error | {"code": "invalid_api_key"}})
        return True

    def do_GET(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        self.state.record(Recorded("GET", self.path, body or None, self._credential() is not None))
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
        self.state.record(Recorded("POST", self.path, req, self._credential() is not None))
        if self._refused():
            return
        if self.path.split("?")[0] != "/v1/responses":
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "nf"}})
            return
        responder = self.state._responder
        try:
            if responder is None:
                raise RuntimeError("no responder scripted")
            said = responder(req)
        except Exception as exc:
            self.state.responder_errors.append(exc)
            self._send_json(500, {"error": {"message": str(exc), "type": "server_error"}})
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        for event in response_events(self.state, req, said):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True
