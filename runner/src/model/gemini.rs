//! Gemini generateContent: `POST {base}/v1beta/models/{model}:generateContent` with
//! `x-goog-api-key`.
//!
//! Labelled requests use `generationConfig.responseMimeType: application/json` with a
//! `responseSchema`; when the node also has tools (JSON output and function calling do not mix)
//! they add the `set_response` function with `functionCallingConfig.mode: ANY` instead.
//! Thought signatures Gemini attaches to function calls are kept per call id and sent back with
//! the call, as the API requires.

use super::http::{HttpCaller, join_url, secret_header};
use super::wire::{
    GENERATED_ID_PREFIX, IdGenerator, SET_RESPONSE_TOOL, arguments_object, count, set_response_tool,
};
use super::{ChatRequest, ChatResponse, Message, ModelError, ModelProvider, ToolCall, Usage};
use crate::secrets::SecretValue;
use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// The public endpoint.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";
/// Thought signatures remembered at most (oldest forgotten first).
const MAX_SIGNATURES: usize = 4096;

/// Thought signatures by call id.
#[derive(Debug, Default)]
struct Signatures {
    by_id: HashMap<String, String>,
    order: VecDeque<String>,
}

impl Signatures {
    fn insert(&mut self, id: String, signature: String) {
        if self.by_id.insert(id.clone(), signature).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > MAX_SIGNATURES {
            if let Some(old) = self.order.pop_front() {
                self.by_id.remove(&old);
            }
        }
    }
}

/// A Gemini endpoint.
#[derive(Debug)]
pub struct GeminiProvider {
    http: HttpCaller,
    base_url: String,
    api_key: Option<SecretValue>,
    ids: IdGenerator,
    signatures: Mutex<Signatures>,
}

impl GeminiProvider {
    /// A provider at `base_url` (default [`DEFAULT_BASE_URL`]).
    pub fn new(http: HttpCaller, base_url: Option<&str>, api_key: Option<SecretValue>) -> Self {
        Self {
            http,
            base_url: base_url.unwrap_or(DEFAULT_BASE_URL).to_string(),
            api_key,
            ids: IdGenerator::default(),
            signatures: Mutex::new(Signatures::default()),
        }
    }

    fn signatures(&self) -> std::sync::MutexGuard<'_, Signatures> {
        match self.signatures.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

/// The URL path for `model` (a leading `models/` is accepted).
fn model_path(model: &str) -> Result<String, ModelError> {
    let name = model.strip_prefix("models/").unwrap_or(model);
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(ModelError::Misconfigured(format!(
            "the Gemini model name {model:?} may hold only letters, digits, '-', '_' and '.'"
        )));
    }
    Ok(format!("/v1beta/models/{name}:generateContent"))
}

#[async_trait]
impl ModelProvider for GeminiProvider {
    fn provider_name(&self) -> &'static str {
        "gcp.gemini"
    }

    async fn complete(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ModelError> {
        let url = join_url(&self.base_url, &model_path(&request.model)?);
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            headers.insert(
                HeaderName::from_static("x-goog-api-key"),
                secret_header(key.expose())?,
            );
        }
        let body = {
            let signatures = self.signatures();
            request_body(request, &signatures.by_id)
        };
        let secret = self.api_key.as_ref().map(SecretValue::expose);
        let reply = self
            .http
            .post_json(&url, headers, &body, secret, cancel)
            .await?;
        let (response, new_signatures) = parse_reply(&reply, &self.ids)?;
        let mut signatures = self.signatures();
        for (id, signature) in new_signatures {
            signatures.insert(id, signature);
        }
        Ok(response)
    }
}

/// Appends `parts` as a `role` content, merged into the previous one with the same role.
fn push_parts(contents: &mut Vec<Value>, role: &str, parts: Vec<Value>) {
    if parts.is_empty() {
        return;
    }
    if let Some(last) = contents.last_mut()
        && last["role"] == role
        && let Some(existing) = last["parts"].as_array_mut()
    {
        existing.extend(parts);
        return;
    }
    contents.push(json!({"role": role, "parts": parts}));
}

/// A call id as sent back: ids we generated are not Gemini's, so they are left out.
fn provider_id(id: &str) -> Option<&str> {
    (!id.starts_with(GENERATED_ID_PREFIX)).then_some(id)
}

/// The request body for `request`, with remembered thought signatures.
pub(crate) fn request_body(request: &ChatRequest, signatures: &HashMap<String, String>) -> Value {
    let mut contents = Vec::new();
    for message in &request.messages {
        match message {
            Message::User { text } => {
                push_parts(&mut contents, "user", vec![json!({"text": text})])
            }
            Message::Assistant { text, tool_calls } => {
                let mut parts = Vec::new();
                if let Some(text) = text.as_deref().filter(|t| !t.is_empty()) {
                    parts.push(json!({"text": text}));
                }
                for call in tool_calls {
                    let mut function_call = json!({"name": call.name, "args": call.arguments});
                    if let Some(id) = provider_id(&call.id) {
                        function_call["id"] = json!(id);
                    }
                    let mut part = json!({"functionCall": function_call});
                    if let Some(signature) = signatures.get(&call.id) {
                        part["thoughtSignature"] = json!(signature);
                    }
                    parts.push(part);
                }
                push_parts(&mut contents, "model", parts);
            }
            Message::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => {
                let response = if *is_error {
                    json!({"error": content})
                } else {
                    json!({"content": content})
                };
                let mut function_response = json!({"name": name, "response": response});
                if let Some(id) = provider_id(call_id) {
                    function_response["id"] = json!(id);
                }
                push_parts(
                    &mut contents,
                    "user",
                    vec![json!({"functionResponse": function_response})],
                );
            }
        }
    }
    let mut declarations: Vec<Value> = request
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.input_schema}))
        .collect();
    let mut body = json!({"contents": contents});
    if let Some(system) = &request.system {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    let mut generation = serde_json::Map::new();
    if let Some(max) = request.max_output_tokens {
        generation.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(labels) = &request.labels {
        if declarations.is_empty() {
            generation.insert("responseMimeType".into(), json!("application/json"));
            generation.insert(
                "responseSchema".into(),
                json!({
                    "type": "OBJECT",
                    "properties": {
                        "label": {"type": "STRING", "enum": labels},
                        "answer": {"type": "STRING"}
                    },
                    "required": ["label", "answer"]
                }),
            );
        } else {
            let spec = set_response_tool(labels);
            declarations.push(json!({
                "name": spec.name,
                "description": spec.description,
                "parametersJsonSchema": spec.input_schema,
            }));
            body["toolConfig"] = json!({"functionCallingConfig": {"mode": "ANY"}});
        }
    }
    if !declarations.is_empty() {
        body["tools"] = json!([{"functionDeclarations": declarations}]);
    }
    if !generation.is_empty() {
        body["generationConfig"] = Value::Object(generation);
    }
    body
}

/// Reads a generateContent reply, with the thought signatures of its function calls.
pub(crate) fn parse_reply(
    reply: &Value,
    ids: &IdGenerator,
) -> Result<(ChatResponse, Vec<(String, String)>), ModelError> {
    let candidate = reply.get("candidates").and_then(|c| c.get(0));
    let Some(candidate) = candidate else {
        let reason = reply
            .get("promptFeedback")
            .and_then(|f| f.get("blockReason"))
            .and_then(Value::as_str);
        return Err(ModelError::BadReply(match reason {
            Some(reason) => format!("the prompt was blocked ({reason})"),
            None => "the reply has no candidates".to_string(),
        }));
    };
    let parts = candidate
        .get("content")
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array);
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    let mut signatures = Vec::new();
    let mut set_response = None;
    for part in parts.into_iter().flatten() {
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        if let Some(text) = part.get("text").and_then(Value::as_str) {
            texts.push(text);
        }
        if let Some(call) = part.get("functionCall") {
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| ModelError::BadReply("a functionCall has no name".into()))?;
            let arguments = arguments_object(call.get("args"));
            if name == SET_RESPONSE_TOOL {
                set_response = Some(arguments);
                continue;
            }
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .map_or_else(|| ids.next(), str::to_string);
            if let Some(signature) = part.get("thoughtSignature").and_then(Value::as_str) {
                signatures.push((id.clone(), signature.to_string()));
            }
            tool_calls.push(ToolCall {
                id,
                name: name.to_string(),
                arguments,
            });
        }
    }
    let metadata = reply.get("usageMetadata");
    let usage = Usage {
        input_tokens: count(metadata.and_then(|m| m.get("promptTokenCount")))
            + count(metadata.and_then(|m| m.get("toolUsePromptTokenCount"))),
        output_tokens: count(metadata.and_then(|m| m.get("candidatesTokenCount")))
            + count(metadata.and_then(|m| m.get("thoughtsTokenCount"))),
    };
    if let Some(answer) = set_response {
        let response = ChatResponse {
            text: Some(answer.to_string()),
            tool_calls: Vec::new(),
            usage,
        };
        return Ok((response, Vec::new()));
    }
    let text = texts.concat();
    if text.is_empty() && tool_calls.is_empty() {
        let reason = candidate.get("finishReason").and_then(Value::as_str);
        if let Some(reason) = reason.filter(|r| *r != "STOP" && *r != "MAX_TOKENS") {
            return Err(ModelError::BadReply(format!(
                "the model gave no answer (finishReason {reason})"
            )));
        }
    }
    let response = ChatResponse {
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        usage,
    };
    Ok((response, signatures))
}

#[cfg(test)]
#[path = "gemini_tests.rs"]
mod tests;
