//! Logs a platform team can use, end to end (issue 22 §4): the chart's operator pod (controller
//! and sidecar from the operator's image, `logging.format` JSON by default) and a runner pod
//! run a run that asks a person; afterwards every line the controller and the sidecar wrote is
//! one JSON object, the controller's reconcile lines name the run (namespace, name, UID, the
//! run's UID and the trigger), the sidecar's audit line names who decided, and no log of any
//! container of the namespace holds the approval's text, the run's token or the caller's
//! bearer token (canaries), even with every library at debug.
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary. Needs root, buildah and runc (the images).

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use orrery_crds::plan_document::TOKEN_FILE;
use orrery_crds::run::RunPhase;
use orrery_operator::run::builders::child_names;
use orrery_tests::manifests::{draft_review_publish, scripted_model};
use orrery_tests::studio::{ChartStudioOptions, Studio, api_call, token};
use orrery_tests::testenv::ALICE;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The approval's text carries this; no log may.
const TEXT_CANARY: &str = "CANARY-APPROVAL-TEXT-5f3c9a";

/// The model: a draft carrying the canary, then (after the person) a published version.
fn models() -> String {
    scripted_model(
        "scripted",
        json!({"draft": [{"reply": format!("Release notes for: {{{{input}}}} {TEXT_CANARY}")}],
               "publish": [{"reply": "Changelog: {{input}}"}]}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operator_log_line_is_json_naming_the_run_and_no_log_holds_approval_text_or_a_token()
-> Result<()> {
    let models = models();
    let studio = Studio::install(ChartStudioOptions {
        prefix: "logs",
        prelude: "",
        manifests: &models,
        users: &[ALICE],
        policies: false,
        values: &["logging.level=debug"],
    })
    .await?;
    let result = async {
        let ns = studio.ns.name.clone();
        let alice = token(studio.env, ALICE)?;
        let api = |path: &str| format!("{}/api/v1/runs/{ns}/{path}", studio.sidecar_url);

        let name = studio
            .start_via_api(
                &alice,
                json!({"composition": draft_review_publish(), "input": "version 2.4"}),
            )
            .await?;
        let waiting = studio.wait_pending_approval(&name).await?;
        let uid = waiting.metadata.uid.clone().context("uid")?;
        let pending = &waiting.status.as_ref().context("status")?.pending_approvals[0];
        let (id, digest) = (pending.id.clone(), pending.digest.clone());
        let (status, approvals) = api_call(
            reqwest::Method::GET,
            api(&format!("{name}/approvals")),
            &alice,
            None,
        )
        .await?;
        ensure!(
            status == StatusCode::OK
                && approvals["items"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains(TEXT_CANARY)),
            "the text under review carries the canary: {status} {approvals}"
        );
        // The run's token, read before the run ends (its plan Secret goes with the run's pod).
        let secrets: Api<Secret> = studio.ns.api(&studio.admin);
        let plan = secrets.get(&child_names(&name).secret).await?;
        let run_token = plan
            .data
            .as_ref()
            .and_then(|d| d.get(TOKEN_FILE))
            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
            .context("the plan Secret holds the run token")?;
        ensure!(run_token.len() > 40, "a token: {run_token}");

        let (status, body) = api_call(
            reqwest::Method::POST,
            api(&format!("{name}/approvals/{id}")),
            &alice,
            Some(json!({"decision": "Approve", "digest": digest})),
        )
        .await?;
        ensure!(status == StatusCode::OK, "approve: {status} {body}");
        studio.wait_phase(&name, RunPhase::Succeeded).await?;

        let logs = studio.container_logs().await?;
        let of = |container: &str| -> Result<Vec<Value>> {
            let (pod, _, text) = logs
                .iter()
                .find(|(pod, c, _)| c == container && !pod.contains("-runner"))
                .with_context(|| format!("no {container} log among {:?}", names(&logs)))?;
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| {
                    serde_json::from_str::<Value>(l)
                        .ok()
                        .filter(|v| v["time"].is_string() && v["level"].is_string())
                        .with_context(|| format!("{pod}/{container}: not a JSON log line: {l}"))
                })
                .collect()
        };
        let controller = of("controller")?;
        let reconcile = controller
            .iter()
            .find(|l| l["kind"] == "StudioRun" && l["name"] == name.as_str())
            .with_context(|| format!("a controller line about {name}: {controller:?}"))?;
        ensure!(
            reconcile["namespace"] == ns.as_str()
                && reconcile["uid"] == uid.as_str()
                && reconcile["run_uid"] == uid.as_str()
                && reconcile["trigger"].is_string(),
            "the reconcile's line names the run and what triggered it: {reconcile}"
        );
        let sidecar = of("sidecar")?;
        let audit = sidecar
            .iter()
            .find(|l| l["approval"] == id.as_str())
            .with_context(|| format!("the sidecar's line for the decision: {sidecar:?}"))?;
        ensure!(
            audit["run_uid"] == uid.as_str()
                && audit["decided_by"] == ALICE
                && audit["level"] == "INFO",
            "{audit}"
        );

        for (pod, container, text) in &logs {
            for (what, canary) in [
                ("the approval's text", TEXT_CANARY),
                ("the run token", run_token.as_str()),
                ("alice's bearer token", alice.as_str()),
            ] {
                ensure!(
                    !text.contains(canary),
                    "{pod}/{container} logged {what}: {}",
                    text.lines()
                        .find(|l| l.contains(canary))
                        .unwrap_or_default()
                );
            }
        }
        Ok(())
    }
    .await;
    let stopped = studio.shutdown().await;
    result.and(stopped)
}

fn names(logs: &[(String, String, String)]) -> Vec<String> {
    logs.iter().map(|(p, c, _)| format!("{p}/{c}")).collect()
}
