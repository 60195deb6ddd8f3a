//! Benchmark (not a timed test): the sidecar's event path, on SQLite and on PostgreSQL, with the
//! sidecar in this process (`TestSidecar`) and the real kube-apiserver of `tests/testenv/`.
//!
//! For each store it runs up to three rounds (`--rounds unpaced,paced,slow`) of `--runs` runs ×
//! `--events` events, each run's events posted in order by one of `--posters` tasks in batches
//! of 20–100 (as a runner does, with that run's own run token) to
//! `POST /internal/v1/runs/{uid}/events`, while `--subscribers` SSE streams
//! (`GET /api/v1/runs/{ns}/{name}/events`, alice's token; alice owns every run) follow the runs
//! live:
//! 1. `unpaced`: the posters post as fast as the sidecar answers: the ingest throughput;
//! 2. `paced` at `--rate` events/s (each poster's share of the rate is its share of the
//!    events): the latency a subscriber sees at that rate;
//! 3. `slow`: paced, plus one more stream on run 0 that reads 512 bytes every 100 ms through a
//!    4 KiB receive buffer, so the sidecar cannot write to it as fast as events come: the
//!    others' latency with it, and how far it fell behind.
//!
//! Latency is runner → subscriber per event: the instant the batch holding the event was sent
//! (its first attempt) to the instant the chunk holding the event's frame was read by the
//! subscriber, both `Instant`s of this process. Every subscriber checks it got every event once,
//! in order, and that its stream ended after `run.end`.
//!
//! The bench process's RSS (`VmRSS` of /proc/self/status: the sidecar, the posters and the
//! subscribers) is sampled every second. `--soak-minutes N` adds a soak per store: the paced
//! load for N minutes, finished runs replaced by new ones (and their StudioRuns deleted, so the
//! sidecar's retention sweep has work), one line per 30 s and the RSS at the start, the middle
//! and the end.
//!
//! The runs are real StudioRuns (`spec.owner: alice`, a one-node inline composition) in a test
//! namespace where alice holds the example `studio-user` Role; no operator runs, so nobody
//! starts them: the benchmark is their runner. The sidecar allows 200 streams per person here
//! (a benchmark setting; the default is 4).
//!
//! ```text
//! tests/e2e.sh cargo run --release -p orrery-tests --bin bench_sidecar -- \
//!     [--stores sqlite,postgres] [--runs 50] [--events 2000] [--subscribers 100] \
//!     [--posters 8] [--rate 2000] [--rounds unpaced,paced,slow] [--soak-minutes 0] [--otel off]
//! ```
//!
//! `--otel on` has the sidecar export every run as an OpenTelemetry trace to a collector of its
//! own (`testenv otlpsink --quiet`, which decodes and counts the spans), to measure ingest with
//! export on against off; the spans exported and dropped are printed at the end.

use anyhow::{Context, Result, bail, ensure};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use orrery_bench::{node_event, run_end, stamped};
use orrery_crds::StudioRun;
use orrery_crds::events::TraceEvent;
use orrery_crds::events::ingest::{EventBatch, IngestReply, ingest_path};
use orrery_operator::config::DEFAULT_RUN_TOKEN_AUDIENCE;
use orrery_operator::run_token::{RunTokenSigner, run_claims};
use orrery_operator::sidecar::SidecarSettings;
use orrery_operator::sidecar::store::Store;
use orrery_tests::harness::{TestNamespace, ensure_crds};
use orrery_tests::operator_fixture::test_signer;
use orrery_tests::postgres;
use orrery_tests::sidecar_fixture::{TestSidecar, temp_dir};
use orrery_tests::studio::{grant_studio_user, token};
use orrery_tests::testenv::{self, ALICE};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinSet;

/// Events per batch, drawn uniformly from this range (the runner batches what waits after a
/// short linger; at the rates measured here that is tens of events).
const BATCH_MIN: u64 = 20;
const BATCH_MAX: u64 = 100;
/// Streams one person may hold in this benchmark (the default is 4).
const MAX_STREAMS_PER_PERSON: usize = 200;
/// The slow subscriber: bytes per read, the pause between reads, its socket's receive buffer.
const SLOW_READ_BYTES: usize = 512;
const SLOW_PAUSE: Duration = Duration::from_millis(100);
const SLOW_RECV_BUFFER: u32 = 4096;
/// How long the subscribers may take to finish after the last batch was stored.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(120);
/// The label that names a round's runs.
const ROUND_LABEL: &str = "orrery.dev/bench-round";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StoreKind {
    Sqlite,
    Postgres,
}

impl StoreKind {
    fn name(self) -> &'static str {
        match self {
            StoreKind::Sqlite => "SQLite",
            StoreKind::Postgres => "PostgreSQL",
        }
    }
}

struct Args {
    stores: Vec<StoreKind>,
    runs: usize,
    events: u64,
    subscribers: usize,
    posters: usize,
    rate: u64,
    soak_minutes: u64,
    rounds: Vec<RoundKind>,
    otel: bool,
}

fn args() -> Result<Args> {
    let mut out = Args {
        stores: vec![StoreKind::Sqlite, StoreKind::Postgres],
        runs: 50,
        events: 2000,
        subscribers: 100,
        posters: 8,
        rate: 2000,
        soak_minutes: 0,
        rounds: vec![RoundKind::Unpaced, RoundKind::Paced, RoundKind::PacedSlow],
        otel: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        let number = || -> Result<u64> {
            value
                .parse()
                .with_context(|| format!("{flag} needs a whole number, not {value:?}"))
        };
        match flag.as_str() {
            "--stores" => {
                out.stores = value
                    .split(',')
                    .map(|s| match s.trim() {
                        "sqlite" => Ok(StoreKind::Sqlite),
                        "postgres" | "postgresql" => Ok(StoreKind::Postgres),
                        other => bail!("--stores: unknown store {other:?}; use sqlite,postgres"),
                    })
                    .collect::<Result<_>>()?
            }
            "--runs" => out.runs = number()? as usize,
            "--events" => out.events = number()?,
            "--subscribers" => out.subscribers = number()? as usize,
            "--posters" => out.posters = number()? as usize,
            "--rate" => out.rate = number()?,
            "--soak-minutes" => out.soak_minutes = number()?,
            "--otel" => {
                out.otel = match value.as_str() {
                    "on" => true,
                    "off" => false,
                    other => bail!("--otel: {other:?}; use on or off"),
                }
            }
            "--rounds" => {
                out.rounds = value
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| match s.trim() {
                        "unpaced" => Ok(RoundKind::Unpaced),
                        "paced" => Ok(RoundKind::Paced),
                        "slow" => Ok(RoundKind::PacedSlow),
                        other => {
                            bail!("--rounds: unknown round {other:?}; use unpaced,paced,slow")
                        }
                    })
                    .collect::<Result<_>>()?
            }
            other => bail!(
                "unknown argument {other}; use --stores, --runs, --events, --subscribers, \
                 --posters, --rate, --rounds, --soak-minutes, --otel"
            ),
        }
    }
    ensure!(out.runs >= 1, "--runs is at least 1");
    ensure!(
        (2..=orrery_crds::events::MAX_EVENTS).contains(&out.events),
        "--events is 2 to {}",
        orrery_crds::events::MAX_EVENTS
    );
    ensure!(out.posters >= 1, "--posters is at least 1");
    ensure!(out.rate >= 1, "--rate is at least 1");
    ensure!(
        out.subscribers < MAX_STREAMS_PER_PERSON,
        "--subscribers is at most {}",
        MAX_STREAMS_PER_PERSON - 1
    );
    Ok(out)
}

/// Latencies in a fixed table of buckets (10 µs wide below 100 ms, 1 ms wide up to 10 s, 10 ms
/// wide up to 120 s, then one overflow bucket), so recording never allocates and a soak's memory stays flat.
struct Histogram {
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    max_us: AtomicU64,
}

const FINE_LIMIT_US: u64 = 100_000;
const FINE_WIDTH_US: u64 = 10;
const COARSE_LIMIT_US: u64 = 10_000_000;
const COARSE_WIDTH_US: u64 = 1000;
const SLOW_LIMIT_US: u64 = 120_000_000;
const SLOW_WIDTH_US: u64 = 10_000;
const FINE_BUCKETS: usize = (FINE_LIMIT_US / FINE_WIDTH_US) as usize;
const COARSE_BUCKETS: usize = ((COARSE_LIMIT_US - FINE_LIMIT_US) / COARSE_WIDTH_US) as usize;
const BUCKETS: usize = FINE_BUCKETS
    + COARSE_BUCKETS
    + ((SLOW_LIMIT_US - COARSE_LIMIT_US) / SLOW_WIDTH_US) as usize
    + 1;

/// p50, p99 and max of what a histogram holds.
#[derive(Clone, Copy, Debug, Default)]
struct Summary {
    count: u64,
    p50_us: u64,
    p99_us: u64,
    max_us: u64,
}

impl Summary {
    fn cells(&self) -> String {
        if self.count == 0 {
            return "n/a | n/a | n/a".into();
        }
        format!(
            "{} | {} | {}",
            ms(self.p50_us),
            ms(self.p99_us),
            ms(self.max_us)
        )
    }
}

fn ms(us: u64) -> String {
    let ms = us as f64 / 1000.0;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.2} s", ms / 1000.0)
    }
}

impl Histogram {
    fn new() -> Histogram {
        Histogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            max_us: AtomicU64::new(0),
        }
    }

    fn record(&self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        let index = if us < FINE_LIMIT_US {
            (us / FINE_WIDTH_US) as usize
        } else if us < COARSE_LIMIT_US {
            FINE_BUCKETS + ((us - FINE_LIMIT_US) / COARSE_WIDTH_US) as usize
        } else if us < SLOW_LIMIT_US {
            FINE_BUCKETS + COARSE_BUCKETS + ((us - COARSE_LIMIT_US) / SLOW_WIDTH_US) as usize
        } else {
            BUCKETS - 1
        };
        self.buckets[index].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
    }

    /// The upper edge of bucket `index`, in µs.
    fn upper_us(index: usize) -> u64 {
        if index < FINE_BUCKETS {
            (index as u64 + 1) * FINE_WIDTH_US
        } else if index < FINE_BUCKETS + COARSE_BUCKETS {
            FINE_LIMIT_US + (index - FINE_BUCKETS + 1) as u64 * COARSE_WIDTH_US
        } else if index < BUCKETS - 1 {
            COARSE_LIMIT_US + (index - FINE_BUCKETS - COARSE_BUCKETS + 1) as u64 * SLOW_WIDTH_US
        } else {
            u64::MAX
        }
    }

    fn summarize(counts: &[u64], max_us: u64) -> Summary {
        let count: u64 = counts.iter().sum();
        // Nearest rank; a percentile is its bucket's upper edge, never above the maximum.
        let rank = |p: f64| ((count as f64 * p).ceil() as u64).max(1);
        let at = |rank: u64| {
            let mut seen = 0;
            for (i, n) in counts.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    return Histogram::upper_us(i).min(max_us);
                }
            }
            max_us
        };
        Summary {
            count,
            p50_us: at(rank(0.50)),
            p99_us: at(rank(0.99)),
            max_us,
        }
    }

    fn summary(&self) -> Summary {
        Histogram::summarize(&self.counts(), self.max_us.load(Ordering::Relaxed))
    }

    /// The count in every bucket now.
    fn counts(&self) -> Vec<u64> {
        self.buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect()
    }

    /// What was recorded since `before` (an earlier [`Histogram::counts`]); its max is the
    /// upper edge of the highest bucket used since, never above the overall max.
    fn since(&self, before: &[u64]) -> Summary {
        let now = self.counts();
        let diff: Vec<u64> = now
            .iter()
            .zip(before)
            .map(|(n, b)| n.saturating_sub(*b))
            .collect();
        let max_us = diff
            .iter()
            .rposition(|n| *n > 0)
            .map(|i| Histogram::upper_us(i).min(self.max_us.load(Ordering::Relaxed)))
            .unwrap_or(0);
        Histogram::summarize(&diff, max_us)
    }
}

/// One run the benchmark is the runner of.
struct Run {
    name: String,
    uid: String,
    /// Its run token.
    token: String,
    /// When each `seq`'s batch was first sent, in ns since the benchmark's start (0: not yet).
    sent: Box<[AtomicU64]>,
    /// The `seq` of its `run.end` once posted (0 before).
    end_seq: AtomicU64,
    /// Events it will have unless ended early.
    events: u64,
}

impl Run {
    fn sent_at(&self, seq: u64) -> Option<u64> {
        let at = self.sent.get(seq as usize)?.load(Ordering::Acquire);
        (at != 0).then_some(at)
    }
}

/// What one round (or the soak) counts.
struct Phase {
    /// Runner → subscriber, every event, every normal subscriber.
    latency: Histogram,
    /// The same for the slow subscriber.
    slow_latency: Histogram,
    /// Ingest round trips (a batch's POST to its 200).
    reply: Histogram,
    posted: AtomicU64,
    batches: AtomicU64,
    delivered: AtomicU64,
    too_many: AtomicU64,
    unavailable: AtomicU64,
    errors: Mutex<Vec<String>>,
    tasks: Mutex<JoinSet<()>>,
}

impl Phase {
    fn new() -> Arc<Phase> {
        Arc::new(Phase {
            latency: Histogram::new(),
            slow_latency: Histogram::new(),
            reply: Histogram::new(),
            posted: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            too_many: AtomicU64::new(0),
            unavailable: AtomicU64::new(0),
            errors: Mutex::new(Vec::new()),
            tasks: Mutex::new(JoinSet::new()),
        })
    }

    fn error(&self, e: String) {
        let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        if errors.len() < 20 {
            errors.push(e);
        }
    }

    fn errors(&self) -> Vec<String> {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Runs `task` in the background; an error is kept for the report.
    fn spawn(
        self: &Arc<Phase>,
        what: String,
        task: impl Future<Output = Result<()>> + Send + 'static,
    ) {
        let phase = self.clone();
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        // Reap what is done, so a soak's finished tasks do not pile up.
        while tasks.try_join_next().is_some() {}
        tasks.spawn(async move {
            if let Err(e) = task.await {
                phase.error(format!("{what}: {e:#}"));
            }
        });
    }

    /// Waits for every background task, at most `timeout`; false if some did not finish.
    async fn join(&self, timeout: Duration) -> bool {
        let mut tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|e| e.into_inner()));
        let all = async { while tasks.join_next().await.is_some() {} };
        let done = tokio::time::timeout(timeout, all).await.is_ok();
        tasks.abort_all();
        done
    }
}

/// What every task shares.
struct Bench {
    admin: Client,
    ns: String,
    alice: String,
    signer: Arc<RunTokenSigner>,
    /// The posters' client.
    post: reqwest::Client,
    /// The subscribers' client (no overall timeout: a stream lasts as long as its run).
    follow: reqwest::Client,
    sidecar: String,
    sidecar_addr: SocketAddr,
    start: Instant,
    token_lifetime: u64,
    names: AtomicU64,
    /// The sidecar's store (to count the runs it holds).
    store: Store,
    /// When the sidecar started (its retention sweep runs 10 minutes later, then every 10).
    sidecar_started: Instant,
}

impl Bench {
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn runs(&self) -> Api<StudioRun> {
        Api::namespaced(self.admin.clone(), &self.ns)
    }

    /// Creates a StudioRun owned by alice (nobody runs it: the benchmark is its runner), signs
    /// its run token, and connects `subscribers` streams to it, each followed by a task of
    /// `phase`. Returns once every stream is open, so every event posted after is live.
    async fn open_run(
        self: &Arc<Bench>,
        phase: &Arc<Phase>,
        round: &str,
        events: u64,
        subscribers: usize,
    ) -> Result<Arc<Run>> {
        let n = self.names.fetch_add(1, Ordering::Relaxed);
        let name = format!("{round}-{n}");
        let object: StudioRun = serde_json::from_value(serde_json::json!({
            "apiVersion": "studio.orrery.dev/v1alpha1",
            "kind": "StudioRun",
            "metadata": {"name": name, "labels": {ROUND_LABEL: round}},
            "spec": {
                "composition": {
                    "pattern": "Pipeline",
                    "nodes": [{"id": "only", "kind": "LLMAgent", "model": "scripted", "instruction": "Answer."}]
                },
                "input": "benchmark",
                "owner": ALICE
            }
        }))?;
        let created = self
            .runs()
            .create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("creating StudioRun {name}"))?;
        let uid = created.uid().context("the created run has no UID")?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
        let token = self.signer.sign(&run_claims(
            &self.ns,
            &name,
            &uid,
            DEFAULT_RUN_TOKEN_AUDIENCE,
            now,
            self.token_lifetime,
        ))?;
        let run = Arc::new(Run {
            name,
            uid,
            token,
            sent: (0..=events).map(|_| AtomicU64::new(0)).collect(),
            end_seq: AtomicU64::new(0),
            events,
        });
        for i in 0..subscribers {
            let response = self.connect(&run).await?;
            let (bench, phase2, run2) = (self.clone(), phase.clone(), run.clone());
            phase.spawn(format!("subscriber {i} of {}", run.name), async move {
                follow(&bench, &phase2, &run2, response).await
            });
        }
        Ok(run)
    }

    fn events_path(&self, run: &Run) -> String {
        format!("/api/v1/runs/{}/{}/events", self.ns, run.name)
    }

    /// Opens an SSE stream of `run` as alice.
    async fn connect(&self, run: &Run) -> Result<reqwest::Response> {
        let url = format!("{}{}", self.sidecar, self.events_path(run));
        for attempt in 0.. {
            let response = self
                .follow
                .get(&url)
                .header("accept", "text/event-stream")
                .bearer_auth(&self.alice)
                .send()
                .await
                .with_context(|| format!("connecting to {url}"))?;
            let status = response.status();
            if status == reqwest::StatusCode::OK {
                return Ok(response);
            }
            let body = response.text().await.unwrap_or_default();
            // The cluster or the store may be briefly unavailable; nothing else is retried.
            if status == reqwest::StatusCode::SERVICE_UNAVAILABLE && attempt < 10 {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            bail!("GET {url}: {status} {body}");
        }
        bail!("GET {url}: no answer")
    }
}

/// The events of an SSE body, line by line: calls back with each frame's `id`.
#[derive(Default)]
struct Lines {
    line: Vec<u8>,
}

impl Lines {
    fn feed(&mut self, mut bytes: &[u8], mut on_id: impl FnMut(&[u8])) {
        while let Some(end) = bytes.iter().position(|b| *b == b'\n') {
            self.line.extend_from_slice(&bytes[..end]);
            if let Some(id) = self.line.strip_prefix(b"id:") {
                on_id(id.trim_ascii());
            }
            self.line.clear();
            bytes = &bytes[end + 1..];
        }
        self.line.extend_from_slice(bytes);
    }
}

/// Checks that `id` is the next `seq` and records its latency; the error says what came.
fn take_event(
    run: &Run,
    id: &[u8],
    next: &mut u64,
    at: u64,
    latency: &Histogram,
) -> Result<(), String> {
    let seq: u64 = std::str::from_utf8(id)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            format!(
                "a frame id {:?} that is not a number",
                String::from_utf8_lossy(id)
            )
        })?;
    if seq != *next {
        return Err(format!("event {seq} arrived where {} was expected", *next));
    }
    *next += 1;
    let sent = run
        .sent_at(seq)
        .ok_or_else(|| format!("event {seq} arrived before it was sent"))?;
    latency.record(Duration::from_nanos(at.saturating_sub(sent)));
    Ok(())
}

/// A normal subscriber: reads the stream as fast as it comes, to its end.
async fn follow(
    bench: &Bench,
    phase: &Phase,
    run: &Run,
    response: reqwest::Response,
) -> Result<()> {
    let mut body = response.bytes_stream();
    let mut lines = Lines::default();
    let mut next = 1;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.context("reading the stream")?;
        let at = bench.now();
        let mut bad = None;
        let before = next;
        lines.feed(&chunk, |id| {
            if bad.is_none()
                && let Err(e) = take_event(run, id, &mut next, at, &phase.latency)
            {
                bad = Some(e);
            }
        });
        phase.delivered.fetch_add(next - before, Ordering::Relaxed);
        if let Some(e) = bad {
            bail!(e);
        }
    }
    let end = run.end_seq.load(Ordering::Acquire);
    ensure!(
        end != 0 && next == end + 1,
        "the stream ended after event {} but run.end is {end}",
        next - 1
    );
    Ok(())
}

/// `Transfer-Encoding: chunked`, undone.
enum Chunked {
    Size(Vec<u8>),
    Data(usize),
    DataEnd(usize),
    Done,
}

impl Chunked {
    fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<()> {
        while !input.is_empty() {
            match self {
                Chunked::Size(line) => {
                    let Some(end) = input.iter().position(|b| *b == b'\n') else {
                        line.extend_from_slice(input);
                        return Ok(());
                    };
                    line.extend_from_slice(&input[..end]);
                    input = &input[end + 1..];
                    let text = String::from_utf8_lossy(line);
                    let hex = text.split(';').next().unwrap_or_default().trim();
                    let size = usize::from_str_radix(hex, 16)
                        .with_context(|| format!("a chunk size {hex:?}"))?;
                    *self = if size == 0 {
                        Chunked::Done
                    } else {
                        Chunked::Data(size)
                    };
                }
                Chunked::Data(left) => {
                    let n = (*left).min(input.len());
                    out.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    *left -= n;
                    if *left == 0 {
                        *self = Chunked::DataEnd(2);
                    }
                }
                Chunked::DataEnd(left) => {
                    *left -= 1;
                    input = &input[1..];
                    if *left == 0 {
                        *self = Chunked::Size(Vec::new());
                    }
                }
                Chunked::Done => return Ok(()),
            }
        }
        Ok(())
    }
}

/// The slow subscriber: its own TCP connection with a small receive buffer, reading
/// [`SLOW_READ_BYTES`] then pausing [`SLOW_PAUSE`]. Says on `ready` when the stream is open;
/// counts in `progress` the last `seq` it read. Runs until aborted or its stream ends.
async fn slow_follow(
    bench: Arc<Bench>,
    phase: Arc<Phase>,
    run: Arc<Run>,
    progress: Arc<AtomicU64>,
    ready: tokio::sync::oneshot::Sender<()>,
) -> Result<()> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_recv_buffer_size(SLOW_RECV_BUFFER)?;
    let mut stream = socket.connect(bench.sidecar_addr).await?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nAccept: text/event-stream\r\n\r\n",
        bench.events_path(&run),
        bench.sidecar_addr,
        bench.alice
    );
    stream.write_all(request.as_bytes()).await?;
    let mut buffer = [0u8; SLOW_READ_BYTES];
    let mut head = Vec::new();
    let body_start = loop {
        let n = stream.read(&mut buffer).await?;
        ensure!(
            n > 0,
            "the slow subscriber's connection closed before the headers"
        );
        head.extend_from_slice(&buffer[..n]);
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let headers = String::from_utf8_lossy(&head[..body_start]).to_ascii_lowercase();
    ensure!(
        headers.starts_with("http/1.1 200"),
        "the slow subscriber got {}",
        headers.lines().next().unwrap_or_default()
    );
    let mut chunked = headers
        .contains("transfer-encoding: chunked")
        .then(|| Chunked::Size(Vec::new()));
    let _ = ready.send(());
    let mut lines = Lines::default();
    let mut next = 1;
    let mut body = Vec::new();
    let mut pending = head[body_start..].to_vec();
    loop {
        let at = bench.now();
        body.clear();
        match &mut chunked {
            Some(c) => c.feed(&pending, &mut body)?,
            None => body.extend_from_slice(&pending),
        }
        let mut bad = None;
        lines.feed(&body, |id| {
            if bad.is_none()
                && let Err(e) = take_event(&run, id, &mut next, at, &phase.slow_latency)
            {
                bad = Some(e);
            }
        });
        progress.store(next - 1, Ordering::Relaxed);
        if let Some(e) = bad {
            bail!(e);
        }
        tokio::time::sleep(SLOW_PAUSE).await;
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            return Ok(());
        }
        pending.clear();
        pending.extend_from_slice(&buffer[..n]);
    }
}

/// A small deterministic generator for batch sizes.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Event `seq` of `run`: `run.end` when `end`, else node enters and exits (names, sizes,
/// counts: what a trace carries with content capture off).
fn event(run: &Run, seq: u64, end: bool) -> TraceEvent {
    let body = if end {
        run_end(seq.div_ceil(2))
    } else {
        node_event(seq, 10)
    };
    stamped(&run.uid, seq, body)
}

/// Posts events `first..=last` of `run` as one batch, as a runner does: 429 waits
/// `Retry-After`, 503 retries; anything but 200 after that is an error.
async fn post_batch(
    bench: &Bench,
    phase: &Phase,
    run: &Run,
    first: u64,
    last: u64,
    end: bool,
) -> Result<()> {
    let batch = EventBatch {
        events: (first..=last)
            .map(|seq| event(run, seq, end && seq == last))
            .collect(),
    };
    let body = serde_json::to_vec(&batch)?;
    let url = format!("{}{}", bench.sidecar, ingest_path(&run.uid));
    if end {
        run.end_seq.store(last, Ordering::Release);
    }
    let sent = bench.now().max(1);
    for seq in first..=last {
        if let Some(slot) = run.sent.get(seq as usize) {
            slot.store(sent, Ordering::Release);
        }
    }
    loop {
        let started = Instant::now();
        let response = bench
            .post
            .post(&url)
            .bearer_auth(&run.token)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .with_context(|| format!("posting events {first}..={last} of {}", run.name))?;
        let status = response.status();
        match status {
            reqwest::StatusCode::OK => {
                phase.reply.record(started.elapsed());
                let reply: IngestReply = response.json().await?;
                ensure!(
                    reply.last_seq == last,
                    "{}: stored up to {} after posting {first}..={last}",
                    run.name,
                    reply.last_seq
                );
                phase.posted.fetch_add(last - first + 1, Ordering::Relaxed);
                phase.batches.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            reqwest::StatusCode::TOO_MANY_REQUESTS => {
                phase.too_many.fetch_add(1, Ordering::Relaxed);
                let wait = response
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(1);
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
            reqwest::StatusCode::SERVICE_UNAVAILABLE => {
                phase.unavailable.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            _ => {
                let text = response.text().await.unwrap_or_default();
                bail!(
                    "posting events {first}..={last} of {}: {status} {text}",
                    run.name
                );
            }
        }
    }
}

/// A run being posted and where it is.
struct Slot {
    run: Arc<Run>,
    next: u64,
    /// Streams it gets (its replacement gets as many).
    subscribers: usize,
}

/// How a soak keeps its runs going.
struct Refill {
    round: String,
    until: Instant,
    /// Events of each new run.
    events: u64,
}

/// One poster: its runs in turn, one batch each, until all are done. `rate` paces it (events/s)
/// from `start`; `refill` replaces a finished run by a new one until its deadline (a soak),
/// then ends every run with its next batch.
async fn poster(
    bench: Arc<Bench>,
    phase: Arc<Phase>,
    mut slots: Vec<Slot>,
    rate: Option<f64>,
    refill: Option<Arc<Refill>>,
    seed: u64,
) -> Result<()> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let start = tokio::time::Instant::now();
    let mut posted = 0u64;
    while !slots.is_empty() {
        let mut i = 0;
        while i < slots.len() {
            let draining = refill.as_ref().is_some_and(|r| Instant::now() >= r.until);
            let slot = &mut slots[i];
            let size = BATCH_MIN + rng.below(BATCH_MAX - BATCH_MIN + 1);
            let left = slot.run.events + 1 - slot.next;
            let (last, end) = if draining || size >= left {
                (slot.next + size.min(left) - 1, true)
            } else {
                (slot.next + size - 1, false)
            };
            if let Some(rate) = rate {
                let due = start + Duration::from_secs_f64(posted as f64 / rate);
                tokio::time::sleep_until(due).await;
            }
            post_batch(&bench, &phase, &slot.run, slot.next, last, end).await?;
            posted += last - slot.next + 1;
            slot.next = last + 1;
            if !end {
                i += 1;
                continue;
            }
            let done = slot.run.name.clone();
            let subscribers = slot.subscribers;
            // A soak deletes its finished runs (so the retention sweep has work) and starts
            // new ones until its deadline.
            if let Some(refill) = &refill {
                let bench2 = bench.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    let _ = bench2.runs().delete(&done, &DeleteParams::default()).await;
                });
                if Instant::now() < refill.until {
                    let run = bench
                        .open_run(&phase, &refill.round, refill.events, subscribers)
                        .await?;
                    slots[i] = Slot {
                        run,
                        next: 1,
                        subscribers,
                    };
                    i += 1;
                    continue;
                }
            }
            slots.swap_remove(i);
        }
    }
    Ok(())
}

/// VmRSS of this process, in KiB.
fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// RSS samples, one a second: (seconds since start, KiB).
#[derive(Default)]
struct RssLog {
    samples: Mutex<Vec<(f64, u64)>>,
}

impl RssLog {
    fn peak(&self, from: f64, to: f64) -> u64 {
        self.samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(t, _)| *t >= from && *t <= to)
            .map(|(_, k)| *k)
            .max()
            .unwrap_or(0)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RoundKind {
    Unpaced,
    Paced,
    PacedSlow,
}

struct RoundReport {
    kind: RoundKind,
    events: u64,
    seconds: f64,
    subscribers: usize,
    latency: Summary,
    reply: Summary,
    delivered: u64,
    batches: u64,
    too_many: u64,
    unavailable: u64,
    rss: (u64, u64, u64),
    slow: Option<SlowReport>,
}

struct SlowReport {
    received: u64,
    of: u64,
    latency: Summary,
}

async fn round(
    bench: &Arc<Bench>,
    args: &Args,
    rss: &RssLog,
    store: StoreKind,
    kind: RoundKind,
) -> Result<RoundReport> {
    let phase = Phase::new();
    let label = format!(
        "{}-{}",
        match store {
            StoreKind::Sqlite => "sq",
            StoreKind::Postgres => "pg",
        },
        match kind {
            RoundKind::Unpaced => "max",
            RoundKind::Paced => "paced",
            RoundKind::PacedSlow => "slow",
        }
    );
    let per_run =
        |k: usize| args.subscribers / args.runs + usize::from(k < args.subscribers % args.runs);
    let runs: Vec<Arc<Run>> = futures::stream::iter(0..args.runs)
        .map(|k| {
            let (bench, phase, label) = (bench.clone(), phase.clone(), label.clone());
            async move {
                bench
                    .open_run(&phase, &label, args.events, per_run(k))
                    .await
            }
        })
        .buffered(8)
        .try_collect()
        .await?;
    let mut slow = None;
    if kind == RoundKind::PacedSlow {
        let progress = Arc::new(AtomicU64::new(0));
        let (ready, opened) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(slow_follow(
            bench.clone(),
            phase.clone(),
            runs[0].clone(),
            progress.clone(),
            ready,
        ));
        if tokio::time::timeout(Duration::from_secs(30), opened)
            .await
            .is_err()
            || task.is_finished()
        {
            task.abort();
            match task.await {
                Ok(Err(e)) => return Err(e.context("the slow subscriber")),
                _ => bail!("the slow subscriber's stream did not open"),
            }
        }
        slow = Some((task, progress));
    }
    eprintln!("bench_sidecar: round {label}: posting");
    let rss_start = rss_kib();
    let t0 = bench.start.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut posters = JoinSet::new();
    for p in 0..args.posters {
        let slots: Vec<Slot> = runs
            .iter()
            .enumerate()
            .filter(|(k, _)| k % args.posters == p)
            .map(|(k, run)| Slot {
                run: run.clone(),
                next: 1,
                subscribers: per_run(k),
            })
            .collect();
        // Each poster's share of the rate is its share of the events: all end together.
        let share = slots.len() as f64 / runs.len() as f64;
        let rate = (kind != RoundKind::Unpaced).then_some(args.rate as f64 * share);
        posters.spawn(poster(
            bench.clone(),
            phase.clone(),
            slots,
            rate,
            None,
            p as u64 + 1,
        ));
    }
    while let Some(done) = posters.join_next().await {
        done??;
    }
    let seconds = started.elapsed().as_secs_f64();
    let drained = phase.join(DRAIN_TIMEOUT).await;
    let slow = match slow {
        Some((task, progress)) => {
            let received = progress.load(Ordering::Relaxed);
            task.abort();
            if let Ok(Err(e)) = task.await {
                phase.error(format!("the slow subscriber: {e:#}"));
            }
            Some(SlowReport {
                received,
                of: args.events,
                latency: phase.slow_latency.summary(),
            })
        }
        None => None,
    };
    let rss_end = rss_kib();
    let t1 = bench.start.elapsed().as_secs_f64();
    let errors = phase.errors();
    ensure!(
        errors.is_empty() && drained,
        "round {label}: {} subscriber(s) did not finish within {DRAIN_TIMEOUT:?}; errors: {errors:#?}",
        if drained { "no" } else { "some" }
    );
    // The sidecar writes each run's event count into its status when it stores run.end, in
    // the background: let those writes land before the runs go.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = bench
        .runs()
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&format!("{ROUND_LABEL}={label}")),
        )
        .await;
    Ok(RoundReport {
        kind,
        events: phase.posted.load(Ordering::Relaxed),
        seconds,
        subscribers: args.subscribers,
        latency: phase.latency.summary(),
        reply: phase.reply.summary(),
        delivered: phase.delivered.load(Ordering::Relaxed),
        batches: phase.batches.load(Ordering::Relaxed),
        too_many: phase.too_many.load(Ordering::Relaxed),
        unavailable: phase.unavailable.load(Ordering::Relaxed),
        rss: (rss_start, rss_end, rss.peak(t0, t1).max(rss_end)),
        slow,
    })
}

struct SoakLine {
    at_seconds: u64,
    events_per_second: f64,
    latency: Summary,
    rss: u64,
    /// Runs whose events the store holds (the retention sweep drops those deleted).
    held: usize,
    /// Seconds since the sidecar started.
    uptime: u64,
}

struct SoakReport {
    minutes: u64,
    lines: Vec<SoakLine>,
    rss_start: u64,
    rss_middle: u64,
    rss_end: u64,
    rss_after_drain: u64,
    events: u64,
    too_many: u64,
    total: Summary,
}

/// The paced load for `minutes`, finished runs replaced by new ones.
async fn soak(
    bench: &Arc<Bench>,
    args: &Args,
    store: StoreKind,
    minutes: u64,
) -> Result<SoakReport> {
    let phase = Phase::new();
    let label = format!(
        "{}-soak",
        match store {
            StoreKind::Sqlite => "sq",
            StoreKind::Postgres => "pg",
        }
    );
    let per_run =
        |k: usize| args.subscribers / args.runs + usize::from(k < args.subscribers % args.runs);
    // The first runs are of staggered lengths, so their replacements start spread out.
    let runs: Vec<Arc<Run>> = futures::stream::iter(0..args.runs)
        .map(|k| {
            let (bench, phase, label) = (bench.clone(), phase.clone(), label.clone());
            let events = (args.events * (k as u64 + 1) / args.runs as u64).max(2);
            async move { bench.open_run(&phase, &label, events, per_run(k)).await }
        })
        .buffered(8)
        .try_collect()
        .await?;
    let rss_start = rss_kib();
    let started = Instant::now();
    let refill = Arc::new(Refill {
        round: label.clone(),
        until: started + Duration::from_secs(minutes * 60),
        events: args.events,
    });
    let mut posters = JoinSet::new();
    for p in 0..args.posters {
        let slots: Vec<Slot> = runs
            .iter()
            .enumerate()
            .filter(|(k, _)| k % args.posters == p)
            .map(|(k, run)| Slot {
                run: run.clone(),
                next: 1,
                subscribers: per_run(k),
            })
            .collect();
        let rate = args.rate as f64 * slots.len() as f64 / runs.len() as f64;
        posters.spawn(poster(
            bench.clone(),
            phase.clone(),
            slots,
            Some(rate),
            Some(refill.clone()),
            p as u64 + 101,
        ));
    }
    let mut lines = Vec::new();
    let mut rss_middle = rss_start;
    let mut rss_end = rss_start;
    let mut last_posted = 0;
    let mut before = phase.latency.counts();
    let tick = Duration::from_secs(30);
    let ticks = minutes * 2;
    for n in 1..=ticks {
        tokio::time::sleep_until((started + tick * n as u32).into()).await;
        if let Some(done) = posters.try_join_next() {
            done??;
            bail!("a poster stopped before the soak's end");
        }
        let posted = phase.posted.load(Ordering::Relaxed);
        let latency = phase.latency.since(&before);
        before = phase.latency.counts();
        let rss = rss_kib();
        let held = bench.store.runs().await.map(|r| r.len()).unwrap_or(0);
        if n * 2 == ticks {
            rss_middle = rss;
        }
        if n == ticks {
            rss_end = rss;
        }
        let line = SoakLine {
            at_seconds: n * 30,
            events_per_second: (posted - last_posted) as f64 / 30.0,
            latency,
            rss,
            held,
            uptime: bench.sidecar_started.elapsed().as_secs(),
        };
        println!(
            "soak {}: {:>4} s  {:>7.0} events/s  p50 {}  p99 {}  max {}  RSS {} MiB  runs held {}  \
             errors {}",
            store.name(),
            line.at_seconds,
            line.events_per_second,
            ms(latency.p50_us),
            ms(latency.p99_us),
            ms(latency.max_us),
            mib(rss),
            held,
            phase.errors().len()
        );
        last_posted = posted;
        lines.push(line);
    }
    while let Some(done) = posters.join_next().await {
        done??;
    }
    let drained = phase.join(DRAIN_TIMEOUT).await;
    let errors = phase.errors();
    ensure!(
        errors.is_empty() && drained,
        "soak: subscribers finished: {drained}; errors: {errors:#?}"
    );
    // The sidecar writes each run's event count into its status when it stores run.end, in
    // the background: let those writes land before the runs go.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = bench
        .runs()
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&format!("{ROUND_LABEL}={label}")),
        )
        .await;
    Ok(SoakReport {
        minutes,
        lines,
        rss_start,
        rss_middle,
        rss_end,
        rss_after_drain: rss_kib(),
        events: phase.posted.load(Ordering::Relaxed),
        too_many: phase.too_many.load(Ordering::Relaxed),
        total: phase.latency.summary(),
    })
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_default();
    let memory = status_meminfo();
    format!(
        "nproc {cpus} ({model}), {memory}, load average {}",
        load_average()
    )
}

fn status_meminfo() -> String {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let kib: u64 = s
                .lines()
                .find(|l| l.starts_with("MemTotal:"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some(format!("{:.0} GiB RAM", kib as f64 / 1024.0 / 1024.0))
        })
        .unwrap_or_default()
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn print_store(store: StoreKind, args: &Args, rounds: &[RoundReport], soak: Option<&SoakReport>) {
    println!();
    println!("### {}", store.name());
    println!();
    println!(
        "| round | events | events/s | subscribers | latency p50 | p99 | max | ingest reply p50 / p99 | 429s | RSS start → end (peak), MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in rounds {
        let what = match r.kind {
            RoundKind::Unpaced => format!("unpaced ({} posters)", args.posters),
            RoundKind::Paced => format!("paced at {} events/s", args.rate),
            RoundKind::PacedSlow => format!("paced at {} events/s + 1 slow subscriber", args.rate),
        };
        println!(
            "| {what} | {} | {:.0} | {}{} | {} | {} / {} | {} | {} → {} ({}) |",
            r.events,
            r.events as f64 / r.seconds,
            r.subscribers,
            if r.slow.is_some() { " + 1 slow" } else { "" },
            r.latency.cells(),
            ms(r.reply.p50_us),
            ms(r.reply.p99_us),
            r.too_many + r.unavailable,
            mib(r.rss.0),
            mib(r.rss.1),
            mib(r.rss.2),
        );
    }
    for r in rounds {
        if let Some(slow) = &r.slow {
            let without = rounds
                .iter()
                .find(|p| p.kind == RoundKind::Paced)
                .map(|p| ms(p.latency.p99_us))
                .unwrap_or_else(|| "n/a".into());
            println!();
            println!(
                "Slow subscriber ({SLOW_READ_BYTES} B per {} ms, {SLOW_RECV_BUFFER} B receive buffer, on run 0): \
                 had read {} of {} events when the other {} streams had all of theirs; its own \
                 latency p50 {}, max {}. The others' p99: {} with it, {without} without it.",
                SLOW_PAUSE.as_millis(),
                slow.received,
                slow.of,
                r.subscribers,
                ms(slow.latency.p50_us),
                ms(slow.latency.max_us),
                ms(r.latency.p99_us),
            );
        }
    }
    let delivered: u64 = rounds.iter().map(|r| r.delivered).sum();
    let events: u64 = rounds.iter().map(|r| r.events).sum();
    let batches: u64 = rounds.iter().map(|r| r.batches).sum();
    println!();
    println!(
        "Batches posted, all rounds: {batches} ({:.1} events each on average).",
        events as f64 / batches.max(1) as f64
    );
    println!(
        "Frames delivered to the normal subscribers, all rounds: {delivered} (each checked: once, in order, ended after run.end)."
    );
    if let Some(s) = soak {
        println!();
        println!(
            "Soak, {} min at {} events/s, {} subscribers, runs replaced as they end: {} events, \
             p50 {}, p99 {}, worst 30-s p99 {}, max {}, 429s {}; RSS start {} MiB, middle {} MiB, end {} MiB \
             (after the drain {} MiB).",
            s.minutes,
            args.rate,
            args.subscribers,
            s.events,
            ms(s.total.p50_us),
            ms(s.total.p99_us),
            ms(s.lines.iter().map(|l| l.latency.p99_us).max().unwrap_or(0)),
            ms(s.total.max_us),
            s.too_many,
            mib(s.rss_start),
            mib(s.rss_middle),
            mib(s.rss_end),
            mib(s.rss_after_drain),
        );
        println!();
        println!(
            "| at (sidecar up) | events/s | p50 | p99 | max | RSS MiB | runs the store holds |"
        );
        println!("|---|---|---|---|---|---|---|");
        for l in &s.lines {
            println!(
                "| {} s ({} s) | {:.0} | {} | {} | {} |",
                l.at_seconds,
                l.uptime,
                l.events_per_second,
                l.latency.cells(),
                mib(l.rss),
                l.held
            );
        }
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = args()?;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let machine_before = machine();
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let admin = env.admin().await?;
    let ns = TestNamespace::create(env, "bench-sc").await?;
    grant_studio_user(env, &ns.name, ALICE).await?;
    let alice = token(env, ALICE)?;
    let start = Instant::now();
    let rss = Arc::new(RssLog::default());
    let sampler = tokio::spawn({
        let rss = rss.clone();
        async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                every.tick().await;
                let sample = (start.elapsed().as_secs_f64(), rss_kib());
                rss.samples
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(sample);
            }
        }
    });
    // A PostgreSQL server of this benchmark's own (the one `ORRERY_TEST_POSTGRES_URL` names, or
    // a throwaway one, see tests/src/postgres.rs), stopped before it exits.
    let postgres = if args.stores.contains(&StoreKind::Postgres) {
        Some(
            tokio::task::spawn_blocking(|| match std::env::var(postgres::URL_ENV) {
                Ok(url) if !url.is_empty() => postgres::Server::existing(&url),
                _ => postgres::Server::start(),
            })
            .await??,
        )
    } else {
        None
    };
    let mut out = Vec::new();
    for &store in &args.stores {
        let dir = temp_dir("bench-sidecar")?;
        let url = match store {
            StoreKind::Sqlite => format!("sqlite:{}", dir.join("events.db").display()),
            StoreKind::Postgres => {
                postgres
                    .as_ref()
                    .context("no PostgreSQL server")?
                    .create_database("bench")
                    .await?
            }
        };
        let collector = if args.otel {
            Some(orrery_tests::otlp::OtlpSink::start_quiet()?)
        } else {
            None
        };
        let settings = SidecarSettings {
            max_streams_per_person: MAX_STREAMS_PER_PERSON,
            otel: match &collector {
                Some(sink) => Some(orrery_operator::otel::OtelSettings::new(&sink.url)?),
                None => None,
            },
            ..SidecarSettings::default()
        };
        let sidecar_started = Instant::now();
        let mut sidecar = TestSidecar::start(&url, settings).await?;
        let bench = Arc::new(Bench {
            admin: admin.clone(),
            ns: ns.name.clone(),
            alice: alice.clone(),
            signer: test_signer()?,
            post: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(60))
                .build()?,
            follow: reqwest::Client::builder()
                .no_proxy()
                .connect_timeout(Duration::from_secs(10))
                .build()?,
            sidecar: sidecar.url.clone(),
            sidecar_addr: sidecar.address,
            start,
            token_lifetime: 3600 + args.soak_minutes * 60,
            names: AtomicU64::new(0),
            store: sidecar.sidecar.store.clone(),
            sidecar_started,
        });
        eprintln!(
            "bench_sidecar: {} (RSS {} MiB)",
            store.name(),
            mib(rss_kib())
        );
        let mut rounds = Vec::new();
        for &kind in &args.rounds {
            let report = round(&bench, &args, &rss, store, kind).await?;
            eprintln!(
                "bench_sidecar: {} round done: {} events in {:.1} s, p99 {}",
                store.name(),
                report.events,
                report.seconds,
                ms(report.latency.p99_us)
            );
            rounds.push(report);
        }
        let soak = if args.soak_minutes > 0 {
            Some(soak(&bench, &args, store, args.soak_minutes).await?)
        } else {
            None
        };
        let ingested = sidecar.sidecar.ingested();
        let exported = match &collector {
            Some(sink) => {
                // What waits is sent within a second or two once ingest stops.
                tokio::time::sleep(Duration::from_secs(3)).await;
                let otel = &sidecar.sidecar.metrics.otel;
                Some((
                    otel.exported_total(),
                    otel.dropped_total("queue_full")
                        + otel.dropped_total("export_failed")
                        + otel.dropped_total("refused"),
                    sink.count().await?,
                ))
            }
            None => None,
        };
        sidecar.stop().await?;
        let _ = std::fs::remove_dir_all(&dir);
        out.push((store, rounds, soak, ingested, exported));
    }
    sampler.abort();
    if let Some(server) = postgres {
        tokio::task::spawn_blocking(move || drop(server)).await?;
    }

    println!("## Sidecar benchmark");
    println!();
    println!("- command: `{command}`");
    println!(
        "- build: {}",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    println!(
        "- machine: {machine_before}; at the end: load average {}",
        load_average()
    );
    println!("- date: {}", orrery_runner::events::now_rfc3339());
    println!(
        "- per round: {} runs × {} events, batches of {BATCH_MIN}–{BATCH_MAX}, {} posters, {} \
         SSE subscribers (alice, {} per run); sidecar settings: max_streams_per_person \
         {MAX_STREAMS_PER_PERSON} (a benchmark setting; the default is 4), everything else default",
        args.runs,
        args.events,
        args.posters,
        args.subscribers,
        args.subscribers as f64 / args.runs as f64,
    );
    println!(
        "- stores: SQLite, a file in the temp dir (the sidecar's WAL with synchronous=FULL: a \
         sync per stored batch); PostgreSQL, the test server of tests/src/postgres.rs (fsync=off, \
         synchronous_commit=off: no disk waits), on the same machine"
    );
    println!(
        "- latency: from the instant a batch is first sent to the instant the chunk holding the \
         event's frame is read by a subscriber, both in this process"
    );
    println!(
        "- peak RSS of the process (VmHWM): {} MiB",
        mib(status_kib("VmHWM:"))
    );
    println!(
        "- traces: {}",
        if args.otel {
            "exported to a collector on this machine (testenv otlpsink --quiet: decodes and counts)"
        } else {
            "off"
        }
    );
    for (store, rounds, soak, ingested, exported) in &out {
        print_store(*store, &args, rounds, soak.as_ref());
        println!();
        println!("Events the sidecar stored ({}): {ingested}.", store.name());
        if let Some((sent, dropped, taken)) = exported {
            println!(
                "Spans exported ({}): {sent}, dropped {dropped}; the collector took {taken}.",
                store.name()
            );
        }
    }
    Ok(())
}
