//! The sidecar on the real kube-apiserver, with the operator and the pod executor: a run's
//! runner pod posts its trace to the sidecar, which stores it gap-free and once per event, and
//! serves it to the run's owner as SSE (with `Last-Event-ID` resume) and as JSON pages, with the
//! caller's own token deciding who may see the run; a runner token is accepted only for its own
//! run; a sidecar killed mid-run loses nothing and stores nothing twice.
//!
//! Reading a run, the run API and a dropped stream's resume run against the chart's operator
//! (`Studio::install`: its sidecar container, from the operator's image, is what the runners
//! post to and what people call), and so do run tokens: the release is given the test's own key
//! pair (`runToken.existingSecret`), so the test signs tokens for runs, expired and for another
//! audience, and forges one. The tests that kill, stop or restart the sidecar keep a sidecar of
//! their own (`TestSidecar`) and the controllers in-process.
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary. Needs root, buildah and runc (the images), and the `orrery` binary.

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use futures::StreamExt;
use kube::ResourceExt;
use orrery_crds::events::TraceEvent;
use orrery_crds::events::ingest::{ApiError, EventBatch, IngestReply, ingest_path};
use orrery_crds::run::RunPhase;
use orrery_operator::config::DEFAULT_RUN_TOKEN_AUDIENCE;
use orrery_operator::run_token::run_claims;
use orrery_operator::sidecar::SidecarSettings;
use orrery_tests::harness::apply_yaml;
use orrery_tests::manifests::scripted_model;
use orrery_tests::operator_fixture::{TEST_SIGNING_KEY, TEST_VERIFYING_KEY, test_signer};
use orrery_tests::sidecar_fixture::TestSidecar;
use orrery_tests::studio::{
    ChartStudioOptions, Studio, StudioOptions, api_call, http_client, token,
};
use orrery_tests::testenv::{ADMIN, ALICE};
use reqwest::StatusCode;
use serde_json::json;

/// A model whose every node answers after `delay` ms: a four-node pipeline then lasts a while.
fn models(delay: u64) -> String {
    let turn = |node: &str| json!([{"delayMs": delay, "reply": format!("{node}: {{{{input}}}}")}]);
    scripted_model(
        "scripted",
        json!({"a": turn("a"), "b": turn("b"), "c": turn("c"), "d": turn("d")}),
    )
}

fn run_manifest(name: &str, owner: &str) -> String {
    let node = |id: &str| json!({"id": id, "kind": "LLMAgent", "model": "scripted", "instruction": "Go on."});
    json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": name},
        "spec": {
            "composition": {
                "pattern": "Pipeline",
                "budgets": {"timeoutSeconds": 600},
                "nodes": [node("a"), node("b"), node("c"), node("d")],
                "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "c", "to": "d"}]
            },
            "input": "the notes",
            "owner": owner
        }
    })
    .to_string()
}

/// The system in a namespace of its own, runners posting to `sidecar_url`, each model turn
/// taking `delay` ms.
async fn studio(prefix: &str, sidecar_url: &str, delay: u64) -> Result<Studio> {
    Studio::start(StudioOptions {
        prefix,
        sidecar_url,
        manifests: &models(delay),
        users: &[ALICE],
        policies: false,
        configure: &|_| {},
    })
    .await
}

/// The system in a namespace of its own with the chart's operator (its sidecar serves the
/// runners and the people), each model turn taking `delay` ms, `values` on top of the tests'.
async fn chart_studio(prefix: &str, delay: u64, values: &[&str]) -> Result<Studio> {
    Studio::install(ChartStudioOptions {
        prefix,
        prelude: "",
        manifests: &models(delay),
        users: &[ALICE],
        policies: false,
        values,
    })
    .await
}

/// One JSON page of a run's events, as `token`'s holder.
async fn page(
    sidecar: &str,
    ns: &str,
    run: &str,
    token: Option<&str>,
    after: u64,
) -> Result<(StatusCode, serde_json::Value)> {
    let mut request = http_client()?.get(format!(
        "{sidecar}/api/v1/runs/{ns}/{run}/events?after={after}"
    ));
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    let response = request.send().await?;
    let status = response.status();
    let body = response
        .json::<serde_json::Value>()
        .await
        .unwrap_or_default();
    Ok((status, body))
}

/// The events of an SSE stream: `(id, data)` until the stream ends or `stop_after` events.
async fn sse(
    sidecar: &str,
    ns: &str,
    run: &str,
    token: &str,
    last_event_id: Option<u64>,
    stop_after: Option<usize>,
) -> Result<Vec<(u64, TraceEvent)>> {
    let mut request = http_client()?
        .get(format!("{sidecar}/api/v1/runs/{ns}/{run}/events"))
        .header("accept", "text/event-stream")
        .bearer_auth(token);
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id.to_string());
    }
    let response = request.send().await?;
    ensure!(
        response.status() == StatusCode::OK,
        "SSE: {}",
        response.status()
    );
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    ensure!(
        content_type.starts_with("text/event-stream"),
        "content-type {content_type}"
    );
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        buffer.push_str(std::str::from_utf8(&chunk?).context("SSE is UTF-8")?);
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut id = None;
            let mut name = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().parse::<u64>()?);
                } else if let Some(v) = line.strip_prefix("event:") {
                    name = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            if let Some(id) = id {
                let event = serde_json::from_str::<TraceEvent>(&data)?;
                // One frame per event, named by its type (rule 9.20).
                ensure!(
                    name.as_deref() == Some(event.kind()),
                    "frame {id} is named {name:?}, not {}",
                    event.kind()
                );
                out.push((id, event));
                if stop_after.is_some_and(|n| out.len() >= n) {
                    return Ok(out);
                }
            }
        }
    }
    Ok(out)
}

fn seqs(events: &[TraceEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_pod_streams_its_trace_to_the_sidecar_and_its_owner_reads_it_with_resume()
-> Result<()> {
    let f = chart_studio("sc-read", 0, &[]).await?;
    let result = async {
        apply_yaml(&f.admin, Some(&f.ns.name), &run_manifest("notes-1", ALICE)).await?;
        let run = f.wait_phase("notes-1", RunPhase::Succeeded).await?;
        let printed = f.runner_log(&run).await?;
        ensure!(
            printed.last().map(|e| e.kind()) == Some("run.end"),
            "the runner printed run.end last"
        );
        let alice = token(f.env, ALICE)?;
        // A page: exactly what the runner printed, in order, once each.
        let (status, body) = page(&f.sidecar_url, &f.ns.name, "notes-1", Some(&alice), 0).await?;
        ensure!(status == StatusCode::OK, "page: {status} {body}");
        let stored: Vec<TraceEvent> = serde_json::from_value(body["events"].clone())?;
        ensure!(
            stored == printed,
            "the stored trace is the printed one:\n{stored:?}\n{printed:?}"
        );
        ensure!(
            body["complete"] == json!(true) && body["next"] == json!(printed.len()),
            "{body}"
        );
        // The run's status says how many events the sidecar holds (rule 9.23).
        let count = i64::try_from(printed.len())?;
        f.wait_run(
            "notes-1",
            "eventCount",
            move |r: &orrery_crds::StudioRun| {
                r.status.as_ref().and_then(|s| s.event_count) == Some(count)
            },
        )
        .await?;
        // SSE from the start, then resumed after event 3: no gap, no duplicate, ends at run.end.
        let all = sse(&f.sidecar_url, &f.ns.name, "notes-1", &alice, None, None).await?;
        ensure!(
            all.iter().map(|(id, _)| *id).collect::<Vec<_>>() == seqs(&printed),
            "ids are seqs"
        );
        let rest = sse(&f.sidecar_url, &f.ns.name, "notes-1", &alice, Some(3), None).await?;
        ensure!(
            rest.iter().map(|(_, e)| e.seq).collect::<Vec<_>>() == seqs(&printed)[3..],
            "resume after 3"
        );
        // Who may not read: no token, a token the cluster refuses, bob (no right to get the run).
        let (status, body) = page(&f.sidecar_url, &f.ns.name, "notes-1", None, 0).await?;
        ensure!(
            status == StatusCode::UNAUTHORIZED && body["code"] == "unauthenticated",
            "{status} {body}"
        );
        let (status, _) = page(
            &f.sidecar_url,
            &f.ns.name,
            "notes-1",
            Some("not-a-token"),
            0,
        )
        .await?;
        ensure!(status == StatusCode::UNAUTHORIZED, "{status}");
        let bob = token(f.env, "bob")?;
        let (status, body) = page(&f.sidecar_url, &f.ns.name, "notes-1", Some(&bob), 0).await?;
        ensure!(status == StatusCode::FORBIDDEN, "bob: {status} {body}");
        // The admin may get the run but is neither its owner nor an approver: as if it did
        // not exist (rule 11.5).
        let admin = token(f.env, ADMIN)?;
        let (status, body) = page(&f.sidecar_url, &f.ns.name, "notes-1", Some(&admin), 0).await?;
        ensure!(
            status == StatusCode::NOT_FOUND
                && body["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("owner"),
            "admin: {status} {body}"
        );
        let (status, _) = page(&f.sidecar_url, &f.ns.name, "no-such-run", Some(&alice), 0).await?;
        ensure!(status == StatusCode::NOT_FOUND, "{status}");
        Ok(())
    }
    .await;
    let stopped = f.shutdown().await;
    result.and(stopped)
}

/// With the chart's `runner.redactIps`, a run pod redacts IP addresses in the content it
/// captures before any event leaves it: the stored trace has `[REDACTED_IP]` and never the
/// address (rule 8.8).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redact_ips_a_run_pod_stores_captured_content_with_its_ip_addresses_redacted_rule_8_8()
-> Result<()> {
    let f = chart_studio("sc-redact", 0, &["runner.redactIps=true"]).await?;
    let result = async {
        let mut run: serde_json::Value = serde_json::from_str(&run_manifest("redacted-1", ALICE))?;
        run["spec"]["input"] = json!("the notes from 10.20.30.40 and fd00::1234");
        run["spec"]["captureContent"] = json!(true);
        apply_yaml(&f.admin, Some(&f.ns.name), &run.to_string()).await?;
        f.wait_phase("redacted-1", RunPhase::Succeeded).await?;
        let alice = token(f.env, ALICE)?;
        let (status, body) =
            page(&f.sidecar_url, &f.ns.name, "redacted-1", Some(&alice), 0).await?;
        ensure!(status == StatusCode::OK, "page: {status} {body}");
        let events = body["events"].to_string();
        ensure!(
            !events.contains("10.20.30.40") && !events.contains("fd00::1234"),
            "an address left the pod unredacted: {events}"
        );
        ensure!(
            events.contains("[REDACTED_IP]"),
            "the captured content carries the marker: {events}"
        );
        Ok(())
    }
    .await;
    let stopped = f.shutdown().await;
    result.and(stopped)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sidecar_killed_mid_run_loses_no_event_and_stores_none_twice() -> Result<()> {
    let mut sidecar = TestSidecar::sqlite("sidecar-kill", SidecarSettings::default()).await?;
    let f = studio("sc-kill", &sidecar.url, 1500).await?;
    let result = async {
        apply_yaml(&f.admin, Some(&f.ns.name), &run_manifest("notes-2", ALICE)).await?;
        let run = f.wait_phase("notes-2", RunPhase::Running).await?;
        let uid = run.uid().context("uid")?;
        // Wait for the first events to be stored, then kill the sidecar where it is.
        let store = sidecar.sidecar.store.clone();
        let mut stored = 0;
        for _ in 0..200 {
            stored = store.last_seq(&uid).await?;
            if stored >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ensure!(stored >= 2, "events reached the sidecar before the kill");
        let killed_at = k8s_openapi::jiff::Timestamp::now();
        sidecar.kill().await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        sidecar.restart().await?;
        let restarted_at = k8s_openapi::jiff::Timestamp::now();
        let run = f.wait_phase("notes-2", RunPhase::Succeeded).await?;
        let printed = f.runner_log(&run).await?;
        // The kill fell in the middle of the run: the runner emitted events while no sidecar
        // answered (they had to be held and sent again), and more after.
        let during: Vec<u64> = printed
            .iter()
            .filter(|e| {
                e.ts.parse::<k8s_openapi::jiff::Timestamp>()
                    .is_ok_and(|ts| ts >= killed_at && ts <= restarted_at)
            })
            .map(|e| e.seq)
            .collect();
        ensure!(
            !during.is_empty() && printed.len() as u64 > stored,
            "no event was emitted while the sidecar was down ({stored} stored at the kill, \
             {} printed): the test proved nothing",
            printed.len()
        );
        let alice = token(f.env, ALICE)?;
        let mut held = Vec::new();
        let mut after = 0;
        for _ in 0..100 {
            let (status, body) =
                page(&sidecar.url, &f.ns.name, "notes-2", Some(&alice), after).await?;
            ensure!(status == StatusCode::OK, "{status} {body}");
            let events: Vec<TraceEvent> = serde_json::from_value(body["events"].clone())?;
            held.extend(events);
            after = body["next"].as_u64().unwrap_or(after);
            if body["complete"] == json!(true) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        ensure!(
            held == printed,
            "after the restart the store holds exactly the printed trace:\n{:?}\n{:?}",
            seqs(&held),
            seqs(&printed)
        );
        Ok(())
    }
    .await;
    let stopped = f.shutdown().await;
    sidecar.stop().await?;
    result.and(stopped)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_deadline_passing_while_the_sidecar_is_down_ends_the_run_rejected_once_by_the_runners_clock_fault_15()
-> Result<()> {
    let mut sidecar = TestSidecar::sqlite("sidecar-expiry", SidecarSettings::default()).await?;
    let f = Studio::start(StudioOptions {
        prefix: "sc-expiry",
        sidecar_url: &sidecar.url,
        manifests: &models(200),
        users: &[ALICE],
        policies: false,
        // Nobody decides within 6 s: default deny (rule 4.13).
        configure: &|config| config.approval_timeout_seconds = 6,
    })
    .await?;
    let result = async {
        apply_yaml(&f.admin, Some(&f.ns.name), &asking_run("unanswered")).await?;
        let waiting = f.wait_pending_approval("unanswered").await?;
        let pending = waiting
            .status
            .as_ref()
            .and_then(|s| s.pending_approvals.first())
            .context("a pending approval")?
            .clone();
        // The sidecar goes away before the deadline and comes back well after it.
        sidecar.kill().await;
        tokio::time::sleep(Duration::from_secs(10)).await;
        sidecar.restart().await?;
        // The runner's clock decided: the approval expired at its deadline, the run ends
        // rejected and never takes the approved edge.
        let done = f.wait_phase("unanswered", RunPhase::Rejected).await?;
        let printed = f.runner_log(&done).await?;
        let kinds: Vec<&str> = printed.iter().map(|e| e.kind()).collect();
        let decided: Vec<serde_json::Value> = printed
            .iter()
            .filter(|e| e.kind() == "approval.decided")
            .filter_map(|e| serde_json::to_value(e).ok())
            .collect();
        ensure!(
            kinds.iter().filter(|k| **k == "approval.requested").count() == 1
                && decided.len() == 1
                && decided[0]["decision"] == "expired",
            "one request, settled once as expired: {kinds:?} {decided:?}"
        );
        ensure!(
            !printed.iter().any(|e| e.kind() == "node.enter"
                && serde_json::to_value(e).is_ok_and(|v| v["nodeId"] == "b")),
            "the approved edge was never taken"
        );
        // The sidecar, back, holds the trace once and the approval settled as expired; a
        // decision now is too late.
        let alice = token(f.env, ALICE)?;
        let approvals = format!(
            "{}/api/v1/runs/{}/unanswered/approvals",
            sidecar.url, f.ns.name
        );
        let mut settled = serde_json::Value::Null;
        for _ in 0..100 {
            let (status, body) =
                api_call(reqwest::Method::GET, approvals.clone(), &alice, None).await?;
            ensure!(status == StatusCode::OK, "{status} {body}");
            settled = body["items"][0].clone();
            if settled["state"] != "pending" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        ensure!(
            settled["id"] == json!(pending.id) && settled["state"] == "expired",
            "the approval is settled expired: {settled}"
        );
        let (status, body) = api_call(
            reqwest::Method::POST,
            format!("{approvals}/{}", pending.id),
            &alice,
            Some(json!({"decision": "Approve", "digest": pending.digest})),
        )
        .await?;
        ensure!(
            status == StatusCode::CONFLICT,
            "a late decision: {status} {body}"
        );
        Ok(())
    }
    .await;
    let stopped = f.shutdown().await;
    sidecar.stop().await?;
    result.and(stopped)
}

/// A router run of Alice's that asks her at `review` and goes on to `b` when approved.
fn asking_run(name: &str) -> String {
    json!({
        "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "StudioRun",
        "metadata": {"name": name},
        "spec": {
            "composition": {
                "pattern": "Router",
                "nodes": [
                    {"id": "a", "kind": "LLMAgent", "model": "scripted", "instruction": "Go on."},
                    {"id": "review", "kind": "HumanApproval", "prompt": "Ship it?"},
                    {"id": "b", "kind": "LLMAgent", "model": "scripted", "instruction": "Go on."}
                ],
                "edges": [{"from": "a", "to": "review"}, {"from": "review", "to": "b", "when": "approved"}]
            },
            "input": "the notes",
            "owner": ALICE
        }
    })
    .to_string()
}

/// Approves `waiting`'s first pending approval through the studio's sidecar API as the
/// holder of `token`, expecting 200.
async fn approve_through_the_api(
    f: &Studio,
    waiting: &orrery_crds::StudioRun,
    token: &str,
) -> Result<()> {
    let pending = waiting
        .status
        .as_ref()
        .and_then(|s| s.pending_approvals.first())
        .context("a pending approval")?;
    let (status, body) = api_call(
        reqwest::Method::POST,
        format!(
            "{}/api/v1/runs/{}/{}/approvals/{}",
            f.sidecar_url,
            f.ns.name,
            waiting.name_any(),
            pending.id
        ),
        token,
        Some(json!({"decision": "Approve", "digest": pending.digest})),
    )
    .await?;
    ensure!(status == StatusCode::OK, "the decision: {status} {body}");
    Ok(())
}

/// A studio on the shared sidecar whose runners' wall clocks are `skew` seconds off the
/// sidecar's and the API server's (`orrery_tests::skew`), approvals expiring after `timeout`
/// seconds.
async fn skewed_studio(prefix: &str, skew: i64, timeout: u64) -> Result<Studio> {
    let mut f = Studio::start(StudioOptions {
        prefix,
        sidecar_url: &orrery_tests::sidecar_fixture::shared()?.url,
        manifests: &models(200),
        users: &[ALICE],
        policies: false,
        configure: &move |config| config.approval_timeout_seconds = timeout,
    })
    .await?;
    if let Err(e) = f
        .restart_node_with_env(orrery_tests::skew::env(skew)?)
        .await
    {
        let _ = f.shutdown().await;
        return Err(e);
    }
    Ok(f)
}

/// Seconds from now (the test's clock, the sidecar's) to the pending approval's `expiresAt`
/// (the runner's clock).
fn expires_in(run: &orrery_crds::StudioRun) -> Result<i64> {
    let pending = run
        .status
        .as_ref()
        .and_then(|s| s.pending_approvals.first())
        .context("a pending approval")?;
    let at: jiff::Timestamp = pending.expires_at.parse()?;
    Ok(at.as_second() - jiff::Timestamp::now().as_second())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_whose_clock_is_two_hours_behind_still_takes_a_decision_made_in_time_fault_17()
-> Result<()> {
    let studio = skewed_studio("skew-behind", -7200, 120).await?;
    Studio::test(studio, async |f| {
        apply_yaml(&f.admin, Some(&f.ns.name), &asking_run("behind")).await?;
        let waiting = f.wait_pending_approval("behind").await?;
        // By the sidecar's clock the approval "expired" nearly two hours ago: its expiresAt is
        // the runner's, two hours behind.
        let left = expires_in(&waiting)?;
        ensure!(
            (-7200..=-6900).contains(&left),
            "the runner's clock is two hours behind: expiresAt is {left} s from now"
        );
        let pending = waiting
            .status
            .as_ref()
            .and_then(|s| s.pending_approvals.first())
            .context("a pending approval")?
            .clone();
        // The sidecar compares no time: Alice's decision, in time by the runner's clock,
        // is taken, and the run goes on along the approved edge.
        let (status, body) = api_call(
            reqwest::Method::POST,
            format!(
                "{}/api/v1/runs/{}/behind/approvals/{}",
                f.sidecar_url, f.ns.name, pending.id
            ),
            &token(f.env, ALICE)?,
            Some(json!({"decision": "Approve", "digest": pending.digest})),
        )
        .await?;
        ensure!(status == StatusCode::OK, "the decision: {status} {body}");
        let done = f.wait_phase("behind", RunPhase::Succeeded).await?;
        let printed = f.runner_log(&done).await?;
        ensure!(
            printed.iter().any(|e| e.kind() == "node.enter"
                && serde_json::to_value(e).is_ok_and(|v| v["nodeId"] == "b")),
            "the approved edge was taken"
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_whose_clock_is_two_hours_ahead_expires_an_approval_after_its_timeout_not_its_clock_fault_17()
-> Result<()> {
    let studio = skewed_studio("skew-ahead", 7200, 6).await?;
    Studio::test(studio, async |f| {
        apply_yaml(&f.admin, Some(&f.ns.name), &asking_run("ahead")).await?;
        let waiting = f.wait_pending_approval("ahead").await?;
        let asked = std::time::Instant::now();
        // By the sidecar's clock the approval has two hours left.
        let left = expires_in(&waiting)?;
        ensure!(
            (7000..=7300).contains(&left),
            "the runner's clock is two hours ahead: expiresAt is {left} s from now"
        );
        let pending = waiting
            .status
            .as_ref()
            .and_then(|s| s.pending_approvals.first())
            .context("a pending approval")?
            .clone();
        // Nobody decides: it expires after its 6 s, measured by the runner's monotonic clock,
        // a rejection; a decision then is too late, whatever expiresAt says.
        let done = f.wait_phase("ahead", RunPhase::Rejected).await?;
        let took = asked.elapsed();
        ensure!(
            took < Duration::from_secs(60),
            "expired after {took:?}, not after its 6 s"
        );
        let printed = f.runner_log(&done).await?;
        ensure!(
            printed.iter().any(|e| e.kind() == "approval.decided"
                && serde_json::to_value(e).is_ok_and(|v| v["decision"] == "expired")),
            "settled as expired"
        );
        let approvals = format!(
            "{}/api/v1/runs/{}/ahead/approvals",
            f.sidecar_url, f.ns.name
        );
        let alice = token(f.env, ALICE)?;
        let (status, body) = api_call(
            reqwest::Method::POST,
            format!("{approvals}/{}", pending.id),
            &alice,
            Some(json!({"decision": "Approve", "digest": pending.digest})),
        )
        .await?;
        ensure!(
            status == StatusCode::CONFLICT,
            "a decision after expiry: {status} {body}"
        );
        Ok(())
    })
    .await
}

/// The run-token pair the release uses (`runToken.existingSecret`, as a GitOps install makes it):
/// the test's own key, so the test can sign tokens (and forge them).
fn run_token_secret() -> String {
    let indent = |pem: &str| {
        pem.lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    };
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: test-run-token}}\nstringData:\n  key.pem: |\n{}  key.pub.pem: |\n{}",
        indent(TEST_SIGNING_KEY),
        indent(TEST_VERIFYING_KEY)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_token_posts_only_to_its_own_run_and_a_forged_or_expired_one_is_refused() -> Result<()>
{
    let secret = run_token_secret();
    let f = Studio::install(ChartStudioOptions {
        prefix: "sc-token",
        prelude: &secret,
        manifests: "",
        users: &[],
        policies: false,
        values: &["runToken.existingSecret=test-run-token"],
    })
    .await?;
    let sidecar_url = f.sidecar_url.clone();
    let result = async {
        let signer = test_signer()?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_secs() as i64;
        let token_a = signer.sign(&run_claims(
            "team",
            "run-a",
            "uid-a",
            DEFAULT_RUN_TOKEN_AUDIENCE,
            now,
            600,
        ))?;
        let expired = signer.sign(&run_claims(
            "team",
            "run-a",
            "uid-a",
            DEFAULT_RUN_TOKEN_AUDIENCE,
            now - 7200,
            600,
        ))?;
        let token_b = signer.sign(&run_claims(
            "team",
            "run-b",
            "uid-b",
            DEFAULT_RUN_TOKEN_AUDIENCE,
            now,
            600,
        ))?;
        let elsewhere = signer.sign(&run_claims(
            "team",
            "run-a",
            "uid-a",
            "another-audience",
            now,
            600,
        ))?;
        let batch = |run: &str, seqs: std::ops::RangeInclusive<u64>| EventBatch {
            events: seqs
                .map(|seq| TraceEvent {
                    seq,
                    run_id: run.into(),
                    ts: "2026-12-02T00:00:00.000Z".into(),
                    body: orrery_crds::events::EventBody::LoopIteration {
                        head: "writer".into(),
                        tail: "critic".into(),
                        iteration: 1,
                        max: 3,
                        stopped: false,
                    },
                })
                .collect(),
        };
        let post = async |uid: &str,
                          token: Option<&str>,
                          batch: &EventBatch|
               -> Result<(StatusCode, String)> {
            let mut request = http_client()?
                .post(format!("{sidecar_url}{}", ingest_path(uid)))
                .json(batch);
            if let Some(t) = token {
                request = request.bearer_auth(t);
            }
            let response = request.send().await?;
            Ok((response.status(), response.text().await?))
        };
        let (status, body) = post("uid-a", Some(&token_a), &batch("uid-a", 1..=3)).await?;
        ensure!(status == StatusCode::OK, "{status} {body}");
        let reply: IngestReply = serde_json::from_str(&body)?;
        ensure!(
            reply
                == IngestReply {
                    stored: 3,
                    duplicates: 0,
                    last_seq: 3
                },
            "{reply:?}"
        );
        // A replay stores nothing twice; an overlap stores only what is new.
        let (_, body) = post("uid-a", Some(&token_a), &batch("uid-a", 2..=5)).await?;
        ensure!(
            serde_json::from_str::<IngestReply>(&body)?
                == IngestReply {
                    stored: 2,
                    duplicates: 2,
                    last_seq: 5
                },
            "{body}"
        );
        // A gap: 409 with where to resume.
        let (status, body) = post("uid-a", Some(&token_a), &batch("uid-a", 9..=9)).await?;
        ensure!(status == StatusCode::CONFLICT, "{status} {body}");
        ensure!(
            serde_json::from_str::<ApiError>(&body)?.expected == Some(6),
            "{body}"
        );
        // Run A's token for run B: 403, nothing stored for B.
        let (status, body) = post("uid-b", Some(&token_a), &batch("uid-b", 1..=1)).await?;
        ensure!(
            status == StatusCode::FORBIDDEN && body.contains("its own run"),
            "{status} {body}"
        );
        // Events of another run inside run A's batch: 400 at the event.
        let (status, body) = post("uid-a", Some(&token_a), &batch("uid-b", 6..=6)).await?;
        ensure!(status == StatusCode::BAD_REQUEST, "{status} {body}");
        ensure!(
            serde_json::from_str::<ApiError>(&body)?.loc
                == vec![json!("body"), json!("events"), json!(0)],
            "{body}"
        );
        for (token, what) in [
            (None, "none"),
            (Some(expired.as_str()), "expired"),
            (Some(elsewhere.as_str()), "audience"),
            (Some("x.y.z"), "forged"),
        ] {
            let (status, body) = post("uid-a", token, &batch("uid-a", 6..=6)).await?;
            ensure!(
                status == StatusCode::UNAUTHORIZED,
                "{what}: {status} {body}"
            );
            ensure!(!body.contains(&token_a), "no token echoed");
        }
        // A batch past the size limit: 413 over HTTP; a body that is no batch: 400.
        let oversized = format!(
            "{{\"events\":[{{\"pad\":\"{}\"}}]}}",
            "x".repeat(orrery_crds::events::ingest::MAX_BATCH_BYTES)
        );
        let response = http_client()?
            .post(format!("{sidecar_url}{}", ingest_path("uid-a")))
            .bearer_auth(&token_a)
            .header("content-type", "application/json")
            .body(oversized)
            .send()
            .await?;
        let (status, body) = (response.status(), response.text().await?);
        ensure!(
            status == StatusCode::PAYLOAD_TOO_LARGE
                && serde_json::from_str::<ApiError>(&body)?.code == "too_large",
            "{status} {body}"
        );
        let response = http_client()?
            .post(format!("{sidecar_url}{}", ingest_path("uid-a")))
            .bearer_auth(&token_a)
            .header("content-type", "application/json")
            .body("{\"events\": 3}")
            .send()
            .await?;
        ensure!(
            response.status() == StatusCode::BAD_REQUEST,
            "not a batch: {}",
            response.status()
        );
        // A run token posts its run's events and nothing else: it cannot read a run or
        // decide on it through the run API (it is nobody's Kubernetes token).
        for (method, path) in [
            (reqwest::Method::GET, "/api/v1/runs/team/run-a/events"),
            (reqwest::Method::GET, "/api/v1/runs/team/run-a/approvals"),
            (
                reqwest::Method::POST,
                "/api/v1/runs/team/run-a/approvals/approval-1",
            ),
        ] {
            let (status, body) = api_call(
                method.clone(),
                format!("{sidecar_url}{path}"),
                &token_a,
                Some(json!({"decision": "Approve", "digest": "0".repeat(64)}))
                    .filter(|_| method == reqwest::Method::POST),
            )
            .await?;
            ensure!(
                status == StatusCode::UNAUTHORIZED,
                "a run token on {method} {path}: {status} {body}"
            );
        }
        // What the refused batches did not store: run B starts at 1 with its own token, and
        // run A goes on at 6.
        let (status, body) = post("uid-b", Some(&token_b), &batch("uid-b", 1..=1)).await?;
        ensure!(status == StatusCode::OK, "{status} {body}");
        ensure!(
            serde_json::from_str::<IngestReply>(&body)?
                == IngestReply {
                    stored: 1,
                    duplicates: 0,
                    last_seq: 1
                },
            "nothing was stored for run B before: {body}"
        );
        let (_, body) = post("uid-a", Some(&token_a), &batch("uid-a", 6..=6)).await?;
        ensure!(
            serde_json::from_str::<IngestReply>(&body)?
                == IngestReply {
                    stored: 1,
                    duplicates: 0,
                    last_seq: 6
                },
            "the refused batches stored nothing: {body}"
        );
        // The trace ends with its run.end: an event after it in the same batch is 400, one
        // posted later 409 (`ended`); sending the stored end again is still a plain replay.
        let end = |seq: u64| TraceEvent {
            seq,
            run_id: "uid-a".into(),
            ts: "2026-12-02T00:00:00.000Z".into(),
            body: orrery_crds::events::EventBody::RunEnd {
                outcome: orrery_crds::events::Outcome::Succeeded,
                totals: Default::default(),
                error: None,
                dropped: 0,
                output_size: 0,
                output: None,
            },
        };
        let mut past_end = batch("uid-a", 7..=8);
        past_end.events[0] = end(7);
        let (status, body) = post("uid-a", Some(&token_a), &past_end).await?;
        ensure!(
            status == StatusCode::BAD_REQUEST
                && serde_json::from_str::<ApiError>(&body)?.loc
                    == vec![json!("body"), json!("events"), json!(1)],
            "an event after run.end in the batch: {status} {body}"
        );
        let ended = EventBatch {
            events: vec![end(7)],
        };
        let (status, body) = post("uid-a", Some(&token_a), &ended).await?;
        ensure!(status == StatusCode::OK, "run.end: {status} {body}");
        let (status, body) = post("uid-a", Some(&token_a), &batch("uid-a", 8..=8)).await?;
        ensure!(
            status == StatusCode::CONFLICT
                && serde_json::from_str::<ApiError>(&body)?.code == "ended",
            "an event after run.end: {status} {body}"
        );
        let (status, body) = post("uid-a", Some(&token_a), &ended).await?;
        ensure!(
            status == StatusCode::OK
                && serde_json::from_str::<IngestReply>(&body)?
                    == IngestReply {
                        stored: 0,
                        duplicates: 1,
                        last_seq: 7
                    },
            "run.end again: {status} {body}"
        );
        Ok(())
    }
    .await;
    result.and(f.shutdown().await)
}

fn pipeline() -> serde_json::Value {
    let node = |id: &str| json!({"id": id, "kind": "LLMAgent", "model": "scripted", "instruction": "Go on."});
    json!({
        "pattern": "Pipeline",
        "budgets": {"timeoutSeconds": 600},
        "nodes": [node("a"), node("b")],
        "edges": [{"from": "a", "to": "b"}]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_api_acts_with_the_callers_own_token_and_refuses_what_the_cluster_refuses()
-> Result<()> {
    use reqwest::Method;
    let f = chart_studio("sc-api", 0, &["sidecar.startsPerMinute=3"]).await?;
    let result = async {
        let ns = f.ns.name.clone();
        let alice = token(f.env, ALICE)?;
        let bob = token(f.env, "bob")?;
        let base = format!("{}/api/v1", f.sidecar_url);
        // Who am I: the cluster's answer for the token.
        let (status, me) = api_call(Method::GET, format!("{base}/me"), &alice, None).await?;
        ensure!(
            status == StatusCode::OK && me["username"] == "alice" && me["person"] == true,
            "{me}"
        );
        // The schema: composition, events, capabilities, ceilings.
        let (status, schema) =
            api_call(Method::GET, format!("{base}/schema"), &alice, None).await?;
        ensure!(status == StatusCode::OK, "{status}");
        for key in ["composition", "events", "capabilities", "budgetCeilings"] {
            ensure!(!schema[key].is_null(), "schema has {key}");
        }
        // Validate: the one validator, against the namespace's entries.
        let (status, verdict) = api_call(
            Method::POST,
            format!("{base}/namespaces/{ns}/validate"),
            &alice,
            Some(json!({"spec": pipeline()})),
        )
        .await?;
        ensure!(
            status == StatusCode::OK && verdict["valid"] == true,
            "{verdict}"
        );
        let mut broken = pipeline();
        broken["nodes"][1]["model"] = json!("no-such-model");
        let (status, verdict) = api_call(
            Method::POST,
            format!("{base}/namespaces/{ns}/validate"),
            &alice,
            Some(json!({"spec": broken.clone()})),
        )
        .await?;
        ensure!(
            status == StatusCode::OK && verdict["valid"] == false,
            "{verdict}"
        );
        ensure!(
            verdict["errors"][0]["loc"] == json!(["spec", "nodes", 1, "model"]),
            "the finding is at its field: {verdict}"
        );
        // The registry view.
        let (status, registry) = api_call(
            Method::GET,
            format!("{base}/namespaces/{ns}/registry"),
            &alice,
            None,
        )
        .await?;
        ensure!(
            status == StatusCode::OK && registry["items"][0]["name"] == "scripted",
            "{registry}"
        );
        // Start: an invalid inline composition is 422 with every finding, nothing created.
        let (status, body) = api_call(
            Method::POST,
            format!("{base}/runs/{ns}"),
            &alice,
            Some(json!({"name": "bad", "composition": broken, "input": "x"})),
        )
        .await?;
        ensure!(
            status == StatusCode::UNPROCESSABLE_ENTITY && body["code"] == "invalid_composition",
            "{status} {body}"
        );
        ensure!(f.runs().get_opt("bad").await?.is_none(), "nothing created");
        // A valid one is created as alice, owned by alice whatever the body says.
        let (status, run) = api_call(
            Method::POST,
            format!("{base}/runs/{ns}"),
            &alice,
            Some(json!({"name": "mine", "composition": pipeline(), "input": "x"})),
        )
        .await?;
        ensure!(
            status == StatusCode::CREATED && run["spec"]["owner"] == "alice",
            "{status} {run}"
        );
        f.wait_phase("mine", RunPhase::Succeeded).await?;
        // bob may not start runs here (no Role): the apiserver's 403 passes through.
        let (status, body) = api_call(
            Method::POST,
            format!("{base}/runs/{ns}"),
            &bob,
            Some(json!({"composition": pipeline(), "input": "x"})),
        )
        .await?;
        ensure!(
            status == StatusCode::FORBIDDEN,
            "bob starts: {status} {body}"
        );
        // List and get: alice's runs only; another's run is 404 to her.
        apply_yaml(
            &f.admin,
            Some(&ns),
            &run_manifest("janes", "jane@example.com"),
        )
        .await?;
        let (status, list) =
            api_call(Method::GET, format!("{base}/runs/{ns}"), &alice, None).await?;
        let names: Vec<&str> = list["items"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|r| r["metadata"]["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        ensure!(status == StatusCode::OK && names == ["mine"], "{names:?}");
        let (status, _) =
            api_call(Method::GET, format!("{base}/runs/{ns}/janes"), &alice, None).await?;
        ensure!(status == StatusCode::NOT_FOUND, "{status}");
        let (status, got) =
            api_call(Method::GET, format!("{base}/runs/{ns}/mine"), &alice, None).await?;
        ensure!(
            status == StatusCode::OK && got["status"]["phase"] == "Succeeded",
            "{got}"
        );
        // Cancel: a finished run is 409; the third start this minute is the last allowed.
        let (status, _) = api_call(
            Method::POST,
            format!("{base}/runs/{ns}/mine/cancel"),
            &alice,
            None,
        )
        .await?;
        ensure!(status == StatusCode::CONFLICT, "{status}");
        let (status, _) = api_call(
            Method::POST,
            format!("{base}/runs/{ns}"),
            &alice,
            Some(json!({"name": "third", "composition": pipeline(), "input": "x"})),
        )
        .await?;
        ensure!(status == StatusCode::CREATED, "{status}");
        let (status, body) = api_call(
            Method::POST,
            format!("{base}/runs/{ns}"),
            &alice,
            Some(json!({"composition": pipeline(), "input": "x"})),
        )
        .await?;
        ensure!(
            status == StatusCode::TOO_MANY_REQUESTS && body["code"] == "rate_limited",
            "the fourth start in a minute: {status} {body}"
        );
        Ok(())
    }
    .await;
    let stopped = f.shutdown().await;
    result.and(stopped)
}

/// Alice's run `waiting`, which waits for a Composition that does not exist (so it never gets a
/// runner), and her event stream of it through the sidecar at `sidecar_url`, followed in a task
/// until it ends. Returns her token and the task.
async fn follow_a_waiting_run(
    f: &Studio,
    sidecar_url: &str,
) -> Result<(
    String,
    tokio::task::JoinHandle<Result<Vec<(u64, TraceEvent)>>>,
)> {
    let waiting = json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": "waiting"},
        "spec": {"compositionRef": {"name": "not-there"}, "input": "x", "owner": ALICE}
    });
    apply_yaml(&f.admin, Some(&f.ns.name), &waiting.to_string()).await?;
    let alice = token(f.env, ALICE)?;
    let stream = tokio::spawn({
        let (url, ns, alice) = (sidecar_url.to_owned(), f.ns.name.clone(), alice.clone());
        async move { sse(&url, &ns, "waiting", &alice, None, None).await }
    });
    Ok((alice, stream))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_event_streams_end_cleanly_when_the_sidecar_stops() -> Result<()> {
    let mut sidecar = TestSidecar::sqlite("sidecar-stop", SidecarSettings::default()).await?;
    let f = studio("sc-stop", &sidecar.url, 0).await?;
    let result = async {
        // A run that waits for a Composition that does not exist: it never ends, so its
        // stream would follow it for ever.
        let (_, stream) = follow_a_waiting_run(&f, &sidecar.url).await?;
        // Let the stream open, then stop the sidecar gracefully: the stream ends, and the stop
        // does not wait for it (rule 11.5).
        tokio::time::sleep(Duration::from_secs(2)).await;
        tokio::time::timeout(Duration::from_secs(10), sidecar.stop())
            .await
            .context("the sidecar did not stop with a stream open")??;
        tokio::time::timeout(Duration::from_secs(10), stream)
            .await
            .context("the stream did not end on shutdown")???;
        Ok(())
    }
    .await;
    let stopped = f.shutdown().await;
    result.and(stopped)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_run_cancelled_before_it_started_ends_its_stream_though_no_run_end_came()
-> Result<()> {
    let settings = SidecarSettings {
        stream_status_check: Duration::from_secs(1),
        ..SidecarSettings::default()
    };
    let mut sidecar = TestSidecar::sqlite("sidecar-cancel", settings).await?;
    let f = studio("sc-cancel", &sidecar.url, 0).await?;
    let result = async {
        // Waiting for a Composition that does not exist, the run never gets a runner: it can
        // end only by cancelling, and then no `run.end` is ever stored.
        let (alice, stream) = follow_a_waiting_run(&f, &sidecar.url).await?;
        // Quiet and not over, the stream stays open past several status checks.
        tokio::time::sleep(Duration::from_secs(4)).await;
        ensure!(!stream.is_finished(), "the stream of a waiting run ended");
        let cancel = http_client()?
            .post(format!(
                "{}/api/v1/runs/{}/waiting/cancel",
                sidecar.url, f.ns.name
            ))
            .bearer_auth(&alice)
            .send()
            .await?;
        ensure!(
            cancel.status() == StatusCode::ACCEPTED,
            "cancel: {}",
            cancel.status()
        );
        let events = tokio::time::timeout(Duration::from_secs(30), stream)
            .await
            .context("the stream of a cancelled run stayed open")???;
        ensure!(
            events.is_empty(),
            "a run that never started sent {events:?}"
        );
        let run = f.runs().get("waiting").await?;
        let phase = run.status.and_then(|s| s.phase);
        ensure!(phase == Some(RunPhase::Cancelled), "phase {phase:?}");
        Ok(())
    }
    .await;
    let stopped = f.shutdown().await;
    let sidecar_stopped = sidecar.stop().await;
    result.and(stopped).and(sidecar_stopped)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_stream_dropped_mid_run_resumes_with_last_event_id_with_no_gap_and_no_duplicate_rule_9_21()
-> Result<()> {
    // Each of the four nodes answers after 700 ms: the run is live while the stream drops.
    let f = chart_studio("sc-drop", 700, &[]).await?;
    let result = async {
        apply_yaml(&f.admin, Some(&f.ns.name), &run_manifest("live-1", ALICE)).await?;
        let alice = token(f.env, ALICE)?;
        f.wait_phase("live-1", RunPhase::Running).await?;
        // The first connection takes three frames and drops.
        let first = sse(&f.sidecar_url, &f.ns.name, "live-1", &alice, None, Some(3)).await?;
        ensure!(first.len() == 3, "{first:?}");
        let last = first.last().map(|(id, _)| *id).unwrap_or(0);
        // The reconnection names the last id it has and follows to run.end.
        let rest = sse(
            &f.sidecar_url,
            &f.ns.name,
            "live-1",
            &alice,
            Some(last),
            None,
        )
        .await?;
        let run = f.wait_phase("live-1", RunPhase::Succeeded).await?;
        let printed = f.runner_log(&run).await?;
        let mut got: Vec<u64> = first.iter().map(|(id, _)| *id).collect();
        got.extend(rest.iter().map(|(id, _)| *id));
        ensure!(
            got == seqs(&printed),
            "the two connections together are the trace once: {got:?} vs {:?}",
            seqs(&printed)
        );
        ensure!(
            rest.last().map(|(_, e)| e.kind()) == Some("run.end"),
            "the resumed stream follows the live run to its end"
        );
        Ok(())
    }
    .await;
    let stopped = f.shutdown().await;
    result.and(stopped)
}

/// The chart's sidecar serves its metrics on a port of its own (`sidecar.metricsPort`): after a
/// run that asked Alice and was approved through the API, followed live from its start, and a
/// batch posted with a forged run token, the text parses with Prometheus' own parser, passes its
/// linter, and counts what happened: each event stored once, the refused batch by its reason,
/// the ask, the decision and the settlement once each, requests by route template, the store's
/// calls by backend, the stream closed again and its live events' delay. The controller's
/// metrics pass the same linter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sidecars_metrics_count_ingest_streams_and_approvals_and_pass_the_prometheus_linter()
-> Result<()> {
    use orrery_tests::promcheck::promcheck;
    let studio = chart_studio("sc-metrics", 200, &[]).await?;
    Studio::test(studio, async |f| {
        let (controller_metrics, sidecar_metrics) = f
            .chart()
            .and_then(|c| c.metrics_urls.clone())
            .context("the chart's metrics on loopback")?;
        let alice = token(f.env, ALICE)?;
        apply_yaml(&f.admin, Some(&f.ns.name), &asking_run("measured")).await?;
        // Followed live from the start (the stream ends with run.end).
        let following = {
            let (url, ns, alice) = (f.sidecar_url.clone(), f.ns.name.clone(), alice.clone());
            tokio::spawn(async move { sse(&url, &ns, "measured", &alice, None, None).await })
        };
        let waiting = f.wait_pending_approval("measured").await?;
        approve_through_the_api(f, &waiting, &alice).await?;
        let done = f.wait_phase("measured", RunPhase::Succeeded).await?;
        let printed = f.runner_log(&done).await?;
        let followed = following.await??;
        ensure!(followed.len() == printed.len(), "followed every event live");
        // A batch with a forged token is refused before anything is read.
        let uid = done.uid().context("the run's UID")?;
        let forged = http_client()?
            .post(format!("{}{}", f.sidecar_url, ingest_path(&uid)))
            .bearer_auth("forged.token.here")
            .json(&json!({"runUid": uid, "events": []}))
            .send()
            .await?;
        ensure!(
            forged.status() == StatusCode::UNAUTHORIZED,
            "{}",
            forged.status()
        );

        let text = http_client()?
            .get(&sidecar_metrics)
            .send()
            .await?
            .text()
            .await?;
        let report = promcheck(&text)?;
        ensure!(
            report.problems.is_empty(),
            "the linter: {:?}",
            report.problems
        );
        let stored = report.value("orrery_sidecar_events_stored_total", &[]);
        ensure!(
            stored == Some(printed.len() as f64),
            "events stored: {stored:?}, the runner printed {}",
            printed.len()
        );
        for (family, labels, want) in [
            (
                "orrery_sidecar_ingest_batches_refused_total",
                vec![("reason", "unauthenticated")],
                1.0,
            ),
            (
                "orrery_sidecar_ingest_batches_refused_total",
                vec![("reason", "gap")],
                0.0,
            ),
            ("orrery_sidecar_approvals_asked_total", vec![], 1.0),
            (
                "orrery_sidecar_approval_decisions_total",
                vec![("decision", "approve")],
                1.0,
            ),
            (
                "orrery_sidecar_approvals_settled_total",
                vec![("outcome", "approved")],
                1.0,
            ),
            (
                "orrery_sidecar_approvals_settled_total",
                vec![("outcome", "expired")],
                0.0,
            ),
            ("orrery_sidecar_streams_open", vec![], 0.0),
            (
                "orrery_sidecar_http_requests_total",
                vec![
                    ("route", "/api/v1/runs/{namespace}/{name}/approvals/{id}"),
                    ("method", "POST"),
                    ("code", "200"),
                ],
                1.0,
            ),
        ] {
            let got = report.value(family, &labels);
            ensure!(
                got == Some(want),
                "{family}{labels:?}: {got:?}, want {want}"
            );
        }
        let family = &report.families["orrery_sidecar_http_requests_total"];
        ensure!(
            family
                .metrics
                .iter()
                .all(|m| !m.labels["route"].contains(&uid)),
            "a route is its template, never a path with a UID"
        );
        let batches = report.count("orrery_sidecar_ingest_batch_duration_seconds", &[]);
        ensure!(
            batches.is_some_and(|n| n >= 2),
            "ingest batches timed: {batches:?}"
        );
        let appends = report.count(
            "orrery_sidecar_store_operation_duration_seconds",
            &[("backend", "sqlite"), ("operation", "append")],
        );
        ensure!(
            appends.is_some_and(|n| n >= 1),
            "appends timed: {appends:?}"
        );
        let delayed = report.count("orrery_sidecar_stream_delay_seconds", &[]);
        ensure!(
            delayed.is_some_and(|n| n >= 1),
            "live events' delay: {delayed:?}"
        );
        ensure!(
            report.families["orrery_sidecar_stream_delay_seconds"].kind == "HISTOGRAM",
            "a histogram"
        );

        // The controller's gauges follow its cache: the run's end shows within a reconcile.
        let mut succeeded = None;
        for _ in 0..50 {
            let text = http_client()?
                .get(&controller_metrics)
                .send()
                .await?
                .text()
                .await?;
            let report = promcheck(&text)?;
            ensure!(
                report.problems.is_empty(),
                "the linter: {:?}",
                report.problems
            );
            succeeded = report.value("orrery_runs", &[("phase", "Succeeded")]);
            if succeeded == Some(1.0) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        anyhow::bail!("orrery_runs{{phase=Succeeded}}: {succeeded:?}, want 1")
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_exported_live_as_one_opentelemetry_trace_with_no_content_by_default_through_a_collector_that_was_down()
-> Result<()> {
    use orrery_operator::otel::OtelSettings;
    use orrery_tests::otlp::OtlpSink;
    // The collector answers its first two requests 503: the sidecar retries with backoff.
    let sink = OtlpSink::start(2)?;
    let mut otel = OtelSettings::new(&sink.url)?;
    otel.headers = vec![("authorization".into(), "Bearer collector-key".into())];
    let mut sidecar = TestSidecar::sqlite(
        "sidecar-otel",
        SidecarSettings {
            otel: Some(otel),
            ..SidecarSettings::default()
        },
    )
    .await?;
    let f = studio("sc-otel", &sidecar.url, 200).await?;
    // The controllers send their reconciles to the same collector.
    let traces_stop = tokio_util::sync::CancellationToken::new();
    let operator = f.operator_metrics().context("the in-process controllers")?;
    operator.trace_to(orrery_operator::otel::SpanSender::start(
        OtelSettings::new(&sink.url)?,
        "orrery-operator",
        operator.otel.clone(),
        traces_stop.clone(),
    )?);
    let result = async {
        // A run that captures content: none of it may reach the collector by default.
        let mut manifest: serde_json::Value = serde_json::from_str(&asking_run("traced"))?;
        manifest["spec"]["captureContent"] = json!(true);
        apply_yaml(&f.admin, Some(&f.ns.name), &manifest.to_string()).await?;
        let waiting = f.wait_pending_approval("traced").await?;
        let uid = waiting.uid().context("the run's UID")?;
        let trace_id = uid.replace('-', "");
        // Live: node a's span arrives while the run still waits for a person.
        let live = sink
            .wait_for(
                Duration::from_secs(60),
                "node a's span before the run ended",
                |s| s.iter().any(|s| s.name == "invoke_agent a"),
            )
            .await?;
        ensure!(
            !live
                .iter()
                .any(|s| s.parent_span_id.is_empty() && s.scope == "orrery-sidecar"),
            "the run's root span came before the run ended"
        );
        let alice = token(f.env, ALICE)?;
        approve_through_the_api(&f, &waiting, &alice).await?;
        let done = f.wait_phase("traced", RunPhase::Succeeded).await?;
        let printed = f.runner_log(&done).await?;
        let spans = sink
            .wait_for(Duration::from_secs(60), "the run's root span", |s| {
                s.iter()
                    .any(|s| s.parent_span_id.is_empty() && s.scope == "orrery-sidecar")
            })
            .await?;
        // The controllers' reconciles of the run are in its trace, under its root span.
        let reconciles: Vec<_> = spans
            .iter()
            .filter(|s| s.name == "reconcile StudioRun")
            .cloned()
            .collect();
        let spans: Vec<_> = spans
            .into_iter()
            .filter(|s| s.scope == "orrery-sidecar")
            .collect();
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        ensure!(
            spans.iter().all(|s| s.trace_id == trace_id),
            "one trace, its id the run's UID: {spans:?}"
        );
        let mut ids: Vec<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        ensure!(ids.len() == spans.len(), "each span once: {names:?}");
        let find = |name: &str| {
            spans
                .iter()
                .find(|s| s.name == name)
                .with_context(|| format!("no span {name} in {names:?}"))
        };
        let root = spans
            .iter()
            .find(|s| s.parent_span_id.is_empty())
            .context("the root")?;
        let (a, review, b) = (
            find("invoke_agent a")?,
            find("HumanApproval review")?,
            find("invoke_agent b")?,
        );
        let approval = find("approval review")?;
        for node in [a, review, b] {
            ensure!(
                node.parent_span_id == root.span_id,
                "{} under the run",
                node.name
            );
        }
        ensure!(
            approval.parent_span_id == review.span_id,
            "the wait under its node"
        );
        ensure!(
            approval.text("orrery.approval.decision") == Some("approved"),
            "{approval:?}"
        );
        ensure!(root.text("orrery.outcome") == Some("Succeeded"), "{root:?}");
        ensure!(
            !reconciles.is_empty()
                && reconciles.iter().all(|r| r.trace_id == trace_id
                    && r.parent_span_id == root.span_id
                    && r.scope == "orrery-operator"
                    && r.text("orrery.object.name") == Some("traced")),
            "the run's reconciles under its root: {reconciles:?}"
        );
        // The runner pod was given the run's trace context (its log lines name the trace).
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
            kube::Api::namespaced(f.admin.clone(), &f.ns.name);
        let pod = pods
            .list(&kube::api::ListParams::default().labels(&format!(
                "{}={uid}",
                orrery_operator::run::builders::RUN_UID_LABEL
            )))
            .await?
            .items
            .into_iter()
            .next()
            .context("the run's pod")?;
        let traceparent = pod
            .spec
            .iter()
            .flat_map(|s| &s.containers)
            .flat_map(|c| c.env.iter().flatten())
            .find(|e| e.name == "TRACEPARENT")
            .and_then(|e| e.value.clone());
        ensure!(
            traceparent == Some(format!("00-{trace_id}-{}-01", root.span_id)),
            "the pod's TRACEPARENT: {traceparent:?}"
        );
        ensure!(root.text("orrery.run.namespace") == Some(f.ns.name.as_str()));
        ensure!(root.text("orrery.run.name") == Some("traced"));
        ensure!(root.status.code == "STATUS_CODE_OK", "{:?}", root.status);
        ensure!(a.text("gen_ai.operation.name") == Some("invoke_agent"));
        ensure!(a.text("gen_ai.request.model") == Some("scripted"));
        // Each model call is a chat span under its node, with the tokens it used.
        let chats: Vec<&_> = spans
            .iter()
            .filter(|s| {
                s.parent_span_id == a.span_id && s.text("gen_ai.operation.name") == Some("chat")
            })
            .collect();
        ensure!(chats.len() == 1, "one model call of a: {names:?}");
        ensure!(
            chats[0].text("gen_ai.provider.name") == Some("orrery.scripted"),
            "{:?}",
            chats[0]
        );
        ensure!(
            chats[0].int("gen_ai.usage.input_tokens").is_some()
                && chats[0].int("gen_ai.usage.output_tokens").is_some(),
            "the call's tokens: {:?}",
            chats[0]
        );
        ensure!(
            root.start_unix_nano <= a.start_unix_nano && a.end_unix_nano <= root.end_unix_nano,
            "a node's span lies within the run's"
        );
        // The run captured content (its printed trace has it), the collector got none.
        ensure!(
            printed.iter().any(|e| matches!(
                &e.body,
                orrery_crds::events::EventBody::NodeExit {
                    answer: Some(_),
                    ..
                }
            )),
            "the run captured content"
        );
        let content = [
            "orrery.run.input",
            "orrery.run.output",
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "orrery.approval.text",
            "orrery.approval.comment",
        ];
        for span in &spans {
            for key in content {
                ensure!(!span.attributes.contains_key(key), "{key} on {}", span.name);
            }
            ensure!(span.resource.get("service.name") == Some(&json!("orrery")));
            ensure!(
                span.authorization == "Bearer collector-key",
                "the collector's header"
            );
        }
        // The collector's two refusals were retried, and every span counted once.
        let otel = &sidecar.sidecar.metrics.otel;
        for _ in 0..50 {
            // The collector prints a batch before it answers; the count follows its answer.
            if otel.exported_total() >= spans.len() as u64 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        ensure!(
            otel.exported_total() == spans.len() as u64,
            "exported {} of {} spans",
            otel.exported_total(),
            spans.len()
        );
        // Both senders share the collector: its two 503s were two failed attempts in all.
        let failed = otel.failures_total() + operator.otel.failures_total();
        ensure!(failed == 2, "{failed} failed attempts counted, want 2");
        Ok(())
    }
    .await;
    traces_stop.cancel();
    let stopped = f.shutdown().await;
    sidecar.stop().await?;
    result.and(stopped)
}
