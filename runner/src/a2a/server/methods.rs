//! The JSON-RPC methods: typed params and dispatch. Sending runs in [`super::send`]; listing
//! and following tasks in [`super::follow`]; what the three share (the answer, the task views
//! clients get, params errors) in [`super::reply`].

use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;

use super::ServerState;
use super::follow::{list_tasks, subscribe};
use super::reply::{Outcome, history_length, now, to_result, view};
use super::send::{send_message, send_streaming};
use super::store::task_not_found;
use crate::a2a::types::{A2aErrorCode, A2aMethod, CancelTaskRequest, GetTaskRequest, JsonRpcError};

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
