//! `SendMessage` and `SendStreamingMessage`: validation, the task lifecycle around the agent's
//! [`super::AgentHandler::handle`], and the SSE event sequence (task, working, artifacts, final
//! status).

use futures::stream::{self, StreamExt};
use std::sync::Arc;
use tokio::sync::mpsc;

use super::ServerState;
use super::handler::{AgentReply, AgentRequest};
use super::reply::{Outcome, history_length, new_id, now, to_result, view};
use crate::a2a::types::{
    A2aErrorCode, JsonRpcError, Message, Role, SendMessageRequest, SendMessageResponse,
    StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

/// A validated send: the request for the agent and the task it runs in.
struct Prepared {
    request: AgentRequest,
    task: Task,
    is_new: bool,
    history: Option<usize>,
    return_immediately: bool,
}

fn validate_user_message(message: &Message) -> Result<(), JsonRpcError> {
    let mut violations = Vec::new();
    if message.message_id.is_empty() {
        violations.push(("message.messageId", "Field is required"));
    }
    if message.role != Role::User {
        violations.push(("message.role", "must be ROLE_USER"));
    }
    if message.parts.is_empty() {
        violations.push(("message.parts", "Field is required"));
    }
    let Some((first, why)) = violations.first() else {
        return Ok(());
    };
    let mut err = JsonRpcError::new(
        A2aErrorCode::InvalidParams,
        format!("Invalid params: {first}: {why}"),
    );
    for (field, why) in &violations {
        err = err.with_field_violation(*field, *why);
    }
    Err(err)
}

/// Whether a media type (`text/markdown`) is matched by an accepted one (`text/*`, `*/*`).
fn mode_accepted(offered: &str, accepted: &str) -> bool {
    let accepted = accepted.split(';').next().unwrap_or_default().trim();
    let (a_type, a_sub) = accepted.split_once('/').unwrap_or((accepted, ""));
    let (o_type, o_sub) = offered.split_once('/').unwrap_or((offered, ""));
    (a_type == "*" || a_type.eq_ignore_ascii_case(o_type))
        && (a_sub == "*" || a_sub.eq_ignore_ascii_case(o_sub))
}

fn prepare(state: &ServerState, req: SendMessageRequest) -> Result<Prepared, JsonRpcError> {
    let mut message = req.message;
    validate_user_message(&message)?;
    let config = req.configuration.unwrap_or_default();
    let offered = &state.handler.card().default_output_modes;
    if !config.accepted_output_modes.is_empty()
        && !offered.iter().any(|o| {
            config
                .accepted_output_modes
                .iter()
                .any(|a| mode_accepted(o, a))
        })
    {
        return Err(JsonRpcError::new(
            A2aErrorCode::ContentTypeNotSupported,
            format!(
                "None of the accepted output modes ({}) is produced by this agent ({})",
                config.accepted_output_modes.join(", "),
                offered.join(", ")
            ),
        ));
    }
    let history = history_length(config.history_length, "configuration.historyLength")?;
    let (task, is_new, earlier) = match message.task_id.clone() {
        Some(task_id) => {
            let context = message.context_id.clone();
            let task = state
                .tasks
                .continue_task(&task_id, context.as_deref(), &message, now())?;
            message.context_id = Some(task.context_id.clone());
            let earlier = task.history[..task.history.len().saturating_sub(1)].to_vec();
            (task, false, earlier)
        }
        None => {
            let task_id = new_id();
            let context_id = message.context_id.clone().unwrap_or_else(new_id);
            message.task_id = Some(task_id.clone());
            message.context_id = Some(context_id.clone());
            let task = Task {
                id: task_id,
                context_id,
                status: TaskStatus {
                    state: TaskState::Submitted,
                    message: None,
                    timestamp: Some(now()),
                },
                history: vec![message.clone()],
                ..Task::default()
            };
            state.tasks.insert(task.clone());
            (task, true, Vec::new())
        }
    };
    Ok(Prepared {
        request: AgentRequest {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            message,
            history: earlier,
            accepted_output_modes: config.accepted_output_modes,
            metadata: req.metadata,
        },
        task,
        is_new,
        history,
        return_immediately: config.return_immediately,
    })
}

/// Runs the agent on a prepared task, recording each step in the store and sending it as a
/// stream event. Returns the task as it ends.
async fn run_task(
    state: Arc<ServerState>,
    prepared: Prepared,
    events: mpsc::UnboundedSender<StreamResponse>,
) -> Task {
    let Prepared {
        request,
        task,
        is_new,
        ..
    } = prepared;
    let (task_id, context_id) = (task.id.clone(), task.context_id.clone());
    let emit = |event: StreamResponse| {
        // The client may have gone; the task still runs to its end and is kept.
        let _ = events.send(event);
    };
    let status_event = |status: TaskStatus| {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: task_id.clone(),
            context_id: context_id.clone(),
            status,
            metadata: None,
        })
    };
    emit(StreamResponse::Task(task));
    if is_new
        && let Some(working) = state.tasks.update(&task_id, |t| {
            t.status = TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: Some(now()),
            };
        })
    {
        emit(status_event(working.status));
    }
    let reply = tokio::select! {
        reply = state.handler.handle(request) => reply,
        () = state.shutdown.cancelled() => AgentReply::failed("the agent is shutting down"),
    };
    let reply = if reply.state.is_terminal() || reply.state.is_interrupted() {
        reply
    } else {
        tracing::error!(
            state = reply.state.as_str(),
            "the agent answered with a non-final state"
        );
        AgentReply::failed(format!(
            "the agent answered with state {}, which is neither terminal nor interrupted",
            reply.state.as_str()
        ))
    };
    let cancelled = |t: &Task| t.status.state == TaskState::Canceled;
    for mut artifact in reply.artifacts.into_iter().filter(|a| !a.parts.is_empty()) {
        if artifact.artifact_id.is_empty() {
            artifact.artifact_id = new_id();
        }
        let stored = state.tasks.update(&task_id, |t| {
            if !cancelled(t) {
                t.artifacts.push(artifact.clone());
            }
        });
        if stored.as_ref().is_some_and(|t| !cancelled(t)) {
            emit(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: task_id.clone(),
                context_id: context_id.clone(),
                artifact,
                append: false,
                last_chunk: true,
                metadata: None,
            }));
        }
    }
    let message = (!reply.status_parts.is_empty()).then(|| Message {
        message_id: new_id(),
        context_id: Some(context_id.clone()),
        task_id: Some(task_id.clone()),
        role: Role::Agent,
        parts: reply.status_parts,
        ..Message::default()
    });
    let status = TaskStatus {
        state: reply.state,
        message,
        timestamp: Some(now()),
    };
    let final_task = state.tasks.update(&task_id, |t| {
        if !cancelled(t) {
            t.status = status.clone();
        }
    });
    match final_task {
        Some(task) => {
            emit(status_event(task.status.clone()));
            task
        }
        // Evicted while running (the store is full of newer tasks): answer from what we have.
        None => Task {
            id: task_id.clone(),
            context_id: context_id.clone(),
            status,
            ..Task::default()
        },
    }
}

pub(super) async fn send_message(
    state: &Arc<ServerState>,
    req: SendMessageRequest,
) -> Result<Outcome, JsonRpcError> {
    let prepared = prepare(state, req)?;
    let (history, immediately) = (prepared.history, prepared.return_immediately);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let running = state.tracker.spawn(run_task(state.clone(), prepared, tx));
    let task = if immediately {
        match rx.recv().await {
            Some(StreamResponse::Task(task)) => task,
            _ => {
                return Err(JsonRpcError::new(
                    A2aErrorCode::InternalError,
                    "Internal error: the task did not start",
                ));
            }
        }
    } else {
        drop(rx);
        running.await.map_err(|e| {
            JsonRpcError::new(
                A2aErrorCode::InternalError,
                format!("Internal error: the agent failed: {e}"),
            )
        })?
    };
    to_result(&SendMessageResponse::Task(view(task, history, true)))
}

pub(super) fn send_streaming(
    state: &Arc<ServerState>,
    req: SendMessageRequest,
) -> Result<Outcome, JsonRpcError> {
    let prepared = prepare(state, req)?;
    let history = prepared.history;
    let (tx, mut rx) = mpsc::unbounded_channel();
    state.tracker.spawn(run_task(state.clone(), prepared, tx));
    let events = stream::poll_fn(move |cx| rx.poll_recv(cx)).map(move |event| match event {
        StreamResponse::Task(task) => StreamResponse::Task(view(task, history, true)),
        other => other,
    });
    Ok(Outcome::Stream(events.boxed()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn accepted_output_modes_match_with_wildcards() {
        for (offered, accepted, ok) in [
            ("text/markdown", "text/markdown", true),
            ("text/markdown", "text/*", true),
            ("text/markdown", "*/*", true),
            ("text/markdown", "TEXT/Markdown; q=0.5", true),
            ("text/markdown", "application/json", false),
            ("text/plain", "image/*", false),
        ] {
            assert_eq!(
                mode_accepted(offered, accepted),
                ok,
                "{offered} vs {accepted}"
            );
        }
    }

    #[test]
    fn a_user_message_needs_an_id_the_user_role_and_parts() {
        let err = validate_user_message(&Message::default()).unwrap_err();
        let violations = err.data.unwrap()[1]["fieldViolations"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(violations, 3);
        assert!(validate_user_message(&Message::text(Role::User, "m", "hi")).is_ok());
        assert!(validate_user_message(&Message::text(Role::Agent, "m", "hi")).is_err());
    }
}
