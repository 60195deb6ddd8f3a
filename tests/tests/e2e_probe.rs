//! RegistryEntry resolution in sandboxed probe pods, on the real kube-apiserver with the pod
//! executor as kubelet: the demo fleet (in-process on loopback) behind two RegistryEntries;
//! the chart's operator (`Studio::install`: its pod and the probe and runner pods run from the
//! project's images as runc containers) creates a probe pod per entry, restricted like a runner
//! pod and behind its own NetworkPolicy; the `orrery probe` it runs reports through its
//! termination message and the entries become `Ready` with their pins; a card that changes is
//! found by the probe a person asks for (`studio.orrery.dev/reprobe`, rather than an hour's
//! interval) and is `PinChanged` with a message naming the change and the one command that
//! accepts it; that command makes the entry `Ready` again with the new digest.
//!
//! One test calls the reconciler directly (no controller, no kubelet) to check that a repeat
//! reconcile writes nothing and starts no second pod.
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use orrery_crds::StudioRun;
use orrery_crds::common::ConditionStatus;
use orrery_crds::registry::RegistryEntry;
use orrery_crds::run::RunPhase;
use orrery_operator::Config;
use orrery_operator::registry::probe::{ENTRY_UID_LABEL, PROBE_APP, probe_network_policy_name};
use orrery_operator::registry::status::{ACCEPT_PINS_ANNOTATION, REPROBE_ANNOTATION};
use orrery_operator::sandbox;
use orrery_runner::demo::{Fleet, FleetConfig, start_fleet};
use orrery_tests::harness::{
    TestNamespace, apply_yaml, ensure_crds, eventually, wait_for, wait_succeeded, workspace_root,
};
use orrery_tests::manifests::restart_fleet_with_another_card;
use orrery_tests::operator_identity::operator_client;
use orrery_tests::studio::{ChartStudioOptions, Studio};
use orrery_tests::testenv;
use serde_json::json;

/// Long enough for a probe pod to be created, run and recorded a few times over.
const PROBE_TIMEOUT: Duration = Duration::from_secs(90);

/// The example deployment config, with the local runner image (the direct-reconcile test).
fn config() -> Result<Config> {
    let path = workspace_root().join("examples/operator/config.yaml");
    let mut config = Config::load(&path.to_string_lossy()).map_err(|e| anyhow::anyhow!("{e}"))?;
    config.runner.image = "orrery/runner:dev".into();
    config.runner.image_pull_policy = "Never".into();
    Ok(config)
}

fn entries(fleet: &Fleet) -> Result<Vec<RegistryEntry>> {
    let tools = [
        "search_articles",
        "get_article",
        "convert_units",
        "current_time",
    ];
    let yaml = |v: serde_json::Value| -> Result<RegistryEntry> {
        serde_json::from_value(v).context("a RegistryEntry")
    };
    Ok(vec![
        yaml(json!({
            "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "RegistryEntry",
            "metadata": {"name": "demo-tools"},
            "spec": {"mcp": {"url": fleet.tools_url(), "tools": tools, "readOnly": tools}}
        }))?,
        yaml(json!({
            "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "RegistryEntry",
            "metadata": {"name": "demo-writer"},
            "spec": {"a2a": {"cardUrl": fleet.writer_card_url(), "skills": ["draft"]}}
        }))?,
        // The same agent, but its card must be signed (it is not): issue 27 §1, anchor 25.
        yaml(json!({
            "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "RegistryEntry",
            "metadata": {"name": "signed-writer"},
            "spec": {"a2a": {"cardUrl": fleet.writer_card_url(), "skills": ["draft"],
                "cardSignature": {"jwksConfigMapRef": {"name": "writer-keys", "key": "jwks.json"}}}}
        }))?,
    ])
}

/// A public key set the demo writer does not sign with (it signs with none).
const SIGNING_KEYS: &str = r#"{"keys": [{"kty": "EC", "crv": "P-256", "kid": "writer-2026", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#;

/// The message of `entry`'s `Ready` condition (empty without one).
fn ready_message(entry: &RegistryEntry) -> String {
    entry
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.r#type == "Ready"))
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

fn ready_reason(e: Option<&RegistryEntry>) -> Option<(ConditionStatus, String)> {
    e?.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.r#type == "Ready")
        .map(|c| (c.status, c.reason.clone()))
}

fn has_ready(
    status: ConditionStatus,
    reason: &'static str,
) -> impl Fn(Option<&RegistryEntry>) -> bool {
    move |e| ready_reason(e) == Some((status, reason.to_owned()))
}

/// Every probe pod the apiserver shows while the test runs (they are deleted once recorded).
fn record_pods(
    api: Api<Pod>,
) -> (
    Arc<Mutex<BTreeMap<String, Pod>>>,
    tokio::task::JoinHandle<()>,
) {
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    let task = tokio::spawn({
        let seen = seen.clone();
        async move {
            let config =
                watcher::Config::default().labels(&format!("app.kubernetes.io/name={PROBE_APP}"));
            let mut stream = watcher::watcher(api, config).boxed();
            while let Some(event) = stream.next().await {
                if let Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) = event
                    && let Ok(mut seen) = seen.lock()
                {
                    seen.insert(pod.name_any(), pod);
                }
            }
        }
    });
    (seen, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn entries_are_pinned_by_probe_pods_the_critic_loop_runs_on_them_and_a_changed_card_refuses_runs_until_accepted()
-> Result<()> {
    let studio = Studio::install(ChartStudioOptions {
        prefix: "probe",
        prelude: "",
        manifests: "",
        users: &[],
        policies: false,
        values: &[],
    })
    .await?;
    let fleet = start_fleet(FleetConfig::ephemeral()).await;
    let result = match fleet {
        Ok(fleet) => {
            std::panic::AssertUnwindSafe(scenario(&studio.admin, &studio.ns, fleet))
                .catch_unwind()
                .await
        }
        Err(e) => Ok(Err(anyhow::Error::from(e))),
    };
    let stopped = studio.shutdown().await;
    match result {
        Ok(result) => result.and(stopped),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Asks for a probe of entry `name` now (`studio.orrery.dev/reprobe` set to `value`).
async fn reprobe(registry: &Api<RegistryEntry>, name: &str, value: &str) -> Result<()> {
    let patch = json!({"metadata": {"annotations": {REPROBE_ANNOTATION: value}}});
    registry
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn scenario(client: &Client, ns: &TestNamespace, fleet: Fleet) -> Result<()> {
    let registry: Api<RegistryEntry> = ns.api(client);
    let pods: Api<Pod> = ns.api(client);
    let (seen, recorder) = record_pods(pods.clone());
    for entry in entries(&fleet)? {
        registry.create(&PostParams::default(), &entry).await?;
    }

    // Both entries Ready with their pins, probed in pods.
    let tools = wait_for(
        &registry,
        "demo-tools",
        "Ready=True (Probed)",
        PROBE_TIMEOUT,
        has_ready(ConditionStatus::True, "Probed"),
    )
    .await?
    .context("demo-tools")?;
    let status = tools.status.clone().context("status")?;
    let names: Vec<&str> = status.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "convert_units",
            "current_time",
            "get_article",
            "search_articles"
        ]
    );
    assert!(status.tools.iter().all(|t| t.read_only_hint == Some(true)));
    assert!(
        status
            .conditions
            .iter()
            .any(|c| c.r#type == "Pinned" && c.status == ConditionStatus::True),
        "{:?}",
        status.conditions
    );
    let writer = wait_for(
        &registry,
        "demo-writer",
        "Ready=True (Probed)",
        PROBE_TIMEOUT,
        has_ready(ConditionStatus::True, "Probed"),
    )
    .await?
    .context("demo-writer")?;
    // An entry that requires a signed card, its keys in a ConfigMap: refused while the
    // ConfigMap is missing, naming it; then not Ready while the card carries no signature.
    let missing_keys = wait_for(
        &registry,
        "signed-writer",
        "Ready=False (SpecRefused) for its missing ConfigMap",
        PROBE_TIMEOUT,
        has_ready(ConditionStatus::False, "SpecRefused"),
    )
    .await?
    .context("signed-writer")?;
    let message = ready_message(&missing_keys);
    ensure!(
        message.contains("spec.a2a.cardSignature.jwksConfigMapRef")
            && message.contains("ConfigMap \"writer-keys\" does not exist"),
        "{message}"
    );
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> = ns.api(client);
    let keys: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "writer-keys"}, "data": {"jwks.json": SIGNING_KEYS}
    }))?;
    configmaps.create(&PostParams::default(), &keys).await?;
    reprobe(&registry, "signed-writer", "keys-created").await?;
    let signed = wait_for(
        &registry,
        "signed-writer",
        "Ready=False (ProbeFailed)",
        PROBE_TIMEOUT,
        has_ready(ConditionStatus::False, "ProbeFailed"),
    )
    .await?
    .context("signed-writer")?;
    let refused = ready_message(&signed);
    assert!(
        refused.contains("the card of remote agent 'signed-writer' was refused: its signature: the entry requires a signed card"),
        "{refused}"
    );
    let first = writer.status.clone().context("status")?;
    let first_digest = first.card_sha256.clone().context("a card digest")?;
    assert_eq!(first.skills, ["draft"]);
    assert_eq!(first.probed_generation, writer.metadata.generation);

    // The critic-loop example runs on the pinned fleet: its StudioRun ends Succeeded with the
    // tools and the remote agent called, and its NetworkPolicy opens nothing but DNS and the
    // sidecar (every endpoint is loopback, which is inside the pod).
    for file in [
        "examples/registry/scripted.yaml",
        "examples/compositions/critic-loop.yaml",
        "examples/runs/critic-loop-run.yaml",
    ] {
        let text = std::fs::read_to_string(workspace_root().join(file))?;
        apply_yaml(client, Some(&ns.name), &text).await?;
    }
    let runs: Api<StudioRun> = ns.api(client);
    let done = wait_succeeded(&runs, "release-notes-1", PROBE_TIMEOUT).await?;
    let status = done.status.clone().context("run status")?;
    let totals = status.totals.clone().context("totals")?;
    assert!(totals.tool_calls >= 1, "{totals:?}");
    assert!(totals.remote_calls >= 1, "{totals:?}");
    let ran = status.composition.clone().context("composition")?;
    assert_eq!((ran.name.as_str(), ran.revision), ("critic-loop", Some(1)));
    let policies: Api<NetworkPolicy> = ns.api(client);
    let policy = serde_json::to_value(policies.get("release-notes-1-egress").await?)?;
    assert_eq!(
        policy["spec"]["egress"].as_array().map(Vec::len),
        Some(2),
        "DNS and the sidecar: {policy}"
    );

    // The probe pods: restricted like a runner pod, owned by their entry, running `orrery probe`.
    for entry in [&tools, &writer] {
        let uid = entry.uid().context("uid")?;
        // The watcher may have started after an entry's first pod was gone: a probe asked for
        // now shows one.
        let seen_yet = seen.lock().is_ok_and(|s| {
            s.values()
                .any(|p| p.labels().get(ENTRY_UID_LABEL) == Some(&uid))
        });
        if !seen_yet {
            reprobe(&registry, &entry.name_any(), "see-a-pod").await?;
        }
        let pod = eventually(PROBE_TIMEOUT, || {
            let found = seen.lock().ok().and_then(|s| {
                s.values()
                    .find(|p| p.labels().get(ENTRY_UID_LABEL) == Some(&uid))
                    .cloned()
            });
            async move { found.context("no probe pod seen yet") }
        })
        .await
        .with_context(|| format!("no probe pod was seen for {}", entry.name_any()))?;
        let pod = &pod;
        let spec = pod.spec.as_ref().context("pod spec")?;
        assert_eq!(spec.security_context, Some(sandbox::pod_security_context()));
        let container = &spec.containers[0];
        assert_eq!(
            container.security_context,
            Some(sandbox::container_security_context())
        );
        assert_eq!(
            container.image.as_deref(),
            Some("localhost/orrery/runner:dev"),
            "the chart's runner image"
        );
        assert_eq!(
            container
                .args
                .as_ref()
                .and_then(|a| a.first())
                .map(String::as_str),
            Some("probe")
        );
        assert_eq!(spec.automount_service_account_token, Some(false));
        assert_eq!(spec.enable_service_links, Some(false));
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert_eq!(spec.active_deadline_seconds, Some(120));
        let owner = pod.owner_references().first().context("owner")?;
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("RegistryEntry", uid.as_str(), Some(true))
        );
        // Its NetworkPolicy: this entry's probe pods only, no ingress, only DNS (a loopback
        // endpoint is inside the pod).
        let policies: Api<NetworkPolicy> = ns.api(client);
        let np = policies
            .get(&probe_network_policy_name(&entry.name_any()))
            .await?;
        let np = serde_json::to_value(&np)?;
        assert_eq!(
            np["spec"]["podSelector"],
            json!({"matchLabels": {ENTRY_UID_LABEL: uid}})
        );
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert!(np["spec"].get("ingress").is_none(), "{np}");
        assert_eq!(
            np["spec"]["egress"],
            json!([{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                             "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}])
        );
    }

    // The writer comes back with another card (it now asks for a bearer token); a person asks
    // for a probe now rather than waiting for the interval's: PinChanged.
    let fleet = restart_fleet_with_another_card(fleet, "s3cret").await?;
    reprobe(&registry, "demo-writer", "after-the-change").await?;
    let changed = wait_for(
        &registry,
        "demo-writer",
        "Ready=False (PinChanged)",
        PROBE_TIMEOUT,
        has_ready(ConditionStatus::False, "PinChanged"),
    )
    .await?
    .context("demo-writer")?;
    let status = changed.status.clone().context("status")?;
    let message = status
        .conditions
        .iter()
        .find(|c| c.r#type == "Ready")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    let proposed = status.proposed_pins.clone().context("proposed pins")?;
    let command = format!(
        "kubectl annotate registryentry demo-writer -n {} {ACCEPT_PINS_ANNOTATION}={} --overwrite",
        ns.name, proposed.digest
    );
    assert!(
        message.contains(&format!("card digest {}", &first_digest[..12])),
        "{message}"
    );
    assert!(message.contains(&command), "{message}");
    assert_eq!(
        status.card_sha256.as_deref(),
        Some(first_digest.as_str()),
        "the old pin holds"
    );
    let new_digest = proposed
        .card_sha256
        .clone()
        .context("a proposed card digest")?;
    assert_ne!(new_digest, first_digest);
    // The Event follows the status write that it announces.
    let events: Api<Event> = ns.api(client);
    eventually(PROBE_TIMEOUT, || {
        let events = events.clone();
        async move {
            let found = events
                .list(&ListParams::default())
                .await?
                .items
                .into_iter()
                .any(|e| {
                    e.reason.as_deref() == Some("PinChanged")
                        && e.regarding.as_ref().and_then(|r| r.name.as_deref())
                            == Some("demo-writer")
                });
            ensure!(found, "no PinChanged Event for demo-writer yet");
            Ok(())
        }
    })
    .await?;

    // While the change waits for a person, a run that uses the entry is refused, naming it.
    let mut refused_run: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(
        workspace_root().join("examples/runs/critic-loop-run.yaml"),
    )?)?;
    refused_run["metadata"]["name"] = "during-the-change".into();
    apply_yaml(
        client,
        Some(&ns.name),
        &serde_yaml::to_string(&refused_run)?,
    )
    .await?;
    let refused = wait_for(
        &runs,
        "during-the-change",
        "Failed",
        PROBE_TIMEOUT,
        |r: Option<&StudioRun>| {
            r.and_then(|r| r.status.as_ref()).and_then(|s| s.phase) == Some(RunPhase::Failed)
        },
    )
    .await?
    .context("during-the-change")?;
    let status = refused.status.context("status")?;
    let reason = status
        .conditions
        .iter()
        .find(|c| c.r#type == "Succeeded")
        .map(|c| c.reason.clone());
    assert_eq!(reason.as_deref(), Some("EntryNotReady"));
    let error = status.error.map(|e| e.message).unwrap_or_default();
    assert!(
        error.contains("RegistryEntry demo-writer is not Ready (PinChanged"),
        "{error}"
    );

    // The one command, as a patch: Ready again, pinned to the new digest.
    let patch = json!({"metadata": {"annotations": {ACCEPT_PINS_ANNOTATION: proposed.digest}}});
    registry
        .patch(
            "demo-writer",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    let accepted = wait_for(
        &registry,
        "demo-writer",
        "Ready=True after acceptance",
        PROBE_TIMEOUT,
        has_ready(ConditionStatus::True, "Probed"),
    )
    .await?
    .context("demo-writer")?;
    let status = accepted.status.context("status")?;
    assert_eq!(status.card_sha256.as_deref(), Some(new_digest.as_str()));
    assert!(status.proposed_pins.is_none());

    // Recorded probe pods are deleted: more probes than entries ran, yet each entry has at most
    // its current pod and one being deleted.
    recorder.abort();
    let probed = seen.lock().map(|s| s.len()).unwrap_or(0);
    let left = pods
        .list(&ListParams::default().labels(&format!("app.kubernetes.io/name={PROBE_APP}")))
        .await?
        .items
        .len();
    ensure!(probed > 2, "more probes than entries ran: {probed}");
    if left > 4 {
        bail!("{left} probe pods are left of {probed}: recorded pods are not deleted");
    }
    fleet.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn a_repeat_reconcile_of_an_entry_being_probed_writes_nothing_and_starts_no_second_pod()
-> Result<()> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "probe-idem").await?;
    let client = env.admin().await?;
    // No pod executor and no controller: the reconciler is called directly, and the probe pod
    // it creates never runs.
    let ctx = Arc::new(orrery_operator::controller::Context::new(
        operator_client(env, &ns.name).await?,
        Arc::new(config()?),
        Arc::new(orrery_operator::metrics::Metrics::new()),
    ));
    let registry: Api<RegistryEntry> = ns.api(&client);
    let pods: Api<Pod> = ns.api(&client);
    let entry: RegistryEntry = serde_json::from_value(json!({
        "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "RegistryEntry",
        "metadata": {"name": "demo-writer"},
        "spec": {"a2a": {"cardUrl": "http://127.0.0.1:7802/.well-known/agent-card.json", "skills": ["draft"]}}
    }))?;
    registry.create(&PostParams::default(), &entry).await?;
    let reconcile = |e: RegistryEntry| {
        orrery_operator::registry::reconcile::reconcile(Arc::new(e), ctx.clone())
    };
    reconcile(registry.get("demo-writer").await?).await?;
    let first = registry.get("demo-writer").await?;
    ensure!(
        ready_reason(Some(&first)) == Some((ConditionStatus::Unknown, "Probing".to_owned())),
        "{:?}",
        first.status
    );
    let probes = ListParams::default().labels(&format!("app.kubernetes.io/name={PROBE_APP}"));
    let created = pods.list(&probes).await?.items;
    assert_eq!(created.len(), 1, "one probe pod");
    for _ in 0..2 {
        reconcile(registry.get("demo-writer").await?).await?;
    }
    let again = registry.get("demo-writer").await?;
    assert_eq!(
        again.resource_version(),
        first.resource_version(),
        "nothing written"
    );
    let after: Vec<String> = pods
        .list(&probes)
        .await?
        .items
        .iter()
        .map(|p| p.name_any())
        .collect();
    assert_eq!(
        after,
        [created[0].name_any()],
        "the same pod, no second one"
    );
    Ok(())
}
