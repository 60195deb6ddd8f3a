//! The `Scripted` provider: deterministic replies and tool calls from a registry entry's
//! script, for dry runs, demos and tests.
//!
//! Each node id's turns are used in order, one per model request of that node (a tool loop uses
//! one turn per round); after the last turn the last one repeats. A node the script does not name
//! uses the script's `fallback` turn, or echoes its input. A node visited again (a loop) continues
//! with its next turns. Turn counters are per node id behind a mutex, so concurrent calls of the
//! same node (a supervisor child) still take turns in order.

use super::{ChatRequest, ChatResponse, Message, ModelError, ModelProvider, ToolCall, Usage};
use async_trait::async_trait;
use orrery_crds::registry::{ModelScript, ScriptedTurn};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Placeholder replaced by the node's latest user message.
const INPUT_PLACEHOLDER: &str = "{{input}}";
/// Placeholder replaced by the tool results in the node's conversation.
const TOOL_RESULTS_PLACEHOLDER: &str = "{{tool_results}}";

/// Per-node progress through the script.
#[derive(Debug, Default)]
struct NodeState {
    /// Model requests this node has made so far.
    turns_taken: usize,
    /// Tool calls generated for this node so far (for deterministic call ids).
    calls_made: usize,
}

/// A provider that answers from a [`ModelScript`].
#[derive(Debug)]
pub struct ScriptedProvider {
    script: ModelScript,
    state: Mutex<HashMap<String, NodeState>>,
}

/// The turn chosen for one request, with the call ids reserved for it.
struct Chosen<'a> {
    /// `None`: echo the input.
    turn: Option<&'a ScriptedTurn>,
    /// The first tool call's number for this node.
    first_call: usize,
}

impl ScriptedProvider {
    /// A provider answering from `script`.
    pub fn new(script: ModelScript) -> Self {
        Self {
            script,
            state: Mutex::new(HashMap::new()),
        }
    }

    /// Takes the next turn of `node_id` (under the lock, so concurrent callers get turns in order).
    fn take_turn(&self, node_id: &str) -> Chosen<'_> {
        let scripted = self
            .script
            .nodes
            .get(node_id)
            .filter(|turns| !turns.is_empty());
        let mut guard = match self.state.lock() {
            Ok(guard) => guard,
            // A panic elsewhere while holding the lock leaves the counters intact; keep going.
            Err(poisoned) => poisoned.into_inner(),
        };
        // The node's counters (its id is copied once, at its first turn).
        if !guard.contains_key(node_id) {
            guard.insert(node_id.to_owned(), NodeState::default());
        }
        let Some(state) = guard.get_mut(node_id) else {
            return Chosen {
                turn: None,
                first_call: 0,
            };
        };
        let turn = match scripted {
            Some(turns) => {
                let index = state.turns_taken.min(turns.len() - 1);
                turns.get(index)
            }
            None => self.script.fallback.as_ref(),
        };
        state.turns_taken = state.turns_taken.saturating_add(1);
        let first_call = state.calls_made;
        let calls = turn.as_ref().map_or(0, |t| t.tool_calls.len());
        state.calls_made = state.calls_made.saturating_add(calls);
        Chosen { turn, first_call }
    }
}

#[async_trait]
impl ModelProvider for ScriptedProvider {
    fn provider_name(&self) -> &'static str {
        "orrery.scripted"
    }

    async fn complete(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let Chosen { turn, first_call } = self.take_turn(&request.node_id);
        if let Some(ms) = turn.as_ref().and_then(|t| t.delay_ms).filter(|ms| *ms > 0) {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
            }
        }
        let input = latest_user_text(&request.messages);
        let tool_results = tool_results_text(&request.messages);
        let render = |template: &str| {
            if !template.contains("{{") {
                // No placeholder: the text as it is.
                return template.to_owned();
            }
            render_field_placeholders(template, &request.messages)
                .replace(TOOL_RESULTS_PLACEHOLDER, &tool_results)
                .replace(INPUT_PLACEHOLDER, &input)
        };

        let (text, tool_calls, scripted_usage) = match &turn {
            Some(turn) if !turn.tool_calls.is_empty() => {
                let calls = turn
                    .tool_calls
                    .iter()
                    .enumerate()
                    .map(|(i, call)| ToolCall {
                        id: format!("call_{}_{}", request.node_id, first_call + i),
                        name: call.name.clone(),
                        arguments: if call.arguments.is_null() {
                            serde_json::Value::Object(serde_json::Map::new())
                        } else {
                            render_strings(&call.arguments, &render)
                        },
                    })
                    .collect();
                (turn.reply.as_deref().map(render), calls, turn.usage)
            }
            Some(turn) => {
                let reply = render(turn.reply.as_deref().unwrap_or(""));
                let text = answer_text(request, turn.label.as_deref(), reply);
                (Some(text), Vec::new(), turn.usage)
            }
            None => {
                let text = answer_text(request, None, input.clone());
                (Some(text), Vec::new(), None)
            }
        };
        let usage = match scripted_usage {
            Some(u) => Usage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
            },
            None => estimate_usage(request, text.as_deref(), &tool_calls),
        };
        Ok(ChatResponse {
            text,
            tool_calls,
            usage,
        })
    }
}

/// The final text: the reply, or for a labelled request the `{label, answer}` JSON (without
/// `label` when the turn has none, so the engine fails the node with a proper message).
fn answer_text(request: &ChatRequest, label: Option<&str>, reply: String) -> String {
    if request.labels.is_none() {
        return reply;
    }
    let mut object = serde_json::Map::new();
    if let Some(label) = label {
        object.insert("label".into(), serde_json::Value::String(label.into()));
    }
    object.insert("answer".into(), serde_json::Value::String(reply));
    serde_json::Value::Object(object).to_string()
}

/// The text of the conversation's latest user message (empty when there is none).
fn latest_user_text(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { text } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// The tool results of the conversation, one per line, in order.
/// Applies the placeholders to every string inside a tool call's arguments, so a scripted call
/// can pass the node's input on (e.g. `{"request": "{{input}}"}`).
fn render_strings(value: &serde_json::Value, render: &dyn Fn(&str) -> String) -> serde_json::Value {
    match value {
        serde_json::Value::String(s) => serde_json::Value::String(render(s)),
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(|v| render_strings(v, render)).collect())
        }
        serde_json::Value::Object(map) => serde_json::Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), render_strings(v, render)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Replaces each `{{tool_results.<field>}}` by that string field of every tool result that is a
/// JSON object (e.g. an A2A tool's `reply`), joined by newlines. A result without the field (a
/// plain-text result, a dry run's description) contributes its whole text.
fn render_field_placeholders(template: &str, messages: &[Message]) -> String {
    const OPEN: &str = "{{tool_results.";
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let Some(end) = after.find("}}") else {
            break;
        };
        let field = &after[..end];
        out.push_str(&rest[..start]);
        let values: Vec<String> = messages
            .iter()
            .filter_map(|m| match m {
                Message::ToolResult { content, .. } => Some(
                    serde_json::from_str::<serde_json::Value>(content)
                        .ok()
                        .and_then(|v| v.get(field).and_then(|f| f.as_str()).map(str::to_owned))
                        .unwrap_or_else(|| content.clone()),
                ),
                _ => None,
            })
            .collect();
        out.push_str(&values.join("\n"));
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

fn tool_results_text(messages: &[Message]) -> String {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Roughly four characters per token, rounded up.
fn tokens_for(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

/// A deterministic usage estimate for a turn without scripted usage.
fn estimate_usage(request: &ChatRequest, text: Option<&str>, calls: &[ToolCall]) -> Usage {
    let mut input_chars = request.system.as_deref().map_or(0, |s| s.chars().count());
    for message in &request.messages {
        input_chars += match message {
            Message::User { text } => text.chars().count(),
            Message::Assistant { text, tool_calls } => {
                text.as_deref().map_or(0, |t| t.chars().count())
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.to_string().len())
                        .sum::<usize>()
            }
            Message::ToolResult { content, .. } => content.chars().count(),
        };
    }
    let output_chars = text.map_or(0, |t| t.chars().count())
        + calls
            .iter()
            .map(|c| c.name.len() + c.arguments.to_string().len())
            .sum::<usize>();
    Usage {
        input_tokens: tokens_for(input_chars).max(1),
        output_tokens: tokens_for(output_chars).max(1),
    }
}

#[cfg(test)]
#[path = "scripted_tests.rs"]
mod tests;
