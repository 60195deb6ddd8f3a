//! `ListTasks` and `SubscribeToTask`: paging over the stored tasks and following one task's
//! changes as SSE until it ends or is interrupted.

use futures::stream::{self, StreamExt};
use std::sync::Arc;
use tokio::sync::watch;

use super::ServerState;
use super::reply::{Outcome, history_length, invalid_params, view};
use super::store::task_not_found;
use crate::a2a::types::{
    A2aErrorCode, JsonRpcError, ListTasksRequest, ListTasksResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent,
};

pub(super) fn list_tasks(
    state: &ServerState,
    req: ListTasksRequest,
) -> Result<ListTasksResponse, JsonRpcError> {
    let page_size = match req.page_size {
        None => 50,
        Some(n @ 1..=100) => n,
        Some(_) => return Err(invalid_params("pageSize", "must be between 1 and 100")),
    };
    let offset = match req.page_token.as_deref() {
        None | Some("") => 0,
        Some(token) => token
            .parse::<usize>()
            .map_err(|_| invalid_params("pageToken", "is not a token this server issued"))?,
    };
    let history = history_length(req.history_length, "historyLength")?;
    let after = match req.status_timestamp_after.as_deref() {
        None => None,
        Some(ts) => Some(ts.parse::<jiff::Timestamp>().map_err(|_| {
            invalid_params("statusTimestampAfter", "must be an RFC 3339 timestamp")
        })?),
    };
    let status = req.status.filter(|s| *s != TaskState::Unspecified);
    let matching: Vec<Task> = state
        .tasks
        .newest_first()
        .into_iter()
        .filter(|t| {
            req.context_id
                .as_deref()
                .is_none_or(|c| c.is_empty() || t.context_id == c)
        })
        .filter(|t| status.is_none_or(|s| t.status.state == s))
        .filter(|t| {
            after.is_none_or(|after| {
                t.status
                    .timestamp
                    .as_deref()
                    .and_then(|ts| ts.parse::<jiff::Timestamp>().ok())
                    .is_some_and(|ts| ts >= after)
            })
        })
        .collect();
    let total = matching.len();
    let size = usize::try_from(page_size).unwrap_or(50);
    let end = offset.saturating_add(size).min(total);
    let include_artifacts = req.include_artifacts.unwrap_or(false);
    let tasks = matching
        .into_iter()
        .skip(offset)
        .take(size)
        .map(|t| view(t, history, include_artifacts))
        .collect();
    Ok(ListTasksResponse {
        tasks,
        next_page_token: if end < total {
            end.to_string()
        } else {
            String::new()
        },
        page_size,
        total_size: i32::try_from(total).unwrap_or(i32::MAX),
    })
}

/// Events for the change from `before` to `after`: new artifacts, then a changed status.
fn changes(before: &Task, after: &Task) -> Vec<StreamResponse> {
    let mut events: Vec<StreamResponse> = after
        .artifacts
        .iter()
        .skip(before.artifacts.len())
        .map(|artifact| {
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: after.id.clone(),
                context_id: after.context_id.clone(),
                artifact: artifact.clone(),
                append: false,
                last_chunk: true,
                metadata: None,
            })
        })
        .collect();
    if before.status != after.status {
        events.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: after.id.clone(),
            context_id: after.context_id.clone(),
            status: after.status.clone(),
            metadata: None,
        }));
    }
    events
}

pub(super) fn subscribe(
    state: &Arc<ServerState>,
    req: SubscribeToTaskRequest,
) -> Result<Outcome, JsonRpcError> {
    let receiver = state
        .tasks
        .subscribe(&req.id)
        .ok_or_else(|| task_not_found(&req.id))?;
    let current = receiver.borrow().clone();
    if current.status.state.is_terminal() {
        return Err(JsonRpcError::new(
            A2aErrorCode::UnsupportedOperation,
            format!(
                "Task {} is in terminal state {}; there is nothing to subscribe to",
                req.id,
                current.status.state.as_str()
            ),
        ));
    }
    let first = stream::iter([StreamResponse::Task(current.clone())]);
    if current.status.state.is_interrupted() {
        return Ok(Outcome::Stream(first.boxed()));
    }
    struct Follow {
        receiver: watch::Receiver<Task>,
        last: Task,
        shutdown: tokio_util::sync::CancellationToken,
    }
    let follow = Follow {
        receiver,
        last: current,
        shutdown: state.shutdown.clone(),
    };
    let rest = stream::unfold(Some(follow), |follow| async move {
        let mut f = follow?;
        let changed = tokio::select! {
            changed = f.receiver.changed() => changed.is_ok(),
            () = f.shutdown.cancelled() => false,
        };
        if !changed {
            return None;
        }
        let now = f.receiver.borrow_and_update().clone();
        let events = changes(&f.last, &now);
        let done = now.status.state.is_terminal() || now.status.state.is_interrupted();
        f.last = now;
        Some((events, (!done).then_some(f)))
    })
    .flat_map(stream::iter);
    Ok(Outcome::Stream(first.chain(rest).boxed()))
}
