//! The StudioRun controller on the real kube-apiserver, with the pod executor as the kubelet:
//! a run executes in its own restricted runner pod behind its own NetworkPolicy and ends
//! `Succeeded` with its totals; a revision is run as recorded; a run waits for a Composition
//! that does not exist yet; cancel, a killed runner and a deleted pod end the run as they
//! should; an operator restarted mid-run creates no second pod; a concurrency limit queues a
//! run until a slot frees; a finished run is deleted with its children after its TTL; and a run
//! succeeds with the runner image's binary built as `operator/Dockerfile` ships it (static,
//! without the full CLI).
//!
//! Models are Scripted (a `delayMs` turn makes a run last), so no network is needed.
//!
//! The operator is the Helm chart's (`Studio::install_on`: `helm install` into the test's
//! namespace, serving it alone), its pod and the runner pods run from the project's images as
//! runc containers on the dev node, so the chart's args, config, RBAC and sidecar wiring are what
//! these tests exercise. One test keeps the controllers in-process (`Studio::start`: as the
//! operator's ServiceAccount bound to the chart's RBAC, never as admin), because it does what a
//! chart install cannot: kill the operator mid-run and start it again (the controllers are a
//! task the test aborts; its runners run as processes of the dev node's process mode). A killed
//! runner is killed as its container (`runc kill`); a pod that never starts is one in a
//! namespace no node runs (`Kubelet::OperatorOnly`: the release lives in a namespace of its
//! own).
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary. Needs root, buildah and runc (the images), and the `orrery` binary.

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use orrery_crds::run::RunPhase;
use orrery_crds::{Composition, StudioRun};
use orrery_operator::kstatus::find;
use orrery_operator::run::builders::RUN_UID_LABEL;
use orrery_tests::harness::{
    GC_TIMEOUT, TIMEOUT, apply_yaml, eventually, has_condition, kubectl, wait_deleted, wait_for,
};
use orrery_tests::images;
use orrery_tests::manifests::{documents, scripted_model};
use orrery_tests::sidecar_fixture;
use orrery_tests::studio::{
    ChartNode, ChartStudioOptions, Kubelet, RUN_TIMEOUT, Studio, StudioOptions,
};
use orrery_tests::testenv::ADMIN;
use serde_json::json;

/// The chart's operator serving a namespace of its own (`values` on top of the tests', see
/// `ChartOperator`), its pod and the runner pods run as runc containers, with the Scripted model
/// entries ([`scripted`]).
async fn chart(prefix: &str, values: &[&str]) -> Result<Studio> {
    chart_on(ChartNode::default(), prefix, values).await
}

/// [`chart`] on the node `node` says.
async fn chart_on(node: ChartNode<'_>, prefix: &str, values: &[&str]) -> Result<Studio> {
    Studio::install_on(
        node,
        ChartStudioOptions {
            prefix,
            prelude: "",
            manifests: &scripted(),
            users: &[],
            policies: false,
            values,
        },
    )
    .await
}

fn phase_of(run: Option<&StudioRun>) -> Option<RunPhase> {
    run.and_then(|r| r.status.as_ref()).and_then(|s| s.phase)
}

fn condition_reason(run: &StudioRun, type_: &str) -> Option<String> {
    find(&run.status.as_ref()?.conditions, type_).map(|c| c.reason.clone())
}

/// The model entries: `scripted` answers at once, `slow` takes ten minutes per turn (runs
/// that must still be going when the test acts on them), `brief` two seconds.
fn scripted() -> String {
    documents(&[
        scripted_model(
            "scripted",
            json!({"draft": [{"reply": "draft of: {{input}}"}],
                   "polish": [{"reply": "polished: {{input}}"}]}),
        ),
        scripted_model(
            "slow",
            json!({"draft": [{"delayMs": 600000, "reply": "late"}]}),
        ),
        scripted_model(
            "brief",
            json!({"draft": [{"delayMs": 2000, "reply": "after a while"}]}),
        ),
    ])
}

/// A two-node pipeline on model `model`.
fn pipeline(model: &str) -> serde_json::Value {
    json!({
        "pattern": "Pipeline",
        "budgets": {"timeoutSeconds": 600},
        "nodes": [
            {"id": "draft", "kind": "LLMAgent", "model": model, "instruction": "Draft it."},
            {"id": "polish", "kind": "LLMAgent", "model": "scripted", "instruction": "Polish it."}
        ],
        "edges": [{"from": "draft", "to": "polish"}]
    })
}

fn inline_run(name: &str, model: &str, owner: &str) -> String {
    json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": name},
        "spec": {"composition": pipeline(model), "input": "the notes", "owner": owner}
    })
    .to_string()
}

fn composition(name: &str, model: &str) -> String {
    json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "Composition",
        "metadata": {"name": name},
        "spec": pipeline(model)
    })
    .to_string()
}

fn ref_run(name: &str, composition: &str, revision: Option<i64>) -> String {
    let mut reference = json!({"name": composition});
    if let Some(r) = revision {
        reference["revision"] = json!(r);
    }
    json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": name},
        "spec": {"compositionRef": reference, "input": "the notes", "owner": "jane@example.com"}
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_succeeds_in_its_own_restricted_pod_behind_its_own_network_policy() -> Result<()> {
    // The namespace enforces Pod Security restricted (from before the install): the apiserver
    // itself admits the runner pod against it.
    let restricted = ChartNode {
        kubelet: Kubelet::Containers,
        namespace_labels: &[("pod-security.kubernetes.io/enforce", "restricted")],
    };
    let studio = chart_on(restricted, "run-ok", &[]).await?;
    Studio::test(studio, async |f| {
        let operator = f.chart().context("the chart's operator")?;
        f.apply(&inline_run("notes-1", "scripted", "jane@example.com"))
            .await?;
        // What a person types: kubectl wait on the Succeeded condition.
        kubectl(
            f.env,
            ADMIN,
            &[
                "wait",
                "-n",
                &f.ns.name,
                "--for=condition=Succeeded",
                "--timeout=90s",
                "studiorun/notes-1",
            ],
        )?;
        let done = f.runs().get("notes-1").await?;
        let status = done.status.clone().context("status")?;
        assert_eq!(status.phase, Some(RunPhase::Succeeded));
        let totals = status.totals.context("totals")?;
        assert_eq!(totals.tool_calls, 0);
        let ran = status.composition.context("composition")?;
        assert_eq!(ran.name, "inline");
        assert_eq!(ran.digest.len(), 64);
        assert!(status.start_time.is_some() && status.completion_time.is_some());
        assert_eq!(status.runner_pod.as_deref(), Some("notes-1-runner"));
        assert_eq!(status.observed_generation, done.metadata.generation);
        for (type_, want) in [("Succeeded", "True"), ("Ready", "True")] {
            assert!(
                has_condition::<StudioRun>(type_, want)(Some(&done)),
                "{type_}={want}: {:#?}",
                done.status
            );
        }
        let phase = kubectl(
            f.env,
            ADMIN,
            &[
                "get",
                "-n",
                &f.ns.name,
                "studiorun/notes-1",
                "-o",
                "jsonpath={.status.phase}",
            ],
        )?;
        assert_eq!(phase, "Succeeded");

        // The pod: restricted in every field Pod Security checks, and it ran to the end.
        let pods = f.runner_pods(&done).await?;
        ensure!(pods.len() == 1, "one runner pod, got {}", pods.len());
        let pod = serde_json::to_value(&pods[0])?;
        let spec = &pod["spec"];
        assert_eq!(spec["automountServiceAccountToken"], json!(false));
        assert_eq!(spec["enableServiceLinks"], json!(false));
        assert_eq!(spec["restartPolicy"], json!("Never"));
        assert_eq!(spec["securityContext"]["runAsNonRoot"], json!(true));
        assert_eq!(
            spec["securityContext"]["seccompProfile"]["type"],
            json!("RuntimeDefault")
        );
        assert!(spec["activeDeadlineSeconds"].as_i64() > Some(600));
        let container = &spec["containers"][0];
        let security = &container["securityContext"];
        assert_eq!(security["allowPrivilegeEscalation"], json!(false));
        assert_eq!(security["readOnlyRootFilesystem"], json!(true));
        assert_eq!(security["runAsNonRoot"], json!(true));
        assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
        assert_eq!(container["terminationMessagePolicy"], json!("File"));
        assert_eq!(pod["status"]["phase"], json!("Succeeded"));
        assert_eq!(
            pod["metadata"]["ownerReferences"][0]["uid"],
            json!(done.uid())
        );

        // The NetworkPolicy: only this pod, no ingress, egress to DNS and the chart's sidecar
        // only (its pods, its port; a Scripted model reaches nothing).
        let policies: Api<NetworkPolicy> = f.ns.api(&f.admin);
        let policy = serde_json::to_value(policies.get("notes-1-egress").await?)?;
        let peer = |namespace: &str, labels: serde_json::Value| {
            json!({
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "podSelector": {"matchLabels": labels}
            })
        };
        assert_eq!(
            policy["spec"],
            json!({
                "podSelector": {"matchLabels": { RUN_UID_LABEL: done.uid() }},
                "policyTypes": ["Ingress", "Egress"],
                "egress": [
                    {
                        "to": [peer("kube-system", json!({"k8s-app": "kube-dns"}))],
                        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
                    },
                    {
                        "to": [peer(&f.ns.name, json!({
                            "app.kubernetes.io/component": "operator",
                            "app.kubernetes.io/instance": operator.name,
                            "app.kubernetes.io/name": "orrery"
                        }))],
                        "ports": [{"protocol": "TCP", "port": operator.sidecar_port}]
                    }
                ]
            }),
            "no ingress; egress to DNS and the sidecar only (a Scripted model reaches nothing)"
        );

        // The plan Secret: immutable, owned, and it holds the plan, the input and a token.
        let secrets: Api<Secret> = f.ns.api(&f.admin);
        let secret = secrets.get("notes-1-plan").await?;
        assert_eq!(secret.immutable, Some(true));
        let keys: Vec<&String> = secret.data.as_ref().context("data")?.keys().collect();
        assert_eq!(keys, ["input", "plan.json", "token"]);

        // Events are written after the status they tell of: the last may come a moment later.
        let events =
            orrery_tests::harness::eventually(std::time::Duration::from_secs(20), || async {
                let events = f.events_of("notes-1").await?;
                ensure!(
                    ["Started", "Succeeded"]
                        .iter()
                        .all(|want| events.iter().any(|(r, _)| r == want)),
                    "{events:?}"
                );
                Ok(events)
            })
            .await?;
        let reasons: Vec<&str> = events.iter().map(|(r, _)| r.as_str()).collect();
        assert!(
            !reasons.contains(&"PodSecurityNotEnforced"),
            "the namespace enforces restricted: {events:?}"
        );
        Ok(())
    })
    .await
}

/// The runner image as `operator/Dockerfile` builds it (statically linked, without the full
/// CLI's commands) runs a run to the end: no test elsewhere runs that build, and a static
/// binary has no loader, no libc files and no NSS modules in its image to lean on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_succeeds_with_the_runner_image_built_as_shipped_static_and_without_the_full_cli()
-> Result<()> {
    let binary = tokio::task::spawn_blocking(images::pod_build_binary).await??;
    let ldd = std::process::Command::new("ldd").arg(&binary).output()?;
    let said = String::from_utf8_lossy(&ldd.stdout) + String::from_utf8_lossy(&ldd.stderr);
    ensure!(
        !ldd.status.success() && said.contains("not a dynamic executable"),
        "{} is linked statically, ldd said: {said}",
        binary.display()
    );
    let demo = std::process::Command::new(&binary).arg("demo").output()?;
    let stderr = String::from_utf8_lossy(&demo.stderr);
    ensure!(
        demo.status.code() == Some(2) && stderr.contains("`orrery demo` is not in this build"),
        "the shipped build has no demo: {} {stderr}",
        demo.status
    );
    let as_shipped = ChartNode {
        kubelet: Kubelet::ContainersAsShipped,
        ..ChartNode::default()
    };
    let studio = chart_on(as_shipped, "run-shipped", &[]).await?;
    Studio::test(studio, async |f| {
        f.apply(&inline_run("notes-1", "scripted", "jane@example.com"))
            .await?;
        wait_for(
            &f.runs(),
            "notes-1",
            "an end",
            RUN_TIMEOUT,
            |run: Option<&StudioRun>| phase_of(run).is_some_and(RunPhase::is_terminal),
        )
        .await?;
        let done = f.runs().get("notes-1").await?;
        let status = done.status.clone().context("status")?;
        assert_eq!(status.phase, Some(RunPhase::Succeeded), "{status:#?}");
        assert_eq!(status.events_dropped, Some(0), "{status:#?}");
        // The trace reached the sidecar through the runner's HTTP sink: the sidecar writes how
        // many events it holds (from run.start to run.end) once it has them.
        wait_for(
            &f.runs(),
            "notes-1",
            "the sidecar's event count",
            RUN_TIMEOUT,
            |run: Option<&StudioRun>| {
                run.and_then(|r| r.status.as_ref())
                    .and_then(|s| s.event_count)
                    .is_some_and(|n| n >= 4)
            },
        )
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_executes_the_revision_it_names_and_waits_for_a_composition_not_there_yet()
-> Result<()> {
    let studio = chart("run-rev", &[]).await?;
    Studio::test(studio, async |f| {
        f.apply(&composition("notes", "scripted")).await?;
        // Each generation the controller sees is recorded; wait for the first before the next.
        let compositions: Api<Composition> = f.ns.api(&f.admin);
        let revision_is = |want: i64| {
            move |c: Option<&Composition>| {
                c.and_then(|c| c.status.as_ref()).and_then(|s| s.revision) == Some(want)
            }
        };
        wait_for(
            &compositions,
            "notes",
            "revision 1",
            TIMEOUT,
            revision_is(1),
        )
        .await?;
        // Generation 2: another model for the first node.
        f.apply(&composition("notes", "brief")).await?;
        wait_for(
            &compositions,
            "notes",
            "revision 2",
            TIMEOUT,
            revision_is(2),
        )
        .await?;
        f.apply(&ref_run("old", "notes", Some(1))).await?;
        f.apply(&ref_run("current", "notes", None)).await?;
        f.apply(&ref_run("gone", "notes", Some(7))).await?;
        let old = f.wait_phase("old", RunPhase::Succeeded).await?;
        let current = f.wait_phase("current", RunPhase::Succeeded).await?;
        let revision = |r: &StudioRun| r.status.as_ref()?.composition.as_ref()?.revision;
        assert_eq!(revision(&old), Some(1));
        assert_eq!(revision(&current), Some(2));
        let digest = |r: &StudioRun| {
            r.status
                .as_ref()
                .and_then(|s| s.composition.as_ref())
                .map(|c| c.digest.clone())
        };
        assert_ne!(digest(&old), digest(&current), "two revisions, two digests");
        let gone = f.wait_phase("gone", RunPhase::Failed).await?;
        let message = gone
            .status
            .as_ref()
            .and_then(|s| s.error.as_ref())
            .map(|e| e.message.clone())
            .unwrap_or_default();
        assert!(
            message.contains("revision 7 of Composition notes is not kept"),
            "{message}"
        );
        assert!(f.runner_pods(&gone).await?.is_empty());

        // A run applied before its Composition (GitOps applies in any order) waits for it.
        f.apply(&ref_run("early", "later", None)).await?;
        let waiting = f.wait_reason("early", "WaitingForComposition").await?;
        assert_eq!(phase_of(Some(&waiting)), Some(RunPhase::Pending));
        f.apply(&composition("later", "scripted")).await?;
        f.wait_phase("early", RunPhase::Succeeded).await?;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_the_runner_with_sigterm_and_the_run_ends_cancelled() -> Result<()> {
    let studio = chart("run-cancel", &[]).await?;
    Studio::test(studio, async |f| {
        f.apply(&inline_run("long", "slow", "jane@example.com"))
            .await?;
        f.wait_phase("long", RunPhase::Running).await?;
        f.wait_run_started("long").await?;
        let patch = json!({"spec": {"cancel": true}});
        f.runs()
            .patch("long", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        let done = f.wait_phase("long", RunPhase::Cancelled).await?;
        assert_eq!(
            condition_reason(&done, "Succeeded").as_deref(),
            Some("Cancelled")
        );
        // The pod is kept (the kubelet stopped it at its lowered deadline) with the runner's
        // own summary: the runner saw SIGTERM and ended the run itself.
        let pods = f.runner_pods(&done).await?;
        let pod = pods.first().context("the pod is kept")?;
        let status = pod.status.as_ref().context("pod status")?;
        assert_eq!(status.reason.as_deref(), Some("DeadlineExceeded"));
        let terminated = status
            .container_statuses
            .iter()
            .flatten()
            .find_map(|c| c.state.as_ref()?.terminated.clone())
            .context("terminated")?;
        assert_eq!(
            terminated.exit_code, 130,
            "the runner's exit code for Cancelled"
        );
        let events = f.events_of("long").await?;
        assert_eq!(
            events
                .iter()
                .filter(|(reason, _)| reason == "PodSecurityNotEnforced")
                .count(),
            1,
            "an unlabelled namespace is told once that it does not enforce restricted: {events:?}"
        );
        assert!(
            terminated
                .message
                .unwrap_or_default()
                .contains("\"Cancelled\""),
            "the runner's summary is the termination message"
        );
        Ok(())
    })
    .await
}

/// A cancel that comes while the run is still being created or started (the console's Cancel
/// run pressed before the run had a name is sent the moment it has one, rule 12.45) ends the
/// run Cancelled, whichever step of the start it meets: before the operator has read the run,
/// while it creates the pod, before the pod has started, just after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_at_any_moment_of_the_start_ends_the_run_cancelled() -> Result<()> {
    let studio = chart("run-cancel-early", &[]).await?;
    Studio::test(studio, async |f| {
        const AFTER_MS: [u64; 7] = [0, 30, 100, 250, 500, 1000, 2000];
        for ms in AFTER_MS {
            let name = format!("early-{ms}");
            f.apply(&inline_run(&name, "slow", "jane@example.com"))
                .await?;
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            let patch = json!({"spec": {"cancel": true}});
            f.runs()
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        for ms in AFTER_MS {
            let name = format!("early-{ms}");
            let done = f
                .wait_phase(&name, RunPhase::Cancelled)
                .await
                .with_context(|| format!("the run cancelled {ms} ms after its creation"))?;
            assert_eq!(
                condition_reason(&done, "Succeeded").as_deref(),
                Some("Cancelled"),
                "{name}"
            );
        }
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_runner_or_a_deleted_pod_fails_the_run_with_the_reason() -> Result<()> {
    let studio = chart("run-kill", &[]).await?;
    Studio::test(studio, async |f| {
        f.apply(&inline_run("killed", "slow", "jane@example.com"))
            .await?;
        f.apply(&inline_run("orphaned", "slow", "jane@example.com"))
            .await?;
        f.wait_phase("killed", RunPhase::Running).await?;
        f.wait_phase("orphaned", RunPhase::Running).await?;

        // Killed where it runs (as the kernel's OOM killer would): SIGKILL to its container.
        f.wait_run_started("killed").await?;
        f.kill_container("killed-runner", "runner").await?;
        let killed = f.wait_phase("killed", RunPhase::Failed).await?;
        assert_eq!(
            condition_reason(&killed, "Succeeded").as_deref(),
            Some("RunnerCrashed")
        );
        let message = killed.status.and_then(|s| s.error).map(|e| e.message);
        assert!(
            message
                .as_deref()
                .is_some_and(|m| m.contains("exited with code 137")),
            "{message:?}"
        );

        f.pods()
            .delete("orphaned-runner", &DeleteParams::default())
            .await?;
        let orphaned = f.wait_phase("orphaned", RunPhase::Failed).await?;
        assert_eq!(
            condition_reason(&orphaned, "Succeeded").as_deref(),
            Some("PodDeleted")
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_api_key_echoed_back_by_its_model_is_found_nowhere_but_in_the_request_attack_43()
-> Result<()> {
    use orrery_tests::stub_model::{StubModel, StubReply, Wire};
    use orrery_tests::studio::{api_call, token};
    use orrery_tests::testenv::ALICE;
    // A key nothing else contains, of no shape the general redaction knows (a vLLM or proxy
    // key can be anything), and a model that answers 401 repeating it, as providers do
    // ("Incorrect API key provided: …").
    let canary = format!("canary{:016x}", rand_u64());
    let stub = StubModel::start().await?;
    stub.set_default(StubReply::error(
        401,
        &format!(
            "Incorrect API key provided: {canary}. You can find your API key in your account."
        ),
    ));
    let studio = Studio::install_on(
        ChartNode::default(),
        ChartStudioOptions {
            prefix: "run-canary",
            prelude: "",
            manifests: &scripted(),
            users: &[ALICE],
            policies: false,
            values: &[],
        },
    )
    .await?;
    Studio::test(studio, async |f| {
        let ns = f.ns.name.clone();
        f.apply(
            &json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "model-key"},
                "stringData": {"api-key": canary}
            })
            .to_string(),
        )
        .await?;
        f.apply(
            &json!({
                "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "RegistryEntry",
                "metadata": {"name": "leaky"},
                "spec": {"model": {"provider": "OpenAI", "model": "gpt-test",
                                   "baseUrl": stub.base_url(Wire::OpenAi),
                                   "apiKey": {"secretKeyRef": {"name": "model-key", "key": "api-key"}}}}
            })
            .to_string(),
        )
        .await?;
        f.apply(
            &json!({
                "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "StudioRun",
                "metadata": {"name": "canary"},
                "spec": {
                    "composition": {
                        "pattern": "Pipeline",
                        "nodes": [{"id": "draft", "kind": "LLMAgent", "model": "leaky",
                                   "instruction": "Draft it."}]
                    },
                    "input": "the notes",
                    "owner": ALICE
                }
            })
            .to_string(),
        )
        .await?;
        let failed = f.wait_phase("canary", RunPhase::Failed).await?;
        // The key went where it belongs, and the refusal came back: the test can see a leak.
        let sent = stub.requests().iter().any(|r| {
            r.headers.get("authorization").map(String::as_str) == Some(&format!("Bearer {canary}"))
        });
        ensure!(sent, "the runner sent the key to the model");
        let error = failed.status.as_ref().and_then(|s| s.error.clone());
        ensure!(
            error.as_ref().is_some_and(|e| e.message.contains("401")),
            "the run says the model refused: {error:?}"
        );

        // Nowhere else: the run and the entry, every Event of the namespace, every container's
        // log (the runner's output, the operator's and the sidecar's), the stored trace.
        let mut places: Vec<(String, String)> = Vec::new();
        places.push(("the StudioRun".into(), serde_json::to_string(&f.runs().get("canary").await?)?));
        let entries: Api<orrery_crds::RegistryEntry> = f.ns.api(&f.admin);
        places.push(("the RegistryEntry".into(), serde_json::to_string(&entries.get("leaky").await?)?));
        let events: Api<k8s_openapi::api::core::v1::Event> = f.ns.api(&f.admin);
        for event in events.list(&Default::default()).await?.items {
            places.push((format!("Event {}", event.name_any()), serde_json::to_string(&event)?));
        }
        let logs = f.container_logs().await?;
        ensure!(
            logs.iter().any(|(_, c, _)| c == "runner") && logs.iter().any(|(_, c, _)| c == "sidecar"),
            "the runner's and the sidecar's logs are read: {:?}",
            logs.iter().map(|(p, c, _)| format!("{p}/{c}")).collect::<Vec<_>>()
        );
        for (pod, container, text) in logs {
            places.push((format!("the log of {pod}/{container}"), text));
        }
        let (status, body) = api_call(
            reqwest::Method::GET,
            format!("{}/api/v1/runs/{ns}/canary/events", f.sidecar_url),
            &token(f.env, ALICE)?,
            None,
        )
        .await?;
        ensure!(status.is_success(), "the stored trace: {status} {body}");
        ensure!(
            body["events"].as_array().is_some_and(|e| !e.is_empty()),
            "the stored trace has events: {body}"
        );
        places.push(("the stored trace".into(), body.to_string()));
        let leaks: Vec<&str> = places
            .iter()
            .filter(|(_, text)| text.contains(&canary))
            .map(|(what, _)| what.as_str())
            .collect();
        ensure!(leaks.is_empty(), "the canary key leaked into {leaks:?}");
        Ok(())
    })
    .await
}

/// A number for a test's own canary.
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

/// An MCP server's stand-in in front of the demo fleet's tools: it passes every request on,
/// except a `tools/call`, which it counts and never answers (a call the remote is still
/// working on).
struct HeldCalls {
    upstream: String,
    http: reqwest::Client,
    calls: std::sync::atomic::AtomicUsize,
}

async fn pass_or_hold(
    axum::extract::State(held): axum::extract::State<std::sync::Arc<HeldCalls>>,
    request: axum::extract::Request,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 1 << 20).await else {
        return axum::http::StatusCode::BAD_REQUEST.into_response();
    };
    if body.windows(12).any(|w| w == b"\"tools/call\"") {
        held.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::future::pending::<()>().await;
    }
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut forward = held
        .http
        .request(parts.method.clone(), format!("{}{path}", held.upstream))
        .body(body);
    for (name, value) in &parts.headers {
        if name != axum::http::header::HOST && name != axum::http::header::CONTENT_LENGTH {
            forward = forward.header(name, value);
        }
    }
    match forward.send().await {
        Ok(answer) => {
            let mut response = axum::response::Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                if name != axum::http::header::CONTENT_LENGTH
                    && name != axum::http::header::TRANSFER_ENCODING
                {
                    response = response.header(name, value);
                }
            }
            response
                .body(axum::body::Body::from_stream(answer.bytes_stream()))
                .unwrap_or_else(|_| axum::http::StatusCode::BAD_GATEWAY.into_response())
        }
        Err(_) => axum::http::StatusCode::BAD_GATEWAY.into_response(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_killed_while_a_tool_call_is_out_fails_its_run_and_the_call_is_never_made_again_fault_9()
-> Result<()> {
    use orrery_runner::demo::{FleetConfig, start_fleet};
    let fleet = start_fleet(FleetConfig::ephemeral()).await?;
    let held = std::sync::Arc::new(HeldCalls {
        upstream: format!("http://{}", fleet.tools_addr()),
        http: reqwest::Client::new(),
        calls: std::sync::atomic::AtomicUsize::new(0),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let server = tokio::spawn(
        axum::serve(
            listener,
            axum::Router::new()
                .fallback(pass_or_hold)
                .with_state(held.clone()),
        )
        .into_future(),
    );
    let studio = chart("run-remote", &[]).await?;
    let result = Studio::test(studio, async |f| {
        f.apply(&documents(&[
            json!({
                "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "RegistryEntry",
                "metadata": {"name": "held-tools"},
                "spec": {"mcp": {"url": url, "tools": ["search_articles"],
                                 "readOnly": ["search_articles"]}}
            })
            .to_string(),
            scripted_model(
                "researcher",
                json!({"research": [
                    {"toolCalls": [{"name": "mcp_held_tools_search_articles",
                                    "arguments": {"query": "{{input}}", "limit": 3}}]},
                    {"reply": "notes: {{tool_results}}"}
                ]}),
            ),
        ]))
        .await?;
        // The run waits for its entries to be probed Ready (the probe's calls pass through).
        f.apply(
            &json!({
                "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "StudioRun",
                "metadata": {"name": "calling"},
                "spec": {
                    "composition": {
                        "pattern": "Pipeline",
                        "budgets": {"timeoutSeconds": 600},
                        "nodes": [{"id": "research", "kind": "LLMAgent", "model": "researcher",
                                   "instruction": "Look it up.",
                                   "tools": ["mcp:held-tools.search_articles"]}]
                    },
                    "input": "Kafka consumer lag",
                    "owner": "jane@example.com"
                }
            })
            .to_string(),
        )
        .await?;
        // The runner's call is out at the remote, unanswered; the runner is killed there.
        eventually(RUN_TIMEOUT, || async {
            let calls = held.calls.load(std::sync::atomic::Ordering::SeqCst);
            ensure!(calls >= 1, "no tool call has reached the remote yet");
            Ok(())
        })
        .await?;
        f.kill_container("calling-runner", "runner").await?;
        let failed = f.wait_phase("calling", RunPhase::Failed).await?;
        assert_eq!(
            condition_reason(&failed, "Succeeded").as_deref(),
            Some("RunnerCrashed")
        );
        // Never replayed: no second pod, and the remote saw the call once.
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        let pods = f.runner_pods(&failed).await?;
        ensure!(pods.len() == 1, "{} runner pods", pods.len());
        let calls = held.calls.load(std::sync::atomic::Ordering::SeqCst);
        ensure!(calls == 1, "the remote saw the tool call {calls} times");
        ensure!(
            f.runs().get("calling").await?.status.and_then(|s| s.phase) == Some(RunPhase::Failed),
            "the failed run changed"
        );
        Ok(())
    })
    .await;
    server.abort();
    fleet.shutdown().await?;
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_killed_mid_run_and_started_again_creates_no_second_pod_and_records_the_outcome()
-> Result<()> {
    // The controllers in-process (a task the test aborts), as the operator's ServiceAccount
    // bound to the chart's RBAC; the runners run as processes of the dev node and post to the
    // test binary's sidecar.
    let studio = Studio::start(StudioOptions {
        prefix: "run-restart",
        sidecar_url: &sidecar_fixture::shared()?.url,
        manifests: &scripted(),
        users: &[],
        policies: false,
        configure: &|_| {},
    })
    .await?;
    Studio::test(studio, async |f| {
        f.apply(&inline_run("steady", "brief", "jane@example.com"))
            .await?;
        let running = f.wait_phase("steady", RunPhase::Running).await?;
        let first = f.runner_pods(&running).await?;
        ensure!(first.len() == 1, "one pod before the crash");
        f.kill_operator().await?;
        ensure!(
            phase_of(Some(&f.runs().get("steady").await?)) == Some(RunPhase::Running),
            "the run was still running when the operator died"
        );
        // As if it had died between creating the pod and recording it: the status forgets
        // the pod and the composition; the next operator finds both from the children.
        let forget = json!({"status": {"runnerPod": null, "composition": null}});
        f.runs()
            .patch_status("steady", &PatchParams::default(), &Patch::Merge(&forget))
            .await?;
        // The run ends while no operator runs; the next one reads the outcome from the pod.
        let pods = f.pods();
        wait_for(
            &pods,
            "steady-runner",
            "the pod to end",
            RUN_TIMEOUT,
            |p: Option<&Pod>| {
                p.and_then(|p| p.status.as_ref())
                    .and_then(|s| s.phase.as_deref())
                    == Some("Succeeded")
            },
        )
        .await?;
        f.start_operator().await?;
        let done = f.wait_phase("steady", RunPhase::Succeeded).await?;
        let after = f.runner_pods(&done).await?;
        assert_eq!(after.len(), 1, "no second pod");
        assert_eq!(after[0].uid(), first[0].uid(), "the same pod");
        let status = done.status.context("status")?;
        assert_eq!(status.runner_pod.as_deref(), Some("steady-runner"));
        assert_eq!(
            status.composition.map(|c| c.name).as_deref(),
            Some("inline"),
            "the composition it ran, read back from its plan Secret"
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_owner_limit_a_run_is_queued_and_starts_when_a_slot_frees() -> Result<()> {
    let studio = chart(
        "run-queue",
        &["config.runLimits.maxConcurrentRunsPerOwner=1"],
    )
    .await?;
    Studio::test(studio, async |f| {
        // The slot is held until the test frees it (a ten-minute turn), whatever the speed of
        // the machine.
        f.apply(&inline_run("first", "slow", "jane@example.com"))
            .await?;
        f.wait_phase("first", RunPhase::Running).await?;
        f.apply(&inline_run("second", "scripted", "jane@example.com"))
            .await?;
        // Another owner is not held by jane's limit.
        f.apply(&inline_run("other", "scripted", "raj@example.com"))
            .await?;
        let queued = f.wait_reason("second", "Queued").await?;
        let message = queued
            .status
            .as_ref()
            .and_then(|s| find(&s.conditions, "Succeeded"))
            .map(|c| c.message.clone())
            .unwrap_or_default();
        assert!(
            message.starts_with("queued at position 1: owner jane@example.com has 1 of 1"),
            "{message}"
        );
        f.wait_phase("other", RunPhase::Succeeded).await?;
        ensure!(
            f.runner_pods(&queued).await?.is_empty(),
            "no pod for second while first holds the slot"
        );
        ensure!(
            phase_of(Some(&f.runs().get("second").await?)) == Some(RunPhase::Pending),
            "second still waits"
        );
        let patch = json!({"spec": {"cancel": true}});
        f.runs()
            .patch("first", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        f.wait_phase("first", RunPhase::Cancelled).await?;
        f.wait_phase("second", RunPhase::Succeeded).await?;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_run_is_deleted_with_its_children_after_its_ttl() -> Result<()> {
    let studio = chart("run-ttl", &["config.ttlSecondsAfterFinished=3"]).await?;
    Studio::test(studio, async |f| {
        f.apply(&inline_run("brief-life", "scripted", "jane@example.com"))
            .await?;
        let done = f.wait_phase("brief-life", RunPhase::Succeeded).await?;
        wait_deleted(&f.runs(), "brief-life", TIMEOUT).await?;
        // The garbage collector takes the children.
        let secrets: Api<Secret> = f.ns.api(&f.admin);
        wait_deleted(&secrets, "brief-life-plan", GC_TIMEOUT).await?;
        eventually(GC_TIMEOUT, || async {
            if f.runner_pods(&done).await?.is_empty() {
                Ok(())
            } else {
                bail!("the runner pod is still there")
            }
        })
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_needing_a_person_waits_for_them_and_a_cancel_settles_the_approval_rules_4_14_10_15()
-> Result<()> {
    let studio = chart("run-relay", &[]).await?;
    Studio::test(studio, async |f| {
        let mut spec = pipeline("scripted");
        spec["nodes"]
            .as_array_mut()
            .context("nodes")?
            .push(json!({"id": "review", "kind": "HumanApproval", "prompt": "Ship it?"}));
        spec["edges"]
            .as_array_mut()
            .context("edges")?
            .push(json!({"from": "polish", "to": "review"}));
        let run = json!({
            "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "StudioRun",
            "metadata": {"name": "reviewed"},
            "spec": {"composition": spec, "input": "x", "owner": "jane@example.com"}
        });
        f.apply(&run.to_string()).await?;
        // Nobody decides: the runner asked through the sidecar's relay, and the run waits for
        // a person with the approval pending in its status.
        let waiting = wait_for(
            &f.runs(),
            "reviewed",
            "a pending approval",
            RUN_TIMEOUT,
            |r: Option<&StudioRun>| {
                r.and_then(|r| r.status.as_ref()).is_some_and(|s| {
                    s.phase == Some(RunPhase::AwaitingApproval) && !s.pending_approvals.is_empty()
                })
            },
        )
        .await?
        .context("the run is gone")?;
        let status = waiting.status.as_ref().context("status")?;
        let pending = &status.pending_approvals;
        ensure!(
            pending.len() == 1 && pending[0].id == "approval-1" && pending[0].node == "review",
            "{pending:?}"
        );
        let uid = waiting.uid().context("uid")?;
        ensure!(
            pending[0].digest.len() == 64
                && pending[0].digest.chars().all(|c| c.is_ascii_hexdigit()),
            "the digest (bound to run {uid}): {}",
            pending[0].digest
        );
        ensure!(f.runner_pods(&waiting).await?.len() == 1, "its pod runs");
        // A cancel ends it, and the runner settles the approval cancelled first: the sidecar
        // drops it from the status.
        let patch = json!({"spec": {"cancel": true}});
        f.runs()
            .patch("reviewed", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        let done = f.wait_phase("reviewed", RunPhase::Cancelled).await?;
        assert_eq!(
            condition_reason(&done, "Succeeded").as_deref(),
            Some("Cancelled")
        );
        wait_for(
            &f.runs(),
            "reviewed",
            "no pending approval",
            RUN_TIMEOUT,
            |r: Option<&StudioRun>| {
                r.and_then(|r| r.status.as_ref())
                    .is_some_and(|s| s.pending_approvals.is_empty())
            },
        )
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_over_the_daily_token_budget_is_refused_and_another_owner_is_not() -> Result<()> {
    let studio = chart(
        "run-budget",
        &["config.runLimits.dailyTokenBudgetPerOwner=1000"],
    )
    .await?;
    Studio::test(studio, async |f| {
        f.apply(&scripted_model(
            "costly",
            json!({"draft": [{"reply": "expensive",
                              "usage": {"inputTokens": 800, "outputTokens": 400}}]}),
        ))
        .await?;
        f.apply(&inline_run("spend", "costly", "jane@example.com"))
            .await?;
        let spent = f.wait_phase("spend", RunPhase::Succeeded).await?;
        let tokens = spent
            .status
            .as_ref()
            .and_then(|s| s.totals.as_ref())
            .map(|t| t.tokens)
            .unwrap_or_default();
        ensure!(tokens >= 1200, "the run used {tokens} tokens");
        // The ledger for the day is the sum of the owner's runs' totals: jane is over.
        f.apply(&inline_run("again", "scripted", "jane@example.com"))
            .await?;
        let refused = f.wait_phase("again", RunPhase::Failed).await?;
        assert_eq!(
            condition_reason(&refused, "Succeeded").as_deref(),
            Some("DailyBudgetExceeded")
        );
        let message = refused
            .status
            .as_ref()
            .and_then(|s| s.error.as_ref())
            .map(|e| e.message.clone())
            .unwrap_or_default();
        assert!(
            message.starts_with(&format!(
                "owner jane@example.com's runs used {tokens} of 1000 tokens today"
            )),
            "{message}"
        );
        assert!(f.runner_pods(&refused).await?.is_empty());
        f.apply(&inline_run("fresh", "scripted", "raj@example.com"))
            .await?;
        f.wait_phase("fresh", RunPhase::Succeeded).await?;
        Ok(())
    })
    .await
}

/// A ValidatingAdmissionPolicy (cluster-scoped: named after the namespace, deleted by the
/// test) that refuses runner pods in `namespace` as Forbidden, like a quota or a site policy.
fn deny_runner_pods(namespace: &str) -> String {
    format!(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: "pause-{namespace}"}}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - {{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}}
  validations:
    - expression: "false"
      reason: Forbidden
      message: runner pods are paused in this namespace
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: "pause-{namespace}"}}
spec:
  policyName: "pause-{namespace}"
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {{kubernetes.io/metadata.name: "{namespace}"}}
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_pod_a_policy_forbids_waits_saying_so_and_starts_once_it_is_lifted()
-> Result<()> {
    // The operator's own pod first: the policy refuses every pod created in the namespace.
    let studio = chart("run-policy", &[]).await?;
    Studio::test(studio, async |f| {
        apply_yaml(&f.admin, None, &deny_runner_pods(&f.ns.name)).await?;
        let policy = format!("pause-{}", f.ns.name);
        let result = async {
            // The policy takes effect once the apiserver has loaded it: wait for a dry run.
            let probe: Pod = serde_json::from_value(json!({
                "metadata": {"name": "probe"},
                "spec": {"containers": [{"name": "c", "image": "orrery/podtest:e2e"}]}
            }))?;
            eventually(TIMEOUT, || async {
                let dry = kube::api::PostParams {
                    dry_run: true,
                    ..Default::default()
                };
                match f.pods().create(&dry, &probe).await {
                    Err(kube::Error::Api(s)) if s.code == 403 => Ok(()),
                    other => bail!("the policy is not in force yet: {other:?}"),
                }
            })
            .await?;
            f.apply(&inline_run("held", "scripted", "jane@example.com"))
                .await?;
            let held = f.wait_reason("held", "CreateRefused").await?;
            assert_eq!(phase_of(Some(&held)), Some(RunPhase::Pending));
            let message = held
                .status
                .as_ref()
                .and_then(|s| find(&s.conditions, "Succeeded"))
                .map(|c| c.message.clone())
                .unwrap_or_default();
            assert!(
                message.contains("forbidden") && message.contains("runner pods are paused"),
                "{message}"
            );
            kubectl(
                f.env,
                ADMIN,
                &["delete", "validatingadmissionpolicybinding", &policy],
            )?;
            f.wait_phase("held", RunPhase::Succeeded).await?;
            Ok(())
        }
        .await;
        let _ = kubectl(
            f.env,
            ADMIN,
            &[
                "delete",
                "--ignore-not-found",
                "validatingadmissionpolicybinding,validatingadmissionpolicy",
                &policy,
            ],
        );
        result
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_that_never_starts_fails_the_run_past_the_start_timeout_with_what_it_waited_on()
-> Result<()> {
    // No kubelet for this namespace: the runner pod is never scheduled. The chart's operator
    // lives in a namespace of its own, whose node runs only that namespace's pods.
    let operator_only = ChartNode {
        kubelet: Kubelet::OperatorOnly,
        ..ChartNode::default()
    };
    let studio = chart_on(
        operator_only,
        "run-stuck",
        &["runner.startTimeoutSeconds=10"],
    )
    .await?;
    Studio::test(studio, async |f| {
        f.apply(&inline_run("stuck", "scripted", "jane@example.com"))
            .await?;
        let failed = f.wait_phase("stuck", RunPhase::Failed).await?;
        assert_eq!(
            condition_reason(&failed, "Succeeded").as_deref(),
            Some("PodNotStarted")
        );
        let message = failed
            .status
            .as_ref()
            .and_then(|s| s.error.as_ref())
            .map(|e| e.message.clone())
            .unwrap_or_default();
        assert!(
            message.starts_with(
                "the runner pod stuck-runner did not start within 10s (runner.startTimeoutSeconds)"
            ),
            "{message}"
        );
        wait_deleted(&f.pods(), "stuck-runner", TIMEOUT).await?;
        Ok(())
    })
    .await
}
