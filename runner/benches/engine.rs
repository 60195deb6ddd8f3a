//! Benchmark (not a timed test): the engine alone, per node, on a 10-node Scripted Pipeline,
//! with its events serialised by the JSON-lines sink into `io::sink()`: the run of
//! `orrery_runner::bench`, as `tests/bench/src/bin/bench_run.rs` measures it too (whose HTTP
//! measurements need the stub model of the test crate; this one builds with the runner alone).
//!
//! `cargo bench -p orrery-runner --bench engine -- [runs]` (default 2000 runs, after 200).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use orrery_crds::plan::Plan;
use orrery_crds::registry::ModelProvider as ProviderKind;
use orrery_runner::bench::{INPUT, NODES, pipeline, scripted_provider, setup};
use orrery_runner::engine::run;
use orrery_runner::events::{EventSink, JsonLinesSink, Outcome};
use orrery_runner::model::ModelProvider;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

async fn one_run(plan: &Plan, provider: &Arc<dyn ModelProvider>, json: bool) {
    let sinks: Vec<Arc<dyn EventSink>> = if json {
        vec![Arc::new(JsonLinesSink::new(Box::new(std::io::sink())))]
    } else {
        Vec::new()
    };
    let setup = setup(plan, provider, "scripted-v1", sinks, "bench".into());
    let result = run(setup, INPUT.into(), CancellationToken::new()).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{:?}", result.error);
}

fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map_or(2000, |n| {
            n.parse().expect("the argument is the number of runs")
        });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let plan = pipeline(ProviderKind::Scripted).unwrap();
    let scripted = scripted_provider();
    runtime.block_on(async {
        for _ in 0..runs / 10 {
            one_run(&plan, &scripted, true).await;
            one_run(&plan, &scripted, false).await;
        }
        let (mut json, mut none) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..runs {
            let t = Instant::now();
            one_run(&plan, &scripted, true).await;
            json += t.elapsed();
            let t = Instant::now();
            one_run(&plan, &scripted, false).await;
            none += t.elapsed();
        }
        let per_node = |d: Duration| d.as_nanos() as f64 / (runs * NODES) as f64;
        println!("runs: {runs} of {NODES} nodes (Scripted model, no HTTP)");
        println!(
            "engine, events as JSON lines, per node: {:>8.0} ns",
            per_node(json)
        );
        println!(
            "engine, no sink, per node:              {:>8.0} ns",
            per_node(none)
        );
        println!(
            "peak RSS (VmHWM):                       {:>8} KiB",
            vm_hwm_kib()
        );
    });
}
