//! The queue side of the StudioRun controller: which runs wait for what, which queued runs a
//! freed slot wakes, and admitting a run (the daily budget and the queue, decided one run at a
//! time per process; [`super::admission`] holds the rules).

use super::admission::{QueueDecision, check_daily_budget, queue_decision};
use super::reconcile::RunContext;
use super::status::{is_final, queued_status, refused_status};
use crate::config::RunLimits;
use crate::error::Result;
use crate::kstatus::find;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use orrery_crds::conditions::{SUCCEEDED, reasons};
use orrery_crds::{StudioRun, StudioRunStatus};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

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

/// How many queued runs one change may wake at most (the first in creation order of the
/// namespace and the owner that the limits let start).
pub(super) const QUEUE_WAKE: usize = super::status::QUEUE_HEAD;

/// The queued runs that `changed` (a run as the reconciler just saw it) lets start now: of
/// the first [`QUEUE_WAKE`] queued runs of its namespace or its owner, oldest first, those
/// the limits admit, with `changed` counted as it now is. A change that frees no slot wakes
/// none, so a long queue is neither read nor rewritten on every event of the runs that hold
/// the slots; a slot no reconcile sees freeing (a run deleted while it ran) is found by the
/// head's own recheck ([`head_recheck`]).
pub(super) fn startable(
    mut all: Vec<Arc<StudioRun>>,
    changed: &StudioRun,
    limits: &RunLimits,
) -> Vec<ObjectRef<StudioRun>> {
    let key = ObjectRef::from_obj(changed);
    match all
        .iter_mut()
        .find(|r| ObjectRef::from_obj(r.as_ref()) == key)
    {
        Some(cached) => *cached = Arc::new(changed.clone()),
        None => all.push(Arc::new(changed.clone())),
    }
    let mut queued: Vec<&Arc<StudioRun>> = all
        .iter()
        .filter(|r| {
            (r.namespace() == changed.namespace() || r.spec.owner == changed.spec.owner)
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
        .into_iter()
        .take(QUEUE_WAKE)
        .filter(|r| queue_decision(r, &all, limits) == QueueDecision::Start)
        .map(|r| ObjectRef::from_obj(r.as_ref()))
        .collect()
}

/// How soon a queued run at `position` looks again by itself: the head of the queue soon
/// (a slot whose freeing no watch showed costs it at most that), the rest rarely (a long
/// queue is not rewritten on every start).
pub(super) fn head_recheck(position: usize) -> Duration {
    if position <= QUEUE_WAKE {
        HEAD_RECHECK
    } else {
        TAIL_RECHECK
    }
}

/// How often the first [`QUEUE_WAKE`] queued runs look again by themselves.
pub(super) const HEAD_RECHECK: Duration = Duration::from_secs(10);
/// How often the queued runs behind them do.
pub(super) const TAIL_RECHECK: Duration = Duration::from_secs(60);

impl RunContext {
    /// The daily budget and the queue, decided one run at a time: `Ok(None)` admits the run;
    /// otherwise the status to write and when to look again.
    pub(super) async fn admit(
        &self,
        run: &StudioRun,
        now: Timestamp,
    ) -> Result<Option<(StudioRunStatus, Duration)>> {
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
            let refused =
                refused_status(run, reasons::DAILY_BUDGET_EXCEEDED, &error.to_string(), now);
            return Ok(Some((refused, Duration::from_secs(1))));
        }
        match queue_decision(run, &all, limits) {
            QueueDecision::Start => {
                admitted.insert(uid);
                Ok(None)
            }
            QueueDecision::Queued { position, why } => Ok(Some((
                queued_status(run, position, &why, now),
                head_recheck(position),
            ))),
        }
    }

    /// Wakes the queued runs that may start now that `changed` ended, went, started or was
    /// let go before its pod: the reconciler sees the freshest copy of a run (a second watch's
    /// event may come before the cache shows it), and a start wakes the next startable runs
    /// too, so a burst of freed slots fills without waiting for the rechecks.
    pub(super) fn wake_queue(&self, changed: &StudioRun) {
        for queued in startable(self.runs.state(), changed, &self.base.config.run_limits) {
            // The receiver lives as long as the controller; a send after it ended is moot.
            let _ = self.wake.unbounded_send(queued);
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

    /// `name` of `owner`, created `created` seconds in, holding a slot ("run"), queued
    /// ("queued"), ended ("done") or as it just asked to start (no status).
    fn at(name: &str, owner: &str, created: i64, state: &str) -> StudioRun {
        let mut r = run(name);
        r.spec.owner = owner.into();
        r.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            Timestamp::from_second(1_800_000_000 + created).unwrap_or(Timestamp::UNIX_EPOCH),
        ));
        match state {
            "run" => {
                r = with_reason(r, reasons::RUNNING, Some("pod"));
                if let Some(s) = r.status.as_mut() {
                    s.phase = Some(orrery_crds::run::RunPhase::Running);
                }
            }
            "queued" => r = with_reason(r, reasons::QUEUED, None),
            "done" => {
                r = with_reason(r, reasons::RUNNING, Some("pod"));
                r.status = Some(crate::run::status::cancelled_status(
                    &r,
                    Timestamp::UNIX_EPOCH,
                ));
            }
            _ => {}
        }
        r
    }

    fn limit(namespace: u32, owner: Option<u32>) -> RunLimits {
        RunLimits {
            max_concurrent_runs_per_namespace: Some(namespace),
            max_concurrent_runs_per_owner: owner,
            daily_token_budget_per_owner: None,
        }
    }

    fn names(woken: Vec<ObjectRef<StudioRun>>) -> Vec<String> {
        woken.into_iter().map(|r| r.name).collect()
    }

    fn cluster(runs: &[StudioRun]) -> Vec<Arc<StudioRun>> {
        runs.iter().cloned().map(Arc::new).collect()
    }

    #[test]
    fn progress_of_a_run_that_holds_a_slot_wakes_no_queued_run() {
        let runs = [
            at("a", "alice", 0, "run"),
            at("b", "alice", 1, "run"),
            at("c", "alice", 2, "queued"),
            at("d", "alice", 3, "queued"),
        ];
        let mut progressed = runs[0].clone();
        if let Some(s) = progressed.status.as_mut() {
            s.phase = Some(orrery_crds::run::RunPhase::AwaitingApproval);
        }
        assert!(startable(cluster(&runs), &progressed, &limit(2, None)).is_empty());
        // Nor does a run joining the queue.
        assert!(
            startable(
                cluster(&runs),
                &at("e", "alice", 4, "queued"),
                &limit(2, None)
            )
            .is_empty()
        );
    }

    #[test]
    fn a_run_that_ends_wakes_the_oldest_queued_run_and_only_as_many_as_slots_freed() {
        let runs = [
            at("a", "alice", 0, "run"),
            at("b", "alice", 1, "run"),
            at("d", "alice", 3, "queued"),
            at("c", "alice", 2, "queued"),
            at("e", "alice", 4, "queued"),
        ];
        // The cache may not show the end yet: the copy the watch brought counts.
        let ended = at("a", "alice", 0, "done");
        assert_eq!(
            names(startable(cluster(&runs), &ended, &limit(2, None))),
            ["c"]
        );
        let mut both = runs.to_vec();
        both[1] = at("b", "alice", 1, "done");
        assert_eq!(
            names(startable(cluster(&both), &ended, &limit(2, None))),
            ["c", "d"]
        );
    }

    #[test]
    fn a_freed_slot_wakes_a_later_run_that_another_owners_limit_does_not_hold() {
        let runs = [
            at("a", "alice", 0, "run"),
            at("b", "bob", 1, "run"),
            at("c", "alice", 2, "queued"),
            at("d", "bob", 3, "queued"),
        ];
        // Alice may run one at a time: bob's run takes the slot her ended run freed.
        let ended = at("b", "bob", 1, "done");
        assert_eq!(
            names(startable(cluster(&runs), &ended, &limit(2, Some(1)))),
            ["d"]
        );
    }

    #[test]
    fn the_head_of_the_queue_looks_again_soon_and_the_tail_rarely() {
        assert_eq!(head_recheck(1), HEAD_RECHECK);
        assert_eq!(head_recheck(QUEUE_WAKE), HEAD_RECHECK);
        assert_eq!(head_recheck(QUEUE_WAKE + 1), TAIL_RECHECK);
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
