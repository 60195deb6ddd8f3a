//! Trace events v2: what a run did, step by step, for the terminal, the sidecar's SSE stream,
//! replays and comparisons.
//!
//! Every event has `type`, `seq` (1, 2, … within the run), `runId` and `ts`. `ts` is RFC 3339
//! UTC with milliseconds (`2026-11-29T23:01:02.345Z`): a deliberate departure from the seeds,
//! whose events carry Unix seconds, for Kubernetes-style timestamps that read the same in
//! `kubectl`, the sidecar's store and the console, and order events within a second.
//!
//! Events carry names, ids, states, sizes, counts and timings, never arguments, results or text
//! (model-written text included: an unknown label or an invented tool name is named by its size),
//! unless content capture is on: then text is redacted ([`crate::safety::redact`]) and cut to
//! 2 KB (64 bytes when quoted in an error), within a per-run content cap. At most 2000 events per
//! run; past that events are dropped, but slots stay reserved for `budget.hit`, the approval
//! events and `run.end`, which says how many were dropped. Sinks never hold up a run: a run's
//! [`Trace`] writes through a bounded queue, dropping (and counting) ordinary events when a sink
//! falls behind. See [`Trace`].
//!
//! Text shown to a person in a terminal goes through [`visible`] first (escapes, control,
//! bidirectional and zero-width characters are shown as escapes).
//!
//! [`schema`] publishes the JSON Schema of [`TraceEvent`].

mod hold;
mod printer;
mod trace;
mod types;
mod visible;
mod writer;

pub use hold::{HeldWriter, HoldGuard, MAX_HELD_BYTES, TerminalHold};
pub use printer::{PrinterOptions, TerminalPrinter};
pub use trace::{
    CONTENT_CUT_BYTES, DEFAULT_CONTENT_CAP_BYTES, DEFAULT_SINK_QUEUE, EventSink, JsonLinesSink,
    MAX_EVENTS, MemorySink, QUOTE_CUT_BYTES, RESERVED_SLOTS, Trace, TraceOptions, cut_to,
};
pub use visible::{Visible, visible, visible_inline};

pub use types::{
    BudgetLimits, CallStatus, DecisionKind, Direction, EventBody, NodeStatus, Outcome,
    RunErrorInfo, TraceEvent,
};

/// The JSON Schema of a trace event ([`TraceEvent`]).
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(TraceEvent)).unwrap_or(serde_json::Value::Null)
}

/// Every event type, in the order of [`EventBody`].
pub const EVENT_TYPES: [&str; 12] = [
    "run.start",
    "run.end",
    "node.enter",
    "node.exit",
    "loop.iteration",
    "route.taken",
    "tool.call",
    "budget.hit",
    "approval.requested",
    "approval.decided",
    "mcp.call",
    "a2a.message",
];

/// Now, as RFC 3339 UTC with milliseconds (`2026-11-29T23:01:02.345Z`).
pub fn now_rfc3339() -> String {
    format_rfc3339(jiff::Timestamp::now())
}

/// A timestamp as RFC 3339 UTC with milliseconds.
pub fn format_rfc3339(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

#[cfg(test)]
mod tests;
