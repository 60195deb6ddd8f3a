//! The runner's sink to the sidecar (`orrery_runner::events::HttpSink`) against a test sidecar
//! that keeps the ingest contract (`orrery_crds::events::ingest`) with an in-memory store keyed
//! by `seq`: order, no gaps, nothing stored twice, across 503s, cut connections, 429s, a
//! restart, a 409, a 413, a refused token, a sidecar that is not there, and the byte bound.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use orrery_crds::BudgetKey;
use orrery_crds::events::ingest::{
    ApiError, EventBatch, INGEST_ROUTE, IngestReply, MAX_BATCH_BYTES, MAX_BATCH_EVENTS,
};
use orrery_crds::run::RunTotals;
use orrery_runner::events::{
    Delivery, EventBody, EventSink, HttpSink, HttpSinkOptions, MAX_EVENTS, Outcome, Trace,
    TraceEvent, TraceOptions,
};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const RUN: &str = "uid-sink-1";
const TOKEN: &str = "run-token.for-this-run";

/// What the test sidecar does with the next request, before the contract.
#[derive(Clone, Copy, Debug)]
enum Act {
    /// Answer with this status, storing nothing.
    Status(u16),
    /// 429 with `Retry-After` seconds.
    RetryAfter(u64),
    /// Store the batch, then cut the connection instead of replying (a lost reply).
    LoseReply,
}

#[derive(Default)]
struct Store {
    /// Stored events by seq.
    events: BTreeMap<u64, TraceEvent>,
    /// Every seq in the order it was stored (a seq stored twice would show twice).
    stored: Vec<u64>,
    duplicates: u64,
    requests: u64,
    /// Replies by status.
    replies: BTreeMap<u16, u64>,
    /// The first and last seq of every batch received.
    batches: Vec<(u64, u64)>,
    /// Replies to play before the contract, one per request.
    script: VecDeque<Act>,
    /// Answer 503 to everything while set.
    unavailable: bool,
    /// 413 for batches of more events than this.
    max_batch_events: usize,
    /// Store batches past a gap too (to see what a sink that let events go still sends).
    lenient: bool,
}

impl Store {
    fn new() -> Arc<Mutex<Store>> {
        Arc::new(Mutex::new(Store {
            max_batch_events: MAX_BATCH_EVENTS,
            ..Store::default()
        }))
    }

    /// The last seq held with none missing before it.
    fn last_seq(&self) -> u64 {
        let mut last = 0;
        while self.events.contains_key(&(last + 1)) {
            last += 1;
        }
        last
    }
}

fn problem(status: StatusCode, code: &str, expected: Option<u64>) -> Response {
    let body = ApiError {
        loc: Vec::new(),
        code: code.into(),
        message: format!("test sidecar: {code}"),
        expected,
    };
    (status, axum::Json(body)).into_response()
}

async fn ingest(
    State(store): State<Arc<Mutex<Store>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (status, response) = answer(&store, &headers, &body);
    *store.lock().unwrap().replies.entry(status).or_default() += 1;
    response
}

fn answer(store: &Mutex<Store>, headers: &HeaderMap, body: &[u8]) -> (u16, Response) {
    let mut s = store.lock().unwrap();
    s.requests += 1;
    if s.unavailable {
        return (
            503,
            problem(StatusCode::SERVICE_UNAVAILABLE, "unavailable", None),
        );
    }
    let act = s.script.pop_front();
    match act {
        Some(Act::Status(code)) => {
            let status = StatusCode::from_u16(code).unwrap();
            return (code, problem(status, "scripted", None));
        }
        Some(Act::RetryAfter(secs)) => {
            let mut r = problem(StatusCode::TOO_MANY_REQUESTS, "busy", None);
            r.headers_mut()
                .insert(header::RETRY_AFTER, secs.to_string().parse().unwrap());
            return (429, r);
        }
        Some(Act::LoseReply) | None => {}
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if bearer != Some(&format!("Bearer {TOKEN}")) {
        return (
            401,
            problem(StatusCode::UNAUTHORIZED, "unauthenticated", None),
        );
    }
    if body.len() > MAX_BATCH_BYTES {
        return (
            413,
            problem(StatusCode::PAYLOAD_TOO_LARGE, "too-large", None),
        );
    }
    let Ok(batch) = serde_json::from_slice::<EventBatch>(body) else {
        return (400, problem(StatusCode::BAD_REQUEST, "invalid", None));
    };
    if batch.events.len() > s.max_batch_events {
        return (
            413,
            problem(StatusCode::PAYLOAD_TOO_LARGE, "too-large", None),
        );
    }
    let Ok((first, last)) = batch.check(RUN) else {
        return (400, problem(StatusCode::BAD_REQUEST, "invalid", None));
    };
    s.batches.push((first, last));
    let expected = s.last_seq() + 1;
    if first > expected && !s.lenient {
        return (409, problem(StatusCode::CONFLICT, "gap", Some(expected)));
    }
    let mut stored = 0;
    let mut duplicates = 0;
    for event in batch.events {
        if s.events.contains_key(&event.seq) {
            duplicates += 1;
        } else {
            s.stored.push(event.seq);
            s.events.insert(event.seq, event);
            stored += 1;
        }
    }
    s.duplicates += duplicates;
    let last_seq = if s.lenient { last } else { s.last_seq() };
    if matches!(act, Some(Act::LoseReply)) {
        let cut = futures::stream::once(async {
            Err::<Bytes, std::io::Error>(std::io::Error::other("the test sidecar cut the reply"))
        });
        return (200, Response::new(Body::from_stream(cut)));
    }
    let reply = IngestReply {
        stored,
        duplicates,
        last_seq,
    };
    (200, axum::Json(reply).into_response())
}

/// A test sidecar on a runtime of its own, so stopping it closes every connection, as a
/// restarted sidecar does.
struct Sidecar {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sidecar {
    fn start(store: Arc<Mutex<Store>>, port: u16) -> Sidecar {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                    .await
                    .expect("the test sidecar binds");
                ready_tx.send(listener.local_addr().unwrap()).unwrap();
                let app = Router::new()
                    .route(INGEST_ROUTE, post(ingest))
                    .with_state(store);
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime ends every connection task.
            drop(runtime);
        });
        let addr = ready_rx.recv().expect("the test sidecar starts");
        Sidecar {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Options for tests: short backoff, a long flush (a test that waits gives up on its own).
fn options() -> HttpSinkOptions {
    HttpSinkOptions {
        flush_timeout: Duration::from_secs(120),
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(50),
        request_timeout: Duration::from_secs(5),
        ..HttpSinkOptions::default()
    }
}

fn sink(url: &str, token: &str, options: HttpSinkOptions) -> Arc<HttpSink> {
    Arc::new(
        HttpSink::new(url, RUN, token, options, &tokio::runtime::Handle::current())
            .expect("the sink is made"),
    )
}

fn node_enter(seq: u64) -> EventBody {
    EventBody::NodeEnter {
        node_id: format!("node-{seq}"),
        kind: "LLMAgent".into(),
        entry: seq,
        depth: 0,
        parent_entry: None,
        model: None,
        input_size: 0,
        screen_flags: Vec::new(),
        input: None,
    }
}

fn budget_hit() -> EventBody {
    EventBody::BudgetHit {
        budget: BudgetKey::Tokens,
        limit: 10,
        used: 11,
        node_id: None,
    }
}

fn run_end() -> EventBody {
    EventBody::RunEnd {
        outcome: Outcome::Succeeded,
        totals: RunTotals::default(),
        error: None,
        dropped: 0,
        output_size: 0,
        output: None,
    }
}

fn event(seq: u64, body: EventBody) -> TraceEvent {
    TraceEvent {
        seq,
        run_id: RUN.into(),
        ts: "2026-12-02T00:00:00.000Z".into(),
        body,
    }
}

/// Emits ordinary events `from..=to` into `sink`, as the writer thread does.
fn emit_range(sink: &HttpSink, from: u64, to: u64) {
    for seq in from..=to {
        sink.emit(&event(seq, node_enter(seq)));
    }
}

/// Waits for the sink (at most a minute, whatever its own deadline).
async fn wait(sink: &HttpSink) -> Delivery {
    tokio::time::timeout(Duration::from_secs(60), sink.wait())
        .await
        .expect("the sink's wait ends")
}

/// Calls the blocking flush as the writer thread does (at most a minute).
async fn flush(sink: &Arc<HttpSink>) {
    let sink = sink.clone();
    tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || sink.flush()),
    )
    .await
    .expect("the flush returns")
    .unwrap();
}

/// The store holds exactly `1..=n`, each stored once, in order.
fn assert_stored_once_in_order(store: &Mutex<Store>, n: u64) {
    let s = store.lock().unwrap();
    let want: Vec<u64> = (1..=n).collect();
    assert_eq!(s.stored, want, "stored once each, in seq order");
    assert_eq!(s.events.keys().copied().collect::<Vec<_>>(), want);
    assert!(s.events.values().all(|e| e.run_id == RUN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2000_event_trace_reaches_the_sidecar_once_and_in_order() {
    let store = Store::new();
    let sidecar = Sidecar::start(store.clone(), 0);
    let http = sink(&sidecar.url(), TOKEN, options());
    let trace = Trace::buffered(
        TraceOptions::new(RUN),
        vec![http.clone() as Arc<dyn EventSink>],
        4096,
    );
    let ordinary = MAX_EVENTS - orrery_crds::events::RESERVED_SLOTS;
    for seq in 1..=ordinary {
        assert!(trace.emit(node_enter(seq)));
    }
    while trace.emitted() < MAX_EVENTS - 1 {
        assert!(trace.emit(budget_hit()));
    }
    assert!(trace.emit(run_end()));
    assert!(
        trace.drain(Duration::from_secs(60)).await,
        "the writer flushed"
    );
    assert_eq!((trace.emitted(), trace.dropped()), (MAX_EVENTS, 0));
    assert_eq!(http.delivery(), Delivery::Complete);
    assert_eq!(http.dropped(), 0);
    assert_stored_once_in_order(&store, MAX_EVENTS);
    let s = store.lock().unwrap();
    assert_eq!(s.events[&MAX_EVENTS].kind(), "run.end");
    assert_eq!(s.duplicates, 0);
    assert!(
        s.batches
            .iter()
            .all(|(a, b)| b - a < MAX_BATCH_EVENTS as u64),
        "batches keep the contract's size: {:?}",
        s.batches
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_arrives_once_with_no_gap_through_503s_cut_connections_and_429s() {
    let store = Store::new();
    {
        let mut s = store.lock().unwrap();
        s.script.extend([Act::Status(503); 4]);
        s.script.extend([Act::Status(502); 1]);
        s.script.extend([Act::LoseReply; 3]);
        s.script.extend([Act::RetryAfter(1); 2]);
    }
    let sidecar = Sidecar::start(store.clone(), 0);
    let http = sink(&sidecar.url(), TOKEN, options());
    // In slices, so the failures fall on batches of a stream still being written.
    for slice in 0..20 {
        emit_range(&http, slice * 100 + 1, slice * 100 + 99);
        http.emit(&event(slice * 100 + 100, budget_hit()));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(wait(&http).await, Delivery::Complete);
    assert_stored_once_in_order(&store, 2000);
    let s = store.lock().unwrap();
    assert!(s.script.is_empty(), "every scripted failure was met");
    assert_eq!(s.replies.get(&503), Some(&4));
    assert_eq!(s.replies.get(&429), Some(&2));
    assert!(
        s.duplicates > 0,
        "a batch whose reply was lost was sent again and stored nothing twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sidecar_restarted_on_the_same_port_gets_the_rest_with_no_gap_and_nothing_twice() {
    let store = Store::new();
    let mut sidecar = Sidecar::start(store.clone(), 0);
    let port = sidecar.addr.port();
    let http = sink(&sidecar.url(), TOKEN, options());
    emit_range(&http, 1, 1000);
    while store.lock().unwrap().events.is_empty() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    sidecar.stop();
    emit_range(&http, 1001, 1999);
    http.emit(&event(2000, run_end()));
    // The sink keeps trying while the sidecar is away.
    let failing = async {
        while !matches!(http.delivery(), Delivery::Incomplete { ref reason, .. } if reason.contains("cannot reach"))
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), failing)
        .await
        .expect("the sink fails to reach the stopped sidecar");
    let _sidecar = Sidecar::start(store.clone(), port);
    assert_eq!(wait(&http).await, Delivery::Complete);
    assert_stored_once_in_order(&store, 2000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_409_makes_the_sink_resend_from_the_seq_the_sidecar_expects() {
    let store = Store::new();
    let sidecar = Sidecar::start(store.clone(), 0);
    let http = sink(&sidecar.url(), TOKEN, options());
    emit_range(&http, 1, 300);
    assert_eq!(wait(&http).await, Delivery::Complete);
    // The sidecar comes back from an older copy of its store: events from 101 on are gone.
    {
        let mut s = store.lock().unwrap();
        s.events.retain(|seq, _| *seq <= 100);
        s.stored.retain(|seq| *seq <= 100);
        s.batches.clear();
    }
    emit_range(&http, 301, 400);
    assert_eq!(wait(&http).await, Delivery::Complete);
    assert_stored_once_in_order(&store, 400);
    let s = store.lock().unwrap();
    assert_eq!(s.replies.get(&409), Some(&1));
    assert_eq!(
        s.batches.get(1).map(|b| b.0),
        Some(101),
        "after the 409 the sink resent from seq 101: {:?}",
        s.batches
    );
}

// One runtime thread: every event is in before the sender first runs.
#[tokio::test]
async fn a_413_makes_the_sink_split_its_batches() {
    let store = Store::new();
    store.lock().unwrap().max_batch_events = 10;
    let sidecar = Sidecar::start(store.clone(), 0);
    let http = sink(&sidecar.url(), TOKEN, options());
    emit_range(&http, 1, 100);
    assert_eq!(wait(&http).await, Delivery::Complete);
    assert_stored_once_in_order(&store, 100);
    let s = store.lock().unwrap();
    assert!(
        s.replies.get(&413).is_some_and(|n| *n >= 1),
        "{:?}",
        s.replies
    );
    assert!(s.batches.iter().all(|(a, b)| b - a < 10), "{:?}", s.batches);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_stops_sending_and_the_flush_returns_at_once() {
    let store = Store::new();
    let sidecar = Sidecar::start(store.clone(), 0);
    let http = sink(
        &sidecar.url(),
        "someone-elses-token",
        HttpSinkOptions {
            flush_timeout: Duration::from_secs(3600),
            ..options()
        },
    );
    emit_range(&http, 1, 10);
    flush(&http).await;
    let Delivery::Incomplete {
        undelivered,
        reason,
    } = http.delivery()
    else {
        panic!("nothing was delivered");
    };
    assert_eq!(undelivered, 10);
    assert!(
        reason.contains("refused this run's token") && reason.contains("401"),
        "{reason}"
    );
    assert!(
        !reason.contains("someone-elses-token"),
        "the token is never shown: {reason}"
    );
    emit_range(&http, 11, 20);
    assert!(matches!(
        wait(&http).await,
        Delivery::Incomplete {
            undelivered: 20,
            ..
        }
    ));
    let s = store.lock().unwrap();
    assert_eq!(
        (s.requests, s.events.len()),
        (1, 0),
        "one request, then none"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_with_no_sidecar_listening_gives_up_at_its_deadline_naming_what_was_not_delivered()
{
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let http = sink(
        &format!("http://127.0.0.1:{port}"),
        TOKEN,
        HttpSinkOptions {
            flush_timeout: Duration::from_millis(500),
            ..options()
        },
    );
    emit_range(&http, 1, 4);
    http.emit(&event(5, run_end()));
    flush(&http).await;
    let delivery = http.delivery();
    let Delivery::Incomplete {
        undelivered,
        reason,
    } = &delivery
    else {
        panic!("nothing listens: {delivery:?}");
    };
    assert_eq!(*undelivered, 5);
    assert!(reason.contains("cannot reach the sidecar"), "{reason}");
    assert!(
        delivery
            .to_string()
            .starts_with("5 trace events were not delivered to the sidecar: cannot reach"),
        "{delivery}"
    );
    // The async wait keeps the same deadline: it is already past.
    assert!(matches!(
        wait(&http).await,
        Delivery::Incomplete { undelivered: 5, .. }
    ));
}

// One runtime thread: every event is in (and the bound applied) before the sender first runs.
#[tokio::test]
async fn the_byte_bound_drops_the_oldest_ordinary_events_and_never_a_reserved_one() {
    let store = Store::new();
    {
        let mut s = store.lock().unwrap();
        s.unavailable = true;
        s.lenient = true;
    }
    let sidecar = Sidecar::start(store.clone(), 0);
    let one = serde_json::to_vec(&event(10, node_enter(10)))
        .unwrap()
        .len();
    let http = sink(
        &sidecar.url(),
        TOKEN,
        HttpSinkOptions {
            max_buffer_bytes: one * 10,
            ..options()
        },
    );
    let reserved = [10, 20, 30, 40, 50, 61];
    for seq in 1..=60 {
        let body = if reserved.contains(&seq) {
            budget_hit()
        } else {
            node_enter(seq)
        };
        http.emit(&event(seq, body));
    }
    http.emit(&event(61, run_end()));
    assert!(http.dropped() > 0, "over the bound, events were let go");
    store.lock().unwrap().unavailable = false;
    wait(&http).await;
    let s = store.lock().unwrap();
    for seq in reserved {
        assert!(s.events.contains_key(&seq), "reserved event {seq} was kept");
    }
    let ordinary_stored = s.events.len() as u64 - reserved.len() as u64;
    assert_eq!(ordinary_stored + http.dropped(), 61 - reserved.len() as u64);
    let mut sorted = s.stored.clone();
    sorted.sort_unstable();
    assert_eq!(s.stored, sorted, "what was kept arrived in order");
    assert!(
        s.events.contains_key(&59),
        "the newest ordinary events were kept, the oldest dropped"
    );
}
