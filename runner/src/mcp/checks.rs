//! The checks a listed tool passes before a model may use it (rules 5.18, 7.3; anchors 26–29):
//! the entry allows it and lists it read-only, the server marks it `readOnlyHint: true` (a tool
//! listed read-only without it is refused loudly), its input schema keeps its references inside
//! the document, the safety screen finds nothing in its description, and its pin matches
//! (pinned on first sight, kept across runs).

use super::endpoint::McpEndpoint;
use super::error::PinSaveError;
use super::schema::check_input_schema;
use crate::pin::mcp_tool_pin_digest;
use crate::pin::store::{PinCheck, Pins, ToolPin};
use serde_json::Value;
use std::collections::BTreeMap;

/// A tool as the model may see it: the server's description and schema, as pinned.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDefinition {
    /// The description, if the server gave one.
    pub description: Option<String>,
    /// The input schema.
    pub input_schema: Value,
}

/// Whether a tool may be called in this run.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolState {
    /// Checked and pinned.
    Usable(ToolDefinition),
    /// Refused: the reason names the entry and the tool.
    Refused(String),
}

/// Checks every tool the entry allows against the server's list.
pub(super) fn check_all(
    endpoint: &McpEndpoint,
    pins: &dyn Pins,
    listed: &[rmcp::model::Tool],
) -> Result<BTreeMap<String, ToolState>, PinSaveError> {
    let entry = &endpoint.entry;
    let by_name: BTreeMap<&str, &rmcp::model::Tool> =
        listed.iter().map(|t| (t.name.as_ref(), t)).collect();
    let mut tools = BTreeMap::new();
    for name in &endpoint.tools {
        let state = match by_name.get(name.as_str()) {
            None => ToolState::Refused(format!(
                "MCP server '{entry}' does not list the tool '{name}' that the entry allows"
            )),
            Some(tool) => check_tool(endpoint, pins, tool)?,
        };
        if let ToolState::Refused(reason) = &state {
            tracing::warn!("{reason}");
        }
        tools.insert(name.clone(), state);
    }
    Ok(tools)
}

/// Checks one listed tool the entry allows, and pins it (rules 5.18, 7.3; anchors 26–29).
/// `Err` only when the pin store cannot be written.
fn check_tool(
    endpoint: &McpEndpoint,
    pins: &dyn Pins,
    tool: &rmcp::model::Tool,
) -> Result<ToolState, PinSaveError> {
    let entry = &endpoint.entry;
    let name = tool.name.as_ref();
    if !endpoint.read_only.iter().any(|t| t == name) {
        return Ok(ToolState::Refused(format!(
            "tool '{name}' of MCP entry '{entry}' is not listed in readOnly; only read-only tools can be used"
        )));
    }
    let hint = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
    if hint != Some(true) {
        let says = match hint {
            Some(false) => "readOnlyHint: false",
            _ => "no readOnlyHint",
        };
        return Ok(ToolState::Refused(format!(
            "MCP entry '{entry}' lists tool '{name}' as read-only, but the server gives it {says}; the tool is refused (fix the server's annotations or remove the tool from readOnly)"
        )));
    }
    let schema = Value::Object((*tool.input_schema).clone());
    if let Err(problem) = check_input_schema(&schema) {
        return Ok(ToolState::Refused(format!(
            "tool '{name}' of MCP entry '{entry}': {problem}"
        )));
    }
    let texts = tool
        .description
        .as_deref()
        .map(|d| ("its description".to_owned(), d))
        .into_iter()
        .chain(tool.title.as_deref().map(|t| ("its title".to_owned(), t)))
        .chain(
            schema_strings(&schema, "")
                .into_iter()
                .map(|(p, t)| (format!("its input schema at {p}"), t)),
        );
    for (where_, text) in texts {
        let screened = crate::safety::screen(text);
        if screened.is_flagged() {
            let flags: Vec<&str> = screened.flags.iter().map(|f| f.as_str()).collect();
            return Ok(ToolState::Refused(format!(
                "tool '{name}' of MCP entry '{entry}': {where_} was flagged by the safety screen ({}); the tool is refused",
                flags.join(", ")
            )));
        }
    }
    let annotations = tool
        .annotations
        .as_ref()
        .and_then(|a| serde_json::to_value(a).ok());
    let description = tool.description.as_deref().map(str::to_owned);
    let digest =
        match mcp_tool_pin_digest(name, description.as_deref(), &schema, annotations.as_ref()) {
            Ok(d) => d,
            Err(e) => {
                return Ok(ToolState::Refused(format!(
                    "tool '{name}' of MCP entry '{entry}' cannot be pinned: {e}"
                )));
            }
        };
    let pin = ToolPin {
        digest: digest.clone(),
        description: description.clone(),
        input_schema: schema.clone(),
        annotations,
        pinned_at: crate::events::format_rfc3339(jiff::Timestamp::now()),
    };
    match pins
        .check_tool(&endpoint.pin_key(), entry, name, pin)
        .map_err(|e| PinSaveError {
            entry: entry.clone(),
            tool: name.to_owned(),
            reason: e.to_string(),
        })? {
        PinCheck::PinnedNow | PinCheck::Matches => Ok(ToolState::Usable(ToolDefinition {
            description,
            input_schema: schema,
        })),
        PinCheck::Changed { pinned } => Ok(ToolState::Refused(format!(
            "tool '{name}' of MCP entry '{entry}' changed since it was pinned (pin {}…, now {}…): its description, input schema or annotations differ; it is disabled until re-pinned (`orrery pins reset {entry}`)",
            short(&pinned),
            short(&digest)
        ))),
        PinCheck::Unpinned => Ok(ToolState::Refused(format!(
            "tool '{name}' of MCP entry '{entry}' has no pin in {} (digest {}…); it is used only once the entry is probed and its pins accepted",
            pins.describe(),
            short(&digest)
        ))),
    }
}

/// Every string in a schema (descriptions, titles, enum values, defaults) with its JSON
/// pointer: the model reads them all.
fn schema_strings<'a>(value: &'a Value, path: &str) -> Vec<(String, &'a str)> {
    match value {
        Value::String(s) => vec![(path.to_owned(), s.as_str())],
        Value::Array(items) => items
            .iter()
            .enumerate()
            .flat_map(|(i, v)| schema_strings(v, &format!("{path}/{i}")))
            .collect(),
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| schema_strings(v, &format!("{path}/{k}")))
            .collect(),
        _ => Vec::new(),
    }
}

fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}
