//! Model nodes (LLMAgent, Router, Supervisor): one model turn with a tool loop, labels, and a
//! supervisor's delegations to its children (tools `n_<id>`).

use super::barrier::wait_barrier;
use super::ctx::{ExitReport, OpenEntry, RunCtx};
use super::labels::{parse_labelled, recorded_call_id, recorded_unknown_tool};
use crate::events::{CallStatus, EventBody, NodeStatus, Outcome, QUOTE_CUT_BYTES};
use crate::model::{ChatRequest, Message, ModelError, ToolCall, ToolSpec};
use crate::safety::cut_to;
use crate::tools::{ToolContext, ToolError};
use futures::future::BoxFuture;
use orrery_crds::budget::BudgetKey;
use orrery_crds::composition::NodeKind;
use orrery_crds::events::ModelCall;
use orrery_crds::plan::{NodeIdx, ToolKind, child_tool_name};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Barrier;

/// A model node's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeAnswer {
    /// The answer text (for a labelled node: the `answer` field).
    pub text: String,
    /// The label, for a labelled node or a router.
    pub label: Option<String>,
}

/// Runs one entry of a model node. `None` when the run is stopping (the node's exit and the
/// reason are recorded).
pub(crate) fn run_node(
    ctx: Arc<RunCtx>,
    idx: NodeIdx,
    input: String,
    depth: u32,
    parent_entry: Option<u64>,
    flags: Vec<String>,
    barrier: Option<Arc<Barrier>>,
) -> BoxFuture<'static, Option<NodeAnswer>> {
    Box::pin(async move {
        let open = ctx.enter(idx, depth, parent_entry, &input, flags);
        if let Some(b) = barrier
            && !wait_barrier(&ctx, &b).await
        {
            ctx.exit(&open, NodeStatus::Stopped, ExitReport::default());
            return None;
        }
        turn(&ctx, &open, input).await
    })
}

/// The node's turn: model calls until it answers without tool calls (at most
/// `max_tool_rounds`).
async fn turn(ctx: &Arc<RunCtx>, open: &OpenEntry, input: String) -> Option<NodeAnswer> {
    let node = &ctx.plan.nodes[open.idx];
    let mut report = ExitReport::default();
    let Some(model_entry) = node.model.as_deref() else {
        ctx.fail(open, format!("node '{}' has no model", node.id), report);
        return None;
    };
    let Some(binding) = ctx.models.get(model_entry) else {
        ctx.fail(
            open,
            format!("model entry '{model_entry}' was not built for this run"),
            report,
        );
        return None;
    };
    // One request for the whole turn: each round sends the conversation so far, which grows
    // by the model's tool calls and their results.
    let mut request = ChatRequest {
        node_id: node.id.clone(),
        model: binding.model.clone(),
        system: (!node.instruction.is_empty()).then(|| node.instruction.clone()),
        messages: vec![Message::User { text: input }],
        tools: tool_specs(ctx, open.idx),
        labels: (!node.labels.is_empty()).then(|| node.labels.clone()),
        max_output_tokens: None,
    };

    for _round in 0..ctx.max_tool_rounds {
        if let Err(hit) = ctx.ledger.check_tokens() {
            ctx.budget_hit(hit, Some(&node.id));
            ctx.exit(open, NodeStatus::Stopped, report);
            return None;
        }
        let began = open.started.elapsed();
        let result = tokio::select! {
            r = binding.provider.complete(&request, &ctx.token) => r,
            _ = ctx.token.cancelled() => Err(ModelError::Cancelled),
        };
        report
            .calls
            .push(model_call(binding, began, open.started.elapsed(), &result));
        let response = match result {
            Ok(r) => r,
            Err(ModelError::Cancelled) => {
                ctx.exit(open, NodeStatus::Stopped, report);
                return None;
            }
            Err(e) => {
                ctx.fail(
                    open,
                    format!("the model call failed ({model_entry}): {e}"),
                    report,
                );
                return None;
            }
        };
        report.model_calls += 1;
        report.tokens += response.usage.total();
        if let Err(hit) = ctx.ledger.add_tokens(model_entry, response.usage) {
            ctx.budget_hit(hit, Some(&node.id));
            ctx.exit(open, NodeStatus::Stopped, report);
            return None;
        }
        if response.tool_calls.is_empty() {
            let text = response.text.unwrap_or_default();
            let Some(labels) = &request.labels else {
                report.answer = Some(text.clone());
                ctx.exit(open, NodeStatus::Ok, report);
                return Some(NodeAnswer { text, label: None });
            };
            return match parse_labelled(&text, labels) {
                Ok((label, answer)) => {
                    report.label = Some(label.clone());
                    report.answer = Some(answer.clone());
                    ctx.exit(open, NodeStatus::Ok, report);
                    Some(NodeAnswer {
                        text: answer,
                        label: Some(label),
                    })
                }
                Err(problem) => {
                    let reason = problem.describe(&ctx.trace);
                    let field = if node.kind == NodeKind::Router {
                        format!("spec.nodes[{}] (the `when` labels of its edges)", open.idx)
                    } else {
                        format!("spec.nodes[{}].output.labels", open.idx)
                    };
                    let message = format!(
                        "node '{}' did not answer with one of its labels ({}) at {field}: {reason}; the run stops here rather than take an arbitrary branch",
                        node.id,
                        labels.join(", ")
                    );
                    ctx.fail(open, message, report);
                    None
                }
            };
        }
        request.messages.push(Message::Assistant {
            text: response.text.clone(),
            tool_calls: response.tool_calls.clone(),
        });
        // The calls of one round run concurrently; their results go back in call order.
        let calls = response
            .tool_calls
            .iter()
            .map(|call| call_tool(ctx, open, call));
        let results = futures::future::join_all(calls).await;
        for result in results {
            match result {
                Some(message) => request.messages.push(message),
                None => {
                    ctx.exit(open, NodeStatus::Stopped, report);
                    return None;
                }
            }
        }
    }
    let message = format!(
        "node '{}' kept calling tools for {} rounds without answering; the turn is capped at {} rounds",
        node.id, ctx.max_tool_rounds, ctx.max_tool_rounds
    );
    ctx.fail(open, message, report);
    None
}

/// The record of one model call for `node.exit`: what was asked of whom, when (from the
/// entry's start), for how long, the tokens the provider counted, and why it failed.
fn model_call(
    binding: &super::ModelBinding,
    began: std::time::Duration,
    ended: std::time::Duration,
    result: &Result<crate::model::ChatResponse, ModelError>,
) -> ModelCall {
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let (usage, error) = match result {
        Ok(response) => (response.usage, None),
        Err(e) => (crate::model::Usage::default(), Some(e.to_string())),
    };
    ModelCall {
        provider: binding.provider.provider_name().to_owned(),
        model: binding.model.clone(),
        start_ms: ms(began),
        duration_ms: ms(ended.saturating_sub(began)),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        error,
    }
}

/// The tools the node's model sees: its planned tools, then its children (`n_<id>`, `-` as
/// `_`).
fn tool_specs(ctx: &RunCtx, idx: NodeIdx) -> Vec<ToolSpec> {
    let node = &ctx.plan.nodes[idx];
    let mut specs: Vec<ToolSpec> = ctx.node_tools[idx]
        .iter()
        .map(|t| ToolSpec {
            name: t.planned.model_name.clone(),
            ..t.tool.spec()
        })
        .collect();
    for &child in &node.children {
        let c = &ctx.plan.nodes[child];
        let description = if c.description.is_empty() {
            format!(
                "Delegate a task to the agent '{}' and get its answer.",
                c.id
            )
        } else {
            c.description.clone()
        };
        specs.push(ToolSpec {
            name: child_tool_name(&c.id),
            description,
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {"request": {"type": "string", "description": "What to ask the agent to do."}},
                "required": ["request"]
            }),
        });
    }
    specs
}

/// The request text of a delegation or A2A call: `arguments.request`, else the arguments as
/// JSON.
fn request_text(arguments: &serde_json::Value) -> String {
    match arguments.get("request") {
        Some(serde_json::Value::String(s)) => s.clone(),
        _ => match arguments {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        },
    }
}

fn tool_result(call: &ToolCall, content: String, is_error: bool) -> Message {
    Message::ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error,
    }
}

/// A tool's own error message is cut to this many bytes in events.
const ERROR_CUT_BYTES: usize = 512;

/// The names the node's model may call: its tools, then its children (`n_<id>`).
fn tool_names(ctx: &RunCtx, idx: NodeIdx) -> Vec<String> {
    let node = &ctx.plan.nodes[idx];
    ctx.node_tools[idx]
        .iter()
        .map(|t| t.planned.model_name.clone())
        .chain(
            node.children
                .iter()
                .map(|&c| child_tool_name(&ctx.plan.nodes[c].id)),
        )
        .collect()
}

fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Runs one tool call of a node's model: a delegation to a child, or a planned tool. Budgets are
/// checked and reserved before the call runs. `None` when the run is stopping.
async fn call_tool(ctx: &Arc<RunCtx>, open: &OpenEntry, call: &ToolCall) -> Option<Message> {
    let node = &ctx.plan.nodes[open.idx];
    if let Some(&child) = node
        .children
        .iter()
        .find(|&&c| call.name == child_tool_name(&ctx.plan.nodes[c].id))
    {
        if let Err(hit) = ctx.ledger.reserve(BudgetKey::Delegations) {
            ctx.budget_hit(hit, Some(&node.id));
            return None;
        }
        let request = request_text(&call.arguments);
        let answer = run_node(
            ctx.clone(),
            child,
            request,
            open.depth + 1,
            Some(open.entry),
            Vec::new(),
            None,
        )
        .await;
        return answer.map(|a| tool_result(call, a.text, false));
    }

    let started = Instant::now();
    let arguments_content = || ctx.trace.content(&call.arguments.to_string());
    // The call id comes from the provider; events keep it only when it is a plain name.
    let call_id = recorded_call_id(&call.id);
    let Some(tool) = ctx.node_tools[open.idx]
        .iter()
        .find(|t| t.planned.model_name == call.name)
        .cloned()
    else {
        // The name is the model's invention: events name it only by its size without
        // capture (rule 8.4); the model itself is told what it called (cut short).
        let names = tool_names(ctx, open.idx);
        let named = cut_to(&call.name, QUOTE_CUT_BYTES);
        let to_model = format!(
            "node '{}' has no tool named '{named}'; its tools: {}",
            node.id,
            if names.is_empty() {
                "(none)".to_owned()
            } else {
                names.join(", ")
            }
        );
        ctx.trace.emit(EventBody::ToolCall {
            node_id: node.id.clone(),
            entry: open.entry,
            tool: recorded_unknown_tool(&ctx.trace, &call.name),
            reference: String::new(),
            call_id,
            status: CallStatus::Refused,
            duration_ms: 0,
            dry_run: false,
            result_size: 0,
            error: Some(format!(
                "node '{}' has no tool by the name the model used {}",
                node.id,
                ctx.trace.quote(&call.name)
            )),
            arguments: arguments_content(),
            result: None,
        });
        return Some(tool_result(call, to_model, true));
    };
    let mut charges = vec![BudgetKey::ToolCalls];
    if tool.planned.kind == ToolKind::A2a {
        charges.extend([BudgetKey::Delegations, BudgetKey::RemoteCalls]);
    }
    // All or nothing: a call refused on one budget charges none of the others.
    if let Err(hit) = ctx.ledger.reserve_all(&charges) {
        ctx.trace.emit(EventBody::ToolCall {
            node_id: node.id.clone(),
            entry: open.entry,
            tool: call.name.clone(),
            reference: tool.planned.reference.clone(),
            call_id,
            status: CallStatus::Refused,
            duration_ms: 0,
            dry_run: tool.tool.is_dry_run(),
            result_size: 0,
            error: Some(format!(
                "refused before it ran: budget {} is spent",
                hit.budget
            )),
            arguments: arguments_content(),
            result: None,
        });
        ctx.budget_hit(hit, Some(&node.id));
        return None;
    }
    let tctx = ToolContext {
        node_id: node.id.clone(),
        entry: open.entry,
        call_id: call.id.clone(),
        cancel: ctx.token.clone(),
        ledger: ctx.ledger.clone(),
        trace: ctx.trace.clone(),
        people: ctx.people.clone(),
    };
    // Biased to the tool: a tool sees the cancel itself and settles what it holds (an
    // approval it asked for is recorded cancelled); the cancel branch only stops a tool that
    // does not return.
    let result = tokio::select! {
        biased;
        r = tool.tool.call(call.arguments.clone(), &tctx) => r,
        _ = ctx.token.cancelled() => Err(ToolError::Cancelled),
    };
    let (status, content, is_error, error, stop) = match result {
        Ok(out) if out.is_error => {
            // The error text is the tool's result: content, recorded only with capture.
            let error = format!(
                "the tool answered with an error ({} bytes)",
                out.content.len()
            );
            (CallStatus::Error, out.content, true, Some(error), false)
        }
        Ok(out) => (CallStatus::Ok, out.content, false, None, false),
        Err(ToolError::Cancelled) => (CallStatus::Cancelled, String::new(), true, None, true),
        Err(ToolError::BudgetExhausted { budget }) => {
            let message = format!("refused: budget {budget} is spent");
            // Every BudgetExhausted ending emits budget.hit (rule 3.4): the budget the tool
            // found spent becomes the run's hit, unless another came first.
            match BudgetKey::from_key(&budget) {
                Some(key) => ctx.budget_hit(ctx.ledger.spent(key), Some(&node.id)),
                None => {
                    ctx.end(
                        Outcome::Failed,
                        Some(&node.id),
                        format!(
                            "tool '{}' reported an unknown budget; this is a bug in the tool",
                            tool.planned.reference
                        ),
                    );
                }
            }
            (
                CallStatus::Refused,
                String::new(),
                true,
                Some(message),
                true,
            )
        }
        Err(ToolError::Failed { message, .. }) => {
            let error = cut_to(&message, ERROR_CUT_BYTES);
            (CallStatus::Error, message, true, Some(error), false)
        }
    };
    ctx.trace.emit(EventBody::ToolCall {
        node_id: node.id.clone(),
        entry: open.entry,
        tool: call.name.clone(),
        reference: tool.planned.reference.clone(),
        call_id,
        status,
        duration_ms: elapsed_ms(started),
        dry_run: tool.tool.is_dry_run(),
        result_size: content.len(),
        error,
        arguments: arguments_content(),
        result: if stop {
            None
        } else {
            ctx.trace.content(&content)
        },
    });
    if stop {
        return None;
    }
    Some(tool_result(call, content, is_error))
}
