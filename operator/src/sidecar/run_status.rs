//! What the sidecar writes into a StudioRun's status with its own ServiceAccount, and nothing
//! else: the pending approvals (id, node, kind, digest, size, complete, expiresAt; never the
//! text), the phase they imply (`AwaitingApproval` while one waits, `Running` again after) and
//! the number of events it holds (`eventCount`). One apply carries all three every time: a
//! field this manager stops applying would be deleted.
//! Written by server-side apply as field manager [`FIELD_MANAGER`], with the object's
//! `resourceVersion` as a precondition, so a status the operator changed meanwhile (a run
//! that just ended) is read again rather than overwritten; a finished run's phase is never
//! touched.

use super::Sidecar;
use super::store::RunRecord;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource};
use orrery_crds::StudioRun;
use orrery_crds::approval::PendingApproval;
use orrery_crds::run::RunPhase;
use serde_json::json;

/// The field manager of the sidecar's status writes.
pub const FIELD_MANAGER: &str = "orrery-sidecar";

/// Why the status could not be written.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// The sidecar has no client of its own.
    #[error("the sidecar has no cluster client of its own")]
    NoClient,
    /// The store could not be read.
    #[error("reading the run's approvals: {0}")]
    Store(#[from] super::store::StoreError),
    /// The apiserver refused or could not be reached.
    #[error("writing studiorun {namespace}/{name}'s status: {source}")]
    Kube {
        /// The run's namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The error.
        source: kube::Error,
    },
    /// The object kept changing under the write.
    #[error("studiorun {0}'s status kept changing; gave up after 5 tries")]
    Contended(String),
}

/// The phase a run in `phase` shows with `waiting` approvals pending, when it changes.
pub fn phase_with(phase: Option<RunPhase>, waiting: bool) -> Option<RunPhase> {
    match (phase, waiting) {
        (Some(p), _) if p.is_terminal() => None,
        (Some(RunPhase::Running) | None | Some(RunPhase::Pending), true) => {
            Some(RunPhase::AwaitingApproval)
        }
        (Some(RunPhase::AwaitingApproval), false) => Some(RunPhase::Running),
        _ => None,
    }
}

/// Writes `run`'s pending approvals and event count (from the store) and the phase they imply.
pub async fn publish_pending(sidecar: &Sidecar, run: &RunRecord) -> Result<(), StatusError> {
    let client: Client = sidecar.own_client.clone().ok_or(StatusError::NoClient)?;
    let api = Api::<StudioRun>::namespaced(client, &run.namespace);
    let kube_error = |source| StatusError::Kube {
        namespace: run.namespace.clone(),
        name: run.name.clone(),
        source,
    };
    for _ in 0..5 {
        let current = api.get(&run.name).await.map_err(kube_error)?;
        if current.metadata.uid.as_deref() != Some(run.uid.as_str()) {
            // The run was deleted (and perhaps made again): nothing to write.
            return Ok(());
        }
        let pending: Vec<PendingApproval> = sidecar
            .store
            .approvals(&run.uid)
            .await?
            .iter()
            .filter(|a| a.is_pending())
            .map(|a| a.request.pending())
            .collect();
        let phase = current.status.as_ref().and_then(|s| s.phase);
        let terminal = phase.is_some_and(RunPhase::is_terminal);
        let pending = if terminal { Vec::new() } else { pending };
        let shown = phase_with(phase, !pending.is_empty()).or(phase);
        let events = sidecar.store.last_seq(&run.uid).await?;
        let mut status = json!({ "pendingApprovals": pending, "eventCount": events });
        // The phase is always part of the apply (never dropped, which would delete it once
        // this manager owns it); unchanged it is shared with the operator.
        if let Some(shown) = shown {
            status["phase"] = json!(shown);
        }
        let body = json!({
            "apiVersion": StudioRun::api_version(&()),
            "kind": StudioRun::kind(&()),
            "metadata": {
                "name": run.name,
                "resourceVersion": current.metadata.resource_version,
            },
            "status": status,
        });
        match api
            .patch_status(
                &run.name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&body),
            )
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(kube_error(e)),
        }
    }
    Err(StatusError::Contended(format!(
        "{}/{}",
        run.namespace, run.name
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiting_approval_shows_awaiting_approval_and_a_finished_run_keeps_its_phase() {
        use RunPhase::*;
        let cases = [
            (Some(Running), true, Some(AwaitingApproval)),
            (Some(Pending), true, Some(AwaitingApproval)),
            (Some(AwaitingApproval), true, None),
            (Some(AwaitingApproval), false, Some(Running)),
            (Some(Running), false, None),
            (Some(Succeeded), true, None),
            (Some(Cancelled), false, None),
            (Some(Rejected), true, None),
        ];
        for (phase, waiting, want) in cases {
            assert_eq!(phase_with(phase, waiting), want, "{phase:?} {waiting}");
        }
    }
}
