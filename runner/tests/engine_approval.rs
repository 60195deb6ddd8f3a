//! Human approval in a run (seed rules §4a): approve against the digest, reject with a comment
//! (the rejected edge's node gets it with the rejected text), no rejected edge, expiry, a wrong
//! digest, a rejection past the loop's cap, and the deadline paused while a person decides.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod engine_support;

use engine_support::Case;
use orrery_runner::approval::{ScriptedDecision, ScriptedDecisions, approval_digest};
use orrery_runner::events::{DecisionKind, EventBody, NodeStatus, Outcome};
use std::sync::Arc;
use std::time::Duration;

const REVIEW: &str = r#"
pattern: CriticLoop
nodes:
  - {id: start, kind: LLMAgent}
  - {id: writer, kind: LLMAgent}
  - {id: review, kind: HumanApproval, prompt: Publish this?}
  - {id: publish, kind: LLMAgent}
edges:
  - {from: start, to: writer}
  - {from: writer, to: review}
  - {from: review, to: publish, when: approved}
  - {from: review, to: writer, when: rejected, maxIterations: 2}
"#;

const SCRIPT: &str = r#"
nodes:
  writer: [{reply: "draft 1"}, {reply: "draft 2 after: {{input}}"}, {reply: "draft 3"}]
  publish: [{reply: "published: {{input}}"}]
"#;

/// The digest of `text` as approval `id` of the test run (`engine_support`'s run id).
fn digest_of(id: &str, text: &str) -> String {
    approval_digest("test-run", id, text)
}

fn decisions(ran: &engine_support::Ran) -> Vec<DecisionKind> {
    ran.of("approval.decided")
        .into_iter()
        .map(|e| match e {
            EventBody::ApprovalDecided { decision, .. } => *decision,
            _ => unreachable!(),
        })
        .collect()
}

#[tokio::test]
async fn an_approval_naming_the_digest_sends_exactly_the_reviewed_text_on_rule_4_18() {
    let source = Arc::new(ScriptedDecisions::new([ScriptedDecision::Approve]));
    let ran = Case::new(REVIEW, SCRIPT).source(source.clone()).run().await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Succeeded);
    assert_eq!(ran.result.output.as_deref(), Some("published: draft 1"));
    let request = &source.requests()[0];
    assert_eq!(request.text, "draft 1");
    assert_eq!(request.digest, digest_of("approval-1", "draft 1"));
    assert_eq!(request.prompt, "Publish this?");
    match ran.of("approval.requested")[0] {
        EventBody::ApprovalRequested {
            digest,
            size,
            complete,
            text,
            ..
        } => {
            assert_eq!(digest, &digest_of("approval-1", "draft 1"));
            assert_eq!(*size, 7);
            assert!(*complete);
            assert!(text.is_none(), "no content without capture");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(decisions(&ran), [DecisionKind::Approved]);
}

#[tokio::test]
async fn a_rejection_sends_the_comment_and_the_rejected_text_down_the_rejected_edge_rule_4_16() {
    let ran = Case::new(REVIEW, SCRIPT)
        .decisions([
            ScriptedDecision::Reject(Some("add a summary".into())),
            ScriptedDecision::Approve,
        ])
        .run()
        .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Succeeded);
    let output = ran.result.output.clone().unwrap();
    assert!(output.starts_with("published: draft 2 after: "), "{output}");
    assert!(
        output.contains("add a summary") && output.contains("draft 1"),
        "{output}"
    );
    assert_eq!(
        decisions(&ran),
        [DecisionKind::Rejected, DecisionKind::Approved]
    );
    assert_eq!(ran.loops(), [("review".into(), 1, 2, false)]);
}

#[tokio::test]
async fn a_rejection_without_a_rejected_edge_ends_the_run_rejected_rule_4_17() {
    let ran = Case::new(
        r#"
pattern: Router
nodes:
  - {id: writer, kind: LLMAgent}
  - {id: review, kind: HumanApproval}
  - {id: publish, kind: LLMAgent}
edges:
  - {from: writer, to: review}
  - {from: review, to: publish, when: approved}
"#,
        SCRIPT,
    )
    .decisions([ScriptedDecision::Reject(None)])
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Rejected);
    assert_eq!(
        ran.result.error.clone().unwrap().node.as_deref(),
        Some("review")
    );
    assert!(!ran.entered().contains(&"publish".to_owned()));
}

#[tokio::test]
async fn an_expired_approval_ends_the_run_rejected_and_never_takes_an_edge_rule_4_13() {
    let ran = Case::new(REVIEW, SCRIPT)
        .decisions([ScriptedDecision::Wait])
        .options(|o| o.approval_timeout = Duration::from_millis(200))
        .run()
        .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Rejected);
    assert!(
        ran.result
            .error
            .clone()
            .unwrap()
            .message
            .contains("expired")
    );
    assert_eq!(decisions(&ran), [DecisionKind::Expired]);
    assert_eq!(
        ran.entered(),
        ["start", "writer", "review"],
        "neither edge was taken"
    );
    let exit = ran
        .of("node.exit")
        .into_iter()
        .find_map(|e| match e {
            EventBody::NodeExit {
                node_id, status, ..
            } if node_id == "review" => Some(*status),
            _ => None,
        })
        .unwrap();
    assert_eq!(exit, NodeStatus::Expired, "an expiry is not an ok exit");
}

#[tokio::test]
async fn a_wrong_digest_is_refused_and_reported_and_the_approval_stays_open_rule_4_8() {
    let source = Arc::new(ScriptedDecisions::new([
        // The digest of the same text in another run: never this run's.
        ScriptedDecision::ApproveDigest(approval_digest("another-run", "approval-1", "draft 1")),
        ScriptedDecision::Approve,
    ]));
    let ran = Case::new(REVIEW, SCRIPT).source(source.clone()).run().await;
    assert_eq!(ran.result.outcome, Outcome::Succeeded);
    assert_eq!(source.refusals().len(), 1);
    assert!(
        source.refusals()[0].contains("does not match"),
        "{}",
        source.refusals()[0]
    );
    assert_eq!(source.requests().len(), 2, "asked again after the refusal");
    assert_eq!(
        ran.of("approval.requested").len(),
        1,
        "one approval, decided once"
    );
    match ran.of("approval.decided")[0] {
        EventBody::ApprovalDecided {
            decision, digest, ..
        } => {
            assert_eq!(*decision, DecisionKind::Approved);
            assert_eq!(
                digest.as_deref(),
                Some(digest_of("approval-1", "draft 1").as_str())
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_rejection_past_the_loops_cap_ends_the_run_rejected_not_succeeded_rule_4_19() {
    let ran = Case::new(REVIEW, SCRIPT)
        .decisions([
            ScriptedDecision::Reject(Some("no".into())),
            ScriptedDecision::Reject(Some("still no".into())),
            ScriptedDecision::Reject(Some("never".into())),
        ])
        .run()
        .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Rejected);
    assert!(
        ran.result.output.is_none(),
        "never succeeded with the draft that was turned down"
    );
    assert_eq!(
        ran.loops(),
        [
            ("review".into(), 1, 2, false),
            ("review".into(), 2, 2, false),
            ("review".into(), 3, 2, true)
        ]
    );
    assert!(
        ran.result
            .error
            .clone()
            .unwrap()
            .message
            .contains("maxIterations")
    );
}

#[tokio::test]
async fn the_deadline_does_not_run_while_a_person_decides_rule_3_13() {
    // The run may compute for 1 s; the person takes 1.5 s and lets it expire. The outcome is
    // the expiry (Rejected), not the deadline (BudgetExhausted).
    let ran = Case::new(
        &REVIEW.replace(
            "pattern: CriticLoop",
            "pattern: CriticLoop\nbudgets: {timeoutSeconds: 1}",
        ),
        SCRIPT,
    )
    .decisions([ScriptedDecision::Wait])
    .options(|o| o.approval_timeout = Duration::from_millis(1500))
    .run()
    .await;
    assert_eq!(
        ran.result.outcome,
        Outcome::Rejected,
        "{:?}",
        ran.result.error
    );
    assert!(ran.budget_hits().is_empty());
    assert!(
        ran.result.totals.wall_time_ms >= 1500,
        "wall time includes the wait"
    );
}

#[tokio::test]
async fn nobody_at_the_terminal_lets_an_approval_expire_default_deny() {
    let ran = Case::new(REVIEW, SCRIPT)
        .source(Arc::new(orrery_runner::approval::Nobody::quiet()))
        .run()
        .await;
    assert_eq!(ran.result.outcome, Outcome::Rejected);
    assert_eq!(decisions(&ran), [DecisionKind::Expired]);
}

/// The review's shape: the rejection leads through a reviser to the capped back edge, so the
/// approval's rejected edge is not itself the back edge.
const REVISE: &str = r#"
pattern: CriticLoop
nodes:
  - {id: start, kind: LLMAgent}
  - {id: writer, kind: LLMAgent}
  - {id: gate, kind: HumanApproval}
  - {id: reviser, kind: LLMAgent}
  - {id: publish, kind: LLMAgent}
edges:
  - {from: start, to: writer}
  - {from: writer, to: gate}
  - {from: gate, to: publish, when: approved}
  - {from: gate, to: reviser, when: rejected}
  - {from: reviser, to: writer, maxIterations: 1}
"#;

const REVISE_SCRIPT: &str = r#"
nodes:
  writer: [{reply: "DRAFT v1"}, {reply: "DRAFT v2"}]
  reviser: [{reply: "please revise: {{input}}"}]
  publish: [{reply: "published: {{input}}"}]
"#;

#[tokio::test]
async fn a_rejection_reaching_the_cap_through_other_nodes_ends_the_run_rejected_rules_2_16_4_19() {
    let ran = Case::new(REVISE, REVISE_SCRIPT)
        .decisions([
            ScriptedDecision::Reject(Some("no".into())),
            ScriptedDecision::Reject(Some("still no".into())),
        ])
        .run()
        .await;
    ran.assert_well_formed();
    assert_eq!(
        ran.result.outcome,
        Outcome::Rejected,
        "{:?}",
        ran.result.error
    );
    assert!(
        ran.result.output.is_none(),
        "never succeeded with the draft that was turned down"
    );
    let error = ran.result.error.clone().unwrap();
    assert_eq!(error.node.as_deref(), Some("gate"));
    assert!(
        error.message.contains("maxIterations 1"),
        "{}",
        error.message
    );
    assert_eq!(
        ran.loops(),
        [
            ("reviser".into(), 1, 1, false),
            ("reviser".into(), 2, 1, true)
        ]
    );
    assert!(!ran.entered().contains(&"publish".to_owned()));
}

#[tokio::test]
async fn an_approval_after_a_rejection_in_the_same_loop_still_publishes_rule_4_18() {
    let ran = Case::new(REVISE, REVISE_SCRIPT)
        .decisions([
            ScriptedDecision::Reject(Some("no".into())),
            ScriptedDecision::Approve,
        ])
        .run()
        .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Succeeded);
    assert_eq!(ran.result.output.as_deref(), Some("published: DRAFT v2"));
}
