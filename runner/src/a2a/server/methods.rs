//! The JSON-RPC methods: typed params, dispatch, and the task views clients get. Sending runs
//! in [`super::send`]; listing and following tasks in [`super::follow`].

use futures::stream::BoxStream;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;

use super::ServerState;
use super::follow::{list_tasks, subscribe};
use super::send::{send_message, send_streaming};
use super::store::task_not_found;
use crate::a2a::types::{
    A2aErrorCode, A2aMethod, CancelTaskRequest, GetTaskRequest, JsonRpcError, StreamResponse, Task,
};

/// What a method answers: one result, or a stream of events.
pub(crate) enum Outcome {
    Result(Value),
    Stream(BoxStream<'static, StreamResponse>),
}

pub(crate) async fn dispatch(
    state: &Arc<ServerState>,
    method: A2aMethod,
    params: Option<Value>,
) -> Result<Outcome, JsonRpcError> {
    match method {
        A2aMethod::SendMessage => send_message(state, parse(params)?).await,
        A2aMethod::SendStreamingMessage => send_streaming(state, parse(params)?),
        A2aMethod::GetTask => {
            let req: GetTaskRequest = parse(params)?;
            let history = history_length(req.history_length, "historyLength")?;
            let task = state
                .tasks
                .get(&req.id)
                .ok_or_else(|| task_not_found(&req.id))?;
            to_result(&view(task, history, true))
        }
        A2aMethod::ListTasks => to_result(&list_tasks(state, parse(params)?)?),
        A2aMethod::CancelTask => {
            let req: CancelTaskRequest = parse(params)?;
            to_result(&state.tasks.cancel(&req.id, now())?)
        }
        A2aMethod::SubscribeToTask => subscribe(state, parse(params)?),
        A2aMethod::CreateTaskPushNotificationConfig
        | A2aMethod::GetTaskPushNotificationConfig
        | A2aMethod::ListTaskPushNotificationConfigs
        | A2aMethod::DeleteTaskPushNotificationConfig => Err(JsonRpcError::new(
            A2aErrorCode::PushNotificationNotSupported,
            "Push notifications are not supported by this agent",
        )),
        A2aMethod::GetExtendedAgentCard => Err(JsonRpcError::new(
            A2aErrorCode::ExtendedAgentCardNotConfigured,
            "This agent has no extended agent card",
        )),
    }
}

pub(super) fn to_result<T: serde::Serialize>(value: &T) -> Result<Outcome, JsonRpcError> {
    serde_json::to_value(value)
        .map(Outcome::Result)
        .map_err(|e| JsonRpcError::new(A2aErrorCode::InternalError, format!("Internal error: {e}")))
}

/// Typed params; errors name the offending field as a `BadRequest` violation.
fn parse<T: DeserializeOwned>(params: Option<Value>) -> Result<T, JsonRpcError> {
    let value = params.unwrap_or_else(|| Value::Object(Default::default()));
    if !value.is_object() {
        return Err(JsonRpcError::new(
            A2aErrorCode::InvalidParams,
            "Invalid params: params must be an object",
        )
        .with_field_violation("params", "must be an object"));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let why = e.inner().to_string();
        JsonRpcError::new(
            A2aErrorCode::InvalidParams,
            format!("Invalid params: {path}: {why}"),
        )
        .with_field_violation(path, why)
    })
}

pub(super) fn invalid_params(field: &str, why: &str) -> JsonRpcError {
    JsonRpcError::new(
        A2aErrorCode::InvalidParams,
        format!("Invalid params: {field}: {why}"),
    )
    .with_field_violation(field, why)
}

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

pub(crate) fn now() -> String {
    jiff::Timestamp::now().to_string()
}

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
