//! Trace events at run time: the [`Trace`] of one run (numbering, caps, content capture,
//! the bounded writer that keeps sinks from holding up a run), its sinks, and the terminal
//! printer. The event types themselves are the contract in [`orrery_crds::events`] (re-exported
//! here), which the sidecar and the console share.
//!
//! Sinks never hold up a run: a run's [`Trace`] writes through a bounded queue, dropping (and
//! counting) ordinary events when a sink falls behind. Captured text is redacted
//! ([`crate::safety::redact`]) before it is cut. See [`Trace`].

mod hold;
mod http_sink;
mod sink;
mod trace;
mod writer;

pub use hold::{HeldWriter, HoldGuard, MAX_HELD_BYTES, TerminalHold};
pub use http_sink::{
    DEFAULT_FLUSH_TIMEOUT, DEFAULT_MAX_BUFFER_BYTES, Delivery, HttpSink, HttpSinkError,
    HttpSinkOptions,
};
pub use sink::EventSink;
pub use trace::{
    DEFAULT_CONTENT_CAP_BYTES, DEFAULT_SINK_QUEUE, JsonLinesSink, MemorySink, Trace, TraceOptions,
};

pub use orrery_crds::events::{
    CONTENT_CUT_BYTES, CallStatus, DecisionKind, Direction, EVENT_TYPES, EventBody, MAX_EVENTS,
    NodeStatus, Outcome, PrinterOptions, QUOTE_CUT_BYTES, RESERVED_SLOTS, TerminalPrinter,
    TraceEvent, Visible, schema, visible, visible_inline,
};

/// Now, as RFC 3339 UTC with milliseconds (`2026-11-29T23:01:02.345Z`).
pub fn now_rfc3339() -> String {
    format_rfc3339(jiff::Timestamp::now())
}

/// A timestamp as RFC 3339 UTC with milliseconds, truncated (not rounded) to the
/// millisecond: `2026-11-29T23:01:02.345Z`.
///
/// Every trace event carries one, so it is written digit by digit
/// ([`orrery_crds::events::timestamp::format_epoch_millis`]) rather than through jiff's format
/// string, which cost about eight times as much in a profile (`docs/benchmarks.md`, section 7).
/// Times before 1970 go through jiff.
pub fn format_rfc3339(ts: jiff::Timestamp) -> String {
    match u64::try_from(ts.as_millisecond()) {
        Ok(ms) => orrery_crds::events::timestamp::format_epoch_millis(ms),
        Err(_) => ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
    }
}

#[cfg(test)]
mod tests;
