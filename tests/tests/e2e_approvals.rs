//! Approvals end to end on the real control plane, against the operator the Helm chart installs
//! (`Studio::install`: the chart's operator pod, controller and sidecar, from its image on the
//! dev node, with the chart's RBAC and its admission policies: pending approvals bound to the
//! test's namespace, the create and decisions rules cluster-wide as in any cluster). A
//! run in its pod asks a person through the sidecar; the text is served to its owner and
//! approvers only; the owner decides through the sidecar's API (which appends the decision with
//! the owner's own token) or with `kubectl patch --subresource=status`; a service account's run
//! is decided by its named approver; a decision that comes after the approval expired is
//! answered 409.
//!
//! Two replicas of the chart's operator on one PostgreSQL database (`Studio::install_replicated`)
//! run with isolated pod networking, each pod with its own address, the NetworkPolicies
//! enforced (the chart's for the operator's pods, the operator's for runners) and the API
//! server reached through the `kubernetes` Service: a run's runner reaches one replica, its
//! owner the other.
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary. Needs root, buildah and runc (the images), and the `orrery` binary.

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use orrery_crds::run::RunPhase;
use orrery_tests::harness::{kubectl_fails, kubectl_ok};
use orrery_tests::manifests::{
    Subject, demo_writer_entry, documents, draft_review_publish, scripted_model,
    writer_asks_which_version,
};
use orrery_tests::studio::{
    ChartStudioOptions, ReplicatedOptions, Studio, api_call, grant_studio_role, http_client,
    start_via_api, token,
};
use orrery_tests::testenv::{ALICE, BOB};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The model: a draft, then (after the person) a published version.
fn models() -> String {
    scripted_model(
        "scripted",
        json!({"draft": [{"reply": "Release notes for: {{input}}"}],
               "publish": [{"reply": "Changelog: {{input}}"}]}),
    )
}

/// `kubectl` arguments that apply the JSON patch `patch` to run `name`'s status in `ns`.
fn status_patch<'a>(name: &'a str, ns: &'a str, patch: &'a str) -> [&'a str; 9] {
    [
        "patch",
        "studiorun",
        name,
        "-n",
        ns,
        "--subresource=status",
        "--type=json",
        "-p",
        patch,
    ]
}

/// Starts the draft → review → publish run through the sidecar at `sidecar` as the holder of
/// `token`, with `extra` fields on top of the body; returns its name.
async fn start(sidecar: &str, ns: &str, token: &str, extra: Value) -> Result<String> {
    let mut body = json!({"composition": draft_review_publish(), "input": "version 2.4"});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    start_via_api(sidecar, ns, token, body).await
}

/// Waits until the run waits for a person; returns the pending approval's id and digest.
async fn awaiting(studio: &Studio, name: &str) -> Result<(String, String)> {
    let run = studio.wait_pending_approval(name).await?;
    let pending = &run.status.as_ref().context("status")?.pending_approvals[0];
    Ok((pending.id.clone(), pending.digest.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_approves_one_run_through_the_api_and_another_by_kubectl_patch_and_nobody_else_can()
-> Result<()> {
    let studio = Studio::install(ChartStudioOptions {
        prefix: "ap-owner",
        prelude: "",
        manifests: &models(),
        users: &[ALICE, BOB],
        policies: true,
        values: &[],
    })
    .await?;
    let result = async {
        let ns = studio.ns.name.clone();
        let alice = token(studio.env, ALICE)?;
        let bob = token(studio.env, BOB)?;
        let api = |path: &str| format!("{}/api/v1/runs/{ns}/{path}", studio.sidecar_url);

        // 1. Alice starts a run through the API; it waits for her at `review`.
        let name = start(&studio.sidecar_url, &ns, &alice, json!({})).await?;
        let (id, digest) = awaiting(&studio, &name).await?;
        let (status, approvals) = api_call(
            reqwest::Method::GET,
            api(&format!("{name}/approvals")),
            &alice,
            None,
        )
        .await?;
        ensure!(status == StatusCode::OK, "approvals: {status} {approvals}");
        let item = &approvals["items"][0];
        ensure!(
            item["id"] == json!(id)
                && item["digest"] == json!(digest)
                && item["state"] == "pending"
                && item["text"] == "Release notes for: version 2.4",
            "the owner reads the exact text under review: {item}"
        );
        // Bob may read runs in the namespace, but this one is neither his nor his to approve.
        let (status, _) = api_call(
            reqwest::Method::GET,
            api(&format!("{name}/approvals")),
            &bob,
            None,
        )
        .await?;
        ensure!(status == StatusCode::NOT_FOUND, "bob reads: {status}");
        let (status, body) = api_call(
            reqwest::Method::POST,
            api(&format!("{name}/approvals/{id}")),
            &bob,
            Some(json!({"decision": "Approve", "digest": digest})),
        )
        .await?;
        ensure!(
            status == StatusCode::NOT_FOUND,
            "bob decides: {status} {body}"
        );
        // Bob tries to be Alice (attack 36). Through the sidecar, an `Impersonate-User` header
        // changes nothing: it acts with the caller's own token and passes no such header on.
        let response = http_client()?
            .post(api(&format!("{name}/approvals/{id}")))
            .bearer_auth(&bob)
            .header("Impersonate-User", ALICE)
            .json(&json!({"decision": "Approve", "digest": digest}))
            .send()
            .await?;
        ensure!(
            response.status() == StatusCode::NOT_FOUND,
            "bob decides as alice through the sidecar: {}",
            response.status()
        );
        // With kubectl `--as`: the API server refuses, Bob has no right to impersonate.
        let as_alice = json!([{"op": "add", "path": "/status/decisions/-", "value": {
            "approvalId": id, "decision": "Approve", "digest": digest, "decidedBy": ALICE
        }}])
        .to_string();
        let refused = kubectl_fails(
            studio.env,
            BOB,
            &[&["--as", ALICE][..], &status_patch(&name, &ns, &as_alice)].concat(),
        )
        .await?;
        ensure!(
            refused.contains("cannot impersonate"),
            "bob's kubectl --as alice: {refused}"
        );
        // Nor may he start a run as her.
        let manifest = std::env::temp_dir().join(format!("{ns}-as-alice.json"));
        std::fs::write(
            &manifest,
            json!({
                "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "StudioRun",
                "metadata": {"name": "as-alice", "namespace": ns},
                "spec": {"composition": draft_review_publish(), "input": "x", "owner": ALICE}
            })
            .to_string(),
        )?;
        let manifest_path = manifest.to_string_lossy().into_owned();
        let refused = kubectl_fails(
            studio.env,
            BOB,
            &[
                "--as",
                ALICE,
                "create",
                "--validate=false",
                "-f",
                &manifest_path,
            ],
        )
        .await;
        let _ = std::fs::remove_file(&manifest);
        let refused = refused?;
        ensure!(
            refused.contains("cannot impersonate"),
            "bob's kubectl --as alice create: {refused}"
        );
        ensure!(
            studio.runs().get_opt("as-alice").await?.is_none(),
            "no run was started as alice"
        );
        let still = studio.runs().get(&name).await?;
        ensure!(
            still
                .status
                .as_ref()
                .is_some_and(|s| s.decisions.is_empty()),
            "nothing was decided by bob"
        );
        // A digest that is not the text's: 409, nothing appended.
        let (status, body) = api_call(
            reqwest::Method::POST,
            api(&format!("{name}/approvals/{id}")),
            &alice,
            Some(json!({"decision": "Approve", "digest": "0".repeat(64)})),
        )
        .await?;
        ensure!(
            status == StatusCode::CONFLICT,
            "wrong digest: {status} {body}"
        );
        // The right digest: the run takes it up and says so.
        let (status, body) = api_call(
            reqwest::Method::POST,
            api(&format!("{name}/approvals/{id}")),
            &alice,
            Some(json!({"decision": "Approve", "digest": digest})),
        )
        .await?;
        ensure!(
            status == StatusCode::OK && body["outcome"] == "approved",
            "approve: {status} {body}"
        );
        let run = studio.wait_phase(&name, RunPhase::Succeeded).await?;
        let status = run.status.as_ref().context("status")?;
        ensure!(status.pending_approvals.is_empty(), "nothing left pending");
        ensure!(
            status.decisions.len() == 1 && status.decisions[0].decided_by.as_deref() == Some(ALICE),
            "{:?}",
            status.decisions
        );
        // A second decision on a settled approval: 409.
        let (status, _) = api_call(
            reqwest::Method::POST,
            api(&format!("{name}/approvals/{id}")),
            &alice,
            Some(json!({"decision": "Reject"})),
        )
        .await?;
        ensure!(status == StatusCode::CONFLICT, "second decision: {status}");

        // 2. A second run, approved by hand with kubectl as alice.
        let name = start(&studio.sidecar_url, &ns, &alice, json!({})).await?;
        let (id, digest) = awaiting(&studio, &name).await?;
        let decision = json!([{"op": "add", "path": "/status/decisions/-", "value": {
            "approvalId": id, "decision": "Approve", "digest": digest, "decidedBy": ALICE
        }}])
        .to_string();
        kubectl_ok(studio.env, ALICE, &status_patch(&name, &ns, &decision)).await?;
        studio.wait_phase(&name, RunPhase::Succeeded).await?;
        Ok(())
    }
    .await;
    let stopped = studio.shutdown().await;
    result.and(stopped)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_accounts_run_is_decided_by_its_named_approver_and_never_by_the_account()
-> Result<()> {
    let studio = Studio::install(ChartStudioOptions {
        prefix: "ap-sa",
        prelude: "",
        manifests: &models(),
        users: &[ALICE],
        policies: true,
        values: &[],
    })
    .await?;
    let result = async {
        let ns = studio.ns.name.clone();
        let env = studio.env;
        // A GitOps pipeline's account, allowed to use runs in the namespace.
        kubectl_ok(
            env,
            "admin",
            &["create", "serviceaccount", "pipeline", "-n", &ns],
        )
        .await?;
        grant_studio_role(
            env,
            &ns,
            "pipeline-studio-user",
            &[Subject::ServiceAccount {
                namespace: &ns,
                name: "pipeline",
            }],
        )
        .await?;
        let sa = kubectl_ok(env, "admin", &["create", "token", "pipeline", "-n", &ns]).await?;
        let sa = sa.trim().to_owned();
        // Without approvers the admission policy refuses the run (it can ask a person).
        let (status, body) = api_call(
            reqwest::Method::POST,
            format!("{}/api/v1/runs/{ns}", studio.sidecar_url),
            &sa,
            Some(json!({"composition": draft_review_publish(), "input": "version 2.4"})),
        )
        .await?;
        ensure!(
            status == StatusCode::FORBIDDEN,
            "no approvers: {status} {body}"
        );
        let name = start(
            &studio.sidecar_url,
            &ns,
            &sa,
            json!({"approvers": {"users": [ALICE]}}),
        )
        .await?;
        let (id, digest) = awaiting(&studio, &name).await?;
        let decide = format!(
            "{}/api/v1/runs/{ns}/{name}/approvals/{id}",
            studio.sidecar_url
        );
        let (status, body) = api_call(
            reqwest::Method::POST,
            decide.clone(),
            &sa,
            Some(json!({"decision": "Approve", "digest": digest})),
        )
        .await?;
        ensure!(
            status == StatusCode::FORBIDDEN,
            "the account decides: {status} {body}"
        );
        let alice = token(env, ALICE)?;
        let (status, body) = api_call(
            reqwest::Method::POST,
            decide,
            &alice,
            Some(json!({"decision": "Approve", "digest": digest})),
        )
        .await?;
        ensure!(
            status == StatusCode::OK,
            "the approver decides: {status} {body}"
        );
        studio.wait_phase(&name, RunPhase::Succeeded).await?;
        Ok(())
    }
    .await;
    let stopped = studio.shutdown().await;
    result.and(stopped)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_after_the_approval_expired_is_refused_409_and_the_run_ends_rejected()
-> Result<()> {
    let studio = Studio::install(ChartStudioOptions {
        prefix: "ap-late",
        prelude: "",
        manifests: &models(),
        users: &[ALICE],
        policies: true,
        values: &["config.approvalTimeoutSeconds=4"],
    })
    .await?;
    let result = async {
        let ns = studio.ns.name.clone();
        let alice = token(studio.env, ALICE)?;
        let name = start(&studio.sidecar_url, &ns, &alice, json!({})).await?;
        let (id, digest) = awaiting(&studio, &name).await?;
        studio.wait_phase(&name, RunPhase::Rejected).await?;
        let (status, body) = api_call(
            reqwest::Method::POST,
            format!(
                "{}/api/v1/runs/{ns}/{name}/approvals/{id}",
                studio.sidecar_url
            ),
            &alice,
            Some(json!({"decision": "Approve", "digest": digest})),
        )
        .await?;
        ensure!(
            status == StatusCode::CONFLICT
                && body["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("expired"),
            "late: {status} {body}"
        );
        Ok(())
    }
    .await;
    let stopped = studio.shutdown().await;
    result.and(stopped)
}

/// The `(id, type)` of every frame of a run's SSE stream, until it ends.
async fn follow(sidecar: &str, ns: &str, name: &str, token: &str) -> Result<Vec<(u64, String)>> {
    use futures::StreamExt;
    let response = http_client()?
        .get(format!("{sidecar}/api/v1/runs/{ns}/{name}/events"))
        .header("accept", "text/event-stream")
        .bearer_auth(token)
        .send()
        .await?;
    ensure!(
        response.status() == StatusCode::OK,
        "SSE: {}",
        response.status()
    );
    let mut body = response.bytes_stream();
    let (mut buffer, mut frames) = (String::new(), Vec::new());
    while let Some(chunk) = body.next().await {
        buffer.push_str(std::str::from_utf8(&chunk?)?);
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let id = block.lines().find_map(|l| l.strip_prefix("id:"));
            let kind = block.lines().find_map(|l| l.strip_prefix("event:"));
            if let (Some(id), Some(kind)) = (id, kind) {
                frames.push((id.trim().parse()?, kind.trim().to_owned()));
            }
        }
    }
    Ok(frames)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sidecar_replicas_on_postgresql_serve_one_run_the_runner_on_one_the_person_on_the_other()
-> Result<()> {
    let database = orrery_tests::postgres::database("replicas").await?;
    // Two operator pods of the chart, each with its own address; runners reach replica A only
    // (the Service they are given selects it alone); alice talks to replica B only.
    let (studio, replicas) = Studio::install_replicated(
        ChartStudioOptions {
            prefix: "ap-replicas",
            prelude: "",
            manifests: &models(),
            users: &[ALICE],
            policies: true,
            values: &[],
        },
        ReplicatedOptions {
            replicas: 2,
            bridge: "orxap1",
            subnet: "10.213.131.0/24",
            database: &database,
        },
    )
    .await?;
    let result = async {
        let [a, b] = replicas.as_slice() else {
            anyhow::bail!("two replicas: {replicas:?}");
        };
        let ns = studio.ns.name.clone();
        let alice = token(studio.env, ALICE)?;
        let name = start(b, &ns, &alice, json!({})).await?;
        // B follows the run live while A stores its events (PostgreSQL LISTEN/NOTIFY).
        let stream = tokio::spawn({
            let (url, ns, name, alice) = (b.clone(), ns.clone(), name.clone(), alice.clone());
            async move { follow(&url, &ns, &name, &alice).await }
        });
        let (id, digest) = awaiting(&studio, &name).await?;
        let (status, approvals) = api_call(
            reqwest::Method::GET,
            format!("{b}/api/v1/runs/{ns}/{name}/approvals"),
            &alice,
            None,
        )
        .await?;
        ensure!(
            status == StatusCode::OK && approvals["items"][0]["digest"] == json!(digest),
            "B serves the text A stored: {status} {approvals}"
        );
        let (status, body) = api_call(
            reqwest::Method::POST,
            format!("{b}/api/v1/runs/{ns}/{name}/approvals/{id}"),
            &alice,
            Some(json!({"decision": "Approve", "digest": digest})),
        )
        .await?;
        ensure!(
            status == StatusCode::OK && body["outcome"] == "approved",
            "a decision sent to B reaches the runner served by A: {status} {body}"
        );
        let run = studio.wait_phase(&name, RunPhase::Succeeded).await?;
        let frames = tokio::time::timeout(Duration::from_secs(60), stream)
            .await
            .context("B's stream did not end after run.end")???;
        let printed = studio.runner_log(&run).await?;
        let ids: Vec<u64> = frames.iter().map(|(id, _)| *id).collect();
        let want: Vec<u64> = printed.iter().map(|e| e.seq).collect();
        ensure!(
            ids == want,
            "B streamed every event once, in order: {ids:?} vs {want:?}"
        );
        ensure!(
            frames.last().map(|(_, k)| k.as_str()) == Some("run.end"),
            "{frames:?}"
        );
        let from_a = follow(a, &ns, &name, &alice).await?;
        ensure!(from_a == frames, "A serves the same trace: {from_a:?}");
        Ok(())
    }
    .await;
    result.and(studio.shutdown().await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agents_question_is_answered_by_the_runs_owner_through_the_api() -> Result<()> {
    use orrery_runner::demo::{FleetConfig, start_fleet};
    // demo-writer asks which version notes are for when their first line leaves it open.
    let fleet = start_fleet(FleetConfig {
        tools_port: 0,
        writer_port: 0,
        ..FleetConfig::default()
    })
    .await?;
    let manifests = documents(&[
        scripted_model("scripted", json!({"writer": writer_asks_which_version()})),
        demo_writer_entry(&fleet.writer_card_url()),
    ]);
    let studio = Studio::install(ChartStudioOptions {
        prefix: "ap-input",
        prelude: "",
        manifests: &manifests,
        users: &[ALICE],
        policies: true,
        values: &[],
    })
    .await?;
    let result = async {
        let ns = studio.ns.name.clone();
        // The entry is pinned by its probe pod first.
        let entries: kube::Api<orrery_crds::RegistryEntry> = studio.ns.api(&studio.admin);
        orrery_tests::harness::wait_for(
            &entries,
            "demo-writer",
            "Ready",
            Duration::from_secs(90),
            orrery_tests::harness::has_condition("Ready", "True"),
        )
        .await?;
        let alice = token(studio.env, ALICE)?;
        let composition = json!({
            "pattern": "Pipeline",
            "budgets": {"timeoutSeconds": 600, "maxRemoteCalls": 5},
            "nodes": [{"id": "writer", "kind": "LLMAgent", "model": "scripted",
                       "instruction": "Draft the notes.", "tools": ["a2a:demo-writer.draft"]}]
        });
        let name = start(
            &studio.sidecar_url,
            &ns,
            &alice,
            json!({"composition": composition}),
        )
        .await?;
        let (id, digest) = awaiting(&studio, &name).await?;
        let (status, approvals) = api_call(
            reqwest::Method::GET,
            format!("{}/api/v1/runs/{ns}/{name}/approvals", studio.sidecar_url),
            &alice,
            None,
        )
        .await?;
        let item = &approvals["items"][0];
        ensure!(
            status == StatusCode::OK
                && item["kind"] == "Input"
                && item["text"] == orrery_runner::demo::writer::VERSION_QUESTION,
            "the person reads the remote's question: {status} {approvals}"
        );
        let (status, body) = api_call(
            reqwest::Method::POST,
            format!(
                "{}/api/v1/runs/{ns}/{name}/approvals/{id}",
                studio.sidecar_url
            ),
            &alice,
            Some(json!({"decision": "Approve", "digest": digest, "answer": "2.5"})),
        )
        .await?;
        ensure!(
            status == StatusCode::OK && body["outcome"] == "approved",
            "{status} {body}"
        );
        let run = studio.wait_phase(&name, RunPhase::Succeeded).await?;
        // The answer went back on the same task, which then completed.
        let states: Vec<String> = studio
            .runner_log(&run)
            .await?
            .iter()
            .filter_map(|e| {
                let v = serde_json::to_value(e).ok()?;
                (v["type"] == "a2a.message")
                    .then(|| v["taskState"].as_str().unwrap_or("").to_owned())
            })
            .collect();
        ensure!(
            states.iter().any(|s| s == "input-required")
                && states.last().map(String::as_str) == Some("completed"),
            "{states:?}"
        );
        Ok(())
    }
    .await;
    let stopped = studio.shutdown().await;
    let _ = fleet.shutdown().await;
    result.and(stopped)
}

/// The example registry (`examples/registry/`) pointed at an in-process demo fleet on free
/// ports, with the human-review example composition (`examples/compositions/`).
fn example_manifests(fleet: &orrery_runner::demo::Fleet) -> Result<String> {
    let root = orrery_tests::harness::workspace_root();
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).with_context(|| format!("reading {path}"))
    };
    let tools = orrery_tests::manifests::demo_tools_entry(&fleet.tools_url())?;
    let writer = read("examples/registry/demo-writer.yaml")?.replace(
        "http://127.0.0.1:7802/.well-known/agent-card.json",
        &fleet.writer_card_url(),
    );
    ensure!(
        tools.contains(&fleet.tools_url()) && writer.contains(&fleet.writer_card_url()),
        "the example entries name the fleet's default URLs"
    );
    Ok([
        read("examples/registry/scripted.yaml")?,
        tools,
        writer,
        read("examples/compositions/human-review.yaml")?,
    ]
    .join("\n---\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_human_review_example_run_by_alice_is_approved_through_the_api_and_again_by_kubectl_patch()
-> Result<()> {
    use orrery_runner::demo::{FleetConfig, start_fleet};
    let fleet = start_fleet(FleetConfig {
        tools_port: 0,
        writer_port: 0,
        ..FleetConfig::default()
    })
    .await?;
    let manifests = example_manifests(&fleet)?;
    let studio = Studio::install(ChartStudioOptions {
        prefix: "ap-example",
        prelude: "",
        manifests: &manifests,
        users: &[ALICE],
        policies: true,
        values: &[],
    })
    .await?;
    let result = async {
        let ns = studio.ns.name.clone();
        let entries: kube::Api<orrery_crds::RegistryEntry> = studio.ns.api(&studio.admin);
        for entry in ["demo-tools", "demo-writer"] {
            orrery_tests::harness::wait_for(
                &entries,
                entry,
                "Ready",
                Duration::from_secs(90),
                orrery_tests::harness::has_condition("Ready", "True"),
            )
            .await?;
        }
        let alice = token(studio.env, ALICE)?;
        let by_ref = json!({"compositionRef": {"name": "human-review"}, "input": "Write the release notes for Orrery 0.1."});
        // Through the API.
        let (status, run) = api_call(
            reqwest::Method::POST,
            format!("{}/api/v1/runs/{ns}", studio.sidecar_url),
            &alice,
            Some(by_ref.clone()),
        )
        .await?;
        ensure!(status == StatusCode::CREATED, "{status} {run}");
        let name = run["metadata"]["name"].as_str().context("name")?.to_owned();
        let (id, digest) = awaiting(&studio, &name).await?;
        let (status, body) = api_call(
            reqwest::Method::POST,
            format!("{}/api/v1/runs/{ns}/{name}/approvals/{id}", studio.sidecar_url),
            &alice,
            Some(json!({"decision": "Approve", "digest": digest})),
        )
        .await?;
        ensure!(status == StatusCode::OK && body["outcome"] == "approved", "{status} {body}");
        let done = studio.wait_phase(&name, RunPhase::Succeeded).await?;
        let ran = done.status.as_ref().and_then(|s| s.composition.clone()).context("ran")?;
        ensure!(ran.name == "human-review", "{ran:?}");
        // By kubectl patch, as alice.
        let (status, run) = api_call(
            reqwest::Method::POST,
            format!("{}/api/v1/runs/{ns}", studio.sidecar_url),
            &alice,
            Some(by_ref),
        )
        .await?;
        ensure!(status == StatusCode::CREATED, "{status} {run}");
        let name = run["metadata"]["name"].as_str().context("name")?.to_owned();
        let (id, digest) = awaiting(&studio, &name).await?;
        let decision = json!([{"op": "add", "path": "/status/decisions/-", "value": {
            "approvalId": id, "decision": "Approve", "digest": digest, "decidedBy": ALICE
        }}])
        .to_string();
        kubectl_ok(
            studio.env,
            ALICE,
            &[
                "patch", "studiorun", &name, "-n", &ns, "--subresource=status", "--type=json",
                "-p", &decision,
            ],
        )
        .await?;
        studio.wait_phase(&name, RunPhase::Succeeded).await?;
        Ok(())
    }
    .await;
    let stopped = studio.shutdown().await;
    let _ = fleet.shutdown().await;
    result.and(stopped)
}
