//! One remote agent in one run: each call fetches and checks the card, asks the owner first when
//! the agent acts, sends only the request text, takes a remote's questions to a person (never
//! the model), and returns the screened reply (rules 4.27–4.50, 6.1–6.17).

use super::card::{TrustedCard, fetch_trusted_card};
use super::endpoint::A2aEndpoint;
use super::guard::{CANCEL_TIMEOUT, TaskGuard};
use super::limits::MAX_REQUEST_CHARS;
use super::outcome::{CallError, CallResult, CallStatus, ErrorType, display_id, state_name};
use super::people::{ask_person, confirm};
use super::reply::{ReplyText, message_reply, task_reply};
use super::rpc::{Exchange, Rpc};
use crate::a2a::types::{Message, Part, Role, Task, TaskState};
use crate::events::{Direction, EventBody};
use crate::net::GuardedClient;
use crate::pin::store::Pins;
use crate::safety::output::{MAX_OUTPUT_BYTES, screened};
use crate::tools::{ToolContext, ToolError, ToolOutput};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::task::JoinHandle;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One A2A entry in one run.
pub struct A2aAgent {
    endpoint: A2aEndpoint,
    client: GuardedClient,
    pins: Arc<dyn Pins>,
    disabled: Mutex<Option<CallError>>,
    last_card: Mutex<Option<Arc<TrustedCard>>>,
    cancels: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl std::fmt::Debug for A2aAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aAgent")
            .field("entry", &self.endpoint.entry)
            .finish_non_exhaustive()
    }
}

/// The request text of a call's arguments: `{"request": "…"}` (or a bare string), not empty,
/// at most [`MAX_REQUEST_CHARS`].
pub fn request_text(arguments: &Value) -> Result<String, CallError> {
    let text = match arguments {
        Value::String(s) => s.clone(),
        Value::Object(map) => match map.get("request") {
            Some(Value::String(s)) => s.clone(),
            _ => {
                return Err(CallError::new(
                    ErrorType::InvalidRequest,
                    "the arguments must be {\"request\": \"<text for the remote agent>\"}",
                ));
            }
        },
        _ => {
            return Err(CallError::new(
                ErrorType::InvalidRequest,
                "the arguments must be {\"request\": \"<text>\"}",
            ));
        }
    };
    if text.trim().is_empty() {
        return Err(CallError::new(
            ErrorType::InvalidRequest,
            "the request is empty; nothing was sent",
        ));
    }
    let chars = text.chars().count();
    if chars > MAX_REQUEST_CHARS {
        return Err(CallError::new(
            ErrorType::InvalidRequest,
            format!(
                "the request is {chars} characters, over the {MAX_REQUEST_CHARS} a remote agent takes; nothing was sent"
            ),
        ));
    }
    Ok(text)
}

fn user_message(text: &str, task: Option<&Task>) -> Message {
    Message {
        message_id: uuid::Uuid::new_v4().to_string(),
        role: Role::User,
        parts: vec![Part::text(text)],
        task_id: task.map(|t| t.id.clone()),
        context_id: task.map(|t| t.context_id.clone()),
        ..Message::default()
    }
}

/// Where a call stands, for the final result and event.
struct Finish {
    result: CallResult,
    reply_text: String,
}

impl A2aAgent {
    /// The agent of `endpoint`, reached through `client`, its card pinned in `pins`.
    pub fn new(endpoint: A2aEndpoint, client: GuardedClient, pins: Arc<dyn Pins>) -> Self {
        A2aAgent {
            endpoint,
            client,
            pins,
            disabled: Mutex::new(None),
            last_card: Mutex::new(None),
            cancels: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The entry.
    pub fn endpoint(&self) -> &A2aEndpoint {
        &self.endpoint
    }

    /// The card last fetched and trusted in this run, if any.
    pub fn card_now(&self) -> Option<Arc<TrustedCard>> {
        lock(&self.last_card).clone()
    }

    /// Why the entry is disabled for the rest of the run, if it is.
    pub fn disabled(&self) -> Option<CallError> {
        lock(&self.disabled).clone()
    }

    /// Fetches and checks the card. A refused card disables the entry for the rest of the run
    /// (and a changed pin keeps it refused in later runs until re-pinned).
    pub async fn card(&self) -> Result<Arc<TrustedCard>, CallError> {
        if let Some(e) = self.disabled() {
            return Err(e);
        }
        match fetch_trusted_card(&self.client, &self.endpoint, self.pins.as_ref()).await {
            Ok(card) => {
                let card = Arc::new(card);
                *lock(&self.last_card) = Some(card.clone());
                Ok(card)
            }
            Err(e) => {
                if e.error_type == ErrorType::CardRefused {
                    *lock(&self.disabled) = Some(e.clone());
                }
                Err(e)
            }
        }
    }

    fn emit(
        &self,
        ctx: &ToolContext,
        skill: &str,
        direction: Direction,
        state: Option<TaskState>,
        text: Option<&str>,
        card: Option<&TrustedCard>,
    ) {
        // An outbound message goes by the method the card calls for (as `Rpc::exchange` sends it).
        let method = card
            .filter(|_| direction == Direction::Outbound)
            .map(|c| c.send_method().to_owned());
        ctx.trace.emit(EventBody::A2aMessage {
            node_id: ctx.node_id.clone(),
            entry: self.endpoint.entry.clone(),
            skill: skill.to_owned(),
            call_id: ctx.call_id.clone(),
            direction,
            method,
            task_state: state.map(|s| state_name(s).to_owned()),
            size: text.map_or(0, str::len),
            text: text.and_then(|t| ctx.trace.content(t)),
        });
    }

    /// One call of `skill` with the model's `arguments`.
    pub async fn call(
        &self,
        skill: &str,
        arguments: &Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let request = match request_text(arguments) {
            Ok(r) => r,
            Err(e) => return Ok(self.finish_error(&e)),
        };
        if !self.endpoint.skills.iter().any(|s| s == skill) {
            let e = CallError::new(
                ErrorType::Misconfigured,
                format!(
                    "entry '{}' does not allow skill '{skill}'",
                    self.endpoint.entry
                ),
            );
            return Ok(self.finish_error(&e));
        }
        let card = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            c = self.card() => c,
        };
        let card = match card {
            Ok(c) => c,
            Err(e) => return Ok(self.finish_error(&e)),
        };
        if card.card.skill(skill).is_none() {
            let e = CallError::new(
                ErrorType::Misconfigured,
                format!(
                    "the card of remote agent '{}' has no skill '{skill}'",
                    self.endpoint.entry
                ),
            );
            return Ok(self.finish_error(&e));
        }
        if self.endpoint.acting()
            && let Some(blocked) = confirm(&self.endpoint.entry, skill, &request, ctx).await?
        {
            return Ok(blocked);
        }
        self.emit(
            ctx,
            skill,
            Direction::Outbound,
            None,
            Some(&request),
            Some(&card),
        );
        let mut guard = TaskGuard {
            task: Mutex::new(None),
            done: false,
            client: self.client.clone(),
            endpoint: self.endpoint.clone(),
            card: card.clone(),
            cancels: self.cancels.clone(),
        };
        let finish = self.converse(skill, &request, &card, &guard, ctx).await;
        guard.done = true;
        let finish = match finish {
            Ok(f) => f,
            Err(e) => {
                guard.done = false;
                return Err(e);
            }
        };
        let state = finish.result.task_state.and_then(state_of_name);
        self.emit(
            ctx,
            skill,
            Direction::Inbound,
            state,
            Some(&finish.reply_text),
            None,
        );
        let json = finish.result.to_json();
        if json.len() > MAX_OUTPUT_BYTES {
            let e = CallError::new(
                ErrorType::ReplyRefused,
                format!(
                    "the reply of remote agent '{}' is {} bytes, over the output cap of {MAX_OUTPUT_BYTES} bytes; it was withheld",
                    self.endpoint.entry,
                    json.len()
                ),
            );
            return Ok(ToolOutput {
                content: CallResult::error(&e).to_json(),
                is_error: true,
            });
        }
        let is_error = finish.result.status != CallStatus::Success;
        Ok(ToolOutput {
            content: json,
            is_error,
        })
    }

    /// A call that ends before anything was sent: no `a2a.message` (the engine's `tool.call`
    /// carries the error).
    fn finish_error(&self, e: &CallError) -> ToolOutput {
        let result = CallResult::error(e);
        ToolOutput {
            content: result.to_json(),
            is_error: true,
        }
    }

    /// Sends the request and follows the task, taking the remote's questions to a person.
    async fn converse(
        &self,
        skill: &str,
        request: &str,
        card: &TrustedCard,
        guard: &TaskGuard,
        ctx: &ToolContext,
    ) -> Result<Finish, ToolError> {
        let rpc = Rpc {
            client: &self.client,
            endpoint: &self.endpoint,
            card,
        };
        let mut message = user_message(request, None);
        let mut previous: Option<Task> = None;
        let mut answered = 0;
        let mut last_state: Option<TaskState> = None;
        loop {
            let mut observe = |task: &Task| {
                guard.observe(task);
                let state = task.status.state;
                if last_state != Some(state) {
                    last_state = Some(state);
                    self.emit(ctx, skill, Direction::Inbound, Some(state), None, None);
                }
            };
            let exchange = tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
                r = rpc.exchange(message, previous.take(), &mut observe) => r,
            };
            let task = match exchange {
                Err(e) => return Ok(self.error_finish(&e)),
                Ok(Exchange::Message(m)) => return Ok(self.success(message_reply(&m), None)),
                Ok(Exchange::Task(task)) => task,
            };
            match task.status.state {
                TaskState::Completed => return Ok(self.success(task_reply(&task), Some(&task))),
                TaskState::InputRequired => {}
                other => {
                    let reply = task_reply(&task);
                    let e = CallError::new(
                        ErrorType::RemoteTask(other),
                        format!(
                            "the task of remote agent '{}' ended {}",
                            self.endpoint.entry,
                            state_name(other)
                        ),
                    );
                    let mut finish = self.error_finish(&e);
                    // An interrupted task (auth-required) waits for someone; what it says is
                    // addressed to that someone, and the model does not get it (rule 4.30).
                    let text = if other.is_interrupted() {
                        String::new()
                    } else {
                        screened(&reply.text).text
                    };
                    finish.result.reply = (!text.is_empty()).then(|| text.clone());
                    finish.reply_text = text;
                    fill_task(&mut finish.result, &task);
                    return Ok(finish);
                }
            }
            let answer = match ask_person(&self.endpoint.entry, skill, &task, answered, ctx).await?
            {
                Ok(answer) => answer,
                Err(why) => return Ok(self.input_required(&task, &why.to_string())),
            };
            answered += 1;
            self.emit(
                ctx,
                skill,
                Direction::Outbound,
                None,
                Some(&answer),
                Some(card),
            );
            message = user_message(&answer, Some(&task));
            previous = Some(task);
        }
    }

    fn success(&self, reply: ReplyText, task: Option<&Task>) -> Finish {
        let text = screened(&reply.text).text;
        let mut result = CallResult {
            status: CallStatus::Success,
            reply: Some(text.clone()),
            task_state: None,
            task_id: None,
            context_id: None,
            parts: reply.parts,
            dropped_parts: reply.dropped,
            error_type: None,
            message: None,
        };
        if let Some(task) = task {
            fill_task(&mut result, task);
        }
        Finish {
            result,
            reply_text: text,
        }
    }

    fn error_finish(&self, e: &CallError) -> Finish {
        Finish {
            result: CallResult::error(e),
            reply_text: String::new(),
        }
    }

    fn input_required(&self, task: &Task, why: &str) -> Finish {
        let message = format!(
            "Remote agent '{}' asked a question that only a person may answer, and it was not answered: {why}. The question is not shown. Do not answer it yourself; go on without this agent's reply.",
            self.endpoint.entry
        );
        let mut result = CallResult {
            status: CallStatus::InputRequired,
            reply: Some(String::new()),
            task_state: None,
            task_id: None,
            context_id: None,
            parts: Vec::new(),
            dropped_parts: Vec::new(),
            error_type: None,
            message: Some(message),
        };
        fill_task(&mut result, task);
        Finish {
            result,
            reply_text: String::new(),
        }
    }

    /// Waits for the best-effort `CancelTask`s sent when calls were abandoned.
    pub async fn close(&self) {
        let pending: Vec<JoinHandle<()>> = std::mem::take(&mut *lock(&self.cancels));
        for handle in pending {
            let _ = tokio::time::timeout(CANCEL_TIMEOUT, handle).await;
        }
    }
}

fn fill_task(result: &mut CallResult, task: &Task) {
    result.task_state = Some(state_name(task.status.state));
    result.task_id = display_id(&task.id);
    result.context_id = display_id(&task.context_id);
}

fn state_of_name(name: &str) -> Option<TaskState> {
    [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::InputRequired,
        TaskState::Rejected,
        TaskState::AuthRequired,
    ]
    .into_iter()
    .find(|s| state_name(*s) == name)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_are_checked_before_anything_is_sent() {
        assert_eq!(request_text(&json!({"request": "notes"})).unwrap(), "notes");
        assert_eq!(request_text(&json!("bare")).unwrap(), "bare");
        let cases = [
            json!({}),
            json!({"request": 5}),
            json!([1]),
            json!({"request": "  "}),
            json!({"request": "x".repeat(MAX_REQUEST_CHARS + 1)}),
        ];
        for args in cases {
            let e = request_text(&args).unwrap_err();
            assert_eq!(e.error_type, ErrorType::InvalidRequest, "{args}");
        }
        assert!(
            request_text(&json!({"request": "é".repeat(MAX_REQUEST_CHARS)})).is_ok(),
            "the limit counts characters"
        );
    }

    #[test]
    fn state_names_read_back() {
        for s in [
            TaskState::Completed,
            TaskState::InputRequired,
            TaskState::AuthRequired,
        ] {
            assert_eq!(state_of_name(state_name(s)), Some(s));
        }
    }
}
