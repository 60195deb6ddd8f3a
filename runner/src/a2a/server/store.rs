//! The server's in-memory tasks: bounded, each task behind a watch channel so subscribers see
//! every change.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use tokio::sync::watch;

use crate::a2a::types::{A2aErrorCode, JsonRpcError, Message, Task, TaskState};

/// Tasks by id, oldest evicted first once `capacity` is reached.
pub(crate) struct TaskStore {
    inner: Mutex<Inner>,
    capacity: usize,
}

#[derive(Default)]
struct Inner {
    tasks: HashMap<String, watch::Sender<Task>>,
    order: VecDeque<String>,
}

pub(crate) fn task_not_found(id: &str) -> JsonRpcError {
    JsonRpcError::new(A2aErrorCode::TaskNotFound, format!("Task not found: {id}"))
}

impl TaskStore {
    pub(crate) fn new(capacity: usize) -> Self {
        TaskStore {
            inner: Mutex::new(Inner::default()),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds a new task.
    pub(crate) fn insert(&self, task: Task) {
        let mut inner = self.lock();
        while inner.order.len() >= self.capacity {
            match inner.order.pop_front() {
                Some(old) => {
                    inner.tasks.remove(&old);
                }
                None => break,
            }
        }
        inner.order.push_back(task.id.clone());
        let (sender, _) = watch::channel(task.clone());
        inner.tasks.insert(task.id, sender);
    }

    /// The task as it stands.
    pub(crate) fn get(&self, id: &str) -> Option<Task> {
        self.lock().tasks.get(id).map(|s| s.borrow().clone())
    }

    /// Changes a task and notifies its subscribers; returns the changed task.
    pub(crate) fn update(&self, id: &str, change: impl FnOnce(&mut Task)) -> Option<Task> {
        let inner = self.lock();
        let sender = inner.tasks.get(id)?;
        sender.send_modify(change);
        Some(sender.borrow().clone())
    }

    /// A receiver that sees every later change of the task.
    pub(crate) fn subscribe(&self, id: &str) -> Option<watch::Receiver<Task>> {
        self.lock().tasks.get(id).map(watch::Sender::subscribe)
    }

    /// Every task, newest first.
    pub(crate) fn newest_first(&self) -> Vec<Task> {
        let inner = self.lock();
        inner
            .order
            .iter()
            .rev()
            .filter_map(|id| inner.tasks.get(id).map(|s| s.borrow().clone()))
            .collect()
    }

    /// Takes an interrupted task up again with the client's answer: the agent's last status
    /// message and the answer go into the history and the task is working again. Atomic, so
    /// two answers to one question cannot both continue it.
    pub(crate) fn continue_task(
        &self,
        id: &str,
        context_id: Option<&str>,
        message: &Message,
        timestamp: String,
    ) -> Result<Task, JsonRpcError> {
        let inner = self.lock();
        let sender = inner.tasks.get(id).ok_or_else(|| task_not_found(id))?;
        let current = sender.borrow().clone();
        if let Some(ctx) = context_id
            && ctx != current.context_id
        {
            return Err(JsonRpcError::new(
                A2aErrorCode::InvalidParams,
                format!("message.contextId '{ctx}' does not match the context of task {id}"),
            )
            .with_field_violation("message.contextId", "does not match the task's context"));
        }
        if current.status.state.is_terminal() {
            return Err(JsonRpcError::new(
                A2aErrorCode::UnsupportedOperation,
                format!(
                    "Task {id} is in terminal state {} and cannot take more messages",
                    current.status.state.as_str()
                ),
            ));
        }
        if !current.status.state.is_interrupted() {
            return Err(JsonRpcError::new(
                A2aErrorCode::UnsupportedOperation,
                format!(
                    "Task {id} is {} and is not waiting for input",
                    current.status.state.as_str()
                ),
            ));
        }
        sender.send_modify(|task| {
            if let Some(question) = task.status.message.take() {
                task.history.push(question);
            }
            task.history.push(message.clone());
            task.status.state = TaskState::Working;
            task.status.timestamp = Some(timestamp);
        });
        Ok(sender.borrow().clone())
    }

    /// Cancels a task that has not ended; terminal tasks cannot be cancelled.
    pub(crate) fn cancel(&self, id: &str, timestamp: String) -> Result<Task, JsonRpcError> {
        let inner = self.lock();
        let sender = inner.tasks.get(id).ok_or_else(|| task_not_found(id))?;
        let state = sender.borrow().status.state;
        if state.is_terminal() {
            return Err(JsonRpcError::new(
                A2aErrorCode::TaskNotCancelable,
                format!(
                    "Task {id} is in terminal state {} and cannot be canceled",
                    state.as_str()
                ),
            ));
        }
        sender.send_modify(|task| {
            if let Some(previous) = task.status.message.take() {
                task.history.push(previous);
            }
            task.status.state = TaskState::Canceled;
            task.status.timestamp = Some(timestamp);
        });
        Ok(sender.borrow().clone())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::a2a::types::{Role, TaskStatus};

    fn task(id: &str, state: TaskState) -> Task {
        Task {
            id: id.into(),
            context_id: "ctx".into(),
            status: TaskStatus {
                state,
                ..TaskStatus::default()
            },
            ..Task::default()
        }
    }

    #[test]
    fn the_oldest_task_is_evicted_at_capacity() {
        let store = TaskStore::new(2);
        for id in ["a", "b", "c"] {
            store.insert(task(id, TaskState::Completed));
        }
        assert!(store.get("a").is_none());
        let ids: Vec<String> = store.newest_first().into_iter().map(|t| t.id).collect();
        assert_eq!(ids, ["c", "b"]);
    }

    #[test]
    fn only_interrupted_tasks_can_be_continued() {
        let store = TaskStore::new(8);
        store.insert(task("done", TaskState::Completed));
        store.insert(task("busy", TaskState::Working));
        store.insert(task("ask", TaskState::InputRequired));
        let msg = Message::text(Role::User, "m", "answer");
        let code = |r: Result<Task, JsonRpcError>| r.unwrap_err().a2a_code();
        assert_eq!(
            code(store.continue_task("done", None, &msg, "t".into())),
            Some(A2aErrorCode::UnsupportedOperation)
        );
        assert_eq!(
            code(store.continue_task("busy", None, &msg, "t".into())),
            Some(A2aErrorCode::UnsupportedOperation)
        );
        assert_eq!(
            code(store.continue_task("nope", None, &msg, "t".into())),
            Some(A2aErrorCode::TaskNotFound)
        );
        assert_eq!(
            code(store.continue_task("ask", Some("other"), &msg, "t".into())),
            Some(A2aErrorCode::InvalidParams)
        );
        let continued = store
            .continue_task("ask", Some("ctx"), &msg, "t".into())
            .unwrap();
        assert_eq!(continued.status.state, TaskState::Working);
        assert_eq!(continued.history, vec![msg.clone()]);
        // A second answer to the same question finds the task working.
        assert!(store.continue_task("ask", None, &msg, "t".into()).is_err());
    }

    #[test]
    fn terminal_tasks_cannot_be_cancelled_and_others_can() {
        let store = TaskStore::new(8);
        store.insert(task("done", TaskState::Completed));
        store.insert(task("ask", TaskState::InputRequired));
        assert_eq!(
            store.cancel("done", "t".into()).unwrap_err().a2a_code(),
            Some(A2aErrorCode::TaskNotCancelable)
        );
        assert_eq!(
            store.cancel("ask", "t".into()).unwrap().status.state,
            TaskState::Canceled
        );
    }

    #[test]
    fn subscribers_see_updates() {
        let store = TaskStore::new(8);
        store.insert(task("a", TaskState::Working));
        let mut rx = store.subscribe("a").unwrap();
        store.update("a", |t| t.status.state = TaskState::Completed);
        assert!(rx.has_changed().unwrap());
        assert_eq!(rx.borrow_and_update().status.state, TaskState::Completed);
    }
}
