//! Our A2A client against agents nobody here wrote: a PyPI `a2a-sdk` 1.3 agent and an npm
//! `@a2a-js/sdk` 1.3 agent (tests/peers), each test run against both.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod interop_support;

use interop_support::{Ctx, Peer, PeerKind, a2a_entry, bearer, build, call, factory, peers_dir};
use orrery_crds::plan::ToolKind;
use orrery_runner::approval::ScriptedDecision;
use orrery_runner::pinstore::PinStore;
use orrery_runner::tools::ToolError;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const SDKS: [PeerKind; 2] = [PeerKind::PyA2a, PeerKind::JsA2a];

fn pins() -> Arc<PinStore> {
    Arc::new(PinStore::in_memory())
}

async fn draft(peer: &Peer) -> Arc<dyn orrery_runner::tools::Tool> {
    build(
        &factory(pins(), &[]),
        ToolKind::A2a,
        &a2a_entry("peer", &peer.url, |_| {}),
        "draft",
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn echo_agents_answer_and_see_only_the_request_text_with_our_headers() {
    let dir = peers_dir();
    for sdk in SDKS {
        let peer = Peer::start(&dir, sdk, &["--mode", "echo"]).await;
        let tool = draft(&peer).await;
        let ctx = Ctx::new([]);
        let (result, is_error) = call(
            &tool,
            &ctx,
            json!({"request": "Draft release notes for 1.2"}),
        )
        .await;
        assert!(!is_error, "{sdk:?}: {result}");
        assert_eq!(result["status"], "success");
        assert_eq!(
            result["reply"], "draft: Draft release notes for 1.2",
            "{sdk:?}"
        );
        assert_eq!(result["taskState"], "completed");
        let posts: Vec<_> = peer
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST")
            .collect();
        assert_eq!(posts.len(), 1, "{sdk:?}");
        assert_eq!(
            posts[0].headers.get("a2a-version").map(String::as_str),
            Some("1.0")
        );
        assert_eq!(
            posts[0].headers.get("x-orrery-hop").map(String::as_str),
            Some("1")
        );
        let body: Value = serde_json::from_str(&posts[0].body).unwrap();
        assert_eq!(
            body["params"]["message"]["parts"],
            json!([{"text": "Draft release notes for 1.2"}])
        );
    }
}

#[tokio::test]
async fn a_question_goes_to_a_person_and_the_answer_continues_the_task() {
    let dir = peers_dir();
    for sdk in SDKS {
        let peer = Peer::start(&dir, sdk, &["--mode", "ask", "--rounds", "2"]).await;
        let tool = draft(&peer).await;
        let ctx = Ctx::new([
            ScriptedDecision::Answer("developers".into()),
            ScriptedDecision::Answer("operators".into()),
        ]);
        let (result, _) = call(&tool, &ctx, json!({"request": "notes"})).await;
        assert_eq!(result["status"], "success", "{sdk:?}: {result}");
        assert_eq!(
            result["reply"], "draft: notes (answer: developers; operators)",
            "{sdk:?}"
        );
        let questions: Vec<String> = ctx
            .decisions
            .requests()
            .into_iter()
            .map(|r| r.text)
            .collect();
        assert_eq!(
            questions,
            [
                "question 1/2: who is the audience for this draft?",
                "question 2/2: who is the audience for this draft?"
            ],
            "{sdk:?}"
        );
    }
}

#[tokio::test]
async fn a_changed_trust_field_is_refused_and_a_changed_description_is_not() {
    let dir = peers_dir();
    for sdk in SDKS {
        for (change, refused) in [
            ("skills", true),
            ("interface", true),
            ("security", true),
            ("description", false),
            ("examples", false),
        ] {
            let peer = Peer::start(
                &dir,
                sdk,
                &[
                    "--mode",
                    "card-changes",
                    "--card-change",
                    change,
                    "--change-after",
                    "1",
                ],
            )
            .await;
            let tool = draft(&peer).await;
            let ctx = Ctx::new([]);
            let (result, _) = call(&tool, &ctx, json!({"request": "x"})).await;
            if refused {
                assert_eq!(
                    result["errorType"], "card_refused",
                    "{sdk:?} {change}: {result}"
                );
                // The log must show the card fetches first, or "no RPC" would hold of a log
                // that recorded nothing at all.
                let cards = peer
                    .requests()
                    .iter()
                    .filter(|r| r.method == "GET" && r.path.ends_with("agent-card.json"))
                    .count();
                assert!(
                    cards >= 2,
                    "{sdk:?} {change}: the pinning fetch and the changed card were logged ({cards})"
                );
                assert!(
                    peer.rpc_methods().is_empty(),
                    "{sdk:?} {change}: nothing was sent"
                );
            } else {
                assert_eq!(result["status"], "success", "{sdk:?} {change}: {result}");
            }
        }
    }
}

#[tokio::test]
async fn an_injection_and_secrets_in_a_reply_are_screened_and_redacted() {
    let dir = peers_dir();
    let texts: Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/texts.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for sdk in SDKS {
        let peer = Peer::start(&dir, sdk, &["--mode", "inject"]).await;
        let tool = draft(&peer).await;
        let out = tool
            .call(json!({"request": "x"}), &Ctx::new([]).ctx)
            .await
            .unwrap();
        for (what, marker) in texts["inject_markers"].as_object().unwrap() {
            let marker = marker.as_str().unwrap();
            if what == "phrase" {
                continue;
            }
            assert!(
                !out.content.contains(marker),
                "{sdk:?}: {what} reached the model: {}",
                out.content
            );
        }
        let result: Value = serde_json::from_str(&out.content).unwrap();
        assert!(
            result["reply"]
                .as_str()
                .unwrap()
                .starts_with("[orrery screen:"),
            "{sdk:?}: {result}"
        );
    }
}

#[tokio::test]
async fn only_text_parts_come_back() {
    let dir = peers_dir();
    for sdk in SDKS {
        let peer = Peer::start(&dir, sdk, &["--mode", "mixed-parts"]).await;
        let (result, _) = call(&draft(&peer).await, &Ctx::new([]), json!({"request": "x"})).await;
        assert_eq!(result["reply"], "draft: x", "{sdk:?}: {result}");
        let dropped: Vec<&str> = result["droppedParts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["kind"].as_str().unwrap())
            .collect();
        assert_eq!(dropped, ["data", "url"], "{sdk:?}");
    }
}

#[tokio::test]
async fn a_failed_task_and_an_oversized_reply_are_errors_with_their_types() {
    let dir = peers_dir();
    for sdk in SDKS {
        let peer = Peer::start(&dir, sdk, &["--mode", "fail"]).await;
        let (result, _) = call(&draft(&peer).await, &Ctx::new([]), json!({"request": "x"})).await;
        assert_eq!(
            result["errorType"], "remote_task_failed",
            "{sdk:?}: {result}"
        );
        assert_eq!(result["reply"], "failed: x");
        let peer = Peer::start(&dir, sdk, &["--mode", "big-reply"]).await;
        let (result, _) = call(&draft(&peer).await, &Ctx::new([]), json!({"request": "x"})).await;
        assert_eq!(result["errorType"], "reply_refused", "{sdk:?}: {result}");
    }
}

#[tokio::test]
async fn the_bearer_token_is_sent_to_the_agent_and_an_off_origin_interface_is_refused() {
    let dir = peers_dir();
    for sdk in SDKS {
        let peer = Peer::start(
            &dir,
            sdk,
            &["--mode", "echo", "--require-bearer", "peer-token"],
        )
        .await;
        let entry = a2a_entry("peer", &peer.url, |a| a.auth = Some(bearer("peer")));
        let f = factory(pins(), &[("ORRERY_SECRET_PEER_TOKEN", "peer-token")]);
        let tool = build(&f, ToolKind::A2a, &entry, "draft").await.unwrap();
        let (result, _) = call(&tool, &Ctx::new([]), json!({"request": "x"})).await;
        assert_eq!(result["status"], "success", "{sdk:?}: {result}");
        let peer = Peer::start(
            &dir,
            sdk,
            &[
                "--mode",
                "echo",
                "--interface-url",
                "https://elsewhere.example/a2a",
            ],
        )
        .await;
        let err = build(
            &factory(pins(), &[]),
            ToolKind::A2a,
            &a2a_entry("peer", &peer.url, |_| {}),
            "draft",
        )
        .await
        .err()
        .unwrap();
        assert!(
            err.contains("not one of the entry's origins"),
            "{sdk:?}: {err}"
        );
    }
}

#[tokio::test]
async fn a_cancelled_call_cancels_the_remote_task() {
    let dir = peers_dir();
    for sdk in SDKS {
        let peer = Peer::start(&dir, sdk, &["--mode", "slow", "--delay", "30"]).await;
        let tool = draft(&peer).await;
        let ctx = Ctx::new([]);
        let cancel = ctx.ctx.cancel.clone();
        let inner = ctx.ctx.clone();
        let running = {
            let tool = tool.clone();
            tokio::spawn(async move { tool.call(json!({"request": "slow one"}), &inner).await })
        };
        for _ in 0..250 {
            if ctx
                .sink
                .events()
                .iter()
                .filter(|e| e.kind() == "a2a.message")
                .count()
                >= 2
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cancel.cancel();
        let result = tokio::time::timeout(Duration::from_secs(10), running)
            .await
            .unwrap()
            .unwrap();
        assert!(
            matches!(result, Err(ToolError::Cancelled)),
            "{sdk:?}: {result:?}"
        );
        tool.close().await;
        assert!(
            peer.rpc_methods().contains(&"CancelTask".to_owned()),
            "{sdk:?}: {:?}",
            peer.rpc_methods()
        );
    }
}

/// A key set file for a peer to write its public key to.
fn jwks_path(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "orrery-interop-jwks-{}-{tag}.json",
        std::process::id()
    ))
}

/// Starts a py-a2a peer that signs its card with `alg` (the SDK's own signer, PyJWT), plus
/// `extra` arguments; the peer and its public key set as JSON text.
async fn signed_peer(alg: &str, tag: &str, extra: &[&str]) -> (Peer, String) {
    let path = jwks_path(tag);
    let file = path.to_str().unwrap().to_owned();
    let mut args = vec!["--mode", "echo", "--sign", alg, "--jwks-out", &file];
    args.extend_from_slice(extra);
    let peer = Peer::start(&peers_dir(), PeerKind::PyA2a, &args).await;
    let jwks = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    (peer, jwks)
}

fn signed(
    jwks: Option<&str>,
    allow_jku: bool,
) -> impl FnOnce(&mut orrery_crds::registry::A2aEntry) {
    let jwks = jwks.map(str::to_owned);
    move |a| {
        a.card_signature = Some(orrery_crds::registry::CardSignature {
            jwks,
            allow_jku,
            ..Default::default()
        });
    }
}

async fn build_signed(
    peer: &Peer,
    edit: impl FnOnce(&mut orrery_crds::registry::A2aEntry),
) -> Result<Arc<dyn orrery_runner::tools::Tool>, String> {
    build(
        &factory(pins(), &[]),
        ToolKind::A2a,
        &a2a_entry("peer", &peer.url, edit),
        "draft",
    )
    .await
}

/// Issue 27 §1, anchor 25: a card the A2A SDK signed verifies with each algorithm, and the
/// agent is called; the same card changed after signing is refused before anything is sent.
#[tokio::test]
async fn cards_the_python_sdk_signed_verify_with_each_algorithm_and_a_changed_one_is_refused() {
    for alg in ["ES256", "RS256", "EdDSA"] {
        let (peer, jwks) = signed_peer(alg, alg, &[]).await;
        let tool = build_signed(&peer, signed(Some(&jwks), false))
            .await
            .unwrap();
        let (result, _) = call(&tool, &Ctx::new([]), json!({"request": "x"})).await;
        assert_eq!(result["status"], "success", "{alg}: {result}");

        let (tampered, jwks) = signed_peer(alg, &format!("{alg}-t"), &["--tamper"]).await;
        let err = build_signed(&tampered, signed(Some(&jwks), false))
            .await
            .err()
            .unwrap();
        assert!(
            err.contains("by trusted key \"peer-key-1\"")
                && err.contains("does not match the card"),
            "{alg}: {err}"
        );
        assert!(tampered.rpc_methods().is_empty(), "{alg}: nothing was sent");
    }
}

/// Anchor 25: a key nobody trusts, a card without a signature where one is required, and a
/// key past its `exp` are each refused, naming why; without `cardSignature` the same unsigned
/// card is used as before.
#[tokio::test]
async fn an_unknown_key_a_missing_signature_and_an_expired_key_are_refused() {
    let (peer, _) = signed_peer("ES256", "unknown", &[]).await;
    let (_, other_jwks) = signed_peer("ES256", "other", &[]).await;
    let other_jwks = other_jwks.replace("peer-key-1", "partner-key");
    let err = build_signed(&peer, signed(Some(&other_jwks), false))
        .await
        .err()
        .unwrap();
    assert!(
        err.contains("key \"peer-key-1\", which is not trusted (trusted: \"partner-key\")"),
        "{err}"
    );

    let (peer, jwks) = signed_peer("EdDSA", "expired", &[]).await;
    let mut set: Value = serde_json::from_str(&jwks).unwrap();
    set["keys"][0]["exp"] = json!(1_600_000_000);
    let err = build_signed(&peer, signed(Some(&set.to_string()), false))
        .await
        .err()
        .unwrap();
    assert!(err.contains("expired at 1600000000"), "{err}");

    let unsigned = Peer::start(&peers_dir(), PeerKind::PyA2a, &["--mode", "echo"]).await;
    let (_, jwks) = signed_peer("ES256", "unsigned", &[]).await;
    let err = build_signed(&unsigned, signed(Some(&jwks), false))
        .await
        .err()
        .unwrap();
    assert!(err.contains("carries no signature"), "{err}");
    assert!(
        build_signed(&unsigned, |_| {}).await.is_ok(),
        "no cardSignature, no check"
    );
}

/// Anchor 25: a signature's `jku` is fetched only when the entry allows it, on the card's own
/// origin, through the guard; then its keys vouch for the card.
#[tokio::test]
async fn a_key_set_named_by_jku_on_the_cards_origin_vouches_only_when_the_entry_allows_it() {
    let (peer, _) = signed_peer("RS256", "jku", &["--jku"]).await;
    let tool = build_signed(&peer, signed(None, true)).await.unwrap();
    let (result, _) = call(&tool, &Ctx::new([]), json!({"request": "x"})).await;
    assert_eq!(result["status"], "success", "{result}");
    assert!(
        peer.requests()
            .iter()
            .any(|r| r.method == "GET" && r.path == "/.well-known/jwks.json"),
        "the key set was fetched from the card's origin"
    );

    let (peer, _) = signed_peer("RS256", "no-jku", &["--jku"]).await;
    let err = build_signed(&peer, signed(Some(r#"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#), false))
        .await
        .err()
        .unwrap();
    assert!(err.contains("not trusted"), "{err}");
    assert!(
        !peer
            .requests()
            .iter()
            .any(|r| r.path.ends_with("jwks.json")),
        "a jku is not fetched unless the entry allows it"
    );
}
