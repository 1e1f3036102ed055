"""Network by allow-list: an agent reaches the hosts its kind needs and those the user lists.

All or nothing is no choice: claude-code must reach its Messages API, and with the whole
network it also reached the user's local databases and dev servers on the host's 127.0.0.1.
So a room has a network namespace of its own (only loopback), and the one way out is a Unix
socket bound into it, served here, outside, by a small proxy that opens a connection only to a
host on the unit's allow-list. Inside, :mod:`engine.evaluation.agents.forwarder` puts that
socket behind the room's loopback (an HTTP proxy named in ``HTTP(S)_PROXY``, and the allowed
loopback endpoints on their own ports).

The proxy speaks what HTTP clients send a proxy: ``CONNECT host:port`` (a TLS tunnel) and a
plain request with a full URL; plus ``FORWARD host:port``, the forwarder's tunnel that wants no
reply. It reads no more than the request head; what follows goes through untouched. Written
here rather than taken from a library: the proxy libraries on PyPI are large servers with
plugin systems and their own threads to configure, for what is a hundred lines of CONNECT.

Which host a kind needs is its model endpoint (``engine.evaluation.agents.kinds.kind_endpoint``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import ipaddress
import os
import shutil
import socket
import socketserver
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from engine.evaluation.agents.forwarder import FORWARD_VERB, pipe

# where the proxy's socket appears inside a room, and the room's proxy port on its loopback
SOCKET_INSIDE = Path("/run/skillsmith/proxy.sock")
PROXY_PORT = 3128
_HEAD_MAX = 65536
_CONNECT_TIMEOUT_S = 30.0


def url_host(url: str) -> str:
    """``host:port`` of a URL (the scheme's port when it names none)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname or ""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def split_host(entry: str) -> tuple[str, int | None]:
    """``host`` or ``host:port`` (IPv6 in brackets) as (lower-case host, port or None)."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host.lower(), int(rest[1:]) if rest.startswith(":") else None
    host, _, port = entry.partition(":")
    return host.lower(), int(port) if port else None


def allows(allow: Iterable[str], host: str, port: int) -> bool:
    """Whether ``host:port`` is on the list: an entry with a port allows that port, one
    without allows the web's (80, 443)."""
    host = host.lower().strip("[]")
    for entry in allow:
        name, only = split_host(entry)
        if name == host and (port == only if only is not None else port in (80, 443)):
            return True
    return False


def loopback_targets(allow: Iterable[str]) -> list[str]:
    """The allowed endpoints on the host's loopback with a port: the room serves these on
    the same port of its own loopback, so a base URL naming one works unchanged."""
    found = []
    for entry in allow:
        name, port = split_host(entry)
        if port is None:
            continue
        try:
            loopback = name == "localhost" or ipaddress.ip_address(name).is_loopback
        except ValueError:
            loopback = False
        if loopback:
            found.append(entry)
    return found


class _Handler(socketserver.BaseRequestHandler):
    server: _Server | _TcpServer

    def handle(self) -> None:
        client: socket.socket = self.request
        client.settimeout(_CONNECT_TIMEOUT_S)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < _HEAD_MAX:
                chunk = client.recv(4096)
                if not chunk:
                    return
                head += chunk
        except OSError:
            return
        request, _, rest = head.partition(b"\r\n\r\n")
        line, _, fields = request.partition(b"\r\n")
        words = line.decode("latin-1").split()
        if len(words) < 2:
            return self._refuse(client, "400 Bad Request", "not a proxy request")
        verb, target = words[0].upper(), words[1]
        if verb in ("CONNECT", FORWARD_VERB.decode()):
            host, port = split_host(target)
            port = port or 443
            first = b""
        else:
            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                return self._refuse(client, "400 Bad Request", "expected a full http:// URL")
            host, port = url.hostname, url.port or 80
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            start = " ".join([words[0], path, *words[2:]]).encode("latin-1")
            first = start + b"\r\n" + fields + b"\r\n\r\n"
        if not allows(self.server.allow, host, port):
            return self._refuse(client, "403 Forbidden", f"{host}:{port} is not on the allow-list")
        try:
            upstream = socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S)
        except OSError as exc:
            return self._refuse(client, "502 Bad Gateway", f"{host}:{port}: {exc}")
        client.settimeout(None)
        upstream.settimeout(None)
        if verb == "CONNECT":
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        upstream.sendall(first + rest)
        back = threading.Thread(target=pipe, args=(upstream, client), daemon=True)
        back.start()
        pipe(client, upstream)
        back.join()
        upstream.close()

    @staticmethod
    def _refuse(client: socket.socket, status: str, why: str) -> None:
        body = f"skillsmith: {why}\n".encode()
        head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        with contextlib.suppress(OSError):
            client.sendall(head.encode() + body)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, allow: tuple[str, ...]) -> None:
        self.allow = allow
        super().__init__(path, _Handler)


class _TcpServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """The same proxy on the host's loopback, for Seatbelt (macOS has no network namespace to
    bind a socket into; the profile lets the agent reach this one port)."""

    daemon_threads = True

    def __init__(self, allow: tuple[str, ...]) -> None:
        self.allow = allow
        super().__init__(("127.0.0.1", 0), _Handler)


@functools.cache
def proxy_port(allow: tuple[str, ...]) -> int:
    """The loopback port of this process's TCP proxy for ``allow``, started on first use."""
    server = _TcpServer(allow)
    threading.Thread(target=server.serve_forever, daemon=True, name="allow-list-proxy").start()
    return int(server.server_address[1])


@functools.cache
def proxy_socket(allow: tuple[str, ...]) -> Path:
    """The socket of this process's proxy for ``allow``, started on first use; it serves
    every unit with that list until the process ends (a Ray worker starts its own)."""
    folder = Path(tempfile.mkdtemp(prefix="skillsmith-proxy-"))
    path = folder / "proxy.sock"
    server = _Server(str(path), allow)
    os.chmod(path, 0o666)  # the agent's user (not the harness's) connects through it
    threading.Thread(target=server.serve_forever, daemon=True, name="allow-list-proxy").start()
    atexit.register(shutil.rmtree, folder, True)
    return path
