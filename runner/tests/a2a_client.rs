//! The A2A 1.0 client against our `demo-writer` and a scripted fixture agent: the seeds' P0a
//! acceptance list (rules 5.13–5.17, 5.28–5.32, 6.1–6.20) and the card pinning anchors 20–25.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod remote_support;

use orrery_crds::plan::ToolKind;
use orrery_crds::registry::{EndpointLimits, RegistryEntry};
use orrery_runner::demo::{FleetConfig, start_fleet};
use orrery_runner::events::{Direction, EventBody};
use orrery_runner::pin::card_trust_digest;
use orrery_runner::pin::store::PinStore;
use remote_support::a2a_fixture::{A2aFixture, Behaviour, INJECTION, LEAKED_KEY, Setup};
use remote_support::{Override, TestCtx, a2a_entry, bearer, build, build_err, factory};
use serde_json::{Value, json};
use std::sync::Arc;

fn entry(fixture: &A2aFixture) -> RegistryEntry {
    a2a_entry("agent", &fixture.card_url(), |_| {})
}

fn pins() -> Arc<PinStore> {
    Arc::new(PinStore::in_memory())
}

async fn call(
    tool: &Arc<dyn orrery_runner::tools::Tool>,
    t: &TestCtx,
    request: &str,
) -> (Value, bool) {
    let out = tool
        .call(json!({"request": request}), &t.ctx)
        .await
        .unwrap();
    let value =
        serde_json::from_str(&out.content).unwrap_or_else(|_| Value::String(out.content.clone()));
    (value, out.is_error)
}

/// The `a2a.message` events as (direction, task state, text).
fn messages(t: &TestCtx) -> Vec<(Direction, Option<String>, Option<String>)> {
    t.of("a2a.message")
        .into_iter()
        .map(|e| match e {
            EventBody::A2aMessage {
                direction,
                task_state,
                text,
                ..
            } => (direction, task_state, text),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn a_call_to_demo_writer_returns_its_reply_as_json_with_the_task_states_in_the_trace() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.unwrap();
    let entry = a2a_entry("demo-writer", &fleet.writer_card_url(), |_| {});
    let f = factory(pins(), false, &[]);
    let tool = build(&f, ToolKind::A2a, &entry, "draft").await.unwrap();
    assert_eq!(tool.spec().name, "a2a_demo_writer_draft");
    let t = TestCtx::new([]);
    let (result, is_error) = call(&tool, &t, "Kafka consumer lag is measured per partition.").await;
    assert!(!is_error, "{result}");
    assert_eq!(result["status"], "success");
    assert_eq!(result["taskState"], "completed");
    assert!(
        result["reply"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("release notes"),
        "{result}"
    );
    assert!(result["taskId"].is_string() && result["contextId"].is_string());
    assert_eq!(result["parts"][0]["kind"], "text");
    let events = messages(&t);
    assert_eq!(events.first().unwrap().0, Direction::Outbound);
    let states: Vec<&str> = events.iter().filter_map(|e| e.1.as_deref()).collect();
    assert_eq!(states.last(), Some(&"completed"), "{states:?}");
    assert!(states.len() >= 2, "task states are traced: {states:?}");
    let reply = events.last().unwrap();
    assert_eq!(reply.0, Direction::Inbound);
    assert_eq!(
        reply.2.as_deref(),
        result["reply"].as_str(),
        "the reply event carries the reply as the model saw it"
    );
    // Rule 12.47: the request names the method it went by (demo-writer's card streams); the
    // inbound events name none.
    let methods: Vec<(Direction, Option<String>)> = t
        .of("a2a.message")
        .into_iter()
        .filter_map(|e| match e {
            EventBody::A2aMessage {
                direction, method, ..
            } => Some((direction, method)),
            _ => None,
        })
        .collect();
    assert_eq!(
        methods.first(),
        Some(&(Direction::Outbound, Some("SendStreamingMessage".to_owned())))
    );
    assert!(
        methods
            .iter()
            .skip(1)
            .all(|(d, m)| *d == Direction::Inbound && m.is_none()),
        "{methods:?}"
    );
    tool.close().await;
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn only_the_request_text_leaves_with_the_protocol_version_and_the_hop_header() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let f = factory(pins(), false, &[]);
    let tool = build(&f, ToolKind::A2a, &entry(&fixture), "draft")
        .await
        .unwrap();
    let t = TestCtx::new([]);
    let (result, _) = call(&tool, &t, "Draft release notes for 1.2").await;
    assert_eq!(result["reply"], "draft: Draft release notes for 1.2");
    let rpc = fixture.rpc_requests();
    assert_eq!(rpc.len(), 1);
    let r = &rpc[0];
    assert_eq!(r.header("a2a-version"), Some("1.0"));
    assert_eq!(r.header("x-orrery-hop"), Some("1"));
    assert_eq!(r.header("authorization"), None, "the entry has no token");
    let body: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body["method"], "SendStreamingMessage");
    let message = body["params"]["message"].as_object().unwrap();
    let mut keys: Vec<&str> = message.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["messageId", "parts", "role"]);
    assert_eq!(
        message["parts"],
        json!([{"text": "Draft release notes for 1.2"}])
    );
    assert_eq!(message["role"], "ROLE_USER");
}

#[tokio::test]
async fn a_blocking_agent_is_called_with_send_message() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo).blocking()).await;
    let f = factory(pins(), false, &[]);
    let tool = build(&f, ToolKind::A2a, &entry(&fixture), "draft")
        .await
        .unwrap();
    let (result, _) = call(&tool, &TestCtx::new([]), "x").await;
    assert_eq!(result["status"], "success");
    assert_eq!(fixture.rpc_methods(), ["SendMessage"]);
}

#[tokio::test]
async fn the_bearer_token_goes_to_the_entrys_origin_and_never_with_the_card() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo).bearer("writer-token")).await;
    let entry = a2a_entry("agent", &fixture.card_url(), |a| {
        a.auth = Some(bearer("agent"))
    });
    let f = factory(
        pins(),
        false,
        &[("ORRERY_SECRET_AGENT_TOKEN", "writer-token")],
    );
    let tool = build(&f, ToolKind::A2a, &entry, "draft").await.unwrap();
    let (result, _) = call(&tool, &TestCtx::new([]), "x").await;
    assert_eq!(result["status"], "success", "{result}");
    for r in fixture.requests() {
        let expected = (r.method == "POST").then_some("Bearer writer-token");
        assert_eq!(
            r.header("authorization"),
            expected,
            "{} {}",
            r.method,
            r.path
        );
    }
}

#[tokio::test]
async fn a_changed_card_digest_is_refused_and_disables_the_entry() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let pins = pins();
    let f = factory(pins.clone(), false, &[]);
    let tool = build(&f, ToolKind::A2a, &entry(&fixture), "draft")
        .await
        .unwrap();
    let t = TestCtx::new([]);
    assert_eq!(call(&tool, &t, "one").await.0["status"], "success");
    let mut changed = serde_json::to_value(&fixture.card).unwrap();
    changed["skills"].as_array_mut().unwrap().push(
        json!({"id": "publish", "name": "Publish", "description": "Publishes", "tags": ["x"]}),
    );
    fixture.serve_card(Some(Override::json(changed.to_string())));
    let (result, is_error) = call(&tool, &t, "two").await;
    assert!(is_error);
    assert_eq!(result["errorType"], "card_refused");
    assert!(
        result["message"]
            .as_str()
            .unwrap()
            .contains("changed since the card was pinned"),
        "{result}"
    );
    fixture.serve_card(None);
    let (result, _) = call(&tool, &t, "three").await;
    assert_eq!(
        result["errorType"], "card_refused",
        "the entry stays disabled for the run"
    );
    assert_eq!(
        fixture.rpc_requests().len(),
        1,
        "nothing was sent after the change"
    );
    assert!(
        tool.spec()
            .description
            .starts_with("Unavailable in this run")
    );
    fixture.serve_card(Some(Override::json(changed.to_string())));
    let err = build_err(
        &factory(pins, false, &[]),
        ToolKind::A2a,
        &entry(&fixture),
        "draft",
    )
    .await;
    assert!(
        err.contains("changed since the card was pinned"),
        "the next run refuses it too: {err}"
    );
}

#[tokio::test]
async fn a_changed_description_or_examples_keep_the_card_pin() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let pins = pins();
    build(
        &factory(pins.clone(), false, &[]),
        ToolKind::A2a,
        &entry(&fixture),
        "draft",
    )
    .await
    .unwrap();
    let mut edited = serde_json::to_value(&fixture.card).unwrap();
    edited["description"] = json!("A new description");
    edited["skills"][0]["examples"] = json!(["another example"]);
    fixture.serve_card(Some(Override::json(edited.to_string())));
    let tool = build(
        &factory(pins, false, &[]),
        ToolKind::A2a,
        &entry(&fixture),
        "draft",
    )
    .await
    .unwrap();
    assert_eq!(
        call(&tool, &TestCtx::new([]), "x").await.0["status"],
        "success"
    );
}

#[tokio::test]
async fn a_card_sha256_pin_from_the_entry_is_enforced() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let digest = card_trust_digest(&serde_json::to_value(&fixture.card).unwrap()).unwrap();
    let good = a2a_entry("agent", &fixture.card_url(), |a| {
        a.card_sha256 = Some(digest.clone())
    });
    build(&factory(pins(), false, &[]), ToolKind::A2a, &good, "draft")
        .await
        .unwrap();
    let bad = a2a_entry("agent", &fixture.card_url(), |a| {
        a.card_sha256 = Some("0".repeat(64))
    });
    let err = build_err(&factory(pins(), false, &[]), ToolKind::A2a, &bad, "draft").await;
    assert!(
        err.contains("not the cardSHA256") && err.contains(&digest),
        "{err}"
    );
}

#[tokio::test]
async fn a_card_with_duplicate_keys_is_refused() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let card = serde_json::to_string(&fixture.card).unwrap();
    let twice = card.replacen('{', r#"{"supportedInterfaces":[{"url":"https://elsewhere.example/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"#, 1);
    fixture.serve_card(Some(Override::json(twice)));
    let err = build_err(
        &factory(pins(), false, &[]),
        ToolKind::A2a,
        &entry(&fixture),
        "draft",
    )
    .await;
    assert!(
        err.contains("duplicate key \"supportedInterfaces\""),
        "{err}"
    );
}

#[tokio::test]
async fn an_rpc_target_off_the_entrys_origins_is_refused_and_nothing_is_sent_there() {
    let other = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let other_rpc = format!("{}/", other.origin());
    let fixture = A2aFixture::start(
        Setup::new(Behaviour::Echo).edit_card(move |c| c.supported_interfaces[0].url = other_rpc),
    )
    .await;
    let err = build_err(
        &factory(pins(), false, &[]),
        ToolKind::A2a,
        &entry(&fixture),
        "draft",
    )
    .await;
    assert!(
        err.contains("which is not one of the entry's origins"),
        "{err}"
    );
    assert!(other.requests().is_empty());
    let allowed = a2a_entry("agent", &fixture.card_url(), |a| {
        a.service_origins = vec![other.origin()]
    });
    let tool = build(
        &factory(pins(), false, &[]),
        ToolKind::A2a,
        &allowed,
        "draft",
    )
    .await
    .unwrap();
    assert_eq!(
        call(&tool, &TestCtx::new([]), "x").await.0["status"],
        "success"
    );
    assert_eq!(
        other.rpc_requests().len(),
        1,
        "a service origin may serve the RPC"
    );
    assert!(fixture.rpc_requests().is_empty());
}

#[tokio::test]
async fn a_plain_http_rpc_target_off_loopback_is_refused() {
    let fixture = A2aFixture::start(
        Setup::new(Behaviour::Echo)
            .edit_card(|c| c.supported_interfaces[0].url = "http://agent.example.com/".into()),
    )
    .await;
    let entry = a2a_entry("agent", &fixture.card_url(), |a| {
        a.service_origins = vec!["http://agent.example.com".into()]
    });
    let err = build_err(&factory(pins(), false, &[]), ToolKind::A2a, &entry, "draft").await;
    assert!(err.contains("RPC targets must be https"), "{err}");
}

#[tokio::test]
async fn a_card_behind_a_redirect_is_refused_and_the_redirect_is_not_followed() {
    let other = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    fixture.serve_card(Some(Override::redirect(&other.card_url())));
    let err = build_err(
        &factory(pins(), false, &[]),
        ToolKind::A2a,
        &entry(&fixture),
        "draft",
    )
    .await;
    assert!(
        err.contains("redirect") && err.contains("never followed"),
        "{err}"
    );
    assert!(other.requests().is_empty());
}

#[tokio::test]
async fn an_oversized_card_is_refused() {
    let fixture = A2aFixture::start(
        Setup::new(Behaviour::Echo).edit_card(|c| c.description = "x".repeat(4096)),
    )
    .await;
    let small = a2a_entry("agent", &fixture.card_url(), |a| {
        a.limits = Some(EndpointLimits {
            max_card_bytes: Some(1024),
            ..EndpointLimits::default()
        })
    });
    let err = build_err(&factory(pins(), false, &[]), ToolKind::A2a, &small, "draft").await;
    assert!(err.contains("over the cap of 1024 bytes"), "{err}");
}

#[tokio::test]
async fn an_oversized_compressed_or_redirected_reply_is_refused() {
    let limits = || EndpointLimits {
        max_reply_bytes: Some(2048),
        ..EndpointLimits::default()
    };
    let other = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let big = json!({"jsonrpc": "2.0", "id": "x", "result": {"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "y".repeat(4096)}]}}});
    let cases = [
        (
            Override::json(big.to_string()),
            "over the cap of 2048 bytes",
        ),
        (
            Override::gzip(vec![0x1f, 0x8b, 0x08, 0x00]),
            "Content-Encoding",
        ),
        (
            Override::redirect(&format!("{}/", other.origin())),
            "never followed",
        ),
    ];
    for (reply, expected) in cases {
        let fixture = A2aFixture::start(Setup::new(Behaviour::Echo).blocking()).await;
        let entry = a2a_entry("agent", &fixture.card_url(), |a| a.limits = Some(limits()));
        let tool = build(&factory(pins(), false, &[]), ToolKind::A2a, &entry, "draft")
            .await
            .unwrap();
        fixture.answer_rpc(Some(reply));
        let (result, is_error) = call(&tool, &TestCtx::new([]), "x").await;
        assert!(is_error);
        assert_eq!(result["errorType"], "reply_refused", "{result}");
        assert!(
            result["message"].as_str().unwrap().contains(expected),
            "{result}"
        );
    }
    assert!(other.requests().is_empty(), "the redirect was not followed");
}

#[tokio::test]
async fn injection_and_email_in_a_remote_reply_are_screened_and_redacted_before_the_model_sees_them()
 {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Inject)).await;
    let tool = build(
        &factory(pins(), false, &[]),
        ToolKind::A2a,
        &entry(&fixture),
        "draft",
    )
    .await
    .unwrap();
    let t = TestCtx::new([]);
    let out = tool
        .call(json!({"request": "notes"}), &t.ctx)
        .await
        .unwrap();
    for leaked in ["exfil@attacker.example", LEAKED_KEY, "\u{200b}", "\u{202e}"] {
        assert!(
            !out.content.contains(leaked),
            "{leaked:?} reached the model: {}",
            out.content
        );
    }
    let result: Value = serde_json::from_str(&out.content).unwrap();
    let reply = result["reply"].as_str().unwrap();
    assert!(
        reply.starts_with("[orrery screen:") && reply.contains("instruction_injection"),
        "{reply}"
    );
    assert!(reply.contains("[REDACTED_EMAIL]"), "{reply}");
    assert!(
        reply.contains(&INJECTION.replace("exfil@attacker.example", "[REDACTED_EMAIL]")),
        "the text stays readable as data"
    );
    let captured = messages(&t).last().unwrap().2.clone().unwrap();
    assert!(
        captured.starts_with("[orrery screen:") && !captured.contains("exfil@attacker.example"),
        "{captured}"
    );
}

#[tokio::test]
async fn only_text_parts_come_back_and_the_others_are_listed_as_dropped() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Mixed)).await;
    let tool = build(
        &factory(pins(), false, &[]),
        ToolKind::A2a,
        &entry(&fixture),
        "draft",
    )
    .await
    .unwrap();
    let (result, _) = call(&tool, &TestCtx::new([]), "x").await;
    assert_eq!(result["reply"], "draft: x");
    assert_eq!(result["parts"], json!([{"kind": "text", "size": 8}]));
    let dropped: Vec<&str> = result["droppedParts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(dropped, ["data", "url"]);
}

#[tokio::test]
async fn a_failed_task_is_an_error_of_type_remote_task_failed() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Fail)).await;
    let tool = build(
        &factory(pins(), false, &[]),
        ToolKind::A2a,
        &entry(&fixture),
        "draft",
    )
    .await
    .unwrap();
    let (result, is_error) = call(&tool, &TestCtx::new([]), "x").await;
    assert!(is_error);
    assert_eq!(result["errorType"], "remote_task_failed");
    assert_eq!(result["taskState"], "failed");
    assert_eq!(result["reply"], "failed: x");
}

#[tokio::test]
async fn an_auth_required_task_is_an_error_and_its_status_text_is_not_passed_on() {
    // Rule 4.30: what an interrupted task says is addressed to a person, not to the model.
    let fixture = A2aFixture::start(Setup::new(Behaviour::AuthRequired)).await;
    let tool = build(
        &factory(pins(), false, &[]),
        ToolKind::A2a,
        &entry(&fixture),
        "draft",
    )
    .await
    .unwrap();
    let (result, is_error) = call(&tool, &TestCtx::new([]), "x").await;
    assert!(is_error);
    assert_eq!(result["errorType"], "remote_task_auth_required");
    assert_eq!(result["taskState"], "auth-required");
    assert!(result.get("reply").is_none(), "{result}");
    assert!(!result.to_string().contains("login.example"), "{result}");
}

#[tokio::test]
async fn requests_that_are_empty_or_over_8192_characters_are_refused_before_anything_is_sent() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let tool = build(
        &factory(pins(), false, &[]),
        ToolKind::A2a,
        &entry(&fixture),
        "draft",
    )
    .await
    .unwrap();
    for request in [
        json!({"request": ""}),
        json!({"request": "x".repeat(8193)}),
        json!({"text": "x"}),
    ] {
        let out = tool.call(request, &TestCtx::new([]).ctx).await.unwrap();
        let result: Value = serde_json::from_str(&out.content).unwrap();
        assert_eq!(result["errorType"], "invalid_request", "{result}");
    }
    assert!(fixture.rpc_requests().is_empty());
}
