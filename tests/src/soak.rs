//! A chaos soak with invariants (issue 26): `runs` StudioRuns, some asking a person, on the real
//! control plane while a seeded chaos loop injects `faults` faults, then a check of what must
//! hold after any mix of them, printed as a table.
//!
//! The runs go in spread over the time the chaos takes, so they span it; every kind of fault comes once,
//! in an order drawn from the seed, before any comes again.
//!
//! The system: the controllers in-process as the operator's ServiceAccount, their client
//! through the fault proxy ([`crate::fault_proxy`]); a sidecar of the soak's own on PostgreSQL
//! ([`crate::sidecar_fixture::TestSidecar`]); runners as containers of the dev node. The
//! faults, drawn from the seed:
//!
//! - **operator**: the controllers killed mid-flight and started again 1 to 3 s later;
//! - **sidecar**: the sidecar killed (open connections included) and restarted on its port;
//! - **runner**: the runner pod of a running run deleted (the run fails, never replayed);
//! - **api-outage**: every request of the operator's dropped and its watches cut, 3 to 5 s;
//! - **events-dropped**: the events of the operator's watches dropped, 6 s (the resync makes
//!   them up);
//! - **database**: every connection to the sidecar's database cut;
//! - **database restarted**: the sidecar's PostgreSQL server (one of the soak's own) stopped
//!   cleanly and started again 1 to 3 s later;
//! - **database killed**: every process of that server killed with SIGKILL, started again 1
//!   to 3 s later (it recovers from its write-ahead log).
//!
//! Meanwhile a scripted person (alice, who creates the runs) decides every approval that comes,
//! by the sidecar's API or by appending to the run's `status.decisions` as `kubectl patch`
//! does, under the chart's admission policies (without them the sidecar would honour only the
//! API's decisions), and every run is followed live from its creation as its owner would (SSE,
//! resumed with `Last-Event-ID`).
//!
//! The invariants: every run ends in exactly one final phase, which never changes once
//! reached (a watch records every phase each run showed); every stored trace is `1..N` with no
//! gap or duplicate and ends with `run.end`, and equals what the runner printed when its pod is
//! still there to read; every followed stream sent each stored event once, in order, across
//! its resumes; every approval asked is settled exactly once (one settlement event,
//! not pending in the sidecar) and carries at most one decision; no pod, Secret or
//! NetworkPolicy of a run that is gone; and no panic anywhere in the process.

use crate::fault_proxy::{Fault, FaultProxy, Matcher};
use crate::manifests::{documents, draft_review_publish_on, scripted_model};
use crate::sidecar_fixture::TestSidecar;
use crate::studio::{
    ChartStudioOptions, FRONT_LABEL, ReplicatedOptions, SIDECAR_PORT, Studio, StudioOptions,
    api_call, release_name, token,
};
use crate::testenv::ALICE;
use anyhow::{Context as _, Result, ensure};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::watcher;
use orrery_crds::StudioRun;
use orrery_crds::events::TraceEvent;
use orrery_crds::run::RunPhase;
use orrery_operator::sidecar::SidecarSettings;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a soak does.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// The seed of every random choice (the runs' kinds and timing, the faults).
    pub seed: u64,
    /// How many runs.
    pub runs: usize,
    /// How many faults.
    pub faults: usize,
    /// The namespace's name prefix.
    pub prefix: String,
    /// The kinds of fault drawn from; every kind of the system's when empty
    /// ([`Chaos::ALL`], [`Chaos::CHART`]).
    pub kinds: Vec<Chaos>,
    /// The chart with two operator replicas (leader election, the sidecar on PostgreSQL, pods
    /// with addresses of their own) instead of in-process controllers.
    pub chart: bool,
}

/// A fault of the chaos loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Chaos {
    /// The controllers killed and started again.
    Operator,
    /// The sidecar killed and restarted.
    Sidecar,
    /// A running run's pod deleted.
    Runner,
    /// The API server unreachable for the operator.
    ApiOutage,
    /// The operator's watch events dropped.
    EventsDropped,
    /// Every connection to the sidecar's database cut.
    Database,
    /// The sidecar's PostgreSQL server stopped (a clean shutdown) and started again.
    DatabaseRestarted,
    /// Every process of the sidecar's PostgreSQL server killed with SIGKILL, then started
    /// again (it recovers from its write-ahead log).
    DatabaseKilled,
    /// The chart: the operator pod holding the leader Lease deleted (its Deployment makes
    /// another; a standby takes the Lease).
    LeaderPod,
    /// The chart: an operator pod not holding the Lease deleted.
    StandbyPod,
    /// The API server stopped (SIGSTOP) for 3 to 5 s, then continued: every client's requests
    /// and watches hang, none fails.
    ApiStalled,
}

impl Chaos {
    /// Every fault of the in-process system, in the order the seed picks from.
    pub const ALL: [Chaos; 8] = [
        Chaos::Operator,
        Chaos::Sidecar,
        Chaos::Runner,
        Chaos::ApiOutage,
        Chaos::EventsDropped,
        Chaos::Database,
        Chaos::DatabaseRestarted,
        Chaos::DatabaseKilled,
    ];

    /// Every fault of the chart's system ([`SoakOptions::chart`]); a killed sidecar is its
    /// container in an operator pod.
    pub const CHART: [Chaos; 8] = [
        Chaos::LeaderPod,
        Chaos::StandbyPod,
        Chaos::Sidecar,
        Chaos::Runner,
        Chaos::ApiStalled,
        Chaos::Database,
        Chaos::DatabaseRestarted,
        Chaos::DatabaseKilled,
    ];

    /// Its name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Chaos::Operator => "operator killed",
            Chaos::Sidecar => "sidecar killed",
            Chaos::Runner => "runner pod deleted",
            Chaos::ApiOutage => "API server unreachable",
            Chaos::EventsDropped => "watch events dropped",
            Chaos::Database => "database connections cut",
            Chaos::DatabaseRestarted => "database restarted",
            Chaos::DatabaseKilled => "database killed (SIGKILL)",
            Chaos::LeaderPod => "leader's pod deleted",
            Chaos::StandbyPod => "standby's pod deleted",
            Chaos::ApiStalled => "API server stopped (SIGSTOP)",
        }
    }
}

/// What a soak found.
#[derive(Debug, Default)]
pub struct SoakReport {
    /// The seed it ran with.
    pub seed: u64,
    /// How many runs ended in each final phase.
    pub phases: BTreeMap<String, usize>,
    /// How many faults of each kind were injected.
    pub faults: BTreeMap<Chaos, usize>,
    /// Each invariant: its name, how many cases were checked, and what broke it.
    pub checks: Vec<(&'static str, usize, Vec<String>)>,
    /// How long it took.
    pub took: Duration,
}

impl SoakReport {
    /// Whether every invariant held.
    pub fn held(&self) -> bool {
        self.checks.iter().all(|(_, _, broken)| broken.is_empty())
    }

    /// The report as a Markdown table, then each broken case.
    pub fn table(&self) -> String {
        let mut out = format!(
            "seed {}, {} runs, {:.0} s\n\n| what | count | result |\n|---|---|---|\n",
            self.seed,
            self.phases.values().sum::<usize>(),
            self.took.as_secs_f64()
        );
        for (phase, n) in &self.phases {
            out.push_str(&format!("| runs ended {phase} | {n} | |\n"));
        }
        for (fault, n) in &self.faults {
            out.push_str(&format!("| fault: {} | {n} | |\n", fault.name()));
        }
        for (name, checked, broken) in &self.checks {
            let result = if broken.is_empty() {
                "held".to_owned()
            } else {
                format!("**broken {} times**", broken.len())
            };
            out.push_str(&format!("| {name} | {checked} | {result} |\n"));
        }
        for (name, _, broken) in &self.checks {
            for b in broken {
                out.push_str(&format!("\n- {name}: {b}"));
            }
        }
        out
    }
}

/// SplitMix64: every random choice of a soak comes from its seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high.saturating_sub(low) + 1)
    }

    /// True with probability `percent`/100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}

/// Panics anywhere in the process since [`count_panics`] was first called.
static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Counts every panic of the process from now on (the default hook still prints it).
fn count_panics() {
    static HOOKED: std::sync::Once = std::sync::Once::new();
    HOOKED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

/// The model entries: the same nodes answering fast, in a while, and slowly.
fn models() -> String {
    let script = |delay: u64| {
        json!({
            "draft": [{"delayMs": delay, "reply": "draft of: {{input}}"}],
            "polish": [{"delayMs": delay / 2, "reply": "polished: {{input}}"}],
            "publish": [{"delayMs": delay / 4, "reply": "published: {{input}}"}]
        })
    };
    documents(&[
        scripted_model("quick", script(200)),
        scripted_model("steady", script(1500)),
        scripted_model("slow", script(5000)),
    ])
}

/// Run `name` on `model`: a pipeline, or (`asks`) draft → a person → publish.
fn run_manifest(name: &str, model: &str, asks: bool) -> Value {
    let composition = if asks {
        draft_review_publish_on(model)
    } else {
        json!({
            "pattern": "Pipeline",
            "budgets": {"timeoutSeconds": 600},
            "nodes": [
                {"id": "draft", "kind": "LLMAgent", "model": model, "instruction": "Draft it."},
                {"id": "polish", "kind": "LLMAgent", "model": model, "instruction": "Polish it."}
            ],
            "edges": [{"from": "draft", "to": "polish"}]
        })
    };
    json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": name},
        "spec": {"composition": composition, "input": format!("notes {name}"), "owner": ALICE}
    })
}

/// Every phase each run (by UID) showed, in order, as a watch saw them.
type Phases = Arc<Mutex<HashMap<String, (String, Vec<RunPhase>)>>>;

/// Records the phases of every run of the namespace until the task is aborted.
fn watch_phases(studio: &Studio) -> (Phases, tokio::task::JoinHandle<()>) {
    let phases: Phases = Arc::default();
    let runs = studio.runs();
    let seen = phases.clone();
    let task = tokio::spawn(async move {
        let mut stream = watcher(runs, watcher::Config::default()).boxed();
        while let Some(event) = stream.next().await {
            let run = match event {
                Ok(watcher::Event::Apply(run) | watcher::Event::InitApply(run)) => run,
                _ => continue,
            };
            let (Some(uid), Some(phase)) = (
                run.metadata.uid.clone(),
                run.status.as_ref().and_then(|s| s.phase),
            ) else {
                continue;
            };
            if let Ok(mut all) = seen.lock() {
                let entry = all
                    .entry(uid)
                    .or_insert_with(|| (run.metadata.name.clone().unwrap_or_default(), vec![]));
                if entry.1.last() != Some(&phase) {
                    entry.1.push(phase);
                }
            }
        }
    });
    (phases, task)
}

/// The sidecars people reach (their base URLs): the in-process one, or each operator pod's of
/// the chart, kept current as pods come and go.
type Sidecars = Arc<Mutex<Vec<String>>>;

/// One of `sidecars`, the `n`th in turn (another one on each try).
fn pick(sidecars: &Sidecars, n: usize) -> Option<String> {
    let all = sidecars.lock().ok()?;
    (!all.is_empty()).then(|| all[n % all.len()].clone())
}

/// The scripted person: decides every pending approval of the namespace, approving,
/// alternately through the sidecar's API and by appending to `status.decisions`. A decision
/// that did not land (the sidecar killed or the API server stopped as it was sent) is made
/// again if the approval is still pending 10 s later, as a person would (a decision that landed
/// but whose answer was lost is no longer pending by then); one refused with 409 or 422
/// (already decided, or settled meanwhile) is not.
/// Alice's own decisions are hers: the admission policies check who writes one.
fn person(
    studio: &Studio,
    alices_runs: kube::Api<StudioRun>,
    sidecars: Sidecars,
) -> Result<tokio::task::JoinHandle<()>> {
    let runs = studio.runs();
    let alice = token(studio.env, ALICE)?;
    let ns = studio.ns.name.clone();
    Ok(tokio::spawn(async move {
        let decided: Arc<Mutex<HashSet<(String, String)>>> = Arc::default();
        let mut by_api = true;
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let Ok(list) = runs.list(&ListParams::default()).await else {
                continue;
            };
            for run in list.items {
                let name = run.metadata.name.clone().unwrap_or_default();
                let pending = run
                    .status
                    .as_ref()
                    .map(|s| s.pending_approvals.clone())
                    .unwrap_or_default();
                for approval in pending {
                    let key = (name.clone(), approval.id.clone());
                    let count = {
                        let mut decided = decided.lock().unwrap_or_else(|e| e.into_inner());
                        if !decided.insert(key.clone()) {
                            continue;
                        }
                        decided.len()
                    };
                    by_api = !by_api;
                    if by_api && let Some(sidecar) = pick(&sidecars, count) {
                        let url = format!(
                            "{sidecar}/api/v1/runs/{ns}/{name}/approvals/{}",
                            approval.id
                        );
                        let body = json!({"decision": "Approve", "digest": approval.digest});
                        let (alice, decided) = (alice.clone(), decided.clone());
                        // The reply waits for the run to take it up: not awaited here.
                        tokio::spawn(async move {
                            let landed = matches!(
                                api_call(reqwest::Method::POST, url, &alice, Some(body)).await,
                                Ok((status, _)) if status.is_success() || status.as_u16() == 409 || status.as_u16() == 422
                            );
                            if !landed {
                                forget_later(decided, key);
                            }
                        });
                    } else {
                        let patch = json!([{"op": "add", "path": "/status/decisions/-", "value": {
                            "approvalId": approval.id, "decision": "Approve",
                            "digest": approval.digest, "decidedBy": ALICE
                        }}]);
                        let landed = match serde_json::from_value(patch) {
                            Ok(patch) => alices_runs
                                .patch_status(
                                    &name,
                                    &PatchParams::default(),
                                    &Patch::Json::<()>(patch),
                                )
                                .await
                                .is_ok(),
                            Err(_) => true,
                        };
                        if !landed {
                            forget_later(decided.clone(), key);
                        }
                    }
                }
            }
        }
    }))
}

/// Lets the person decide `key` again in 10 s, if it is still pending then.
fn forget_later(decided: Arc<Mutex<HashSet<(String, String)>>>, key: (String, String)) {
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(10)).await;
        decided
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
    });
}

/// The seq of every event each followed run's stream sent, by run name.
type Followed = Arc<Mutex<HashMap<String, Arc<Mutex<Vec<u64>>>>>>;

/// Follows run `name`'s trace live as its owner would (SSE from its first event, resumed
/// with `Last-Event-ID` after every drop) until `run.end`, recording in `got` the seq of each
/// event the sidecar sent, repeats included, so a gap or a repeat across a resume shows.
async fn follow(
    sidecars: Sidecars,
    ns: String,
    name: String,
    alice: String,
    got: Arc<Mutex<Vec<u64>>>,
) {
    let Ok(client) = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .build()
    else {
        return;
    };
    let mut last = 0u64;
    for attempt in 0usize.. {
        let Some(sidecar) = pick(&sidecars, attempt) else {
            tokio::time::sleep(Duration::from_millis(300)).await;
            continue;
        };
        let url = format!("{sidecar}/api/v1/runs/{ns}/{name}/events");
        let mut request = client
            .get(&url)
            .bearer_auth(&alice)
            .header(reqwest::header::ACCEPT, "text/event-stream");
        if last > 0 {
            request = request.header("Last-Event-ID", last.to_string());
        }
        if let Ok(response) = request.send().await
            && response.status().is_success()
        {
            let mut stream = response.bytes_stream();
            let mut reader = kubectl_orrery::logs::FrameReader::default();
            while let Some(Ok(chunk)) = stream.next().await {
                let Ok(frames) = reader.push(&chunk) else {
                    break;
                };
                for frame in frames {
                    let Ok(event) = serde_json::from_str::<TraceEvent>(&frame.data) else {
                        continue;
                    };
                    if let Ok(mut got) = got.lock() {
                        got.push(event.seq);
                    }
                    last = event.seq;
                    if event.kind() == "run.end" {
                        return;
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The stored trace of run `name`, page by page, as its owner reads it.
async fn stored_trace(sidecar: &str, ns: &str, name: &str, alice: &str) -> Result<Vec<TraceEvent>> {
    let mut events: Vec<TraceEvent> = Vec::new();
    let mut after = 0;
    for _ in 0..1000 {
        let (status, body) = api_call(
            reqwest::Method::GET,
            format!("{sidecar}/api/v1/runs/{ns}/{name}/events?after={after}"),
            alice,
            None,
        )
        .await?;
        ensure!(
            status.is_success(),
            "reading {name}'s events: {status} {body}"
        );
        let page: Vec<TraceEvent> = serde_json::from_value(body["events"].clone())?;
        let next = body["next"].as_u64().unwrap_or(after);
        let complete = body["complete"] == json!(true);
        let empty = page.is_empty();
        events.extend(page);
        if complete || empty || next == after {
            break;
        }
        after = next;
    }
    Ok(events)
}

/// What the soak runs on (one of it per soak: its size does not matter).
#[allow(clippy::large_enum_variant)]
enum System {
    /// The controllers in-process, their client through `proxy`; a sidecar of the soak's own.
    InProcess {
        proxy: FaultProxy,
        sidecar: TestSidecar,
    },
    /// The chart with two operator replicas.
    Chart(Chart),
}

/// A line every half minute for the person watching a long soak: how many runs are queued,
/// running and ended, and (in-process) how many status writes of runs the operator sent since
/// the last line (a queue rewritten on every start shows here).
struct Progress {
    last: Instant,
    seen: usize,
}

impl Progress {
    fn new() -> Self {
        Self {
            last: Instant::now(),
            seen: 0,
        }
    }

    async fn say(&mut self, studio: &Studio, system: &System, started: Instant) {
        if self.last.elapsed() < Duration::from_secs(30) {
            return;
        }
        let Ok(runs) = studio.runs().list(&ListParams::default()).await else {
            return;
        };
        let (mut queued, mut running, mut ended) = (0, 0, 0);
        for run in &runs.items {
            let status = run.status.as_ref();
            if status
                .and_then(|s| s.phase)
                .is_some_and(RunPhase::is_terminal)
            {
                ended += 1;
            } else if status.is_some_and(|s| s.runner_pod.is_some()) {
                running += 1;
            } else if status.is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.r#type == "Succeeded" && c.reason == "Queued")
            }) {
                queued += 1;
            }
        }
        let writes = match system {
            System::InProcess { proxy, .. } => {
                let seen = proxy.seen();
                let since = seen.get(self.seen..).unwrap_or_default();
                let writes = since
                    .iter()
                    .filter(|s| s.path.contains("studioruns") && s.path.contains("/status"))
                    .filter(|s| s.method != http::Method::GET)
                    .count();
                self.seen = seen.len();
                format!(
                    ", {:.1} status writes of runs a second",
                    writes as f64 / self.last.elapsed().as_secs_f64()
                )
            }
            System::Chart(_) => String::new(),
        };
        eprintln!(
            "soak: {:>5.1} s: {} runs: {queued} queued, {running} with a pod, {ended} ended{writes}",
            started.elapsed().as_secs_f64(),
            runs.items.len()
        );
        self.last = Instant::now();
    }
}

/// RSS samples in bytes per `(pod, container and its restart count)`, in time order.
type Samples = Arc<Mutex<BTreeMap<(String, String), Vec<u64>>>>;

/// The chart's side of a soak: its release, and a task that keeps the sidecars' URLs current,
/// puts every operator pod behind the runners' front and samples the containers' RSS.
struct Chart {
    release: String,
    tending: tokio::task::JoinHandle<()>,
    /// RSS samples in bytes per `(pod, container and its restart count)`, in time order.
    rss: Samples,
    /// Panics found in the logs of operator pods before they were deleted.
    panics: Arc<Mutex<Vec<String>>>,
}

/// The replicated chart's settings for a soak: a short Lease (a deleted leader's successor
/// takes over in seconds), the resync of the in-process soak.
const CHART_VALUES: &[&str] = &[
    "controller.leaderElection.leaseDurationSeconds=6",
    "controller.leaderElection.leaseGraceSeconds=2",
    "config.resyncSeconds=5",
];

/// Starts the system `options` asks for on `database`: the studio, the system, and the
/// sidecars people reach.
async fn start_system(options: &SoakOptions, database: &str) -> Result<(Studio, System, Sidecars)> {
    if options.chart {
        let (studio, urls) = Studio::install_replicated(
            ChartStudioOptions {
                prefix: &options.prefix,
                prelude: "",
                manifests: &models(),
                users: &[ALICE],
                policies: true,
                values: CHART_VALUES,
            },
            ReplicatedOptions {
                replicas: 2,
                bridge: "orxsoak1",
                subnet: "10.213.141.0/24",
                database,
            },
        )
        .await?;
        let sidecars: Sidecars = Arc::new(Mutex::new(urls));
        let release = release_name(&studio.ns.name);
        let rss = Arc::default();
        let tending = tend(&studio, &release, sidecars.clone(), Arc::clone(&rss));
        let chart = Chart {
            release,
            tending,
            rss,
            panics: Arc::default(),
        };
        return Ok((studio, System::Chart(chart), sidecars));
    }
    // The sidecar's address is chosen first: the studio's runners are given it, and the sidecar
    // is configured with the admission policies the studio binds (so it honours the decisions
    // alice writes by hand, which they check).
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], crate::harness::free_port()?));
    let url = format!("http://{address}");
    let studio = Studio::start(StudioOptions {
        prefix: &options.prefix,
        sidecar_url: &url,
        manifests: &models(),
        users: &[ALICE],
        policies: true,
        configure: &|config| {
            config.run_limits.max_concurrent_runs_per_owner = None;
            config.resync_seconds = 5;
        },
    })
    .await?;
    let refs = studio.admission_policy_refs();
    let sidecar = TestSidecar::start_on_with(address, database, SidecarSettings::default(), &|c| {
        c.admission_policies = refs.clone();
    })
    .await;
    let mut sidecar = match sidecar {
        Ok(sidecar) => sidecar,
        Err(e) => {
            let _ = studio.shutdown().await;
            return Err(e);
        }
    };
    let proxy = match FaultProxy::start(studio.env).await {
        Ok(proxy) => proxy,
        Err(e) => {
            let _ = studio.shutdown().await;
            let _ = sidecar.stop().await;
            return Err(e);
        }
    };
    let sidecars: Sidecars = Arc::new(Mutex::new(vec![sidecar.url.clone()]));
    Ok((studio, System::InProcess { proxy, sidecar }, sidecars))
}

/// The operator pods of `release` that run both containers on an address of their own and
/// are not being deleted: `(name, sidecar URL, labelled for the front)`.
async fn live_operator_pods(
    pods: &kube::Api<Pod>,
    release: &str,
) -> Result<Vec<(String, String, bool, Pod)>> {
    let selector = crate::chart::operator_selector(release);
    let mut live = Vec::new();
    for pod in pods
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
    {
        let running = crate::studio::running_containers(&pod);
        let ip = pod
            .status
            .as_ref()
            .and_then(|s| s.pod_ip.clone())
            .unwrap_or_default();
        if pod.metadata.deletion_timestamp.is_some()
            || running < 2
            || ip.is_empty()
            || ip.starts_with("127.")
        {
            continue;
        }
        let front = pod
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.get(FRONT_LABEL).is_some_and(|v| v == "true"));
        live.push((
            pod.metadata.name.clone().unwrap_or_default(),
            format!("http://{ip}:{SIDECAR_PORT}"),
            front,
            pod,
        ));
    }
    live.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(live)
}

/// The chart's tending task: every half second the sidecars' URLs are the live operator pods',
/// each of them is put behind the runners' front (a pod its Deployment made again has not
/// been), and every 5 s each container's RSS is sampled.
fn tend(
    studio: &Studio,
    release: &str,
    sidecars: Sidecars,
    rss: Samples,
) -> tokio::task::JoinHandle<()> {
    let pods = studio.pods();
    let release = release.to_owned();
    let runc = studio
        .executor()
        .runc_state_dir()
        .map(std::path::Path::to_path_buf);
    tokio::spawn(async move {
        for tick in 0u64.. {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let Ok(live) = live_operator_pods(&pods, &release).await else {
                continue;
            };
            if !live.is_empty()
                && let Ok(mut all) = sidecars.lock()
            {
                *all = live.iter().map(|(_, url, _, _)| url.clone()).collect();
            }
            for (name, _, front, _) in &live {
                if !front {
                    let patch = json!({"metadata": {"labels": {FRONT_LABEL: "true"}}});
                    let _ = pods
                        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await;
                }
            }
            if tick % 10 != 0 {
                continue;
            }
            let Some(runc) = &runc else { continue };
            for (name, _, _, pod) in &live {
                let statuses = pod
                    .status
                    .as_ref()
                    .and_then(|s| s.container_statuses.clone())
                    .unwrap_or_default();
                for c in statuses {
                    let Some(id) = c
                        .container_id
                        .as_deref()
                        .and_then(|id| id.strip_prefix("runc://"))
                    else {
                        continue;
                    };
                    if let Some(bytes) = container_rss(runc, id).await
                        && let Ok(mut all) = rss.lock()
                    {
                        // Per process: a container started again is another one.
                        all.entry((name.clone(), format!("{} #{}", c.name, c.restart_count)))
                            .or_default()
                            .push(bytes);
                    }
                }
            }
        }
    })
}

/// The resident set of runc container `id`'s first process, in bytes.
async fn container_rss(state: &std::path::Path, id: &str) -> Option<u64> {
    let out = tokio::process::Command::new("runc")
        .arg("--root")
        .arg(state)
        .args(["state", id])
        .output()
        .await
        .ok()?;
    let state: Value = serde_json::from_slice(&out.stdout).ok()?;
    let pid = state["pid"].as_u64()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Lines of `log` that say a thread panicked.
fn panic_lines(log: &str) -> impl Iterator<Item = &str> {
    log.lines().filter(|l| l.contains("panicked at"))
}

impl Chart {
    /// The live operator pods' names.
    async fn operator_pods(&self, studio: &Studio) -> Result<Vec<String>> {
        Ok(live_operator_pods(&studio.pods(), &self.release)
            .await?
            .into_iter()
            .map(|(name, ..)| name)
            .collect())
    }

    /// The pod holding the leader Lease, if any holds it.
    async fn lease_holder(&self, studio: &Studio) -> Option<String> {
        let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
            studio.ns.api(&studio.admin);
        leases
            .get_opt(&format!("{}-operator", self.release))
            .await
            .ok()
            .flatten()
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
    }

    /// Keeps the panics in pod `pod`'s container logs before it is deleted (its logs go
    /// with it).
    async fn keep_logs(&self, studio: &Studio, pod: &str) {
        let Ok(logs) = studio.container_logs().await else {
            return;
        };
        for (p, container, text) in logs {
            if p == pod
                && let Ok(mut panics) = self.panics.lock()
            {
                panics.extend(panic_lines(&text).map(|l| format!("{p}/{container}: {l}")));
            }
        }
    }

    /// The chart's invariants: a live pod holds the Lease; each operator and sidecar container
    /// that lived through the soak ends with an RSS within twice (and 64 MiB of) what it first
    /// used; no container of an operator pod panicked.
    async fn check(&self, studio: &Studio, report: &mut SoakReport) -> Result<()> {
        let holder = crate::harness::eventually(Duration::from_secs(30), || async {
            let live = self.operator_pods(studio).await?;
            let holder = self.lease_holder(studio).await.context("no Lease holder")?;
            ensure!(
                live.contains(&holder),
                "the Lease is held by {holder}, not one of the live pods {live:?}"
            );
            Ok(holder)
        })
        .await;
        report.checks.push((
            "the Lease held by a live pod",
            1,
            holder.err().map(|e| format!("{e:#}")).into_iter().collect(),
        ));
        let samples = self.rss.lock().map(|r| r.clone()).unwrap_or_default();
        let mut measured = 0;
        let mut grown = Vec::new();
        for ((pod, container), rss) in &samples {
            // Long enough to tell: half a minute of samples.
            if rss.len() < 6 {
                continue;
            }
            measured += 1;
            let first = rss[..3].iter().copied().max().unwrap_or_default();
            let last = rss.last().copied().unwrap_or_default();
            eprintln!(
                "soak: RSS {pod}/{container}: {} MiB at first, {} MiB at the end, {} samples",
                first >> 20,
                last >> 20,
                rss.len()
            );
            if last > first.saturating_mul(2) && last - first > 64 << 20 {
                grown.push(format!(
                    "{pod}/{container}: {} MiB to {} MiB",
                    first >> 20,
                    last >> 20
                ));
            }
        }
        report
            .checks
            .push(("operator and sidecar RSS flat", measured, grown));
        let mut panics = self.panics.lock().map(|p| p.clone()).unwrap_or_default();
        let live = self.operator_pods(studio).await?;
        for (pod, container, text) in studio.container_logs().await? {
            if live.contains(&pod) {
                panics.extend(panic_lines(&text).map(|l| format!("{pod}/{container}: {l}")));
            }
        }
        report
            .checks
            .push(("no panic in an operator pod", live.len(), panics));
        Ok(())
    }
}

/// The API server stopped with SIGSTOP; continued when resumed or dropped (whatever
/// happens, the control plane is never left stopped).
struct ApiStall(i32);

impl ApiStall {
    /// Stops the API server of `env` (its `TESTENV_APISERVER_PID`).
    fn stop(env: &crate::testenv::TestEnv) -> Result<ApiStall> {
        let pid: i32 = env
            .var("TESTENV_APISERVER_PID")
            .context("the control plane does not say its API server's PID (TESTENV_APISERVER_PID)")?
            .parse()
            .context("TESTENV_APISERVER_PID")?;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGSTOP,
        )
        .context("stopping the API server")?;
        Ok(ApiStall(pid))
    }

    fn resume(self) {
        drop(self);
    }
}

impl Drop for ApiStall {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0),
            nix::sys::signal::Signal::SIGCONT,
        );
    }
}

/// Creates `run` as a person would under the faults: a request the API server never answered
/// (a stalled or restarted server) is sent again, and a run found to exist already (its first
/// request landed, its answer was lost) counts as created.
async fn create_run(runs: &kube::Api<StudioRun>, run: &StudioRun) -> Result<()> {
    let mut last = None;
    for _ in 0..20 {
        match runs.create(&kube::api::PostParams::default(), run).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(()),
            Err(kube::Error::Api(s)) if s.code < 500 && s.code != 429 => {
                return Err(kube::Error::Api(s).into());
            }
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Err(last.map_or_else(|| anyhow::anyhow!("not created"), anyhow::Error::from))
}

/// Runs the soak and checks the invariants.
pub async fn soak(options: &SoakOptions) -> Result<SoakReport> {
    count_panics();
    let panics_before = PANICS.load(Ordering::SeqCst);
    let started = Instant::now();
    let mut rng = Rng::new(options.seed);
    // A server of the soak's own: it is stopped and killed.
    let server = Arc::new(
        tokio::task::spawn_blocking(crate::postgres::Server::start_crash_safe)
            .await
            .context("PostgreSQL start-up task")??,
    );
    let database = server.create_database(&options.prefix).await?;
    let (mut studio, mut system, sidecars) = match start_system(options, &database).await {
        Ok(started) => started,
        Err(e) => {
            let _ = tokio::task::spawn_blocking(move || drop(server)).await;
            return Err(e);
        }
    };
    let result = async {
        if let System::InProcess { proxy, .. } = &system {
            studio.kill_operator().await?;
            studio.start_operator_through(proxy).await?;
        }
        let (phases, watching) = watch_phases(&studio);
        // The in-process sidecar comes back on the same port after each kill; the chart's are
        // each operator pod's, kept current.
        // Alice creates her runs and decides: the admission policies make the creator the
        // owner and let only her decide.
        let alices_runs: kube::Api<StudioRun> =
            studio.ns.api(&studio.env.client(ALICE).await?);
        let deciding = person(&studio, alices_runs.clone(), sidecars.clone())?;
        let followed: Followed = Arc::default();
        let alice = token(studio.env, ALICE)?;

        // The runs go in over the first part of the chaos.
        let mut asks: HashMap<String, bool> = HashMap::new();
        let mut plan: Vec<(String, Value, Duration)> = Vec::new();
        for i in 0..options.runs {
            let name = format!("soak-{i}");
            let model = ["quick", "steady", "slow"][rng.between(0, 2) as usize];
            let asking = rng.percent(30);
            asks.insert(name.clone(), asking);
            // Spread over the chaos (a fault every 3.5 s on average), at least 0.2 s apart.
            let spacing = (options.faults as u64 * 3500 / options.runs.max(1) as u64).max(200);
            let at = Duration::from_millis(i as u64 * spacing + rng.between(0, spacing / 2));
            plan.push((name.clone(), run_manifest(&name, model, asking), at));
        }
        let submitting = {
            let runs = alices_runs.clone();
            let (followed, sidecars, ns, alice) = (
                followed.clone(),
                sidecars.clone(),
                studio.ns.name.clone(),
                alice.clone(),
            );
            tokio::spawn(async move {
                let mut followers = Vec::new();
                let began = Instant::now();
                for (name, manifest, at) in plan {
                    tokio::time::sleep(at.saturating_sub(began.elapsed())).await;
                    let created = match serde_json::from_value::<StudioRun>(manifest) {
                        Ok(run) => create_run(&runs, &run).await,
                        Err(e) => Err(e.into()),
                    };
                    match created {
                        Ok(()) => {
                            eprintln!(
                                "soak: {:>5.1} s: {name} created",
                                began.elapsed().as_secs_f64()
                            );
                            let got = Arc::new(Mutex::new(Vec::new()));
                            if let Ok(mut all) = followed.lock() {
                                all.insert(name.clone(), got.clone());
                            }
                            followers.push(tokio::spawn(follow(
                                sidecars.clone(),
                                ns.clone(),
                                name,
                                alice.clone(),
                                got,
                            )));
                        }
                        Err(e) => eprintln!("soak: creating {name}: {e:#}"),
                    }
                }
                followers
            })
        };

        let mut faults: BTreeMap<Chaos, usize> = BTreeMap::new();
        // The runs whose pod was deleted, with that pod's UID.
        let mut disrupted: HashMap<String, String> = HashMap::new();
        // Every kind once, in a seeded order, before any comes again.
        let mut order: Vec<Chaos> = Vec::new();
        let kinds = if !options.kinds.is_empty() {
            options.kinds.clone()
        } else if options.chart {
            Chaos::CHART.to_vec()
        } else {
            Chaos::ALL.to_vec()
        };
        while order.len() < options.faults {
            let mut round = kinds.clone();
            for i in (1..round.len()).rev() {
                round.swap(i, rng.between(0, i as u64) as usize);
            }
            order.extend(round);
        }
        order.truncate(options.faults);
        let mut progress = Progress::new();
        for chaos in order {
            tokio::time::sleep(Duration::from_millis(rng.between(2000, 5000))).await;
            progress.say(&studio, &system, started).await;
            eprintln!(
                "soak: {:>5.1} s: {}",
                started.elapsed().as_secs_f64(),
                chaos.name()
            );
            let mut injected = true;
            match (chaos, &mut system) {
                (Chaos::Operator, System::InProcess { proxy, .. }) => {
                    studio.kill_operator().await?;
                    tokio::time::sleep(Duration::from_millis(rng.between(1000, 3000))).await;
                    studio.start_operator_through(proxy).await?;
                }
                (Chaos::Sidecar, System::InProcess { sidecar, .. }) => {
                    sidecar.kill().await;
                    tokio::time::sleep(Duration::from_millis(rng.between(1000, 3000))).await;
                    sidecar.restart().await?;
                }
                (Chaos::Sidecar, System::Chart(chart)) => {
                    let live = chart.operator_pods(&studio).await?;
                    injected = false;
                    if !live.is_empty() {
                        let pod = &live[rng.between(0, live.len() as u64 - 1) as usize];
                        match studio.kill_container(pod, "sidecar").await {
                            Ok(()) => injected = true,
                            Err(e) => eprintln!("soak: killing {pod}'s sidecar: {e:#}"),
                        }
                    }
                }
                (Chaos::LeaderPod | Chaos::StandbyPod, System::Chart(chart)) => {
                    let live = chart.operator_pods(&studio).await?;
                    let holder = chart.lease_holder(&studio).await;
                    let candidates: Vec<&String> = live
                        .iter()
                        .filter(|p| (Some(*p) == holder.as_ref()) == (chaos == Chaos::LeaderPod))
                        .collect();
                    injected = false;
                    if !candidates.is_empty() {
                        let pod =
                            candidates[rng.between(0, candidates.len() as u64 - 1) as usize].clone();
                        chart.keep_logs(&studio, &pod).await;
                        match studio.pods().delete(&pod, &DeleteParams::default()).await {
                            Ok(_) => injected = true,
                            Err(e) => eprintln!("soak: deleting {pod}: {e}"),
                        }
                    }
                }
                (Chaos::ApiStalled, _) => {
                    let stalled = ApiStall::stop(studio.env)?;
                    tokio::time::sleep(Duration::from_millis(rng.between(3000, 5000))).await;
                    stalled.resume();
                }
                (Chaos::Runner, _) => {
                    let running: Vec<String> = studio
                        .runs()
                        .list(&ListParams::default())
                        .await?
                        .items
                        .into_iter()
                        .filter(|r| {
                            matches!(
                                r.status.as_ref().and_then(|s| s.phase),
                                Some(RunPhase::Running | RunPhase::AwaitingApproval)
                            )
                        })
                        .filter_map(|r| r.metadata.name)
                        .collect();
                    injected = false;
                    if !running.is_empty() {
                        let name = &running[rng.between(0, running.len() as u64 - 1) as usize];
                        let pod = format!("{name}-runner");
                        let uid = studio
                            .pods()
                            .get_opt(&pod)
                            .await?
                            .and_then(|p| p.metadata.uid)
                            .unwrap_or_default();
                        match studio.pods().delete(&pod, &DeleteParams::default()).await {
                            Ok(_) => {
                                disrupted.insert(name.clone(), uid);
                                injected = true;
                            }
                            Err(e) => eprintln!("soak: deleting {pod}: {e}"),
                        }
                    }
                }
                (Chaos::ApiOutage, System::InProcess { proxy, .. }) => {
                    proxy.set(Fault::Reset, Matcher::all());
                    proxy.cut_streams();
                    tokio::time::sleep(Duration::from_millis(rng.between(3000, 5000))).await;
                    proxy.clear();
                }
                (Chaos::EventsDropped, System::InProcess { proxy, .. }) => {
                    proxy.set(Fault::DropEvents, Matcher::all());
                    tokio::time::sleep(Duration::from_secs(6)).await;
                    proxy.clear();
                }
                (Chaos::Database, _) => {
                    server
                        .execute(
                            &database,
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                             WHERE datname = current_database() AND pid <> pg_backend_pid()",
                        )
                        .await?;
                }
                (Chaos::DatabaseRestarted | Chaos::DatabaseKilled, _) => {
                    let down = server.clone();
                    tokio::task::spawn_blocking(move || match chaos {
                        Chaos::DatabaseKilled => down.kill(),
                        _ => down.stop(),
                    })
                    .await
                    .context("stopping PostgreSQL")??;
                    tokio::time::sleep(Duration::from_millis(rng.between(1000, 3000))).await;
                    let up = server.clone();
                    tokio::task::spawn_blocking(move || up.start_again())
                        .await
                        .context("starting PostgreSQL again")??;
                }
                (other, _) => {
                    eprintln!("soak: {} is not a fault of this system", other.name());
                    injected = false;
                }
            }
            if injected {
                *faults.entry(chaos).or_default() += 1;
            }
        }
        let followers = submitting.await.context("submitting the runs")?;

        // Every run ends. A long soak can leave a backlog that takes a while: the runs must keep
        // ending, and stalling 300 s with runs open is a failure.
        let mut deadline = Instant::now() + Duration::from_secs(300);
        let mut open_before = usize::MAX;
        let runs = loop {
            let runs = studio.runs().list(&ListParams::default()).await?.items;
            let open: Vec<String> = runs
                .iter()
                .filter(|r| {
                    !r.status
                        .as_ref()
                        .and_then(|s| s.phase)
                        .is_some_and(RunPhase::is_terminal)
                })
                .map(|r| {
                    let status = r.status.as_ref();
                    format!(
                        "{} ({:?}, {:?})",
                        r.metadata.name.clone().unwrap_or_default(),
                        status.and_then(|s| s.phase),
                        status
                            .and_then(|s| s.conditions.iter().find(|c| c.r#type == "Succeeded"))
                            .map(|c| c.reason.clone())
                    )
                })
                .collect();
            if runs.len() == options.runs && open.is_empty() {
                break runs;
            }
            if open.len() < open_before {
                open_before = open.len();
                deadline = Instant::now() + Duration::from_secs(300);
            }
            progress.say(&studio, &system, started).await;
            if Instant::now() >= deadline {
                // What the operator asked about the runs and their watches, for the report.
                let seen = match &system {
                    System::InProcess { proxy, .. } => proxy.seen(),
                    System::Chart(_) => Vec::new(),
                };
                let asked: Vec<String> = seen
                    .iter()
                    .filter(|s| s.path.contains("studioruns"))
                    .map(|s| {
                        format!(
                            "{:.1}s {} {} {}",
                            s.at.duration_since(started).as_secs_f64(),
                            s.method,
                            s.path,
                            s.status
                        )
                    })
                    .collect();
                anyhow::bail!(
                    "{} of {} runs created, no run ended for 300 s, still open: {open:?}; the operator's requests about runs:\n{}",
                    runs.len(),
                    options.runs,
                    asked.join("\n")
                );
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        };
        // The last settlements and counts reach the store and the status, and the followers
        // their run.end.
        tokio::time::sleep(Duration::from_secs(3)).await;
        deciding.abort();
        watching.abort();
        let waited = Instant::now() + Duration::from_secs(30);
        for follower in &followers {
            while !follower.is_finished() && Instant::now() < waited {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            follower.abort();
        }

        let mut report = SoakReport {
            seed: options.seed,
            faults,
            ..SoakReport::default()
        };
        for run in &runs {
            let phase = run.status.as_ref().and_then(|s| s.phase);
            *report
                .phases
                .entry(phase.map(|p| format!("{p:?}")).unwrap_or_default())
                .or_default() += 1;
        }

        // 1. One final phase, never changed once reached.
        let seen = phases.lock().map(|p| p.clone()).unwrap_or_default();
        let mut broken = Vec::new();
        for run in &runs {
            let uid = run.metadata.uid.clone().unwrap_or_default();
            let name = run.metadata.name.clone().unwrap_or_default();
            let Some((_, shown)) = seen.get(&uid) else {
                broken.push(format!("{name}: the watch saw no phase"));
                continue;
            };
            if let Some(first) = shown.iter().position(|p| p.is_terminal())
                && shown[first..].iter().any(|p| *p != shown[first])
            {
                broken.push(format!("{name}: phases {shown:?}"));
            }
        }
        report
            .checks
            .push(("one final phase, never changed", runs.len(), broken));

        // 2. Traces: 1..N, no gap or duplicate, ending with run.end, as printed.
        let alice = token(studio.env, ALICE)?;
        let ns = studio.ns.name.clone();
        let mut broken = Vec::new();
        let mut compared = 0;
        let mut traces: HashMap<String, Vec<TraceEvent>> = HashMap::new();
        let sidecar_url = pick(&sidecars, 0).context("no sidecar to read from")?;
        for run in &runs {
            let name = run.metadata.name.clone().unwrap_or_default();
            let stored = stored_trace(&sidecar_url, &ns, &name, &alice).await?;
            let seqs: Vec<u64> = stored.iter().map(|e| e.seq).collect();
            let want: Vec<u64> = (1..=seqs.len() as u64).collect();
            if seqs != want {
                broken.push(format!("{name}: stored seqs {seqs:?}"));
            } else if stored.last().map(TraceEvent::kind) != Some("run.end") {
                broken.push(format!(
                    "{name}: the stored trace ends with {:?}",
                    stored.last().map(TraceEvent::kind)
                ));
            } else if let Ok(printed) = studio.runner_log(run).await {
                compared += 1;
                if printed != stored {
                    broken.push(format!(
                        "{name}: stored {} events, the runner printed {}",
                        stored.len(),
                        printed.len()
                    ));
                }
            }
            traces.insert(name, stored);
        }
        report
            .checks
            .push(("trace 1..N, ends run.end", runs.len(), broken));
        report
            .checks
            .push(("stored trace = runner's stdout", compared, Vec::new()));

        // 2b. Followers: each event sent once, in order, across every resume.
        let followed = followed.lock().map(|f| f.clone()).unwrap_or_default();
        let mut broken = Vec::new();
        for (name, stored) in &traces {
            let got = followed
                .get(name)
                .and_then(|g| g.lock().ok().map(|g| g.clone()))
                .unwrap_or_default();
            let want: Vec<u64> = stored.iter().map(|e| e.seq).collect();
            if got != want {
                broken.push(format!("{name}: followed {got:?}, stored {want:?}"));
            }
        }
        report.checks.push((
            "followed live = stored, once each",
            followed.len(),
            broken,
        ));

        // 3. Approvals: settled once, at most one decision each.
        let mut broken = Vec::new();
        let mut asked = 0;
        for run in &runs {
            let name = run.metadata.name.clone().unwrap_or_default();
            if !asks.get(&name).copied().unwrap_or(false) {
                continue;
            }
            let trace = traces.get(&name).cloned().unwrap_or_default();
            let requested = trace
                .iter()
                .filter(|e| e.kind() == "approval.requested")
                .count();
            let settled = trace
                .iter()
                .filter(|e| e.kind() == "approval.decided")
                .count();
            asked += requested;
            if settled != requested {
                broken.push(format!(
                    "{name}: {requested} asked, {settled} settled in the trace"
                ));
            }
            let (status, body) = api_call(
                reqwest::Method::GET,
                format!("{sidecar_url}/api/v1/runs/{ns}/{name}/approvals"),
                &alice,
                None,
            )
            .await?;
            let items = body["items"].as_array().cloned().unwrap_or_default();
            if !status.is_success() || items.iter().any(|a| a["state"] == "pending") {
                broken.push(format!("{name}: the sidecar shows {status} {items:?}"));
            }
            let decisions = run
                .status
                .as_ref()
                .map(|s| s.decisions.clone())
                .unwrap_or_default();
            let mut per: HashMap<String, usize> = HashMap::new();
            for d in &decisions {
                *per.entry(d.approval_id.clone()).or_default() += 1;
            }
            if per.values().any(|n| *n > 1) {
                broken.push(format!("{name}: decisions {per:?}"));
            }
            if run
                .status
                .as_ref()
                .is_some_and(|s| !s.pending_approvals.is_empty())
            {
                broken.push(format!(
                    "{name}: ended with approvals pending in its status"
                ));
            }
        }
        report
            .checks
            .push(("approvals settled once, one decision", asked, broken));

        // 4. Nothing orphaned: every child's run is there.
        let live: HashSet<String> = runs.iter().filter_map(|r| r.metadata.uid.clone()).collect();
        let children = studio.run_children(None).await?;
        let orphans: Vec<String> = children
            .iter()
            .filter(|(_, uid)| !live.contains(uid))
            .map(|(what, _)| what.clone())
            .collect();
        report
            .checks
            .push(("no child without its run", children.len(), orphans));

        // 5. Runs whose pod was deleted failed for it and were never started again.
        let mut broken = Vec::new();
        for (name, deleted) in &disrupted {
            let pods: Vec<Pod> = match runs
                .iter()
                .find(|r| r.metadata.name.as_deref() == Some(name))
            {
                Some(run) => studio.runner_pods(run).await?,
                None => continue,
            };
            // The deleted pod may still be there, terminating; another one would be a replay.
            let others: Vec<String> = pods
                .iter()
                .filter_map(|p| p.metadata.uid.clone())
                .filter(|uid| uid != deleted)
                .collect();
            if !others.is_empty() {
                broken.push(format!(
                    "{name}: runner pod(s) {others:?} after its pod {deleted} was deleted"
                ));
            }
        }
        report.checks.push((
            "a deleted runner is never replayed",
            disrupted.len(),
            broken,
        ));

        // 6. The chart: the Lease held by a live pod, RSS flat, no panic in any container.
        if let System::Chart(chart) = &system {
            chart.check(&studio, &mut report).await?;
        }

        // 7. No panic.
        let panics = PANICS.load(Ordering::SeqCst) - panics_before;
        report.checks.push((
            "no panic in the process",
            1,
            if panics == 0 {
                vec![]
            } else {
                vec![format!("{panics} panic(s)")]
            },
        ));
        report.took = started.elapsed();
        anyhow::Ok(report)
    }
    .await;
    let stopped = studio.shutdown().await;
    let sidecar_stopped = match &mut system {
        System::InProcess { sidecar, .. } => sidecar.stop().await,
        System::Chart(chart) => {
            chart.tending.abort();
            Ok(())
        }
    };
    // Dropping the server waits for it to stop.
    let _ = tokio::task::spawn_blocking(move || drop(server)).await;
    let report = result?;
    stopped?;
    sidecar_stopped?;
    Ok(report)
}

/// The run UID label of a child.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_choices_and_another_seed_others() {
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..20).map(|_| rng.between(0, 5)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        let mut rng = Rng::new(1);
        assert!(
            (0..1000)
                .map(|_| rng.between(2, 4))
                .all(|n| (2..=4).contains(&n))
        );
    }
}
