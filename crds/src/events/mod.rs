//! Trace events v2, the contract: what a run did, step by step. The runner emits these types,
//! the sidecar stores and streams them, the console reads them; this module depends on nothing
//! but the resource types (no tokio, no HTTP), so each of them builds on it.
//!
//! Every event has `type`, `seq` (1, 2, … within the run), `runId` and `ts`. `ts` is RFC 3339
//! UTC with milliseconds (`2026-11-29T23:01:02.345Z`): a deliberate departure from the seeds,
//! whose events carry Unix seconds, for Kubernetes-style timestamps that read the same in
//! `kubectl`, the sidecar's store and the console, and order events within a second.
//!
//! Events carry names, ids, states, sizes, counts and timings, never arguments, results or text
//! (model-written text included: an unknown label or an invented tool name is named by its size),
//! unless content capture is on: then text is redacted and cut to [`CONTENT_CUT_BYTES`]
//! ([`QUOTE_CUT_BYTES`] when quoted in an error). At most [`MAX_EVENTS`] events per run; past
//! that events are dropped, but [`RESERVED_SLOTS`] stay reserved for `budget.hit`, the approval
//! events and `run.end`, which says how many were dropped.
//!
//! Text shown to a person (a terminal, the console) goes through [`visible`] first (escapes,
//! control, bidirectional and zero-width characters are shown as escapes).
//!
//! [`schema`] publishes the JSON Schema of [`TraceEvent`].

pub mod ingest;
mod printer;
pub mod timestamp;
mod types;
mod visible;

pub use printer::{PrinterOptions, TerminalPrinter};
pub use types::{
    CallStatus, DecisionKind, Direction, EventBody, ModelCall, NodeStatus, Outcome, TraceEvent,
};
pub use visible::{Visible, visible, visible_inline};

/// At most this many events per run.
pub const MAX_EVENTS: u64 = 2000;
/// Slots kept, at the end of the cap, for `budget.hit`, the approval events and `run.end`
/// (12 approvals × 2 events + 1 + 1 fit).
pub const RESERVED_SLOTS: u64 = 32;
/// Captured text is cut to this many bytes per field.
pub const CONTENT_CUT_BYTES: usize = 2048;
/// Model-written text quoted in an error (an unknown label, an invented tool name) is cut to
/// this many bytes, and only with content capture on.
pub const QUOTE_CUT_BYTES: usize = 64;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserved_slots_hold_every_approval_event_a_run_may_have_plus_budget_hit_and_run_end() {
        let needed = u64::from(crate::codes::limits::MAX_APPROVALS_PER_RUN) * 2 + 2;
        assert!(RESERVED_SLOTS >= needed, "{RESERVED_SLOTS} < {needed}");
    }

    #[test]
    fn the_published_schema_names_every_event_type() {
        let text = schema().to_string();
        for kind in EVENT_TYPES {
            assert!(
                text.contains(&format!("\"{kind}\"")),
                "{kind} missing from the schema"
            );
        }
    }
}
