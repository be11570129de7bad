"""A scripted stand-in for an OpenAI-compatible chat endpoint, on 127.0.0.1 only, for the tests of the
``llm`` agent (no network, no model).

``POST /v1/chat/completions`` answers from :attr:`ChatServer.script`, one entry per request, first
first; when the script is empty, :func:`first_legal` answers. An entry is a reply's text, or
``("status", code)`` (an error answer), ``("slow", seconds, text)`` (the text after a wait),
``("garbage",)`` (a body that is not JSON), ``("json", data)`` (``data`` as the whole body, any shape),
``("html", text)`` (an HTML page); :attr:`ChatServer.default` is the entry when the script is
empty (None: :func:`first_legal`). Each request's body is kept in :attr:`ChatServer.requests`
(with its ``Authorization`` header as ``_authorization``). Every answer reports 100 prompt tokens and one
completion token per word of the reply. ``hold_at = k`` makes request k (1 = the first) wait until
:attr:`ChatServer.release` is set (bounded by 60 s), with :attr:`ChatServer.held` set meanwhile:
a test kills its client there.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROMPT_TOKENS = 100


def first_legal(messages: list[dict[str, str]]) -> str:
    """The first move of the prompt's ``Legal moves`` list (``draw`` when none is listed)."""
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    listed = prompt.split("Legal moves", 1)[-1].splitlines()
    moves = [line[2:] for line in listed if line.startswith("- ")]
    return moves[0] if moves else "draw"


class ChatServer(ThreadingHTTPServer):
    """The scripted endpoint; :attr:`url` is its API root (``http://127.0.0.1:PORT/v1``)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[Any] = []
        self.default: Any = None
        self.requests: list[dict[str, Any]] = []
        self.hold_at: int | None = None
        self.held = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.url = f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_entry(self, body: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            self.requests.append(body)
            return len(self.requests), (self.script.pop(0) if self.script else self.default)


class _Handler(BaseHTTPRequestHandler):
    server: ChatServer

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body["_authorization"] = self.headers.get("Authorization")
        n, entry = self.server.next_entry(body)
        if n == self.server.hold_at:
            self.server.held.set()
            self.server.release.wait(60)
        if entry is None:
            entry = first_legal(body["messages"])
        if isinstance(entry, tuple) and entry[0] == "status":
            return self._send(entry[1], {"error": {"message": f"scripted {entry[1]}"}})
        if isinstance(entry, tuple) and entry[0] == "garbage":
            return self._send(200, None, b"<html>not json")
        if isinstance(entry, tuple) and entry[0] == "json":
            return self._send(200, entry[1])
        if isinstance(entry, tuple) and entry[0] == "html":
            return self._send(200, None, entry[1].encode(), "text/html")
        if isinstance(entry, tuple) and entry[0] == "slow":
            time.sleep(entry[1])
            entry = entry[2]
        completion = {
            "id": f"chat-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": entry}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": PROMPT_TOKENS,
                "completion_tokens": len(entry.split()),
                "total_tokens": PROMPT_TOKENS + len(entry.split()),
            },
        }
        self._send(200, completion)

    def _send(self, status: int, data: Any, raw: bytes | None = None, kind: str = "application/json") -> None:
        payload = raw if raw is not None else json.dumps(data).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
            pass


def start() -> ChatServer:
    """A running :class:`ChatServer` (serving from a daemon thread; call ``stop(server)`` after)."""
    server = ChatServer()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def stop(server: ChatServer) -> None:
    server.release.set()
    server.shutdown()
    server.server_close()
