//! The event types: [`TraceEvent`] and its [`EventBody`] variants.

pub use crate::approval::DecisionKind;
use crate::budget::{BudgetKey, BudgetLimits};
use crate::run::{ApprovalKind, RunError, RunTotals};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One trace event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TraceEvent {
    /// 1, 2, … within the run, with no gaps (dropped events get no number).
    pub seq: u64,
    /// The run's id.
    pub run_id: String,
    /// When the event happened, RFC 3339 with milliseconds (UTC), e.g.
    /// `2026-11-29T23:01:02.345Z` (the seeds use Unix seconds; this is a deliberate departure
    /// for Kubernetes-style timestamps).
    pub ts: String,
    /// The event's type and fields.
    #[serde(flatten)]
    pub body: EventBody,
}

impl TraceEvent {
    /// The event's `type`, e.g. `node.enter`.
    pub fn kind(&self) -> &'static str {
        self.body.kind()
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Outcome {
    /// The run finished with an output.
    Succeeded,
    /// A node failed: a model error, a label missing from the answer, a tool that could not be
    /// built, an error of the engine.
    Failed,
    /// Cancelled (SIGINT/SIGTERM, `spec.cancel`).
    Cancelled,
    /// A budget ran out (`budget.hit`).
    BudgetExhausted,
    /// A person rejected an approval with no rejected edge (or past a loop's cap), or let it
    /// expire.
    Rejected,
}

impl Outcome {
    /// The outcome's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "Succeeded",
            Outcome::Failed => "Failed",
            Outcome::Cancelled => "Cancelled",
            Outcome::BudgetExhausted => "BudgetExhausted",
            Outcome::Rejected => "Rejected",
        }
    }
}

/// How a node's entry ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum NodeStatus {
    /// The node answered.
    Ok,
    /// The node failed (the run fails with it).
    Failed,
    /// The run was stopped while the node ran (cancel, a budget, another branch failing).
    Stopped,
    /// A HumanApproval nobody decided in time: a rejection that takes no edge (rule 4.13).
    Expired,
}

/// How a tool call went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CallStatus {
    /// The tool answered.
    Ok,
    /// The tool answered with an error (the model sees it).
    Error,
    /// The call was refused before it ran (a budget, a tool the node may not use).
    Refused,
    /// The run was stopped while the call ran.
    Cancelled,
}

/// One model call of a node's entry, as its `node.exit` lists them (at most the turn's
/// rounds, 16 by default, so the list is bounded; no content).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelCall {
    /// The provider, as the OpenTelemetry GenAI conventions name it: `anthropic`, `openai`,
    /// `gcp.gemini`, or `orrery.scripted`.
    pub provider: String,
    /// The provider's model name the call asked for.
    pub model: String,
    /// When the call began, in milliseconds after the entry began.
    pub start_ms: u64,
    /// How long it took.
    pub duration_ms: u64,
    /// Input (prompt) tokens the provider counted.
    pub input_tokens: u64,
    /// Output tokens the provider counted.
    pub output_tokens: u64,
    /// Why it failed, if it did (the node fails with it, or the run was cancelled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Direction of an A2A message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Direction {
    /// Sent to the remote agent.
    Outbound,
    /// Received from it (sent when the tool call returns, after the safety screen).
    Inbound,
}

/// The type of an event and its fields. Fields marked "content" are present only with content
/// capture on (redacted, cut to 2 KB).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum EventBody {
    /// The run started.
    #[serde(rename = "run.start", rename_all = "camelCase")]
    RunStart {
        /// The composition's name.
        composition: String,
        /// Its pattern.
        pattern: String,
        /// Number of nodes (supervisor children included).
        nodes: usize,
        /// The run's budgets.
        budgets: BudgetLimits,
        /// Whether content is captured.
        capture_content: bool,
        /// Whether remote tools answer with dry-run text instead of being called.
        dry_run_tools: bool,
        /// Size of the input in bytes.
        input_size: usize,
        /// Content: the run's input.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<String>,
    },
    /// The run ended. Always the last event.
    #[serde(rename = "run.end", rename_all = "camelCase")]
    RunEnd {
        /// How it ended.
        outcome: Outcome,
        /// Why, when it did not succeed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<RunError>,
        /// What it used.
        totals: RunTotals,
        /// Events dropped past the per-run cap.
        dropped: u64,
        /// Size of the output in bytes (0 without one).
        output_size: usize,
        /// Content: the run's output.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
    },
    /// A node's entry began. Each entry (a loop's rerun, a supervisor's call of a child) is its
    /// own enter/exit pair, matched by `entry`.
    #[serde(rename = "node.enter", rename_all = "camelCase")]
    NodeEnter {
        /// The node's id.
        node_id: String,
        /// Its kind (`LLMAgent`, `Router`, `Parallel`, `Join`, `Supervisor`, `HumanApproval`).
        kind: String,
        /// Id of this entry, unique within the run.
        entry: u64,
        /// Nesting: 0 on the main path, +1 inside a parallel branch or a supervisor's call.
        depth: u32,
        /// For a supervisor's child: the entry of the parent that called it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_entry: Option<u64>,
        /// The model entry the node runs on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// Size of the input in bytes.
        input_size: usize,
        /// Flags the edge screen raised on the input, if it was screened.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        screen_flags: Vec<String>,
        /// Content: the node's input.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<String>,
    },
    /// A node's entry ended.
    #[serde(rename = "node.exit", rename_all = "camelCase")]
    NodeExit {
        /// The node's id.
        node_id: String,
        /// Its kind.
        kind: String,
        /// The entry this closes.
        entry: u64,
        /// Nesting, as on `node.enter`.
        depth: u32,
        /// How the entry ended.
        status: NodeStatus,
        /// Tokens this entry used (its own model calls; a supervisor's children count in their
        /// own entries).
        tokens: u64,
        /// Model calls this entry made.
        model_calls: u32,
        /// Each model call: provider, model, timing and tokens (absent in events of runners
        /// from before it was added).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        calls: Vec<ModelCall>,
        /// How long the entry took.
        duration_ms: u64,
        /// The label a labelled node, router or approval answered with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        /// Size of the answer in bytes.
        answer_size: usize,
        /// Why it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Content: the node's answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
    },
    /// A loop's back edge was reached.
    #[serde(rename = "loop.iteration", rename_all = "camelCase")]
    LoopIteration {
        /// The loop's head (where the back edge returns to).
        head: String,
        /// The loop's tail (the node that sent it back).
        tail: String,
        /// How many times the back edge has been taken in this entry of the loop, this time
        /// included (`max + 1` when stopped).
        iteration: u32,
        /// The loop's `maxIterations`.
        max: u32,
        /// True on the arrival past the cap: the branch ends with the answer being judged.
        stopped: bool,
    },
    /// A labelled node, router or approval chose a route.
    #[serde(rename = "route.taken", rename_all = "camelCase")]
    RouteTaken {
        /// The node that routed.
        node_id: String,
        /// The label.
        label: String,
        /// The node the route leads to; absent when the label has no edge (the branch ends).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<String>,
    },
    /// A tool call by a node's model (MCP tools, A2A skills).
    #[serde(rename = "tool.call", rename_all = "camelCase")]
    ToolCall {
        /// The node whose model called it.
        node_id: String,
        /// The node's entry.
        entry: u64,
        /// The model-facing tool name.
        tool: String,
        /// The tool reference, e.g. `mcp:docs.search`.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reference: String,
        /// The model's call id.
        call_id: String,
        /// How it went.
        status: CallStatus,
        /// How long it took.
        duration_ms: u64,
        /// True when the tool was answered by the dry-run tool, not called.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        dry_run: bool,
        /// Size of the result in bytes.
        result_size: usize,
        /// Why it failed or was refused.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Content: the arguments (JSON text).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<String>,
        /// Content: the result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
    },
    /// A budget ran out; the run ends `BudgetExhausted`.
    #[serde(rename = "budget.hit", rename_all = "camelCase")]
    BudgetHit {
        /// The budget's key (`maxTokens`, `maxToolCalls`, `maxDelegations`, `maxRemoteCalls`,
        /// `timeoutSeconds`).
        budget: BudgetKey,
        /// Its limit.
        limit: u64,
        /// What had been used.
        used: u64,
        /// The node that was running.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node_id: Option<String>,
    },
    /// The run waits for a person.
    #[serde(rename = "approval.requested", rename_all = "camelCase")]
    ApprovalRequested {
        /// The approval's id.
        approval_id: String,
        /// The node asking.
        node_id: String,
        /// Approval, Input or Action.
        kind: ApprovalKind,
        /// The digest of the text under review (SHA-256, hex, over the run's id, the approval's
        /// id and the text: [`crate::relay::approval_digest`]).
        digest: String,
        /// Size of the text in bytes.
        size: u64,
        /// False when the text is over 128 KiB (it can then only be rejected).
        complete: bool,
        /// When it expires (a rejection), RFC 3339.
        expires_at: String,
        /// Content: the text under review.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// A person decided, or the approval expired or was cancelled.
    #[serde(rename = "approval.decided", rename_all = "camelCase")]
    ApprovalDecided {
        /// The approval's id.
        approval_id: String,
        /// The node that asked.
        node_id: String,
        /// Approval, Input or Action.
        kind: ApprovalKind,
        /// How it was settled.
        decision: DecisionKind,
        /// The digest the decision named (approvals).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digest: Option<String>,
        /// How long the person took.
        wait_ms: u64,
        /// Content: the reviewer's comment (or answer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment: Option<String>,
    },
    /// One call of an MCP tool (emitted by the MCP client).
    #[serde(rename = "mcp.call", rename_all = "camelCase")]
    McpCall {
        /// The node whose model called it.
        node_id: String,
        /// The registry entry.
        entry: String,
        /// The tool's name on the server.
        tool: String,
        /// The model's call id.
        call_id: String,
        /// How it went.
        status: CallStatus,
        /// How long it took.
        duration_ms: u64,
        /// Size of the result in bytes.
        result_size: usize,
        /// Content: the arguments (JSON text).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<String>,
        /// Content: the result, as the model saw it (after the screen).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
    },
    /// One A2A message to or from a remote agent (emitted by the A2A client).
    #[serde(rename = "a2a.message", rename_all = "camelCase")]
    A2aMessage {
        /// The node whose model called the skill.
        node_id: String,
        /// The registry entry.
        entry: String,
        /// The skill.
        skill: String,
        /// The model's call id (pairs a reply with its request).
        call_id: String,
        /// Outbound (request) or inbound (reply).
        direction: Direction,
        /// Outbound: the JSON-RPC method the message went by, `SendMessage`, or
        /// `SendStreamingMessage` when the remote's card says it streams (rule 12.47).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        method: Option<String>,
        /// The remote task's state (`submitted`, `working`, `completed`, `input-required`…).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_state: Option<String>,
        /// Size of the text in bytes.
        size: usize,
        /// Content: the text (a reply as the model saw it, after the screen).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
}

impl EventBody {
    /// The event's `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            EventBody::RunStart { .. } => "run.start",
            EventBody::RunEnd { .. } => "run.end",
            EventBody::NodeEnter { .. } => "node.enter",
            EventBody::NodeExit { .. } => "node.exit",
            EventBody::LoopIteration { .. } => "loop.iteration",
            EventBody::RouteTaken { .. } => "route.taken",
            EventBody::ToolCall { .. } => "tool.call",
            EventBody::BudgetHit { .. } => "budget.hit",
            EventBody::ApprovalRequested { .. } => "approval.requested",
            EventBody::ApprovalDecided { .. } => "approval.decided",
            EventBody::McpCall { .. } => "mcp.call",
            EventBody::A2aMessage { .. } => "a2a.message",
        }
    }

    /// Whether the event keeps a slot past the event cap (`budget.hit`, approval events,
    /// `run.end`).
    pub fn is_reserved(&self) -> bool {
        matches!(
            self,
            EventBody::BudgetHit { .. }
                | EventBody::ApprovalRequested { .. }
                | EventBody::ApprovalDecided { .. }
                | EventBody::RunEnd { .. }
        )
    }
}
