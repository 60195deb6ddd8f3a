//! The graph engine: executes a [`Plan`] end to end.
//!
//! Each node gets the previous node's answer as its input (the first gets the run's input); the
//! run's output is the last answer (rule 2.1). LLM agents take one model turn with a tool loop;
//! labelled nodes and routers answer `{label, answer}` and route on the label; loops follow the
//! seeds' cap semantics (rules 2.12–2.16); parallel branches run on tokio tasks and a join writes
//! `## <branch>` blocks in edge order; supervisors call their children as tools `n_<id>`; human
//! approvals wait for a person through [`crate::approval::People`]; edges with `screen: true`
//! pass their text through [`crate::safety::screen`]. The ledger ends the run on the first budget
//! spent, and a cancel (SIGINT/SIGTERM, `spec.cancel`) stops every call in flight.
//!
//! Entry point: [`run`] with a [`RunSetup`].

mod agent;
mod approval_step;
mod barrier;
mod ctx;
mod flow;
mod labels;
mod parallel;
mod walk;

use crate::approval::{DEFAULT_APPROVAL_TIMEOUT, DecisionSource, People};
use crate::events::{
    DEFAULT_CONTENT_CAP_BYTES, DEFAULT_SINK_QUEUE, EventBody, EventSink, MAX_EVENTS, Outcome,
    Trace, TraceOptions,
};
use crate::ledger::Ledger;
use crate::model::ModelProvider;
use crate::tools::Tool;
use ctx::{NodeTool, RunCtx};
use flow::Flow;
use orrery_crds::plan::Plan;
use orrery_crds::run::RunError;
use orrery_crds::run::RunTotals;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A model turn may call tools for at most this many rounds before the node fails.
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 16;
/// After a cancel, in-flight work gets this long to wind down before it is dropped.
pub const CANCEL_GRACE: Duration = Duration::from_secs(5);
/// Each tool's `close` gets this long when the run ends.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);
/// After `run.end`, the sinks get this long to write everything out before the run returns.
pub const SINK_DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// A model entry, built: the provider and the provider's model name.
#[derive(Clone)]
pub struct ModelBinding {
    /// The provider.
    pub provider: Arc<dyn ModelProvider>,
    /// The provider's model name (`ChatRequest::model`).
    pub model: String,
}

impl std::fmt::Debug for ModelBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelBinding")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// Options of one run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The run's id (events' `runId`).
    pub run_id: String,
    /// Record (redacted, capped) content in events.
    pub capture_content: bool,
    /// Content the run may capture in all.
    pub content_cap_bytes: usize,
    /// Events the run may emit in all.
    pub max_events: u64,
    /// How long a person has to decide an approval.
    pub approval_timeout: Duration,
    /// Tool-loop rounds a model turn may take.
    pub max_tool_rounds: u32,
    /// Whether the remote tools are dry-run stand-ins (reported in `run.start`).
    pub dry_run_tools: bool,
    /// Ordinary events that may wait for slow sinks; past this they are dropped and counted,
    /// so a sink never holds up the run.
    pub sink_queue: usize,
    /// How long the run waits, after `run.end`, for the sinks to write everything out.
    pub sink_drain_timeout: Duration,
    /// How captured content is redacted (the deployment's `ORRERY_REDACT_IPS`, rule 8.8).
    pub redact: crate::safety::RedactOptions,
}

impl RunOptions {
    /// Defaults: no capture, 256 KiB content cap, 2000 events, 900 s approvals, 16 rounds, a
    /// queue of 1024 events to the sinks and 10 s for them to drain.
    pub fn new(run_id: impl Into<String>) -> Self {
        RunOptions {
            run_id: run_id.into(),
            capture_content: false,
            content_cap_bytes: DEFAULT_CONTENT_CAP_BYTES,
            max_events: MAX_EVENTS,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            max_tool_rounds: DEFAULT_MAX_TOOL_ROUNDS,
            dry_run_tools: false,
            sink_queue: DEFAULT_SINK_QUEUE,
            sink_drain_timeout: SINK_DRAIN_TIMEOUT,
            redact: crate::safety::RedactOptions::default(),
        }
    }
}

/// Everything a run needs.
pub struct RunSetup {
    /// The plan to execute.
    pub plan: Plan,
    /// The composition's name (for `run.start`).
    pub composition: String,
    /// Its pattern (for `run.start`).
    pub pattern: String,
    /// Built model entries, by registry entry name (every model a node names).
    pub models: BTreeMap<String, ModelBinding>,
    /// Built tools, by tool reference (`mcp:<entry>.<tool>`, `a2a:<entry>.<skill>`).
    pub tools: BTreeMap<String, Arc<dyn Tool>>,
    /// Who decides approvals.
    pub decisions: Arc<dyn DecisionSource>,
    /// Where events go.
    pub sinks: Vec<Arc<dyn EventSink>>,
    /// Options.
    pub options: RunOptions,
}

impl std::fmt::Debug for RunSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunSetup")
            .field("composition", &self.composition)
            .field("models", &self.models.keys().collect::<Vec<_>>())
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    /// The run's id.
    pub run_id: String,
    /// The outcome.
    pub outcome: Outcome,
    /// The run's output (the last answer), when it succeeded.
    pub output: Option<String>,
    /// Why it did not succeed.
    pub error: Option<RunError>,
    /// What it used.
    pub totals: RunTotals,
    /// Events emitted (`run.end` included).
    pub events: u64,
    /// Events dropped past the cap.
    pub dropped: u64,
}

/// Runs a plan on `input` until it ends or `cancel` fires. Always emits `run.start` first and
/// `run.end` last, closes every tool, and waits (at most [`RunOptions::sink_drain_timeout`])
/// until the sinks have every event. An input over 8192 characters (`limits.maxInputChars`,
/// rule 1.28) ends the run `Failed` before any node runs.
pub async fn run(setup: RunSetup, input: String, cancel: CancellationToken) -> RunResult {
    let RunSetup {
        plan,
        composition,
        pattern,
        models,
        tools,
        decisions,
        sinks,
        options,
    } = setup;
    let trace = Trace::buffered(
        TraceOptions {
            run_id: options.run_id.clone(),
            capture_content: options.capture_content,
            content_cap_bytes: options.content_cap_bytes,
            max_events: options.max_events,
            redact: options.redact,
        },
        sinks,
        options.sink_queue,
    );
    let ledger = Arc::new(Ledger::new(plan.budgets.clone()));
    let people = Arc::new(People::new(
        decisions,
        trace.clone(),
        ledger.clone(),
        options.approval_timeout,
    ));
    trace.emit(EventBody::RunStart {
        composition,
        pattern,
        nodes: plan.nodes.len(),
        budgets: plan.budgets.clone(),
        capture_content: options.capture_content,
        dry_run_tools: options.dry_run_tools,
        input_size: input.len(),
        input: trace.content(&input),
    });

    let token = cancel.child_token();
    let checked = if let Err(too_long) = orrery_crds::run::check_input(&input) {
        Err((None, too_long.to_string()))
    } else {
        resolve_node_tools(&plan, &models, &tools)
    };
    let node_tools = match checked {
        Ok(t) => t,
        Err(problem) => {
            let ctx = RunCtx::new(
                plan,
                models,
                Vec::new(),
                trace,
                ledger,
                people,
                token,
                &options,
            );
            ctx.end(Outcome::Failed, problem.0.as_deref(), problem.1);
            ctx.seal();
            return finish(&ctx, Flow::Stop, None, &tools, options.sink_drain_timeout).await;
        }
    };
    let ctx = Arc::new(RunCtx::new(
        plan, models, node_tools, trace, ledger, people, token, &options,
    ));

    // The deadline, watched in this task beside the walk (a task of its own would cost a
    // wake-up of another thread per run): when it passes, the run ends BudgetExhausted and the
    // token stops the walk.
    let watcher = async {
        tokio::select! {
            _ = ctx.ledger.deadline() => {
                // A run whose walk is over is never turned into BudgetExhausted.
                if !ctx.is_sealed() {
                    let hit = ctx.ledger.deadline_hit();
                    // Name what was running: with parallel branches, every branch's node.
                    ctx.budget_hit_at(hit, &ctx.running_nodes());
                }
            }
            _ = ctx.token.cancelled() => {}
        }
        std::future::pending::<()>().await;
    };
    let mut watcher = std::pin::pin!(watcher);

    let start = ctx.plan.start;
    // A boxed future: it can be dropped (stopping every branch task) before the run ends.
    let mut walk = walk::walk(ctx.clone(), start, input, 0, None, None, Vec::new());
    let (flow, cancelled_at) = tokio::select! {
        biased;
        flow = &mut walk => (flow, None),
        () = &mut watcher => (Flow::Stop, None),
        _ = ctx.token.cancelled() => {
            let running = ctx.running_nodes();
            // Everything in flight watches the token; give it a moment to unwind (so each node's
            // exit is recorded), then drop whatever is left.
            let flow = tokio::time::timeout(CANCEL_GRACE, &mut walk)
                .await
                .unwrap_or(Flow::Stop);
            (flow, match running.as_slice() { [one] => Some(one.clone()), _ => None })
        }
    };
    // The walk is over: from here no deadline or straggler changes the outcome.
    ctx.seal();
    drop(walk);
    finish(&ctx, flow, cancelled_at, &tools, options.sink_drain_timeout).await
}

/// Closes the tools, decides the outcome, emits `run.end` and waits for the sinks to have it.
async fn finish(
    ctx: &RunCtx,
    flow: Flow,
    cancelled_at: Option<String>,
    tools: &BTreeMap<String, Arc<dyn Tool>>,
    drain_timeout: Duration,
) -> RunResult {
    let closing = tools
        .values()
        .map(|tool| tokio::time::timeout(CLOSE_TIMEOUT, tool.close()));
    futures::future::join_all(closing).await;

    let (outcome, error, output) = match (ctx.take_ending(), flow) {
        (Some(ending), _) => (ending.outcome, ending.error, None),
        (None, Flow::Answer(output)) => (Outcome::Succeeded, None, Some(output)),
        (None, Flow::Stop) => (
            Outcome::Cancelled,
            Some(RunError {
                node: cancelled_at,
                message: "the run was cancelled".into(),
            }),
            None,
        ),
    };
    let totals = ctx.ledger.totals();
    let trace = ctx.trace.clone();
    let output_size = output.as_ref().map_or(0, String::len);
    let output_content = output.as_deref().and_then(|o| trace.content(o));
    // The dropped count is read just before run.end, which always has its slot.
    let dropped = trace.dropped();
    trace.emit(EventBody::RunEnd {
        outcome,
        error: error.clone(),
        totals: totals.clone(),
        dropped,
        output_size,
        output: output_content,
    });
    // run.end is the last event; the run returns once the sinks have it (or gave up).
    trace.drain(drain_timeout).await;
    RunResult {
        run_id: trace.run_id().to_owned(),
        outcome,
        output,
        error,
        totals,
        events: trace.emitted(),
        dropped,
    }
}

type Problem = (Option<String>, String);

/// Pairs every node's planned tools with the built tools, and checks every model is built.
fn resolve_node_tools(
    plan: &Plan,
    models: &BTreeMap<String, ModelBinding>,
    tools: &BTreeMap<String, Arc<dyn Tool>>,
) -> Result<Vec<Vec<NodeTool>>, Problem> {
    let mut per_node = Vec::with_capacity(plan.nodes.len());
    for node in &plan.nodes {
        if node.kind.calls_model() {
            match &node.model {
                Some(m) if models.contains_key(m) => {}
                Some(m) => {
                    return Err((
                        Some(node.id.clone()),
                        format!(
                            "model entry '{m}' of node '{}' was not built for this run",
                            node.id
                        ),
                    ));
                }
                None => {
                    return Err((
                        Some(node.id.clone()),
                        format!(
                            "node '{}' has no model and the deployment has no default model (set --default-model)",
                            node.id
                        ),
                    ));
                }
            }
        }
        let mut list = Vec::with_capacity(node.tools.len());
        for planned in &node.tools {
            let Some(tool) = tools.get(&planned.reference) else {
                return Err((
                    Some(node.id.clone()),
                    format!(
                        "tool '{}' of node '{}' was not built for this run",
                        planned.reference, node.id
                    ),
                ));
            };
            list.push(NodeTool {
                planned: planned.clone(),
                tool: tool.clone(),
            });
        }
        per_node.push(list);
    }
    Ok(per_node)
}

#[cfg(test)]
mod tests;
