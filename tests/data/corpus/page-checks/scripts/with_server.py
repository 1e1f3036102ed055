#!/usr/bin/env python3
"""Start dev servers, wait until their ports answer, run a command, then stop the servers."""

import argparse
import socket
import subprocess
import sys
import time


def wait_for(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"port {port} did not open within {timeout:.0f}s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", action="append", required=True)
    parser.add_argument("--port", action="append", type=int, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    servers = [subprocess.Popen(cmd, shell=True) for cmd in args.server]
    try:
        for port in args.port:
            wait_for(port)
        return subprocess.call([c for c in args.command if c != "--"])
    finally:
        for server in servers:
            server.terminate()


if __name__ == "__main__":
    sys.exit(main())
