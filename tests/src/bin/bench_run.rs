//! Benchmark (not a timed test): orchestration overhead per LLM node and peak RSS of a run.
//!
//! Runs a 10-node Pipeline through the graph engine against the stub OpenAI server on loopback
//! (zero delay), and measures:
//! - the mean wall time of one run, and of the same 10 model calls made directly through the
//!   provider (no engine); the difference over 10 is the engine's overhead per LLM node;
//! - the same run with the in-process Scripted provider (no HTTP at all), whose time over 10 is
//!   the engine's overhead per node with nothing else in it;
//! - peak RSS (`VmHWM` of /proc/self/status) before any run, after one run, after all runs.
//!
//! `cargo run --release -p orrery-tests --bin bench_run -- [runs]` (default 300 runs).

use anyhow::{Context, Result, bail};
use orrery_crds::composition::CompositionSpec;
use orrery_crds::plan::{Plan, plan};
use orrery_crds::registry::{ModelProvider as ProviderKind, ModelScript, ScriptedTurn};
use orrery_crds::validate::{DeploymentLimits, EntryView, RegistryView};
use orrery_runner::approval::Nobody;
use orrery_runner::engine::{ModelBinding, RunOptions, RunSetup, run};
use orrery_runner::events::{JsonLinesSink, Outcome};
use orrery_runner::model::{
    CallLimits, ChatRequest, Message, ModelProvider, RetryPolicy, ScriptedProvider,
};
use orrery_tests::stub_model::{StubModel, StubReply, Wire, provider_for};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const NODES: usize = 10;
const ENTRY: &str = "bench-model";
const MODEL: &str = "gpt-bench";
const REPLY: &str = "A short answer of about the size a real node hands to the next one.";
const INPUT: &str = "Kafka consumer lag";

fn pipeline() -> Result<Plan> {
    let nodes: Vec<_> = (0..NODES)
        .map(|i| {
            serde_json::json!({
                "id": format!("n{i}"),
                "kind": "LLMAgent",
                "instruction": "Improve the text you are given.",
                "model": ENTRY,
            })
        })
        .collect();
    let edges: Vec<_> = (1..NODES)
        .map(|i| serde_json::json!({"from": format!("n{}", i - 1), "to": format!("n{i}")}))
        .collect();
    let spec: CompositionSpec = serde_json::from_value(serde_json::json!({
        "pattern": "Pipeline",
        "nodes": nodes,
        "edges": edges,
    }))
    .context("the benchmark composition does not parse")?;
    let mut registry = RegistryView::default();
    registry.entries.insert(
        ENTRY.to_string(),
        EntryView::Model {
            provider: ProviderKind::OpenAi,
        },
    );
    plan(&spec, &registry, &DeploymentLimits::default())
        .map_err(|v| anyhow::anyhow!("the benchmark composition does not validate: {v:?}"))
}

async fn one_run(plan: &Plan, provider: &Arc<dyn ModelProvider>, id: usize) -> Result<()> {
    let models = BTreeMap::from([(
        ENTRY.to_string(),
        ModelBinding {
            provider: Arc::clone(provider),
            model: MODEL.to_string(),
        },
    )]);
    let setup = RunSetup {
        plan: plan.clone(),
        composition: "bench".into(),
        pattern: "Pipeline".into(),
        models,
        tools: BTreeMap::new(),
        decisions: Arc::new(Nobody::quiet()),
        sinks: vec![Arc::new(JsonLinesSink::new(Box::new(std::io::sink())))],
        options: RunOptions::new(format!("bench-{id}")),
    };
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
            system: Some("Improve the text you are given.".to_string()),
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

#[tokio::main]
async fn main() -> Result<()> {
    let runs: usize = match std::env::args().nth(1) {
        Some(n) => n.parse().context("the argument is the number of runs")?,
        None => 300,
    };
    let warmup = (runs / 10).max(5);
    let plan = pipeline()?;

    let stub = StubModel::start().await?;
    stub.set_recording(false);
    stub.set_default(StubReply::text(REPLY).usage(40, 16));
    let http: Arc<dyn ModelProvider> = provider_for(
        &stub,
        Wire::OpenAi,
        Some("sk-bench"),
        RetryPolicy::default(),
        CallLimits::default(),
    )?;
    let scripted: Arc<dyn ModelProvider> = Arc::new(ScriptedProvider::new(ModelScript {
        nodes: BTreeMap::new(),
        fallback: Some(ScriptedTurn {
            reply: Some(REPLY.to_string()),
            ..ScriptedTurn::default()
        }),
    }));

    let rss_start = vm_hwm_kib()?;
    one_run(&plan, &http, 0).await?;
    let rss_one = vm_hwm_kib()?;

    for i in 0..warmup {
        one_run(&plan, &http, i).await?;
        direct_calls(&http).await?;
        one_run(&plan, &scripted, i).await?;
    }

    // Interleave the three measurements so drift affects them alike.
    let (mut engine_http, mut direct, mut engine_scripted) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for i in 0..runs {
        let t = Instant::now();
        one_run(&plan, &http, i).await?;
        engine_http += t.elapsed();
        let t = Instant::now();
        direct_calls(&http).await?;
        direct += t.elapsed();
        let t = Instant::now();
        one_run(&plan, &scripted, i).await?;
        engine_scripted += t.elapsed();
    }
    let rss_all = vm_hwm_kib()?;

    let run_ns = per(engine_http, runs);
    let direct_ns = per(direct, runs);
    let scripted_ns = per(engine_scripted, runs);
    println!("runs: {runs} (after {warmup} warm-up runs), nodes per run: {NODES}");
    println!("stub requests served: {}", stub.request_count());
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
        "engine + Scripted (no HTTP), per node:{:>10.0} ns",
        scripted_ns / NODES as f64
    );
    println!("peak RSS (VmHWM) before any run:      {rss_start:>10} KiB");
    println!("peak RSS (VmHWM) after one run:       {rss_one:>10} KiB");
    println!("peak RSS (VmHWM) after all runs:      {rss_all:>10} KiB");
    Ok(())
}
