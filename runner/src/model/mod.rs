//! Model providers behind one trait: OpenAI-compatible chat completions, Anthropic Messages,
//! Gemini generateContent, and the deterministic `Scripted` provider.
//!
//! PUBLIC API (fixed; the engine codes against it).

pub mod anthropic;
pub mod factory;
pub mod gemini;
pub mod http;
pub mod openai;
pub mod scripted;
pub(crate) mod wire;

pub use anthropic::AnthropicProvider;
pub use factory::ProviderFactory;
pub use gemini::GeminiProvider;
pub use http::{CallLimits, HttpCaller, RetryPolicy};
pub use openai::OpenAiProvider;
pub use scripted::ScriptedProvider;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Model-facing name (`mcp_<entry>_<tool>`, `a2a_<entry>_<skill>`, `n_<child>`).
    pub name: String,
    /// Description shown to the model.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: serde_json::Value,
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (generated when the provider gives none).
    pub id: String,
    /// Model-facing tool name.
    pub name: String,
    /// Arguments (a JSON object).
    pub arguments: serde_json::Value,
}

/// One message of a node's conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The node's input (or a person's comment).
    User {
        /// Text.
        text: String,
    },
    /// A previous model turn.
    Assistant {
        /// Text, if any.
        text: Option<String>,
        /// Tool calls it made.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of a tool call.
    ToolResult {
        /// The call's id.
        call_id: String,
        /// The tool's model-facing name.
        name: String,
        /// The result as text.
        content: String,
        /// Whether the tool failed.
        is_error: bool,
    },
}

/// One request to a model: a node's single turn (with its tool loop so far).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The node asking (the Scripted provider scripts by node id).
    pub node_id: String,
    /// The provider's model name.
    pub model: String,
    /// The node's instruction.
    pub system: Option<String>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// For a labelled node or a router: the allowed labels. The model must then answer with the
    /// JSON object `{"label": <one of them>, "answer": <text>}` as its text (providers use
    /// structured output, or a forced `set_response` tool, and return that JSON as `text`).
    pub labels: Option<Vec<String>>,
    /// Upper bound on output tokens.
    pub max_output_tokens: Option<u32>,
}

/// Tokens a response used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// A model's answer to one request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Text (for a labelled request: the `{label, answer}` JSON).
    pub text: Option<String>,
    /// Tool calls to run before the next turn (empty: the model has answered).
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used.
    pub usage: Usage,
}

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The run was cancelled while the call was in flight.
    #[error("the model call was cancelled")]
    Cancelled,
    /// No answer within the entry's timeout.
    #[error("the model did not answer within {0} s")]
    Timeout(u64),
    /// The provider refused the request (4xx other than 429).
    #[error("the provider refused the request (HTTP {status}): {message}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// The provider's message (secrets never included).
        message: String,
    },
    /// Still rate-limited or failing (429/5xx) after the retries.
    #[error("the provider kept failing after {attempts} attempts (last HTTP {status})")]
    Exhausted {
        /// Attempts made.
        attempts: u32,
        /// Last HTTP status.
        status: u16,
    },
    /// The connection failed.
    #[error("could not reach the model endpoint: {0}")]
    Transport(String),
    /// The reply could not be understood.
    #[error("the model's reply could not be read: {0}")]
    BadReply(String),
    /// The entry is misconfigured (e.g. a missing API key).
    #[error("model entry misconfigured: {0}")]
    Misconfigured(String),
}

/// A model endpoint.
#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// The provider as the OpenTelemetry GenAI conventions name it (`gen_ai.provider.name`):
    /// `anthropic`, `openai`, `gcp.gemini`, or `orrery.scripted`; carried by each model call's
    /// record on `node.exit`.
    fn provider_name(&self) -> &'static str;

    /// Runs one request. Must return [`ModelError::Cancelled`] promptly when `cancel` fires.
    async fn complete(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ModelError>;
}
