//! A StudioRun's status: its phase and conditions from its runner pod and the summary the
//! runner writes as the pod's termination message; queued, refused and started states; the TTL
//! of a finished run. `kubectl wait --for=condition=Succeeded` and
//! `--for=jsonpath='{.status.phase}'` both work off what these set.

use crate::kstatus::{self, Health};
use crate::sandbox::{PodState, pod_state};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use orrery_crds::common::{ConditionStatus, set_condition};
use orrery_crds::conditions::{SUCCEEDED, reasons};
use orrery_crds::events::Outcome;
use orrery_crds::run::{RanComposition, RunError, RunPhase};
use orrery_crds::{StudioRun, StudioRunStatus};

/// An error message in a status is cut to this many bytes, so the status stays small whatever
/// the runner printed.
pub const MAX_ERROR_BYTES: usize = 1024;

pub use orrery_crds::plan_document::{RunSummary, parse_summary};

/// The message of a run whose pod is created and not running yet.
const STARTING_MESSAGE: &str = "the runner pod is starting";

/// Whether a run has ended.
pub fn is_final(status: Option<&StudioRunStatus>) -> bool {
    status.is_some_and(|s| s.phase.is_some_and(RunPhase::is_terminal))
}

fn cut(text: &str) -> String {
    if text.len() <= MAX_ERROR_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_ERROR_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn phase_of(outcome: Outcome) -> RunPhase {
    match outcome {
        Outcome::Succeeded => RunPhase::Succeeded,
        Outcome::Failed => RunPhase::Failed,
        Outcome::Cancelled => RunPhase::Cancelled,
        Outcome::BudgetExhausted => RunPhase::BudgetExhausted,
        Outcome::Rejected => RunPhase::Rejected,
    }
}

/// Sets the phase and the conditions: `Succeeded` (Unknown while the run goes, True or False
/// once it ends) and kstatus (`Reconciling` while it goes, `Ready` when it succeeded, `Stalled`
/// when it ended otherwise).
fn set_phase(
    status: &mut StudioRunStatus,
    phase: RunPhase,
    reason: &'static str,
    message: String,
    generation: Option<i64>,
    now: Timestamp,
) {
    status.phase = Some(phase);
    status.observed_generation = generation;
    let succeeded = match phase {
        RunPhase::Succeeded => ConditionStatus::True,
        p if p.is_terminal() => ConditionStatus::False,
        _ => ConditionStatus::Unknown,
    };
    set_condition(
        &mut status.conditions,
        kstatus::condition(
            SUCCEEDED,
            succeeded,
            reason,
            message.clone(),
            generation,
            now,
        ),
    );
    let health = match phase {
        RunPhase::Succeeded => Health::Ready { reason, message },
        p if p.is_terminal() => Health::Stalled { reason, message },
        _ => Health::Reconciling { reason, message },
    };
    kstatus::set_health(&mut status.conditions, &health, generation, now);
}

/// Ends the run in `phase` (terminal) with `reason` and an error message (when it did not
/// succeed), at `now` unless the pod said when.
fn finish(
    status: &mut StudioRunStatus,
    phase: RunPhase,
    reason: &'static str,
    error: Option<RunError>,
    finished_at: Option<String>,
    generation: Option<i64>,
    now: Timestamp,
) {
    let error = error.map(|e| RunError {
        node: e.node,
        message: cut(&e.message),
    });
    let message = match &error {
        Some(e) => format!("the run ended {phase:?}: {}", e.message),
        None => format!("the run ended {phase:?}"),
    };
    status.error = error;
    status.completion_time = Some(finished_at.unwrap_or_else(|| kstatus::rfc3339(now)));
    set_phase(status, phase, reason, message, generation, now);
}

fn failure(message: String) -> Option<RunError> {
    Some(RunError {
        node: None,
        message,
    })
}

/// How a run ended, when it did: (phase, reason, error, when).
type End = (RunPhase, &'static str, Option<RunError>, Option<String>);

/// A cancelled run's end.
fn cancel_end(at: Option<String>) -> End {
    (RunPhase::Cancelled, Outcome::Cancelled.as_str(), None, at)
}

/// Whether the run was cancelled, and whether its pod was stopped from outside the run (its
/// pod deleted, or the kubelet's deadline backstop).
struct Stops<'a> {
    cancelled: bool,
    deleted: bool,
    /// Why the pod was disrupted, when Kubernetes said (an eviction, a preemption).
    disrupted: Option<String>,
    past_deadline: bool,
    pod_name: &'a str,
}

/// How a run whose runner container ended did: its summary says, unless it was stopped from
/// outside (a runner stopped on SIGTERM says Cancelled; unless the run was cancelled, that is a
/// failure, with the totals); no summary is a crash.
fn terminated_end(
    status: &mut StudioRunStatus,
    stops: &Stops,
    exit_code: i32,
    reason: Option<String>,
    message: Option<String>,
    finished_at: Option<String>,
) -> End {
    let stopped_from_outside = |said: Option<String>| -> Option<End> {
        let said = said.map(|m| format!(" ({m})")).unwrap_or_default();
        if let (true, Some(why)) = (stops.deleted, stops.disrupted.as_deref()) {
            Some((
                RunPhase::Failed,
                reasons::EVICTED,
                failure(evicted_message(stops.pod_name, why, &said)),
                finished_at.clone(),
            ))
        } else if stops.deleted {
            Some((
                RunPhase::Failed,
                reasons::POD_DELETED,
                failure(format!(
                    "the runner pod {} was deleted before the run ended; the runner stopped on SIGTERM{said}",
                    stops.pod_name
                )),
                finished_at.clone(),
            ))
        } else if stops.past_deadline {
            Some((
                RunPhase::Failed,
                reasons::DEADLINE_EXCEEDED,
                failure(format!(
                    "the kubelet stopped the runner pod {} past its deadline{said}",
                    stops.pod_name
                )),
                finished_at.clone(),
            ))
        } else {
            None
        }
    };
    match message.as_deref().and_then(parse_summary) {
        // A runner that stopped on SIGTERM says Cancelled; unless the run was
        // cancelled, it was stopped from outside: that is a failure, with the totals.
        Some(summary)
            if summary.outcome == Outcome::Cancelled
                && !stops.cancelled
                && (stops.deleted || stops.past_deadline) =>
        {
            status.totals = Some(summary.totals);
            status.events_dropped = i64::try_from(summary.dropped).ok();
            stopped_from_outside(None).unwrap_or_else(|| cancel_end(finished_at.clone()))
        }
        Some(summary) => {
            status.totals = Some(summary.totals);
            status.events_dropped = i64::try_from(summary.dropped).ok();
            (
                phase_of(summary.outcome),
                summary.outcome.as_str(),
                summary.error,
                finished_at,
            )
        }
        None if stops.cancelled => cancel_end(finished_at),
        None if stops.deleted || stops.past_deadline => {
            stopped_from_outside(Some(format!("exit code {exit_code}, no summary")))
                .unwrap_or_else(|| cancel_end(finished_at.clone()))
        }
        None => {
            let why = reason.map(|r| format!(" ({r})")).unwrap_or_default();
            let said = message
                .filter(|m| !m.trim().is_empty())
                .map(|m| format!(": {}", m.trim()))
                .unwrap_or_default();
            (
                RunPhase::Failed,
                reasons::RUNNER_CRASHED,
                failure(format!(
                    "the runner exited with code {exit_code}{why} without a summary{said}"
                )),
                finished_at,
            )
        }
    }
}

/// Why Kubernetes disrupted `pod`, when it said: a `DisruptionTarget` condition (the Eviction
/// API, a node drain, preemption, a taint) or the kubelet's `Evicted` (node pressure), as
/// `reason: message`.
pub(super) fn disruption(pod: Option<&Pod>) -> Option<String> {
    let status = pod?.status.as_ref()?;
    let said = |reason: Option<&str>, message: Option<&str>| {
        let reason = reason.unwrap_or("Evicted");
        match message.map(str::trim).filter(|m| !m.is_empty()) {
            Some(message) => format!("{reason}: {message}"),
            None => reason.to_owned(),
        }
    };
    if let Some(target) = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "DisruptionTarget" && c.status == "True")
    {
        return Some(said(target.reason.as_deref(), target.message.as_deref()));
    }
    (status.reason.as_deref() == Some("Evicted"))
        .then(|| said(status.reason.as_deref(), status.message.as_deref()))
}

/// What a run whose pod is being evicted says meanwhile: its `Evicting` condition's message is
/// this, then why.
const BEING_EVICTED: &str = "is being evicted, and the run fails once its runner has stopped: ";

/// The failure of a run whose pod was evicted.
fn evicted_message(pod: &str, why: &str, said: &str) -> String {
    format!(
        "the runner pod {pod} was evicted before the run ended ({why}){said}; a run is never \
         started again on its own (its remote calls may have acted): start a new run"
    )
}

/// The status of a started run whose pod is gone: as [`run_status`] says, except that a pod
/// this process saw being evicted (`evicted`: why) makes it `Evicted` rather than
/// `PodDeleted` (the pod can be gone before its stopped runner was seen, and the `Evicting`
/// status written meanwhile may not have landed).
pub fn gone_status(run: &StudioRun, evicted: Option<&str>, now: Timestamp) -> StudioRunStatus {
    let status = run_status(run, None, now);
    let deleted = kstatus::find(&status.conditions, SUCCEEDED)
        .is_some_and(|c| c.reason == reasons::POD_DELETED);
    let (Some(why), true) = (evicted, deleted) else {
        return status;
    };
    let mut status = run.status.clone().unwrap_or_default();
    let name = status.runner_pod.clone().unwrap_or_default();
    finish(
        &mut status,
        RunPhase::Failed,
        reasons::EVICTED,
        failure(evicted_message(&name, why, "")),
        None,
        run.metadata.generation,
        now,
    );
    status
}

/// The run's status from its runner pod. A run already ended keeps its status (the outcome is
/// final). A run whose pod was never created is left as it is (the reconciler creates it).
pub fn run_status(run: &StudioRun, pod: Option<&Pod>, now: Timestamp) -> StudioRunStatus {
    let generation = run.metadata.generation;
    let mut status = run.status.clone().unwrap_or_default();
    if status.phase.is_some_and(RunPhase::is_terminal) {
        return status;
    }
    let cancelled = run.spec.cancel || run.metadata.deletion_timestamp.is_some();
    let cancel = cancel_end;
    // Stopped from outside the run: its pod deleted, or the kubelet's deadline backstop.
    let deleted = pod.is_some_and(|p| p.metadata.deletion_timestamp.is_some());
    let past_deadline = pod
        .and_then(|p| p.status.as_ref())
        .and_then(|s| s.reason.as_deref())
        == Some("DeadlineExceeded");
    let pod_name = pod
        .and_then(|p| p.metadata.name.clone())
        .or_else(|| status.runner_pod.clone())
        .unwrap_or_default();
    let stops = Stops {
        cancelled,
        deleted,
        disrupted: disruption(pod),
        past_deadline,
        pod_name: &pod_name,
    };
    let end: Option<End> = match pod_state(pod) {
        PodState::Absent => {
            let Some(name) = status.runner_pod.clone() else {
                return status;
            };
            // Seen being evicted before it went: the run fails saying so.
            let evicting = kstatus::find(&status.conditions, SUCCEEDED)
                .filter(|c| c.reason == reasons::EVICTING)
                .and_then(|c| c.message.split_once(BEING_EVICTED))
                .map(|(_, why)| why.to_owned());
            Some(if cancelled {
                cancel(None)
            } else if let Some(why) = evicting {
                (
                    RunPhase::Failed,
                    reasons::EVICTED,
                    failure(evicted_message(&name, &why, "")),
                    None,
                )
            } else {
                (
                    RunPhase::Failed,
                    reasons::POD_DELETED,
                    failure(format!(
                        "the runner pod {name} was deleted before the run ended"
                    )),
                    None,
                )
            })
        }
        PodState::Starting => {
            set_phase(
                &mut status,
                RunPhase::Pending,
                reasons::STARTING,
                STARTING_MESSAGE.into(),
                generation,
                now,
            );
            None
        }
        PodState::Running { started_at } => {
            status.start_time = status.start_time.or(started_at);
            if let (Some(why), false) = (stops.disrupted.as_deref(), cancelled) {
                // Recorded while the pod still runs: it may be gone before it is seen stopped.
                let phase = match status.phase {
                    Some(RunPhase::AwaitingApproval) => RunPhase::AwaitingApproval,
                    _ => RunPhase::Running,
                };
                set_phase(
                    &mut status,
                    phase,
                    reasons::EVICTING,
                    format!("the runner pod {pod_name} {BEING_EVICTED}{why}"),
                    generation,
                    now,
                );
            } else if status.phase != Some(RunPhase::AwaitingApproval) {
                // The sidecar sets AwaitingApproval; the pod alone cannot tell, so keep it.
                set_phase(
                    &mut status,
                    RunPhase::Running,
                    reasons::RUNNING,
                    "the runner is executing the graph".into(),
                    generation,
                    now,
                );
            }
            None
        }
        PodState::Terminated {
            exit_code,
            reason,
            message,
            started_at,
            finished_at,
        } => {
            status.start_time = status.start_time.or(started_at);
            Some(terminated_end(
                &mut status,
                &stops,
                exit_code,
                reason,
                message,
                finished_at,
            ))
        }
        PodState::Killed { reason, message } => {
            let said = message.map(|m| format!(": {m}")).unwrap_or_default();
            Some(if cancelled {
                cancel(None)
            } else if reason.as_deref() == Some("DeadlineExceeded") {
                (
                    RunPhase::Failed,
                    reasons::DEADLINE_EXCEEDED,
                    failure(format!(
                        "the kubelet stopped the runner pod past its deadline{said}"
                    )),
                    None,
                )
            } else if let Some(why) = stops.disrupted.as_deref() {
                (
                    RunPhase::Failed,
                    reasons::EVICTED,
                    failure(evicted_message(&pod_name, why, "")),
                    None,
                )
            } else {
                let why = reason.unwrap_or_else(|| "no reason given".into());
                (
                    RunPhase::Failed,
                    reasons::RUNNER_CRASHED,
                    failure(format!("the runner pod failed ({why}){said}")),
                    None,
                )
            })
        }
    };
    if let Some((phase, reason, error, at)) = end {
        finish(&mut status, phase, reason, error, at, generation, now);
    }
    status
}

/// A run that waits before its pod is created (for its composition, its entries, a slot):
/// `Pending` with `reason` and what it waits for.
pub fn waiting_status(
    run: &StudioRun,
    reason: &'static str,
    message: String,
    now: Timestamp,
) -> StudioRunStatus {
    let mut status = run.status.clone().unwrap_or_default();
    set_phase(
        &mut status,
        RunPhase::Pending,
        reason,
        message,
        run.metadata.generation,
        now,
    );
    status
}

/// A run waiting for a slot: `Pending`, reason `Queued`, its position in the message when it
/// is among the first [`QUEUE_HEAD`]; further back the message says only that, so a long
/// queue's statuses are not rewritten on every start (each would move every position).
pub fn queued_status(
    run: &StudioRun,
    position: usize,
    why: &str,
    now: Timestamp,
) -> StudioRunStatus {
    let place = if position <= QUEUE_HEAD {
        format!("queued at position {position}")
    } else {
        format!("queued behind {QUEUE_HEAD} or more runs")
    };
    waiting_status(
        run,
        reasons::QUEUED,
        format!("{place}: {why}; it starts by itself when a slot frees"),
        now,
    )
}

/// How many runs at the head of a queue have their position in their status.
pub const QUEUE_HEAD: usize = 8;

/// A run cancelled (or deleted) before its runner pod was created: `Cancelled`.
pub fn cancelled_status(run: &StudioRun, now: Timestamp) -> StudioRunStatus {
    let mut status = run.status.clone().unwrap_or_default();
    finish(
        &mut status,
        RunPhase::Cancelled,
        reasons::CANCELLED,
        None,
        None,
        run.metadata.generation,
        now,
    );
    status
}

/// A run refused before it started (invalid composition, entry not Ready, over the daily
/// budget, needs the sidecar): `Failed` with `reason` and the message as its error.
pub fn refused_status(
    run: &StudioRun,
    reason: &'static str,
    message: &str,
    now: Timestamp,
) -> StudioRunStatus {
    let mut status = run.status.clone().unwrap_or_default();
    finish(
        &mut status,
        RunPhase::Failed,
        reason,
        failure(message.to_owned()),
        None,
        run.metadata.generation,
        now,
    );
    status
}

/// A run whose children were just created: `Pending` (reason `Starting`, the same message
/// [`run_status`] gives a starting pod, so seeing the pod start writes nothing more) with the
/// composition it runs and its pod's name.
pub fn started_status(
    run: &StudioRun,
    composition: RanComposition,
    pod: &str,
    now: Timestamp,
) -> StudioRunStatus {
    let mut status = run.status.clone().unwrap_or_default();
    status.composition = Some(composition);
    status.runner_pod = Some(pod.to_owned());
    set_phase(
        &mut status,
        RunPhase::Pending,
        reasons::STARTING,
        STARTING_MESSAGE.to_owned(),
        run.metadata.generation,
        now,
    );
    status
}

/// A finished run's status, unchanged but for `observedGeneration` (at the top and on every
/// condition) when its spec changed after it ended; `None` when it already saw this one.
pub fn observed(run: &StudioRun) -> Option<StudioRunStatus> {
    let generation = run.metadata.generation;
    let mut status = run.status.clone()?;
    if status.observed_generation == generation
        && status
            .conditions
            .iter()
            .all(|c| c.observed_generation == generation)
    {
        return None;
    }
    status.observed_generation = generation;
    for condition in status.conditions.iter_mut() {
        condition.observed_generation = generation;
    }
    Some(status)
}

/// Seconds until a finished run is deleted (0: now); `None` while it has not finished.
pub fn ttl_remaining(run: &StudioRun, ttl_seconds: u64, now: Timestamp) -> Option<u64> {
    let status = run.status.as_ref()?;
    if !status.phase.is_some_and(RunPhase::is_terminal) {
        return None;
    }
    let ended = status
        .completion_time
        .as_deref()
        .and_then(|t| t.parse::<Timestamp>().ok())
        .unwrap_or(now);
    let elapsed = u64::try_from(now.as_second().saturating_sub(ended.as_second())).unwrap_or(0);
    Some(ttl_seconds.saturating_sub(elapsed))
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
