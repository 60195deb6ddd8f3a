//! `demo-writer` over HTTP with reqwest: the card, SendMessage, streaming, and the 1.0 errors the
//! official SDK clients check.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use demo_support::{http, rpc, sse_events, user_message};
use orrery_runner::a2a::types::{AgentCard, BINDING_JSONRPC, SendMessageResponse, TaskState};
use orrery_runner::demo::writer::draft;
use orrery_runner::demo::{Fleet, FleetConfig, start_fleet};
use serde_json::{Value, json};

#[tokio::test]
async fn the_card_is_a_1_0_card_pointing_at_the_json_rpc_endpoint_with_an_etag() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.unwrap();
    let client = http();
    let resp = client.get(fleet.writer_card_url()).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let etag = resp.headers()["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with("W/\""), "{etag}");
    let raw: Value = resp.json().await.unwrap();
    for legacy in ["url", "preferredTransport", "protocolVersion", "kind"] {
        assert!(
            raw.get(legacy).is_none(),
            "a 1.0 card has no top-level {legacy}"
        );
    }
    let card: AgentCard = serde_json::from_value(raw).unwrap();
    assert!(card.missing_required_fields().is_empty());
    assert_eq!(card.name, "demo-writer");
    assert_eq!(card.capabilities.streaming, Some(true));
    let iface = card.preferred_interface(BINDING_JSONRPC).unwrap();
    assert_eq!(iface.url, fleet.writer_rpc_url());
    assert_eq!(iface.protocol_version, "1.0");
    assert!(card.skill("draft").is_some());
    let again = client
        .get(fleet.writer_card_url())
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn send_message_completes_a_task_with_the_draft_as_an_artifact() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.unwrap();
    let client = http();
    let message = user_message("Kafka consumer lag");
    let (status, body) = rpc(
        &client,
        &fleet.writer_rpc_url(),
        "SendMessage",
        json!({"message": message}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["id"], 1);
    let SendMessageResponse::Task(task) = serde_json::from_value(body["result"].clone()).unwrap()
    else {
        panic!("expected a task: {body}")
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert!(task.status.timestamp.is_some());
    assert_eq!(task.artifacts.len(), 1);
    assert_eq!(task.artifacts[0].name.as_deref(), Some("draft"));
    assert_eq!(
        task.artifacts[0].parts[0].as_text(),
        Some(draft("Kafka consumer lag").as_str())
    );
    assert_eq!(task.history.len(), 1);
    assert_eq!(
        task.history[0].message_id,
        message["messageId"].as_str().unwrap()
    );
    assert_eq!(task.history[0].task_id.as_deref(), Some(task.id.as_str()));

    let (_, got) = rpc(
        &client,
        &fleet.writer_rpc_url(),
        "GetTask",
        json!({"id": task.id, "historyLength": 0}),
    )
    .await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(
        got["result"].get("history").is_none(),
        "historyLength 0 returns no history: {got}"
    );
    assert_eq!(got["result"]["contextId"], task.context_id);

    let (_, cancel) = rpc(
        &client,
        &fleet.writer_rpc_url(),
        "CancelTask",
        json!({"id": task.id}),
    )
    .await;
    assert_eq!(cancel["error"]["code"], -32002);
    let (_, resub) = rpc(
        &client,
        &fleet.writer_rpc_url(),
        "SubscribeToTask",
        json!({"id": task.id}),
    )
    .await;
    assert_eq!(resub["error"]["code"], -32004);
    let mut more = user_message("more");
    more["taskId"] = json!(task.id);
    let (_, cont) = rpc(
        &client,
        &fleet.writer_rpc_url(),
        "SendMessage",
        json!({"message": more}),
    )
    .await;
    assert_eq!(
        cont["error"]["code"], -32004,
        "a completed task takes no more messages: {cont}"
    );
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn streaming_sends_submitted_working_artifact_completed_then_closes() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.unwrap();
    let body = json!({"jsonrpc": "2.0", "id": "s1", "method": "SendStreamingMessage",
                      "params": {"message": user_message("Kafka consumer lag")}});
    let resp = http()
        .post(fleet.writer_rpc_url())
        .header("A2A-Version", "1.0")
        .header("Accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let events = sse_events(&resp.text().await.unwrap());
    let kinds: Vec<String> = events
        .iter()
        .map(|(_, e)| {
            assert_eq!(e["id"], "s1");
            assert_eq!(e["jsonrpc"], "2.0");
            let result = e["result"].as_object().expect("a result");
            assert_eq!(result.len(), 1, "one oneof key per event: {e}");
            result.keys().next().unwrap().clone()
        })
        .collect();
    assert_eq!(
        kinds,
        ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    );
    let r = |i: usize| &events[i].1["result"];
    assert_eq!(r(0)["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    assert_eq!(
        r(1)["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    assert_eq!(
        r(2)["artifactUpdate"]["artifact"]["parts"][0]["text"],
        draft("Kafka consumer lag")
    );
    assert_eq!(r(2)["artifactUpdate"]["lastChunk"], true);
    assert_eq!(
        r(3)["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let task_id = r(0)["task"]["id"].clone();
    assert!(
        (1..4).all(|i| r(i).as_object().unwrap().values().next().unwrap()["taskId"] == task_id)
    );
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn unsupported_or_missing_a2a_versions_are_refused_with_the_1_0_error() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.unwrap();
    let client = http();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": user_message("hi")}});
    for (header, shown) in [(None, "0.3"), (Some("0.3"), "0.3"), (Some("2.0"), "2.0")] {
        let mut req = client.post(fleet.writer_rpc_url()).json(&body);
        if let Some(h) = header {
            req = req.header("A2A-Version", h);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200, "JSON-RPC errors come back as HTTP 200");
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["error"]["code"], -32009);
        assert_eq!(
            v["error"]["message"],
            format!(
                "A2A version '{shown}' is not supported by this handler. Expected version '1.0'."
            )
        );
        assert_eq!(v["error"]["data"][0]["reason"], "VERSION_NOT_SUPPORTED");
        assert_eq!(
            v["error"]["data"][0]["@type"],
            "type.googleapis.com/google.rpc.ErrorInfo"
        );
    }
    let via_query = format!("{}/?A2A-Version=1.0", fleet.writer_rpc_url());
    let v: Value = client
        .post(via_query)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn unknown_methods_bad_params_and_unsupported_features_get_their_codes() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.unwrap();
    let (client, url) = (http(), fleet.writer_rpc_url());
    let cases = [
        (
            "message/send",
            json!({"message": user_message("hi")}),
            -32601,
            "METHOD_NOT_FOUND",
        ),
        ("Frobnicate", json!({}), -32601, "METHOD_NOT_FOUND"),
        ("SendMessage", json!({}), -32602, "INVALID_PARAMS"),
        (
            "SendMessage",
            json!({"message": {"messageId": "m", "role": "user", "parts": [{"text": "hi"}]}}),
            -32602,
            "INVALID_PARAMS",
        ),
        (
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
            -32602,
            "INVALID_PARAMS",
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}),
            -32602,
            "INVALID_PARAMS",
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"kind": "text"}]}}),
            -32602,
            "INVALID_PARAMS",
        ),
        (
            "SendMessage",
            json!({"message": user_message("hi"), "configuration": {"acceptedOutputModes": ["image/png"]}}),
            -32005,
            "CONTENT_TYPE_NOT_SUPPORTED",
        ),
        (
            "SendMessage",
            json!({"message": user_message("hi"), "configuration": {"historyLength": -1}}),
            -32602,
            "INVALID_PARAMS",
        ),
        (
            "GetTask",
            json!({"id": "no-such-task"}),
            -32001,
            "TASK_NOT_FOUND",
        ),
        ("GetTask", json!({}), -32602, "INVALID_PARAMS"),
        (
            "ListTasks",
            json!({"pageSize": 0}),
            -32602,
            "INVALID_PARAMS",
        ),
        (
            "CancelTask",
            json!({"id": "no-such-task"}),
            -32001,
            "TASK_NOT_FOUND",
        ),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "url": "https://x.example"}),
            -32003,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        (
            "GetExtendedAgentCard",
            json!({}),
            -32007,
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        ),
    ];
    for (method, params, code, reason) in cases {
        let (status, v) = rpc(&client, &url, method, params.clone()).await;
        assert_eq!(status, 200);
        assert_eq!(v["error"]["code"], code, "{method} {params}: {v}");
        assert_eq!(v["error"]["data"][0]["reason"], reason, "{method} {params}");
        assert_eq!(v["id"], 1);
    }
    let (_, v) = rpc(
        &client,
        &url,
        "SendMessage",
        json!({"message": {"messageId": "m", "role": "user", "parts": [{"text": "hi"}]}}),
    )
    .await;
    assert_eq!(
        v["error"]["data"][1]["fieldViolations"][0]["field"], "message.role",
        "{v}"
    );
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn framing_content_type_and_size_are_checked_before_dispatch() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.unwrap();
    let (client, url) = (http(), fleet.writer_rpc_url());
    let post = |body: String, content_type: &'static str| {
        client
            .post(&url)
            .header("A2A-Version", "1.0")
            .header("Content-Type", content_type)
            .body(body)
            .send()
    };
    let parse: Value = post("{not json".into(), "application/json")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(parse["id"], Value::Null);
    let batch: Value = post("[]".into(), "application/json")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(batch["error"]["code"], -32600);
    let bool_id = r#"{"jsonrpc":"2.0","id":true,"method":"GetTask","params":{"id":"x"}}"#;
    let bad_id: Value = post(bool_id.into(), "application/json")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(bad_id["error"]["code"], -32600);
    let wrong_ct = post(
        r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}"#.into(),
        "text/plain",
    )
    .await
    .unwrap();
    assert_eq!(wrong_ct.status(), 415);
    let huge = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                      "params": {"message": user_message(&"x".repeat(70 * 1024))}});
    let too_big = post(huge.to_string(), "application/json").await.unwrap();
    assert_eq!(too_big.status(), 413);
    let v: Value = too_big.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32600);
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn list_tasks_pages_newest_first_without_artifacts_by_default() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.unwrap();
    let (client, url) = (http(), fleet.writer_rpc_url());
    let mut ids = Vec::new();
    for text in ["first", "second", "third"] {
        let (_, v) = rpc(
            &client,
            &url,
            "SendMessage",
            json!({"message": user_message(text)}),
        )
        .await;
        ids.push(v["result"]["task"]["id"].as_str().unwrap().to_owned());
    }
    let (_, page1) = rpc(&client, &url, "ListTasks", json!({"pageSize": 2})).await;
    let r = &page1["result"];
    assert_eq!(r["totalSize"], 3);
    assert_eq!(r["pageSize"], 2);
    assert_eq!(r["nextPageToken"], "2");
    assert_eq!(r["tasks"][0]["id"], ids[2]);
    assert_eq!(r["tasks"][1]["id"], ids[1]);
    assert!(r["tasks"][0].get("artifacts").is_none());
    let (_, page2) = rpc(
        &client,
        &url,
        "ListTasks",
        json!({"pageSize": 2, "pageToken": "2", "includeArtifacts": true}),
    )
    .await;
    assert_eq!(page2["result"]["tasks"][0]["id"], ids[0]);
    assert_eq!(page2["result"]["nextPageToken"], "");
    assert!(page2["result"]["tasks"][0]["artifacts"].is_array());
    let (_, none) = rpc(
        &client,
        &url,
        "ListTasks",
        json!({"status": "TASK_STATE_FAILED"}),
    )
    .await;
    assert_eq!(none["result"]["totalSize"], 0);
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_writer_started_with_a_token_requires_it_on_rpc_but_not_on_the_card() {
    let cfg = FleetConfig {
        writer_bearer_token: Some("demo-s3cret".into()),
        ..FleetConfig::ephemeral()
    };
    let fleet = start_fleet(cfg).await.unwrap();
    let client = http();
    let card = card_of(&fleet).await;
    assert!(card.security_schemes.contains_key("bearer"));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": user_message("hi")}});
    let denied = client
        .post(fleet.writer_rpc_url())
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), 401);
    assert_eq!(denied.headers()["www-authenticate"], "Bearer");
    let wrong = client
        .post(fleet.writer_rpc_url())
        .header("A2A-Version", "1.0")
        .bearer_auth("demo-s3cre")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let ok: Value = client
        .post(fleet.writer_rpc_url())
        .header("A2A-Version", "1.0")
        .bearer_auth("demo-s3cret")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        ok["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_foreign_host_header_is_refused_as_dns_rebinding() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.unwrap();
    let client = http();
    let card = client
        .get(fleet.writer_card_url())
        .header("Host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(card.status(), 403);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}});
    let rpc = client
        .post(fleet.writer_rpc_url())
        .header("A2A-Version", "1.0")
        .header("Host", "evil.example:7802")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(rpc.status(), 403);
    let local = client
        .get(fleet.writer_card_url().replace("127.0.0.1", "localhost"))
        .send()
        .await
        .unwrap();
    assert_eq!(local.status(), 200, "loopback names stay allowed");
    fleet.shutdown().await.unwrap();
}

/// The writer's card, as a client reads it.
async fn card_of(fleet: &Fleet) -> AgentCard {
    http()
        .get(fleet.writer_card_url())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_writer_reached_through_a_front_names_the_fronts_url_on_its_card() {
    let fleet = start_fleet(FleetConfig {
        writer_public_url: Some("https://10.213.0.1:7802".into()),
        ..FleetConfig::ephemeral()
    })
    .await
    .unwrap();
    let card = card_of(&fleet).await;
    let iface = card.preferred_interface(BINDING_JSONRPC).unwrap();
    assert_eq!(iface.url, "https://10.213.0.1:7802");
    fleet.shutdown().await.unwrap();
}
