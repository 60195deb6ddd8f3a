//! Faults injected between the operator and the real kube-apiserver (issue 26), through the
//! fault proxy (`tests/src/fault_proxy.rs`): the controllers run in-process as the operator's
//! ServiceAccount, their client going through the proxy; the dev node, the sidecar and the test
//! reach the API server directly. Each test names its fault case of
//! `../shared/reference/security-anchors.md` §6.

use anyhow::{Context as _, Result, ensure};
use axum::http::Method;
use orrery_crds::run::RunPhase;
use orrery_tests::fault_proxy::{Fault, FaultProxy, Matcher};
use orrery_tests::manifests::{documents, scripted_model};
use orrery_tests::sidecar_fixture;
use orrery_tests::studio::{Studio, StudioOptions};
use serde_json::json;
use std::time::{Duration, Instant};

/// A two-node pipeline whose first node answers on model `model` (`steady`: after 40 s).
fn run_of(name: &str, model: &str) -> String {
    json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": name},
        "spec": {
            "composition": {
                "pattern": "Pipeline",
                "budgets": {"timeoutSeconds": 600},
                "nodes": [
                    {"id": "draft", "kind": "LLMAgent", "model": model, "instruction": "Draft it."},
                    {"id": "polish", "kind": "LLMAgent", "model": "scripted", "instruction": "Polish it."}
                ],
                "edges": [{"from": "draft", "to": "polish"}]
            },
            "input": "the notes",
            "owner": "jane@example.com"
        }
    })
    .to_string()
}

fn models() -> String {
    documents(&[
        scripted_model(
            "scripted",
            json!({"draft": [{"reply": "draft of: {{input}}"}],
                   "polish": [{"reply": "polished: {{input}}"}]}),
        ),
        scripted_model(
            "steady",
            json!({"draft": [{"delayMs": 40000, "reply": "after a while"}]}),
        ),
    ])
}

/// A studio whose in-process operator talks to the API server through a fresh fault proxy.
async fn studio_behind(prefix: &str) -> Result<(Studio, FaultProxy)> {
    let mut studio = Studio::start(StudioOptions {
        prefix,
        sidecar_url: &sidecar_fixture::shared()?.url,
        manifests: &models(),
        users: &[],
        policies: false,
        // Ten runs of one owner at once (the example config allows three).
        configure: &|config| config.run_limits.max_concurrent_runs_per_owner = None,
    })
    .await?;
    let proxy = FaultProxy::start(studio.env).await?;
    studio.kill_operator().await?;
    studio.start_operator_through(&proxy).await?;
    Ok((studio, proxy))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_operator_waits_as_the_api_server_asks_and_does_not_burst_after_fault_13()
-> Result<()> {
    let (studio, proxy) = studio_behind("fault-throttle").await?;
    Studio::test(studio, async |f| {
        // Every write of a run's status is answered 429, Retry-After 3 s, for 10 s.
        let throttled = Instant::now();
        proxy.set(
            Fault::Throttle { retry_after: 3 },
            Matcher::of(Method::PATCH, "/studioruns/"),
        );
        f.apply(&run_of("throttled", "scripted")).await?;
        tokio::time::sleep(Duration::from_secs(10)).await;
        proxy.clear();
        let cleared = Instant::now();
        f.wait_phase("throttled", RunPhase::Succeeded).await?;

        let writes: Vec<_> = proxy
            .seen()
            .into_iter()
            .filter(|s| s.method == Method::PATCH && s.path.contains("/studioruns/throttled"))
            .collect();
        let refused: Vec<Instant> = writes.iter().filter(|s| s.faulted).map(|s| s.at).collect();
        ensure!(
            refused.len() >= 2,
            "the status writes were throttled: {writes:?}"
        );
        // Each retry waited as asked (the status write is the one request of its reconcile in
        // flight at a time).
        for pair in refused.windows(2) {
            let gap = pair[1].duration_since(pair[0]);
            ensure!(
                gap >= Duration::from_millis(2900),
                "a retry {gap:?} after a 429 asking for 3 s: {writes:?}"
            );
        }
        ensure!(
            refused.len() <= 5,
            "{} throttled writes in 10 s",
            refused.len()
        );
        // No burst once it clears: the writes that follow are the run's own, a handful.
        let after = writes
            .iter()
            .filter(|s| s.at >= cleared && s.at < cleared + Duration::from_secs(3))
            .count();
        ensure!(
            after <= 6,
            "{after} status writes in the 3 s after the throttle"
        );
        ensure!(throttled.elapsed() < Duration::from_secs(120));
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_api_server_gone_for_20_s_started_runs_finish_once_and_the_operator_does_not_hot_loop_fault_13()
-> Result<()> {
    let (studio, proxy) = studio_behind("fault-down").await?;
    Studio::test(studio, async |f| {
        let names: Vec<String> = (1..=10).map(|i| format!("steady-{i}")).collect();
        for name in &names {
            f.apply(&run_of(name, "steady")).await?;
        }
        // Every runner under way (its run.start written) before the outage.
        for name in &names {
            f.wait_run_started(name).await?;
        }
        let runs = f.runs().list(&Default::default()).await?.items;
        ensure!(
            runs.iter()
                .all(|r| r.status.as_ref().and_then(|s| s.phase) == Some(RunPhase::Running)),
            "every run is still running when the API server goes away: {:?}",
            runs.iter()
                .map(|r| r.status.as_ref().and_then(|s| s.phase))
                .collect::<Vec<_>>()
        );
        // The API server goes away for the operator: its watches end, and every request is
        // dropped unanswered.
        proxy.set(Fault::Reset, Matcher::all());
        proxy.cut_streams();
        let down = Instant::now();
        tokio::time::sleep(Duration::from_secs(20)).await;
        proxy.clear();
        let up = Instant::now();
        let during = proxy
            .seen()
            .iter()
            .filter(|s| s.at >= down && s.at < up)
            .count();
        // The runs went on meanwhile (a runner needs no API); their status catches up.
        for name in &names {
            let done = f.wait_phase(name, RunPhase::Succeeded).await?;
            let pods = f.runner_pods(&done).await?;
            ensure!(pods.len() == 1, "{name}: {} runner pods", pods.len());
        }
        // Backoff per object, not a hot loop: ten runs and three watches over 20 s.
        ensure!(
            during > 0 && during <= 400,
            "{during} requests reached the proxy while the API server was gone"
        );
        eprintln!("requests while the API server was gone for 20 s: {during}");
        Ok(())
    })
    .await
    .context("the API server outage")
}
