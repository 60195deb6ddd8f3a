"""A2A 1.0 peer agent on the official a2a-sdk 1.3 (PyPI), for Orrery's interop tests.

Serves an A2A 1.0 agent card (JSON-RPC binding, protocolVersion "1.0") at
/.well-known/agent-card.json and JSON-RPC at --rpc-path on 127.0.0.1, and prints
`READY <card url>` on stdout once it accepts connections. With --port 0 (the
default) the OS picks a free port, so parallel tests never race for one.

Modes (--mode); every reply text comes from ../texts.json:
  echo          task COMPLETED; one artifact whose text is "draft: <request>"
  ask           task INPUT_REQUIRED with a question in status.message, --rounds
                times; the next message on the same taskId/contextId answers it;
                then COMPLETED with "draft: <request> (answer: <answers>)"
  card-changes  echo, but every card fetch after the --change-after'th serves a
                card changed as --card-change says (skills, interface, security:
                trust fields; description, examples: not trust fields)
  inject        echo text plus an injection phrase, an email address, fake API
                keys, a zero-width space, a bidi override and Unicode tag chars
  slow          waits --delay seconds before the echo reply; CancelTask works
  big-reply     one text artifact of --size bytes (default just over 1 MiB)
  fail          task FAILED with "failed: <request>" in status.message
  mixed-parts   artifact with a text part, a data part and a url part

Signed cards (any mode): --sign ES256|RS256|EdDSA makes a fresh key and signs the card with
the SDK's own signer (a2a.utils.signing.create_agent_card_signer, PyJWT underneath), kid
--sign-kid; --jwks-out FILE writes the public key set; --jku names the key set served at
/.well-known/jwks.json in the protected header; --tamper serves the card changed after it was
signed (its description).

Run with the venv from tests/peers/setup.sh:
  PEERS=$(tests/peers/setup.sh)
  "$PEERS/venv/bin/python" tests/peers/python/a2a_agent.py --mode ask
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from a2a.helpers import get_message_text, new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Part,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.types.a2a_pb2 import Role
from google.protobuf import struct_pb2
from peer_http import Gate, bind, serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

TEXTS: dict[str, Any] = json.loads((Path(__file__).resolve().parent.parent / "texts.json").read_text("utf-8"))
MODES = ("echo", "ask", "card-changes", "inject", "slow", "big-reply", "fail", "mixed-parts")
CARD_CHANGES = ("skills", "interface", "security", "description", "examples")


def fill(template: str, **values: str) -> str:
    """Substitutes {name} placeholders (str.format would choke on other braces)."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


def big_text(request: str, size: int) -> str:
    head = fill(TEXTS["echo"], request=request) + "\n"
    unit = TEXTS["big_reply_unit"]
    body_len = max(size - len(head.encode("utf-8")), 0)
    return head + (unit * (body_len // len(unit) + 1))[:body_len]


class PeerExecutor(AgentExecutor):
    """Deterministic agent logic; no model, no randomness beyond SDK-made ids."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        if message is None:
            return
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(message)
            await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue=event_queue, task_id=task.id, context_id=task.context_id)
        # The first user message on the task is the request; later ones are answers.
        user_msgs = [m for m in task.history if m.role == Role.ROLE_USER]
        if message.message_id not in {m.message_id for m in user_msgs}:
            user_msgs.append(message)
        user_texts = [get_message_text(m) for m in user_msgs]
        request, answers = user_texts[0], user_texts[1:]

        def agent_msg(text: str) -> Any:
            return new_text_message(text, context_id=task.context_id, task_id=task.id)

        await up.start_work()
        mode = self.args.mode
        if mode == "ask" and len(answers) < self.args.rounds:
            question = fill(TEXTS["question"], round=str(len(answers) + 1), rounds=str(self.args.rounds))
            await up.requires_input(message=agent_msg(question))
            return
        if mode == "fail":
            await up.failed(message=agent_msg(fill(TEXTS["failed"], request=request)))
            return
        if mode == "slow":
            # CancelTask makes the SDK cancel this coroutine, then call cancel() below.
            await asyncio.sleep(self.args.delay)
        if mode == "ask":
            text = fill(TEXTS["answered"], request=request, answers="; ".join(answers))
        elif mode == "inject":
            text = fill(TEXTS["inject"], request=request)
        elif mode == "big-reply":
            text = big_text(request, self.args.size)
        else:
            text = fill(TEXTS["echo"], request=request)

        parts = [new_text_part(text=text, media_type="text/plain")]
        if mode == "mixed-parts":
            mixed = TEXTS["mixed_parts"]
            data = struct_pb2.Value()
            data.struct_value.update(mixed["data"])
            parts = [
                new_text_part(text=fill(mixed["text"], request=request), media_type="text/plain"),
                Part(data=data, media_type="application/json"),
                Part(url=mixed["url"], media_type="application/pdf", filename="attachment.pdf"),
            ]
        await up.add_artifact(parts=parts, name="reply")
        await up.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        task_id = context.task_id or (task.id if task else "")
        context_id = context.context_id or (task.context_id if task else "")
        request = ""
        if task is not None:
            texts = [get_message_text(m) for m in task.history if m.role == Role.ROLE_USER]
            request = texts[0] if texts else ""
        up = TaskUpdater(event_queue=event_queue, task_id=task_id, context_id=context_id)
        await up.cancel(
            message=new_text_message(fill(TEXTS["canceled"], request=request), context_id=context_id, task_id=task_id)
        )


def build_card(args: argparse.Namespace, base: str) -> AgentCard:
    interface_url = args.interface_url or base + args.rpc_path
    return AgentCard(
        name=args.name,
        description="Deterministic A2A test peer (a2a-sdk 1.3) in mode " + args.mode,
        version="1.0.0",
        provider=AgentProvider(organization="Orrery interop tests", url="https://example.invalid/orrery"),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        capabilities=AgentCapabilities(streaming=True),
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", url=interface_url, protocol_version="1.0")],
        skills=[
            AgentSkill(
                id="draft",
                name="Draft",
                description="Drafts a short text from a request",
                tags=["writing"],
                examples=["Draft release notes for 1.2"],
                input_modes=["text/plain"],
                output_modes=["text/plain"],
            )
        ],
    )


def changed_card(card: AgentCard, kind: str, base: str) -> AgentCard:
    new = AgentCard()
    new.CopyFrom(card)
    if kind == "skills":
        new.skills.append(
            AgentSkill(id="publish", name="Publish", description="Publishes a draft", tags=["writing", "acting"])
        )
    elif kind == "interface":
        new.supported_interfaces[0].url = base + "/v2"
    elif kind == "security":
        new.security_schemes["bearer"].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        )
        new.security_requirements.append(SecurityRequirement(schemes={"bearer": StringList(list=[])}))
    elif kind == "description":
        new.description = card.description + " (changed)"
    elif kind == "examples":
        del new.skills[0].examples[:]
        new.skills[0].examples.append("Draft a changelog")
    return new


JWKS_PATH = "/.well-known/jwks.json"


def signing_key(alg: str) -> Any:
    """A fresh private key for `alg`, from `cryptography` (PyJWT's backend)."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if alg == "ES256":
        return ec.generate_private_key(ec.SECP256R1())
    if alg == "RS256":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ed25519.Ed25519PrivateKey.generate()


def public_jwk(key: Any, alg: str, kid: str) -> dict[str, Any]:
    """The public JWK of `key`, as PyJWT writes it, with its kid."""
    from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

    algorithm = {"ES256": ECAlgorithm, "RS256": RSAAlgorithm, "EdDSA": OKPAlgorithm}[alg]
    jwk = algorithm.to_jwk(key.public_key(), as_dict=True)
    jwk["kid"] = kid
    return jwk


def sign_card(card: AgentCard, args: argparse.Namespace, base: str) -> dict[str, Any]:
    """Signs `card` in place with a fresh key; the public key set."""
    from a2a.utils.signing import create_agent_card_signer

    key = signing_key(args.sign)
    header: dict[str, Any] = {"alg": args.sign, "kid": args.sign_kid, "typ": "JOSE"}
    if args.jku:
        header["jku"] = base + JWKS_PATH
    create_agent_card_signer(signing_key=key, protected_header=header)(card)
    return {"keys": [public_jwk(key, args.sign, args.sign_kid)]}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=MODES, default=os.environ.get("PEER_MODE", "echo"))
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "0")), help="0 = any free port (default)")
    p.add_argument("--name", default="py-peer")
    p.add_argument("--rpc-path", default="/", help="JSON-RPC path (default /)")
    p.add_argument("--interface-url", help="URL the card advertises instead of http://HOST:PORT/RPC-PATH")
    p.add_argument("--rounds", type=int, default=1, help="ask: questions before completing (default 1)")
    p.add_argument("--delay", type=float, default=30.0, help="slow: seconds before replying (default 30)")
    p.add_argument("--size", type=int, default=(1 << 20) + 4096, help="big-reply: reply bytes (default 1 MiB + 4 KiB)")
    p.add_argument("--card-change", choices=CARD_CHANGES, default="skills", help="card-changes: what changes")
    p.add_argument("--change-after", type=int, default=1, help="card-changes: card fetches served unchanged")
    p.add_argument("--require-bearer", metavar="TOKEN", help="RPC requests need 'Authorization: Bearer TOKEN'")
    p.add_argument("--request-log", metavar="FILE", help="append each request (headers, body) as a JSON line")
    p.add_argument("--exit-on-stdin-eof", action="store_true", help="stop when standard input closes")
    p.add_argument("--sign", choices=("ES256", "RS256", "EdDSA"), help="sign the card with a fresh key")
    p.add_argument("--sign-kid", default="peer-key-1", help="the signing key's kid")
    p.add_argument("--jwks-out", metavar="FILE", help="write the public key set here (with --sign)")
    p.add_argument("--jku", action="store_true", help="name the key set served at " + JWKS_PATH)
    p.add_argument("--tamper", action="store_true", help="serve the card changed after it was signed")
    args = p.parse_args(argv)
    if not args.rpc_path.startswith("/"):
        p.error("--rpc-path must start with /")
    return args


async def main(argv: list[str]) -> None:
    args = parse_args(argv)
    sock, base = bind(args.host, args.port)
    card_path = "/.well-known/agent-card.json"
    card = build_card(args, base)
    jwks = sign_card(card, args, base) if args.sign else None
    if jwks is not None and args.jwks_out:
        Path(args.jwks_out).write_text(json.dumps(jwks))
    fetches = 0

    async def card_modifier(served: AgentCard) -> AgentCard:
        nonlocal fetches
        fetches += 1
        if args.mode == "card-changes" and fetches > args.change_after:
            return changed_card(served, args.card_change, base)
        if args.tamper:
            return changed_card(served, "description", base)
        return served

    handler = DefaultRequestHandler(agent_executor=PeerExecutor(args), task_store=InMemoryTaskStore(), agent_card=card)
    routes = create_agent_card_routes(card, card_modifier=card_modifier)
    routes += create_jsonrpc_routes(handler, args.rpc_path)
    if args.mode == "card-changes" and args.card_change == "interface":
        routes += create_jsonrpc_routes(handler, "/v2")
    if jwks is not None:
        key_set = jwks

        async def serve_jwks(_request: Request) -> JSONResponse:
            return JSONResponse(key_set)

        routes.append(Route(JWKS_PATH, serve_jwks))
    app = Gate(
        Starlette(routes=routes), args.request_log, args.require_bearer, public_paths=(card_path, JWKS_PATH)
    )
    await serve(app, sock, base + card_path, exit_on_stdin_eof=args.exit_on_stdin_eof)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
