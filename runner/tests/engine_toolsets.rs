//! A run's toolsets are its own and are closed when it ends, whatever the outcome (rules 2.6
//! and 7.10): after a success, after a failure (a failing model, or an input refused before
//! the walk), and after a cancel; tools the run never called are closed too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod engine_support;

use async_trait::async_trait;
use engine_support::Case;
use orrery_crds::codes::limits::MAX_INPUT_CHARS;
use orrery_runner::events::Outcome;
use orrery_runner::model::{ChatRequest, ChatResponse, ModelError, ModelProvider, ToolSpec};
use orrery_runner::tools::{Tool, ToolContext, ToolError, ToolOutput};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A tool that counts its calls and closes; with `hold`, a call waits for the run's cancel
/// (announcing on `called` that it is in flight).
struct ClosingTool {
    name: &'static str,
    hold: bool,
    called: Notify,
    calls: AtomicU32,
    closes: AtomicU32,
}

impl ClosingTool {
    fn new(name: &'static str, hold: bool) -> Arc<Self> {
        Arc::new(ClosingTool {
            name,
            hold,
            called: Notify::new(),
            calls: AtomicU32::new(0),
            closes: AtomicU32::new(0),
        })
    }

    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }

    fn closes(&self) -> u32 {
        self.closes.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Tool for ClosingTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.into(),
            description: "counts its closes".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }

    async fn call(
        &self,
        _arguments: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.hold {
            self.called.notify_one();
            ctx.cancel.cancelled().await;
            return Err(ToolError::Cancelled);
        }
        Ok(ToolOutput {
            content: format!("result of {}", self.name),
            is_error: false,
        })
    }

    async fn close(&self) {
        self.closes.fetch_add(1, Ordering::SeqCst);
    }
}

/// A model whose every call fails.
struct FailingModel;

#[async_trait]
impl ModelProvider for FailingModel {
    fn provider_name(&self) -> &'static str {
        "test"
    }

    async fn complete(
        &self,
        _: &ChatRequest,
        _: &CancellationToken,
    ) -> Result<ChatResponse, ModelError> {
        Err(ModelError::Refused {
            status: 400,
            message: "bad request".into(),
        })
    }
}

/// One node with an MCP tool and an A2A skill; the model calls the MCP tool once, then answers.
fn case(search: &Arc<ClosingTool>, ask: &Arc<ClosingTool>) -> Case {
    Case::new(
        r#"
pattern: Pipeline
nodes:
  - {id: a, kind: LLMAgent, tools: ["mcp:docs.search", "a2a:helper.ask"]}
"#,
        r#"
nodes:
  a:
    - toolCalls: [{name: mcp_docs_search, arguments: {q: one}}]
    - reply: done
"#,
    )
    .tool("mcp:docs.search", search.clone())
    .tool("a2a:helper.ask", ask.clone())
}

#[tokio::test]
async fn every_toolset_is_closed_once_after_a_successful_run_rules_2_6_7_10() {
    let search = ClosingTool::new("mcp_docs_search", false);
    let ask = ClosingTool::new("a2a_helper_ask", false);
    let ran = case(&search, &ask).run().await;
    ran.assert_well_formed();
    assert_eq!(
        ran.result.outcome,
        Outcome::Succeeded,
        "{:?}",
        ran.result.error
    );
    assert_eq!(search.calls(), 1);
    assert_eq!(search.closes(), 1, "the tool the run called");
    assert_eq!(ask.calls(), 0);
    assert_eq!(ask.closes(), 1, "and the one it never called");
}

#[tokio::test]
async fn every_toolset_is_closed_once_after_a_failed_run_rules_2_6_7_10() {
    let search = ClosingTool::new("mcp_docs_search", false);
    let ask = ClosingTool::new("a2a_helper_ask", false);
    let ran = case(&search, &ask)
        .provider(Arc::new(FailingModel))
        .run()
        .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Failed);
    assert_eq!((search.closes(), ask.closes()), (1, 1));
}

#[tokio::test]
async fn every_toolset_is_closed_once_when_the_input_is_refused_before_the_walk_rules_2_6_7_10() {
    let search = ClosingTool::new("mcp_docs_search", false);
    let ask = ClosingTool::new("a2a_helper_ask", false);
    let ran = case(&search, &ask)
        .input(&"x".repeat(MAX_INPUT_CHARS + 1))
        .run()
        .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Failed);
    assert!(ran.entered().is_empty(), "no node ran");
    assert_eq!((search.closes(), ask.closes()), (1, 1));
}

#[tokio::test]
async fn every_toolset_is_closed_once_after_a_cancelled_run_rules_2_6_7_10() {
    let search = ClosingTool::new("mcp_docs_search", true);
    let ask = ClosingTool::new("a2a_helper_ask", false);
    let case = case(&search, &ask);
    let cancel = case.cancel_token();
    let in_flight = search.clone();
    // Cancels once the tool call is in flight, not after a guessed delay.
    tokio::spawn(async move {
        in_flight.called.notified().await;
        cancel.cancel();
    });
    let ran = case.run().await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Cancelled);
    assert_eq!(search.calls(), 1, "the run was cancelled mid-call");
    assert_eq!((search.closes(), ask.closes()), (1, 1));
}
