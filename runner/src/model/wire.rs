//! Pieces the provider adapters share: the labelled-answer schema, the `set_response` tool,
//! generated call ids, and reading tool arguments.

use super::{ModelError, ToolSpec};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

/// The tool a model calls to give a labelled answer where structured output is not used.
pub const SET_RESPONSE_TOOL: &str = "set_response";

/// Prefix of call ids generated for providers that give none.
pub const GENERATED_ID_PREFIX: &str = "orrery_call_";

/// The JSON Schema of a labelled answer: `{label: <one of labels>, answer: <text>}`.
pub fn labelled_answer_schema(labels: &[String]) -> Value {
    json!({
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": labels},
            "answer": {"type": "string"}
        },
        "required": ["label", "answer"],
        "additionalProperties": false
    })
}

/// The `set_response` tool for a labelled request.
pub fn set_response_tool(labels: &[String]) -> ToolSpec {
    ToolSpec {
        name: SET_RESPONSE_TOOL.to_string(),
        description: "Give your final answer: the label that fits and the answer text.".to_string(),
        input_schema: labelled_answer_schema(labels),
    }
}

/// Generates call ids unique within one provider.
#[derive(Debug, Default)]
pub struct IdGenerator(AtomicU64);

impl IdGenerator {
    /// The next id, `orrery_call_<n>`.
    pub fn next(&self) -> String {
        format!(
            "{GENERATED_ID_PREFIX}{}",
            self.0.fetch_add(1, Ordering::Relaxed)
        )
    }
}

/// Tool arguments sent as a JSON string (OpenAI): an empty string is `{}`.
pub fn arguments_from_string(name: &str, raw: &str) -> Result<Value, ModelError> {
    if raw.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(raw).map_err(|e| {
        ModelError::BadReply(format!(
            "the arguments of the call to {name} are not JSON: {e}"
        ))
    })
}

/// Arguments as an object: `null` becomes `{}`.
pub fn arguments_object(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => json!({}),
        Some(v) => v.clone(),
    }
}

/// A token count from a JSON number (absent: 0).
pub fn count(value: Option<&Value>) -> u64 {
    value.and_then(Value::as_u64).unwrap_or(0)
}
