//! A CustomResourceDefinition deleted while the operator runs (fault case 16 of
//! `../shared/reference/security-anchors.md` §6): the operator keeps running, a run that needs
//! the missing kind waits `Pending` saying which CRD is gone and how to put it back, and it goes
//! on by itself once the CRD is installed again.
//!
//! A test binary of its own: deleting a CRD deletes every object of that kind in the cluster,
//! so nothing may run beside it. Cargo runs test binaries one at a time on the control plane
//! `tests/e2e.sh` shares; the CRD is installed again when the test ends, however it ends.
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary. Needs the `orrery` binary (the runners run as processes of the dev node).

use anyhow::{Context as _, Result, ensure};
use orrery_crds::run::RunPhase;
use orrery_tests::harness::{kubectl_ok, workspace_root};
use orrery_tests::manifests::{documents, scripted_model};
use orrery_tests::sidecar_fixture;
use orrery_tests::studio::{Studio, StudioOptions};
use orrery_tests::testenv::{ADMIN, TestEnv};
use serde_json::json;

const CRD: &str = "registryentries.studio.orrery.dev";

fn crd_file() -> String {
    workspace_root()
        .join("charts/orrery/crds/registryentries.yaml")
        .display()
        .to_string()
}

/// Installs the RegistryEntry CRD again when dropped (the test may end anywhere), and waits
/// until it is served.
struct Reinstall(&'static TestEnv);

impl Drop for Reinstall {
    fn drop(&mut self) {
        let file = crd_file();
        for args in [
            vec!["apply", "--server-side", "-f", file.as_str()],
            vec![
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                "crd/registryentries.studio.orrery.dev",
            ],
        ] {
            let _ = self
                .0
                .kubectl(ADMIN)
                .args(&args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

fn model() -> String {
    documents(&[scripted_model(
        "scripted",
        json!({"draft": [{"reply": "draft of: {{input}}"}],
               "polish": [{"reply": "polished: {{input}}"}]}),
    )])
}

fn run(name: &str) -> String {
    json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": name},
        "spec": {
            "composition": {
                "pattern": "Pipeline",
                "nodes": [
                    {"id": "draft", "kind": "LLMAgent", "model": "scripted", "instruction": "Draft it."},
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

fn reason(run: &orrery_crds::StudioRun) -> Option<String> {
    run.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.r#type == "Succeeded")
        .map(|c| c.reason.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_registryentry_crd_deleted_a_run_waits_naming_it_and_goes_on_once_it_is_installed_again_fault_16()
-> Result<()> {
    let studio = Studio::start(StudioOptions {
        prefix: "crd-gone",
        sidecar_url: &sidecar_fixture::shared()?.url,
        manifests: &model(),
        users: &[],
        policies: false,
        configure: &|_| {},
    })
    .await?;
    Studio::test(studio, async |f| {
        f.apply(&run("before")).await?;
        f.wait_phase("before", RunPhase::Succeeded).await?;

        let _reinstall = Reinstall(f.env);
        kubectl_ok(f.env, ADMIN, &["delete", "crd", CRD, "--wait=true"]).await?;
        f.apply(&run("stranded")).await?;
        let waiting = f
            .wait_run("stranded", "waiting for the CRD", |r| {
                reason(r).as_deref() == Some("CustomResourceDefinitionMissing")
            })
            .await?;
        let status = waiting.status.as_ref().context("status")?;
        ensure!(
            status.phase == Some(RunPhase::Pending),
            "{:?}",
            status.phase
        );
        let message = status
            .conditions
            .iter()
            .find(|c| c.r#type == "Succeeded")
            .map(|c| c.message.clone())
            .unwrap_or_default();
        ensure!(
            message.contains(CRD) && message.contains("helm upgrade"),
            "{message}"
        );
        ensure!(f.runner_pods(&waiting).await?.is_empty(), "no pod yet");
        let events = f.events_of("stranded").await?;
        ensure!(
            events
                .iter()
                .any(|(r, note)| r == "CustomResourceDefinitionMissing" && note.contains(CRD)),
            "an Event names the CRD: {events:?}"
        );

        // Installed again, and the entry the run needs made again (it went with its CRD): the
        // controllers, still running, take up both, and the run goes on by itself.
        kubectl_ok(f.env, ADMIN, &["apply", "--server-side", "-f", &crd_file()]).await?;
        kubectl_ok(
            f.env,
            ADMIN,
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                &format!("crd/{CRD}"),
            ],
        )
        .await?;
        // A moment for the API server to serve the kind it just established.
        let mut applied = Err(anyhow::anyhow!("not tried"));
        for _ in 0..30 {
            applied = f.apply(&model()).await;
            if applied.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        applied?;
        let done = f.wait_phase("stranded", RunPhase::Succeeded).await?;
        ensure!(f.runner_pods(&done).await?.len() == 1, "one runner pod");
        Ok(())
    })
    .await
}
