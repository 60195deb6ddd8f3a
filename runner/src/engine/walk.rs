//! Walking the graph: node after node along the edges, with routes, loop caps and edge
//! screens ([`super::flow`]). Parallel sections are [`super::parallel`] (each branch walked by
//! [`walk`], which it is given), human approvals [`super::approval_step`].

use super::agent;
use super::approval_step::{Verdict, approval_step};
use super::barrier::wait_barrier;
use super::ctx::RunCtx;
use super::flow::{Flow, screen_edge};
use super::parallel::run_parallel;
use crate::events::{EventBody, Outcome};
use futures::future::BoxFuture;
use orrery_crds::composition::NodeKind;
use orrery_crds::plan::{EdgeIdx, Next, NodeIdx};
use std::sync::Arc;
use tokio::sync::Barrier;

/// What happens after a node answered.
enum Step {
    /// Go on to a node with this text (and the screen's flags, if the edge screened it).
    Goto(NodeIdx, String, Vec<String>),
    /// The branch ends with this answer.
    End(String),
    /// The run is stopping.
    Stop,
}

/// Per-walk loop state: back edges taken per loop since its current entry, and the last
/// approval decided on this walk's path.
struct Loops {
    taken: Vec<u32>,
    /// The HumanApproval that decided last on this path, and whether it rejected.
    last_approval: Option<(NodeIdx, bool)>,
}

/// Walks from `start` with `input` until the branch ends, or until it reaches `stop_at` (a
/// parallel branch stops at its join). `first_barrier` holds the first node between its
/// `node.enter` and its work until every parallel branch has entered (rule 2.22);
/// `first_flags` are the screen flags of the edge that led to `start`.
pub(crate) fn walk(
    ctx: Arc<RunCtx>,
    start: NodeIdx,
    input: String,
    depth: u32,
    stop_at: Option<NodeIdx>,
    first_barrier: Option<Arc<Barrier>>,
    first_flags: Vec<String>,
) -> BoxFuture<'static, Flow> {
    Box::pin(async move {
        let mut loops = Loops {
            taken: vec![0; ctx.plan.loops.len()],
            last_approval: None,
        };
        let mut current = start;
        let mut input = input;
        let mut flags = first_flags;
        let mut barrier = first_barrier;
        loop {
            if Some(current) == stop_at {
                return Flow::Answer(input);
            }
            if ctx.token.is_cancelled() {
                return Flow::Stop;
            }
            let kind = ctx.plan.nodes[current].kind;
            if !matches!(
                kind,
                NodeKind::LlmAgent | NodeKind::Router | NodeKind::Supervisor
            ) && let Some(b) = barrier.take()
                && !wait_barrier(&ctx, &b).await
            {
                return Flow::Stop;
            }
            let step = match kind {
                NodeKind::Parallel => {
                    let Some((join, combined)) = run_parallel(
                        &ctx,
                        walk,
                        current,
                        input.clone(),
                        depth,
                        std::mem::take(&mut flags),
                    )
                    .await
                    else {
                        return Flow::Stop;
                    };
                    follow(&ctx, &mut loops, join, combined, &input, None)
                }
                NodeKind::HumanApproval => {
                    let verdict =
                        approval_step(&ctx, current, &input, depth, std::mem::take(&mut flags))
                            .await;
                    match verdict {
                        Verdict::Approved => {
                            loops.last_approval = Some((current, false));
                            let text = input.clone();
                            follow(&ctx, &mut loops, current, text, &input, Some("approved"))
                        }
                        Verdict::Rejected { text, edge } => {
                            loops.last_approval = Some((current, true));
                            take_edge(&ctx, &mut loops, edge, text, &input, Some("rejected"))
                        }
                        Verdict::Stop => Step::Stop,
                    }
                }
                _ => {
                    let answer = agent::run_node(
                        ctx.clone(),
                        current,
                        input.clone(),
                        depth,
                        None,
                        std::mem::take(&mut flags),
                        barrier.take(),
                    )
                    .await;
                    let Some(answer) = answer else {
                        return Flow::Stop;
                    };
                    // A router passes its input on unchanged; other nodes pass their answer.
                    let text = if kind == NodeKind::Router {
                        input.clone()
                    } else {
                        answer.text
                    };
                    follow(
                        &ctx,
                        &mut loops,
                        current,
                        text,
                        &input,
                        answer.label.as_deref(),
                    )
                }
            };
            match step {
                Step::Goto(next, text, screen_flags) => {
                    current = next;
                    input = text;
                    flags = screen_flags;
                }
                Step::End(answer) => return Flow::Answer(answer),
                Step::Stop => return Flow::Stop,
            }
        }
    })
}

/// Follows what comes after node `from`, whose answer is `text`, whose input was `judged`, and
/// whose label (if labelled) is `label`.
fn follow(
    ctx: &RunCtx,
    loops: &mut Loops,
    from: NodeIdx,
    text: String,
    judged: &str,
    label: Option<&str>,
) -> Step {
    let node = &ctx.plan.nodes[from];
    match &node.next {
        Next::End | Next::ReturnToParent => Step::End(text),
        Next::Edge { edge } => take_edge(ctx, loops, *edge, text, judged, None),
        Next::Route { routes } => {
            let Some(label) = label else {
                // The agent checked the label against the node's labels; a node that routes
                // must have one.
                ctx.end(
                    Outcome::Failed,
                    Some(&node.id),
                    format!("node '{}' routes by label but gave none", node.id),
                );
                return Step::Stop;
            };
            match routes.get(label) {
                Some(edge) => take_edge(ctx, loops, *edge, text, judged, Some(label)),
                None => {
                    // A label with no edge ends the branch (label_ends_run).
                    ctx.trace.emit(EventBody::RouteTaken {
                        node_id: node.id.clone(),
                        label: label.to_owned(),
                        to: None,
                    });
                    Step::End(text)
                }
            }
        }
        Next::FanOut { .. } => {
            ctx.end(
                Outcome::Failed,
                Some(&node.id),
                format!("node '{}' fans out but is not a Parallel node", node.id),
            );
            Step::Stop
        }
    }
}

/// Takes edge `edge_idx` with `text`. A back edge counts against its loop's cap: past it, the
/// branch ends with `judged`, the answer the loop's tail was judging (rules 2.12–2.13); but when
/// the last decision on the path was a person rejecting the text at an approval inside that
/// loop, the run ends `Rejected`, never `Succeeded` with a draft that was turned down (rules
/// 2.16, 4.19), however many nodes lie between the rejection and the back edge.
fn take_edge(
    ctx: &RunCtx,
    loops: &mut Loops,
    edge_idx: EdgeIdx,
    text: String,
    judged: &str,
    label: Option<&str>,
) -> Step {
    let plan = &ctx.plan;
    let edge = &plan.edges[edge_idx];
    if let Some(l) = edge.back_edge_of {
        let lp = &plan.loops[l];
        let head = plan.nodes[lp.head].id.clone();
        let tail = plan.nodes[lp.tail].id.clone();
        if loops.taken[l] >= lp.max_iterations {
            ctx.trace.emit(EventBody::LoopIteration {
                head: head.clone(),
                tail,
                iteration: loops.taken[l] + 1,
                max: lp.max_iterations,
                stopped: true,
            });
            if let Some((gate, true)) = loops.last_approval
                && lp.body.contains(&gate)
            {
                let gate = &plan.nodes[gate].id;
                ctx.end(
                    Outcome::Rejected,
                    Some(gate),
                    format!(
                        "a person rejected the text at node '{gate}' and the loop back to '{head}' reached its cap (maxIterations {}): the run ends Rejected, never with the text that was turned down",
                        lp.max_iterations
                    ),
                );
                return Step::Stop;
            }
            return Step::End(judged.to_owned());
        }
        loops.taken[l] += 1;
        reset_nested(ctx, loops, l);
        ctx.trace.emit(EventBody::LoopIteration {
            head,
            tail,
            iteration: loops.taken[l],
            max: lp.max_iterations,
            stopped: false,
        });
    }
    if let Some(label) = label {
        ctx.trace.emit(EventBody::RouteTaken {
            node_id: plan.nodes[edge.from].id.clone(),
            label: label.to_owned(),
            to: Some(plan.nodes[edge.to].id.clone()),
        });
    }
    let (text, flags) = screen_edge(edge.screen, text);
    Step::Goto(edge.to, text, flags)
}

/// Loops nested in loop `l` start from zero when its back edge is taken (rule 2.14).
fn reset_nested(ctx: &RunCtx, loops: &mut Loops, l: usize) {
    let mut stack: Vec<usize> = ctx.plan.loops[l].nested.clone();
    while let Some(inner) = stack.pop() {
        if let Some(count) = loops.taken.get_mut(inner) {
            *count = 0;
        }
        stack.extend(ctx.plan.loops[inner].nested.iter().copied());
    }
}
