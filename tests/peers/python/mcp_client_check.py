"""Drive an MCP server with the official PyPI `mcp` 2.3 client; print what happened as JSON.

  mcp_client_check.py URL [TOOL [JSON_ARGS]] [--mode auto|legacy|2026-07-28]
                      [--transport streamable-http|sse] [--bearer TOKEN]
                      [--expect-error] [--expect-text SUBSTRING] [--list-twice]

URL is the MCP endpoint (http://127.0.0.1:PORT/mcp for streamable HTTP, .../sse for the
legacy SSE transport). The script connects (--mode auto, the default, probes 2026-07-28
`server/discover` and falls back to the 2025-11-25 `initialize` handshake; legacy forces
the handshake), lists the tools (every page), and, when TOOL is given, calls it with
JSON_ARGS (a JSON object, default {}). Responses are never served from the client's cache.
It prints one JSON object on stdout:

  {"ok": true, "protocolVersion": "...", "serverInfo": {...}, "capabilities": {...},
   "tools": [{name, description, inputSchema, annotations, ...}], "tools2": [...] (--list-twice),
   "call": {"content": [...], "structuredContent": ..., "isError": false} | null, "text": "..."}

and exits 0 when the call's isError matches --expect-error (default: must be false) and its
text contains --expect-text (when given). Any failure prints {"ok": false, "error": "..."}
and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def list_all(client: Client) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools += [dump(t) for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            return tools
    raise RuntimeError("tools/list did not end after 100 pages")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {args.bearer}"} if args.bearer else None
    timeout = httpx2.Timeout(args.timeout, read=args.timeout)
    if args.transport == "sse":
        transport: Any = sse_client(args.url, headers=headers, timeout=args.timeout, sse_read_timeout=args.timeout)
    else:
        http = httpx2.AsyncClient(headers=headers, timeout=timeout, trust_env=False)
        transport = streamable_http_client(args.url, http_client=http)
    tool_args = json.loads(args.json_args) if args.json_args else {}
    if not isinstance(tool_args, dict):
        raise ValueError("JSON_ARGS must be a JSON object")
    out: dict[str, Any] = {"ok": True}
    async with Client(transport, mode=args.mode, cache=None, read_timeout_seconds=args.timeout) as client:
        out["protocolVersion"] = client.protocol_version
        out["serverInfo"] = dump(client.server_info) if client.server_info else None
        out["capabilities"] = dump(client.server_capabilities)
        out["tools"] = await list_all(client)
        if args.list_twice:
            out["tools2"] = await list_all(client)
        out["call"], out["text"] = None, ""
        if args.tool:
            result = await client.call_tool(args.tool, tool_args)
            out["call"] = dump(result)
            out["text"] = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url")
    p.add_argument("tool", nargs="?")
    p.add_argument("json_args", nargs="?", metavar="JSON_ARGS")
    p.add_argument("--mode", default="auto", help="auto (default), legacy, or a modern version like 2026-07-28")
    p.add_argument("--transport", choices=("streamable-http", "sse"), default="streamable-http")
    p.add_argument("--bearer", help="send 'Authorization: Bearer TOKEN'")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
    p.add_argument("--list-twice", action="store_true", help="list the tools twice (pin tests)")
    p.add_argument("--expect-error", action="store_true", help="the call must return isError: true")
    p.add_argument("--expect-text", help="substring the call's text content must contain")
    args = p.parse_args(argv)
    try:
        result = asyncio.run(run(args))
    except Exception as exc:  # noqa: BLE001 - report any failure as JSON
        detail = exc
        while isinstance(detail, BaseExceptionGroup) and detail.exceptions:
            detail = detail.exceptions[0]
        print(json.dumps({"ok": False, "error": f"{type(detail).__name__}: {detail}"}))
        return 1
    problems = []
    if result["call"] is not None and bool(result["call"].get("isError")) != args.expect_error:
        problems.append(f"isError is {bool(result['call'].get('isError'))}, expected {args.expect_error}")
    if args.expect_text is not None and args.expect_text not in result["text"]:
        problems.append(f"call text does not contain {args.expect_text!r}")
    if problems:
        result["ok"] = False
        result["error"] = "; ".join(problems)
    print(json.dumps(result, ensure_ascii=False))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
