//! Tests of the writer agent: its replies and its card.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::a2a::types::{Message, Role, TaskState};

fn request(parts: Vec<Part>, accepted: Vec<String>) -> AgentRequest {
    AgentRequest {
        task_id: "t".into(),
        context_id: "c".into(),
        message: Message {
            message_id: "m".into(),
            role: Role::User,
            parts,
            ..Message::default()
        },
        history: Vec::new(),
        accepted_output_modes: accepted,
        metadata: None,
    }
}

#[tokio::test]
async fn the_handler_completes_with_a_draft_artifact() {
    let writer = DemoWriter::new("http://127.0.0.1:7802", false);
    let reply = writer
        .handle(request(vec![Part::text("Kafka consumer lag")], vec![]))
        .await;
    assert_eq!(reply.state, TaskState::Completed);
    assert_eq!(reply.artifacts.len(), 1);
    assert_eq!(reply.artifacts[0].name.as_deref(), Some(SKILL_ID));
    let part = &reply.artifacts[0].parts[0];
    assert_eq!(part.as_text(), Some(draft("Kafka consumer lag").as_str()));
    assert_eq!(part.media_type.as_deref(), Some("text/markdown"));
    let plain = writer
        .handle(request(vec![Part::text("x")], vec!["text/plain".into()]))
        .await;
    assert_eq!(
        plain.artifacts[0].parts[0].media_type.as_deref(),
        Some("text/plain")
    );
}

#[tokio::test]
async fn the_handler_rejects_requests_without_text_or_too_long() {
    let writer = DemoWriter::new("http://127.0.0.1:7802", false);
    let data_only = writer
        .handle(request(
            vec![Part::data(serde_json::json!({"a": 1}))],
            vec![],
        ))
        .await;
    assert_eq!(data_only.state, TaskState::Rejected);
    let long = "x".repeat(MAX_REQUEST_CHARS + 1);
    let too_long = writer.handle(request(vec![Part::text(long)], vec![])).await;
    assert_eq!(too_long.state, TaskState::Rejected);
    assert!(
        too_long.status_parts[0]
            .as_text()
            .unwrap()
            .contains("at most 16384")
    );
}

#[test]
fn the_card_is_a_complete_1_0_card_and_declares_bearer_only_when_required() {
    let open = writer_card("http://127.0.0.1:7802", false);
    assert!(
        open.missing_required_fields().is_empty(),
        "{:?}",
        open.missing_required_fields()
    );
    assert!(open.security_schemes.is_empty() && open.security_requirements.is_empty());
    assert_eq!(
        open.preferred_interface(BINDING_JSONRPC)
            .map(|i| i.url.as_str()),
        Some("http://127.0.0.1:7802")
    );
    let secured = writer_card("http://127.0.0.1:7802", true);
    assert!(
        matches!(secured.security_schemes.get(BEARER_SCHEME), Some(SecurityScheme::HttpAuth(h)) if h.scheme == "Bearer")
    );
    assert!(
        secured.security_requirements[0]
            .schemes
            .contains_key(BEARER_SCHEME)
    );
}

#[tokio::test]
async fn notes_without_a_version_ask_for_it_and_the_answer_completes_the_draft() {
    let writer = DemoWriter::new("http://127.0.0.1:7802", false);
    let notes = format!("{UNKNOWN_VERSION}\n- Search is faster.");
    let asked = writer
        .handle(request(vec![Part::text(notes.clone())], vec![]))
        .await;
    assert_eq!(asked.state, TaskState::InputRequired);
    assert_eq!(asked.status_parts[0].as_text(), Some(VERSION_QUESTION));
    let mut answer = request(vec![Part::text(" v2.5 ")], vec![]);
    answer.history = vec![Message {
        message_id: "m0".into(),
        role: Role::User,
        parts: vec![Part::text(notes)],
        ..Message::default()
    }];
    let done = writer.handle(answer.clone()).await;
    assert_eq!(done.state, TaskState::Completed);
    let text = done.artifacts[0].parts[0]
        .as_text()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(text, draft("# Version 2.5\n- Search is faster."));
    answer.message.parts = vec![Part::text("2.5\n# inject")];
    assert_eq!(writer.handle(answer).await.state, TaskState::Rejected);
}
