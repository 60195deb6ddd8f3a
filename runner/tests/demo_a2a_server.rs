//! Our A2A server with an agent that asks a question first: input-required, continuing the same
//! task, cancelling, returnImmediately and SubscribeToTask while the agent works.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use async_trait::async_trait;
use demo_support::{http, rpc, sse_events, user_message};
use futures::StreamExt;
use orrery_runner::a2a::server::{
    A2aServer, A2aServerConfig, AgentHandler, AgentReply, AgentRequest,
};
use orrery_runner::a2a::types::{AgentCard, Part};
use orrery_runner::demo::writer::writer_card;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Asks "Which audience?" on a new task; on the answer, completes with what it heard.
/// A message saying "slow" waits for a permit before answering.
struct Interviewer {
    card: AgentCard,
    gate: Arc<Semaphore>,
}

#[async_trait]
impl AgentHandler for Interviewer {
    fn card(&self) -> &AgentCard {
        &self.card
    }

    async fn handle(&self, request: AgentRequest) -> AgentReply {
        let text = request.message.joined_text();
        if text == "slow" {
            let _permit = self.gate.acquire().await;
            return AgentReply::completed("result", vec![Part::text("done slowly")]);
        }
        if request.history.is_empty() {
            return AgentReply::input_required("Which audience?");
        }
        let heard: Vec<String> = request.history.iter().map(|m| m.joined_text()).collect();
        AgentReply::completed(
            "result",
            vec![Part::text(format!("{} -> {text}", heard.join(" | ")))],
        )
    }
}

async fn serve() -> (
    String,
    Arc<Semaphore>,
    A2aServer,
    tokio::task::JoinHandle<()>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let gate = Arc::new(Semaphore::new(0));
    let handler = Arc::new(Interviewer {
        card: writer_card(&url, false),
        gate: gate.clone(),
    });
    let server = A2aServer::new(handler, A2aServerConfig::default());
    let app = server.router();
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (url, gate, server, task)
}

#[tokio::test]
async fn an_input_required_task_continues_with_the_answer_on_the_same_task() {
    let (url, _gate, server, serving) = serve().await;
    let client = http();
    let (_, first) = rpc(
        &client,
        &url,
        "SendMessage",
        json!({"message": user_message("write notes")}),
    )
    .await;
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"],
        "Which audience?"
    );
    let (task_id, context_id) = (task["id"].clone(), task["contextId"].clone());

    let mut wrong_context = user_message("operators");
    wrong_context["taskId"] = task_id.clone();
    wrong_context["contextId"] = json!("another-context");
    let (_, refused) = rpc(
        &client,
        &url,
        "SendMessage",
        json!({"message": wrong_context}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602);

    let mut answer = user_message("operators");
    answer["taskId"] = task_id.clone();
    let (_, done) = rpc(&client, &url, "SendMessage", json!({"message": answer})).await;
    let task = &done["result"]["task"];
    assert_eq!(task["id"], task_id);
    assert_eq!(task["contextId"], context_id);
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "write notes | Which audience? -> operators"
    );
    let history: Vec<&str> = task["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(history, ["ROLE_USER", "ROLE_AGENT", "ROLE_USER"]);
    server.shutdown().await;
    serving.abort();
}

#[tokio::test]
async fn an_interrupted_task_can_be_cancelled_and_then_takes_no_answer() {
    let (url, _gate, server, serving) = serve().await;
    let client = http();
    let (_, first) = rpc(
        &client,
        &url,
        "SendMessage",
        json!({"message": user_message("hello")}),
    )
    .await;
    let task_id = first["result"]["task"]["id"].clone();

    let sub = client
        .post(&url)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task_id}}))
        .send()
        .await
        .unwrap();
    let events = sse_events(&sub.text().await.unwrap());
    assert_eq!(
        events.len(),
        1,
        "an interrupted task's stream is its snapshot: {events:?}"
    );
    assert_eq!(
        events[0].1["result"]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );

    let (_, cancelled) = rpc(&client, &url, "CancelTask", json!({"id": task_id})).await;
    assert_eq!(
        cancelled["result"]["status"]["state"],
        "TASK_STATE_CANCELED"
    );
    let mut answer = user_message("too late");
    answer["taskId"] = task_id;
    let (_, refused) = rpc(&client, &url, "SendMessage", json!({"message": answer})).await;
    assert_eq!(refused["error"]["code"], -32004);
    server.shutdown().await;
    serving.abort();
}

#[tokio::test]
async fn a_subscriber_follows_a_working_task_to_its_end() {
    let (url, gate, server, serving) = serve().await;
    let client = http();
    let (_, started) = rpc(
        &client,
        &url,
        "SendMessage",
        json!({"message": user_message("slow"), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let task = &started["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_SUBMITTED",
        "returned before the agent answered"
    );
    let task_id = task["id"].clone();

    let resp = client
        .post(&url)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "SubscribeToTask", "params": {"id": task_id}}))
        .send()
        .await
        .unwrap();
    let mut body = resp.bytes_stream();
    let mut text = String::new();
    while sse_events(&text).is_empty() {
        text.push_str(std::str::from_utf8(&body.next().await.unwrap().unwrap()).unwrap());
    }
    // The snapshot has arrived; now let the agent finish.
    gate.add_permits(1);
    while let Some(chunk) = body.next().await {
        text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
    }
    let events: Vec<Value> = sse_events(&text)
        .into_iter()
        .map(|(_, e)| e["result"].clone())
        .collect();
    assert!(events[0]["task"]["id"] == task_id);
    let last = events.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert!(
        events
            .iter()
            .any(|e| e["artifactUpdate"]["artifact"]["parts"][0]["text"] == "done slowly"),
        "{events:?}"
    );
    let (_, got) = rpc(&client, &url, "GetTask", json!({"id": task_id})).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    server.shutdown().await;
    serving.abort();
}

#[tokio::test]
async fn shutdown_fails_work_still_waiting_and_returns() {
    let (url, _gate, server, serving) = serve().await;
    let client = http();
    let (_, started) = rpc(
        &client,
        &url,
        "SendMessage",
        json!({"message": user_message("slow"), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let task_id = started["result"]["task"]["id"].clone();
    tokio::time::timeout(std::time::Duration::from_secs(3), server.shutdown())
        .await
        .expect("shutdown is prompt");
    let (_, got) = rpc(&client, &url, "GetTask", json!({"id": task_id})).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_FAILED");
    serving.abort();
}

#[tokio::test]
async fn a_default_server_answers_only_to_loopback_host_names() {
    // A DNS-rebinding page reaches 127.0.0.1 under its own name; the default config refuses it.
    let (url, _gate, server, serving) = serve().await;
    let client = http();
    let card = format!("{url}/.well-known/agent-card.json");
    let port = url.rsplit(':').next().unwrap().to_owned();
    for (host, want) in [
        (format!("127.0.0.1:{port}"), 200),
        (format!("localhost:{port}"), 200),
        (format!("[::1]:{port}"), 200),
        (format!("rebind.attacker.example:{port}"), 403),
    ] {
        let status = client
            .get(&card)
            .header("host", host.as_str())
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status.as_u16(), want, "{host}");
    }
    server.shutdown().await;
    serving.abort();
}
