//! Labelled answers: the JSON object `{"label": …, "answer": …}` a labelled node or a router
//! answers with, and why one cannot route. The reasons never carry the model's text unless
//! content capture is on (rule 8.4): an unknown label is named by its size, or quoted redacted
//! and cut to 64 bytes through [`Trace::quote`].

use crate::events::Trace;

/// Why a labelled answer cannot route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LabelProblem {
    /// The answer is not JSON.
    NotJson,
    /// The answer is JSON, but not an object.
    NotObject,
    /// The object has no `label`.
    NoLabel,
    /// The `label` is not a string.
    LabelNotString,
    /// The label is not one of the node's (the model's text, kept to describe it).
    Unknown(String),
}

impl LabelProblem {
    /// The reason, for the node's error: the model's text only through `trace.quote`.
    pub(crate) fn describe(&self, trace: &Trace) -> String {
        match self {
            LabelProblem::NotJson => {
                "its answer is not the JSON object {\"label\": …, \"answer\": …}".into()
            }
            LabelProblem::NotObject => "its answer is not a JSON object".into(),
            LabelProblem::NoLabel => "its answer has no label".into(),
            LabelProblem::LabelNotString => "its label is not a string".into(),
            LabelProblem::Unknown(label) => {
                format!("it answered with an unknown label {}", trace.quote(label))
            }
        }
    }
}

/// Reads a labelled answer: the JSON object `{"label": …, "answer": …}` (a fenced code block
/// around it is accepted). The label must be one of `labels`.
pub(crate) fn parse_labelled(
    text: &str,
    labels: &[String],
) -> Result<(String, String), LabelProblem> {
    let mut body = text.trim();
    if let Some(rest) = body.strip_prefix("```") {
        let rest = rest.strip_prefix("json").unwrap_or(rest);
        body = rest.strip_suffix("```").unwrap_or(rest).trim();
    }
    let value: serde_json::Value = serde_json::from_str(body).map_err(|_| LabelProblem::NotJson)?;
    let Some(object) = value.as_object() else {
        return Err(LabelProblem::NotObject);
    };
    let label = match object.get("label") {
        Some(serde_json::Value::String(l)) => l.clone(),
        Some(_) => return Err(LabelProblem::LabelNotString),
        None => return Err(LabelProblem::NoLabel),
    };
    if !labels.contains(&label) {
        return Err(LabelProblem::Unknown(label));
    }
    let answer = match object.get("answer") {
        Some(serde_json::Value::String(a)) => a.clone(),
        None | Some(serde_json::Value::Null) => String::new(),
        Some(other) => other.to_string(),
    };
    Ok((label, answer))
}

/// The longest model-facing tool name recorded (rule 1.29).
const MAX_TOOL_NAME: usize = 64;
/// The longest call id recorded (providers make them; the Scripted model's hold a node id).
const MAX_CALL_ID: usize = 128;

/// Whether a name is plain: `^[A-Za-z0-9_-]{1,max}$` (tool names: `max` 64).
pub(crate) fn is_plain_name(name: &str, max: usize) -> bool {
    (1..=max).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// How an event records a tool name the model invented (no tool of the node has it): with
/// content capture on and a plain name, the name (redacted); otherwise only that it is unknown,
/// and its size.
pub(crate) fn recorded_unknown_tool(trace: &Trace, name: &str) -> String {
    if trace.captures_content() && is_plain_name(name, MAX_TOOL_NAME) {
        return trace
            .content(name)
            .unwrap_or_else(|| unknown_tool_size(name));
    }
    unknown_tool_size(name)
}

fn unknown_tool_size(name: &str) -> String {
    format!("(unknown tool, {} characters)", name.chars().count())
}

/// How an event records a model call's id: as is when it is a plain name (providers make
/// them), otherwise only its size.
pub(crate) fn recorded_call_id(id: &str) -> String {
    if is_plain_name(id, MAX_CALL_ID) {
        id.to_owned()
    } else {
        format!("(call id of {} characters)", id.chars().count())
    }
}
