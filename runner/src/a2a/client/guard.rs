//! The remote task a call follows: cancelled (best effort) when the call is abandoned while the
//! task still runs or waits (rule 6.16: a cancelled run sends `CancelTask`).

use super::card::TrustedCard;
use super::endpoint::A2aEndpoint;
use super::rpc::Rpc;
use crate::a2a::types::{Task, TaskState};
use crate::net::GuardedClient;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// How long a best-effort `CancelTask` may take.
pub(super) const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The remote task a call follows, cancelled (best effort) if the call is abandoned while the
/// task still runs or waits (rule 6.16: a cancelled run sends `CancelTask`).
pub(super) struct TaskGuard {
    pub(super) task: Mutex<Option<(String, TaskState)>>,
    pub(super) done: bool,
    pub(super) client: GuardedClient,
    pub(super) endpoint: A2aEndpoint,
    pub(super) card: Arc<TrustedCard>,
    pub(super) cancels: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl TaskGuard {
    pub(super) fn observe(&self, task: &Task) {
        if !task.id.is_empty() {
            *lock(&self.task) = Some((task.id.clone(), task.status.state));
        }
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let Some((id, state)) = lock(&self.task).take() else {
            return;
        };
        if state.is_terminal() {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (client, endpoint, card) = (
            self.client.clone(),
            self.endpoint.clone(),
            self.card.clone(),
        );
        let cancel = handle.spawn(async move {
            let rpc = Rpc { client: &client, endpoint: &endpoint, card: &card };
            match tokio::time::timeout(CANCEL_TIMEOUT, rpc.cancel_task(&id)).await {
                Ok(Ok(_)) => tracing::info!(entry = %endpoint.entry, task = %id, "cancelled the remote task"),
                Ok(Err(e)) => tracing::warn!(entry = %endpoint.entry, task = %id, "could not cancel the remote task: {e}"),
                Err(_) => tracing::warn!(entry = %endpoint.entry, task = %id, "cancelling the remote task timed out"),
            }
        });
        lock(&self.cancels).push(cancel);
    }
}
