//! [`HttpSink`]: a run's trace events to the sidecar, over the ingest contract of
//! [`orrery_crds::events::ingest`] (POST [`ingest_path`], `Authorization: Bearer <run token>`,
//! batches of consecutive events).
//!
//! - [`EventSink::emit`] never waits for the network: it serialises the event once and appends
//!   it to an in-memory buffer, then wakes the sender.
//! - The sender posts batches in `seq` order, one in flight at a time: what waits when it wakes
//!   (after a short linger), up to [`MAX_BATCH_EVENTS`] and [`MAX_BATCH_BYTES`]. It follows the
//!   contract's table: 200 moves on from the reply's `lastSeq`; 409 resends from `expected`; 413
//!   halves the batch; 429 waits `Retry-After`; 5xx and transport errors retry with exponential
//!   backoff and full jitter; 401/403 stop sending; 400 drops the batch. Each of the last three
//!   is said once on standard error.
//! - The buffer keeps every event, acknowledged or not, within a byte bound
//!   ([`HttpSinkOptions::max_buffer_bytes`]) and an event bound (a run's [`MAX_EVENTS`]): an
//!   event is let go only once a 200 says the sidecar holds it, so a lost reply or a sidecar
//!   restart loses nothing (the sidecar stores by `(runId, seq)`: a replay stores nothing twice),
//!   and a sidecar that lost acknowledged events can be refilled on its 409. Past a bound the
//!   acknowledged events go first, then the oldest unacknowledged ordinary ones (counted in
//!   [`HttpSink::dropped`]); reserved events (`budget.hit`, approval events, `run.end`) never.
//!   The sidecar stores without gaps, so once an unacknowledged event is dropped the events
//!   after it cannot be stored: the sink says so when the sidecar asks for it, and stops.
//! - [`EventSink::flush`] blocks the writer thread until every event is acknowledged, sending
//!   stopped, or [`HttpSinkOptions::flush_timeout`] passed; [`HttpSink::wait`] is the same wait
//!   for async code (`orrery run --plan` waits with it, after writing the summary, before its
//!   runtime shuts down). Both share one deadline, counted from the first wait since the sink
//!   last had everything acknowledged; giving up writes one line on standard error saying how
//!   many events were not delivered and the last error.
//!
//! The client is the runner's one [`SidecarClient`] (no proxy, no redirects, no network guard:
//! the sidecar's URL is the operator's, not a user's; the token is never printed nor put in an
//! error).

use super::{EventSink, MAX_EVENTS, TraceEvent};
use crate::sidecar_client::{
    SidecarClient, SidecarClientError, api_message, backoff_ceiling, error_chain, full_jitter,
    read_reply, retry_after,
};
use orrery_crds::events::ingest::{
    ApiError, IngestReply, MAX_BATCH_BYTES, MAX_BATCH_EVENTS, ingest_path,
};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a flush waits for the sidecar, by default.
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(30);
/// The buffer's byte bound, by default.
pub const DEFAULT_MAX_BUFFER_BYTES: usize = 8 * 1024 * 1024;

/// How an [`HttpSink`] buffers, sends and waits.
#[derive(Clone, Debug)]
pub struct HttpSinkOptions {
    /// How long a flush (or [`HttpSink::wait`]) waits for every event to be acknowledged.
    pub flush_timeout: Duration,
    /// Bytes of serialised events the buffer keeps; past it events are let go (see the module).
    pub max_buffer_bytes: usize,
    /// Events the buffer keeps (a run's cap: nothing is let go for one run).
    pub max_buffer_events: usize,
    /// How long the sender waits after waking, to batch what follows.
    pub linger: Duration,
    /// The connect timeout.
    pub connect_timeout: Duration,
    /// The timeout of one request, reply included.
    pub request_timeout: Duration,
    /// The first retry's backoff ceiling; doubles on every failure.
    pub backoff_base: Duration,
    /// The largest backoff ceiling.
    pub backoff_max: Duration,
    /// The longest `Retry-After` honoured.
    pub max_retry_after: Duration,
}

impl Default for HttpSinkOptions {
    /// 30 s flush, 8 MiB and 2000 events, 20 ms linger, 5 s connect, 10 s request, backoff
    /// 100 ms doubling to 5 s, `Retry-After` up to 60 s.
    fn default() -> Self {
        HttpSinkOptions {
            flush_timeout: DEFAULT_FLUSH_TIMEOUT,
            max_buffer_bytes: DEFAULT_MAX_BUFFER_BYTES,
            max_buffer_events: usize::try_from(MAX_EVENTS).unwrap_or(usize::MAX),
            linger: Duration::from_millis(20),
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            backoff_base: Duration::from_millis(100),
            backoff_max: Duration::from_secs(5),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// Why an [`HttpSink`] cannot be made: the sidecar URL, the run UID or the token cannot be
/// used, or the client cannot be built.
pub type HttpSinkError = SidecarClientError;

/// Whether every event reached the sidecar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// The sidecar acknowledged every event emitted so far.
    Complete,
    /// Some events did not reach it.
    Incomplete {
        /// How many.
        undelivered: u64,
        /// Why: why sending stopped, or the last error.
        reason: String,
    },
}

impl std::fmt::Display for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Delivery::Complete => write!(f, "every trace event reached the sidecar"),
            Delivery::Incomplete {
                undelivered,
                reason,
            } => write!(
                f,
                "{undelivered} trace events were not delivered to the sidecar: {reason}"
            ),
        }
    }
}

/// One serialised event.
struct Held {
    seq: u64,
    reserved: bool,
    json: Box<[u8]>,
}

#[derive(Default)]
struct State {
    /// Events by `seq` (with gaps where some were let go), acknowledged ones first.
    held: VecDeque<Held>,
    bytes: usize,
    /// The next `seq` the sidecar needs: it holds everything before it, by its last word.
    next: u64,
    /// The last `seq` emitted.
    last_emitted: u64,
    /// The last `seq` of the batch in flight (0: none); not let go while in flight.
    in_flight_last: u64,
    dropped: u64,
    /// Why sending stopped for good.
    stopped: Option<String>,
    last_error: Option<String>,
    /// When the current wait gives up.
    deadline: Option<Instant>,
    /// The sink is gone: the sender ends once everything is sent or the deadline passed.
    closed: bool,
    /// The give-up note was written.
    noted: bool,
    /// The note on a refused batch was written.
    refusal_noted: bool,
}

impl State {
    fn complete(&self) -> bool {
        self.next > self.last_emitted
    }

    /// Events are missing and none at or after `next` is held: every one of them was let go
    /// at the buffer bound, and nothing can be sent until a later event comes.
    fn stuck(&self) -> bool {
        !self.complete() && self.index_of(self.next) == self.held.len()
    }

    fn settled(&self) -> bool {
        self.complete() || self.stopped.is_some() || self.stuck()
    }

    fn delivery(&self, endpoint: &str) -> Delivery {
        if self.complete() {
            return Delivery::Complete;
        }
        let reason = match (&self.stopped, &self.last_error) {
            (Some(stopped), _) => stopped.clone(),
            (None, _) if self.stuck() => format!(
                "{} events were let go at the buffer bound while the sidecar had not acknowledged them",
                self.dropped
            ),
            (None, Some(error)) => error.clone(),
            (None, None) => format!("the sidecar at {endpoint} had not acknowledged them yet"),
        };
        Delivery::Incomplete {
            undelivered: self.last_emitted + 1 - self.next.max(1),
            reason,
        }
    }

    fn index_of(&self, seq: u64) -> usize {
        self.held.partition_point(|h| h.seq < seq)
    }

    /// Lets go of held events while over a bound: acknowledged ones first, then the oldest
    /// unacknowledged ordinary ones not in flight (counted); never reserved ones.
    fn enforce(&mut self, max_bytes: usize, max_events: usize) {
        let over = |s: &State| s.bytes > max_bytes || s.held.len() > max_events;
        while over(self)
            && let Some(front) = self.held.front()
            && front.seq < self.next
        {
            self.remove(0);
        }
        let floor = self.next.max(self.in_flight_last + 1);
        let mut at = self.index_of(floor);
        while over(self) && at < self.held.len() {
            if self.held[at].reserved {
                at += 1;
            } else {
                self.remove(at);
                self.dropped += 1;
            }
        }
    }

    fn remove(&mut self, at: usize) {
        if let Some(h) = self.held.remove(at) {
            self.bytes -= h.json.len();
        }
    }

    /// The next batch: consecutive held events from `next`, within the limits (one event at
    /// least, whatever its size: the sidecar says 413 if it is too big).
    fn batch(&mut self, limit: usize) -> Option<Batch> {
        let start = self.index_of(self.next);
        let first = self.held.get(start)?.seq;
        let mut body = Vec::with_capacity(1024);
        body.extend_from_slice(b"{\"events\":[");
        let mut last = first;
        let mut count = 0;
        for h in self.held.range(start..) {
            if count > 0
                && (count >= limit
                    || h.seq != last + 1
                    || body.len() + 1 + h.json.len() + 2 > MAX_BATCH_BYTES)
            {
                break;
            }
            if count > 0 {
                body.push(b',');
            }
            body.extend_from_slice(&h.json);
            last = h.seq;
            count += 1;
        }
        body.extend_from_slice(b"]}");
        self.in_flight_last = last;
        Some(Batch {
            first,
            last,
            count,
            body,
        })
    }
}

struct Batch {
    first: u64,
    last: u64,
    count: usize,
    body: Vec<u8>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the sender (a permit is kept when it is busy).
    wake: tokio::sync::Notify,
    /// Wakes [`EventSink::flush`].
    changed: Condvar,
    /// Wakes [`HttpSink::wait`].
    changed_async: tokio::sync::Notify,
    options: HttpSinkOptions,
    /// The ingest URL, for notes.
    endpoint: String,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes every waiter; clears the deadline once everything is acknowledged.
    fn signal(&self, state: &mut State) {
        if state.complete() {
            state.deadline = None;
        }
        self.changed.notify_all();
        self.changed_async.notify_waiters();
    }

    fn stop(&self, reason: String) {
        let mut state = self.lock();
        if state.stopped.is_none() {
            tracing::warn!("{reason}; no more trace events are sent to it");
            state.stopped = Some(reason);
        }
        self.signal(&mut state);
    }

    /// The deadline of a wait starting now: the current one, or a fresh one when the sink has
    /// caught up since.
    fn deadline(&self, state: &mut State) -> Instant {
        if state.complete() {
            state.deadline = None;
        }
        *state
            .deadline
            .get_or_insert_with(|| Instant::now() + self.options.flush_timeout)
    }

    /// Ends a wait: the note, once, when events did not get through.
    fn settle(&self, state: &mut State) -> Delivery {
        let delivery = state.delivery(&self.endpoint);
        if delivery != Delivery::Complete && !state.noted {
            state.noted = true;
            tracing::warn!("{delivery}");
        }
        delivery
    }
}

/// Marks sending stopped when the sender ends, however it ends (its runtime shut down, or the
/// future dropped before it ran), so no wait outlives it.
struct SenderGone(Arc<Shared>);

impl Drop for SenderGone {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        if state.stopped.is_none() {
            state.stopped = Some("the runner stopped sending before the sidecar had them".into());
        }
        self.0.signal(&mut state);
    }
}

/// An [`EventSink`] posting a run's events to the sidecar (see the module).
///
/// The sender is a task on the runtime whose [`tokio::runtime::Handle`] is given to
/// [`HttpSink::new`], not a thread of its own: it spends its life waiting on the network and on
/// timers, which a task does for a few hundred bytes where a thread costs a stack, and the run
/// already has a runtime (a later change minimises a runner's threads and RSS). Nothing in it
/// blocks: the buffer's lock is held only to copy bytes.
pub struct HttpSink {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for HttpSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSink")
            .field("endpoint", &self.shared.endpoint)
            .finish_non_exhaustive()
    }
}

impl HttpSink {
    /// A sink posting run `run_uid`'s events to the sidecar at `sidecar_url` with `token`,
    /// its sender spawned on `runtime`.
    pub fn new(
        sidecar_url: &str,
        run_uid: &str,
        token: &str,
        options: HttpSinkOptions,
        runtime: &tokio::runtime::Handle,
    ) -> Result<HttpSink, HttpSinkError> {
        let client = SidecarClient::new(
            sidecar_url,
            run_uid,
            token,
            options.connect_timeout,
            options.request_timeout,
        )?;
        let url = client.url(&ingest_path(run_uid))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                next: 1,
                ..State::default()
            }),
            wake: tokio::sync::Notify::new(),
            changed: Condvar::new(),
            changed_async: tokio::sync::Notify::new(),
            options,
            endpoint: url.to_string(),
        });
        let sender = Sender {
            shared: shared.clone(),
            client,
            url,
        };
        let gone = SenderGone(shared.clone());
        runtime.spawn(async move {
            let _gone = gone;
            sender.run().await;
        });
        Ok(HttpSink { shared })
    }

    /// Ordinary events let go, unacknowledged, because the buffer was over a bound.
    pub fn dropped(&self) -> u64 {
        self.shared.lock().dropped
    }

    /// Whether every event emitted so far reached the sidecar, and if not how many and why.
    pub fn delivery(&self) -> Delivery {
        self.shared.lock().delivery(&self.shared.endpoint)
    }

    /// Waits, without blocking the runtime, until every event emitted so far is acknowledged,
    /// sending stopped, or the flush deadline passed (the same deadline [`EventSink::flush`]
    /// keeps). Writes the note on standard error when events did not get through.
    pub async fn wait(&self) -> Delivery {
        let deadline = {
            let mut state = self.shared.lock();
            self.shared.deadline(&mut state)
        };
        loop {
            let changed = self.shared.changed_async.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.shared.lock().settled() {
                break;
            }
            let until = tokio::time::Instant::from_std(deadline);
            if tokio::time::timeout_at(until, changed).await.is_err() {
                break;
            }
        }
        let mut state = self.shared.lock();
        self.shared.settle(&mut state)
    }
}

impl Drop for HttpSink {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.closed = true;
        self.shared.deadline(&mut state);
        drop(state);
        self.shared.wake.notify_one();
    }
}

impl EventSink for HttpSink {
    fn emit(&self, event: &TraceEvent) {
        // A trace event is plain data: it always serialises.
        let Ok(json) = serde_json::to_vec(event) else {
            return;
        };
        let mut state = self.shared.lock();
        // Events come in `seq` order (the trait's promise); one that does not is not a trace's.
        if event.seq <= state.last_emitted {
            return;
        }
        if state.stopped.is_some() {
            state.last_emitted = event.seq;
            return;
        }
        state.bytes += json.len();
        state.held.push_back(Held {
            seq: event.seq,
            reserved: event.body.is_reserved(),
            json: json.into_boxed_slice(),
        });
        state.last_emitted = event.seq;
        let options = &self.shared.options;
        state.enforce(options.max_buffer_bytes, options.max_buffer_events);
        drop(state);
        self.shared.wake.notify_one();
    }

    fn flush(&self) {
        let mut state = self.shared.lock();
        let deadline = self.shared.deadline(&mut state);
        while !state.settled() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        self.shared.settle(&mut state);
    }
}

/// What the sender does after a reply.
enum Next {
    /// Send the next batch now.
    Go,
    /// A failure: back off, then retry.
    Retry(String),
    /// Wait this long (429), then retry.
    After(Duration),
    /// Sending stopped.
    Stop,
}

struct Sender {
    shared: Arc<Shared>,
    client: SidecarClient,
    url: reqwest::Url,
}

impl Sender {
    async fn run(self) {
        let options = self.shared.options.clone();
        let mut failures: u32 = 0;
        let mut limit = MAX_BATCH_EVENTS;
        loop {
            let mut woke = false;
            loop {
                let ready = {
                    let state = self.shared.lock();
                    let past = state.deadline.is_some_and(|d| Instant::now() >= d);
                    if state.stopped.is_some() || (state.closed && (state.complete() || past)) {
                        return;
                    }
                    state.index_of(state.next) < state.held.len()
                };
                if ready {
                    break;
                }
                self.shared.wake.notified().await;
                woke = true;
            }
            if woke && !options.linger.is_zero() {
                tokio::time::sleep(options.linger).await;
            }
            let batch = self.shared.lock().batch(limit);
            let Some(batch) = batch else {
                continue;
            };
            let next = self.post(&batch, &mut limit).await;
            {
                let mut state = self.shared.lock();
                state.in_flight_last = 0;
                if let Next::Retry(reason) = &next {
                    state.last_error = Some(reason.clone());
                }
                self.shared.signal(&mut state);
            }
            match next {
                Next::Go => failures = 0,
                Next::Retry(_) => {
                    failures = failures.saturating_add(1);
                    let ceiling =
                        backoff_ceiling(options.backoff_base, options.backoff_max, failures);
                    tokio::time::sleep(full_jitter(ceiling)).await;
                }
                Next::After(wait) => tokio::time::sleep(wait).await,
                Next::Stop => return,
            }
        }
    }

    /// Posts one batch and applies the reply.
    async fn post(&self, batch: &Batch, limit: &mut usize) -> Next {
        let endpoint = &self.shared.endpoint;
        let sent = self
            .client
            .post_json(self.url.clone(), batch.body.clone())
            .send()
            .await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                return Next::Retry(format!(
                    "cannot reach the sidecar at {endpoint}: {}",
                    error_chain(e)
                ));
            }
        };
        let status = response.status();
        let retry_after = retry_after(&response);
        let body = read_reply(response).await;
        let seqs = format!("events {}–{}", batch.first, batch.last);
        match status.as_u16() {
            200..=299 => {
                let reply = match body.map(|b| serde_json::from_slice::<IngestReply>(&b)) {
                    Ok(Ok(reply)) => reply,
                    Ok(Err(_)) => {
                        return Next::Retry(format!(
                            "the sidecar at {endpoint} answered HTTP {status} without an ingest reply"
                        ));
                    }
                    Err(e) => return Next::Retry(format!("the sidecar at {endpoint}: {e}")),
                };
                let mut state = self.shared.lock();
                state.next = reply.last_seq + 1;
                if state.next <= batch.first {
                    return Next::Retry(format!(
                        "the sidecar at {endpoint} took {seqs} but holds this run's events only up to seq {}",
                        reply.last_seq
                    ));
                }
                *limit = (*limit * 2).min(MAX_BATCH_EVENTS);
                Next::Go
            }
            400 => {
                self.refuse(batch, &format!("{seqs}: {}", api_message(status, &body)));
                Next::Go
            }
            401 | 403 => {
                self.shared.stop(format!(
                    "the sidecar at {endpoint} refused this run's token ({})",
                    api_message(status, &body)
                ));
                Next::Stop
            }
            409 => {
                let Some(expected) = body
                    .ok()
                    .and_then(|b| serde_json::from_slice::<ApiError>(&b).ok())
                    .and_then(|e| e.expected)
                else {
                    return Next::Retry(format!(
                        "the sidecar at {endpoint} answered HTTP 409 without the seq it expects"
                    ));
                };
                let mut state = self.shared.lock();
                let at = state.index_of(expected);
                let held = state.held.get(at).is_some_and(|h| h.seq == expected);
                if !held && expected <= state.last_emitted {
                    drop(state);
                    self.shared.stop(format!(
                        "the sidecar at {endpoint} needs this run's events from seq {expected}, which this runner no longer holds (let go at the buffer bound, or refused): the trace from seq {expected} on cannot be stored"
                    ));
                    return Next::Stop;
                }
                let progress = expected != batch.first;
                state.next = expected;
                if progress {
                    Next::Go
                } else {
                    Next::Retry(format!(
                        "the sidecar at {endpoint} answered HTTP 409 asking for seq {expected}, where the batch started"
                    ))
                }
            }
            413 if batch.count > 1 => {
                *limit = (batch.count / 2).max(1);
                Next::Go
            }
            413 => {
                self.refuse(batch, &format!("{seqs}: {}", api_message(status, &body)));
                Next::Go
            }
            429 => {
                let secs = retry_after.unwrap_or(1);
                Next::After(Duration::from_secs(secs).min(self.shared.options.max_retry_after))
            }
            _ => Next::Retry(format!(
                "the sidecar at {endpoint} answered {}",
                api_message(status, &body)
            )),
        }
    }

    /// A batch the sidecar will never take (400, or one event over 413): let go, said once.
    fn refuse(&self, batch: &Batch, why: &str) {
        let mut state = self.shared.lock();
        let from = state.index_of(batch.first);
        let to = state.index_of(batch.last + 1);
        for at in (from..to).rev() {
            state.remove(at);
        }
        state.next = batch.last + 1;
        state.last_error = Some(format!(
            "the sidecar at {} refused {why}",
            self.shared.endpoint
        ));
        if !std::mem::replace(&mut state.refusal_noted, true) {
            tracing::warn!(
                "the sidecar at {} refused {why}; the batch was dropped: it cannot succeed",
                self.shared.endpoint
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_ingest_url_is_the_sidecars_with_the_runs_path_and_bad_ones_are_named() {
        let sink = |url: &str, uid: &str| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            HttpSink::new(url, uid, "t", HttpSinkOptions::default(), runtime.handle())
                .map(|sink| sink.shared.endpoint.clone())
        };
        assert_eq!(
            sink("http://orrery-sidecar.orrery-system.svc:8080", "u-1").unwrap(),
            "http://orrery-sidecar.orrery-system.svc:8080/internal/v1/runs/u-1/events"
        );
        for bad in ["ftp://x", "not a url", "unix:/run/sock"] {
            let e = sink(bad, "u-1").unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("http://"), "{e}");
        }
        for uid in ["", "a/b", "..", "a?b"] {
            assert!(matches!(
                sink("http://x", uid),
                Err(HttpSinkError::RunUid { .. })
            ));
        }
    }
}
