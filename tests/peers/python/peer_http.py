"""Shared plumbing for the Python peers: bind a loopback socket, log requests, require a bearer, print READY."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from typing import Any

import uvicorn


def bind(host: str, port: int) -> tuple[socket.socket, str]:
    """Binds HOST:PORT (0 = any free port) before the app is built, so the app can know its own URL.

    Returns the socket and the base URL, e.g. http://127.0.0.1:41234.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return sock, f"http://{shown}:{bound}"


class Gate:
    """ASGI wrapper: logs every HTTP request as a JSON line and enforces a bearer token.

    The log line is {"time", "method", "path", "query", "headers" (lower-case names),
    "body" (UTF-8 text)}; tests read it to see exactly what a client sent (headers such
    as A2A-Version, x-orrery-hop, Authorization; canaries in bodies). With `bearer`, any
    path not in `public_paths` answers 401 unless `Authorization: Bearer <bearer>` is sent.
    """

    def __init__(self, app: Any, log_path: str | None, bearer: str | None, public_paths: tuple[str, ...] = ()):
        self.app, self.bearer, self.public_paths = app, bearer, public_paths
        self.log = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            msg = await receive()
            if msg["type"] != "http.request":
                return
            body += msg.get("body", b"")
            more = msg.get("more_body", False)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if self.log is not None:
            entry = {
                "time": time.time(),
                "method": scope["method"],
                "path": scope["path"],
                "query": scope.get("query_string", b"").decode("latin-1"),
                "headers": headers,
                "body": body.decode("utf-8", "replace"),
            }
            self.log.write(json.dumps(entry) + "\n")
            self.log.flush()
        if (
            self.bearer
            and scope["path"] not in self.public_paths
            and headers.get("authorization") != "Bearer " + self.bearer
        ):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                }
            )
            await send({"type": "http.response.body", "body": b'{"error":"missing or wrong bearer token"}'})
            return
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def serve(app: Any, sock: socket.socket, ready_url: str, exit_on_stdin_eof: bool = False) -> None:
    """Runs `app` on the bound socket with uvicorn; prints `READY <ready_url>` once it accepts connections.

    With `exit_on_stdin_eof`, the server also stops when its standard input closes, so a test
    that holds the peer's stdin pipe cannot leak the peer even if the test process dies.
    """
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2, access_log=False)
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.01)
        print(f"READY {ready_url}", flush=True)

    def stop_at_stdin_eof() -> None:
        sys.stdin.buffer.read()
        server.should_exit = True  # uvicorn polls this flag; safe to set from another thread

    if exit_on_stdin_eof:
        # A daemon thread, so it never keeps the process alive after shutdown.
        threading.Thread(target=stop_at_stdin_eof, daemon=True).start()
    await asyncio.gather(server.serve(sockets=[sock]), announce())
