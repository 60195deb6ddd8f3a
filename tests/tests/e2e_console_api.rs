//! The sidecar's additions for the console (issue 23), end to end against the chart's operator
//! on the real control plane: the spec a run ran (inline and by reference, the digest the run
//! recorded, 404 to others, 403 naming the rule a Role lacks), the run list's filters and pages,
//! `/me` naming the namespace the install serves, and the console the operator image carries
//! served at its paths under the console's own policy (`console::check_served`).
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary. Needs root, buildah and runc (the images).

use anyhow::{Context as _, Result, ensure};
use orrery_crds::StudioRun;
use orrery_crds::run::RunPhase;
use orrery_tests::console::check_served;
use orrery_tests::harness::apply_yaml;
use orrery_tests::manifests::{documents, scripted_model};
use orrery_tests::studio::{ChartStudioOptions, Studio, api_call, token};
use orrery_tests::testenv::{ALICE, BOB};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn pipeline() -> Value {
    json!({
        "pattern": "Pipeline",
        "budgets": {"timeoutSeconds": 600},
        "nodes": [
            {"id": "draft", "kind": "LLMAgent", "model": "scripted", "instruction": "Draft it."},
            {"id": "polish", "kind": "LLMAgent", "model": "scripted", "instruction": "Polish it."}
        ],
        "edges": [{"from": "draft", "to": "polish"}]
    })
}

fn manifests() -> String {
    documents(&[
        scripted_model(
            "scripted",
            json!({"draft": [{"reply": "draft: {{input}}"}], "polish": [{"reply": "done: {{input}}"}]}),
        ),
        json!({
            "apiVersion": "studio.orrery.dev/v1alpha1",
            "kind": "Composition",
            "metadata": {"name": "notes"},
            "spec": pipeline(),
        })
        .to_string(),
    ])
}

/// Bob may start and read runs and read Compositions, but not ControllerRevisions: the
/// example studio-user Role without its last rule.
const RUNS_ONLY: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: runs-only}
rules:
  - apiGroups: [studio.orrery.dev]
    resources: [compositions, registryentries]
    verbs: [get, list, watch]
  - apiGroups: [studio.orrery.dev]
    resources: [studioruns]
    verbs: [get, list, watch, create, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: runs-only-bob}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: runs-only}
"#;

fn recorded(run: &StudioRun) -> Result<(String, Option<i64>, String)> {
    let ran = run
        .status
        .as_ref()
        .and_then(|s| s.composition.clone())
        .context("the run records what it ran")?;
    Ok((ran.name, ran.revision, ran.digest))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_api_serves_the_spec_a_run_ran_the_filtered_list_and_who_you_are() -> Result<()>
{
    let manifests = manifests();
    let studio = Studio::install(ChartStudioOptions {
        prefix: "capi",
        prelude: "",
        manifests: &manifests,
        users: &[ALICE],
        policies: false,
        values: &[],
    })
    .await?;
    let result = async {
        let ns = studio.ns.name.clone();
        let base = studio.sidecar_url.clone();
        let alice = token(studio.env, ALICE)?;
        let bob = token(studio.env, BOB)?;
        apply_yaml(&studio.admin, Some(&ns), RUNS_ONLY).await?;
        let get = |path: String, who: &str| {
            let who = who.to_owned();
            let base = base.clone();
            async move { api_call(Method::GET, format!("{base}{path}"), &who, None).await }
        };

        // Two runs of alice's, one by reference and one inline; one of bob's by reference.
        let by_ref = studio
            .start_via_api(
                &alice,
                json!({"compositionRef": {"name": "notes"}, "input": "v2.4"}),
            )
            .await?;
        let inline = studio
            .start_via_api(&alice, json!({"composition": pipeline(), "input": "v2.5"}))
            .await?;
        let bobs = studio
            .start_via_api(
                &bob,
                json!({"compositionRef": {"name": "notes"}, "input": "v9"}),
            )
            .await?;
        let by_ref_run = studio.wait_phase(&by_ref, RunPhase::Succeeded).await?;
        let inline_run = studio.wait_phase(&inline, RunPhase::Succeeded).await?;
        studio.wait_phase(&bobs, RunPhase::Succeeded).await?;

        // The spec a by-reference run ran: its revision, the digest it recorded.
        let (name, revision, digest) = recorded(&by_ref_run)?;
        let (status, body) = get(format!("/api/v1/runs/{ns}/{by_ref}/composition"), &alice).await?;
        ensure!(status == StatusCode::OK, "by ref: {status} {body}");
        ensure!(
            body["name"] == json!(name)
                && name == "notes"
                && body["revision"] == json!(revision)
                && revision.is_some()
                && body["digest"] == json!(digest)
                && body["spec"]["nodes"][1]["id"] == "polish",
            "{body}"
        );
        // An inline run's own spec, under the digest it recorded.
        let (name, _, digest) = recorded(&inline_run)?;
        let (status, body) = get(format!("/api/v1/runs/{ns}/{inline}/composition"), &alice).await?;
        ensure!(
            status == StatusCode::OK
                && body["name"] == json!(name)
                && body["revision"].is_null()
                && body["digest"] == json!(digest),
            "inline: {status} {body}"
        );
        // Not bob's run: 404, as if it did not exist.
        let (status, _) = get(format!("/api/v1/runs/{ns}/{by_ref}/composition"), &bob).await?;
        ensure!(
            status == StatusCode::NOT_FOUND,
            "bob reads alice's: {status}"
        );
        // Bob's own run, but his Role grants no ControllerRevisions: 403 naming the rule.
        let (status, body) = get(format!("/api/v1/runs/{ns}/{bobs}/composition"), &bob).await?;
        ensure!(
            status == StatusCode::FORBIDDEN
                && body["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("controllerrevisions get")),
            "bob without the rule: {status} {body}"
        );

        // The list: alice's two runs (never bob's), filtered and paged.
        let list = |query: &str| get(format!("/api/v1/runs/{ns}?{query}"), &alice);
        let names = |body: &Value| -> Vec<String> {
            body["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["metadata"]["name"].as_str().map(str::to_owned))
                .collect()
        };
        let (status, body) = list("role=owner&phase=Succeeded").await?;
        ensure!(status == StatusCode::OK, "{status} {body}");
        let mut all = names(&body);
        all.sort();
        let mut want = vec![by_ref.clone(), inline.clone()];
        want.sort();
        ensure!(all == want, "alice's runs only: {all:?}");
        let (_, body) = list("role=approver").await?;
        ensure!(names(&body).is_empty(), "alice approves none: {body}");
        let (_, body) = list("composition=notes").await?;
        ensure!(names(&body) == [by_ref.clone()], "{body}");
        let (_, first) = list("limit=1").await?;
        let next = first["continue"].as_str().context("a continue")?.to_owned();
        let (_, second) = list(&format!("limit=1&continue={next}")).await?;
        let mut paged = names(&first);
        paged.extend(names(&second));
        paged.sort();
        ensure!(
            paged == want && second.get("continue").is_none(),
            "{first} {second}"
        );
        let (status, body) = list("phase=Sleeping").await?;
        ensure!(
            status == StatusCode::BAD_REQUEST && body["loc"] == json!(["query"]),
            "{status} {body}"
        );
        let (status, body) = list("limit=0").await?;
        ensure!(
            status == StatusCode::BAD_REQUEST && body["loc"] == json!(["query", "limit"]),
            "{status} {body}"
        );

        // Who you are, and the namespace this install serves.
        let (status, me) = get("/api/v1/me".into(), &alice).await?;
        ensure!(
            status == StatusCode::OK && me["person"] == true && me["namespaces"] == json!([ns]),
            "{status} {me}"
        );

        // The image carries the console: its paths are the built files, under its own policy.
        check_served(&base, &format!("/runs/{ns}")).await?;
        Ok(())
    }
    .await;
    let stopped = studio.shutdown().await;
    result.and(stopped)
}
