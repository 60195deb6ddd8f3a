//! Benchmark (not a timed test): the web console in Debian's Chromium, served by a real sidecar
//! (`TestSidecar` with `--console-dir web/dist`) on the real kube-apiserver of `tests/testenv/`,
//! driven by `web/bench/console-bench.mjs` (Playwright). It measures, as issue 23 asks:
//!
//! 1. **the runs page's JavaScript**: every script the first load of `#/runs/<ns>` fetched, raw
//!    and gzip-compressed (the canvas and ELK must not be among them);
//! 2. **instant replay** of a finished 2,000-event run: the replay page's own performance
//!    measure `orrery:replay-instant`;
//! 3. **following live runs at `--rate` events/s** for `--follow-minutes`: one run after another
//!    (a run holds at most 2,000 events, so a 10-minute follow at 2,000 events/s is about 500
//!    runs of 2,000 events, each opened in the same tab as a person would), the events posted by
//!    this process as a runner does (batches, the run's own run token); for every event, how
//!    long after it was posted the page had applied it (`data-run-last-seq`, sampled every
//!    10 ms), and the tab's JS heap after a forced GC at the end of each run (flat means no
//!    leak from run to run).
//!
//! ```text
//! cd web && npm ci --engine-strict && npm run build && cd ..
//! cargo build --release -p orrery-bench --bin bench_console
//! tests/e2e.sh target/release/bench_console [--follow-minutes 10] [--rate 2000] [--events 2000]
//! ```

use anyhow::{Context, Result, bail, ensure};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use orrery_bench::{node_event, run_end, stamped};
use orrery_crds::StudioRun;
use orrery_crds::budget::BudgetLimits;
use orrery_crds::events::ingest::{EventBatch, ingest_path};
use orrery_crds::events::{EventBody, TraceEvent};
use orrery_operator::config::DEFAULT_RUN_TOKEN_AUDIENCE;
use orrery_operator::run_token::{RunTokenSigner, run_claims};
use orrery_operator::sidecar::SidecarSettings;
use orrery_tests::harness::{TestNamespace, ensure_crds, workspace_root};
use orrery_tests::operator_fixture::test_signer;
use orrery_tests::sidecar_fixture::TestSidecar;
use orrery_tests::studio::{grant_studio_user, token};
use orrery_tests::testenv::{self, ALICE};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout, Command};

/// The nodes of every benchmark run: a ten-step pipeline.
const STEPS: u64 = 10;

struct Args {
    follow_minutes: f64,
    rate: u64,
    events: u64,
}

fn args() -> Result<Args> {
    let mut out = Args {
        follow_minutes: 10.0,
        rate: 2000,
        events: 2000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--follow-minutes" => out.follow_minutes = value()?.parse()?,
            "--rate" => out.rate = value()?.parse()?,
            "--events" => out.events = value()?.parse()?,
            "--help" | "-h" => {
                println!(
                    "bench_console [--follow-minutes 10] [--rate 2000] [--events 2000] (run under tests/e2e.sh)"
                );
                std::process::exit(0);
            }
            other => bail!("unknown flag {other} (see --help)"),
        }
    }
    ensure!(
        (3..=2000).contains(&out.events),
        "--events must be 3 to 2000 (a run holds at most 2000 events)"
    );
    ensure!(out.rate > 0, "--rate must be at least 1");
    Ok(out)
}

fn epoch_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// A run this process is the runner of.
struct Run {
    name: String,
    uid: String,
    token: String,
}

struct Bench {
    runs: Api<StudioRun>,
    ns: String,
    signer: Arc<RunTokenSigner>,
    http: reqwest::Client,
    sidecar: String,
}

impl Bench {
    /// A StudioRun owned by alice with a ten-step inline pipeline; nobody runs it but us.
    async fn create(&self, name: &str) -> Result<Run> {
        let nodes: Vec<Value> = (0..STEPS)
            .map(|i| json!({"id": format!("step-{i}"), "kind": "LLMAgent", "model": "scripted", "instruction": "Answer."}))
            .collect();
        let edges: Vec<Value> = (1..STEPS)
            .map(|i| json!({"from": format!("step-{}", i - 1), "to": format!("step-{i}")}))
            .collect();
        let object: StudioRun = serde_json::from_value(json!({
            "apiVersion": "studio.orrery.dev/v1alpha1",
            "kind": "StudioRun",
            "metadata": {"name": name},
            "spec": {
                "composition": {"pattern": "Pipeline", "nodes": nodes, "edges": edges},
                "input": "benchmark",
                "owner": ALICE
            }
        }))?;
        let created = self
            .runs
            .create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("creating StudioRun {name}"))?;
        let uid = created.uid().context("the created run has no UID")?;
        let now = i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs())?;
        let token = self.signer.sign(&run_claims(
            &self.ns,
            name,
            &uid,
            DEFAULT_RUN_TOKEN_AUDIENCE,
            now,
            3600,
        ))?;
        Ok(Run {
            name: name.to_owned(),
            uid,
            token,
        })
    }

    /// Posts events `first..=last` (the last is `run.end` when it is the run's last).
    async fn post(&self, run: &Run, first: u64, last: u64, total: u64) -> Result<()> {
        let batch = EventBatch {
            events: (first..=last).map(|seq| event(run, seq, total)).collect(),
        };
        let url = format!("{}{}", self.sidecar, ingest_path(&run.uid));
        for _ in 0..50 {
            let response = self
                .http
                .post(&url)
                .bearer_auth(&run.token)
                .json(&batch)
                .send()
                .await?;
            match response.status() {
                reqwest::StatusCode::OK => return Ok(()),
                reqwest::StatusCode::TOO_MANY_REQUESTS
                | reqwest::StatusCode::SERVICE_UNAVAILABLE => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                status => bail!(
                    "posting {first}..={last} of {}: {status} {}",
                    run.name,
                    response.text().await.unwrap_or_default()
                ),
            }
        }
        bail!("posting {first}..={last} of {}: refused 50 times", run.name)
    }
}

/// Event `seq` of `total`: node enters and exits along the pipeline, `run.start` first and
/// `run.end` last (what a run with content capture off sends).
fn event(run: &Run, seq: u64, total: u64) -> TraceEvent {
    let body = if seq == 1 {
        EventBody::RunStart {
            composition: run.name.clone(),
            pattern: "Pipeline".into(),
            nodes: STEPS as usize,
            budgets: BudgetLimits {
                max_tokens: 1_000_000,
                max_tool_calls: 100,
                max_delegations: 10,
                max_remote_calls: 10,
                timeout_seconds: 3600,
            },
            capture_content: false,
            dry_run_tools: false,
            input_size: 9,
            input: None,
        }
    } else if seq == total {
        run_end(total / 2)
    } else {
        // After run.start: enter, exit, enter…
        node_event(seq - 1, STEPS)
    };
    stamped(&run.uid, seq, body)
}

/// The browser half: `web/bench/console-bench.mjs`.
struct Browser {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    child: tokio::process::Child,
}

impl Browser {
    async fn start(url: &str, ns: &str, alice: &str) -> Result<Browser> {
        let web = workspace_root().join("web");
        ensure!(
            web.join("dist/index.html").is_file(),
            "web/dist is not built: cd web && npm ci --engine-strict && npm run build"
        );
        ensure!(
            web.join("node_modules/@playwright/test").is_dir(),
            "web/node_modules has no @playwright/test: cd web && npm ci --engine-strict"
        );
        let mut child = Command::new("node")
            .arg("bench/console-bench.mjs")
            .current_dir(&web)
            .env("ORRERY_CONSOLE_URL", url)
            .env("ORRERY_CONSOLE_NAMESPACE", ns)
            .env("ORRERY_TOKEN_ALICE", alice)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting node web/bench/console-bench.mjs")?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut browser = Browser {
            stdin,
            lines: BufReader::new(stdout).lines(),
            child,
        };
        browser.expect("ready").await?;
        Ok(browser)
    }

    async fn send(&mut self, command: &str) -> Result<()> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await?;
        self.stdin.flush().await?;
        Ok(())
    }

    /// The next line, as JSON.
    async fn next(&mut self) -> Result<Value> {
        let line = tokio::time::timeout(Duration::from_secs(120), self.lines.next_line())
            .await
            .context("the browser said nothing for 120 s")??
            .context("the browser's script ended")?;
        let value: Value =
            serde_json::from_str(&line).with_context(|| format!("not JSON: {line}"))?;
        if value["kind"] == "error" {
            bail!("the browser: {}", value);
        }
        Ok(value)
    }

    async fn expect(&mut self, kind: &str) -> Result<Value> {
        let value = self.next().await?;
        ensure!(value["kind"] == kind, "expected {kind}, got {value}");
        Ok(value)
    }

    async fn quit(mut self) -> Result<()> {
        let _ = self.send("quit").await;
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        Ok(())
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// One followed run: per event, posted → applied in the page, in ms.
struct Followed {
    lags: Vec<f64>,
    heap: f64,
    dom_nodes: f64,
}

async fn follow_one(
    bench: &Bench,
    browser: &mut Browser,
    name: &str,
    args: &Args,
) -> Result<Followed> {
    let run = bench.create(name).await?;
    browser.send(&format!("follow {name}")).await?;
    browser.expect("following").await?;
    let total = args.events;
    // Batches every 10 ms, each the events due by then at `rate`.
    let started = Instant::now();
    let mut sent: HashMap<u64, f64> = HashMap::new();
    let mut next = 1;
    let poster = async {
        while next <= total {
            let due = ((started.elapsed().as_secs_f64() * args.rate as f64) as u64 + 1).min(total);
            if due >= next {
                let at = epoch_ms();
                bench.post(&run, next, due, total).await?;
                for seq in next..=due {
                    sent.insert(seq, at);
                }
                next = due + 1;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        anyhow::Ok(())
    };
    let mut seen: Vec<(f64, u64)> = Vec::new();
    let watcher = async {
        loop {
            let line = browser.next().await?;
            match line["kind"].as_str() {
                Some("seen") => seen.push((
                    line["t"].as_f64().unwrap_or(0.0),
                    line["seq"].as_u64().unwrap_or(0),
                )),
                Some("heap") => return anyhow::Ok(line),
                _ => bail!("unexpected {line}"),
            }
        }
    };
    let (posted, heap) = tokio::join!(poster, watcher);
    posted?;
    let heap = heap?;
    // Each event's lag: the first sample showing it, less when its batch was posted.
    let mut lags = Vec::with_capacity(total as usize);
    let mut i = 0;
    for seq in 1..=total {
        while i < seen.len() && seen[i].1 < seq {
            i += 1;
        }
        let (Some(at), Some(&(t, _))) = (sent.get(&seq), seen.get(i)) else {
            bail!(
                "{name}: event {seq} never shown (last seen {:?})",
                seen.last()
            );
        };
        lags.push((t - at).max(0.0));
    }
    Ok(Followed {
        lags,
        heap: heap["usedBytes"].as_f64().unwrap_or(f64::NAN),
        dom_nodes: heap["domNodes"].as_f64().unwrap_or(f64::NAN),
    })
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = args()?;
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "bench-console").await?;
    grant_studio_user(env, &ns.name, ALICE).await?;
    let alice = token(env, ALICE)?;
    let settings = SidecarSettings {
        console_dir: Some(workspace_root().join("web/dist")),
        ..SidecarSettings::default()
    };
    let sidecar = TestSidecar::sqlite("bench-console", settings).await?;
    let admin: Client = env.admin().await?;
    let bench = Bench {
        runs: Api::namespaced(admin, &ns.name),
        ns: ns.name.clone(),
        signer: test_signer()?,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()?,
        sidecar: sidecar.url.clone(),
    };

    // A finished run to replay (and for the runs page to list).
    let finished = bench.create("finished-0").await?;
    let mut first = 1;
    while first <= args.events {
        let last = (first + 199).min(args.events);
        bench.post(&finished, first, last, args.events).await?;
        first = last + 1;
    }
    // What the operator would record once the runner ended (none runs here): a finished run
    // is what replay takes.
    bench
        .runs
        .patch_status(
            &finished.name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Succeeded"}})),
        )
        .await
        .context("recording the finished run's phase")?;

    let mut browser = Browser::start(&sidecar.url, &ns.name, &alice).await?;
    browser.send("bundle").await?;
    let bundle = browser.expect("bundle").await?;
    println!("runs page, first load: {bundle}");
    browser.send("replay finished-0").await?;
    let replay = browser.expect("replay").await?;
    println!("instant replay of {} events: {replay}", args.events);

    let deadline = Instant::now() + Duration::from_secs_f64(args.follow_minutes * 60.0);
    let mut all: Vec<f64> = Vec::new();
    let mut heaps: Vec<(String, f64, f64)> = Vec::new();
    let mut worst: (String, f64) = (String::new(), 0.0);
    let mut n = 0;
    let follow_started = Instant::now();
    while n == 0 || Instant::now() < deadline {
        let name = format!("live-{n}");
        let followed = follow_one(&bench, &mut browser, &name, &args).await?;
        let max = followed.lags.iter().copied().fold(0.0, f64::max);
        if max > worst.1 {
            worst = (name.clone(), max);
        }
        all.extend(&followed.lags);
        heaps.push((name.clone(), followed.heap, followed.dom_nodes));
        if n % 10 == 0 {
            println!(
                "{name}: lag max {max:.0} ms, heap {:.1} MiB, {} DOM nodes ({:.0} s in)",
                followed.heap / 1_048_576.0,
                followed.dom_nodes,
                follow_started.elapsed().as_secs_f64()
            );
        }
        n += 1;
    }
    browser.quit().await?;
    all.sort_by(f64::total_cmp);
    println!(
        "followed {n} runs × {} events at {} events/s in {:.1} min: posted → shown p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms (worst run {})",
        args.events,
        args.rate,
        follow_started.elapsed().as_secs_f64() / 60.0,
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        worst.1,
        worst.0
    );
    let pick = |i: usize| {
        heaps
            .get(i)
            .map(|h| format!("{} {:.1} MiB, {} DOM nodes", h.0, h.1 / 1_048_576.0, h.2))
    };
    println!(
        "JS heap after GC: first {}, middle {}, last {}",
        pick(0).unwrap_or_default(),
        pick(heaps.len() / 2).unwrap_or_default(),
        pick(heaps.len().saturating_sub(1)).unwrap_or_default()
    );
    drop(ns);
    Ok(())
}
