//! A Parallel node and its section: every branch on its own task, all entered before any
//! exits (rule 2.22), then the Join's `## <branch>` blocks in edge order.
//!
//! A branch is walked like any path of the graph, and a walk may reach a Parallel node: the
//! walk and the section recurse into each other. The walk passes itself in ([`WalkBranch`]),
//! so this module does not import it.

use super::ctx::{ExitReport, RunCtx};
use super::flow::{Flow, screen_edge};
use crate::events::{NodeStatus, Outcome};
use futures::future::BoxFuture;
use orrery_crds::plan::{Next, NodeIdx};
use std::sync::Arc;
use tokio::sync::Barrier;

/// How a branch is walked (`super::walk::walk`): from its first node with its input and depth,
/// until it reaches the Join, its first node held by the section's barrier, with the screen
/// flags of the edge that led to it.
pub(super) type WalkBranch = fn(
    Arc<RunCtx>,
    NodeIdx,
    String,
    u32,
    Option<NodeIdx>,
    Option<Arc<Barrier>>,
    Vec<String>,
) -> BoxFuture<'static, Flow>;

/// A Parallel node and its section: enter/exit the Parallel, run every branch on its own task
/// with `walk` (each branch's first `node.enter` before any branch exits), then the Join writes
/// each branch's answer as a `## <branch>` block in edge order. Returns the Join and its answer.
pub(super) async fn run_parallel(
    ctx: &Arc<RunCtx>,
    walk: WalkBranch,
    idx: NodeIdx,
    input: String,
    depth: u32,
    flags: Vec<String>,
) -> Option<(NodeIdx, String)> {
    let open = ctx.enter(idx, depth, None, &input, flags);
    let Next::FanOut { section } = ctx.plan.nodes[idx].next else {
        ctx.fail(
            &open,
            "a Parallel node without a section".into(),
            ExitReport::default(),
        );
        return None;
    };
    let section = ctx.plan.sections[section].clone();
    ctx.exit(
        &open,
        NodeStatus::Ok,
        ExitReport {
            answer: Some(input.clone()),
            ..Default::default()
        },
    );

    let barrier = Arc::new(Barrier::new(section.branches.len()));
    let mut set = tokio::task::JoinSet::new();
    for (i, chain) in section.branches.iter().enumerate() {
        let Some(&first) = chain.first() else {
            continue;
        };
        let edge = ctx
            .plan
            .edges
            .iter()
            .position(|e| e.from == idx && e.to == first);
        let screen = edge.is_some_and(|e| ctx.plan.edges[e].screen);
        let (text, branch_flags) = screen_edge(screen, input.clone());
        let ctx = ctx.clone();
        let barrier = barrier.clone();
        let join = section.join;
        set.spawn(async move {
            let flow = walk(
                ctx,
                first,
                text,
                depth + 1,
                Some(join),
                Some(barrier),
                branch_flags,
            )
            .await;
            (i, flow)
        });
    }
    let mut answers: Vec<Option<String>> = vec![None; section.branches.len()];
    let mut stopped = false;
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((i, Flow::Answer(a))) => answers[i] = Some(a),
            Ok((_, Flow::Stop)) => stopped = true,
            Err(e) => {
                stopped = true;
                ctx.end(
                    Outcome::Failed,
                    Some(&ctx.plan.nodes[idx].id),
                    format!("a parallel branch failed: {e}"),
                );
            }
        }
    }
    if stopped || ctx.token.is_cancelled() {
        return None;
    }

    let blocks: Vec<String> = section
        .branches
        .iter()
        .zip(answers)
        .map(|(chain, answer)| {
            let name = chain
                .first()
                .map(|&n| ctx.plan.nodes[n].id.as_str())
                .unwrap_or_default();
            format!("## {name}\n\n{}", answer.unwrap_or_default())
        })
        .collect();
    let combined = blocks.join("\n\n");
    let join_open = ctx.enter(section.join, depth, None, &combined, Vec::new());
    ctx.exit(
        &join_open,
        NodeStatus::Ok,
        ExitReport {
            answer: Some(combined.clone()),
            ..Default::default()
        },
    );
    Some((section.join, combined))
}
