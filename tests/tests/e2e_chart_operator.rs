//! The Helm chart's operator running from its image on the development node in container
//! mode: `tests/images/build.sh` builds `localhost/orrery/operator:dev` and
//! `localhost/orrery/runner:dev` as OCI archives, a [`PodExecutor`] with that images directory
//! runs them with runc (host network), and `helm install` puts the chart into the test's
//! namespace. The Deployment's pod runs both containers as runc containers, the controller
//! reaches the API server with its projected ServiceAccount token (in-cluster config): the
//! critic-loop example becomes `Valid`, its entries (a demo fleet on this machine) are probed by
//! runner pods and its StudioRun Succeeds in a runner pod (runner pods run in container mode
//! too); the sidecar answers `/healthz`. `helm uninstall` and the executor's shutdown leave no
//! container and no process.
//!
//! The Deployment's pod is made as in a cluster: the test control plane's deployment and
//! replicaset controllers create it, and the garbage collector deletes it on uninstall.
//!
//! The chart's admission policies are cluster-wide objects (taken over with
//! `--take-ownership`): one test installs the chart. Another runs plain runner pods in container
//! mode (exit codes, a writable root, deletion). Needs root, buildah and runc.
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use orrery_crds::registry::RegistryEntry;
use orrery_crds::{Composition, StudioRun};
use orrery_runner::demo::{Fleet, FleetConfig, start_fleet};
use orrery_tests::chart::{Release, wait_operator_pod};
use orrery_tests::harness::{
    TestNamespace, apply_yaml, ensure_crds, eventually, has_condition, processes_naming, wait_for,
    wait_succeeded, workspace_root,
};
use orrery_tests::images;
use orrery_tests::pod_executor::{ExecutorConfig, PodExecutor};
use orrery_tests::testenv::{self, ADMIN};
use serde_json::json;

/// Long enough for the first unpack of the images and the operator's start.
const START_TIMEOUT: Duration = Duration::from_secs(180);

async fn apply_file(client: &Client, ns: &str, rel: &str) -> Result<Vec<String>> {
    let path = workspace_root().join(rel);
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {rel}"))?;
    Ok(apply_yaml(client, Some(ns), &text)
        .await
        .with_context(|| format!("applying {rel}"))?
        .iter()
        .map(|o| o.name_any())
        .collect())
}

/// The demo fleet's entries (their URLs on this machine).
fn fleet_entries(fleet: &Fleet) -> Result<Vec<RegistryEntry>> {
    let tools = [
        "search_articles",
        "get_article",
        "convert_units",
        "current_time",
    ];
    let entry = |v: serde_json::Value| -> Result<RegistryEntry> {
        serde_json::from_value(v).context("a RegistryEntry")
    };
    Ok(vec![
        entry(serde_json::json!({
            "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "RegistryEntry",
            "metadata": {"name": "demo-tools"},
            "spec": {"mcp": {"url": fleet.tools_url(), "tools": tools, "readOnly": tools}}
        }))?,
        entry(serde_json::json!({
            "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "RegistryEntry",
            "metadata": {"name": "demo-writer"},
            "spec": {"a2a": {"cardUrl": fleet.writer_card_url(), "skills": ["draft"]}}
        }))?,
    ])
}

/// What the installed operator must do, from its pod.
async fn the_operator_works(
    client: &Client,
    ns: &TestNamespace,
    release: &str,
    sidecar_port: u16,
    pod_log_dir: &Path,
) -> Result<()> {
    let pods: Api<Pod> = ns.api(client);
    let pod = wait_operator_pod(&pods, release, START_TIMEOUT)
        .await
        .with_context(|| {
            format!(
                "the operator pod did not run both containers (logs under {})",
                pod_log_dir.display()
            )
        })?;

    // The sidecar, on the host network.
    let url = format!("http://127.0.0.1:{sidecar_port}/healthz");
    let http = orrery_tests::studio::http_client()?;
    eventually(START_TIMEOUT, || async {
        let response = http.get(&url).send().await?;
        ensure!(
            response.status().is_success(),
            "{url}: {}",
            response.status()
        );
        Ok(())
    })
    .await
    .with_context(|| format!("GET {url} from pod {}", pod.name_any()))?;

    // The controller, with its projected token: the critic-loop example becomes Valid, its
    // entries (pointing at a demo fleet on this machine) are probed by runner pods, and its run
    // Succeeds in a runner pod (container mode too: the chart names localhost/orrery/runner).
    let fleet = start_fleet(FleetConfig::ephemeral()).await?;
    let entries: Api<RegistryEntry> = ns.api(client);
    for entry in fleet_entries(&fleet)? {
        entries.create(&PostParams::default(), &entry).await?;
    }
    apply_file(client, &ns.name, "examples/registry/scripted.yaml").await?;
    let names = apply_file(client, &ns.name, "examples/compositions/critic-loop.yaml").await?;
    let compositions: Api<Composition> = ns.api(client);
    for name in &names {
        wait_for(
            &compositions,
            name,
            "Valid=True",
            START_TIMEOUT,
            has_condition::<Composition>("Valid", "True"),
        )
        .await
        .with_context(|| format!("Composition {name} from the chart's controller"))?;
    }
    for name in ["demo-tools", "demo-writer"] {
        wait_for(
            &entries,
            name,
            "Ready=True",
            START_TIMEOUT,
            has_condition::<RegistryEntry>("Ready", "True"),
        )
        .await
        .with_context(|| format!("RegistryEntry {name}, probed by a runner pod"))?;
    }
    let run = std::fs::read_to_string(workspace_root().join("examples/runs/critic-loop-run.yaml"))?
        .replace("owner: jane@example.com", &format!("owner: {ADMIN}"));
    apply_yaml(client, Some(&ns.name), &run).await?;
    let runs: Api<StudioRun> = ns.api(client);
    wait_succeeded(&runs, "release-notes-1", START_TIMEOUT).await?;

    // A person asks for a probe now (`studio.orrery.dev/reprobe`): a new probe pod records a
    // new result well within the hour's interval, and the value is acted on once.
    let before = entries.get("demo-tools").await?;
    let last = |e: &RegistryEntry| e.status.as_ref().and_then(|s| s.last_probe_time.clone());
    let before_time = last(&before).context("demo-tools was probed")?;
    // lastProbeTime has whole seconds: a probe recorded within the same second as the last one
    // could not be told from it.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let value = format!("e2e-{}", std::process::id());
    let patch = json!({"metadata": {"annotations": {"studio.orrery.dev/reprobe": value}}});
    entries
        .patch("demo-tools", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let (want, after) = (value.clone(), before_time.clone());
    let reprobed = wait_for(
        &entries,
        "demo-tools",
        "probed again for the reprobe annotation",
        START_TIMEOUT,
        move |e: Option<&RegistryEntry>| {
            e.and_then(|e| e.status.as_ref()).is_some_and(|s| {
                s.last_reprobe.as_deref() == Some(want.as_str())
                    && s.last_probe_time
                        .as_deref()
                        .is_some_and(|t| t > after.as_str())
            })
        },
    )
    .await;
    if let Err(e) = reprobed {
        // What the probe pods said, for the failure's message.
        let probes: Vec<String> = pods
            .list(&ListParams::default().labels("app.kubernetes.io/name=orrery-probe"))
            .await?
            .items
            .iter()
            .map(|p| {
                let status = p.status.as_ref();
                format!(
                    "{} phase {:?} deleting {} containers {:?}",
                    p.name_any(),
                    status.and_then(|s| s.phase.clone()),
                    p.metadata.deletion_timestamp.is_some(),
                    status.and_then(|s| s.container_statuses.clone())
                )
            })
            .collect();
        return Err(e.context(format!(
            "the reprobe annotation did not bring a new probe; probe pods: {probes:#?}"
        )));
    }
    wait_for(
        &entries,
        "demo-tools",
        "Ready=True",
        START_TIMEOUT,
        has_condition::<RegistryEntry>("Ready", "True"),
    )
    .await?;
    drop(fleet);

    // Every pod that ran here (the operator's, the probes', the run's) ran as runc containers.
    for pod in pods.list(&ListParams::default()).await?.items {
        let statuses = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default();
        for c in statuses {
            let id = c.container_id.clone().unwrap_or_default();
            ensure!(
                id.is_empty() || id.starts_with("runc://"),
                "pod {} container {} ran as {id}, not as a runc container",
                pod.name_any(),
                c.name
            );
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_charts_operator_runs_from_its_image_in_container_mode_and_serves_its_namespace()
-> Result<()> {
    let images = tokio::task::spawn_blocking(images::built).await??;
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "chart-op").await?;
    let client = env.admin().await?;
    let exec = PodExecutor::start_with(
        client.clone(),
        ExecutorConfig::new(format!("node-{}", ns.name))
            .namespace(&ns.name)
            .api_server(&env.server)
            .images_dir(&images),
    )
    .await?;
    let work_dir = exec.work_dir().to_string_lossy().into_owned();
    let release = orrery_tests::studio::release_name(&ns.name);
    let ports = orrery_tests::chart::DevPorts::free()?;
    let sidecar_port = ports.sidecar;
    let mut sets = orrery_tests::chart::dev_node_values("127.0.0.1", ports);
    sets.extend([
        format!("watchNamespace={}", ns.name),
        format!("tenantNamespaces={{{}}}", ns.name),
    ]);
    let mut args: Vec<&str> = Vec::new();
    for set in &sets {
        args.extend(["--set", set.as_str()]);
    }
    // Dropped on any failure (uninstalled then): the chart's admission-policy bindings are
    // cluster-wide and must not outlive this test.
    let (outcome, uninstalled) = match Release::install(env, &release, &ns.name, &args) {
        Ok(installed) => {
            let outcome =
                the_operator_works(&client, &ns, &release, sidecar_port, exec.work_dir()).await;
            // Uninstall; the executor stops the pod's containers and deletes the pod.
            (outcome, installed.uninstall())
        }
        Err(e) => (Err(e.context("helm install")), Ok(())),
    };
    let pods: Api<Pod> = ns.api(&client);
    // The garbage collector deletes the ReplicaSet and its pod with the Deployment; the executor stops its
    // containers and removes it. (The operator's probe pods stay, finished, like in a cluster.)
    let selector = format!("app.kubernetes.io/instance={release}");
    let gone = eventually(START_TIMEOUT, || async {
        let left = pods
            .list(&ListParams::default().labels(&selector))
            .await?
            .items;
        ensure!(
            left.is_empty(),
            "pods of the release left: {:?}",
            left.iter().map(ResourceExt::name_any).collect::<Vec<_>>()
        );
        Ok(())
    })
    .await;
    let containers_after_uninstall = exec.containers();
    // One root filesystem per image (operator, runner), however many containers ran.
    let unpacked = std::fs::read_dir(exec.work_dir().join("images"))
        .map(|d| d.count())
        .unwrap_or_default();
    let shutdown = exec.shutdown().await;

    outcome?;
    uninstalled.context("helm uninstall")?;
    gone.context("after helm uninstall")?;
    ensure!(
        containers_after_uninstall.is_empty(),
        "runc containers left after helm uninstall: {containers_after_uninstall:?}"
    );
    ensure!(
        unpacked == 2,
        "{unpacked} unpacked images, not one each for the operator and the runner"
    );
    shutdown.context("the executor's shutdown")?;
    let processes = processes_naming(&work_dir);
    ensure!(
        processes.is_empty(),
        "processes of the executor's containers left: {processes:?}"
    );
    Ok(())
}

/// The runner's container ends `Terminated`, or the pod is gone.
async fn wait_terminated(
    pods: &Api<Pod>,
    name: &str,
) -> Result<k8s_openapi::api::core::v1::ContainerStateTerminated> {
    eventually(START_TIMEOUT, || async {
        let pod = pods.get(name).await?;
        let status = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default();
        let c = status.first().context("no container status yet")?;
        let t = c
            .state
            .as_ref()
            .and_then(|s| s.terminated.clone())
            .with_context(|| format!("{name} not terminated: {:?}", c.state))?;
        ensure!(
            t.container_id
                .as_deref()
                .is_some_and(|id| id.starts_with("runc://")),
            "{name} ran as {:?}, not as a runc container",
            t.container_id
        );
        Ok(t)
    })
    .await
}

fn runner_pod(name: &str, args: &[&str]) -> Result<Pod> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "containers": [{
                "name": "runner",
                "image": "localhost/orrery/runner:dev",
                "args": args
            }]
        }
    }))?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn runner_pods_in_container_mode_report_exit_codes_run_on_a_private_writable_root_and_stop_on_deletion()
-> Result<()> {
    let images = tokio::task::spawn_blocking(images::built).await??;
    let env = testenv::shared_async().await?;
    let ns = TestNamespace::create(env, "container-mode").await?;
    let client = env.admin().await?;
    let exec = PodExecutor::start_with(
        client.clone(),
        ExecutorConfig::new(format!("node-{}", ns.name))
            .namespace(&ns.name)
            .api_server(&env.server)
            .images_dir(&images),
    )
    .await?;
    let pods: Api<Pod> = ns.api(&client);
    let outcome = async {
        let post = PostParams::default();
        pods.create(&post, &runner_pod("version", &["--version"])?)
            .await?;
        pods.create(&post, &runner_pod("wrong", &["no-such-command"])?)
            .await?;
        pods.create(
            &post,
            &runner_pod("fleet", &["demo", "--fleet-only", "--port-base", "0"])?,
        )
        .await?;
        let ok = wait_terminated(&pods, "version").await?;
        ensure!(
            ok.exit_code == 0 && ok.reason.as_deref() == Some("Completed"),
            "{ok:?}"
        );
        let bad = wait_terminated(&pods, "wrong").await?;
        ensure!(
            bad.exit_code != 0 && bad.reason.as_deref() == Some("Error"),
            "{bad:?}"
        );
        // Running (a writable root: its own copy of the image), then deleted: runc kill TERM
        // ends it well before the 30 s grace period.
        eventually(START_TIMEOUT, || async {
            let pod = pods.get("fleet").await?;
            let running = pod
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.clone())
                .unwrap_or_default()
                .iter()
                .any(|c| {
                    c.state.as_ref().is_some_and(|s| s.running.is_some())
                        && c.container_id
                            .as_deref()
                            .is_some_and(|i| i.starts_with("runc://"))
                });
            ensure!(running, "fleet not running as a runc container yet");
            Ok(())
        })
        .await?;
        let deleted_at = std::time::Instant::now();
        pods.delete("fleet", &Default::default()).await?;
        eventually(Duration::from_secs(20), || async {
            ensure!(pods.get_opt("fleet").await?.is_none(), "fleet still there");
            Ok(())
        })
        .await?;
        ensure!(
            deleted_at.elapsed() < Duration::from_secs(20),
            "deletion took {:?}: TERM did not reach the container",
            deleted_at.elapsed()
        );
        ensure!(
            exec.containers().is_empty(),
            "containers left: {:?}",
            exec.containers()
        );
        Ok(())
    }
    .await;
    let work_dir = exec.work_dir().to_string_lossy().into_owned();
    let shutdown = exec.shutdown().await;
    outcome?;
    shutdown?;
    let processes = processes_naming(&work_dir);
    ensure!(processes.is_empty(), "processes left: {processes:?}");
    Ok(())
}
