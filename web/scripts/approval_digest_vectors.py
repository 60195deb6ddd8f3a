#!/usr/bin/env python3
"""Test vectors for src/api/digest.test.ts: the approval digest of crds/src/relay.rs
(`orrery_crds::relay::approval_digest`) recomputed with hashlib, byte layout for byte layout:
SHA-256 over b"orrery-approval-v1\\n", then for each of run UID, approval id and text its UTF-8
length as a big-endian u64 followed by its UTF-8 bytes; lowercase hex.

FROM_RUST holds digests the Rust function itself produced: each is the `digest` of the
`approval.requested` event of a local run (`orrery run --output json --capture-content
--approval-timeout 1`, a HumanApproval node as the first node, the text given as the run's
input), with that event's `runId` and `approvalId`. This script checks its own function against
them before it prints anything, so the vectors it computes follow the same layout.

    python3 web/scripts/approval_digest_vectors.py    # prints the vectors as JSON
"""
import hashlib
import json
import struct


def approval_digest(run_uid: str, approval_id: str, text: str) -> str:
    h = hashlib.sha256(b"orrery-approval-v1\n")
    for part in (run_uid, approval_id, text):
        data = part.encode("utf-8")
        h.update(struct.pack(">Q", len(data)))
        h.update(data)
    return h.hexdigest()


# (run UID, approval id, text, digest) as the Rust implementation produced them.
FROM_RUST = [
    (
        "77997b07-2712-4ac0-ad7b-e885d7b83d03",
        "approval-1",
        "Caf\u00e9 \u202e\u001b[31mred\u001b[0m \u65e5\u672c \U0001f680\nline2",
        "12fed14a1725ea311390d8e5e4ddd2d0797c7996401b99d60ede470e40698e3a",
    ),
    (
        "ea4546b7-5027-4612-9c7c-d7a3c78e474f",
        "approval-1",
        "",
        "a7141bbfb9bb8aa04014bb5d3f7adcda31d05a03c9ba273fe6f19d5cc9245243",
    ),
    (
        "153366fd-9ba0-45fd-8268-cc8bed766b02",
        "approval-1",
        "ship it",
        "a49940dd0ef5b33fd9838371789aa73e766e01cf6d726f5e88004befb3fdc0b7",
    ),
    (
        "4374fcfa-c55d-439b-abf5-691fc8194a33",
        "approval-1",
        "tab\there\r\nzero\u200bwidth \u202eevil\u202c end\n",
        "05ad70fdb29bf37e1b018d2fd5ff5ba9424541bb1d903b14e1c0cb39c8023cf2",
    ),
]

# Further inputs: a moved field boundary, lengths past one and two bytes, NUL, non-ASCII ids.
COMPUTED = [
    ("uid-1", "approval-1", "ship it"),
    ("uid-1a", "pproval-1", "ship it"),
    ("uid-1", "approval-1", "\u001b[31m"),
    ("uid-1", "approval-1", "\u202e"),
    ("uid-1", "approval-1", "nul\u0000byte"),
    ("r\u00e9sum\u00e9-run", "approval-\u00e9", "\U0001f680"),
    ("uid-1", "approval-1", "ab" * 150),
    ("uid-1", "approval-1", "\u00e9" * 40000),
]


def main() -> None:
    for uid, aid, text, digest in FROM_RUST:
        got = approval_digest(uid, aid, text)
        assert got == digest, f"hashlib gives {got}, the Rust implementation {digest}"
    vectors = [
        {"runUid": uid, "approvalId": aid, "text": text, "digest": digest, "from": "rust"}
        for uid, aid, text, digest in FROM_RUST
    ] + [
        {"runUid": uid, "approvalId": aid, "text": text, "digest": approval_digest(uid, aid, text), "from": "hashlib"}
        for uid, aid, text in COMPUTED
    ]
    for v in vectors:
        if len(v["text"]) > 100:  # print long texts by their recipe, not in full
            v["text"] = f"<{len(v['text'].encode('utf-8'))} bytes>"
    print(json.dumps(vectors, indent=1))


if __name__ == "__main__":
    main()
