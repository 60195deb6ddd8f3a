//! The operator's Composition and RegistryEntry controllers against the real kube-apiserver:
//! the examples become `Valid` with a revision each, a broken Composition carries the seeds'
//! codes, a RegistryEntry change re-validates the Compositions that use it, and a reconcile
//! that finds nothing to do writes nothing.
//!
//! The examples, a broken Composition and a deleted model entry run against the chart-installed
//! operator (`helm install` serving the test's namespace, its pod a runc container on a dev node
//! of the test's own, with the example config's model rules as values). The examples test checks
//! the status an entry has before any probe pod runs, so its release lives in a namespace of its
//! own and its node runs that namespace's pods only. The last two tests call one reconcile at a
//! time, without a controller: the reconcilers act as the operator's ServiceAccount with exactly
//! the rules of the chart's RBAC (the test's namespace bound as a tenant namespace), never as
//! admin, so a rule missing from the manifests fails them. The tests' own setup and assertions
//! use the admin client.
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client, ResourceExt};
use orrery_crds::registry::RegistryEntry;
use orrery_crds::{Composition, CompositionStatus};
use orrery_operator::Config;
use orrery_operator::controller::Context;
use orrery_operator::metrics::Metrics;
use orrery_tests::harness::{
    TIMEOUT, TestNamespace, apply_yaml, ensure_crds, eventually, has_condition, kubectl_ok,
    wait_for, workspace_root,
};
use orrery_tests::operator_identity::operator_client;
use orrery_tests::pod_executor::PodExecutor;
use orrery_tests::studio::{ChartOperator, container_executor};
use orrery_tests::testenv::{self, ADMIN, TestEnv};

/// The chart's operator serving `ns`, with `examples/operator/config.yaml`'s model rules, its pod
/// on a container-mode node of the test's own.
struct Installed {
    exec: PodExecutor,
    operator: ChartOperator,
}

impl Installed {
    async fn start(env: &'static TestEnv, ns: &str, admin: &Client) -> Result<Installed> {
        Installed::serving(env, ns, ns, admin).await
    }

    /// The release in `release_ns` serving `served`, its node running `release_ns`'s pods only.
    async fn serving(
        env: &'static TestEnv,
        release_ns: &str,
        served: &str,
        admin: &Client,
    ) -> Result<Installed> {
        let exec = container_executor(env, admin, release_ns).await?;
        let values = [
            "config.allowedModels={scripted,gpt}",
            "config.defaultModel=scripted",
        ];
        match ChartOperator::install_serving(env, release_ns, served, false, &values).await {
            Ok(operator) => Ok(Installed { exec, operator }),
            Err(e) => {
                let _ = exec.shutdown().await;
                Err(e)
            }
        }
    }

    async fn stop(self) -> Result<()> {
        let uninstalled = self.operator.stop().await;
        self.exec.shutdown().await?;
        uninstalled
    }
}

/// A reconcilers' context acting as the operator's ServiceAccount, `namespace` bound as a
/// tenant namespace.
async fn operator_context(env: &TestEnv, namespace: &str) -> Result<Arc<Context>> {
    let client = operator_client(env, namespace).await?;
    Ok(Arc::new(Context::new(
        client,
        Arc::new(example_config()?),
        Arc::new(Metrics::new()),
    )))
}

fn example_config() -> Result<Config> {
    let path = workspace_root().join("examples/operator/config.yaml");
    Config::load(&path.to_string_lossy()).map_err(|e| anyhow::anyhow!("{e}"))
}

fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    out.retain(|p| p.extension().is_some_and(|e| e == "yaml"));
    out.sort();
    Ok(out)
}

/// Applies every example under `examples/<dir>/` into `namespace`; returns the object names.
async fn apply_examples(client: &Client, namespace: &str, dir: &str) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for file in yaml_files(&workspace_root().join("examples").join(dir))? {
        let text = std::fs::read_to_string(&file)?;
        for obj in apply_yaml(client, Some(namespace), &text)
            .await
            .with_context(|| format!("applying {}", file.display()))?
        {
            names.push(obj.name_any());
        }
    }
    Ok(names)
}

async fn setup(prefix: &str) -> Result<(&'static TestEnv, TestNamespace, Client)> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, prefix).await?;
    let client = env.admin().await?;
    Ok((env, ns, client))
}

fn status(c: &Composition) -> Result<&CompositionStatus> {
    c.status
        .as_ref()
        .with_context(|| format!("{} has no status", c.name_any()))
}

fn codes(c: &Composition) -> BTreeSet<String> {
    c.status
        .iter()
        .flat_map(|s| s.errors.iter().map(|e| e.code.clone()))
        .collect()
}

async fn wait_valid(api: &Api<Composition>, name: &str, want: &str) -> Result<Composition> {
    wait_for(
        api,
        name,
        &format!("Valid={want}"),
        TIMEOUT,
        has_condition::<Composition>("Valid", want),
    )
    .await?
    .with_context(|| format!("{name} is gone"))
}

#[tokio::test]
async fn every_example_composition_becomes_valid_with_its_revision_and_entries_get_their_static_status()
-> Result<()> {
    let (env, ns, client) = setup("op-examples").await?;
    // The operator's release in a namespace of its own, on a node that runs that namespace's
    // pods only: the probe pods it makes here never run, so the entries keep their static status.
    let home = TestNamespace::create(env, "op-examples-home").await?;
    let operator = Installed::serving(env, &home.name, &ns.name, &client).await?;
    let entries = apply_examples(&client, &ns.name, "registry").await?;
    let compositions = apply_examples(&client, &ns.name, "compositions").await?;
    ensure!(compositions.len() >= 9, "{compositions:?}");
    let api: Api<Composition> = ns.api(&client);
    let revisions: Api<ControllerRevision> = ns.api(&client);
    for name in &compositions {
        let c = wait_valid(&api, name, "True").await?;
        let generation = c.metadata.generation;
        let s = status(&c)?;
        assert_eq!(s.observed_generation, generation, "{name}");
        assert!(s.errors.is_empty(), "{name}: {:?}", s.errors);
        assert_eq!(
            s.revision, generation,
            "{name}: the revision is the generation"
        );
        assert_eq!(s.spec_digest.as_ref().map(String::len), Some(64), "{name}");
        assert!(
            has_condition::<Composition>("Ready", "True")(Some(&c)),
            "{name}: {s:?}"
        );
        let revision = revisions
            .get(&format!("{name}-r{}", generation.unwrap_or_default()))
            .await
            .with_context(|| format!("the ControllerRevision of {name}"))?;
        let owner = revision
            .metadata
            .owner_references
            .as_deref()
            .and_then(<[_]>::first)
            .context("the revision has an owner")?;
        assert_eq!(
            (
                owner.kind.as_str(),
                owner.name.as_str(),
                Some(owner.uid.clone())
            ),
            ("Composition", name.as_str(), c.uid()),
            "{name}"
        );
        assert_eq!(
            revision.data.map(|d| d.0),
            Some(serde_json::to_value(&c.spec)?),
            "{name}: the revision holds the spec"
        );
    }

    // Valid was set once per Composition, so each has exactly one Valid Event.
    let events: Api<Event> = ns.api(&client);
    let per_composition = eventually(TIMEOUT, || async {
        let list = events.list(&ListParams::default()).await?;
        let valid: Vec<String> = list
            .items
            .iter()
            .filter(|e| e.reason.as_deref() == Some("Valid"))
            .filter_map(|e| e.regarding.as_ref().and_then(|r| r.name.clone()))
            .collect();
        ensure!(
            compositions.iter().all(|c| valid.contains(c)),
            "Valid Events so far: {valid:?}"
        );
        Ok(valid)
    })
    .await?;
    for name in &compositions {
        let n = per_composition.iter().filter(|v| *v == name).count();
        assert_eq!(n, 1, "{name}: one Valid Event, got {n}");
    }

    // Static checks only (no pod executor runs here, so probe pods never run): the Scripted
    // model needs none and is Ready; gpt names a Secret that does not exist and is refused; the
    // rest wait for their probe (tests/tests/e2e_probe.rs runs them).
    let registry: Api<RegistryEntry> = ns.api(&client);
    assert!(entries.contains(&"scripted".to_owned()), "{entries:?}");
    wait_for(
        &registry,
        "scripted",
        "Ready=True",
        TIMEOUT,
        has_condition::<RegistryEntry>("Ready", "True"),
    )
    .await?;
    let gpt = wait_for(
        &registry,
        "gpt",
        "Ready=False",
        TIMEOUT,
        has_condition::<RegistryEntry>("Ready", "False"),
    )
    .await?
    .context("gpt")?;
    let ready = gpt
        .status
        .iter()
        .flat_map(|s| s.conditions.iter())
        .find(|c| c.r#type == "Ready")
        .context("gpt has Ready")?;
    assert_eq!(ready.reason, "SpecRefused");
    assert!(
        ready.message.contains("spec.model.apiKey.secretKeyRef")
            && ready.message.contains("openai"),
        "{}",
        ready.message
    );
    secret_bound_to_its_origin(&client, &ns, &registry).await?;
    wait_for(
        &registry,
        "demo-tools",
        "Ready=Unknown (waiting for the probe)",
        TIMEOUT,
        has_condition::<RegistryEntry>("Ready", "Unknown"),
    )
    .await?;
    operator.stop().await
}

/// The `Ready` condition's reason and message of `entry`.
fn ready_of(entry: &RegistryEntry) -> (String, String) {
    entry
        .status
        .iter()
        .flat_map(|s| s.conditions.iter())
        .find(|c| c.r#type == "Ready")
        .map(|c| (c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

/// Rules 5.46/5.47 (issue 27 §2): gpt's Secret, once it exists bound to api.openai.com, lets
/// the entry on to its probe; the entry's URL moved to another host refuses it, naming the
/// Secret, the origin and the one command that allows it; that command lets it on again.
async fn secret_bound_to_its_origin(
    client: &Client,
    ns: &TestNamespace,
    registry: &Api<RegistryEntry>,
) -> Result<()> {
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::{Patch, PatchParams, PostParams};
    let secrets: Api<Secret> = ns.api(client);
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "openai", "annotations": {
            "studio.orrery.dev/allowed-origins": "https://api.openai.com"}},
        "stringData": {"api-key": "sk-test-not-a-key"}
    }))?;
    secrets.create(&PostParams::default(), &secret).await?;
    // Secrets are not watched; a touch of the entry has it checked now.
    let touch = |n: u32| serde_json::json!({"metadata": {"annotations": {"e2e.orrery.dev/touch": n.to_string()}}});
    registry
        .patch("gpt", &PatchParams::default(), &Patch::Merge(&touch(1)))
        .await?;
    wait_for(
        registry,
        "gpt",
        "Ready no longer refused for its Secret",
        TIMEOUT,
        |e: Option<&RegistryEntry>| e.is_some_and(|e| ready_of(e).0 != "SpecRefused"),
    )
    .await?;
    let moved =
        serde_json::json!({"spec": {"model": {"baseUrl": "https://collector.evil.example/v1"}}});
    registry
        .patch("gpt", &PatchParams::default(), &Patch::Merge(&moved))
        .await?;
    let gpt = wait_for(
        registry,
        "gpt",
        "Ready=False (SpecRefused) for the moved URL",
        TIMEOUT,
        |e: Option<&RegistryEntry>| e.is_some_and(|e| ready_of(e).0 == "SpecRefused"),
    )
    .await?
    .context("gpt")?;
    let (_, message) = ready_of(&gpt);
    ensure!(
        message.contains("Secret \"openai\" may be sent only to https://api.openai.com")
            && message.contains("would send it to https://collector.evil.example")
            && message
                .contains("kubectl annotate secret openai studio.orrery.dev/allowed-origins="),
        "{message}"
    );
    let allow = serde_json::json!({"metadata": {"annotations": {
        "studio.orrery.dev/allowed-origins": "https://api.openai.com,https://collector.evil.example"}}});
    secrets
        .patch("openai", &PatchParams::default(), &Patch::Merge(&allow))
        .await?;
    registry
        .patch("gpt", &PatchParams::default(), &Patch::Merge(&touch(2)))
        .await?;
    wait_for(
        registry,
        "gpt",
        "Ready no longer refused once the Secret allows the origin",
        TIMEOUT,
        |e: Option<&RegistryEntry>| e.is_some_and(|e| ready_of(e).0 != "SpecRefused"),
    )
    .await?;
    Ok(())
}

const BROKEN: &str = r#"
apiVersion: studio.orrery.dev/v1alpha1
kind: Composition
metadata:
  name: broken
spec:
  pattern: Pipeline
  nodes:
    - {id: a, kind: LLMAgent, model: scripted, instruction: do, tools: ["mcp:demo-tools.no_such_tool"]}
    - {id: b, kind: LLMAgent, model: not-a-model, instruction: do}
  edges:
    - {from: a, to: b}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_composition_is_invalid_with_the_seed_codes_at_their_fields() -> Result<()> {
    let (env, ns, client) = setup("op-broken").await?;
    let operator = Installed::start(env, &ns.name, &client).await?;
    apply_examples(&client, &ns.name, "registry").await?;
    apply_yaml(&client, Some(&ns.name), BROKEN).await?;
    // A script waits for the verdict, whichever it is, as docs/gitops-health.md shows: until
    // the status speaks for the current generation, then reads `Valid`.
    let generation = kubectl_ok(
        env,
        ADMIN,
        &[
            "get",
            "composition",
            "broken",
            "-n",
            &ns.name,
            "-o",
            "jsonpath={.metadata.generation}",
        ],
    )
    .await?;
    let wait_for = format!(
        "--for=jsonpath={{.status.observedGeneration}}={}",
        generation.trim()
    );
    kubectl_ok(
        env,
        ADMIN,
        &[
            "wait",
            "composition/broken",
            "-n",
            &ns.name,
            &wait_for,
            "--timeout=60s",
        ],
    )
    .await?;
    let valid = kubectl_ok(
        env,
        ADMIN,
        &[
            "get",
            "composition",
            "broken",
            "-n",
            &ns.name,
            "-o",
            r#"jsonpath={.status.conditions[?(@.type=="Valid")].status}"#,
        ],
    )
    .await?;
    assert_eq!(
        valid.trim(),
        "False",
        "the documented wait reads the verdict"
    );
    let api: Api<Composition> = ns.api(&client);
    let c = wait_valid(&api, "broken", "False").await?;
    let s = status(&c)?;
    let found = codes(&c);
    for code in ["unknown_tool", "model_not_allowed"] {
        assert!(found.contains(code), "{code} in {:?}", s.errors);
    }
    let tool = s
        .errors
        .iter()
        .find(|e| e.code == "unknown_tool")
        .context("unknown_tool")?;
    assert!(tool.field.starts_with("spec.nodes[0].tools"), "{tool:?}");
    assert_eq!(s.observed_generation, c.metadata.generation);
    assert!(
        has_condition::<Composition>("Stalled", "True")(Some(&c)),
        "{s:?}"
    );
    assert!(
        has_condition::<Composition>("Ready", "False")(Some(&c)),
        "{s:?}"
    );
    operator.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_model_entry_a_composition_uses_makes_it_invalid_without_touching_it()
-> Result<()> {
    let (env, ns, client) = setup("op-entry").await?;
    let operator = Installed::start(env, &ns.name, &client).await?;
    apply_examples(&client, &ns.name, "registry").await?;
    let pipeline =
        std::fs::read_to_string(workspace_root().join("examples/compositions/pipeline.yaml"))?;
    apply_yaml(&client, Some(&ns.name), &pipeline).await?;
    let api: Api<Composition> = ns.api(&client);
    let valid = wait_valid(&api, "pipeline", "True").await?;

    let registry: Api<RegistryEntry> = ns.api(&client);
    registry
        .delete("scripted", &DeleteParams::default())
        .await?;
    let invalid = wait_valid(&api, "pipeline", "False").await?;
    assert_eq!(
        invalid.metadata.generation, valid.metadata.generation,
        "the Composition's spec was not touched"
    );
    let s = status(&invalid)?;
    assert!(
        s.errors.iter().any(|e| e.field.contains(".model")),
        "an error at a node's model: {:?}",
        s.errors
    );

    // The flip is announced once, as a Warning Event on the Composition.
    let events: Api<Event> = ns.api(&client);
    let invalid_events = eventually(TIMEOUT, || async {
        let list = events.list(&ListParams::default()).await?;
        let found: Vec<Event> = list
            .items
            .into_iter()
            .filter(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("pipeline")
                    && e.reason.as_deref() == Some("Invalid")
            })
            .collect();
        ensure!(!found.is_empty(), "no Invalid Event for pipeline yet");
        Ok(found)
    })
    .await?;
    assert_eq!(invalid_events.len(), 1, "{invalid_events:#?}");
    assert_eq!(invalid_events[0].type_.as_deref(), Some("Warning"));

    // Putting the entry back makes it valid again, still without touching it.
    let scripted =
        std::fs::read_to_string(workspace_root().join("examples/registry/scripted.yaml"))?;
    apply_yaml(&client, Some(&ns.name), &scripted).await?;
    let again = wait_valid(&api, "pipeline", "True").await?;
    assert_eq!(again.metadata.generation, valid.metadata.generation);
    operator.stop().await
}

#[tokio::test]
async fn a_second_reconcile_writes_nothing() -> Result<()> {
    let (env, ns, client) = setup("op-idem").await?;
    apply_examples(&client, &ns.name, "registry").await?;
    let pipeline =
        std::fs::read_to_string(workspace_root().join("examples/compositions/pipeline.yaml"))?;
    apply_yaml(&client, Some(&ns.name), &pipeline).await?;
    // No controller runs here: the reconcilers are called directly.
    let ctx = operator_context(env, &ns.name).await?;
    let api: Api<Composition> = ns.api(&client);
    let registry: Api<RegistryEntry> = ns.api(&client);
    let revisions: Api<ControllerRevision> = ns.api(&client);

    orrery_operator::composition::reconcile::reconcile(
        Arc::new(api.get("pipeline").await?),
        ctx.clone(),
    )
    .await?;
    let first = api.get("pipeline").await?;
    ensure!(
        has_condition::<Composition>("Valid", "True")(Some(&first)),
        "{:?}",
        first.status
    );
    let revisions_after_first = revisions.list(&ListParams::default()).await?.items.len();
    orrery_operator::composition::reconcile::reconcile(Arc::new(first.clone()), ctx.clone())
        .await?;
    let second = api.get("pipeline").await?;
    assert_eq!(second.resource_version(), first.resource_version());
    assert_eq!(
        revisions.list(&ListParams::default()).await?.items.len(),
        revisions_after_first
    );
    assert_eq!(revisions_after_first, 1);

    for entry in ["scripted", "gpt"] {
        orrery_operator::registry::reconcile::reconcile(
            Arc::new(registry.get(entry).await?),
            ctx.clone(),
        )
        .await?;
        let first = registry.get(entry).await?;
        assert!(first.status.is_some(), "{entry} has a status");
        orrery_operator::registry::reconcile::reconcile(Arc::new(first.clone()), ctx.clone())
            .await?;
        let second = registry.get(entry).await?;
        assert_eq!(
            second.resource_version(),
            first.resource_version(),
            "{entry}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn only_the_newest_fifty_revisions_are_kept_and_the_status_names_the_current_one()
-> Result<()> {
    let (env, ns, client) = setup("op-prune").await?;
    apply_examples(&client, &ns.name, "registry").await?;
    let pipeline =
        std::fs::read_to_string(workspace_root().join("examples/compositions/pipeline.yaml"))?;
    apply_yaml(&client, Some(&ns.name), &pipeline).await?;
    // No controller runs here: each generation is reconciled directly, so every one of them
    // is recorded before the next edit.
    let ctx = operator_context(env, &ns.name).await?;
    let api: Api<Composition> = ns.api(&client);
    let revisions: Api<ControllerRevision> = ns.api(&client);
    let mut last = 0;
    for edit in 0..52 {
        if edit > 0 {
            let patch = serde_json::json!({"spec": {"description": format!("edit {edit}")}});
            api.patch(
                "pipeline",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await?;
        }
        let c = api.get("pipeline").await?;
        last = c.metadata.generation.context("generation")?;
        orrery_operator::composition::reconcile::reconcile(Arc::new(c), ctx.clone()).await?;
    }
    ensure!(last >= 52, "52 generations, got {last}");
    let mut kept: Vec<i64> = revisions
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(|r| r.revision)
        .collect();
    kept.sort_unstable();
    let want: Vec<i64> = (last - 49..=last).collect();
    assert_eq!(kept, want, "the newest 50 generations");
    let c = api.get("pipeline").await?;
    assert_eq!(status(&c)?.revision, Some(last));
    assert_eq!(status(&c)?.observed_generation, Some(last));
    Ok(())
}
