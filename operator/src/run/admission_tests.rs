//! The unit tests of [`super`] (admission.rs).

#![allow(clippy::expect_used, clippy::panic)]
use super::*;
use crate::run::builders::tests::{config, document, run};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use orrery_crds::StudioRunStatus;
use orrery_crds::run::RunTotals;

fn at(seconds: i64) -> Timestamp {
    // 2027-01-15T08:00:00Z
    Timestamp::from_second(1_800_000_000 + seconds).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A run `name` of `owner` created at `created`, in `state`: "wait", "run" (has a pod),
/// "done" (finished with `tokens`), "cancel" (waiting but cancelled).
fn r(name: &str, owner: &str, created: i64, state: &str, tokens: u64) -> StudioRun {
    let mut run = run(name);
    run.spec.owner = owner.into();
    run.metadata.creation_timestamp = Some(Time(at(created)));
    match state {
        "run" => {
            run.status = Some(StudioRunStatus {
                phase: Some(RunPhase::Running),
                runner_pod: Some(format!("{name}-runner")),
                ..StudioRunStatus::default()
            })
        }
        "done" => {
            run.status = Some(StudioRunStatus {
                phase: Some(RunPhase::Succeeded),
                runner_pod: Some(format!("{name}-runner")),
                totals: Some(RunTotals {
                    tokens,
                    ..RunTotals::default()
                }),
                ..StudioRunStatus::default()
            })
        }
        "cancel" => run.spec.cancel = true,
        _ => {}
    }
    run
}

fn limits(owner: Option<u32>, namespace: Option<u32>) -> RunLimits {
    RunLimits {
        max_concurrent_runs_per_owner: owner,
        max_concurrent_runs_per_namespace: namespace,
        daily_token_budget_per_owner: None,
    }
}

fn decide(me: &str, runs: &[StudioRun], limits: &RunLimits) -> QueueDecision {
    let run = runs
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(me))
        .expect("the run is in the list");
    queue_decision(run, runs, limits)
}

#[test]
fn the_queue_admits_in_creation_order_under_each_limit() {
    let runs = vec![
        r("a-running", "ann", 0, "run", 0),
        r("a-done", "ann", 1, "done", 10),
        r("a-wait-1", "ann", 2, "wait", 0),
        r("b-wait-1", "bob", 3, "wait", 0),
        r("a-wait-2", "ann", 4, "wait", 0),
        r("b-cancelled", "bob", 1, "cancel", 0),
        r("b-wait-2", "bob", 5, "wait", 0),
    ];
    let queued = |position, why: &str| QueueDecision::Queued {
        position,
        why: why.into(),
    };
    let owner1 = "owner ann has 1 of 1 runs executing (runLimits.maxConcurrentRunsPerOwner)";
    let cases: Vec<(&str, RunLimits, QueueDecision)> = vec![
        ("a-wait-1", limits(None, None), QueueDecision::Start),
        // ann holds her one slot: her runs wait, bob's start.
        ("a-wait-1", limits(Some(1), None), queued(1, owner1)),
        ("a-wait-2", limits(Some(1), None), queued(2, owner1)),
        ("b-wait-1", limits(Some(1), None), QueueDecision::Start),
        (
            "b-wait-2",
            limits(Some(1), None),
            queued(
                3,
                "owner bob has 1 of 1 runs executing (runLimits.maxConcurrentRunsPerOwner)",
            ),
        ),
        // two namespace slots: one taken, the oldest waiting run gets the other.
        ("a-wait-1", limits(None, Some(2)), QueueDecision::Start),
        (
            "b-wait-1",
            limits(None, Some(2)),
            queued(
                1,
                "the namespace has 2 of 2 runs executing (runLimits.maxConcurrentRunsPerNamespace)",
            ),
        ),
        // ann's waiting run is held by her own limit, so it does not take bob's namespace slot.
        ("b-wait-1", limits(Some(1), Some(2)), QueueDecision::Start),
        (
            "b-wait-2",
            limits(Some(1), Some(2)),
            queued(
                3,
                "owner bob has 1 of 1 runs executing (runLimits.maxConcurrentRunsPerOwner)",
            ),
        ),
    ];
    for (me, limits, want) in cases {
        assert_eq!(decide(me, &runs, &limits), want, "{me} under {limits:?}");
    }
    // A run that already has its pod keeps its slot whatever the limits.
    assert_eq!(
        decide("a-running", &runs, &limits(Some(1), Some(1))),
        QueueDecision::Start
    );
}

#[test]
fn an_owners_runs_count_in_every_namespace_and_a_namespaces_only_there() {
    let elsewhere = |mut run: StudioRun| {
        run.metadata.namespace = Some("other-team".into());
        run
    };
    let runs = vec![
        elsewhere(r("a-running", "ann", 0, "run", 0)),
        elsewhere(r("b-running", "bob", 0, "run", 0)),
        r("a-wait", "ann", 2, "wait", 0),
        r("b-wait", "bob", 3, "wait", 0),
        // The same name in another namespace is another run.
        elsewhere(r("b-wait", "bob", 1, "wait", 0)),
    ];
    let owner1 = "owner ann has 1 of 1 runs executing (runLimits.maxConcurrentRunsPerOwner)";
    assert_eq!(
        decide("a-wait", &runs, &limits(Some(1), None)),
        QueueDecision::Queued {
            position: 1,
            why: owner1.into()
        }
    );
    // other-team's two running runs do not fill this namespace's one slot.
    assert_eq!(
        decide("a-wait", &runs, &limits(None, Some(1))),
        QueueDecision::Start
    );
}

#[test]
fn a_freed_slot_lets_the_first_waiting_run_start() {
    let mut runs = vec![
        r("a-running", "ann", 0, "run", 0),
        r("a-wait-1", "ann", 2, "wait", 0),
        r("a-wait-2", "ann", 3, "wait", 0),
    ];
    assert!(matches!(
        decide("a-wait-1", &runs, &limits(Some(1), None)),
        QueueDecision::Queued { position: 1, .. }
    ));
    runs[0] = r("a-running", "ann", 0, "done", 5);
    assert_eq!(
        decide("a-wait-1", &runs, &limits(Some(1), None)),
        QueueDecision::Start
    );
    assert!(matches!(
        decide("a-wait-2", &runs, &limits(Some(1), None)),
        QueueDecision::Queued { position: 1, .. }
    ));
}

#[test]
fn the_daily_budget_sums_the_owners_runs_of_the_utc_day() {
    let day = 24 * 3600;
    let runs = vec![
        r("ann-1", "ann", 0, "done", 600),
        r("ann-2", "ann", 60, "done", 300),
        r("ann-yesterday", "ann", -day, "done", 10_000),
        r("bob-1", "bob", 0, "done", 5_000),
        r("ann-running", "ann", 120, "run", 0),
    ];
    assert_eq!(tokens_used_today("ann", &runs, at(3600)), 900);
    assert_eq!(tokens_used_today("bob", &runs, at(3600)), 5_000);
    let me = r("ann-new", "ann", 3600, "wait", 0);
    let budget = |n| RunLimits {
        daily_token_budget_per_owner: Some(n),
        ..RunLimits::default()
    };
    assert_eq!(
        check_daily_budget(&me, &runs, &budget(1000), at(3600)),
        Ok(())
    );
    let err = check_daily_budget(&me, &runs, &budget(900), at(3600))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("used 900 of 900 tokens today"), "{err}");
    assert_eq!(
        check_daily_budget(&me, &runs, &RunLimits::default(), at(3600)),
        Ok(())
    );
}

#[test]
fn a_run_may_lower_a_budget_but_never_raise_it() {
    let spec: CompositionSpec = serde_yaml::from_str(
            "{pattern: Pipeline, budgets: {maxTokens: 1000}, nodes: [{id: a, kind: LLMAgent, model: m, instruction: do}]}",
        )
        .expect("spec");
    let ceilings = BudgetLimits::DEFAULT_CEILINGS;
    let lower = Budgets {
        max_tokens: Some(500),
        timeout_seconds: Some(60),
        ..Budgets::default()
    };
    let out = apply_budget_overrides(&spec, Some(&lower), &ceilings).expect("lower is fine");
    assert_eq!(
        (out.budgets.max_tokens, out.budgets.timeout_seconds),
        (Some(500), Some(60))
    );
    let raise = Budgets {
        max_tokens: Some(1001),
        ..Budgets::default()
    };
    let err = apply_budget_overrides(&spec, Some(&raise), &ceilings)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("spec.budgets.maxTokens is 1001, over the composition's 1000"),
        "{err}"
    );
    // Where the composition sets none, the ceiling is its budget.
    let over_ceiling = Budgets {
        max_tool_calls: Some(ceilings.max_tool_calls + 1),
        ..Budgets::default()
    };
    assert!(apply_budget_overrides(&spec, Some(&over_ceiling), &ceilings).is_err());
    assert_eq!(
        apply_budget_overrides(&spec, None, &ceilings).expect("no overrides"),
        spec
    );
}

#[test]
fn a_plan_waits_for_unprobed_entries_and_is_refused_on_entries_not_ready() {
    use crate::kstatus::{Health, set_health};
    let config = config("");
    let doc = document(&config);
    let mut entries = crate::run::builders::tests::entries();
    assert_eq!(
        entries_readiness(&doc.plan, &entries),
        EntryReadiness::Waiting(
            "RegistryEntry gpt is not Ready yet; RegistryEntry tools is not Ready yet".into()
        )
    );
    for e in entries.iter_mut() {
        let status = e.status.get_or_insert_with(Default::default);
        set_health(
            &mut status.conditions,
            &Health::Ready {
                reason: "Probed",
                message: String::new(),
            },
            None,
            at(0),
        );
    }
    assert_eq!(
        entries_readiness(&doc.plan, &entries),
        EntryReadiness::Ready
    );
    // Ready of generation 3, but the entry is at 4 (edited: its URL moved, say): the run
    // waits for the check of what would be called (rules 5.46/5.47).
    for e in entries.iter_mut() {
        e.metadata.generation = Some(3);
        let status = e.status.get_or_insert_with(Default::default);
        set_health(
            &mut status.conditions,
            &Health::Ready {
                reason: "Probed",
                message: String::new(),
            },
            Some(3),
            at(0),
        );
    }
    assert_eq!(
        entries_readiness(&doc.plan, &entries),
        EntryReadiness::Ready
    );
    if let Some(gpt) = entries
        .iter_mut()
        .find(|e| e.metadata.name.as_deref() == Some("gpt"))
    {
        gpt.metadata.generation = Some(4);
    }
    assert_eq!(
        entries_readiness(&doc.plan, &entries),
        EntryReadiness::Waiting(
            "RegistryEntry gpt changed (generation 4) and is being checked again".into()
        )
    );
    if let Some(gpt) = entries
        .iter_mut()
        .find(|e| e.metadata.name.as_deref() == Some("gpt"))
    {
        gpt.metadata.generation = Some(3);
    }
    if let Some(status) = entries
        .iter_mut()
        .find(|e| e.metadata.name.as_deref() == Some("tools"))
        .and_then(|e| e.status.as_mut())
    {
        set_health(
            &mut status.conditions,
            &Health::Stalled {
                reason: "PinChanged",
                message: "the card changed".into(),
            },
            None,
            at(1),
        );
    }
    assert_eq!(
        entries_readiness(&doc.plan, &entries),
        EntryReadiness::Refused(
            "RegistryEntry tools is not Ready (PinChanged: the card changed)".into()
        )
    );
    entries.retain(|e| e.metadata.name.as_deref() != Some("gpt"));
    let EntryReadiness::Refused(err) = entries_readiness(&doc.plan, &entries) else {
        panic!("a missing entry refuses the run");
    };
    assert!(err.starts_with("RegistryEntry gpt does not exist"), "{err}");
}

#[test]
fn only_an_enforced_restricted_label_counts_as_restricted() {
    let ns = |labels: &[(&str, &str)]| Namespace {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Namespace::default()
    };
    assert!(enforces_restricted(&ns(&[(
        POD_SECURITY_ENFORCE_LABEL,
        "restricted"
    )])));
    assert!(!enforces_restricted(&ns(&[(
        POD_SECURITY_ENFORCE_LABEL,
        "baseline"
    )])));
    assert!(!enforces_restricted(&ns(&[(
        "pod-security.kubernetes.io/warn",
        "restricted"
    )])));
    assert!(!enforces_restricted(&Namespace::default()));
}

#[test]
fn a_service_account_run_that_can_ask_a_person_needs_approvers_and_a_persons_run_does_not_rule_4_54()
 {
    use orrery_crds::plan::PlannedTool;
    use orrery_crds::run::Approvers;
    let config = config("");
    let plain = document(&config).plan;
    let mut approval = plain.clone();
    approval.nodes[1].kind = NodeKind::HumanApproval;
    let mut remote = plain.clone();
    remote.nodes[1].tools.push(PlannedTool {
        reference: "a2a:desk.ask".into(),
        kind: ToolKind::A2a,
        entry: "desk".into(),
        remote_name: "ask".into(),
        model_name: "a2a_desk_ask".into(),
        acting: false,
    });
    let sa = "system:serviceaccount:team:pipeline";
    let owned = |owner: &str, approvers: Option<Approvers>| {
        let mut r = run("r");
        r.spec.owner = owner.into();
        r.spec.approvers = approvers;
        r
    };
    let users = |u: &[&str]| {
        Some(Approvers {
            users: u.iter().map(|s| (*s).to_owned()).collect(),
            groups: Vec::new(),
        })
    };
    let groups = Some(Approvers {
        users: Vec::new(),
        groups: vec!["release-managers".into()],
    });

    let why = needs_approvers(&owned(sa, None), &approval).unwrap_or_default();
    assert_eq!(
        why,
        format!(
            "the run's owner {sa} is not a person and can never decide, but the composition can ask a person (HumanApproval node(s) write) and the run names no approvers: name the people who decide in spec.approvers.users or spec.approvers.groups and create the run again"
        )
    );
    let why = needs_approvers(&owned(sa, None), &remote).unwrap_or_default();
    assert!(why.contains("(A2A tool(s) a2a:desk.ask)"), "{why}");
    // Approvers that are not people do not count; an empty list is none.
    let bots = users(&["system:serviceaccount:team:bot"]);
    assert!(needs_approvers(&owned(sa, bots), &approval).is_some());
    assert!(needs_approvers(&owned(sa, users(&[])), &approval).is_some());
    // Neighbours: named approvers, a person's run, a plan that asks nobody.
    assert_eq!(
        needs_approvers(&owned(sa, users(&["alice"])), &approval),
        None
    );
    assert_eq!(needs_approvers(&owned(sa, groups), &remote), None);
    assert_eq!(needs_approvers(&owned("jane", None), &approval), None);
    assert_eq!(needs_approvers(&owned(sa, None), &plain), None);
}
