//! The per-run event recorder ([`Trace`]) and two sinks of its own: [`MemorySink`] and
//! [`JsonLinesSink`] (the sink trait is [`super::EventSink`]).
//!
//! Sinks never hold up a run: [`Trace::buffered`] hands events to a writer thread through a
//! bounded queue. When the queue is full (a sink is slow or blocked) ordinary events are dropped
//! and counted, while the reserved ones (`budget.hit`, approval events, `run.end`) always queue;
//! [`Trace::drain`] waits (bounded) until the sinks have everything. [`Trace::new`] delivers
//! inline, for in-memory sinks (tests, tools exercised alone).

use super::writer::{Delivery, Pending, Queue};
use super::{
    CONTENT_CUT_BYTES, EventBody, EventSink, MAX_EVENTS, QUOTE_CUT_BYTES, RESERVED_SLOTS,
    TraceEvent,
};
use crate::safety::cut_to;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Content a run may capture in all, by default.
pub const DEFAULT_CONTENT_CAP_BYTES: usize = 256 * 1024;
/// Ordinary events that may wait for slow sinks before new ones are dropped, by default.
pub const DEFAULT_SINK_QUEUE: usize = 1024;

/// How a run's trace is recorded.
#[derive(Clone, Debug)]
pub struct TraceOptions {
    /// The run's id.
    pub run_id: String,
    /// Record (redacted, cut) arguments, results and text.
    pub capture_content: bool,
    /// Content the run may capture in all; later events carry none.
    pub content_cap_bytes: usize,
    /// Events the run may emit in all (the last [`RESERVED_SLOTS`] only for reserved events).
    pub max_events: u64,
    /// How captured text is redacted (`ORRERY_REDACT_IPS` adds IP addresses, rule 8.8).
    pub redact: crate::safety::RedactOptions,
}

impl TraceOptions {
    /// Defaults for a run id: no capture, 256 KiB content cap, 2000 events.
    pub fn new(run_id: impl Into<String>) -> Self {
        TraceOptions {
            run_id: run_id.into(),
            capture_content: false,
            content_cap_bytes: DEFAULT_CONTENT_CAP_BYTES,
            max_events: MAX_EVENTS,
            redact: crate::safety::RedactOptions::default(),
        }
    }
}

#[derive(Debug, Default)]
struct TraceState {
    emitted: u64,
    dropped: u64,
    content_used: usize,
    /// `run.end` went out: nothing follows it.
    closed: bool,
}

struct TraceInner {
    options: TraceOptions,
    delivery: Delivery,
    state: Mutex<TraceState>,
}

/// The recorder of one run's events: numbers them, stamps them, enforces the event cap (with
/// reserved slots) and the content rules, and hands them to the sinks in order. Cheap to clone.
#[derive(Clone)]
pub struct Trace {
    inner: Arc<TraceInner>,
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace")
            .field("run_id", &self.inner.options.run_id)
            .finish_non_exhaustive()
    }
}

impl Trace {
    /// A recorder calling `sinks` inline, in the emitter's thread: for sinks that never block
    /// (memory). A run uses [`Trace::buffered`].
    pub fn new(options: TraceOptions, sinks: Vec<Arc<dyn EventSink>>) -> Self {
        Trace::with_delivery(options, Delivery::Inline(sinks))
    }

    /// A recorder whose sinks run on their own writer thread behind a queue of at most
    /// `capacity` ordinary events, so a slow or blocked sink never holds up the run: past the
    /// capacity ordinary events are dropped (and counted in `dropped`); reserved events always
    /// queue. Call [`Trace::drain`] after `run.end`. Falls back to inline delivery if no thread
    /// can be started.
    pub fn buffered(
        options: TraceOptions,
        sinks: Vec<Arc<dyn EventSink>>,
        capacity: usize,
    ) -> Self {
        let delivery = Queue::start(sinks, capacity, &options.run_id);
        Trace::with_delivery(options, delivery)
    }

    fn with_delivery(options: TraceOptions, delivery: Delivery) -> Self {
        Trace {
            inner: Arc::new(TraceInner {
                options,
                delivery,
                state: Mutex::new(TraceState::default()),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TraceState> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.inner.options.run_id
    }

    /// Whether content is captured.
    pub fn captures_content(&self) -> bool {
        self.inner.options.capture_content
    }

    /// Emits one event. Returns false when it was dropped: past the cap, with the sinks' queue
    /// full (ordinary events only), or after `run.end` (which is always the last event).
    pub fn emit(&self, body: EventBody) -> bool {
        let mut state = self.lock();
        if state.closed {
            return false;
        }
        let reserved = body.is_reserved();
        let max = self.inner.options.max_events;
        let room = if reserved {
            max
        } else {
            max.saturating_sub(RESERVED_SLOTS)
        };
        if state.emitted >= room || (!reserved && self.inner.delivery.is_full()) {
            state.dropped += 1;
            return false;
        }
        state.emitted += 1;
        state.closed = matches!(body, EventBody::RunEnd { .. });
        let event = Pending {
            seq: state.emitted,
            ts: jiff::Timestamp::now(),
            body,
            reserved,
        };
        // Delivered (or queued) under the lock so every sink sees events in `seq` order.
        self.inner
            .delivery
            .deliver(event, &self.inner.options.run_id);
        true
    }

    /// Flushes every sink (queued behind the events already emitted, for a buffered trace).
    pub fn flush(&self) {
        self.inner.delivery.flush();
    }

    /// Waits until the sinks have every event emitted so far and have flushed, for at most
    /// `timeout`. True when they have (always, for an inline trace).
    pub async fn drain(&self, timeout: Duration) -> bool {
        self.inner.delivery.drain(timeout).await
    }

    /// Events emitted so far.
    pub fn emitted(&self) -> u64 {
        self.lock().emitted
    }

    /// Events dropped so far.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// Text for a content field: `None` unless capture is on and the run's content cap has
    /// room; then redacted and cut to [`CONTENT_CUT_BYTES`].
    pub fn content(&self, text: &str) -> Option<String> {
        self.content_cut(text, CONTENT_CUT_BYTES)
    }

    /// How an error names model-written text (an unknown label, an invented tool name): with
    /// capture on, the text redacted and cut to [`QUOTE_CUT_BYTES`], in quotes; otherwise only
    /// its size. Never the raw text.
    pub fn quote(&self, text: &str) -> String {
        match self.content_cut(text, QUOTE_CUT_BYTES) {
            Some(cut) => format!("'{cut}'"),
            None => format!(
                "({} characters, not recorded without content capture)",
                text.chars().count()
            ),
        }
    }

    /// Like [`Trace::content`], cut to `max` bytes.
    fn content_cut(&self, text: &str, max: usize) -> Option<String> {
        if !self.inner.options.capture_content {
            return None;
        }
        let cut = cut_to(
            &crate::safety::redact_with(text, self.inner.options.redact),
            max,
        );
        let mut state = self.lock();
        let left = self
            .inner
            .options
            .content_cap_bytes
            .saturating_sub(state.content_used);
        if cut.len() > left {
            // Mark the cap as reached so later (smaller) fields do not slip in out of order.
            state.content_used = self.inner.options.content_cap_bytes;
            return None;
        }
        state.content_used += cut.len();
        Some(cut)
    }
}

/// Keeps every event in memory (tests, the run result).
#[derive(Debug, Default)]
pub struct MemorySink {
    events: Mutex<Vec<TraceEvent>>,
}

impl MemorySink {
    /// An empty collector.
    pub fn new() -> Self {
        MemorySink::default()
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<TraceEvent> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The `type` of every event so far, in order.
    pub fn types(&self) -> Vec<&'static str> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(TraceEvent::kind)
            .collect()
    }
}

impl EventSink for MemorySink {
    fn emit(&self, event: &TraceEvent) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
    }
}

/// Writes one JSON object per line (`--output json`).
pub struct JsonLinesSink {
    out: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for JsonLinesSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonLinesSink").finish_non_exhaustive()
    }
}

impl JsonLinesSink {
    /// Lines to standard output.
    pub fn stdout() -> Self {
        JsonLinesSink::new(Box::new(std::io::stdout()))
    }

    /// Lines to any writer.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        JsonLinesSink {
            out: Mutex::new(out),
        }
    }
}

impl EventSink for JsonLinesSink {
    fn emit(&self, event: &TraceEvent) {
        let Ok(line) = serde_json::to_string(event) else {
            return;
        };
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        // A closed pipe (e.g. `| head`) must not stop the run: the trace is best effort here.
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    fn flush(&self) {
        let _ = self.out.lock().unwrap_or_else(|e| e.into_inner()).flush();
    }
}
