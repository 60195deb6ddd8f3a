//! The queue side of the StudioRun controller: which runs wait for what, which queued runs a
//! freed slot wakes, and admitting a run (the daily budget and the queue, decided one run at a
//! time per process; [`super::admission`] holds the rules).

use super::admission::{QueueDecision, check_daily_budget, queue_decision};
use super::reconcile::RunContext;
use super::status::{is_final, queued_status, refused_status};
use crate::error::Result;
use crate::kstatus::find;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use orrery_crds::conditions::{SUCCEEDED, reasons};
use orrery_crds::{StudioRun, StudioRunStatus};
use std::collections::HashSet;
use std::sync::Arc;

pub(super) fn reason_of(run: &StudioRun) -> Option<&str> {
    run.status
        .as_ref()
        .and_then(|s| find(&s.conditions, SUCCEEDED))
        .map(|c| c.reason.as_str())
}

/// Whether `run` has not started and waits for one of `waiting` (condition reasons).
pub(super) fn waits_for(run: &StudioRun, waiting: &[&str]) -> bool {
    !is_final(run.status.as_ref())
        && run.status.as_ref().is_none_or(|s| s.runner_pod.is_none())
        && reason_of(run).is_some_and(|r| waiting.contains(&r))
}

/// The runs of `namespace` in `store` that wait for one of `waiting`.
pub(super) fn waiting_runs(
    store: &Store<StudioRun>,
    namespace: Option<String>,
    waiting: &[&str],
) -> Vec<ObjectRef<StudioRun>> {
    store
        .state()
        .iter()
        .filter(|r| r.namespace() == namespace && waits_for(r, waiting))
        .map(|r| ObjectRef::from_obj(r.as_ref()))
        .collect()
}

/// How many queued runs a freed slot wakes (the first in creation order of the namespace and
/// the owner): the rest keep waiting for their own recheck, so a long queue is not rewritten
/// on every slot.
pub(super) const QUEUE_WAKE: usize = 8;

/// The first [`QUEUE_WAKE`] queued runs that `freed` (a run that held a slot) may let start:
/// of its namespace or its owner, oldest first.
pub(super) fn queue_head(store: &Store<StudioRun>, freed: &StudioRun) -> Vec<ObjectRef<StudioRun>> {
    let mut queued: Vec<Arc<StudioRun>> = store
        .state()
        .into_iter()
        .filter(|r| {
            (r.namespace() == freed.namespace() || r.spec.owner == freed.spec.owner)
                && waits_for(r, &[reasons::QUEUED])
        })
        .collect();
    queued.sort_by_key(|r| {
        (
            r.metadata.creation_timestamp.as_ref().map(|t| t.0),
            r.name_any(),
        )
    });
    queued
        .iter()
        .take(QUEUE_WAKE)
        .map(|r| ObjectRef::from_obj(r.as_ref()))
        .collect()
}

impl RunContext {
    /// The daily budget and the queue, decided one run at a time: `Ok(None)` admits the run.
    pub(super) async fn admit(
        &self,
        run: &StudioRun,
        now: Timestamp,
    ) -> Result<Option<StudioRunStatus>> {
        let limits = &self.base.config.run_limits;
        let uid = run.uid().unwrap_or_default();
        let mut admitted = self.admitted.lock().await;
        let mut all: Vec<Arc<StudioRun>> = self.runs.state();
        // A run admitted here whose cached status does not show its pod yet holds its slot
        // (a copy says so); one the cache shows started, ended or gone leaves the set.
        let mut seen = HashSet::new();
        for other in all.iter_mut() {
            let other_uid = other.uid().unwrap_or_default();
            if other_uid == uid || !admitted.contains(&other_uid) {
                continue;
            }
            let pending = other.status.as_ref().is_none_or(|s| s.runner_pod.is_none())
                && !is_final(other.status.as_ref());
            if pending {
                let mut holding = (**other).clone();
                holding
                    .status
                    .get_or_insert_with(Default::default)
                    .runner_pod = Some(String::new());
                *other = Arc::new(holding);
                seen.insert(other_uid);
            }
        }
        admitted.retain(|u| seen.contains(u));
        // Forget what was written for runs that are gone (deleted by a person, not the TTL).
        if let Ok(mut w) = self.written.lock() {
            let live: HashSet<String> = all.iter().filter_map(|r| r.uid()).collect();
            w.retain(|uid, _| live.contains(uid));
            if let Ok(mut e) = self.evicted.lock() {
                e.retain(|uid, _| live.contains(uid));
            }
        }
        let queued = all
            .iter()
            .filter(|r| waits_for(r, &[reasons::QUEUED]))
            .count();
        self.base.metrics.set_queue_depth(queued);
        if let Err(error) = check_daily_budget(run, &all, limits, now) {
            return Ok(Some(refused_status(
                run,
                reasons::DAILY_BUDGET_EXCEEDED,
                &error.to_string(),
                now,
            )));
        }
        match queue_decision(run, &all, limits) {
            QueueDecision::Start => {
                admitted.insert(uid);
                Ok(None)
            }
            QueueDecision::Queued { position, why } => {
                Ok(Some(queued_status(run, position, &why, now)))
            }
        }
    }

    /// Forgets a run admitted whose pod was not created (it waits, was refused, or failed):
    /// it holds no slot.
    pub(super) async fn release(&self, uid: &str) {
        self.admitted.lock().await.remove(uid);
    }

    /// Sets `orrery_runs{phase}` from the cache.
    pub(super) fn count_phases(&self) {
        let runs = self.runs.state();
        for phase in crate::metrics::PHASES {
            let n = runs
                .iter()
                .filter(|r| r.status.as_ref().and_then(|s| s.phase) == Some(phase))
                .count();
            self.base.metrics.set_runs(phase, n);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::run::builders::tests::run;
    use crate::run::status::waiting_status;
    use orrery_crds::common::ConditionStatus;

    fn with_reason(mut r: StudioRun, reason: &'static str, pod: Option<&str>) -> StudioRun {
        let mut status = waiting_status(&r, reason, "m".into(), Timestamp::UNIX_EPOCH);
        status.runner_pod = pod.map(str::to_owned);
        r.status = Some(status);
        r
    }

    #[test]
    fn only_runs_not_started_that_wait_for_the_thing_are_woken() {
        let queued = with_reason(run("a"), reasons::QUEUED, None);
        assert!(waits_for(&queued, &[reasons::QUEUED]));
        assert!(!waits_for(&queued, &[reasons::WAITING_FOR_ENTRIES]));
        let started = with_reason(run("b"), reasons::QUEUED, Some("b-runner"));
        assert!(!waits_for(&started, &[reasons::QUEUED]));
        assert!(!waits_for(&run("c"), &[reasons::QUEUED]), "no status yet");
        let mut ended = with_reason(run("d"), reasons::QUEUED, None);
        ended.status = Some(refused_status(
            &ended,
            reasons::REFUSED,
            "no",
            Timestamp::UNIX_EPOCH,
        ));
        assert!(!waits_for(&ended, &[reasons::QUEUED, reasons::REFUSED]));
        assert_eq!(
            ended
                .status
                .as_ref()
                .and_then(|s| find(&s.conditions, SUCCEEDED))
                .map(|c| c.status),
            Some(ConditionStatus::False)
        );
    }
}
