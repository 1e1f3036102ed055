"""The in-room end of the network allow-list: runs inside the sandbox, before the agent.

The room has a network namespace of its own with only a loopback device, so nothing it dials
leaves it. This small program (standard library only: it runs under the sandbox's Python,
before the agent) listens on the room's loopback and carries each connection through the one
Unix socket bound into the room, to the harness's proxy outside
(:mod:`engine.evaluation.agents.network`), which decides whether the host may be reached:

* ``127.0.0.1:PROXY_PORT`` is an HTTP proxy (CONNECT, or a plain request with a full URL); the
  agent's environment names it in ``HTTP(S)_PROXY``;
* each ``--forward host:port`` (an allowed endpoint on the host's loopback, such as a local
  Messages API) listens on the same port in the room and is carried there as it is, so an
  ``ANTHROPIC_BASE_URL`` of ``http://127.0.0.1:PORT`` works unchanged.

Usage: ``forwarder.py SOCKET PROXY_PORT [--forward HOST:PORT]... -- AGENT ARGV``. It binds its
ports, leaves a child to serve them, and becomes the agent (``exec``), which therefore keeps the
namespace's pid 1; the child dies with the namespace.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

FORWARD_VERB = b"FORWARD"  # "FORWARD host:port\r\n\r\n": a tunnel with no reply (see network.py)
_CHUNK = 65536


def pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy one direction until it ends, then tell the other side no more is coming."""
    try:
        while data := source.recv(_CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                sock.shutdown(how)


def carry(client: socket.socket, path: str, preface: bytes) -> None:
    try:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(path)
        upstream.sendall(preface)
    except OSError:
        client.close()
        return
    back = threading.Thread(target=pipe, args=(upstream, client), daemon=True)
    back.start()
    pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def serve(listener: socket.socket, path: str, preface: bytes) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=carry, args=(client, path, preface), daemon=True).start()


def main(argv: list[str]) -> int:
    split = argv.index("--")
    own, agent = argv[:split], argv[split + 1 :]
    path, proxy_port = own[0], int(own[1])
    try:
        listeners = [(socket.create_server(("127.0.0.1", proxy_port)), b"")]
    except OSError as exc:
        sys.stderr.write(f"skillsmith network: cannot listen in the room: {exc}\n")
        return 126
    direct = []
    for flag, target in zip(own[2::2], own[3::2], strict=True):
        assert flag == "--forward"
        try:  # a port below 1024 is root's: that endpoint is reached through the proxy instead
            listener = socket.create_server(("127.0.0.1", int(target.rsplit(":", 1)[1])))
        except OSError:
            continue
        listeners.append((listener, FORWARD_VERB + b" " + target.encode() + b"\r\n\r\n"))
        direct.append(target.rsplit(":", 1)[0].strip("[]"))
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        for listener, preface in listeners[1:]:
            threading.Thread(target=serve, args=(listener, path, preface), daemon=True).start()
        serve(listeners[0][0], path, listeners[0][1])
    for listener, _ in listeners:
        listener.close()
    proxy = f"http://127.0.0.1:{proxy_port}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        os.environ[name] = proxy
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = ",".join(direct)
    os.execvp(agent[0], agent)
    return 127  # not reached: exec replaced this process or raised


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
