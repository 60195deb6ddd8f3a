#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::model::ToolSpec;

fn request(tools: bool) -> ChatRequest {
    ChatRequest {
        node_id: "n".into(),
        model: "models/gemini-test".into(),
        system: Some("be brief".into()),
        messages: vec![
            Message::User { text: "hi".into() },
            Message::Assistant {
                text: None,
                tool_calls: vec![
                    ToolCall {
                        id: "g1".into(),
                        name: "a".into(),
                        arguments: json!({"q": 1}),
                    },
                    ToolCall {
                        id: "orrery_call_7".into(),
                        name: "b".into(),
                        arguments: json!({}),
                    },
                ],
            },
            Message::ToolResult {
                call_id: "g1".into(),
                name: "a".into(),
                content: "r1".into(),
                is_error: false,
            },
            Message::ToolResult {
                call_id: "orrery_call_7".into(),
                name: "b".into(),
                content: "bad".into(),
                is_error: true,
            },
        ],
        tools: if tools {
            vec![ToolSpec {
                name: "a".into(),
                description: "A".into(),
                input_schema: json!({"type": "object"}),
            }]
        } else {
            vec![]
        },
        labels: Some(vec!["ok".into()]),
        max_output_tokens: Some(10),
    }
}

#[test]
fn model_names_become_a_safe_path() {
    assert_eq!(
        model_path("models/gemini-2.5-flash").unwrap(),
        "/v1beta/models/gemini-2.5-flash:generateContent"
    );
    for bad in ["", "a/b", "x:streamGenerateContent", "a?key=1"] {
        assert!(model_path(bad).is_err(), "{bad}");
    }
}

#[test]
fn history_ids_and_signatures_are_sent_back() {
    let signatures = HashMap::from([("g1".to_string(), "sig-1".to_string())]);
    let body = request_body(&request(true), &signatures);
    let contents = body["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3);
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(contents[1]["parts"][0]["functionCall"]["id"], "g1");
    assert_eq!(contents[1]["parts"][0]["thoughtSignature"], "sig-1");
    assert!(contents[1]["parts"][1]["functionCall"].get("id").is_none());
    assert_eq!(
        contents[2]["parts"][1]["functionResponse"]["response"],
        json!({"error": "bad"})
    );
    assert_eq!(body["systemInstruction"]["parts"][0]["text"], "be brief");
}

#[test]
fn labels_use_a_response_schema_without_tools_and_set_response_with_them() {
    let plain = request_body(&request(false), &HashMap::new());
    assert_eq!(
        plain["generationConfig"]["responseMimeType"],
        "application/json"
    );
    assert_eq!(
        plain["generationConfig"]["responseSchema"]["properties"]["label"]["enum"],
        json!(["ok"])
    );
    assert_eq!(plain["generationConfig"]["maxOutputTokens"], 10);
    assert!(plain.get("tools").is_none());

    let with_tools = request_body(&request(true), &HashMap::new());
    assert!(
        with_tools["generationConfig"]
            .get("responseMimeType")
            .is_none()
    );
    let declarations = with_tools["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap();
    assert_eq!(declarations[1]["name"], "set_response");
    assert_eq!(
        with_tools["toolConfig"]["functionCallingConfig"]["mode"],
        "ANY"
    );
}

#[test]
fn thoughts_are_skipped_and_signatures_collected() {
    let reply = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"text": "thinking", "thought": true},
        {"functionCall": {"name": "a", "args": {"q": 2}}, "thoughtSignature": "sig"}
    ]}, "finishReason": "STOP"}],
    "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 3, "thoughtsTokenCount": 2}});
    let (response, signatures) = parse_reply(&reply, &IdGenerator::default()).unwrap();
    assert_eq!(response.text, None);
    assert_eq!(response.tool_calls[0].id, "orrery_call_0");
    assert_eq!(
        signatures,
        vec![("orrery_call_0".to_string(), "sig".to_string())]
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 4,
            output_tokens: 5
        }
    );
}

#[test]
fn blocked_and_empty_replies_are_bad_replies() {
    let cases = [
        json!({"promptFeedback": {"blockReason": "SAFETY"}}),
        json!({"candidates": [{"content": {"parts": []}, "finishReason": "SAFETY"}]}),
    ];
    for reply in cases {
        let result = parse_reply(&reply, &IdGenerator::default());
        assert!(matches!(result, Err(ModelError::BadReply(_))), "{reply}");
    }
}

#[test]
fn old_signatures_are_forgotten_past_the_cap() {
    let mut signatures = Signatures::default();
    for i in 0..(MAX_SIGNATURES + 5) {
        signatures.insert(format!("id{i}"), "s".into());
    }
    assert_eq!(signatures.by_id.len(), MAX_SIGNATURES);
    assert!(!signatures.by_id.contains_key("id0"));
}
