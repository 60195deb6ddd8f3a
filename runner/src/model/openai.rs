//! OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, LiteLLM…) at any base URL:
//! `POST {base}/chat/completions` with `Authorization: Bearer <key>`.
//!
//! Labelled requests use structured output (`response_format: json_schema`, strict).

use super::http::{HttpCaller, join_url, secret_header};
use super::wire::{IdGenerator, arguments_from_string, count, labelled_answer_schema};
use super::{ChatRequest, ChatResponse, Message, ModelError, ModelProvider, ToolCall, Usage};
use crate::secrets::SecretValue;
use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, HeaderMap};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The public endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An OpenAI-compatible chat completions endpoint.
#[derive(Debug)]
pub struct OpenAiProvider {
    http: HttpCaller,
    url: String,
    api_key: Option<SecretValue>,
    ids: IdGenerator,
}

impl OpenAiProvider {
    /// A provider at `base_url` (default [`DEFAULT_BASE_URL`]); `api_key` may be absent for a
    /// keyless local server.
    pub fn new(http: HttpCaller, base_url: Option<&str>, api_key: Option<SecretValue>) -> Self {
        Self {
            http,
            url: join_url(base_url.unwrap_or(DEFAULT_BASE_URL), "/chat/completions"),
            api_key,
            ids: IdGenerator::default(),
        }
    }
}

#[async_trait]
impl ModelProvider for OpenAiProvider {
    fn provider_name(&self) -> &'static str {
        "openai"
    }

    async fn complete(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ModelError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            headers.insert(
                AUTHORIZATION,
                secret_header(&format!("Bearer {}", key.expose()))?,
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

/// The request body for `request`.
pub(crate) fn request_body(request: &ChatRequest) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        messages.push(match message {
            Message::User { text } => json!({"role": "user", "content": text}),
            Message::Assistant { text, tool_calls } => {
                let mut m = json!({"role": "assistant", "content": text});
                if !tool_calls.is_empty() {
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments.to_string()}
                            })
                        })
                        .collect();
                }
                m
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => json!({
                "role": "tool",
                "tool_call_id": call_id,
                "content": if *is_error { format!("Error: {content}") } else { content.clone() },
            }),
        });
    }
    let mut body = json!({"model": request.model, "messages": messages});
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    }
                })
            })
            .collect();
    }
    if let Some(labels) = &request.labels {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {
                "name": "labelled_answer",
                "schema": labelled_answer_schema(labels),
                "strict": true,
            }
        });
    }
    if let Some(max) = request.max_output_tokens {
        body["max_completion_tokens"] = json!(max);
    }
    body
}

/// Reads a chat completion.
pub(crate) fn parse_reply(reply: &Value, ids: &IdGenerator) -> Result<ChatResponse, ModelError> {
    let message = reply
        .get("choices")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("message"))
        .ok_or_else(|| ModelError::BadReply("the reply has no choices[0].message".into()))?;
    if let Some(refusal) = message.get("refusal").and_then(Value::as_str) {
        return Err(ModelError::BadReply(format!(
            "the model refused: {refusal}"
        )));
    }
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let mut tool_calls = Vec::new();
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| ModelError::BadReply("a tool call has no function name".into()))?;
        let raw = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or("");
        tool_calls.push(ToolCall {
            id: call
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .map_or_else(|| ids.next(), str::to_string),
            name: name.to_string(),
            arguments: arguments_from_string(name, raw)?,
        });
    }
    let usage = reply.get("usage");
    Ok(ChatResponse {
        text,
        tool_calls,
        usage: Usage {
            input_tokens: count(usage.and_then(|u| u.get("prompt_tokens"))),
            output_tokens: count(usage.and_then(|u| u.get("completion_tokens"))),
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::model::ToolSpec;

    fn request() -> ChatRequest {
        ChatRequest {
            node_id: "n".into(),
            model: "gpt-test".into(),
            system: Some("be brief".into()),
            messages: vec![
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: None,
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "search".into(),
                        arguments: json!({"q": "x"}),
                    }],
                },
                Message::ToolResult {
                    call_id: "call_1".into(),
                    name: "search".into(),
                    content: "boom".into(),
                    is_error: true,
                },
            ],
            tools: vec![ToolSpec {
                name: "search".into(),
                description: "Search".into(),
                input_schema: json!({"type": "object"}),
            }],
            labels: Some(vec!["yes".into(), "no".into()]),
            max_output_tokens: Some(64),
        }
    }

    #[test]
    fn the_body_carries_system_history_tools_schema_and_limit() {
        let body = request_body(&request());
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            json!("{\"q\":\"x\"}")
        );
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "Error: boom"})
        );
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["tools"][0]["function"]["name"], "search");
        assert_eq!(body["response_format"]["json_schema"]["strict"], true);
        assert_eq!(
            body["response_format"]["json_schema"]["schema"]["properties"]["label"]["enum"],
            json!(["yes", "no"])
        );
        assert_eq!(body["max_completion_tokens"], 64);
    }

    #[test]
    fn a_reply_without_call_ids_or_arguments_gets_generated_ones() {
        let reply = json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": ""}}]}}]});
        let parsed = parse_reply(&reply, &IdGenerator::default()).unwrap();
        assert_eq!(parsed.tool_calls[0].id, "orrery_call_0");
        assert_eq!(parsed.tool_calls[0].arguments, json!({}));
        assert_eq!(parsed.usage, Usage::default());
        assert_eq!(parsed.text, None);
    }

    #[test]
    fn unreadable_replies_are_bad_replies() {
        let cases = [
            json!({}),
            json!({"choices": []}),
            json!({"choices": [{"message": {"tool_calls": [{"function": {"name": "f", "arguments": "{x"}}]}}]}),
            json!({"choices": [{"message": {"refusal": "no"}}]}),
        ];
        for reply in cases {
            let result = parse_reply(&reply, &IdGenerator::default());
            assert!(matches!(result, Err(ModelError::BadReply(_))), "{reply}");
        }
    }
}
