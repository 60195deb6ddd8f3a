//! Benchmark (not a timed test): orchestration overhead per LLM node and peak RSS of a run.
//!
//! Runs a 10-node Pipeline through the graph engine against the stub OpenAI server on loopback
//! (zero delay), and measures:
//! - the mean wall time of one run, and of the same 10 model calls made directly through the
//!   provider (no engine); the difference over 10 is the engine's overhead per LLM node;
//! - the same HTTP run with no event sink (no writer thread), which splits that overhead into
//!   the trace's hand-off to its writer and the rest;
//! - the same run with the in-process Scripted provider (no HTTP at all), whose time over 10 is
//!   the engine's overhead per node with nothing else in it;
//! - a parked thread woken and answering through a tokio oneshot, right after an HTTP run: what
//!   a run with a sink pays at its end when its writer thread sleeps (the writer's
//!   acknowledgement), measured with nothing of the engine in it;
//! - peak RSS (`VmHWM` of /proc/self/status) before any run, after one run, after all runs.
//!
//! `cargo run --release -p orrery-tests --bin bench_run -- [runs]` (default 300 runs).
//!
//! `--only PHASE [runs]` runs one of those measurements alone (`http`, `quiet` for the run with
//! no sink, `direct`, `scripted`, `wake`), for a profiler.
//!
//! With `--process [runs]` it measures the whole `orrery run` process instead: it writes a
//! 10-node Scripted Pipeline (a Composition and its RegistryEntry, and the plan document the
//! operator would write for them) to a temporary folder and runs the built `orrery` binary
//! (`target/release/orrery`, beside this one, or `--orrery PATH`) on it `runs` times (default
//! 50, after 5 warm-up runs) in each mode: as a runner pod (`--plan`) and from the manifests
//! (`-f`, `-o json`), its trace into a pipe. Per run: the time from spawning it to the first
//! `node.enter` line (its first model turn) and to its exit; the median, minimum and maximum are
//! printed, and the peak RSS (`ru_maxrss` of the children: the largest run so far).
//!
//! `cargo build --release -p orrery-runner --bin orrery -p orrery-tests --bin bench_run &&
//! target/release/bench_run --process 100`
//!
//! For the side-by-side comparison with other frameworks (`tests/bench/compare/`), one stub
//! serves them all: `--stub` starts the stub on loopback, prints its OpenAI base URL and serves
//! until standard input closes; `--stub-url URL` (after the other arguments) points the
//! in-process measurement (also `--only`), or `--process` runs on an OpenAI entry, at that stub
//! instead.

use anyhow::{Context, Result, bail};
use orrery_crds::plan::Plan;
use orrery_crds::registry::ModelProvider as ProviderKind;
use orrery_runner::bench::{INPUT, NODES, REPLY, pipeline, scripted_provider, setup};
use orrery_runner::engine::run;
use orrery_runner::events::{JsonLinesSink, Outcome};
use orrery_runner::model::{
    CallLimits, ChatRequest, HttpCaller, Message, ModelProvider, OpenAiProvider, RetryPolicy,
};
use orrery_runner::secrets::SecretValue;
use orrery_tests::stub_model::{StubModel, StubReply, Wire, provider_for};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const MODEL: &str = "gpt-bench";

/// One run; its events as JSON lines into `io::sink()`, or to no sink at all (`json` false).
async fn one_run(
    plan: &Plan,
    provider: &Arc<dyn ModelProvider>,
    id: usize,
    json: bool,
) -> Result<()> {
    let sinks = if json {
        vec![Arc::new(JsonLinesSink::new(Box::new(std::io::sink()))) as _]
    } else {
        Vec::new()
    };
    let setup = setup(plan, provider, MODEL, sinks, format!("bench-{id}"));
    let result = run(setup, INPUT.to_string(), CancellationToken::new()).await;
    if result.outcome != Outcome::Succeeded {
        bail!("run {id} ended {:?}: {:?}", result.outcome, result.error);
    }
    Ok(())
}

async fn direct_calls(provider: &Arc<dyn ModelProvider>) -> Result<()> {
    let cancel = CancellationToken::new();
    let mut input = INPUT.to_string();
    for i in 0..NODES {
        let request = ChatRequest {
            node_id: format!("n{i}"),
            model: MODEL.to_string(),
            system: Some(orrery_runner::bench::INSTRUCTION.to_string()),
            messages: vec![Message::User { text: input }],
            tools: Vec::new(),
            labels: None,
            max_output_tokens: None,
        };
        let response = provider.complete(&request, &cancel).await?;
        input = response.text.unwrap_or_default();
    }
    Ok(())
}

/// A thread parked on a condition variable, as a run's writer is while the run waits for its
/// model: each [`Sleeper::round_trip`] wakes it and waits for its answer on a tokio oneshot, as
/// a run's end-of-run drain waits for its writer's acknowledgement.
struct Sleeper {
    shared: Arc<(std::sync::Mutex<SleeperState>, std::sync::Condvar)>,
}

#[derive(Default)]
struct SleeperState {
    ask: Option<tokio::sync::oneshot::Sender<()>>,
    stop: bool,
}

impl Sleeper {
    fn start() -> Result<Sleeper> {
        let shared: Arc<(std::sync::Mutex<SleeperState>, std::sync::Condvar)> = Arc::default();
        let theirs = shared.clone();
        std::thread::Builder::new()
            .name("bench-sleeper".into())
            .spawn(move || {
                let (lock, wake) = &*theirs;
                let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if let Some(ask) = state.ask.take() {
                        let _ = ask.send(());
                    }
                    if state.stop {
                        return;
                    }
                    state = wake.wait(state).unwrap_or_else(|e| e.into_inner());
                }
            })?;
        Ok(Sleeper { shared })
    }

    /// Wakes the thread and waits for its answer; returns how long that took.
    async fn round_trip(&self) -> Result<Duration> {
        let (ask, answer) = tokio::sync::oneshot::channel();
        let start = Instant::now();
        {
            let (lock, wake) = &*self.shared;
            lock.lock().unwrap_or_else(|e| e.into_inner()).ask = Some(ask);
            wake.notify_one();
        }
        answer.await.context("the sleeper thread is gone")?;
        Ok(start.elapsed())
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let (lock, wake) = &*self.shared;
        lock.lock().unwrap_or_else(|e| e.into_inner()).stop = true;
        wake.notify_one();
    }
}

fn vm_hwm_kib() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM in /proc/self/status")
}

fn per(total: Duration, n: usize) -> f64 {
    total.as_nanos() as f64 / n as f64
}

fn main() -> Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let stub_url = match args.iter().position(|a| a == "--stub-url") {
        Some(i) => {
            let url = args.get(i + 1).context("--stub-url URL")?.clone();
            args.drain(i..i + 2);
            Some(url)
        }
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match args.first().map(String::as_str) {
        Some("--process") => process::main(&args[1..], stub_url.as_deref()),
        Some("--stub") => runtime.block_on(serve_stub()),
        Some("--only") => {
            let phase = args.get(1).context("--only PHASE [runs]")?.clone();
            let runs = match args.get(2) {
                Some(n) => n.parse().context("the runs after --only PHASE")?,
                None => 1000,
            };
            runtime.block_on(only(&phase, runs, stub_url.as_deref()))
        }
        first => {
            let runs: usize = match first {
                Some(n) => n.parse().context("the argument is the number of runs")?,
                None => 300,
            };
            runtime.block_on(in_process(runs, stub_url))
        }
    }
}

/// The stub model on loopback, answering every request at once with [`REPLY`] and its usage,
/// recording nothing.
async fn bench_stub() -> Result<StubModel> {
    let stub = StubModel::start().await?;
    stub.set_recording(false);
    stub.set_default(StubReply::text(REPLY).usage(40, 16));
    Ok(stub)
}

/// The OpenAI provider the HTTP measurements call: at `stub`, or at `stub_url` (`--stub-url`).
fn http_provider(stub: &StubModel, stub_url: Option<&str>) -> Result<Arc<dyn ModelProvider>> {
    Ok(match stub_url {
        None => provider_for(
            stub,
            Wire::OpenAi,
            Some("sk-bench"),
            RetryPolicy::default(),
            CallLimits::default(),
        )?,
        Some(url) => Arc::new(OpenAiProvider::new(
            HttpCaller::new(
                orrery_runner::model::http::build_client()?,
                RetryPolicy::default(),
                CallLimits::default(),
            ),
            Some(url),
            Some(SecretValue::new("sk-bench")),
        )),
    })
}

/// `--stub`: the stub on loopback until standard input closes.
async fn serve_stub() -> Result<()> {
    let stub = bench_stub().await?;
    println!("{}", stub.base_url(Wire::OpenAi));
    tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    })
    .await?;
    eprintln!("stub requests served: {}", stub.request_count());
    Ok(())
}

async fn in_process(runs: usize, stub_url: Option<String>) -> Result<()> {
    let warmup = (runs / 10).max(5);
    let plan = pipeline(ProviderKind::OpenAi)?;
    let stub = bench_stub().await?;
    let http = http_provider(&stub, stub_url.as_deref())?;
    let scripted = scripted_provider();
    let sleeper = Sleeper::start()?;

    let rss_start = vm_hwm_kib()?;
    one_run(&plan, &http, 0, true).await?;
    let rss_one = vm_hwm_kib()?;

    for i in 0..warmup {
        one_run(&plan, &http, i, true).await?;
        one_run(&plan, &http, i, false).await?;
        direct_calls(&http).await?;
        one_run(&plan, &scripted, i, true).await?;
        sleeper.round_trip().await?;
    }

    // Interleave the measurements so drift affects them alike. The wake-up is measured right
    // after an HTTP run, where a run's end-of-run drain meets its writer.
    let (mut engine_http, mut engine_http_quiet, mut direct, mut engine_scripted) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    let mut wakes = Vec::with_capacity(runs);
    for i in 0..runs {
        let t = Instant::now();
        one_run(&plan, &http, i, true).await?;
        engine_http += t.elapsed();
        wakes.push(sleeper.round_trip().await?);
        let t = Instant::now();
        one_run(&plan, &http, i, false).await?;
        engine_http_quiet += t.elapsed();
        let t = Instant::now();
        direct_calls(&http).await?;
        direct += t.elapsed();
        let t = Instant::now();
        one_run(&plan, &scripted, i, true).await?;
        engine_scripted += t.elapsed();
    }
    let rss_all = vm_hwm_kib()?;

    let run_ns = per(engine_http, runs);
    let quiet_ns = per(engine_http_quiet, runs);
    let direct_ns = per(direct, runs);
    let scripted_ns = per(engine_scripted, runs);
    println!("runs: {runs} (after {warmup} warm-up runs), nodes per run: {NODES}");
    match &stub_url {
        None => println!("stub requests served: {}", stub.request_count()),
        Some(url) => println!("stub: {url}"),
    }
    println!(
        "engine + stub OpenAI, per run:        {:>10.0} ns ({:.0} ns per node)",
        run_ns,
        run_ns / NODES as f64
    );
    println!(
        "direct provider calls, per 10 calls:  {:>10.0} ns ({:.0} ns per call)",
        direct_ns,
        direct_ns / NODES as f64
    );
    println!(
        "engine overhead per LLM node (HTTP):  {:>10.0} ns",
        (run_ns - direct_ns) / NODES as f64
    );
    println!(
        "the same with no event sink, per run: {:>10.0} ns ({:.0} ns per node)",
        quiet_ns,
        quiet_ns / NODES as f64
    );
    println!(
        "engine overhead per LLM node, no sink:{:>10.0} ns",
        (quiet_ns - direct_ns) / NODES as f64
    );
    println!(
        "engine + Scripted (no HTTP), per node:{:>10.0} ns",
        scripted_ns / NODES as f64
    );
    wakes.sort();
    let wake_ns = per(wakes.iter().sum(), runs);
    println!(
        "a parked thread woken and answering:  {:>10.0} ns mean, {} ns median ({:.0} ns per node \
         if once a run)",
        wake_ns,
        wakes.get(runs / 2).map_or(0, Duration::as_nanos),
        wake_ns / NODES as f64
    );
    println!("peak RSS (VmHWM) before any run:      {rss_start:>10} KiB");
    println!("peak RSS (VmHWM) after one run:       {rss_one:>10} KiB");
    println!("peak RSS (VmHWM) after all runs:      {rss_all:>10} KiB");
    Ok(())
}

/// A measurement `--only` runs alone.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Http,
    Quiet,
    Direct,
    Scripted,
    Wake,
}

impl Phase {
    const NAMES: &str = "http, quiet, direct, scripted or wake";

    fn parse(name: &str) -> Result<Phase> {
        Ok(match name {
            "http" => Phase::Http,
            "quiet" => Phase::Quiet,
            "direct" => Phase::Direct,
            "scripted" => Phase::Scripted,
            "wake" => Phase::Wake,
            other => bail!("unknown phase {other:?} after --only: {}", Phase::NAMES),
        })
    }
}

/// `--only PHASE [runs]`: one of the in-process measurements alone (`http`, `quiet`,
/// `direct`, `scripted`, `wake`), for a profiler to attribute its time (`perf record -g --
/// bench_run --only quiet 3000`); prints its time per node (for `wake`, per wake-up).
async fn only(name: &str, runs: usize, stub_url: Option<&str>) -> Result<()> {
    let phase = Phase::parse(name)?;
    if phase == Phase::Wake {
        let sleeper = Sleeper::start()?;
        let mut total = Duration::ZERO;
        for _ in 0..runs {
            // Long enough for the thread to be parked again, as a writer is during a model call.
            tokio::time::sleep(Duration::from_micros(200)).await;
            total += sleeper.round_trip().await?;
        }
        println!("wake: {:.0} ns per wake-up over {runs}", per(total, runs));
        return Ok(());
    }
    let plan = pipeline(ProviderKind::OpenAi)?;
    let stub = bench_stub().await?;
    let http = http_provider(&stub, stub_url)?;
    let scripted = scripted_provider();
    let start = Instant::now();
    for i in 0..runs {
        match phase {
            Phase::Http => one_run(&plan, &http, i, true).await?,
            Phase::Quiet => one_run(&plan, &http, i, false).await?,
            Phase::Direct => direct_calls(&http).await?,
            Phase::Scripted => one_run(&plan, &scripted, i, true).await?,
            // Measured on its own above: it needs neither the stub nor a plan.
            Phase::Wake => {}
        }
    }
    println!(
        "{name}: {:.0} ns per node over {runs} runs",
        per(start.elapsed(), runs * NODES)
    );
    Ok(())
}

/// `--process`: the whole `orrery run` process, spawned again and again.
mod process {
    use super::{INPUT, NODES, REPLY};
    use anyhow::{Context, Result, bail};
    use orrery_tests::manifests::scripted_model_with;
    use std::io::{BufRead, BufReader, Read};
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// The 10-node Pipeline as manifests: on a Scripted model, or on an OpenAI entry at
    /// `stub_url` (keyless).
    fn manifests(stub_url: Option<&str>) -> String {
        let mut out = match stub_url {
            None => scripted_model_with(
                "bench-scripted",
                serde_json::json!({"fallback": {"reply": REPLY}}),
            ),
            Some(url) => format!(
                "apiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\nmetadata:\n  name: bench-scripted\nspec:\n  model:\n    provider: OpenAI\n    model: gpt-bench\n    baseUrl: {url}"
            ),
        };
        out.push_str("\n---\napiVersion: studio.orrery.dev/v1alpha1\nkind: Composition\nmetadata:\n  name: bench-pipeline\nspec:\n  pattern: Pipeline\n  nodes:\n");
        for i in 0..NODES {
            out.push_str(&format!(
                "    - id: n{i}\n      kind: LLMAgent\n      model: bench-scripted\n      instruction: Improve the text you are given.\n"
            ));
        }
        out.push_str("  edges:\n");
        for i in 1..NODES {
            out.push_str(&format!("    - from: n{}\n      to: n{i}\n", i - 1));
        }
        out
    }

    struct Sample {
        first_node: Duration,
        exit: Duration,
    }

    /// The plan document a runner pod reads, for the same manifests (what the operator
    /// writes: the spec planned against the entries).
    fn plan_document(manifests: &str) -> Result<String> {
        use orrery_crds::composition::Composition;
        use orrery_crds::plan_document::{
            PLAN_DOCUMENT_VERSION, PlanDocument, PlannedEntry, RunIdentity,
        };
        use orrery_crds::registry::RegistryEntry;
        use orrery_crds::run::RanComposition;
        use orrery_crds::validate::{DeploymentLimits, RegistryView};
        use serde::Deserialize;
        let mut entries: Vec<RegistryEntry> = Vec::new();
        let mut spec = None;
        for doc in serde_yaml::Deserializer::from_str(manifests) {
            let value = serde_yaml::Value::deserialize(doc)?;
            match value.get("kind").and_then(serde_yaml::Value::as_str) {
                Some("RegistryEntry") => entries.push(serde_yaml::from_value(value)?),
                Some("Composition") => {
                    spec = Some(serde_yaml::from_value::<Composition>(value)?.spec);
                }
                _ => {}
            }
        }
        let spec = spec.context("no Composition")?;
        let limits = DeploymentLimits::default();
        let plan =
            orrery_crds::plan::plan(&spec, &RegistryView::from_entries(&entries), &limits)
                .map_err(|v| anyhow::anyhow!("the benchmark composition does not plan: {v:?}"))?;
        let document = PlanDocument {
            version: PLAN_DOCUMENT_VERSION,
            run: RunIdentity {
                name: "bench-1".into(),
                namespace: "bench".into(),
                uid: "uid-bench-1".into(),
            },
            composition: RanComposition {
                name: "bench-pipeline".into(),
                revision: Some(1),
                digest: "d".repeat(64),
            },
            spec,
            plan,
            entries: entries.iter().map(PlannedEntry::from_entry).collect(),
            limits,
            capture_content: false,
            sidecar_url: "http://orrery-sidecar.orrery-system.svc:8080".into(),
            approval_timeout_seconds: 60,
            flush_seconds: None,
        };
        Ok(serde_json::to_string(&document)?)
    }

    fn one(orrery: &Path, args: &[std::ffi::OsString]) -> Result<Sample> {
        let start = Instant::now();
        let mut child = Command::new(orrery)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", orrery.display()))?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut lines = BufReader::new(stdout);
        let mut first_node = None;
        let mut line = String::new();
        let mut last = String::new();
        loop {
            line.clear();
            if lines.read_line(&mut line)? == 0 {
                break;
            }
            if first_node.is_none() && line.contains("\"type\":\"node.enter\"") {
                first_node = Some(start.elapsed());
            }
            last.clone_from(&line);
        }
        let status = child.wait()?;
        let exit = start.elapsed();
        if !status.success() || !last.contains("\"Succeeded\"") {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                e.read_to_string(&mut err)?;
            }
            bail!("the run did not succeed ({status}): {last}{err}");
        }
        Ok(Sample {
            first_node: first_node.context("no node.enter line")?,
            exit,
        })
    }

    fn stats(mut v: Vec<Duration>) -> String {
        v.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        format!(
            "median {:.2} ms (min {:.2}, max {:.2})",
            ms(v[v.len() / 2]),
            ms(v[0]),
            ms(v[v.len() - 1])
        )
    }

    pub(super) fn main(args: &[String], stub_url: Option<&str>) -> Result<()> {
        let mut runs = 50usize;
        let mut orrery: Option<PathBuf> = None;
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--orrery" => orrery = Some(it.next().context("--orrery PATH")?.into()),
                n => runs = n.parse().context("the argument is the number of runs")?,
            }
        }
        let orrery = match orrery {
            Some(p) => p,
            None => std::env::current_exe()?
                .parent()
                .context("no folder")?
                .join("orrery"),
        };
        let dir = std::env::temp_dir().join(format!("orrery-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let manifest = dir.join("pipeline.yaml");
        let text = manifests(stub_url);
        std::fs::write(&manifest, &text)?;
        let plan = dir.join("plan.json");
        std::fs::write(&plan, plan_document(&text)?)?;
        std::fs::write(dir.join(orrery_crds::plan_document::INPUT_FILE), INPUT)?;
        let from_files: Vec<std::ffi::OsString> = vec![
            "run".into(),
            "-o".into(),
            "json".into(),
            "--input".into(),
            INPUT.into(),
            "-f".into(),
            manifest.into(),
        ];
        let pod: Vec<std::ffi::OsString> = vec![
            "run".into(),
            "--plan".into(),
            plan.into(),
            "--termination-log".into(),
            dir.join("termination-log").into(),
        ];
        println!(
            "orrery run, 10-node Pipeline on {}: {}",
            stub_url.unwrap_or("a Scripted model"),
            orrery.display()
        );
        // Each mode in turn, so the children's peak RSS (the largest so far) is each mode's.
        let result = (|| -> Result<()> {
            for (name, args) in [
                ("--plan (a runner pod)", &pod),
                ("-f manifests", &from_files),
            ] {
                for _ in 0..5 {
                    one(&orrery, args)?;
                }
                let mut first = Vec::with_capacity(runs);
                let mut exit = Vec::with_capacity(runs);
                for _ in 0..runs.max(1) {
                    let s = one(&orrery, args)?;
                    first.push(s.first_node);
                    exit.push(s.exit);
                }
                let usage =
                    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)?;
                println!("{name}, {} runs after 5 warm-up runs:", first.len());
                println!("  spawn -> first node.enter line: {}", stats(first));
                println!("  spawn -> exit:                  {}", stats(exit));
                println!("  peak RSS (largest run so far):  {} KiB", usage.max_rss());
            }
            Ok(())
        })();
        let _ = std::fs::remove_dir_all(&dir);
        result
    }
}
