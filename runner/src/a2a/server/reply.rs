//! What the JSON-RPC methods share ([`super::methods`], [`super::send`], [`super::follow`]):
//! the [`Outcome`] a method answers, the task as a client sees it, params errors, and the ids
//! and timestamps of new tasks and messages.

use futures::stream::BoxStream;
use serde_json::Value;

use crate::a2a::types::{A2aErrorCode, JsonRpcError, StreamResponse, Task};

/// What a method answers: one result, or a stream of events.
pub(crate) enum Outcome {
    Result(Value),
    Stream(BoxStream<'static, StreamResponse>),
}

/// A method's one result, as JSON.
pub(super) fn to_result<T: serde::Serialize>(value: &T) -> Result<Outcome, JsonRpcError> {
    serde_json::to_value(value)
        .map(Outcome::Result)
        .map_err(|e| JsonRpcError::new(A2aErrorCode::InternalError, format!("Internal error: {e}")))
}

/// An `InvalidParams` error naming `field` as a `BadRequest` violation.
pub(super) fn invalid_params(field: &str, why: &str) -> JsonRpcError {
    JsonRpcError::new(
        A2aErrorCode::InvalidParams,
        format!("Invalid params: {field}: {why}"),
    )
    .with_field_violation(field, why)
}

/// A `historyLength`-style param as a count of messages; a negative one is invalid.
pub(super) fn history_length(
    value: Option<i32>,
    field: &str,
) -> Result<Option<usize>, JsonRpcError> {
    match value {
        None => Ok(None),
        Some(n) => usize::try_from(n)
            .map(Some)
            .map_err(|_| invalid_params(field, "must not be negative")),
    }
}

/// Now, as an RFC 3339 timestamp (a task status's time).
pub(crate) fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// A fresh id, for a new task, artifact or message.
pub(super) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The task as a client sees it: history cut to the most recent `history` messages.
pub(super) fn view(mut task: Task, history: Option<usize>, include_artifacts: bool) -> Task {
    if let Some(keep) = history {
        let excess = task.history.len().saturating_sub(keep);
        task.history.drain(..excess);
    }
    if !include_artifacts {
        task.artifacts.clear();
    }
    task
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::a2a::types::{Message, Role};

    #[test]
    fn a_view_keeps_the_most_recent_history() {
        let msg = |id: &str| Message::text(Role::User, id, "x");
        let task = Task {
            history: vec![msg("1"), msg("2"), msg("3")],
            ..Task::default()
        };
        let ids = |t: Task| {
            t.history
                .into_iter()
                .map(|m| m.message_id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(view(task.clone(), Some(2), true)), ["2", "3"]);
        assert_eq!(ids(view(task.clone(), Some(0), true)), Vec::<String>::new());
        assert_eq!(ids(view(task, None, true)), ["1", "2", "3"]);
    }
}
