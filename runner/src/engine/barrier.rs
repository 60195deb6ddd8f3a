//! The barrier of a parallel section: each branch's first node waits between its `node.enter`
//! and its work until every branch has entered (rule 2.22), unless the run stops first.

use super::ctx::RunCtx;
use tokio::sync::Barrier;

/// Waits until every parallel branch has entered its first node; false when the run stops
/// first.
pub(super) async fn wait_barrier(ctx: &RunCtx, barrier: &Barrier) -> bool {
    tokio::select! {
        _ = barrier.wait() => true,
        _ = ctx.token.cancelled() => false,
    }
}
