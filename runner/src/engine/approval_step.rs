//! A HumanApproval node: ask a person, then route on approved / rejected (rules 4.13–4.20).

use super::ctx::{ExitReport, RunCtx};
use super::walk::{Loops, Step, follow, take_edge};
use crate::approval::Settled;
use crate::events::{NodeStatus, Outcome};
use orrery_crds::plan::{Next, NodeIdx};
use orrery_crds::run::ApprovalKind;
use std::sync::Arc;

/// The text a rejected edge's node receives: the reviewer's comment and the rejected text.
pub(crate) fn rejection_text(comment: Option<&str>, rejected: &str) -> String {
    let comment = comment
        .filter(|c| !c.trim().is_empty())
        .unwrap_or("(no comment)");
    format!(
        "A reviewer rejected this text.\n\nReviewer's comment:\n{comment}\n\nRejected text:\n{rejected}"
    )
}

/// A HumanApproval node: ask a person, then route on approved / rejected (rules 4.13–4.20).
pub(super) async fn approval_step(
    ctx: &Arc<RunCtx>,
    loops: &mut Loops,
    idx: NodeIdx,
    input: &str,
    depth: u32,
    flags: Vec<String>,
) -> Step {
    let node = &ctx.plan.nodes[idx];
    let open = ctx.enter(idx, depth, None, input, flags);
    let settled = ctx
        .people
        .ask(
            ApprovalKind::Approval,
            &node.id,
            &node.prompt,
            input,
            &ctx.token,
        )
        .await;
    let routes = match &node.next {
        Next::Route { routes } => Some(routes),
        _ => None,
    };
    match settled {
        Err(limit) => {
            ctx.exit(
                &open,
                NodeStatus::Failed,
                ExitReport {
                    error: Some(limit.to_string()),
                    ..Default::default()
                },
            );
            ctx.end(
                Outcome::Rejected,
                Some(&node.id),
                format!("{limit}: nobody was asked, which is a rejection"),
            );
            Step::Stop
        }
        Ok(Settled::Cancelled) => {
            ctx.exit(&open, NodeStatus::Stopped, ExitReport::default());
            Step::Stop
        }
        Ok(Settled::Expired) => {
            ctx.exit(
                &open,
                NodeStatus::Expired,
                ExitReport {
                    error: Some("nobody decided before the approval expired (default deny)".into()),
                    ..Default::default()
                },
            );
            ctx.end(
                Outcome::Rejected,
                Some(&node.id),
                format!(
                    "the approval at node '{}' expired before anyone decided (default deny)",
                    node.id
                ),
            );
            Step::Stop
        }
        Ok(Settled::Approved { .. }) => {
            loops.last_approval = Some((idx, false));
            ctx.exit(
                &open,
                NodeStatus::Ok,
                ExitReport {
                    label: Some("approved".into()),
                    answer: Some(input.to_owned()),
                    ..Default::default()
                },
            );
            follow(ctx, loops, idx, input.to_owned(), input, Some("approved"))
        }
        Ok(Settled::Rejected { comment }) => {
            loops.last_approval = Some((idx, true));
            let text = rejection_text(comment.as_deref(), input);
            ctx.exit(
                &open,
                NodeStatus::Ok,
                ExitReport {
                    label: Some("rejected".into()),
                    answer: Some(text.clone()),
                    ..Default::default()
                },
            );
            let Some(&edge) = routes.and_then(|r| r.get("rejected")) else {
                ctx.end(
                    Outcome::Rejected,
                    Some(&node.id),
                    format!(
                        "a person rejected the text at node '{}', which has no rejected edge",
                        node.id
                    ),
                );
                return Step::Stop;
            };
            take_edge(ctx, loops, edge, text, input, Some("rejected"))
        }
    }
}
