//! People in a remote call: a remote's questions go to a person, never the model (rules
//! 4.27–4.36); acting remotes are confirmed per call by the owner (rules 4.40–4.50); a
//! cancelled call sends a best-effort `CancelTask` (rule 6.16).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod remote_support;

use orrery_crds::budget::BudgetKey;
use orrery_crds::budget::BudgetLimits;
use orrery_crds::plan::ToolKind;
use orrery_crds::registry::{Effect, RegistryEntry};
use orrery_crds::run::ApprovalKind;
use orrery_runner::approval::{
    ApprovalRequest, Decision, DecisionSource, People, ScriptedDecision,
};
use orrery_runner::pin::store::PinStore;
use orrery_runner::tools::{Tool, ToolError};
use remote_support::a2a_fixture::{A2aFixture, Behaviour, Setup};
use remote_support::{TestCtx, a2a_entry, build, build_err, factory};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const QUESTION: &str = "question 1/1: who is the audience for this draft?";

async fn asking(rounds: usize) -> (A2aFixture, Arc<dyn Tool>) {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Ask { rounds })).await;
    let entry = a2a_entry("agent", &fixture.card_url(), |_| {});
    let tool = build(
        &factory(Arc::new(PinStore::in_memory()), false, &[]),
        ToolKind::A2a,
        &entry,
        "draft",
    )
    .await
    .unwrap();
    (fixture, tool)
}

fn acting_entry(fixture: &A2aFixture) -> RegistryEntry {
    a2a_entry("publisher", &fixture.card_url(), |a| {
        a.effect = Effect::Acting
    })
}

async fn result_of(tool: &Arc<dyn Tool>, t: &TestCtx, request: &str) -> (Value, String) {
    let out = tool
        .call(json!({"request": request}), &t.ctx)
        .await
        .unwrap();
    (
        serde_json::from_str(&out.content).unwrap_or(Value::Null),
        out.content,
    )
}

fn sent_messages(fixture: &A2aFixture) -> Vec<Value> {
    fixture
        .rpc_requests()
        .iter()
        .map(|r| serde_json::from_str::<Value>(&r.body).unwrap()["params"]["message"].clone())
        .collect()
}

#[tokio::test]
async fn input_required_goes_to_a_person_and_the_answer_continues_the_same_task() {
    let (fixture, tool) = asking(1).await;
    let t = TestCtx::new([ScriptedDecision::Answer("developers".into())]);
    let (result, content) = result_of(&tool, &t, "Draft release notes for 1.2").await;
    assert_eq!(result["status"], "success", "{result}");
    assert_eq!(
        result["reply"],
        "draft: Draft release notes for 1.2 (answer: developers)"
    );
    assert!(
        !content.contains("who is the audience"),
        "the model never sees the question"
    );
    let asked = t.decisions.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].kind, ApprovalKind::Input);
    assert_eq!(
        asked[0].text, QUESTION,
        "the person reads the question as the remote wrote it"
    );
    assert!(asked[0].prompt.contains("never answer with secrets"));
    let sent = sent_messages(&fixture);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1]["parts"], json!([{"text": "developers"}]));
    assert_eq!(
        sent[1]["taskId"], result["taskId"],
        "the answer continues the same task"
    );
    assert_eq!(sent[1]["contextId"], result["contextId"]);
    assert_eq!(
        t.ctx.ledger.used(BudgetKey::RemoteCalls),
        1,
        "the answer is charged as a remote call"
    );
    assert_eq!(t.of("approval.requested").len(), 1);
}

#[tokio::test]
async fn a_declined_or_expired_question_ends_the_call_input_required_without_the_question() {
    for decision in [
        ScriptedDecision::Reject(Some("no".into())),
        ScriptedDecision::Wait,
    ] {
        let (fixture, tool) = asking(1).await;
        let t = TestCtx::new([decision.clone()]);
        let (result, content) = result_of(&tool, &t, "notes").await;
        assert_eq!(result["status"], "input_required", "{decision:?}: {result}");
        assert_eq!(result["reply"], "", "the question is blanked");
        assert!(
            result["message"]
                .as_str()
                .unwrap()
                .contains("Do not answer it yourself")
        );
        assert!(!content.contains("who is the audience"));
        assert_eq!(sent_messages(&fixture).len(), 1, "no answer was sent");
        assert_eq!(
            t.ctx.ledger.used(BudgetKey::RemoteCalls),
            0,
            "nothing more was charged"
        );
    }
}

#[tokio::test]
async fn a_remote_is_answered_at_most_three_times_per_call() {
    let (fixture, tool) = asking(5).await;
    let answers = ["a1", "a2", "a3", "a4"].map(|a| ScriptedDecision::Answer(a.into()));
    let t = TestCtx::new(answers);
    let (result, content) = result_of(&tool, &t, "notes").await;
    assert_eq!(result["status"], "input_required");
    assert!(
        result["message"]
            .as_str()
            .unwrap()
            .contains("more than 3 questions"),
        "{result}"
    );
    assert!(!content.contains("question 4/5"));
    assert_eq!(t.decisions.requests().len(), 3);
    assert_eq!(
        sent_messages(&fixture).len(),
        4,
        "the request and three answers"
    );
}

#[tokio::test]
async fn with_no_remote_call_left_nobody_is_asked_and_the_budget_ends_the_run() {
    let (fixture, tool) = asking(1).await;
    let budgets = BudgetLimits {
        max_remote_calls: 0,
        ..BudgetLimits::default()
    };
    let t = TestCtx::with_budgets([ScriptedDecision::Answer("developers".into())], budgets);
    let err = tool
        .call(json!({"request": "notes"}), &t.ctx)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::BudgetExhausted { budget } if budget == "maxRemoteCalls"),
        "{err:?}"
    );
    assert!(t.decisions.requests().is_empty(), "nobody was asked");
    assert_eq!(sent_messages(&fixture).len(), 1);
}

#[tokio::test]
async fn an_acting_remote_is_called_only_after_the_owner_confirms_the_exact_request() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let f = factory(Arc::new(PinStore::in_memory()), true, &[]);
    let tool = build(&f, ToolKind::A2a, &acting_entry(&fixture), "draft")
        .await
        .unwrap();
    assert!(tool.spec().description.contains("confirms each call"));
    let t = TestCtx::new([ScriptedDecision::Approve]);
    let (result, _) = result_of(&tool, &t, "Publish release 1.2 to the website").await;
    assert_eq!(result["status"], "success", "{result}");
    let asked = t.decisions.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].kind, ApprovalKind::Action);
    assert_eq!(asked[0].text, "Publish release 1.2 to the website");
    assert_eq!(
        sent_messages(&fixture)[0]["parts"],
        json!([{"text": "Publish release 1.2 to the website"}])
    );
}

#[tokio::test]
async fn a_refused_or_expired_acting_call_sends_nothing_and_the_model_gets_blocked() {
    for decision in [ScriptedDecision::Reject(None), ScriptedDecision::Wait] {
        let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
        let f = factory(Arc::new(PinStore::in_memory()), true, &[]);
        let tool = build(&f, ToolKind::A2a, &acting_entry(&fixture), "draft")
            .await
            .unwrap();
        let t = TestCtx::new([decision.clone()]);
        let out = tool
            .call(json!({"request": "Delete the release"}), &t.ctx)
            .await
            .unwrap();
        assert!(
            out.content.starts_with("BLOCKED:") && out.content.contains("Do not retry it"),
            "{decision:?}: {}",
            out.content
        );
        assert!(out.is_error);
        assert!(fixture.rpc_requests().is_empty(), "nothing was sent");
        assert_eq!(
            t.of("approval.decided").len(),
            1,
            "the trace shows what was not done"
        );
    }
}

/// Approves, but the run ends (cancelled, or a node failed) while the owner decides.
struct ApproveAsTheRunEnds(tokio_util::sync::CancellationToken);

#[async_trait::async_trait]
impl DecisionSource for ApproveAsTheRunEnds {
    async fn decide(
        &self,
        request: &ApprovalRequest,
        _cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<Decision> {
        self.0.cancel();
        Some(Decision::Approve {
            digest: request.digest.clone(),
            answer: None,
        })
    }
}

#[tokio::test]
async fn a_confirmation_that_arrives_after_the_run_ended_sends_nothing() {
    // Rule 4.49: the run is checked again after the owner decides.
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let f = factory(Arc::new(PinStore::in_memory()), true, &[]);
    let tool = build(&f, ToolKind::A2a, &acting_entry(&fixture), "draft")
        .await
        .unwrap();
    let mut t = TestCtx::new([]);
    t.ctx.people = Arc::new(People::new(
        Arc::new(ApproveAsTheRunEnds(t.ctx.cancel.clone())),
        t.ctx.trace.clone(),
        t.ctx.ledger.clone(),
        Duration::from_secs(1),
    ));
    let out = tool
        .call(json!({"request": "Publish release 1.2"}), &t.ctx)
        .await;
    assert!(matches!(out, Err(ToolError::Cancelled)), "{out:?}");
    assert!(fixture.rpc_requests().is_empty(), "nothing was sent");
    assert!(
        t.of("a2a.message").is_empty(),
        "no outbound message is recorded: {:?}",
        t.of("a2a.message")
    );
}

#[tokio::test]
async fn the_owner_is_never_asked_about_a_request_the_remote_would_refuse() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let f = factory(Arc::new(PinStore::in_memory()), true, &[]);
    let tool = build(&f, ToolKind::A2a, &acting_entry(&fixture), "draft")
        .await
        .unwrap();
    let t = TestCtx::new([ScriptedDecision::Approve]);
    let (result, _) = result_of(&tool, &t, &"x".repeat(8193)).await;
    assert_eq!(result["errorType"], "invalid_request");
    assert!(t.decisions.requests().is_empty());
}

#[tokio::test]
async fn an_acting_entry_is_refused_when_the_deployment_does_not_allow_acting_remotes() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let f = factory(Arc::new(PinStore::in_memory()), false, &[]);
    let err = build_err(&f, ToolKind::A2a, &acting_entry(&fixture), "draft").await;
    assert!(
        err.contains("misconfigured") && err.contains("does not allow acting remotes"),
        "{err}"
    );
}

#[tokio::test]
async fn cancelling_a_call_sends_a_best_effort_cancel_task_for_its_remote_task() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Slow(Duration::from_secs(30)))).await;
    let entry = a2a_entry("agent", &fixture.card_url(), |_| {});
    let tool = build(
        &factory(Arc::new(PinStore::in_memory()), false, &[]),
        ToolKind::A2a,
        &entry,
        "draft",
    )
    .await
    .unwrap();
    let t = TestCtx::new([]);
    let cancel = t.ctx.cancel.clone();
    let ctx = t.ctx.clone();
    let running = {
        let tool = tool.clone();
        tokio::spawn(async move { tool.call(json!({"request": "slow one"}), &ctx).await })
    };
    for _ in 0..250 {
        if t.of("a2a.message").len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(t.of("a2a.message").len() >= 2, "the remote named its task");
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    tool.close().await;
    let methods = fixture.rpc_methods();
    assert_eq!(
        methods,
        ["SendStreamingMessage", "CancelTask"],
        "{methods:?}"
    );
    let first: Value = serde_json::from_str(&fixture.rpc_requests()[0].body).unwrap();
    let cancel_body: Value = serde_json::from_str(&fixture.rpc_requests()[1].body).unwrap();
    assert!(cancel_body["params"]["id"].is_string());
    assert_eq!(cancel_body["method"], "CancelTask");
    assert_ne!(first["id"], cancel_body["id"]);
}
