//! Rendering programmed replies in each wire format.

use super::{StubBody, StubToolCall, Wire};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The HTTP response for `body` in `wire`'s format.
pub(super) fn render(wire: Wire, body: &StubBody, model: &str, number: usize) -> Response {
    match body {
        StubBody::Raw {
            status,
            headers,
            body,
        } => {
            let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = (status, body.clone()).into_response();
            for (name, value) in headers {
                if let (Ok(name), Ok(value)) = (
                    axum::http::HeaderName::from_bytes(name.as_bytes()),
                    axum::http::HeaderValue::from_str(value),
                ) {
                    response.headers_mut().insert(name, value);
                }
            }
            response
        }
        StubBody::Error {
            status,
            message,
            retry_after,
        } => {
            let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let json = match wire {
                Wire::OpenAi => {
                    json!({"error": {"message": message, "type": "invalid_request_error", "code": null}})
                }
                Wire::Anthropic => {
                    json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
                }
                Wire::Gemini => {
                    json!({"error": {"code": status.as_u16(), "message": message, "status": "INVALID_ARGUMENT"}})
                }
            };
            let mut response = (status, axum::Json(json)).into_response();
            if let Some(value) = retry_after
                && let Ok(value) = value.parse()
            {
                response.headers_mut().insert("retry-after", value);
            }
            response
        }
        StubBody::Answer {
            text,
            tool_calls,
            input_tokens,
            output_tokens,
        } => {
            let json = match wire {
                Wire::OpenAi => openai_answer(
                    text,
                    tool_calls,
                    *input_tokens,
                    *output_tokens,
                    model,
                    number,
                ),
                Wire::Anthropic => anthropic_answer(
                    text,
                    tool_calls,
                    *input_tokens,
                    *output_tokens,
                    model,
                    number,
                ),
                Wire::Gemini => {
                    gemini_answer(text, tool_calls, *input_tokens, *output_tokens, model)
                }
            };
            axum::Json(json).into_response()
        }
    }
}

fn openai_answer(
    text: &Option<String>,
    calls: &[StubToolCall],
    input: u64,
    output: u64,
    model: &str,
    number: usize,
) -> Value {
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                json!({
                    "id": c.id.clone().unwrap_or_else(|| format!("call_{number}_{i}")),
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments.to_string()}
                })
            })
            .collect();
    }
    json!({
        "id": format!("chatcmpl-stub-{number}"),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }
        }],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
    })
}

fn anthropic_answer(
    text: &Option<String>,
    calls: &[StubToolCall],
    input: u64,
    output: u64,
    model: &str,
    number: usize,
) -> Value {
    let mut content = Vec::new();
    if let Some(text) = text {
        content.push(json!({"type": "text", "text": text}));
    }
    for (i, c) in calls.iter().enumerate() {
        content.push(json!({
            "type": "tool_use",
            "id": c.id.clone().unwrap_or_else(|| format!("toolu_{number}_{i}")),
            "name": c.name,
            "input": c.arguments
        }));
    }
    json!({
        "id": format!("msg_stub_{number}"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
        "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": output}
    })
}

fn gemini_answer(
    text: &Option<String>,
    calls: &[StubToolCall],
    input: u64,
    output: u64,
    model: &str,
) -> Value {
    let mut parts = Vec::new();
    if let Some(text) = text {
        parts.push(json!({"text": text}));
    }
    for c in calls {
        let mut call = json!({"name": c.name, "args": c.arguments});
        if let Some(id) = &c.id {
            call["id"] = json!(id);
        }
        parts.push(json!({"functionCall": call}));
    }
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": parts},
            "finishReason": "STOP",
            "index": 0
        }],
        "usageMetadata": {
            "promptTokenCount": input,
            "candidatesTokenCount": output,
            "totalTokenCount": input + output
        },
        "modelVersion": model
    })
}
