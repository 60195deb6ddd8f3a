//! The unit tests of [`super`] (status.rs).

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

/// `pod` with the condition the Eviction API sets before it deletes a pod.
fn disrupted(mut pod: Pod) -> Pod {
    if let Some(status) = pod.status.as_mut() {
        status.conditions.get_or_insert_with(Vec::new).push(
            k8s_openapi::api::core::v1::PodCondition {
                type_: "DisruptionTarget".into(),
                status: "True".into(),
                reason: Some("EvictionByEvictionAPI".into()),
                message: Some("Eviction API: evicting".into()),
                ..Default::default()
            },
        );
    }
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
            "evicted by the kubelet under node pressure",
            Some(pod("Failed", None, Some("Evicted"))),
            RunPhase::Failed,
            reasons::EVICTED,
            False,
        ),
        (
            "evicted through the Eviction API: the runner stopped on SIGTERM",
            Some(disrupted(deleting(terminated(
                143,
                "Error",
                &summary("Cancelled", None),
            )))),
            RunPhase::Failed,
            reasons::EVICTED,
            False,
        ),
        (
            "failed for another reason",
            Some(pod("Failed", None, Some("UnexpectedAdmissionError"))),
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
fn a_pod_seen_being_evicted_fails_its_run_evicted_even_when_it_is_gone_before_it_is_seen_stopped() {
    // The Eviction API marks the pod, then deletes it; its runner still runs.
    let mut run = started();
    let evicting = run_status(&run, Some(&disrupted(deleting(running()))), at(60));
    check(
        &evicting,
        RunPhase::Running,
        reasons::EVICTING,
        ConditionStatus::Unknown,
    );
    run.status = Some(evicting);
    // Gone before a reconcile saw its runner stop: still Evicted, saying why.
    let gone = run_status(&run, None, at(70));
    check(
        &gone,
        RunPhase::Failed,
        reasons::EVICTED,
        ConditionStatus::False,
    );
    let message = gone.error.map(|e| e.message).unwrap_or_default();
    assert!(
        message.contains("notes-1-runner was evicted")
            && message.contains("EvictionByEvictionAPI: Eviction API: evicting")
            && message.contains("start a new run"),
        "{message}"
    );
    // Seen being evicted by this process only (its Evicting write did not land): the same.
    let seen = gone_status(&started(), Some("EvictionByEvictionAPI: evicting"), at(70));
    check(
        &seen,
        RunPhase::Failed,
        reasons::EVICTED,
        ConditionStatus::False,
    );
    let unseen = gone_status(&started(), None, at(70));
    check(
        &unseen,
        RunPhase::Failed,
        reasons::POD_DELETED,
        ConditionStatus::False,
    );
    // A cancelled run's pod going the same way is cancelled, as ever.
    run.spec.cancel = true;
    check(
        &gone_status(&run, Some("EvictionByEvictionAPI: evicting"), at(70)),
        RunPhase::Cancelled,
        "Cancelled",
        ConditionStatus::False,
    );
    check(
        &run_status(&run, None, at(70)),
        RunPhase::Cancelled,
        "Cancelled",
        ConditionStatus::False,
    );
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
    // Further back than the head, the message does not move with each start.
    let far = |position| {
        let status = queued_status(
            &run("r"),
            position,
            "owner jane has 3 of 3 runs executing",
            at(0),
        );
        find(&status.conditions, SUCCEEDED)
            .map(|c| c.message.clone())
            .unwrap_or_default()
    };
    assert_eq!(far(QUEUE_HEAD + 1), far(QUEUE_HEAD + 40));
    assert!(
        far(QUEUE_HEAD + 1).starts_with("queued behind 8 or more runs: owner jane"),
        "{}",
        far(QUEUE_HEAD + 1)
    );
    assert!(far(QUEUE_HEAD).starts_with("queued at position 8:"));
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
