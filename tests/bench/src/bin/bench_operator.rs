//! Benchmark (not a timed test): the operator on the real kube-apiserver, with the pod executor
//! as the kubelet and the `orrery-operator` binary as its own process.
//!
//! Measures:
//! - StudioRun create → runner pod created, one run at a time (p50, p99 over `--latency-runs`);
//! - `--runs` runs created at once: the time until that many runner pods exist and until every
//!   run is final;
//! - the operator's API writes per run lifecycle, from the apiserver's own
//!   `apiserver_request_total` (the writes only the operator makes: creating Secrets,
//!   NetworkPolicies, Pods and Events, patching or applying StudioRun status, deleting
//!   StudioRuns), and the 429s the apiserver answered anyone;
//! - the operator's RSS (`VmHWM` and `VmRSS` of /proc/<pid>/status) at the end.
//!
//! Every run is one Scripted node, so what is timed is the operator, the apiserver and the
//! executor, not a model. Concurrency limits are off (`runLimits: {}`) so nothing queues.
//!
//! ```text
//! cargo build --release -p orrery-runner -p orrery-operator
//! tests/e2e.sh cargo run --release -p orrery-tests --bin bench_operator -- [--runs 1000] [--latency-runs 50]
//! ```

use anyhow::{Context, Result, bail, ensure};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use orrery_crds::StudioRun;
use orrery_tests::harness::{TestNamespace, apply_yaml, ensure_crds, workspace_root};
use orrery_tests::manifests::scripted_model;
use orrery_tests::operator_fixture::{RUNNER_IMAGE, TEST_SIGNING_KEY};
use orrery_tests::pod_executor::{ExecutorConfig, PodExecutor, default_bin_dir};
use orrery_tests::testenv;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The model: its one node answers at once.
fn model() -> String {
    scripted_model(
        "scripted",
        serde_json::json!({"only": [{"reply": "done: {{input}}"}]}),
    )
}

struct Args {
    runs: usize,
    latency_runs: usize,
}

fn args() -> Result<Args> {
    let mut out = Args {
        runs: 1000,
        latency_runs: 50,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || -> Result<usize> {
            it.next()
                .with_context(|| format!("{flag} needs a number"))?
                .parse()
                .with_context(|| format!("{flag} needs a number"))
        };
        match flag.as_str() {
            "--runs" => out.runs = value()?,
            "--latency-runs" => out.latency_runs = value()?,
            other => bail!("unknown argument {other}; use --runs N and --latency-runs N"),
        }
    }
    Ok(out)
}

fn run_object(name: &str) -> Result<StudioRun> {
    Ok(serde_json::from_value(serde_json::json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": name},
        "spec": {
            "composition": {
                "pattern": "Pipeline",
                "nodes": [{"id": "only", "kind": "LLMAgent", "model": "scripted", "instruction": "Answer."}]
            },
            "input": "benchmark",
            "owner": "bench@example.com"
        }
    }))?)
}

/// The operator binary, next to this one (same profile).
fn operator_binary() -> Result<PathBuf> {
    let dir = default_bin_dir();
    let bin = dir.join("orrery-operator");
    ensure!(
        bin.is_file() && dir.join("orrery").is_file(),
        "no orrery-operator or orrery binary in {}: cargo build --release -p orrery-runner -p orrery-operator",
        dir.display()
    );
    Ok(bin)
}

/// Writes the config (the example with the executor's image, no run limits, its 14-day TTL) and
/// the signing key; starts the operator with `kubeconfig`.
fn start_operator(dir: &std::path::Path, kubeconfig: &std::path::Path) -> Result<Child> {
    let key = dir.join("key.pem");
    std::fs::write(&key, TEST_SIGNING_KEY)?;
    let example = std::fs::read_to_string(workspace_root().join("examples/operator/config.yaml"))?;
    let mut config: serde_yaml::Value = serde_yaml::from_str(&example)?;
    config["runner"]["image"] = RUNNER_IMAGE.into();
    config["runLimits"] = serde_yaml::Mapping::new().into();
    config["allowedModels"] = serde_yaml::Value::Null;
    config["defaultModel"] = serde_yaml::Value::Null;
    config["runToken"]["signingKeyFile"] = key.to_string_lossy().into_owned().into();
    let path = dir.join("config.yaml");
    std::fs::write(&path, serde_yaml::to_string(&config)?)?;
    let log = std::fs::File::create(dir.join("operator.log"))?;
    Command::new(operator_binary()?)
        .args(["controller", "--config"])
        .arg(&path)
        // One process: no Lease (its renewals would count among the writes measured), and
        // /metrics on any free port.
        .args(["--leader-elect=false", "--listen", "127.0.0.1:0"])
        .env("KUBECONFIG", kubeconfig)
        .stdout(log.try_clone()?)
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .context("starting orrery-operator")
}

/// `apiserver_request_total` by (verb, resource, subresource, code).
async fn request_totals(client: &Client) -> Result<HashMap<(String, String, String, String), f64>> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    let mut out = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let mut map = BTreeMap::new();
        for pair in labels.split("\",") {
            if let Some((k, v)) = pair.split_once("=\"") {
                map.insert(k.to_owned(), v.trim_end_matches('"').to_owned());
            }
        }
        let key = |k: &str| map.get(k).cloned().unwrap_or_default();
        let value: f64 = value.trim().parse().unwrap_or(0.0);
        *out.entry((
            key("verb"),
            key("resource"),
            key("subresource"),
            key("code"),
        ))
        .or_insert(0.0) += value;
    }
    Ok(out)
}

/// Whether a request is one only the operator makes (the executor binds pods and patches
/// their status; the benchmark creates StudioRuns).
fn operator_write(verb: &str, resource: &str, subresource: &str) -> bool {
    matches!(
        (verb, resource, subresource),
        ("POST", "secrets", "")
            | ("POST", "networkpolicies", "")
            | ("POST", "pods", "")
            | ("PATCH", "pods", "")
            | ("POST" | "PATCH", "events", "")
            | ("PATCH" | "APPLY" | "PUT", "studioruns", "status")
            | ("DELETE", "studioruns", "")
            | ("POST" | "DELETE", "controllerrevisions", "")
    )
}

/// The operator process, killed however the benchmark ends (an error included).
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The nearest-rank percentile `p` of `sorted` (with 50 samples p99 is the largest).
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn rss_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn is_final(run: &StudioRun) -> bool {
    run.status
        .as_ref()
        .and_then(|s| s.phase)
        .is_some_and(|p| p.is_terminal())
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = args()?;
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let admin = env.admin().await?;
    let ns = TestNamespace::create(env, "bench-op").await?;
    apply_yaml(&admin, Some(&ns.name), &model()).await?;
    let exec = PodExecutor::start_with(
        admin.clone(),
        ExecutorConfig::new(format!("node-{}", ns.name))
            .namespace(&ns.name)
            .bin_dir(default_bin_dir())
            .api_server(&env.server),
    )
    .await?;
    let work = std::env::temp_dir().join(orrery_tests::harness::unique_name("bench-operator"));
    std::fs::create_dir_all(&work)?;
    let operator = KillOnDrop(start_operator(&work, &env.kubeconfig)?);
    let runs: Api<StudioRun> = Api::namespaced(admin.clone(), &ns.name);
    let pods: Api<Pod> = Api::namespaced(admin.clone(), &ns.name);
    let before = request_totals(&admin).await?;

    // Pods as they appear, with when: one watch for both phases.
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel::<(String, Instant)>();
    let watch_pods = pods.clone();
    let watcher_task = tokio::spawn(async move {
        let stream = watcher::watcher(watch_pods, watcher::Config::default());
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            if let Ok(Event::Apply(pod) | Event::InitApply(pod)) = event {
                let _ = seen_tx.send((pod.name_any(), Instant::now()));
            }
        }
    });
    let mut first_seen: HashMap<String, Instant> = HashMap::new();
    let mut wait_pod =
        async |name: &str, first_seen: &mut HashMap<String, Instant>| -> Result<Instant> {
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if let Some(at) = first_seen.get(name) {
                    return Ok(*at);
                }
                let left = deadline.saturating_duration_since(Instant::now());
                match tokio::time::timeout(left, seen_rx.recv()).await {
                    Ok(Some((pod, at))) => {
                        first_seen.entry(pod).or_insert(at);
                    }
                    _ => bail!(
                        "no pod for {name} within 60 s (operator log: {})",
                        work.join("operator.log").display()
                    ),
                }
            }
        };

    // 0. A first run, not counted: the operator lists and watches its kinds before it
    // reconciles anything.
    runs.create(&PostParams::default(), &run_object("warm-up")?)
        .await?;
    wait_pod("warm-up-runner", &mut first_seen).await?;

    // 1. One at a time.
    let mut latencies = Vec::new();
    for i in 0..args.latency_runs {
        let name = format!("lat-{i}");
        let sent = Instant::now();
        runs.create(&PostParams::default(), &run_object(&name)?)
            .await?;
        let at = wait_pod(&format!("{name}-runner"), &mut first_seen).await?;
        latencies.push(at.saturating_duration_since(sent));
    }
    latencies.sort();

    // 2. All at once.
    let start = Instant::now();
    let names: Vec<String> = (0..args.runs).map(|i| format!("burst-{i}")).collect();
    futures::stream::iter(names.iter().cloned())
        .map(|name| {
            let runs = runs.clone();
            async move {
                runs.create(&PostParams::default(), &run_object(&name)?)
                    .await
                    .map_err(anyhow::Error::from)
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await?;
    let created = start.elapsed();
    let mut all_pods = None;
    let wanted: HashSet<String> = names.iter().map(|n| format!("{n}-runner")).collect();
    let deadline = Instant::now() + Duration::from_secs(1800);
    let mut all_final = None;
    while all_final.is_none() {
        while let Ok((pod, at)) = seen_rx.try_recv() {
            first_seen.entry(pod).or_insert(at);
        }
        if all_pods.is_none() && wanted.iter().all(|p| first_seen.contains_key(p)) {
            all_pods = wanted
                .iter()
                .filter_map(|p| first_seen.get(p))
                .max()
                .map(|at| at.saturating_duration_since(start));
        }
        let list = runs.list(&ListParams::default()).await?;
        let burst: Vec<&StudioRun> = list
            .items
            .iter()
            .filter(|r| r.name_any().starts_with("burst-"))
            .collect();
        if burst.len() == args.runs && burst.iter().all(|r| is_final(r)) {
            all_final = Some(start.elapsed());
        }
        ensure!(
            Instant::now() < deadline,
            "the runs did not all end within 30 minutes"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let list = runs.list(&ListParams::default()).await?;
    let mut phases: BTreeMap<String, usize> = BTreeMap::new();
    for r in &list.items {
        let phase = r
            .status
            .as_ref()
            .and_then(|s| s.phase)
            .map(|p| format!("{p:?}"))
            .unwrap_or_else(|| "none".into());
        *phases.entry(phase).or_default() += 1;
    }
    // Let the last status writes land before counting.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = request_totals(&admin).await?;
    let mut writes = 0.0;
    let mut by_kind: BTreeMap<String, f64> = BTreeMap::new();
    let mut throttled = 0.0;
    for (key, value) in &after {
        let delta = value - before.get(key).copied().unwrap_or(0.0);
        if delta <= 0.0 {
            continue;
        }
        let (verb, resource, subresource, code) = key;
        if code == "429" {
            throttled += delta;
        }
        if operator_write(verb, resource, subresource) {
            writes += delta;
            let name = if subresource.is_empty() {
                format!("{verb} {resource}")
            } else {
                format!("{verb} {resource}/{subresource}")
            };
            *by_kind.entry(name).or_default() += delta;
        }
    }
    let total_runs = (args.runs + args.latency_runs + 1) as f64;
    let pid = operator.0.id();
    let hwm = rss_kib(pid, "VmHWM:");
    let rss = rss_kib(pid, "VmRSS:");

    println!("## Operator benchmark");
    println!();
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| create → runner pod, one at a time ({} runs) | p50 {:.1} ms, p99 {:.1} ms |",
        args.latency_runs,
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3
    );
    println!(
        "| {} runs created at once (32 in flight) | created in {:.1} s; all pods in {}; all final in {:.1} s |",
        args.runs,
        created.as_secs_f64(),
        all_pods
            .map(|d| format!("{:.1} s", d.as_secs_f64()))
            .unwrap_or_else(|| "n/a".into()),
        all_final.map(|d| d.as_secs_f64()).unwrap_or_default()
    );
    println!("| outcomes | {phases:?} |");
    if let Some(error) = list
        .items
        .iter()
        .find_map(|r| r.status.as_ref().and_then(|s| s.error.as_ref()))
    {
        println!("| a failure | {} |", error.message);
    }
    println!(
        "| operator API writes per run lifecycle | {:.2} ({writes} writes / {total_runs} runs) |",
        writes / total_runs
    );
    for (kind, n) in &by_kind {
        println!("| &nbsp;&nbsp;{kind} | {:.2} per run |", n / total_runs);
    }
    println!("| 429 responses (anyone) | {throttled} |");
    println!(
        "| operator RSS | peak {} MiB, at the end {} MiB |",
        hwm.map(|k| format!("{:.1}", k as f64 / 1024.0))
            .unwrap_or_else(|| "?".into()),
        rss.map(|k| format!("{:.1}", k as f64 / 1024.0))
            .unwrap_or_else(|| "?".into())
    );

    drop(operator);
    watcher_task.abort();
    exec.shutdown().await?;
    Ok(())
}
