//! The text of a remote's reply and the parts it came in (rules 6.9, 6.13): only text parts
//! are passed on; data, URL and raw parts are listed as dropped. The question of an
//! input-required task is read from its status message on the wire (rule 4.37).

use super::outcome::PartInfo;
use crate::a2a::types::{Message, Part, PartContent, Task};

/// A reply's text and its parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplyText {
    /// The text parts, joined with newlines (not yet screened).
    pub text: String,
    /// The text parts.
    pub parts: Vec<PartInfo>,
    /// The parts dropped.
    pub dropped: Vec<PartInfo>,
}

fn part_info(part: &Part) -> PartInfo {
    let size = match &part.content {
        PartContent::Text(s) | PartContent::Raw(s) | PartContent::Url(s) => s.len(),
        PartContent::Data(v) => v.to_string().len(),
    };
    PartInfo {
        kind: part.kind(),
        size,
    }
}

/// The text of `parts`.
pub fn from_parts<'a>(parts: impl IntoIterator<Item = &'a Part>) -> ReplyText {
    let mut out = ReplyText::default();
    let mut texts = Vec::new();
    for part in parts {
        let info = part_info(part);
        match part.as_text() {
            Some(text) => {
                texts.push(text);
                out.parts.push(info);
            }
            None => out.dropped.push(info),
        }
    }
    out.text = texts.join("\n");
    out
}

/// A task's reply: its artifacts' parts, or its status message's when the artifacts carry no
/// text (agents that answer in the status message).
pub fn task_reply(task: &Task) -> ReplyText {
    let from_artifacts = from_parts(task.artifacts.iter().flat_map(|a| a.parts.iter()));
    if !from_artifacts.parts.is_empty() {
        return from_artifacts;
    }
    match &task.status.message {
        Some(message) => {
            let mut reply = from_parts(message.parts.iter());
            reply.dropped.splice(0..0, from_artifacts.dropped);
            reply
        }
        None => from_artifacts,
    }
}

/// A direct message's reply.
pub fn message_reply(message: &Message) -> ReplyText {
    from_parts(message.parts.iter())
}

/// The question of an input-required task (its status message's text).
pub fn question(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(Message::joined_text)
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(value: serde_json::Value) -> Task {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_text_parts_come_back_and_the_others_are_listed_as_dropped() {
        let t = task(
            json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "a", "parts": [
                {"text": "draft: x"}, {"data": {"kind": "dropped-data", "n": 1}}, {"url": "https://example.invalid/a.pdf"}
            ]}]}),
        );
        let reply = task_reply(&t);
        assert_eq!(reply.text, "draft: x");
        assert_eq!(
            reply.parts,
            vec![PartInfo {
                kind: "text",
                size: 8
            }]
        );
        let dropped: Vec<&str> = reply.dropped.iter().map(|p| p.kind).collect();
        assert_eq!(dropped, ["data", "url"]);
    }

    #[test]
    fn a_task_answering_in_its_status_message_is_read_from_there() {
        let t = task(
            json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_FAILED",
            "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "failed: x"}]}}}),
        );
        assert_eq!(task_reply(&t).text, "failed: x");
        assert_eq!(question(&t), "failed: x");
    }
}
