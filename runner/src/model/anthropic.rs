//! Anthropic Messages: `POST {base}/v1/messages` with `x-api-key` and
//! `anthropic-version: 2023-06-01`.
//!
//! Labelled requests add the `set_response` tool: forced (`tool_choice: {type: tool}`) when the
//! node has no other tools, otherwise `tool_choice: {type: any}` so the tool loop still works;
//! the tool's input JSON is returned as the text.

use super::http::{HttpCaller, join_url, secret_header};
use super::wire::{IdGenerator, SET_RESPONSE_TOOL, arguments_object, count, set_response_tool};
use super::{ChatRequest, ChatResponse, Message, ModelError, ModelProvider, ToolCall, Usage};
use crate::secrets::SecretValue;
use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The public endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version sent.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required; this is used when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// An Anthropic Messages endpoint.
#[derive(Debug)]
pub struct AnthropicProvider {
    http: HttpCaller,
    url: String,
    api_key: Option<SecretValue>,
    ids: IdGenerator,
}

impl AnthropicProvider {
    /// A provider at `base_url` (default [`DEFAULT_BASE_URL`]).
    pub fn new(http: HttpCaller, base_url: Option<&str>, api_key: Option<SecretValue>) -> Self {
        Self {
            http,
            url: join_url(base_url.unwrap_or(DEFAULT_BASE_URL), "/v1/messages"),
            api_key,
            ids: IdGenerator::default(),
        }
    }
}

#[async_trait]
impl ModelProvider for AnthropicProvider {
    fn provider_name(&self) -> &'static str {
        "anthropic"
    }

    async fn complete(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        if let Some(key) = &self.api_key {
            headers.insert(
                HeaderName::from_static("x-api-key"),
                secret_header(key.expose())?,
            );
        }
        let body = request_body(request);
        let secret = self.api_key.as_ref().map(SecretValue::expose);
        let reply = self
            .http
            .post_json(&self.url, headers, &body, secret, cancel)
            .await?;
        parse_reply(&reply, &self.ids)
    }
}

/// Appends `blocks` as a `role` message, merged into the previous one when it has the same role
/// (the API wants user and assistant turns to alternate).
fn push_blocks(messages: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = messages.last_mut()
        && last["role"] == role
        && let Some(content) = last["content"].as_array_mut()
    {
        content.extend(blocks);
        return;
    }
    messages.push(json!({"role": role, "content": blocks}));
}

/// The request body for `request`.
pub(crate) fn request_body(request: &ChatRequest) -> Value {
    let mut messages = Vec::new();
    for message in &request.messages {
        match message {
            Message::User { text } => {
                push_blocks(
                    &mut messages,
                    "user",
                    vec![json!({"type": "text", "text": text})],
                );
            }
            Message::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if let Some(text) = text.as_deref().filter(|t| !t.is_empty()) {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                blocks.extend(tool_calls.iter().map(|c| {
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})
                }));
                push_blocks(&mut messages, "assistant", blocks);
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => push_blocks(
                &mut messages,
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                    "is_error": is_error,
                })],
            ),
        }
    }
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        .collect();
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    });
    if let Some(system) = &request.system {
        body["system"] = json!(system);
    }
    if let Some(labels) = &request.labels {
        body["tool_choice"] = if tools.is_empty() {
            json!({"type": "tool", "name": SET_RESPONSE_TOOL})
        } else {
            json!({"type": "any"})
        };
        let spec = set_response_tool(labels);
        tools.push(json!({
            "name": spec.name,
            "description": spec.description,
            "input_schema": spec.input_schema,
        }));
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    body
}

/// Reads a Messages reply. A `set_response` call becomes the text (and ends the turn).
pub(crate) fn parse_reply(reply: &Value, ids: &IdGenerator) -> Result<ChatResponse, ModelError> {
    let content = reply
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| ModelError::BadReply("the reply has no content array".into()))?;
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    let mut set_response = None;
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    texts.push(t);
                }
            }
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ModelError::BadReply("a tool_use block has no name".into()))?;
                let arguments = arguments_object(block.get("input"));
                if name == SET_RESPONSE_TOOL {
                    set_response = Some(arguments);
                    continue;
                }
                tool_calls.push(ToolCall {
                    id: block
                        .get("id")
                        .and_then(Value::as_str)
                        .filter(|id| !id.is_empty())
                        .map_or_else(|| ids.next(), str::to_string),
                    name: name.to_string(),
                    arguments,
                });
            }
            _ => {}
        }
    }
    let usage = reply.get("usage");
    let usage = Usage {
        input_tokens: count(usage.and_then(|u| u.get("input_tokens")))
            + count(usage.and_then(|u| u.get("cache_creation_input_tokens")))
            + count(usage.and_then(|u| u.get("cache_read_input_tokens"))),
        output_tokens: count(usage.and_then(|u| u.get("output_tokens"))),
    };
    if let Some(answer) = set_response {
        return Ok(ChatResponse {
            text: Some(answer.to_string()),
            tool_calls: Vec::new(),
            usage,
        });
    }
    let text = texts.concat();
    Ok(ChatResponse {
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        usage,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::model::ToolSpec;

    fn request(tools: bool, labels: bool) -> ChatRequest {
        ChatRequest {
            node_id: "n".into(),
            model: "claude-test".into(),
            system: Some("be brief".into()),
            messages: vec![
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: Some("looking".into()),
                    tool_calls: vec![
                        ToolCall {
                            id: "tu_1".into(),
                            name: "a".into(),
                            arguments: json!({}),
                        },
                        ToolCall {
                            id: "tu_2".into(),
                            name: "b".into(),
                            arguments: json!({"x": 1}),
                        },
                    ],
                },
                Message::ToolResult {
                    call_id: "tu_1".into(),
                    name: "a".into(),
                    content: "r1".into(),
                    is_error: false,
                },
                Message::ToolResult {
                    call_id: "tu_2".into(),
                    name: "b".into(),
                    content: "r2".into(),
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
            labels: labels.then(|| vec!["ok".into()]),
            max_output_tokens: None,
        }
    }

    #[test]
    fn tool_results_of_one_round_share_one_user_message() {
        let body = request_body(&request(true, false));
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"][1]["type"], "tool_use");
        assert_eq!(messages[2]["role"], "user");
        assert_eq!(messages[2]["content"][1]["tool_use_id"], "tu_2");
        assert_eq!(messages[2]["content"][1]["is_error"], true);
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["system"], "be brief");
        assert!(body.get("tool_choice").is_none());
    }

    #[test]
    fn a_labelled_request_forces_set_response_only_without_other_tools() {
        let cases = [
            (false, json!({"type": "tool", "name": "set_response"}), 1),
            (true, json!({"type": "any"}), 2),
        ];
        for (tools, choice, count) in cases {
            let body = request_body(&request(tools, true));
            assert_eq!(body["tool_choice"], choice);
            let sent = body["tools"].as_array().unwrap();
            assert_eq!(sent.len(), count);
            assert_eq!(sent[count - 1]["name"], "set_response");
            assert_eq!(
                sent[count - 1]["input_schema"]["properties"]["label"]["enum"],
                json!(["ok"])
            );
        }
    }

    #[test]
    fn a_set_response_call_becomes_the_text() {
        let reply = json!({"content": [
            {"type": "tool_use", "id": "x", "name": "set_response", "input": {"label": "ok", "answer": "fine"}}
        ], "usage": {"input_tokens": 5, "output_tokens": 2, "cache_read_input_tokens": 3}});
        let parsed = parse_reply(&reply, &IdGenerator::default()).unwrap();
        assert!(parsed.tool_calls.is_empty());
        let text: Value = serde_json::from_str(parsed.text.as_deref().unwrap()).unwrap();
        assert_eq!(text, json!({"label": "ok", "answer": "fine"}));
        assert_eq!(
            parsed.usage,
            Usage {
                input_tokens: 8,
                output_tokens: 2
            }
        );
    }

    #[test]
    fn a_reply_without_content_is_a_bad_reply() {
        let result = parse_reply(&json!({"type": "message"}), &IdGenerator::default());
        assert!(matches!(result, Err(ModelError::BadReply(_))));
    }
}
