"""What a room's network lets through, probed from inside and printed as one JSON line.

``net.json`` in its folder names what to try: ``endpoint`` (a base URL: an HTTP POST to its
``/v1/messages``), ``allowed`` (a host:port on the allow-list), ``host_loopback`` (a port only
the host's 127.0.0.1 listens on) and ``unlisted`` (host:port reached through the proxy in
$HTTPS_PROXY, and directly). Each result is a status code, "open", or the error it met.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path


def post(url: str) -> object:
    request = urllib.request.Request(url, data=b"{}", headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (OSError, urllib.error.URLError) as exc:
        return f"error: {exc}"


def dial(host: str, port: int) -> object:
    try:
        with socket.create_connection((host, port), timeout=3):
            return "open"
    except OSError as exc:
        return f"error: {exc}"


def tunnel(target: str) -> object:
    """CONNECT through the proxy the environment names; the status line's code."""
    proxy = os.environ.get("HTTPS_PROXY", "")
    if not proxy:
        return "error: no proxy"
    host, port = proxy.rsplit("/", 1)[-1].rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            return int(sock.recv(4096).split()[1])
    except (OSError, IndexError, ValueError) as exc:
        return f"error: {exc}"


def main() -> int:
    plan = json.loads(Path("net.json").read_text())
    allowed_host, allowed_port = plan["allowed"].rsplit(":", 1)
    unlisted_host, unlisted_port = plan["unlisted"].rsplit(":", 1)
    report = {
        "endpoint": post(plan["endpoint"].rstrip("/") + "/v1/messages"),
        "allowed": dial(allowed_host, int(allowed_port)),
        "host_loopback": dial("127.0.0.1", int(plan["host_loopback"])),
        "host_loopback_via_proxy": tunnel(f"127.0.0.1:{plan['host_loopback']}"),
        "unlisted_via_proxy": tunnel(plan["unlisted"]),
        "unlisted_direct": dial(unlisted_host, int(unlisted_port)),
        "proxy_env": os.environ.get("HTTPS_PROXY"),
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
