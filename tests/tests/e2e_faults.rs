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
                   "polish": [{"reply": "polished: {{input}}"}],
                   "publish": [{"reply": "published: {{input}}"}]}),
        ),
        scripted_model(
            "steady",
            json!({"draft": [{"delayMs": 40000, "reply": "after a while"}]}),
        ),
        scripted_model(
            "brief",
            json!({"draft": [{"delayMs": 4000, "reply": "after a moment"}]}),
        ),
    ])
}

/// A studio whose in-process operator talks to the API server through a fresh fault proxy.
async fn studio_behind(prefix: &str) -> Result<(Studio, FaultProxy)> {
    studio_configured(prefix, &|_| {}).await
}

/// [`studio_behind`], its operator's config changed by `configure` too.
async fn studio_configured(
    prefix: &str,
    configure: &dyn Fn(&mut orrery_operator::Config),
) -> Result<(Studio, FaultProxy)> {
    let mut studio = Studio::start(StudioOptions {
        prefix,
        sidecar_url: &sidecar_fixture::shared()?.url,
        manifests: &models(),
        users: &[orrery_tests::testenv::ALICE],
        policies: false,
        configure: &|config| {
            // Ten runs of one owner at once (the example config allows three).
            config.run_limits.max_concurrent_runs_per_owner = None;
            configure(config);
        },
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

/// Waits until every RegistryEntry of the namespace (the models) is `Ready`: a run applied
/// before then first waits for them (`WaitingForEntries`), a status write of its own.
async fn entries_ready(f: &Studio) -> Result<()> {
    let entries: kube::Api<orrery_crds::RegistryEntry> = f.ns.api(&f.admin);
    orrery_tests::harness::eventually(Duration::from_secs(60), || async {
        let list = entries.list(&Default::default()).await?.items;
        let waiting: Vec<String> = list
            .iter()
            .filter(|e| {
                !e.status.as_ref().is_some_and(|s| {
                    s.conditions.iter().any(|c| {
                        c.r#type == "Ready"
                            && c.status == orrery_crds::common::ConditionStatus::True
                    })
                })
            })
            .filter_map(|e| e.metadata.name.clone())
            .collect();
        ensure!(
            !list.is_empty() && waiting.is_empty(),
            "entries not ready yet: {waiting:?}"
        );
        Ok(())
    })
    .await
}

/// Waits until run `name` has ended, whichever way.
async fn wait_final(f: &Studio, name: &str) -> Result<orrery_crds::StudioRun> {
    f.wait_run(name, "a final phase", |r| {
        r.status
            .as_ref()
            .and_then(|s| s.phase)
            .is_some_and(RunPhase::is_terminal)
    })
    .await
}

/// The phase and the reason of the `Succeeded` condition of `run`.
fn outcome(run: &orrery_crds::StudioRun) -> (Option<RunPhase>, Option<String>) {
    let status = run.status.as_ref();
    (
        status.and_then(|s| s.phase),
        status
            .and_then(|s| s.conditions.iter().find(|c| c.r#type == "Succeeded"))
            .map(|c| c.reason.clone()),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_status_write_never_lands_on_a_run_created_again_under_the_same_name_fault_7()
-> Result<()> {
    let (studio, proxy) = studio_behind("fault-reborn").await?;
    Studio::test(studio, async |f| {
        // The first run's status write, the one that records its pod, is held in flight.
        entries_ready(f).await?;
        proxy.set(
            Fault::Hold,
            Matcher::of(Method::PATCH, "/studioruns/reborn/status"),
        );
        f.apply(&run_of("reborn", "scripted")).await?;
        let first = f.runs().get("reborn").await?;
        let first_uid = first.metadata.uid.clone().context("uid")?;
        orrery_tests::harness::eventually(Duration::from_secs(60), || async {
            ensure!(proxy.held() >= 1, "no status write held yet");
            ensure!(
                f.runner_pods(&first).await?.len() == 1,
                "the first run's pod is not there yet"
            );
            Ok(())
        })
        .await?;
        // Deleted, its pod collected, and created again under the same name, all while that
        // write waits.
        f.runs()
            .delete("reborn", &kube::api::DeleteParams::default())
            .await?;
        orrery_tests::harness::eventually(Duration::from_secs(60), || async {
            ensure!(
                f.runs().get_opt("reborn").await?.is_none(),
                "the first run is still there"
            );
            ensure!(
                f.runner_pods(&first).await?.is_empty(),
                "the first run's pod is not collected yet"
            );
            Ok(())
        })
        .await?;
        f.apply(&run_of("reborn", "scripted")).await?;
        let second_uid = f.runs().get("reborn").await?.metadata.uid.context("uid")?;
        ensure!(second_uid != first_uid, "the run was created again");
        ensure!(proxy.held() >= 1, "the first run's write is still held");
        // The old write goes on now: the API server refuses it (it names the first run's
        // version), and the new run is not told it has a pod it never made.
        proxy.release();
        let done = wait_final(f, "reborn").await?;
        ensure!(
            done.metadata.uid.as_deref() == Some(second_uid.as_str()),
            "the run that ended is the second"
        );
        ensure!(
            outcome(&done).0 == Some(RunPhase::Succeeded),
            "the second run ended {:?}",
            outcome(&done)
        );
        let pods = f.runner_pods(&done).await?;
        ensure!(
            pods.len() == 1,
            "{} runner pods for the second run",
            pods.len()
        );
        let refused = proxy.answered(0, &Method::PATCH, "/studioruns/reborn/status", 409);
        ensure!(refused >= 1, "the held write was refused 409");
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_write_that_fails_is_tried_again_with_backoff_and_then_written_fault_5()
-> Result<()> {
    let (studio, proxy) = studio_behind("fault-status").await?;
    Studio::test(studio, async |f| {
        // Every status write of the run is dropped unanswered for 8 s from before it starts (a
        // 503 or a 429 would be tried again by the client itself; a dropped connection reaches
        // the controller), while its runner goes on.
        entries_ready(f).await?;
        proxy.set(
            Fault::Reset,
            Matcher::of(Method::PATCH, "/studioruns/refused/status"),
        );
        let refusing = Instant::now();
        f.apply(&run_of("refused", "brief")).await?;
        tokio::time::sleep(Duration::from_secs(8)).await;
        proxy.clear();
        let done = wait_final(f, "refused").await?;
        ensure!(
            outcome(&done).0 == Some(RunPhase::Succeeded),
            "the run ended {:?}",
            outcome(&done)
        );
        // The proxy notes a write once its answer is back, which may be after the test saw
        // the run end (the API server tells its watchers and answers the writer at once).
        let writes = orrery_tests::harness::eventually(Duration::from_secs(10), || async {
            let writes: Vec<_> = proxy
                .seen()
                .into_iter()
                .filter(|s| {
                    s.method == Method::PATCH
                        && s.path.contains("/studioruns/refused/status")
                        && s.at >= refusing
                })
                .collect();
            ensure!(
                writes
                    .iter()
                    .any(|s| !s.faulted && matches!(s.status, 200 | 201)),
                "the status was written after: {writes:?}"
            );
            Ok(writes)
        })
        .await?;
        let refused = writes.iter().filter(|s| s.faulted).count();
        ensure!(
            refused >= 2,
            "the run's status was tried again while writes failed: {writes:?}"
        );
        // Backoff (1, 2, 4 s, and a try for each event about the run or its pod), not a loop.
        ensure!(refused <= 10, "{refused} failed writes in 8 s: {writes:?}");
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_events_lost_on_the_way_are_made_up_by_the_periodic_resync_fault_12() -> Result<()> {
    let (studio, proxy) = studio_configured("fault-desync", &|config| {
        config.resync_seconds = 5;
    })
    .await?;
    Studio::test(studio, async |f| {
        f.apply(&run_of("unseen", "brief")).await?;
        f.wait_phase("unseen", RunPhase::Running).await?;
        // From here the operator's watches stay open and say nothing: the pod's end, and the
        // sidecar's writes to the run, never reach it as events.
        proxy.set(Fault::DropEvents, Matcher::all());
        let done = wait_final(f, "unseen").await?;
        let dropped = proxy.dropped();
        proxy.clear();
        ensure!(
            outcome(&done).0 == Some(RunPhase::Succeeded),
            "the run ended {:?}",
            outcome(&done)
        );
        ensure!(
            dropped > 0,
            "no watch event was dropped: the test saw nothing"
        );
        let pods = f.runner_pods(&done).await?;
        ensure!(pods.len() == 1, "{} runner pods", pods.len());
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_run_seen_through_a_stale_copy_is_neither_started_again_nor_failed_fault_6()
-> Result<()> {
    let (studio, proxy) = studio_behind("fault-stale").await?;
    Studio::test(studio, async |f| {
        f.apply(&run_of("stale", "brief")).await?;
        f.wait_phase("stale", RunPhase::Running).await?;
        // From here the operator hears nothing more of its runs (their watch stays open and
        // says nothing) while it still hears of their pods: its copy of the run stays
        // `Running` after the run succeeded.
        proxy.set(Fault::DropEvents, Matcher::of(Method::GET, "/studioruns"));
        let done = wait_final(f, "stale").await?;
        ensure!(
            outcome(&done).0 == Some(RunPhase::Succeeded),
            "the run ended {:?}",
            outcome(&done)
        );
        let pods = f.runner_pods(&done).await?;
        ensure!(pods.len() == 1, "{} runner pods", pods.len());
        let pod = pods[0].metadata.name.clone().context("pod name")?;
        let pod_uid = pods[0].metadata.uid.clone().context("pod uid")?;
        // The completed run's pod goes (a person deletes it). To the stale copy that is a
        // running run whose pod vanished: a run to fail, or to start again.
        let before = proxy.seen().len();
        f.pods()
            .delete(&pod, &kube::api::DeleteParams::default())
            .await?;
        orrery_tests::harness::eventually(Duration::from_secs(60), || async {
            let refused = proxy.answered(before, &Method::PATCH, "/studioruns/stale/status", 409);
            ensure!(
                refused >= 1,
                "the operator has not yet tried a status computed from its stale copy"
            );
            Ok(())
        })
        .await?;
        // It was refused (it names the version the copy holds), the run read again is final,
        // and nothing is written or started for it: it stays `Succeeded` with no pod.
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = f.runs().get("stale").await?;
            ensure!(
                outcome(&now) == outcome(&done),
                "the completed run changed to {:?}",
                outcome(&now)
            );
            let others: Vec<String> = f
                .runner_pods(&now)
                .await?
                .into_iter()
                .filter_map(|p| p.metadata.uid)
                .filter(|uid| *uid != pod_uid)
                .collect();
            ensure!(others.is_empty(), "a second runner pod: {others:?}");
        }
        ensure!(
            proxy.dropped() > 0,
            "no watch event was dropped: the operator's copy was never stale"
        );
        proxy.clear();
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_decision_survives_the_operators_status_write_computed_before_it_fault_4()
-> Result<()> {
    let (studio, proxy) = studio_behind("fault-decision").await?;
    Studio::test(studio, async |f| {
        let run = json!({
            "apiVersion": "studio.orrery.dev/v1alpha1",
            "kind": "StudioRun",
            "metadata": {"name": "decided"},
            "spec": {
                "composition": orrery_tests::manifests::draft_review_publish(),
                "input": "the notes",
                "owner": orrery_tests::testenv::ALICE
            }
        });
        // The operator's status writes for the run wait in flight, computed from what it read
        // before anybody decided.
        entries_ready(f).await?;
        proxy.set(
            Fault::Hold,
            Matcher::of(Method::PATCH, "/studioruns/decided/status"),
        );
        f.apply(&run.to_string()).await?;
        let waiting = f.wait_pending_approval("decided").await?;
        ensure!(proxy.held() >= 1, "an operator's status write is held");
        let pending = &waiting.status.as_ref().context("status")?.pending_approvals[0];
        // The owner decides through the sidecar's API, which appends the decision with her own
        // token, straight to the API server (no admission policy is bound here, so a decision
        // written by hand would not count: attack 46).
        let alice = orrery_tests::studio::token(f.env, orrery_tests::testenv::ALICE)?;
        let url = format!(
            "{}/api/v1/runs/{}/decided/approvals/{}",
            sidecar_fixture::shared()?.url,
            f.ns.name,
            pending.id
        );
        let (code, reply) = orrery_tests::studio::api_call(
            reqwest::Method::POST,
            url,
            &alice,
            Some(json!({"decision": "Approve", "digest": pending.digest})),
        )
        .await?;
        ensure!(code.is_success(), "the decision: {code} {reply}");
        // The operator's forced apply, computed without the decision, goes on now.
        proxy.release();
        let done = wait_final(f, "decided").await?;
        ensure!(
            outcome(&done).0 == Some(RunPhase::Succeeded),
            "the run ended {:?}",
            outcome(&done)
        );
        let status = done.status.as_ref().context("status")?;
        ensure!(
            status.decisions.len() == 1
                && status.decisions[0].approval_id == pending.id
                && status.decisions[0].decided_by.as_deref() == Some(orrery_tests::testenv::ALICE),
            "the person's decision, once: {:?}",
            status.decisions
        );
        // The operator never takes `decisions` over: no field set of its own names them.
        let operators: Vec<String> = done
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter(|m| m.manager.as_deref() == Some(orrery_operator::FIELD_MANAGER))
            .map(|m| {
                m.fields_v1
                    .as_ref()
                    .map(|f| f.0.to_string())
                    .unwrap_or_default()
            })
            .collect();
        ensure!(!operators.is_empty(), "the operator wrote the run's status");
        ensure!(
            operators
                .iter()
                .all(|fields| !fields.contains("f:decisions")),
            "the operator owns decisions: {operators:?}"
        );
        let refused = proxy.answered(0, &Method::PATCH, "/studioruns/decided/status", 409);
        ensure!(
            refused >= 1,
            "the held write, computed before the decision, was refused and read again"
        );
        Ok(())
    })
    .await
}

/// The children of the run whose UID is `uid` still in the namespace, as `kind/name`.
async fn children_of(f: &Studio, uid: &str) -> Result<Vec<String>> {
    Ok(f.run_children(Some(uid))
        .await?
        .into_iter()
        .map(|(what, _)| what)
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_deleted_while_the_operator_is_down_leaves_nothing_and_the_next_operator_starts_nothing_for_it_fault_11()
-> Result<()> {
    let (studio, proxy) = studio_behind("fault-absent").await?;
    Studio::test(studio, async |f| {
        f.apply(&run_of("absent", "steady")).await?;
        let running = f.wait_phase("absent", RunPhase::Running).await?;
        let uid = running.metadata.uid.clone().context("uid")?;
        f.wait_run_started("absent").await?;
        ensure!(
            children_of(f, &uid).await?.len() >= 2,
            "the run has its pod, plan and policy: {:?}",
            children_of(f, &uid).await?
        );
        f.kill_operator().await?;
        f.runs()
            .delete("absent", &kube::api::DeleteParams::default())
            .await?;
        // With no operator, the garbage collector takes every child (owner references).
        orrery_tests::harness::eventually(Duration::from_secs(90), || async {
            let left = children_of(f, &uid).await?;
            ensure!(left.is_empty(), "still there: {left:?}");
            Ok(())
        })
        .await?;
        let restarted = Instant::now();
        f.start_operator_through(&proxy).await?;
        // The next operator has nothing to do for it, and does the next run as ever.
        f.apply(&run_of("after", "scripted")).await?;
        let after = wait_final(f, "after").await?;
        ensure!(
            outcome(&after).0 == Some(RunPhase::Succeeded),
            "the next run ended {:?}",
            outcome(&after)
        );
        let left = children_of(f, &uid).await?;
        ensure!(left.is_empty(), "recreated for the deleted run: {left:?}");
        ensure!(
            f.runs().get_opt("absent").await?.is_none(),
            "the deleted run came back"
        );
        let touched = proxy
            .seen()
            .into_iter()
            .filter(|s| {
                s.at >= restarted
                    && s.method != Method::GET
                    && s.path.contains("/studioruns/absent")
            })
            .map(|s| format!("{} {}", s.method, s.path))
            .collect::<Vec<_>>();
        ensure!(
            touched.is_empty(),
            "the new operator wrote for the deleted run: {touched:?}"
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_pod_evicted_fails_its_run_with_the_reason_and_is_never_started_again_fault_18()
-> Result<()> {
    let (studio, _proxy) = studio_behind("fault-evict").await?;
    Studio::test(studio, async |f| {
        f.apply(&run_of("evicted", "steady")).await?;
        let running = f.wait_phase("evicted", RunPhase::Running).await?;
        f.wait_run_started("evicted").await?;
        // A drain evicts through the Eviction API (which honours PodDisruptionBudgets).
        f.pods()
            .evict("evicted-runner", &kube::api::EvictParams::default())
            .await?;
        let done = wait_final(f, "evicted").await?;
        let (phase, reason) = outcome(&done);
        let message = done
            .status
            .as_ref()
            .and_then(|s| s.error.as_ref())
            .map(|e| e.message.clone())
            .unwrap_or_default();
        eprintln!("evicted: {phase:?} {reason:?} {message}");
        ensure!(
            phase == Some(RunPhase::Failed),
            "an evicted run fails: {phase:?} {reason:?} {message}"
        );
        ensure!(
            reason.as_deref() == Some("Evicted"),
            "the reason says it was evicted: {reason:?} {message}"
        );
        ensure!(message.contains("evict"), "the message says so: {message}");
        // Never replayed: no second pod, now or a little later.
        tokio::time::sleep(Duration::from_secs(3)).await;
        ensure!(
            f.runner_pods(&running).await?.is_empty(),
            "a runner pod was started again"
        );
        Ok(())
    })
    .await
}

/// Whether the operator's ServiceAccount may create Secrets in `namespace` (asked as admin).
async fn operator_may_create_secrets(f: &Studio) -> Result<bool> {
    use k8s_openapi::api::authorization::v1::SubjectAccessReview;
    let reviews: kube::Api<SubjectAccessReview> = kube::Api::all(f.admin.clone());
    let review: SubjectAccessReview = serde_json::from_value(json!({
        "spec": {
            "user": orrery_tests::operator_identity::OPERATOR_USER,
            "groups": ["system:serviceaccounts", "system:serviceaccounts:orrery-system", "system:authenticated"],
            "resourceAttributes": {"namespace": f.ns.name, "verb": "create", "resource": "secrets"}
        }
    }))?;
    let answer = reviews
        .create(&kube::api::PostParams::default(), &review)
        .await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_its_rbac_revoked_the_operator_says_what_is_missing_on_the_run_and_recovers_when_restored_fault_16()
-> Result<()> {
    let (studio, proxy) = studio_behind("fault-rbac").await?;
    Studio::test(studio, async |f| {
        // The chart's RoleBinding that makes the namespace a tenant one goes away.
        let tenant: serde_json::Value = serde_json::from_str(
            &orrery_tests::operator_identity::tenant_manifest(&f.ns.name)?,
        )?;
        let binding = tenant["metadata"]["name"]
            .as_str()
            .context("the tenant RoleBinding's name")?;
        let bindings: kube::Api<k8s_openapi::api::rbac::v1::RoleBinding> = f.ns.api(&f.admin);
        bindings
            .delete(binding, &kube::api::DeleteParams::default())
            .await?;
        orrery_tests::harness::eventually(Duration::from_secs(30), || async {
            ensure!(!operator_may_create_secrets(f).await?, "still allowed");
            Ok(())
        })
        .await?;
        f.apply(&run_of("unbound", "scripted")).await?;
        let waiting = f.wait_reason("unbound", "CreateRefused").await?;
        let condition = waiting
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.r#type == "Succeeded"))
            .context("the Succeeded condition")?;
        ensure!(
            outcome(&waiting).0 == Some(RunPhase::Pending)
                && condition.message.contains("forbidden")
                && condition.message.contains("secrets")
                && condition.message.contains("tenantNamespaces"),
            "the condition names what is missing and the fix: {condition:?}"
        );
        // No crash loop: it tries again every few seconds, not continuously.
        let since = Instant::now();
        tokio::time::sleep(Duration::from_secs(20)).await;
        let tries = proxy
            .seen()
            .into_iter()
            .filter(|s| s.at >= since && s.status == 403)
            .count();
        ensure!(tries <= 10, "{tries} refused requests in 20 s");
        // Restored: the run starts on its own and succeeds.
        orrery_tests::operator_identity::install_operator_rbac(f.env, &f.ns.name).await?;
        let done = wait_final(f, "unbound").await?;
        ensure!(
            outcome(&done).0 == Some(RunPhase::Succeeded),
            "after the RBAC came back the run ended {:?}",
            outcome(&done)
        );
        Ok(())
    })
    .await
}

/// `run`'s `Succeeded` condition's message.
fn condition_message(run: &orrery_crds::StudioRun) -> String {
    run.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.r#type == "Succeeded"))
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_an_admission_policy_binding_gone_a_run_that_asks_a_person_waits_naming_it_and_starts_once_it_is_back_fault_16()
-> Result<()> {
    use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
    use orrery_tests::testenv::ALICE;
    let studio = Studio::start(StudioOptions {
        prefix: "fault-policy",
        sidecar_url: &sidecar_fixture::shared()?.url,
        manifests: &models(),
        users: &[ALICE],
        policies: true,
        configure: &|_| {},
    })
    .await?;
    Studio::test(studio, async |f| {
        let alice = f.env.client(ALICE).await?;
        let ns = f.ns.name.clone();
        let binding = orrery_tests::admission::binding_name(
            "studioruns-decisions.studio.orrery.dev",
            &ns,
        );
        let bindings: kube::Api<ValidatingAdmissionPolicyBinding> = kube::Api::all(f.admin.clone());
        ensure!(
            bindings.get_opt(&binding).await?.is_some(),
            "the test's binding {binding} is there to delete"
        );
        // The binding that checks decisions written to status.decisions is deleted: a
        // `kubectl patch` decision would now go unchecked.
        bindings
            .delete(&binding, &kube::api::DeleteParams::default())
            .await?;
        let run = |name: &str, composition: serde_json::Value| {
            json!({
                "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "StudioRun",
                "metadata": {"name": name},
                "spec": {"composition": composition, "input": "the notes", "owner": ALICE}
            })
            .to_string()
        };
        orrery_tests::harness::apply_yaml(
            &alice,
            Some(&ns),
            &run("asks", orrery_tests::manifests::draft_review_publish()),
        )
        .await?;
        let plain: serde_json::Value = serde_json::from_str(&run_of("plain", "scripted"))?;
        orrery_tests::harness::apply_yaml(
            &alice,
            Some(&ns),
            &run("plain", plain["spec"]["composition"].clone()),
        )
        .await?;
        // The run that can ask a person waits, saying which binding is missing and what to
        // do; the one that cannot runs.
        let waiting = f
            .wait_run("asks", "waiting for the admission policies", |r| {
                outcome(r).1.as_deref() == Some("AdmissionPolicyMissing")
            })
            .await?;
        ensure!(
            outcome(&waiting).0 == Some(RunPhase::Pending),
            "{:?}",
            outcome(&waiting)
        );
        let message = condition_message(&waiting);
        ensure!(
            message.contains(&format!("ValidatingAdmissionPolicyBinding {binding} is missing"))
                && message.contains("review")
                && message.contains("helm upgrade"),
            "{message}"
        );
        ensure!(
            f.runner_pods(&waiting).await?.is_empty(),
            "the waiting run has no pod"
        );
        let done = wait_final(f, "plain").await?;
        ensure!(
            outcome(&done).0 == Some(RunPhase::Succeeded),
            "the run that asks nobody ended {:?}",
            outcome(&done)
        );
        let events = f.events_of("asks").await?;
        ensure!(
            events
                .iter()
                .any(|(reason, note)| reason == "AdmissionPolicyMissing" && note.contains(&binding)),
            "an Event names the missing binding: {events:?}"
        );
        // Still waiting a while later: looked at again, not started.
        tokio::time::sleep(Duration::from_secs(6)).await;
        let later = f.runs().get("asks").await?;
        ensure!(
            outcome(&later).1.as_deref() == Some("AdmissionPolicyMissing"),
            "{:?}",
            outcome(&later)
        );
        // Back: the run starts on its own and asks its person.
        let (_, docs) = orrery_tests::admission::policies_for(&ns)?;
        let doc = docs
            .iter()
            .find(|d| d["metadata"]["name"] == json!(binding))
            .context("the binding's document")?;
        orrery_tests::harness::apply_yaml(&f.admin, None, &doc.to_string()).await?;
        let asking = f.wait_pending_approval("asks").await?;
        ensure!(
            f.runner_pods(&asking).await?.len() == 1,
            "the run started once"
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_written_by_hand_counts_while_the_policies_check_it_and_not_once_one_is_gone_while_the_api_still_decides_attack_46()
-> Result<()> {
    use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
    use orrery_operator::sidecar::SidecarSettings;
    use orrery_tests::sidecar_fixture::{TestSidecar, temp_dir};
    use orrery_tests::testenv::ALICE;
    // A sidecar of this test's own, told of the policies the studio binds (as the chart's is).
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], orrery_tests::harness::free_port()?));
    let url = format!("http://{address}");
    let studio = Studio::start(StudioOptions {
        prefix: "hand-decision",
        sidecar_url: &url,
        manifests: &models(),
        users: &[ALICE],
        policies: true,
        configure: &|_| {},
    })
    .await?;
    let refs = studio.admission_policy_refs();
    let store = format!(
        "sqlite:{}",
        temp_dir("hand-decision")?.join("events.db").display()
    );
    let mut sidecar =
        match TestSidecar::start_on_with(address, &store, SidecarSettings::default(), &|c| {
            c.admission_policies = refs.clone()
        })
        .await
        {
            Ok(sidecar) => sidecar,
            Err(e) => {
                let _ = studio.shutdown().await;
                return Err(e);
            }
        };
    let state = sidecar.sidecar.clone();
    let result = Studio::test(studio, async |f| {
        let alice = f.env.client(ALICE).await?;
        let ns = f.ns.name.clone();
        let alices_runs: kube::Api<orrery_crds::StudioRun> = f.ns.api(&alice);
        for name in ["first", "second"] {
            let run = json!({
                "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "StudioRun",
                "metadata": {"name": name},
                "spec": {
                    "composition": orrery_tests::manifests::draft_review_publish(),
                    "input": "the notes", "owner": ALICE
                }
            });
            orrery_tests::harness::apply_yaml(&alice, Some(&ns), &run.to_string()).await?;
        }
        let by_hand = |id: &str, digest: &str| {
            json!([{"op": "add", "path": "/status/decisions/-", "value": {
                "approvalId": id, "decision": "Approve", "digest": digest, "decidedBy": ALICE
            }}])
        };
        let first = f.wait_pending_approval("first").await?;
        let first = first.status.as_ref().context("status")?.pending_approvals[0].clone();
        let second = f.wait_pending_approval("second").await?;
        let second = second.status.as_ref().context("status")?.pending_approvals[0].clone();

        // 1. With every policy in place, alice's decision written by hand is checked by the API
        //    server, so the run takes it.
        alices_runs
            .patch_status(
                "first",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Json::<()>(serde_json::from_value(by_hand(
                    &first.id,
                    &first.digest,
                ))?),
            )
            .await?;
        let done = wait_final(f, "first").await?;
        ensure!(
            outcome(&done).0 == Some(RunPhase::Succeeded),
            "the run decided by hand under the policies ended {:?}",
            outcome(&done)
        );

        // 2. The binding that checks decisions is deleted: a decision written by hand now goes
        //    unchecked, and the sidecar does not relay it.
        let binding =
            orrery_tests::admission::binding_name("studioruns-decisions.studio.orrery.dev", &ns);
        let bindings: kube::Api<ValidatingAdmissionPolicyBinding> = kube::Api::all(f.admin.clone());
        bindings
            .delete(&binding, &kube::api::DeleteParams::default())
            .await?;
        alices_runs
            .patch_status(
                "second",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Json::<()>(serde_json::from_value(by_hand(
                    &second.id,
                    &second.digest,
                ))?),
            )
            .await?;
        let uid = f.runs().get("second").await?.metadata.uid.context("uid")?;
        let reason = orrery_tests::harness::eventually(Duration::from_secs(30), || {
            let (state, uid, id) = (state.clone(), uid.clone(), second.id.clone());
            async move {
                state
                    .store
                    .refusal(&uid, &id, 0)
                    .await?
                    .context("no refusal recorded yet")
            }
        })
        .await?;
        ensure!(
            reason.contains(&format!(
                "ValidatingAdmissionPolicyBinding {binding} is missing"
            )) && reason.contains("not honoured")
                && reason.contains(&format!("/approvals/{}", second.id)),
            "{reason}"
        );
        ensure!(
            state
                .metrics
                .encode()
                .lines()
                .any(|l| l == "orrery_sidecar_decisions_not_honoured_total 1"),
            "the refusal is counted"
        );
        // The run still waits for a person: the decision was never relayed.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let waiting = f.runs().get("second").await?;
        let status = waiting.status.as_ref().context("status")?;
        ensure!(
            status.pending_approvals.iter().any(|p| p.id == second.id)
                && outcome(&waiting).0 != Some(RunPhase::Succeeded),
            "still waiting: {:?} {:?}",
            status.pending_approvals,
            outcome(&waiting)
        );

        // The person sees why in the run's approvals (the console and `kubectl orrery
        // approvals` show it).
        let token = orrery_tests::studio::token(f.env, ALICE)?;
        let (code, list) = orrery_tests::studio::api_call(
            reqwest::Method::GET,
            format!("{url}/api/v1/runs/{ns}/second/approvals"),
            &token,
            None,
        )
        .await?;
        ensure!(
            code.as_u16() == 200
                && list["items"][0]["refused"][0]["index"] == json!(0)
                && list["items"][0]["refused"][0]["reason"] == json!(reason),
            "the approvals show the refusal: {code} {list}"
        );

        // 3. The same person decides through the sidecar's API: that decision counts.
        let (code, reply) = orrery_tests::studio::api_call(
            reqwest::Method::POST,
            format!("{url}/api/v1/runs/{ns}/second/approvals/{}", second.id),
            &token,
            Some(json!({"decision": "Approve", "digest": second.digest})),
        )
        .await?;
        ensure!(
            code.as_u16() == 200
                && reply["index"] == json!(1)
                && reply["outcome"] == json!("approved"),
            "the API's decision: {code} {reply}"
        );
        let done = wait_final(f, "second").await?;
        ensure!(
            outcome(&done).0 == Some(RunPhase::Succeeded),
            "the run decided through the API ended {:?}",
            outcome(&done)
        );
        Ok(())
    })
    .await;
    let stopped = sidecar.stop().await;
    result.and(stopped)
}
