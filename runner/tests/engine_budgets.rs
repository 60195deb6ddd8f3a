//! The ledger in a run (seed rules §3): each budget hitting emits `budget.hit` (naming the
//! budget, its limit and the node) and ends the run BudgetExhausted; a call past a budget is
//! refused before it runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod engine_support;

use engine_support::{Case, CountingTool};
use orrery_runner::events::{CallStatus, EventBody, NodeStatus, Outcome};
use std::time::{Duration, Instant};

fn two_nodes(budgets: &str) -> String {
    format!(
        r#"
pattern: Pipeline
budgets: {budgets}
nodes:
  - {{id: a, kind: LLMAgent}}
  - {{id: b, kind: LLMAgent}}
edges:
  - {{from: a, to: b}}
"#
    )
}

#[tokio::test]
async fn a_response_past_the_token_budget_ends_the_run_budget_exhausted_rule_3_4() {
    let ran = Case::new(
        &two_nodes("{maxTokens: 100}"),
        "nodes:\n  a: [{reply: x, usage: {inputTokens: 50, outputTokens: 30}}]\n  b: [{reply: y, usage: {inputTokens: 50, outputTokens: 30}}]\n",
    )
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::BudgetExhausted);
    assert_eq!(
        ran.budget_hits(),
        [("maxTokens".into(), 100, Some("b".into()))]
    );
    assert_eq!(ran.result.totals.tokens, 160);
    assert!(ran.result.output.is_none());
    let before_end = &ran.events[ran.events.len() - 2];
    assert!(
        matches!(
            before_end.body,
            EventBody::NodeExit {
                status: NodeStatus::Stopped,
                ..
            }
        ),
        "the node that overshot is closed as stopped"
    );
}

#[tokio::test]
async fn once_the_tokens_are_spent_the_next_model_call_is_refused_before_it_runs() {
    let ran = Case::new(
        &two_nodes("{maxTokens: 100}"),
        "nodes:\n  a: [{reply: x, usage: {inputTokens: 60, outputTokens: 40}}]\n",
    )
    .run()
    .await;
    assert_eq!(ran.result.outcome, Outcome::BudgetExhausted);
    assert_eq!(
        ran.budget_hits(),
        [("maxTokens".into(), 100, Some("b".into()))]
    );
    let b_calls = ran.events.iter().find_map(|e| match &e.body {
        EventBody::NodeExit {
            node_id,
            model_calls,
            ..
        } if node_id == "b" => Some(*model_calls),
        _ => None,
    });
    assert_eq!(b_calls, Some(0), "b's model was never called");
}

#[tokio::test]
async fn a_tool_call_past_the_budget_is_refused_before_it_runs_rule_3_5() {
    let tool = CountingTool::new("mcp_docs_search");
    let ran = Case::new(
        r#"
pattern: Pipeline
budgets: {maxToolCalls: 1}
nodes:
  - {id: a, kind: LLMAgent, tools: ["mcp:docs.search"]}
"#,
        r#"
nodes:
  a:
    - toolCalls: [{name: mcp_docs_search, arguments: {q: one}}]
    - toolCalls: [{name: mcp_docs_search, arguments: {q: two}}]
    - reply: never
"#,
    )
    .tool("mcp:docs.search", tool.clone())
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::BudgetExhausted);
    assert_eq!(tool.calls(), 1, "the refused call never reached the tool");
    assert_eq!(
        ran.budget_hits(),
        [("maxToolCalls".into(), 1, Some("a".into()))]
    );
    let statuses: Vec<CallStatus> = ran
        .of("tool.call")
        .into_iter()
        .map(|e| match e {
            EventBody::ToolCall { status, .. } => *status,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(statuses, [CallStatus::Ok, CallStatus::Refused]);
    assert_eq!(ran.result.totals.tool_calls, 1);
}

#[tokio::test]
async fn a_delegation_past_the_budget_is_refused_before_the_child_runs() {
    let ran = Case::new(
        r#"
pattern: Supervisor
budgets: {maxDelegations: 1}
nodes:
  - {id: boss, kind: Supervisor, children: [kid]}
  - {id: kid, kind: LLMAgent}
"#,
        r#"
nodes:
  boss:
    - toolCalls: [{name: n_kid, arguments: {request: one}}]
    - toolCalls: [{name: n_kid, arguments: {request: two}}]
    - reply: never
"#,
    )
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::BudgetExhausted);
    assert_eq!(
        ran.budget_hits(),
        [("maxDelegations".into(), 1, Some("boss".into()))]
    );
    assert_eq!(
        ran.entered(),
        ["boss", "kid"],
        "the second delegation never entered the child"
    );
    assert_eq!(ran.result.totals.delegations, 1);
}

#[tokio::test]
async fn a_remote_call_past_the_budget_is_refused_before_it_is_sent() {
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
    - toolCalls: [{name: a2a_helper_ask, arguments: {request: one}}]
    - toolCalls: [{name: a2a_helper_ask, arguments: {request: two}}]
    - reply: never
"#,
    )
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::BudgetExhausted);
    assert_eq!(
        ran.budget_hits(),
        [("maxRemoteCalls".into(), 1, Some("a".into()))]
    );
    assert_eq!(ran.result.totals.remote_calls, 1);
}

#[tokio::test]
async fn the_deadline_ends_a_run_whose_model_is_still_answering() {
    let started = Instant::now();
    let ran = Case::new(
        &two_nodes("{timeoutSeconds: 1}"),
        "nodes:\n  a: [{reply: slow, delayMs: 30000}]\n",
    )
    .run()
    .await;
    ran.assert_well_formed();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the run stopped at its deadline"
    );
    assert_eq!(ran.result.outcome, Outcome::BudgetExhausted);
    assert_eq!(
        ran.budget_hits(),
        [("timeoutSeconds".into(), 1, Some("a".into()))]
    );
    assert!(matches!(
        ran.of("node.exit")[0],
        EventBody::NodeExit {
            status: NodeStatus::Stopped,
            ..
        }
    ));
}

#[tokio::test]
async fn only_the_first_budget_spent_is_reported() {
    // Two branches both run out of tool calls at about the same time: one budget.hit.
    let ran = Case::new(
        r#"
pattern: FanOutFanIn
budgets: {maxToolCalls: 1}
nodes:
  - {id: fan, kind: Parallel}
  - {id: x, kind: LLMAgent, tools: ["mcp:docs.search"]}
  - {id: y, kind: LLMAgent, tools: ["mcp:docs.search"]}
  - {id: join, kind: Join}
edges:
  - {from: fan, to: x}
  - {from: fan, to: y}
  - {from: x, to: join}
  - {from: y, to: join}
"#,
        r#"
nodes:
  x: [{toolCalls: [{name: mcp_docs_search}, {name: mcp_docs_search}]}]
  y: [{toolCalls: [{name: mcp_docs_search}, {name: mcp_docs_search}]}]
"#,
    )
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::BudgetExhausted);
    assert_eq!(ran.budget_hits().len(), 1);
    assert!(
        ran.entered().iter().all(|n| n != "join"),
        "the join never ran"
    );
}

#[tokio::test]
async fn an_a2a_call_refused_on_one_budget_charges_none_of_the_others_rule_3_5() {
    // Room for tool calls and delegations, none for remote calls: the A2A call is refused whole.
    let ran = Case::new(
        r#"
pattern: Pipeline
budgets: {maxToolCalls: 5, maxDelegations: 5, maxRemoteCalls: 0}
nodes:
  - {id: a, kind: LLMAgent, tools: ["a2a:helper.ask"]}
"#,
        "nodes:\n  a: [{toolCalls: [{name: a2a_helper_ask, arguments: {request: hi}}]}]\n",
    )
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::BudgetExhausted);
    assert_eq!(
        ran.budget_hits(),
        [("maxRemoteCalls".into(), 0, Some("a".into()))]
    );
    let totals = &ran.result.totals;
    assert_eq!(
        (totals.tool_calls, totals.delegations, totals.remote_calls),
        (0, 0, 0),
        "a refused call charges nothing"
    );
}

/// A tool that finds a budget spent by itself (as an A2A client does for a remote's extra
/// message) and says so.
struct SpendingTool;

#[async_trait::async_trait]
impl orrery_runner::tools::Tool for SpendingTool {
    fn spec(&self) -> orrery_runner::model::ToolSpec {
        orrery_runner::model::ToolSpec {
            name: "mcp_docs_search".into(),
            description: "spends".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }
    async fn call(
        &self,
        _arguments: serde_json::Value,
        _ctx: &orrery_runner::tools::ToolContext,
    ) -> Result<orrery_runner::tools::ToolOutput, orrery_runner::tools::ToolError> {
        Err(orrery_runner::tools::ToolError::BudgetExhausted {
            budget: "maxRemoteCalls".into(),
        })
    }
}

#[tokio::test]
async fn a_budget_a_tool_finds_spent_ends_the_run_with_budget_hit_rule_3_4() {
    let ran = Case::new(
        r#"
pattern: Pipeline
budgets: {maxRemoteCalls: 3}
nodes:
  - {id: a, kind: LLMAgent, tools: ["mcp:docs.search"]}
"#,
        "nodes:\n  a: [{toolCalls: [{name: mcp_docs_search}]}]\n",
    )
    .tool("mcp:docs.search", std::sync::Arc::new(SpendingTool))
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::BudgetExhausted);
    assert_eq!(
        ran.budget_hits(),
        [("maxRemoteCalls".into(), 3, Some("a".into()))],
        "every BudgetExhausted ending emits budget.hit"
    );
}

#[tokio::test]
async fn the_deadline_names_every_node_running_in_parallel_branches_not_the_last_entered() {
    let ran = Case::new(
        r#"
pattern: FanOutFanIn
budgets: {timeoutSeconds: 1}
nodes:
  - {id: fan, kind: Parallel}
  - {id: x, kind: LLMAgent}
  - {id: y, kind: LLMAgent}
  - {id: join, kind: Join}
edges:
  - {from: fan, to: x}
  - {from: fan, to: y}
  - {from: x, to: join}
  - {from: y, to: join}
"#,
        "nodes:\n  x: [{reply: slow, delayMs: 30000}]\n  y: [{reply: slow, delayMs: 30000}]\n",
    )
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::BudgetExhausted);
    assert_eq!(
        ran.budget_hits(),
        [("timeoutSeconds".into(), 1, None)],
        "two nodes were running: the hit is the run's"
    );
    let error = ran.result.error.clone().unwrap();
    assert_eq!(error.node, None);
    assert!(
        error.message.contains("while nodes x, y were running"),
        "{}",
        error.message
    );
}
