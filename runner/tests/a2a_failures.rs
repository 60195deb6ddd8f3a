//! How an A2A call ends when time runs out or the remote fails: the per-message timeout covers
//! the remote and never the person answering its question (rules 3.14, 4.36, 6.15); a remote
//! slower than it, and a 5xx reply, each end the call with a clear tool error naming the entry.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod remote_support;

use orrery_crds::plan::ToolKind;
use orrery_crds::registry::{EndpointLimits, RegistryEntry};
use orrery_runner::approval::{ApprovalRequest, Decision, DecisionSource, People};
use orrery_runner::pin::store::PinStore;
use orrery_runner::tools::Tool;
use remote_support::a2a_fixture::{A2aFixture, Behaviour, Setup};
use remote_support::{Override, TestCtx, a2a_entry, build, factory};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// An entry whose messages may each take `seconds`.
fn entry_with_timeout(fixture: &A2aFixture, seconds: u32) -> RegistryEntry {
    a2a_entry("agent", &fixture.card_url(), |a| {
        a.limits = Some(EndpointLimits {
            timeout_seconds: Some(seconds),
            ..EndpointLimits::default()
        })
    })
}

async fn tool(entry: &RegistryEntry) -> Arc<dyn Tool> {
    build(
        &factory(Arc::new(PinStore::in_memory()), false, &[]),
        ToolKind::A2a,
        entry,
        "draft",
    )
    .await
    .unwrap()
}

async fn result_of(tool: &Arc<dyn Tool>, t: &TestCtx) -> (Value, bool) {
    let out = tool
        .call(json!({"request": "Draft release notes"}), &t.ctx)
        .await
        .unwrap();
    (
        serde_json::from_str(&out.content).unwrap_or(Value::String(out.content)),
        out.is_error,
    )
}

/// A person who takes `after` to answer a remote's question.
struct SlowPerson {
    after: Duration,
    answer: &'static str,
}

#[async_trait::async_trait]
impl DecisionSource for SlowPerson {
    async fn decide(
        &self,
        request: &ApprovalRequest,
        _cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<Decision> {
        tokio::time::sleep(self.after).await;
        Some(Decision::Approve {
            digest: request.digest.clone(),
            answer: Some(self.answer.into()),
        })
    }
}

#[tokio::test]
async fn a_person_slower_than_the_message_timeout_does_not_time_the_call_out_rules_3_14_4_36_6_15()
{
    let fixture = A2aFixture::start(Setup::new(Behaviour::Ask { rounds: 1 })).await;
    let tool = tool(&entry_with_timeout(&fixture, 1)).await;
    let mut t = TestCtx::new([]);
    // The person takes twice the 1 s message timeout: were their time counted, the call
    // would time out.
    t.ctx.people = Arc::new(People::new(
        Arc::new(SlowPerson {
            after: Duration::from_secs(2),
            answer: "developers",
        }),
        t.ctx.trace.clone(),
        t.ctx.ledger.clone(),
        Duration::from_secs(60),
    ));
    let (result, is_error) = result_of(&tool, &t).await;
    assert!(!is_error, "{result}");
    assert_eq!(result["status"], "success", "{result}");
    assert_eq!(
        result["reply"],
        "draft: Draft release notes (answer: developers)"
    );
    assert_eq!(
        fixture.rpc_requests().len(),
        2,
        "the question, then the answer on the same task"
    );
}

#[tokio::test]
async fn a_remote_slower_than_the_message_timeout_ends_the_call_with_a_timeout_error() {
    let fixture = A2aFixture::start(Setup::new(Behaviour::Slow(Duration::from_secs(600)))).await;
    let tool = tool(&entry_with_timeout(&fixture, 1)).await;
    let t = TestCtx::new([]);
    // The remote would answer in ten minutes: only the message timeout ends the call early.
    let (result, is_error) = tokio::time::timeout(Duration::from_secs(60), result_of(&tool, &t))
        .await
        .expect("the message timeout ended the call");
    assert!(is_error, "{result}");
    assert_eq!(result["errorType"], "timeout", "{result}");
    let message = result["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("'agent'") && message.contains("1 s"),
        "names the entry and the timeout: {result}"
    );
}

#[tokio::test]
async fn a_5xx_reply_from_the_remote_is_a_clear_tool_error_naming_the_entry_and_the_status() {
    for status in [500u16, 502, 503] {
        let fixture = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
        let tool = tool(&a2a_entry("agent", &fixture.card_url(), |_| {})).await;
        fixture.answer_rpc(Some(Override {
            status,
            headers: vec![("content-type".into(), "text/html".into())],
            body: b"<html>upstream is down</html>".to_vec(),
        }));
        let (result, is_error) = result_of(&tool, &TestCtx::new([])).await;
        assert!(is_error, "{status}: {result}");
        let text = result.to_string();
        assert!(
            text.contains("agent") && text.contains(&status.to_string()),
            "{status}: names the entry and the status: {result}"
        );
        assert_eq!(
            fixture.rpc_requests().len(),
            1,
            "{status}: the call was sent once"
        );
    }
}
