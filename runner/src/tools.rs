//! The tool interface: what the engine calls for a node's tools. MCP tools, A2A skills and
//! supervisor children all plug in through [`Tool`]. A node's tools are resolved from the plan.
//!
//! PUBLIC API (fixed in shape; the engine owns `ToolContext`'s contents).

use crate::model::ToolSpec;
use async_trait::async_trait;
use orrery_crds::plan::PlannedTool;
use orrery_crds::registry::RegistryEntry;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

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
    /// The tool could give no result (not a result that is an error, which is
    /// [`ToolOutput::is_error`]): the model gets the message as an error result.
    #[error("{message}")]
    Failed {
        /// What kind of failure: a stable label for reasons and metrics.
        kind: FailureKind,
        /// What happened, naming the tool or endpoint.
        message: String,
    },
}

impl ToolError {
    /// A failure of `kind` saying `message`.
    pub fn failed(kind: FailureKind, message: impl Into<String>) -> Self {
        ToolError::Failed {
            kind,
            message: message.into(),
        }
    }

    /// A stable label for the error (a reason or metric label).
    pub fn label(&self) -> &'static str {
        match self {
            ToolError::Cancelled => "cancelled",
            ToolError::BudgetExhausted { .. } => "budget_exhausted",
            ToolError::Failed { kind, .. } => kind.as_str(),
        }
    }
}

/// Why a tool could give no result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The endpoint could not be reached, or the connection broke.
    Unreachable,
    /// The endpoint answered outside the protocol.
    Protocol,
    /// No answer in time.
    Timeout,
    /// The tool or the endpoint is refused in this run.
    Refused,
    /// A fault of the tool itself.
    Internal,
}

impl FailureKind {
    /// The label: `unreachable`, `protocol`, `timeout`, `refused`, `internal`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Unreachable => "unreachable",
            FailureKind::Protocol => "protocol",
            FailureKind::Timeout => "timeout",
            FailureKind::Refused => "refused",
            FailureKind::Internal => "internal",
        }
    }
}

/// What a tool call may use of its run: the cancel token, the ledger, the trace and the people
/// who decide. Built by the engine for each call.
///
/// Before [`Tool::call`] runs, the engine has already reserved one tool call (`maxToolCalls`)
/// and, for an A2A skill, one delegation and one remote call (the first message). A tool charges
/// any further message itself (e.g. an answer to a remote's question) with
/// `ctx.ledger.reserve(BudgetKey::RemoteCalls)`, and emits its own `mcp.call` / `a2a.message`
/// events through `ctx.trace`.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// The node whose model called the tool.
    pub node_id: String,
    /// That node's entry (matches its `node.enter`).
    pub entry: u64,
    /// The model's call id.
    pub call_id: String,
    /// Fires when the run is cancelled or stopped: the call must return promptly.
    pub cancel: tokio_util::sync::CancellationToken,
    /// The run's ledger.
    pub ledger: std::sync::Arc<crate::ledger::Ledger>,
    /// The run's trace (content through `trace.content`, which redacts and caps it).
    pub trace: crate::events::Trace,
    /// Asks the run's people (kinds Input and Action), at most 12 times per run in all.
    pub people: std::sync::Arc<crate::approval::People>,
}

/// A tool a node's model may call: an MCP tool, an A2A skill, or a dry-run stand-in.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tool as the model sees it (its name must be the plan's `model_name`).
    fn spec(&self) -> ToolSpec;

    /// Runs one call. Must return [`ToolError::Cancelled`] promptly when `ctx.cancel` fires.
    async fn call(
        &self,
        arguments: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError>;

    /// True for a tool that only describes what would happen (dry runs); events say so.
    fn is_dry_run(&self) -> bool {
        false
    }

    /// Closes the tool's connections. Called once when the run ends, whatever the outcome.
    async fn close(&self) {}
}

/// A remote tool in a dry run: answers every call with a deterministic description of what
/// would have been sent, and calls nothing.
#[derive(Clone, Debug)]
pub struct DryRunTool {
    planned: orrery_crds::plan::PlannedTool,
}

impl DryRunTool {
    /// The dry-run stand-in for a planned tool.
    pub fn new(planned: orrery_crds::plan::PlannedTool) -> Self {
        DryRunTool { planned }
    }
}

#[async_trait]
impl Tool for DryRunTool {
    fn spec(&self) -> ToolSpec {
        let (description, schema) = match self.planned.kind {
            orrery_crds::plan::ToolKind::Mcp => (
                format!(
                    "Dry run of MCP tool '{}' on '{}': nothing is called.",
                    self.planned.remote_name, self.planned.entry
                ),
                serde_json::json!({"type": "object", "additionalProperties": true}),
            ),
            orrery_crds::plan::ToolKind::A2a => (
                format!(
                    "Dry run of skill '{}' of remote agent '{}': nothing is sent.",
                    self.planned.remote_name, self.planned.entry
                ),
                serde_json::json!({
                    "type": "object",
                    "properties": {"request": {"type": "string", "description": "The request text for the remote agent."}},
                    "required": ["request"]
                }),
            ),
        };
        ToolSpec {
            name: self.planned.model_name.clone(),
            description,
            input_schema: schema,
        }
    }

    async fn call(
        &self,
        arguments: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        Ok(ToolOutput {
            content: format!(
                "[dry run] {} would be called with {}",
                self.planned.reference, arguments
            ),
            is_error: false,
        })
    }

    fn is_dry_run(&self) -> bool {
        true
    }
}

/// Why a tool could not be built.
#[derive(Debug, thiserror::Error)]
#[error("tool {reference}: {message}")]
pub struct ToolBuildError {
    /// The tool reference.
    pub reference: String,
    /// What is wrong.
    pub message: String,
}

/// Builds the tool for a planned tool reference (async: a remote client may connect, list and
/// pin its tools first).
#[async_trait::async_trait]
pub trait ToolFactory: Send + Sync {
    /// The tool for `planned`, whose registry entry is `entry`.
    async fn build(
        &self,
        planned: &PlannedTool,
        entry: &RegistryEntry,
    ) -> Result<Arc<dyn Tool>, ToolBuildError>;

    /// Whether the tools built are dry-run stand-ins.
    fn dry_run(&self) -> bool {
        false
    }
}

/// Dry runs: every remote tool answers "[dry run] <tool> would be called with <args>" and
/// nothing is called.
#[derive(Clone, Copy, Debug, Default)]
pub struct DryRunTools;

#[async_trait::async_trait]
impl ToolFactory for DryRunTools {
    async fn build(
        &self,
        planned: &PlannedTool,
        _entry: &RegistryEntry,
    ) -> Result<Arc<dyn Tool>, ToolBuildError> {
        Ok(Arc::new(DryRunTool::new(planned.clone())))
    }

    fn dry_run(&self) -> bool {
        true
    }
}
