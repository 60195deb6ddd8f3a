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

/// The run's status from its runner pod. A run already ended keeps its status (the outcome is
/// final). A run whose pod was never created is left as it is (the reconciler creates it).
pub fn run_status(run: &StudioRun, pod: Option<&Pod>, now: Timestamp) -> StudioRunStatus {
    let generation = run.metadata.generation;
    let mut status = run.status.clone().unwrap_or_default();
    if status.phase.is_some_and(RunPhase::is_terminal) {
        return status;
    }
    let cancelled = run.spec.cancel || run.metadata.deletion_timestamp.is_some();
    // How the run ended, when it did: (phase, reason, error, when).
    type End = (RunPhase, &'static str, Option<RunError>, Option<String>);
    let cancel = |at: Option<String>| -> End {
        (RunPhase::Cancelled, Outcome::Cancelled.as_str(), None, at)
    };
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
    let end: Option<End> = match pod_state(pod) {
        PodState::Absent => {
            let Some(name) = status.runner_pod.clone() else {
                return status;
            };
            Some(if cancelled {
                cancel(None)
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
            // The sidecar sets AwaitingApproval; the pod alone cannot tell, so keep it.
            if status.phase != Some(RunPhase::AwaitingApproval) {
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
            let stopped_from_outside = |said: Option<String>| -> Option<End> {
                let said = said.map(|m| format!(" ({m})")).unwrap_or_default();
                if deleted {
                    Some((
                        RunPhase::Failed,
                        reasons::POD_DELETED,
                        failure(format!(
                            "the runner pod {pod_name} was deleted before the run ended; the runner stopped on SIGTERM{said}"
                        )),
                        finished_at.clone(),
                    ))
                } else if past_deadline {
                    Some((
                        RunPhase::Failed,
                        reasons::DEADLINE_EXCEEDED,
                        failure(format!(
                            "the kubelet stopped the runner pod {pod_name} past its deadline{said}"
                        )),
                        finished_at.clone(),
                    ))
                } else {
                    None
                }
            };
            Some(match message.as_deref().and_then(parse_summary) {
                // A runner that stopped on SIGTERM says Cancelled; unless the run was
                // cancelled, it was stopped from outside: that is a failure, with the totals.
                Some(summary)
                    if summary.outcome == Outcome::Cancelled
                        && !cancelled
                        && (deleted || past_deadline) =>
                {
                    status.totals = Some(summary.totals);
                    status.events_dropped = i64::try_from(summary.dropped).ok();
                    stopped_from_outside(None).unwrap_or_else(|| cancel(finished_at.clone()))
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
                None if cancelled => cancel(finished_at),
                None if deleted || past_deadline => {
                    stopped_from_outside(Some(format!("exit code {exit_code}, no summary")))
                        .unwrap_or_else(|| cancel(finished_at.clone()))
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
            })
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

/// A run waiting for a slot: `Pending`, reason `Queued`, its position in the message.
pub fn queued_status(
    run: &StudioRun,
    position: usize,
    why: &str,
    now: Timestamp,
) -> StudioRunStatus {
    waiting_status(
        run,
        reasons::QUEUED,
        format!("queued at position {position}: {why}; it starts by itself when a slot frees"),
        now,
    )
}

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
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use crate::kstatus::find;
    use crate::run::builders::tests::run;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use orrery_crds::conditions::{READY, RECONCILING, STALLED};

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn pod(phase: &str, state: Option<ContainerState>, reason: Option<&str>) -> Pod {
        Pod {
            status: Some(PodStatus {
                phase: Some(phase.into()),
                reason: reason.map(str::to_owned),
                start_time: Some(Time(at(5))),
                container_statuses: state.map(|s| {
                    vec![ContainerStatus {
                        name: "runner".into(),
                        state: Some(s),
                        ..ContainerStatus::default()
                    }]
                }),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    fn running() -> Pod {
        pod(
            "Running",
            Some(ContainerState {
                running: Some(ContainerStateRunning::default()),
                ..ContainerState::default()
            }),
            None,
        )
    }

    fn terminated(code: i32, reason: &str, message: &str) -> Pod {
        pod(
            if code == 0 { "Succeeded" } else { "Failed" },
            Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: code,
                    reason: Some(reason.into()),
                    message: Some(message.into()),
                    finished_at: Some(Time(at(60))),
                    ..ContainerStateTerminated::default()
                }),
                ..ContainerState::default()
            }),
            None,
        )
    }

    fn deleting(mut pod: Pod) -> Pod {
        pod.metadata.deletion_timestamp = Some(Time(at(65)));
        pod
    }

    fn with_reason(mut pod: Pod, reason: &str) -> Pod {
        if let Some(status) = pod.status.as_mut() {
            status.reason = Some(reason.into());
        }
        pod
    }

    fn summary(outcome: &str, error: Option<&str>) -> String {
        let mut body = serde_json::json!({
            "type": "run.end", "outcome": outcome, "dropped": 2, "outputSize": 10,
            "totals": {"tokens": 1234, "toolCalls": 3, "delegations": 0, "remoteCalls": 0, "wallTimeMs": 5000}
        });
        if let Some(e) = error {
            body["error"] = serde_json::json!({"node": "write", "message": e});
        }
        body.to_string()
    }

    fn started() -> StudioRun {
        let mut r = run("notes-1");
        r.status = Some(started_status(
            &r,
            RanComposition {
                name: "notes".into(),
                revision: Some(3),
                digest: "d".into(),
            },
            "notes-1-runner",
            at(0),
        ));
        r
    }

    fn check(status: &StudioRunStatus, phase: RunPhase, reason: &str, succeeded: ConditionStatus) {
        assert_eq!(status.phase, Some(phase));
        let c = find(&status.conditions, SUCCEEDED).expect("Succeeded");
        assert_eq!(
            (c.status, c.reason.as_str()),
            (succeeded, reason),
            "{status:?}"
        );
        let ready = find(&status.conditions, READY).map(|c| c.status);
        let (want_ready, abnormal) = match phase {
            RunPhase::Succeeded => (ConditionStatus::True, None),
            p if p.is_terminal() => (ConditionStatus::False, Some(STALLED)),
            _ => (ConditionStatus::Unknown, Some(RECONCILING)),
        };
        assert_eq!(ready, Some(want_ready), "Ready of {phase:?}");
        for t in [RECONCILING, STALLED] {
            assert_eq!(
                find(&status.conditions, t).is_some(),
                abnormal == Some(t),
                "{t} of {phase:?}"
            );
        }
    }

    #[test]
    fn the_phase_follows_the_pod_and_the_runners_summary() {
        use ConditionStatus::{False, True, Unknown};
        let cases: Vec<(&str, Option<Pod>, RunPhase, &str, ConditionStatus)> = vec![
            (
                "created",
                Some(pod("Pending", None, None)),
                RunPhase::Pending,
                reasons::STARTING,
                Unknown,
            ),
            (
                "running",
                Some(running()),
                RunPhase::Running,
                reasons::RUNNING,
                Unknown,
            ),
            (
                "succeeded",
                Some(terminated(0, "Completed", &summary("Succeeded", None))),
                RunPhase::Succeeded,
                "Succeeded",
                True,
            ),
            (
                "failed",
                Some(terminated(
                    1,
                    "Error",
                    &summary("Failed", Some("the model said no")),
                )),
                RunPhase::Failed,
                "Failed",
                False,
            ),
            (
                "budget",
                Some(terminated(
                    0,
                    "Completed",
                    &summary("BudgetExhausted", None),
                )),
                RunPhase::BudgetExhausted,
                "BudgetExhausted",
                False,
            ),
            (
                "rejected",
                Some(terminated(0, "Completed", &summary("Rejected", None))),
                RunPhase::Rejected,
                "Rejected",
                False,
            ),
            (
                "cancelled",
                Some(terminated(143, "Error", &summary("Cancelled", None))),
                RunPhase::Cancelled,
                "Cancelled",
                False,
            ),
            (
                "crashed",
                Some(terminated(137, "OOMKilled", "")),
                RunPhase::Failed,
                reasons::RUNNER_CRASHED,
                False,
            ),
            (
                "garbage",
                Some(terminated(
                    101,
                    "Error",
                    "thread 'main' panicked at src/main.rs",
                )),
                RunPhase::Failed,
                reasons::RUNNER_CRASHED,
                False,
            ),
            (
                "deadline",
                Some(pod("Failed", None, Some("DeadlineExceeded"))),
                RunPhase::Failed,
                reasons::DEADLINE_EXCEEDED,
                False,
            ),
            (
                "evicted",
                Some(pod("Failed", None, Some("Evicted"))),
                RunPhase::Failed,
                reasons::RUNNER_CRASHED,
                False,
            ),
            (
                "deleted",
                None,
                RunPhase::Failed,
                reasons::POD_DELETED,
                False,
            ),
            (
                "deleted while running: the runner stopped on SIGTERM",
                Some(deleting(terminated(
                    130,
                    "Error",
                    &summary("Cancelled", None),
                ))),
                RunPhase::Failed,
                reasons::POD_DELETED,
                False,
            ),
            (
                "deleted, the runner killed without a summary",
                Some(deleting(terminated(137, "Error", ""))),
                RunPhase::Failed,
                reasons::POD_DELETED,
                False,
            ),
            (
                "stopped by the deadline backstop",
                Some(with_reason(
                    terminated(130, "Error", &summary("Cancelled", None)),
                    "DeadlineExceeded",
                )),
                RunPhase::Failed,
                reasons::DEADLINE_EXCEEDED,
                False,
            ),
        ];
        for (name, pod, phase, reason, succeeded) in cases {
            let status = run_status(&started(), pod.as_ref(), at(70));
            check(&status, phase, reason, succeeded);
            if phase.is_terminal() {
                assert!(status.completion_time.is_some(), "{name}: completion time");
            }
            assert_eq!(
                status.runner_pod.as_deref(),
                Some("notes-1-runner"),
                "{name}"
            );
            assert_eq!(
                status.composition.as_ref().and_then(|c| c.revision),
                Some(3),
                "{name}"
            );
        }
    }

    #[test]
    fn a_summary_fills_totals_error_drops_and_times() {
        let status = run_status(
            &started(),
            Some(&terminated(
                1,
                "Error",
                &summary("Failed", Some("the model said no")),
            )),
            at(70),
        );
        assert_eq!(status.totals.as_ref().map(|t| t.tokens), Some(1234));
        assert_eq!(status.events_dropped, Some(2));
        assert_eq!(
            status.error,
            Some(RunError {
                node: Some("write".into()),
                message: "the model said no".into()
            })
        );
        assert_eq!(status.start_time, Some(kstatus::rfc3339(at(5))));
        assert_eq!(status.completion_time, Some(kstatus::rfc3339(at(60))));
    }

    #[test]
    fn a_crash_names_the_exit_code_reason_and_what_the_runner_said() {
        let status = run_status(
            &started(),
            Some(&terminated(101, "Error", "thread 'main' panicked")),
            at(70),
        );
        let message = status.error.map(|e| e.message).unwrap_or_default();
        assert_eq!(
            message,
            "the runner exited with code 101 (Error) without a summary: thread 'main' panicked"
        );
    }

    #[test]
    fn a_cancelled_run_whose_runner_died_without_a_summary_is_cancelled() {
        let mut r = started();
        r.spec.cancel = true;
        for pod in [
            Some(terminated(143, "Error", "")),
            None,
            Some(pod("Failed", None, Some("DeadlineExceeded"))),
            // How a cancel ends: the lowered deadline stops the runner, which says Cancelled.
            Some(with_reason(
                terminated(130, "Error", &summary("Cancelled", None)),
                "DeadlineExceeded",
            )),
            Some(deleting(terminated(
                130,
                "Error",
                &summary("Cancelled", None),
            ))),
        ] {
            let status = run_status(&r, pod.as_ref(), at(70));
            check(
                &status,
                RunPhase::Cancelled,
                "Cancelled",
                ConditionStatus::False,
            );
        }
    }

    #[test]
    fn a_finished_run_keeps_its_outcome_and_a_run_without_pod_waits() {
        let mut r = started();
        r.status = Some(run_status(
            &r,
            Some(&terminated(0, "Completed", &summary("Succeeded", None))),
            at(70),
        ));
        let again = run_status(&r, None, at(999));
        assert_eq!(
            again,
            r.status.clone().expect("status"),
            "a final outcome never changes"
        );
        let fresh = run("notes-2");
        assert_eq!(run_status(&fresh, None, at(0)), StudioRunStatus::default());
    }

    #[test]
    fn awaiting_approval_survives_a_running_pod() {
        let mut r = started();
        if let Some(s) = r.status.as_mut() {
            s.phase = Some(RunPhase::AwaitingApproval);
        }
        assert_eq!(
            run_status(&r, Some(&running()), at(70)).phase,
            Some(RunPhase::AwaitingApproval)
        );
    }

    #[test]
    fn the_summary_is_read_from_a_trace_event_or_a_bare_body_on_the_last_line() {
        let event = format!(
            r#"{{"seq": 9, "runId": "r", "ts": "2026-01-01T00:00:00.000Z", {}"#,
            &summary("Succeeded", None)[1..]
        );
        for text in [
            summary("Succeeded", None),
            event,
            format!("noise\n{}\n\n", summary("Succeeded", None)),
        ] {
            assert_eq!(
                parse_summary(&text).map(|s| s.outcome),
                Some(Outcome::Succeeded),
                "{text}"
            );
        }
        let cut = &summary("Succeeded", None)[..40];
        assert_eq!(
            parse_summary(cut),
            None,
            "a message cut by the kubelet is no summary"
        );
        assert_eq!(parse_summary(r#"{"type":"run.start"}"#), None);
    }

    #[test]
    fn an_error_message_in_status_is_bounded() {
        let long = "é".repeat(MAX_ERROR_BYTES);
        let status = refused_status(&run("r"), reasons::REFUSED, &long, at(0));
        let message = status.error.map(|e| e.message).unwrap_or_default();
        assert!(
            message.len() <= MAX_ERROR_BYTES + '…'.len_utf8(),
            "{}",
            message.len()
        );
        assert!(message.ends_with('…'));
    }

    #[test]
    fn queued_refused_and_started_states_read_as_documented() {
        let queued = queued_status(&run("r"), 2, "owner jane has 3 of 3 runs executing", at(0));
        check(
            &queued,
            RunPhase::Pending,
            reasons::QUEUED,
            ConditionStatus::Unknown,
        );
        let message = find(&queued.conditions, SUCCEEDED)
            .map(|c| c.message.clone())
            .unwrap_or_default();
        assert!(
            message.contains("position 2") && message.contains("jane has 3 of 3"),
            "{message}"
        );
        let refused = refused_status(
            &run("r"),
            reasons::DAILY_BUDGET_EXCEEDED,
            "over budget",
            at(0),
        );
        check(
            &refused,
            RunPhase::Failed,
            reasons::DAILY_BUDGET_EXCEEDED,
            ConditionStatus::False,
        );
        assert_eq!(
            refused.error.map(|e| e.message).as_deref(),
            Some("over budget")
        );
        check(
            started().status.as_ref().expect("status"),
            RunPhase::Pending,
            reasons::STARTING,
            ConditionStatus::Unknown,
        );
    }

    #[test]
    fn a_finished_run_whose_spec_changed_observes_the_generation_and_keeps_its_outcome() {
        let mut r = started();
        r.status = Some(run_status(
            &r,
            Some(&terminated(0, "Completed", &summary("Succeeded", None))),
            at(70),
        ));
        assert_eq!(observed(&r), None, "nothing new to observe");
        r.metadata.generation = Some(2);
        let status = observed(&r).expect("a new generation to observe");
        assert_eq!(status.observed_generation, Some(2));
        assert!(
            status
                .conditions
                .iter()
                .all(|c| c.observed_generation == Some(2))
        );
        check(
            &status,
            RunPhase::Succeeded,
            "Succeeded",
            ConditionStatus::True,
        );
        let before = r.status.as_ref().map(|s| s.conditions.clone());
        assert_eq!(
            before.map(|c| c
                .iter()
                .map(|c| c.last_transition_time.clone())
                .collect::<Vec<_>>()),
            Some(
                status
                    .conditions
                    .iter()
                    .map(|c| c.last_transition_time.clone())
                    .collect()
            ),
            "transition times are kept"
        );
    }

    #[test]
    fn the_ttl_counts_from_the_completion_time() {
        let mut r = started();
        assert_eq!(ttl_remaining(&r, 100, at(0)), None, "not finished");
        r.status = Some(run_status(
            &r,
            Some(&terminated(0, "Completed", &summary("Succeeded", None))),
            at(70),
        ));
        // completed at at(60)
        assert_eq!(ttl_remaining(&r, 100, at(60)), Some(100));
        assert_eq!(ttl_remaining(&r, 100, at(100)), Some(60));
        assert_eq!(ttl_remaining(&r, 100, at(500)), Some(0));
    }
}
