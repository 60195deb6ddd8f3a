"""Drive an A2A 1.0 agent with the official a2a-sdk 1.3 client; print what happened as JSON.

  a2a_client_check.py CARD_URL [--text TEXT] [--answer TEXT ...] [--no-streaming]
                      [--bearer TOKEN] [--expect-state STATE] [--expect-text SUBSTRING]

CARD_URL is the agent card's URL (http://127.0.0.1:PORT/.well-known/agent-card.json);
a bare base URL gets the well-known path appended. The script fetches the card with
the SDK's A2ACardResolver, builds a client with ClientFactory (JSON-RPC binding,
`A2A-Version: 1.0` on every request), sends TEXT (SendStreamingMessage when the card
says streaming and --no-streaming is not given, else SendMessage), answers each
input-required question with the next --answer on the same task and context, then
reads the final task back with GetTask. It prints one JSON object on stdout:

  {"ok": true, "card": {...}, "rounds": [{"events": [...kinds...], "state": "...",
   "question": "..."}], "task": {...ProtoJSON Task...} | null, "message": {...} | null,
   "state": "TASK_STATE_COMPLETED", "text": "<all text parts of the reply>"}

and exits 0 when the final state is --expect-state (default TASK_STATE_COMPLETED; use
"message" for an agent that replies with a bare Message) and the text contains
--expect-text (when given). Any failure prints {"ok": false, "error": "..."} and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from typing import Any
from urllib.parse import urlsplit

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import GetTaskRequest, Message, Part, SendMessageRequest, Task
from a2a.types.a2a_pb2 import Role, TaskState
from google.protobuf.json_format import MessageToDict

WELL_KNOWN = "/.well-known/agent-card.json"
INTERRUPTED = {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}


def to_json(msg: Any) -> dict[str, Any]:
    return MessageToDict(msg, preserving_proto_field_name=False)


def texts(parts: Any) -> list[str]:
    return [p.text for p in parts if p.WhichOneof("content") == "text"]


def reply_text(task: Task | None, message: Message | None) -> str:
    if message is not None:
        return "\n".join(texts(message.parts))
    if task is None:
        return ""
    out = [t for a in task.artifacts for t in texts(a.parts)]
    if task.status.HasField("message"):
        out += texts(task.status.message.parts)
    return "\n".join(out)


async def one_round(
    client: Any, msg: Message, task: Task | None
) -> tuple[list[str], Task | None, Message | None]:
    """Sends one message; returns the event kinds seen, the last task snapshot and any bare message.

    A continuation stream (a2a-sdk 1.3 server) starts with statusUpdate events, not a task
    event, so the snapshot from the previous round is carried in and updated.
    """
    kinds: list[str] = []
    reply: Message | None = None
    async for event in client.send_message(SendMessageRequest(message=msg)):
        kind = event.WhichOneof("payload")
        kinds.append(kind or "?")
        if kind == "task":
            task = Task()
            task.CopyFrom(event.task)
        elif kind == "message":
            reply = event.message
        elif kind == "status_update" and task is not None:
            task.status.CopyFrom(event.status_update.status)
        elif kind == "artifact_update" and task is not None:
            task.artifacts.append(event.artifact_update.artifact)
    return kinds, task, reply


async def run(args: argparse.Namespace) -> dict[str, Any]:
    parts = urlsplit(args.card_url)
    if not parts.scheme or not parts.netloc:
        raise ValueError(f"not an absolute URL: {args.card_url!r}")
    base = f"{parts.scheme}://{parts.netloc}"
    card_path = parts.path if parts.path not in ("", "/") else WELL_KNOWN
    headers = {"Authorization": f"Bearer {args.bearer}"} if args.bearer else {}
    async with httpx.AsyncClient(timeout=args.timeout, headers=headers, trust_env=False) as http:
        card = await A2ACardResolver(http, base, agent_card_path=card_path).get_agent_card()
        config = ClientConfig(streaming=not args.no_streaming, httpx_client=http)
        client = ClientFactory(config).create(card)
        rounds: list[dict[str, Any]] = []
        answers = list(args.answer)
        msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=args.text)])
        task: Task | None = None
        reply: Message | None = None
        while True:
            kinds, task, reply = await one_round(client, msg, task)
            entry: dict[str, Any] = {"events": kinds}
            if task is not None:
                entry["state"] = TaskState.Name(task.status.state)
                if task.status.state in INTERRUPTED:
                    entry["question"] = "\n".join(texts(task.status.message.parts))
            rounds.append(entry)
            if task is None or task.status.state not in INTERRUPTED or not answers:
                break
            msg = Message(
                message_id=str(uuid.uuid4()),
                role=Role.ROLE_USER,
                task_id=task.id,
                context_id=task.context_id,
                parts=[Part(text=answers.pop(0))],
            )
        if task is not None:
            # Read the stored task back: exercises GetTask and gives the server's own view.
            task = await client.get_task(GetTaskRequest(id=task.id))
        await client.close()
    state = "message" if reply is not None else TaskState.Name(task.status.state) if task is not None else "none"
    return {
        "ok": True,
        "card": to_json(card),
        "rounds": rounds,
        "task": to_json(task) if task is not None else None,
        "message": to_json(reply) if reply is not None else None,
        "state": state,
        "text": reply_text(task, reply),
    }


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("card_url")
    p.add_argument("--text", default="Draft release notes for 1.2")
    p.add_argument("--answer", action="append", default=[], help="answer to an input-required question (repeat)")
    p.add_argument("--no-streaming", action="store_true", help="use SendMessage even if the card streams")
    p.add_argument("--bearer", help="send 'Authorization: Bearer TOKEN'")
    p.add_argument("--timeout", type=float, default=30.0, help="HTTP timeout in seconds (default 30)")
    p.add_argument("--expect-state", default="TASK_STATE_COMPLETED")
    p.add_argument("--expect-text", help="substring the reply text must contain")
    args = p.parse_args(argv)
    try:
        result = asyncio.run(run(args))
    except Exception as exc:  # noqa: BLE001 - report any failure as JSON
        print(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}))
        return 1
    problems = []
    if result["state"] != args.expect_state:
        problems.append(f"final state {result['state']}, expected {args.expect_state}")
    if args.expect_text is not None and args.expect_text not in result["text"]:
        problems.append(f"reply text does not contain {args.expect_text!r}")
    if problems:
        result["ok"] = False
        result["error"] = "; ".join(problems)
    print(json.dumps(result, ensure_ascii=False))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
