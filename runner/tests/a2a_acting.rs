//! An acting remote agent inside whole runs: the engine with a real A2A tool (`effect: Acting`)
//! whose every call the run's owner confirms first. A refused call still counts against
//! `maxRemoteCalls`, so a model that keeps retrying runs out (rule 3.12), and a refused action
//! does not fail the run (rule 4.48).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod engine_support;
mod remote_support;

use engine_support::Case;
use orrery_crds::plan::ToolKind;
use orrery_crds::registry::Effect;
use orrery_crds::run::ApprovalKind;
use orrery_runner::approval::ScriptedDecision;
use orrery_runner::events::{CallStatus, DecisionKind, EventBody, Outcome};
use orrery_runner::pin::store::PinStore;
use orrery_runner::tools::Tool;
use remote_support::a2a_fixture::{A2aFixture, Behaviour, Setup};
use remote_support::{a2a_entry, build, factory};
use std::sync::Arc;

/// An echo agent whose one skill is `ask` (the skill the engine tests' registry plans for
/// `helper`).
async fn agent() -> A2aFixture {
    A2aFixture::start(Setup::new(Behaviour::Echo).edit_card(|c| c.skills[0].id = "ask".into()))
        .await
}

/// The real A2A tool of `helper.ask`, acting, in a deployment that allows acting remotes.
async fn acting_tool(agent: &A2aFixture) -> Arc<dyn Tool> {
    let entry = a2a_entry("helper", &agent.card_url(), |a| {
        a.skills = vec!["ask".into()];
        a.effect = Effect::Acting;
    });
    let f = factory(Arc::new(PinStore::in_memory()), true, &[]);
    build(&f, ToolKind::A2a, &entry, "ask").await.unwrap()
}

fn statuses(ran: &engine_support::Ran) -> Vec<CallStatus> {
    ran.of("tool.call")
        .into_iter()
        .map(|e| match e {
            EventBody::ToolCall { status, .. } => *status,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn decided(ran: &engine_support::Ran) -> Vec<(ApprovalKind, DecisionKind)> {
    ran.of("approval.decided")
        .into_iter()
        .map(|e| match e {
            EventBody::ApprovalDecided { kind, decision, .. } => (*kind, *decision),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn a_refused_acting_call_counts_against_max_remote_calls_so_retrying_runs_out_rule_3_12() {
    let agent = agent().await;
    let ran = Case::new(
        r#"
pattern: Pipeline
budgets: {maxRemoteCalls: 1}
nodes:
  - {id: a, kind: LLMAgent, tools: ["a2a:helper.ask"]}
"#,
        r#"
nodes:
  a:
    - toolCalls: [{name: a2a_helper_ask, arguments: {request: "deploy 1.2"}}]
    - toolCalls: [{name: a2a_helper_ask, arguments: {request: "deploy 1.2, really"}}]
    - reply: never
"#,
    )
    .tool("a2a:helper.ask", acting_tool(&agent).await)
    .decisions([ScriptedDecision::Reject(Some("not today".into()))])
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(
        decided(&ran),
        [(ApprovalKind::Action, DecisionKind::Rejected)],
        "the owner was asked once, and refused"
    );
    assert_eq!(
        ran.result.totals.remote_calls, 1,
        "the refused call was charged"
    );
    assert_eq!(
        statuses(&ran),
        [CallStatus::Error, CallStatus::Refused],
        "the retry was refused on the budget, before anyone was asked"
    );
    assert_eq!(ran.result.outcome, Outcome::BudgetExhausted);
    assert_eq!(
        ran.budget_hits(),
        [("maxRemoteCalls".into(), 1, Some("a".into()))]
    );
    assert!(
        !agent.requests().is_empty(),
        "the card was fetched (the log works)"
    );
    assert!(agent.rpc_requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn a_refused_action_does_not_fail_the_run_rule_4_48() {
    let agent = agent().await;
    let ran = Case::new(
        r#"
pattern: Pipeline
nodes:
  - {id: a, kind: LLMAgent, tools: ["a2a:helper.ask"]}
"#,
        r#"
nodes:
  a:
    - toolCalls: [{name: a2a_helper_ask, arguments: {request: "deploy 1.2"}}]
    - reply: "nothing was deployed"
"#,
    )
    .tool("a2a:helper.ask", acting_tool(&agent).await)
    .decisions([ScriptedDecision::Reject(None)])
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(
        ran.result.outcome,
        Outcome::Succeeded,
        "{:?}",
        ran.result.error
    );
    assert!(ran.result.error.is_none());
    assert_eq!(ran.result.output.as_deref(), Some("nothing was deployed"));
    assert_eq!(
        decided(&ran),
        [(ApprovalKind::Action, DecisionKind::Rejected)],
        "the trace shows what was not done"
    );
    assert_eq!(statuses(&ran), [CallStatus::Error]);
    assert!(!agent.requests().is_empty());
    assert!(agent.rpc_requests().is_empty(), "nothing was sent");
}
