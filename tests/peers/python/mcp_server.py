"""MCP peer server on the official PyPI `mcp` 2.3 SDK (`MCPServer`, formerly FastMCP), for Orrery's interop tests.

Serves MCP on 127.0.0.1 and prints `READY <endpoint url>` once it accepts connections:
streamable HTTP at /mcp (default; speaks both the 2025-11-25 initialize/session model and
the 2026-07-28 stateless model on one endpoint), or legacy HTTP+SSE (--transport sse: GET
/sse, then POST /messages/?session_id=...). --port 0 (the default) picks a free port.

Tools (deterministic; no network, no files):
  lookup(term)             readOnlyHint: true (idempotent, closed world); "lookup: <term> = <definition>"
  stats(text)              readOnlyHint: true; structured output {"words", "chars"} (+ outputSchema)
  explode(reason)          readOnlyHint: true; always fails -> result with isError: true
  write_note(title, body)  no annotations at all (so readOnlyHint is absent = false); "saved note <title>"
  delete_note(title)       readOnlyHint: false, destructiveHint: true; "deleted note <title>"
  change_tools()           --mode notify only; no annotations; changes lookup as --change says and
                           sends notifications/tools/list_changed (session GET stream for
                           2025-11-25 clients, subscriptions/listen for 2026-07-28 clients)

Modes (--mode), for pin tests:
  stable   tools never change (default)
  rotate   every tools/list after the --change-after'th (default 1) shows `lookup` changed,
           with a counter, so each later list differs from the one before
  notify   `lookup` changes only when change_tools is called
--change says what changes on `lookup`: description (default), schema (adds an input
property), annotations (readOnlyHint flips to false).

  PEERS=$(tests/peers/setup.sh)
  "$PEERS/venv/bin/python" tests/peers/python/mcp_server.py --mode rotate
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import Tool as MCPTool
from mcp.types import ToolAnnotations
from peer_http import Gate, bind, serve
from pydantic import BaseModel

DEFINITIONS = {
    "a2a": "Agent2Agent protocol, version 1.0",
    "mcp": "Model Context Protocol",
    "orrery": "a mechanical model of the solar system",
}
READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)


class Stats(BaseModel):
    words: int
    chars: int


class PeerServer(MCPServer):
    """MCPServer whose tools/list can change `lookup` between calls (for pin tests)."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__("py-mcp-peer", instructions="Deterministic MCP test peer (mcp 2.3)", version="1.0.0")
        self.args = args
        self.lists = 0  # tools/list calls served
        self.revision = 0  # how many times `lookup` has changed

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        self.lists += 1
        if self.args.mode == "rotate" and self.lists > self.args.change_after:
            self.revision = self.lists - self.args.change_after
        if self.revision == 0:
            return tools
        return [self.changed(t) if t.name == "lookup" else t for t in tools]

    def changed(self, tool: MCPTool) -> MCPTool:
        n = self.revision
        if self.args.change == "description":
            return tool.model_copy(update={"description": f"{tool.description} (revision {n})"})
        if self.args.change == "schema":
            schema = dict(tool.input_schema)
            schema["properties"] = {**schema.get("properties", {}), f"extra_{n}": {"type": "string"}}
            return tool.model_copy(update={"input_schema": schema})
        annotations = ToolAnnotations(readOnlyHint=False, idempotentHint=True, openWorldHint=False, title=f"r{n}")
        return tool.model_copy(update={"annotations": annotations})


def build(args: argparse.Namespace) -> PeerServer:
    mcp = PeerServer(args)

    @mcp.tool(annotations=READ_ONLY)
    def lookup(term: str) -> str:
        """Looks up a term in a small built-in glossary."""
        return f"lookup: {term} = {DEFINITIONS.get(term.lower(), 'unknown term')}"

    @mcp.tool(annotations=READ_ONLY)
    def stats(text: str) -> Stats:
        """Counts the words and characters of a text."""
        return Stats(words=len(text.split()), chars=len(text))

    @mcp.tool(annotations=READ_ONLY)
    def explode(reason: str = "asked to") -> str:
        """Always fails, for error-path tests."""
        raise ToolError(f"exploded: {reason}")

    @mcp.tool()
    def write_note(title: str, body: str) -> str:
        """Saves a note (an acting tool: no readOnlyHint)."""
        return f"saved note {title} ({len(body)} chars)"

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
    def delete_note(title: str) -> str:
        """Deletes a note (readOnlyHint explicitly false)."""
        return f"deleted note {title}"

    if args.mode == "notify":

        @mcp.tool()
        async def change_tools(ctx: Context) -> str:
            """Changes the lookup tool and announces notifications/tools/list_changed."""
            mcp.revision += 1
            await ctx.notify_tools_changed()  # 2026-07-28 subscriptions/listen streams
            try:
                await ctx.session.send_tool_list_changed()  # 2025-11-25 sessions (GET stream)
            except Exception as exc:  # noqa: BLE001 - no session on the stateless path
                print(f"mcp_server: no session to notify: {exc!r}", file=sys.stderr)
            return f"lookup is now at revision {mcp.revision}"

    if args.mode != "stable":
        # Advertise tools.listChanged to 2025-11-25 clients (MCPServer leaves it false; the
        # lowlevel server takes it only as an argument to create_initialization_options).
        low = mcp._lowlevel_server
        plain = low.create_initialization_options

        def with_list_changed(notification_options: Any = None, *rest: Any, **kw: Any) -> Any:
            return plain(NotificationOptions(tools_changed=True), *rest, **kw)

        low.create_initialization_options = with_list_changed
    return mcp


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=("stable", "rotate", "notify"), default=os.environ.get("PEER_MODE", "stable"))
    p.add_argument("--change", choices=("description", "schema", "annotations"), default="description")
    p.add_argument("--change-after", type=int, default=1, help="rotate: tools/list calls served unchanged")
    p.add_argument("--transport", choices=("streamable-http", "sse"), default="streamable-http")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "0")), help="0 = any free port (default)")
    p.add_argument("--json-response", action="store_true", help="answer POSTs with application/json, not SSE")
    p.add_argument("--stateless", action="store_true", help="no Mcp-Session-Id (stateless_http=True)")
    p.add_argument(
        "--allow-any-host",
        action="store_true",
        help="turn off DNS-rebinding protection (by default Host must be 127.0.0.1/localhost/[::1], else 421)",
    )
    p.add_argument("--require-bearer", metavar="TOKEN", help="every request needs 'Authorization: Bearer TOKEN'")
    p.add_argument("--request-log", metavar="FILE", help="append each request (headers, body) as a JSON line")
    p.add_argument("--exit-on-stdin-eof", action="store_true", help="stop when standard input closes")
    return p.parse_args(argv)


async def main(argv: list[str]) -> None:
    args = parse_args(argv)
    sock, base = bind(args.host, args.port)
    mcp = build(args)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False) if args.allow_any_host else None
    if args.transport == "sse":
        app = mcp.sse_app(transport_security=security, host=args.host)
        ready = base + "/sse"
    else:
        app = mcp.streamable_http_app(
            json_response=args.json_response,
            stateless_http=args.stateless,
            transport_security=security,
            host=args.host,
        )
        ready = base + "/mcp"
    await serve(Gate(app, args.request_log, args.require_bearer), sock, ready, exit_on_stdin_eof=args.exit_on_stdin_eof)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
