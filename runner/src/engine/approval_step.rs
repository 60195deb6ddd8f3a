//! A HumanApproval node: ask a person, then route on approved / rejected (rules 4.13–4.20).

use super::ctx::{ExitReport, RunCtx};
use crate::approval::Settled;
use crate::events::{NodeStatus, Outcome};
use orrery_crds::plan::{EdgeIdx, Next, NodeIdx};
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

/// How a HumanApproval was settled, for the walk to route on.
pub(super) enum Verdict {
    /// Approved: the text under review goes on along the `approved` edge.
    Approved,
    /// Rejected: `text` (the comment and the rejected text) goes along the `rejected` edge.
    Rejected {
        /// What the rejected edge's node receives.
        text: String,
        /// The `rejected` edge.
        edge: EdgeIdx,
    },
    /// The run ends here (expired, over the approval limit, rejected with no rejected edge,
    /// cancelled): the reason is recorded in the context.
    Stop,
}

/// A HumanApproval node: ask a person and record the decision (rules 4.13–4.20); the walk
/// routes on the [`Verdict`].
pub(super) async fn approval_step(
    ctx: &Arc<RunCtx>,
    idx: NodeIdx,
    input: &str,
    depth: u32,
    flags: Vec<String>,
) -> Verdict {
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
            Verdict::Stop
        }
        Ok(Settled::Cancelled) => {
            ctx.exit(&open, NodeStatus::Stopped, ExitReport::default());
            Verdict::Stop
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
            Verdict::Stop
        }
        Ok(Settled::Approved { .. }) => {
            ctx.exit(
                &open,
                NodeStatus::Ok,
                ExitReport {
                    label: Some("approved".into()),
                    answer: Some(input.to_owned()),
                    ..Default::default()
                },
            );
            Verdict::Approved
        }
        Ok(Settled::Rejected { comment }) => {
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
                return Verdict::Stop;
            };
            Verdict::Rejected { text, edge }
        }
    }
}
