//! `kubectl orrery` (issue 25, its first commands) against the chart's operator and admission
//! policies on the project's control plane, run as kubectl runs a plugin: the binary with the
//! person's kubeconfig context (`alice`, `bob`), so the cluster sees the person.
//!
//! alice starts the human-review Composition as herself (the create policy checks the owner),
//! lists it waiting for her approval, and cancels it; bob's start in a namespace his Role does not
//! cover is refused with the apiserver's own words; a kubeconfig context that does not exist is
//! named.

use anyhow::{Context as _, Result, ensure};
use orrery_crds::run::RunPhase;
use orrery_tests::harness::workspace_binary;
use orrery_tests::manifests::{documents, draft_review_publish, scripted_model};
use orrery_tests::studio::{ChartStudioOptions, Studio};
use orrery_tests::testenv::{ALICE, BOB, TestEnv};
use serde_json::json;
use std::process::Output;

/// `kubectl-orrery --kubeconfig … --context <user> -n <namespace> <args>`.
async fn plugin(env: &TestEnv, user: &str, namespace: &str, args: &[&str]) -> Result<Output> {
    let exe = workspace_binary("kubectl-orrery")?;
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("--kubeconfig")
        .arg(&env.kubeconfig)
        .args(["--context", user, "-n", namespace])
        .args(args);
    Ok(cmd.output().await?)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alice_starts_lists_and_cancels_a_run_as_herself_and_refusals_read_as_the_apiserver_says()
-> Result<()> {
    let manifests = documents(&[
        scripted_model(
            "scripted",
            json!({"draft": [{"reply": "Release notes for: {{input}}"}],
                   "publish": [{"reply": "Changelog: {{input}}"}]}),
        ),
        json!({
            "apiVersion": "studio.orrery.dev/v1alpha1",
            "kind": "Composition",
            "metadata": {"name": "human-review"},
            "spec": draft_review_publish(),
        })
        .to_string(),
    ]);
    let studio = Studio::install(ChartStudioOptions {
        prefix: "plugin",
        prelude: "",
        manifests: &manifests,
        users: &[ALICE, BOB],
        policies: true,
        values: &[],
    })
    .await?;
    let result = async {
        let ns = studio.ns.name.clone();
        let env = studio.env;

        // alice starts it as herself: the run is hers, named after its Composition.
        let started = plugin(
            env,
            ALICE,
            &ns,
            &["start", "human-review", "--input", "version 2.4"],
        )
        .await?;
        let out = text(&started.stdout);
        ensure!(
            started.status.success(),
            "start: {out}{}",
            text(&started.stderr)
        );
        let name = out
            .strip_prefix("studiorun/")
            .and_then(|rest| rest.split_whitespace().next())
            .context("start prints studiorun/NAME")?
            .to_owned();
        ensure!(name.starts_with("human-review-"), "{out}");
        let waiting = studio.wait_pending_approval(&name).await?;
        ensure!(waiting.spec.owner == ALICE, "owner {}", waiting.spec.owner);

        // runs: her run, its Composition and revision, the approval waiting for her.
        let listed = plugin(env, ALICE, &ns, &["runs"]).await?;
        let table = text(&listed.stdout);
        ensure!(
            listed.status.success(),
            "runs: {table}{}",
            text(&listed.stderr)
        );
        ensure!(table.starts_with("NAME "), "{table}");
        let line = table
            .lines()
            .find(|l| l.starts_with(&name))
            .with_context(|| format!("runs lists {name}: {table}"))?;
        // NAME PHASE COMPOSITION OWNER TOKENS APPROVALS AGE
        let cells: Vec<&str> = line.split_whitespace().collect();
        ensure!(
            cells.len() == 7
                && cells[1] == "AwaitingApproval"
                && cells[2] == "human-review@1"
                && cells[3] == ALICE
                && cells[5] == "1",
            "{line}"
        );

        // bob cannot start a run where his Role does not reach: the apiserver's words.
        let refused = plugin(
            env,
            BOB,
            "default",
            &["start", "human-review", "--input", "x"],
        )
        .await?;
        let why = text(&refused.stderr);
        ensure!(!refused.status.success(), "{}", text(&refused.stdout));
        ensure!(
            why.contains("starting human-review in default: the cluster refused (403 Forbidden)")
                && why.contains("User \"bob\" cannot create resource \"studioruns\""),
            "{why}"
        );

        // A context the kubeconfig lacks is named.
        let lost = plugin(env, "carol", &ns, &["runs"]).await?;
        let why = text(&lost.stderr);
        ensure!(!lost.status.success() && why.contains("carol"), "{why}");

        // alice cancels it; the operator ends it Cancelled, and runs says so.
        let cancelled = plugin(env, ALICE, &ns, &["cancel", &name]).await?;
        ensure!(
            cancelled.status.success(),
            "cancel: {}{}",
            text(&cancelled.stdout),
            text(&cancelled.stderr)
        );
        studio.wait_phase(&name, RunPhase::Cancelled).await?;
        let listed = plugin(env, ALICE, &ns, &["runs"]).await?;
        let table = text(&listed.stdout);
        ensure!(
            table
                .lines()
                .any(|l| l.starts_with(&name) && l.contains(" Cancelled ")),
            "{table}"
        );
        Ok(())
    }
    .await;
    let stopped = studio.shutdown().await;
    result.and(stopped)
}
