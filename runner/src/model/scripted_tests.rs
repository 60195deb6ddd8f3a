#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use orrery_crds::registry::{ScriptedToolCall, ScriptedUsage};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

fn reply(text: &str) -> ScriptedTurn {
    ScriptedTurn {
        reply: Some(text.into()),
        ..ScriptedTurn::default()
    }
}

fn script(nodes: Vec<(&str, Vec<ScriptedTurn>)>, fallback: Option<ScriptedTurn>) -> ModelScript {
    ModelScript {
        nodes: nodes
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<BTreeMap<_, _>>(),
        fallback,
    }
}

fn request(node: &str, input: &str) -> ChatRequest {
    ChatRequest {
        node_id: node.into(),
        model: "scripted".into(),
        system: Some("You are a writer.".into()),
        messages: vec![Message::User { text: input.into() }],
        tools: Vec::new(),
        labels: None,
        max_output_tokens: None,
    }
}

async fn text_of(provider: &ScriptedProvider, req: &ChatRequest) -> String {
    provider
        .complete(req, &CancellationToken::new())
        .await
        .unwrap()
        .text
        .unwrap()
}

#[tokio::test]
async fn a_node_takes_its_turns_in_order_and_the_last_one_repeats() {
    let provider = ScriptedProvider::new(script(
        vec![("draft", vec![reply("one"), reply("two")])],
        None,
    ));
    let req = request("draft", "topic");
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(text_of(&provider, &req).await);
    }
    assert_eq!(seen, ["one", "two", "two", "two"]);
}

#[tokio::test]
async fn nodes_keep_separate_counters() {
    let provider = ScriptedProvider::new(script(
        vec![
            ("a", vec![reply("a1"), reply("a2")]),
            ("b", vec![reply("b1"), reply("b2")]),
        ],
        None,
    ));
    assert_eq!(text_of(&provider, &request("a", "x")).await, "a1");
    assert_eq!(text_of(&provider, &request("b", "x")).await, "b1");
    assert_eq!(text_of(&provider, &request("a", "x")).await, "a2");
    assert_eq!(text_of(&provider, &request("b", "x")).await, "b2");
}

#[tokio::test]
async fn an_unknown_node_uses_the_fallback_turn() {
    let provider = ScriptedProvider::new(script(vec![], Some(reply("fallback on {{input}}"))));
    assert_eq!(
        text_of(&provider, &request("other", "lag")).await,
        "fallback on lag"
    );
}

#[tokio::test]
async fn an_unknown_node_without_fallback_echoes_its_latest_input() {
    let provider = ScriptedProvider::new(ModelScript::default());
    let mut req = request("other", "first");
    req.messages.push(Message::Assistant {
        text: Some("draft".into()),
        tool_calls: vec![],
    });
    req.messages.push(Message::User {
        text: "second".into(),
    });
    assert_eq!(text_of(&provider, &req).await, "second");
}

#[tokio::test]
async fn a_node_with_an_empty_turn_list_is_treated_as_unscripted() {
    let provider = ScriptedProvider::new(script(vec![("a", vec![])], Some(reply("fb"))));
    assert_eq!(text_of(&provider, &request("a", "x")).await, "fb");
}

#[tokio::test]
async fn placeholders_are_replaced_by_the_input_and_the_tool_results() {
    let provider = ScriptedProvider::new(script(
        vec![("n", vec![reply("In: {{input}}; found: {{tool_results}}")])],
        None,
    ));
    let mut req = request("n", "Kafka lag");
    req.messages.push(Message::Assistant {
        text: None,
        tool_calls: vec![],
    });
    req.messages.push(Message::ToolResult {
        call_id: "c1".into(),
        name: "t".into(),
        content: "r1".into(),
        is_error: false,
    });
    req.messages.push(Message::ToolResult {
        call_id: "c2".into(),
        name: "t".into(),
        content: "r2".into(),
        is_error: true,
    });
    assert_eq!(
        text_of(&provider, &req).await,
        "In: Kafka lag; found: r1\nr2"
    );
}

#[tokio::test]
async fn a_tool_call_turn_returns_calls_with_deterministic_unique_ids() {
    let calls_turn = ScriptedTurn {
        tool_calls: vec![
            ScriptedToolCall {
                name: "mcp_demo_search".into(),
                arguments: json!({"q": "lag"}),
            },
            ScriptedToolCall {
                name: "mcp_demo_fetch".into(),
                arguments: serde_json::Value::Null,
            },
        ],
        ..ScriptedTurn::default()
    };
    let provider = ScriptedProvider::new(script(
        vec![(
            "research",
            vec![calls_turn.clone(), calls_turn, reply("done")],
        )],
        None,
    ));
    let req = request("research", "q");
    let cancel = CancellationToken::new();
    let first = provider.complete(&req, &cancel).await.unwrap();
    assert_eq!(first.text, None);
    let ids: Vec<_> = first.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_research_0", "call_research_1"]);
    assert_eq!(first.tool_calls[0].arguments, json!({"q": "lag"}));
    assert_eq!(
        first.tool_calls[1].arguments,
        json!({}),
        "missing arguments become an empty object"
    );
    let second = provider.complete(&req, &cancel).await.unwrap();
    let ids: Vec<_> = second.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_research_2", "call_research_3"]);
    let third = provider.complete(&req, &cancel).await.unwrap();
    assert!(third.tool_calls.is_empty());
    assert_eq!(third.text.as_deref(), Some("done"));
}

#[tokio::test]
async fn a_labelled_request_answers_with_label_and_answer_json() {
    let provider = ScriptedProvider::new(script(
        vec![(
            "judge",
            vec![ScriptedTurn {
                reply: Some("needs work on {{input}}".into()),
                label: Some("revise".into()),
                ..ScriptedTurn::default()
            }],
        )],
        None,
    ));
    let mut req = request("judge", "draft 1");
    req.labels = Some(vec!["revise".into(), "accept".into()]);
    let text = text_of(&provider, &req).await;
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value,
        json!({"label": "revise", "answer": "needs work on draft 1"})
    );
}

#[tokio::test]
async fn a_labelled_request_on_a_turn_without_label_omits_the_label() {
    let provider = ScriptedProvider::new(script(vec![("judge", vec![reply("ok")])], None));
    let mut req = request("judge", "x");
    req.labels = Some(vec!["accept".into()]);
    let value: serde_json::Value = serde_json::from_str(&text_of(&provider, &req).await).unwrap();
    assert_eq!(value, json!({"answer": "ok"}));
}

#[tokio::test]
async fn an_unlabelled_request_ignores_the_turns_label() {
    let provider = ScriptedProvider::new(script(
        vec![(
            "n",
            vec![ScriptedTurn {
                reply: Some("plain".into()),
                label: Some("accept".into()),
                ..ScriptedTurn::default()
            }],
        )],
        None,
    ));
    assert_eq!(text_of(&provider, &request("n", "x")).await, "plain");
}

#[tokio::test]
async fn scripted_usage_is_reported_as_is() {
    let provider = ScriptedProvider::new(script(
        vec![(
            "n",
            vec![ScriptedTurn {
                reply: Some("r".into()),
                usage: Some(ScriptedUsage {
                    input_tokens: 120,
                    output_tokens: 45,
                }),
                ..ScriptedTurn::default()
            }],
        )],
        None,
    ));
    let response = provider
        .complete(&request("n", "x"), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 45
        }
    );
}

#[tokio::test]
async fn usage_without_a_script_is_estimated_at_four_characters_per_token() {
    let provider = ScriptedProvider::new(script(vec![("n", vec![reply("12345678")])], None));
    let mut req = request("n", "abcdefgh");
    req.system = Some("1234".into());
    let response = provider
        .complete(&req, &CancellationToken::new())
        .await
        .unwrap();
    // 12 input characters -> 3 tokens; 8 output characters -> 2 tokens.
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 3,
            output_tokens: 2
        }
    );
}

#[tokio::test]
async fn a_delay_is_cancelled_promptly() {
    let provider = ScriptedProvider::new(script(
        vec![(
            "slow",
            vec![ScriptedTurn {
                reply: Some("late".into()),
                delay_ms: Some(60_000),
                ..ScriptedTurn::default()
            }],
        )],
        None,
    ));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let result = provider.complete(&request("slow", "x"), &cancel).await;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn an_already_cancelled_token_fails_without_taking_a_turn() {
    let provider = ScriptedProvider::new(script(
        vec![("n", vec![reply("first"), reply("second")])],
        None,
    ));
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result = provider.complete(&request("n", "x"), &cancel).await;
    assert!(matches!(result, Err(ModelError::Cancelled)));
    assert_eq!(text_of(&provider, &request("n", "x")).await, "first");
}

#[tokio::test]
async fn a_delay_is_waited_before_answering() {
    let provider = ScriptedProvider::new(script(
        vec![(
            "n",
            vec![ScriptedTurn {
                reply: Some("after".into()),
                delay_ms: Some(30),
                ..ScriptedTurn::default()
            }],
        )],
        None,
    ));
    let started = Instant::now();
    assert_eq!(text_of(&provider, &request("n", "x")).await, "after");
    assert!(started.elapsed() >= Duration::from_millis(30));
}

#[tokio::test]
async fn concurrent_calls_of_one_node_take_distinct_turns_in_order() {
    let turns = (0..8).map(|i| reply(&format!("t{i}"))).collect();
    let provider = Arc::new(ScriptedProvider::new(script(vec![("child", turns)], None)));
    let mut handles = Vec::new();
    for _ in 0..8 {
        let provider = Arc::clone(&provider);
        handles.push(tokio::spawn(async move {
            text_of(&provider, &request("child", "x")).await
        }));
    }
    let mut seen = Vec::new();
    for handle in handles {
        seen.push(handle.await.unwrap());
    }
    seen.sort();
    let expected: Vec<String> = (0..8).map(|i| format!("t{i}")).collect();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn placeholders_in_tool_call_arguments_pass_the_input_on() {
    let turn = ScriptedTurn {
        tool_calls: vec![ScriptedToolCall {
            name: "a2a_demo_writer_draft".into(),
            arguments: json!({"request": "Write notes on {{input}}", "n": 3, "tags": ["{{input}}"]}),
        }],
        ..ScriptedTurn::default()
    };
    let provider = ScriptedProvider::new(script(vec![("writer", vec![turn])], None));
    let response = provider
        .complete(&request("writer", "Kafka lag"), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        response.tool_calls[0].arguments,
        json!({"request": "Write notes on Kafka lag", "n": 3, "tags": ["Kafka lag"]})
    );
}

#[tokio::test]
async fn a_field_placeholder_takes_that_field_of_json_tool_results_and_plain_results_whole() {
    let provider = ScriptedProvider::new(script(
        vec![("writer", vec![reply("Draft:\n{{tool_results.reply}}")])],
        None,
    ));
    let mut req = request("writer", "topic");
    req.messages.push(Message::ToolResult {
        call_id: "c1".into(),
        name: "a2a_demo_writer_draft".into(),
        content: r##"{"status":"ok","reply":"# Notes\n- one"}"##.into(),
        is_error: false,
    });
    req.messages.push(Message::ToolResult {
        call_id: "c2".into(),
        name: "mcp_demo_tools_search_articles".into(),
        content: "plain text result".into(),
        is_error: false,
    });
    assert_eq!(
        text_of(&provider, &req).await,
        "Draft:\n# Notes\n- one\nplain text result"
    );
}
