//! The tool interface: what the engine calls for a node's tools. MCP tools, A2A skills and
//! supervisor children all plug in through [`Tool`]. A node's tools are resolved from the plan.
//!
//! PUBLIC API (fixed in shape; the engine owns `ToolContext`'s contents).

use crate::model::ToolSpec;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What a tool call returns to the model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The result as text (already screened and capped for remote tools).
    pub content: String,
    /// Whether the call failed (the model sees the error text).
    pub is_error: bool,
}

/// Why a tool call could not be made at all.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The run was cancelled.
    #[error("the tool call was cancelled")]
    Cancelled,
    /// A budget is spent: the run ends `BudgetExhausted`.
    #[error("budget {budget} is spent")]
    BudgetExhausted {
        /// The budget's key, e.g. `maxToolCalls`.
        budget: String,
    },
    /// Anything else: returned to the model as an error result.
    #[error("{0}")]
    Failed(String),
}
