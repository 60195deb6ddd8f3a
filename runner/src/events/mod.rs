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
mod printer;
mod sink;
mod trace;
mod writer;

pub use hold::{HeldWriter, HoldGuard, MAX_HELD_BYTES, TerminalHold};
pub use http_sink::{
    DEFAULT_FLUSH_TIMEOUT, DEFAULT_MAX_BUFFER_BYTES, Delivery, HttpSink, HttpSinkError,
    HttpSinkOptions,
};
pub use printer::{PrinterOptions, TerminalPrinter};
pub use sink::EventSink;
pub use trace::{
    DEFAULT_CONTENT_CAP_BYTES, DEFAULT_SINK_QUEUE, JsonLinesSink, MemorySink, Trace, TraceOptions,
};

pub use orrery_crds::events::{
    CONTENT_CUT_BYTES, CallStatus, DecisionKind, Direction, EVENT_TYPES, EventBody, MAX_EVENTS,
    NodeStatus, Outcome, QUOTE_CUT_BYTES, RESERVED_SLOTS, TraceEvent, Visible, schema, visible,
    visible_inline,
};

/// Now, as RFC 3339 UTC with milliseconds (`2026-11-29T23:01:02.345Z`).
pub fn now_rfc3339() -> String {
    format_rfc3339(jiff::Timestamp::now())
}

/// A timestamp as RFC 3339 UTC with milliseconds, truncated (not rounded) to the
/// millisecond: `2026-11-29T23:01:02.345Z`.
///
/// Every trace event carries one, so it is written digit by digit (the civil date from the
/// day number, Howard Hinnant's `civil_from_days`) rather than through jiff's format string,
/// which cost about eight times as much in a profile (`docs/benchmarks.md`, section 7). Times
/// before 1970 go through jiff.
pub fn format_rfc3339(ts: jiff::Timestamp) -> String {
    const MS_PER_DAY: i64 = 86_400_000;
    let ms = ts.as_millisecond();
    if ms < 0 {
        return ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    }
    let (days, in_day) = (ms / MS_PER_DAY, ms % MS_PER_DAY);
    // jiff's years end at 9999, so four digits hold every year.
    let (year, month, day) = civil_from_days(days);
    let (hour, minute) = (in_day / 3_600_000, in_day / 60_000 % 60);
    let (second, milli) = (in_day / 1000 % 60, in_day % 1000);
    let mut out = [0u8; 24];
    let mut put = |at: usize, value: i64, width: usize| {
        let mut v = value;
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, hour, 2);
    put(14, minute, 2);
    put(17, second, 2);
    put(20, milli, 3);
    for (at, sep) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
    ] {
        out[at] = sep;
    }
    out[23] = b'Z';
    out.iter().map(|&b| char::from(b)).collect()
}

/// The proleptic Gregorian (year, month, day) of a day number counted from 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests;
