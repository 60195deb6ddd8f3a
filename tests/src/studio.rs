//! The whole system in one test namespace: the pod executor as the kubelet, alice (and
//! optionally bob) bound to the example `studio-user` Role, and the operator in one of two ways:
//!
//! - [`Studio::install`]: **the chart** (`helm install` of `charts/orrery/` into the test's
//!   namespace, serving that namespace alone). The operator's pod runs its two containers
//!   (controller and sidecar) from the operator's image as runc containers on the dev node, with
//!   its projected ServiceAccount token, so the chart's args, config, RBAC and admission
//!   policies (the chart's own: pending approvals bound to that namespace, the create and
//!   decisions rules cluster-wide, the same in every release) are what the test exercises; runner
//!   and probe pods run from the runner's image. Needs root, buildah and runc.
//!   [`Studio::install_on`] says what else the node runs ([`Kubelet`]: the runner image as
//!   shipped, or no node for the namespace and the release in a namespace of its own) and how
//!   the namespace is labelled before anything runs in it.
//! - [`Studio::start`]: the controllers in-process as the operator's ServiceAccount, with the
//!   runners posting to a sidecar the test runs itself (so it can kill or restart either:
//!   [`Studio::kill_operator`], [`Studio::start_operator`]), the runner pods run as processes of
//!   the local `orrery` binary, and optionally the chart's admission policies bound to this
//!   namespace alone.
//! - [`Studio::install_replicated`]: the chart with several operator replicas on PostgreSQL,
//!   every pod in its own network namespace (NetworkPolicies enforced, Services routed).
//!
//! [`Studio::test`] runs a test on a studio and shuts it down whatever happens (a panic too).

use crate::admission::{PolicyBindings, bind_policies, wait_policies_act};
use crate::front::Front;
use crate::harness::{TestNamespace, apply_yaml, ensure_crds, kubectl_ok, wait_allowed, wait_for};
use crate::manifests::{Subject, role_binding, studio_user_binding};
use crate::operator_fixture::{Operator, test_config};
use crate::operator_identity::operator_client;
use crate::pod_executor::net::NetworkConfig;
use crate::pod_executor::{ExecutorConfig, NetworkMode, PodExecutor, default_bin_dir};
use crate::testenv::{self, ADMIN, TestEnv};
use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use orrery_crds::StudioRun;
use orrery_crds::events::TraceEvent;
use orrery_crds::run::RunPhase;
use orrery_operator::Config;
use orrery_operator::kstatus::find;
use orrery_operator::run::builders::RUN_UID_LABEL;
use serde_json::{Value, json};
use std::time::Duration;

/// How long a test waits for a run's phase.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// One namespace with the system running in it.
pub struct Studio {
    /// The control plane.
    pub env: &'static TestEnv,
    /// The namespace.
    pub ns: TestNamespace,
    /// An admin client.
    pub admin: Client,
    /// Where runners post events and people call the run API.
    pub sidecar_url: String,
    exec: PodExecutor,
    operator: OperatorHandle,
    /// The admission policies' bindings to [`Studio::ns`] ([`StudioOptions::policies`]).
    bindings: Option<PolicyBindings>,
    /// Forwards on the pod network's gateway to services of this machine (PostgreSQL).
    fronts: Vec<Front>,
    /// The namespace of the chart's release when it is not [`Studio::ns`]
    /// ([`Kubelet::OperatorOnly`]).
    home: Option<TestNamespace>,
}

/// How the operator of a [`Studio`] runs.
enum OperatorHandle {
    /// The controllers on a task of the test (none between [`Studio::kill_operator`] and
    /// [`Studio::start_operator`]), with the config they start with.
    InProcess {
        running: Option<Operator>,
        config: Box<Config>,
    },
    /// The chart's release (uninstalled when dropped).
    Chart(Box<ChartOperator>),
}

/// What runs the pods of a chart studio's namespace ([`Studio::install_on`]). (A
/// [`Studio::start`] runs them as processes of the local `orrery` binary.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Kubelet {
    /// The dev node in container mode: the chart's operator pod and the runner and probe pods
    /// as runc containers from the project's images ([`container_executor`]).
    #[default]
    Containers,
    /// [`Kubelet::Containers`], with the runner image's binary built as `operator/Dockerfile`
    /// ships it: static, without the `cli` feature ([`crate::images::built_with_pod_build`]).
    ContainersAsShipped,
    /// No node runs the namespace: its runner and probe pods stay Pending. The chart's release
    /// lives in a namespace of its own (`<prefix>-home`), whose node (container mode) runs only
    /// that namespace's pods: the operator's.
    OperatorOnly,
}

/// The node under a chart studio and the namespace it starts with, beyond
/// [`ChartStudioOptions`] ([`Studio::install`] takes the defaults).
#[derive(Debug, Clone, Copy, Default)]
pub struct ChartNode<'a> {
    /// What runs the namespace's pods.
    pub kubelet: Kubelet,
    /// Labels put on the namespace before anything is created in it (e.g.
    /// `pod-security.kubernetes.io/enforce=restricted`: the apiserver then admits the
    /// operator's pod and every runner pod against that level).
    pub namespace_labels: &'a [(&'a str, &'a str)],
}

/// What [`Studio::install`] starts with.
pub struct ChartStudioOptions<'a> {
    /// The namespace's name prefix.
    pub prefix: &'a str,
    /// Manifests applied in the release's namespace before the install: what the values name
    /// (a Secret for `runToken.existingSecret`…).
    pub prelude: &'a str,
    /// Manifests applied in the namespace first (model entries…).
    pub manifests: &'a str,
    /// Users bound to the example `studio-user` Role.
    pub users: &'a [&'a str],
    /// Install the chart's admission policies: the pending-approvals one bound to the test's
    /// namespace, the create and decisions ones cluster-wide (while the test runs, a run
    /// created for another owner is refused in every namespace, as in a cluster).
    pub policies: bool,
    /// `helm --set` values on top of the test's (e.g. `config.approvalTimeoutSeconds=4`).
    pub values: &'a [&'a str],
}

/// How long the chart's operator pod may take to start (the first unpack of the image).
const INSTALL_TIMEOUT: Duration = Duration::from_secs(180);

/// A pod executor for `ns` in container mode: images whose archive exists (the operator's, the
/// runner's) run as runc containers (host network).
pub async fn container_executor(env: &TestEnv, admin: &Client, ns: &str) -> Result<PodExecutor> {
    container_executor_from(env, admin, ns, crate::images::built).await
}

/// [`container_executor`] with the images `images` builds (e.g.
/// [`crate::images::built_with_pod_build`]: the runner image's binary as the Dockerfile ships it).
pub async fn container_executor_from(
    env: &TestEnv,
    admin: &Client,
    ns: &str,
    images: fn() -> Result<std::path::PathBuf>,
) -> Result<PodExecutor> {
    let images = tokio::task::spawn_blocking(images).await??;
    Ok(PodExecutor::start_with(
        admin.clone(),
        ExecutorConfig::new(format!("node-{ns}"))
            .namespace(ns)
            .api_server(&env.server)
            .images_dir(&images),
    )
    .await?)
}

/// A pod executor for `ns` in container mode with isolated pod networking on `network` (a
/// bridge and subnet of the test's own): every runc pod gets its own network namespace and
/// address, the NetworkPolicies selecting it are enforced, Services are routed, and the API
/// server is reached through the `kubernetes` Service (the node forwards its gateway's port
/// 6443 to the control plane). Needs root, `ip` and `nft`.
pub async fn isolated_executor(
    env: &TestEnv,
    admin: &Client,
    ns: &str,
    network: NetworkConfig,
) -> Result<PodExecutor> {
    let images = tokio::task::spawn_blocking(crate::images::built).await??;
    Ok(PodExecutor::start_with(
        admin.clone(),
        ExecutorConfig::new(format!("node-{ns}"))
            .namespace(ns)
            .api_server(&env.server)
            .images_dir(&images)
            .pod_network(NetworkMode::Isolated(network)),
    )
    .await?)
}

/// A release name of its own for the test namespace `ns` (the chart's cluster-scoped objects are
/// named after it): `op-` and a hash of the whole (unique) namespace name, short enough for
/// every name the chart derives from it.
pub fn release_name(ns: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    ns.hash(&mut hasher);
    format!("op-{:010x}", hasher.finish() & 0xff_ffff_ffff)
}

/// The chart's operator serving one namespace: `helm install` into it (release `op-<suffix>`,
/// `watchNamespace` and `tenantNamespaces` that namespace), its pod run by a container-mode
/// executor of that namespace (see [`container_executor`]). Uninstalled by [`ChartOperator::stop`]
/// (or when dropped).
pub struct ChartOperator {
    /// The release.
    pub release: crate::chart::Release,
    /// The release's name.
    pub name: String,
    /// The chart's sidecar: on loopback when the pod shares the host's network, else a
    /// replica's pod address ([`Studio::install_replicated`]).
    pub sidecar_url: String,
    /// Its port (the pod's and the host's).
    pub sidecar_port: u16,
    /// The controller's and the sidecar's `/metrics` on loopback, when the pod shares the
    /// host's network (`(controller, sidecar)`).
    pub metrics_urls: Option<(String, String)>,
    namespace: String,
    admin: Client,
}

impl ChartOperator {
    /// Installs the chart into `ns` with the test's values (the project's local images, no
    /// PVC, no leader election, free ports) and `values` on top; the chart's admission
    /// policies when `policies` (see [`ChartStudioOptions::policies`]). Returns once the sidecar answers
    /// (and the policies act).
    pub async fn install(
        env: &'static TestEnv,
        ns: &str,
        policies: bool,
        values: &[&str],
    ) -> Result<ChartOperator> {
        ChartOperator::install_serving(env, ns, ns, policies, values).await
    }

    /// Like [`ChartOperator::install`], but the release (and so the operator's pod) lives in
    /// `release_ns` while it serves `served` (`watchNamespace`, `tenantNamespaces`): a node
    /// scoped to `release_ns` then runs the operator and never the probe or runner pods it makes
    /// in `served`.
    pub async fn install_serving(
        env: &'static TestEnv,
        release_ns: &str,
        served: &str,
        policies: bool,
        values: &[&str],
    ) -> Result<ChartOperator> {
        let ports = crate::chart::DevPorts::free()?;
        let sidecar_port = ports.sidecar;
        let sidecar_url = format!("http://127.0.0.1:{sidecar_port}");
        let mut sets = crate::chart::dev_node_values("127.0.0.1", ports);
        // Where people reach it from this machine (`kubectl orrery` finds it there).
        sets.push(format!("service.publicUrl={sidecar_url}"));
        let mut operator = ChartOperator::helm_install(
            env,
            release_ns,
            served,
            sets,
            policies,
            values,
            &sidecar_url,
            sidecar_port,
        )
        .await?;
        operator.metrics_urls = Some((
            format!("http://127.0.0.1:{}/metrics", ports.metrics),
            format!("http://127.0.0.1:{}/metrics", ports.sidecar_metrics),
        ));
        wait_sidecar(&operator.sidecar_url, INSTALL_TIMEOUT)
            .await
            .context(
                "the chart's sidecar did not answer (its log: the executor's pod directory)",
            )?;
        if policies {
            wait_policies_act(env, served).await?;
        }
        Ok(operator)
    }

    /// `helm install` into `ns` serving `served`, with the dev node's `sets`, the served
    /// namespace's and `values` on top.
    #[allow(clippy::too_many_arguments)]
    async fn helm_install(
        env: &'static TestEnv,
        ns: &str,
        served: &str,
        mut sets: Vec<String>,
        policies: bool,
        values: &[&str],
        sidecar_url: &str,
        sidecar_port: u16,
    ) -> Result<ChartOperator> {
        // A release name of its own: the chart's cluster-scoped objects are named after it.
        let name = release_name(ns);
        sets.extend([
            format!("watchNamespace={served}"),
            format!("tenantNamespaces={{{served}}}"),
            format!("admissionPolicies.enabled={policies}"),
        ]);
        sets.extend(values.iter().map(|v| (*v).to_owned()));
        let mut args: Vec<String> = Vec::new();
        for set in sets {
            args.extend(["--set".to_owned(), set]);
        }
        let release = {
            let (name, namespace) = (name.clone(), ns.to_owned());
            tokio::task::spawn_blocking(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                crate::chart::Release::install(env, &name, &namespace, &args)
            })
            .await?
            .context("helm install")?
        };
        Ok(ChartOperator {
            release,
            name,
            sidecar_url: sidecar_url.to_owned(),
            sidecar_port,
            metrics_urls: None,
            namespace: ns.to_owned(),
            admin: env.admin().await?,
        })
    }

    /// `helm uninstall`, then waits until the operator's pod is gone (its containers stopped).
    pub async fn stop(self) -> Result<()> {
        let ChartOperator {
            release,
            namespace,
            admin,
            ..
        } = self;
        tokio::task::spawn_blocking(move || release.uninstall())
            .await?
            .context("helm uninstall")?;
        let pods: Api<Pod> = Api::namespaced(admin, &namespace);
        crate::harness::eventually(INSTALL_TIMEOUT, || async {
            let left = pods
                .list(&ListParams::default().labels("app.kubernetes.io/component=operator"))
                .await?
                .items;
            ensure!(left.is_empty(), "the operator's pod is still there");
            Ok(())
        })
        .await
    }
}

/// What [`Studio::install_replicated`] adds to a chart install.
pub struct ReplicatedOptions<'a> {
    /// How many operator pods (`replicaCount`).
    pub replicas: usize,
    /// The test's bridge (at most 15 characters; unique among the tests).
    pub bridge: &'a str,
    /// Its subnet, e.g. `10.213.131.0/24` (unique among the tests).
    pub subnet: &'a str,
    /// The database (`postgres://…@127.0.0.1:PORT/DB`, [`crate::postgres::database`]).
    pub database: &'a str,
}

/// The sidecar's port and the controller's metrics port in a replicated install (each pod has its
/// own address, so fixed ports do).
pub const SIDECAR_PORT: u16 = 8080;
const METRICS_PORT: u16 = 8081;
/// The sidecar's metrics port of each replicated operator pod (the chart's default).
const SIDECAR_METRICS_PORT: u16 = 9091;

/// PostgreSQL for pods: a front on the gateway forwarding to the server on loopback (which
/// trusts its superuser from 127.0.0.1, where the front connects from), and a Secret
/// `orrery-postgres` in `ns` with the URL through it. Returns the front and the Secret's name.
async fn postgres_front(
    admin: &Client,
    ns: &str,
    gateway: std::net::Ipv4Addr,
    database: &str,
) -> Result<(Front, &'static str)> {
    let mut url = reqwest::Url::parse(database).context("the database URL")?;
    let host: std::net::IpAddr = url
        .host_str()
        .context("the database URL has no host")?
        .parse()
        .context("the database URL's host is not an address")?;
    let port = url.port().context("the database URL has no port")?;
    let front = Front::tcp((gateway, 0).into(), (host, port).into()).await?;
    url.set_host(Some(&gateway.to_string()))
        .context("setting the URL's host")?;
    url.set_port(Some(front.addr().port()))
        .map_err(|()| anyhow::anyhow!("setting the URL's port"))?;
    let name = "orrery-postgres";
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(admin.clone(), ns);
    secrets
        .create(
            &kube::api::PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": name},
                "stringData": {"url": url.as_str()}
            }))?,
        )
        .await
        .context("creating the PostgreSQL Secret")?;
    Ok((front, name))
}

/// The Service `sidecar-front` (see [`Studio::install_replicated`]); its cluster IP.
async fn sidecar_front(admin: &Client, ns: &str) -> Result<String> {
    let release = release_name(ns);
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(admin.clone(), ns);
    let created = services
        .create(
            &kube::api::PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "sidecar-front"},
                "spec": {
                    "selector": {
                        "app.kubernetes.io/instance": release,
                        "app.kubernetes.io/component": "operator",
                        FRONT_LABEL: "true"
                    },
                    "ports": [{"name": "http", "port": SIDECAR_PORT, "targetPort": "http"}]
                }
            }))?,
        )
        .await
        .context("creating the Service sidecar-front")?;
    created
        .spec
        .and_then(|s| s.cluster_ip)
        .context("sidecar-front got no cluster IP")
}

/// How many of `pod`'s containers are running.
pub fn running_containers(pod: &Pod) -> usize {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map_or(0, |cs| {
            cs.iter()
                .filter(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
                .count()
        })
}

/// The label that puts an operator pod behind `sidecar-front`.
pub const FRONT_LABEL: &str = "test.orrery.dev/front";

/// Waits until `replicas` operator pods of `release` run both containers with an address of
/// their own; labels the first by name [`FRONT_LABEL`]; returns their sidecars' URLs in name
/// order.
async fn wait_replicas(
    admin: &Client,
    ns: &str,
    release: &str,
    replicas: usize,
) -> Result<Vec<String>> {
    let pods: Api<Pod> = Api::namespaced(admin.clone(), ns);
    let selector = crate::chart::operator_selector(release);
    let ready = crate::harness::eventually(INSTALL_TIMEOUT, || async {
        let mut list = pods
            .list(&ListParams::default().labels(&selector))
            .await?
            .items;
        list.sort_by_key(ResourceExt::name_any);
        let mut found = Vec::new();
        for pod in &list {
            let running = running_containers(pod);
            let ip = pod
                .status
                .as_ref()
                .and_then(|s| s.pod_ip.clone())
                .unwrap_or_default();
            ensure!(
                running == 2 && !ip.is_empty() && !ip.starts_with("127."),
                "pod {} not running both containers on an address of its own yet",
                pod.name_any()
            );
            found.push((pod.name_any(), ip));
        }
        ensure!(
            found.len() == replicas,
            "{} of {replicas} operator pods",
            found.len()
        );
        Ok(found)
    })
    .await?;
    let patch = json!({"metadata": {"labels": {FRONT_LABEL: "true"}}});
    pods.patch(
        &ready[0].0,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await
    .context("labelling the first replica")?;
    Ok(ready
        .iter()
        .map(|(_, ip)| format!("http://{ip}:{SIDECAR_PORT}"))
        .collect())
}

/// What a [`Studio`] starts with.
pub struct StudioOptions<'a> {
    /// The namespace's name prefix.
    pub prefix: &'a str,
    /// Where runners post events and ask people.
    pub sidecar_url: &'a str,
    /// Manifests applied in the namespace first (model entries…).
    pub manifests: &'a str,
    /// Users bound to the example `studio-user` Role.
    pub users: &'a [&'a str],
    /// Bind the shipped admission policies to the namespace.
    pub policies: bool,
    /// Changes to the test deployment config.
    pub configure: &'a dyn Fn(&mut Config),
}

impl Studio {
    /// Starts everything [`StudioOptions`] asks for.
    pub async fn start(options: StudioOptions<'_>) -> Result<Studio> {
        let env = testenv::shared_async().await?;
        ensure_crds(env).await?;
        let ns = TestNamespace::create(env, options.prefix).await?;
        let admin = env.admin().await?;
        let bin = default_bin_dir();
        ensure!(
            bin.join("orrery").is_file(),
            "no orrery binary in {}: build it first (cargo build -p orrery-runner)",
            bin.display()
        );
        let exec = PodExecutor::start_with(
            admin.clone(),
            ExecutorConfig::new(format!("node-{}", ns.name))
                .namespace(&ns.name)
                .bin_dir(bin)
                .api_server(&env.server),
        )
        .await?;
        let bindings = if options.policies {
            Some(bind_policies(env, &ns.name).await?)
        } else {
            None
        };
        if !options.manifests.trim().is_empty() {
            apply_yaml(&admin, Some(&ns.name), options.manifests).await?;
        }
        for user in options.users {
            grant_studio_user(env, &ns.name, user).await?;
        }
        let mut config = test_config()?;
        config.allowed_models = None;
        config.default_model = None;
        config.sidecar.url = Some(options.sidecar_url.to_owned());
        if let Some(bound) = &bindings {
            config.admission_policies = bound.refs(&ns.name);
        }
        (options.configure)(&mut config);
        let mut studio = Studio {
            env,
            ns,
            admin,
            sidecar_url: options.sidecar_url.to_owned(),
            exec,
            operator: OperatorHandle::InProcess {
                running: None,
                config: Box::new(config),
            },
            bindings,
            fronts: Vec::new(),
            home: None,
        };
        studio.start_operator().await?;
        Ok(studio)
    }

    /// The admission policies [`StudioOptions::policies`] bound to this studio's namespace, as a
    /// deployment config names them (empty when none were bound): what a sidecar started for
    /// this studio is configured with, so it knows whether decisions written by hand are
    /// checked.
    pub fn admission_policy_refs(&self) -> Vec<orrery_operator::config::AdmissionPolicyRef> {
        self.bindings
            .as_ref()
            .map(|b| b.refs(&self.ns.name))
            .unwrap_or_default()
    }

    /// Replaces the dev node of a [`Studio::start`] by one that sets `env` in every pod's
    /// processes besides their own (a shifted clock: [`crate::skew::env`]). Call it before any
    /// run starts: the pods of the old node are stopped.
    pub async fn restart_node_with_env(&mut self, env: Vec<(String, String)>) -> Result<()> {
        let mut config = ExecutorConfig::new(format!("node-{}", self.ns.name))
            .namespace(&self.ns.name)
            .bin_dir(default_bin_dir())
            .api_server(&self.env.server);
        for (name, value) in env {
            config = config.extra_env(name, value);
        }
        let fresh = PodExecutor::start_with(self.admin.clone(), config).await?;
        let old = std::mem::replace(&mut self.exec, fresh);
        old.shutdown().await?;
        Ok(())
    }

    /// What the in-process controllers of a [`Studio::start`] count (and where they send
    /// spans); `None` for the chart's operator or while they are stopped.
    pub fn operator_metrics(&self) -> Option<std::sync::Arc<orrery_operator::metrics::Metrics>> {
        match &self.operator {
            OperatorHandle::InProcess {
                running: Some(operator),
                ..
            } => Some(operator.metrics.clone()),
            _ => None,
        }
    }

    /// Starts the in-process controllers of a [`Studio::start`] again (after
    /// [`Studio::kill_operator`]), as the operator's ServiceAccount (never admin), with the
    /// config they first started with.
    pub async fn start_operator(&mut self) -> Result<()> {
        let OperatorHandle::InProcess { running, config } = &mut self.operator else {
            bail!("the chart's operator is not started by the test");
        };
        ensure!(running.is_none(), "the controllers are running");
        let client = operator_client(self.env, &self.ns.name).await?;
        *running = Some(Operator::start(
            client,
            config.as_ref().clone(),
            &self.ns.name,
        )?);
        Ok(())
    }

    /// Starts the in-process controllers again with their client going through `proxy` (the
    /// fault layer between the operator and the API server); the dev node and the test itself
    /// still reach the API server directly.
    pub async fn start_operator_through(
        &mut self,
        proxy: &crate::fault_proxy::FaultProxy,
    ) -> Result<()> {
        let OperatorHandle::InProcess { running, config } = &mut self.operator else {
            bail!("the chart's operator is not started by the test");
        };
        ensure!(running.is_none(), "the controllers are running");
        let direct = crate::operator_identity::config_with_token(
            self.env,
            crate::operator_identity::mint_token(self.env).await?,
        )
        .await?;
        let client = Client::try_from(proxy.config_for(direct)?)
            .context("the operator's client through the fault proxy")?;
        *running = Some(Operator::start(
            client,
            config.as_ref().clone(),
            &self.ns.name,
        )?);
        Ok(())
    }

    /// Kills the in-process controllers of a [`Studio::start`] where they are (a crash: no
    /// reconcile finishes); the runner pods and the sidecar go on.
    pub async fn kill_operator(&mut self) -> Result<()> {
        let OperatorHandle::InProcess { running, .. } = &mut self.operator else {
            bail!("the chart's operator is not killed by the test");
        };
        running
            .take()
            .context("the controllers are not running")?
            .kill()
            .await;
        Ok(())
    }

    /// Installs the chart into a new namespace, serving it alone, with the operator's pod and
    /// every runner and probe pod run from the project's images (see the module docs); returns
    /// once the controller runs and the sidecar answers.
    pub async fn install(options: ChartStudioOptions<'_>) -> Result<Studio> {
        Studio::install_on(ChartNode::default(), options).await
    }

    /// [`Studio::install`] on the node `node` says, in a namespace labelled as it says.
    pub async fn install_on(
        node: ChartNode<'_>,
        options: ChartStudioOptions<'_>,
    ) -> Result<Studio> {
        let env = testenv::shared_async().await?;
        ensure_crds(env).await?;
        let ns = TestNamespace::create(env, options.prefix).await?;
        let admin = env.admin().await?;
        if !node.namespace_labels.is_empty() {
            let labels: serde_json::Map<String, Value> = node
                .namespace_labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), json!(v)))
                .collect();
            let namespaces: Api<Namespace> = Api::all(admin.clone());
            namespaces
                .patch(
                    &ns.name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"metadata": {"labels": labels}})),
                )
                .await
                .with_context(|| format!("labelling namespace {}", ns.name))?;
        }
        let home = match node.kubelet {
            Kubelet::OperatorOnly => {
                Some(TestNamespace::create(env, &format!("{}-home", options.prefix)).await?)
            }
            Kubelet::Containers | Kubelet::ContainersAsShipped => None,
        };
        let release_ns = home.as_ref().unwrap_or(&ns).name.clone();
        if !options.prelude.trim().is_empty() {
            apply_yaml(&admin, Some(&release_ns), options.prelude).await?;
        }
        let exec = match node.kubelet {
            Kubelet::Containers | Kubelet::OperatorOnly => {
                container_executor(env, &admin, &release_ns).await?
            }
            Kubelet::ContainersAsShipped => {
                container_executor_from(
                    env,
                    &admin,
                    &release_ns,
                    crate::images::built_with_pod_build,
                )
                .await?
            }
        };
        let installed = ChartOperator::install_serving(
            env,
            &release_ns,
            &ns.name,
            options.policies,
            options.values,
        )
        .await;
        let operator = match installed {
            Ok(o) => o,
            Err(e) => {
                let _ = exec.shutdown().await;
                return Err(e);
            }
        };
        let mut studio = Studio::of_chart(env, ns, admin, exec, operator, Vec::new());
        studio.home = home;
        studio.prepare(&options).await
    }

    /// A studio whose operator is the chart's `operator` (its sidecar is the studio's).
    fn of_chart(
        env: &'static TestEnv,
        ns: TestNamespace,
        admin: Client,
        exec: PodExecutor,
        operator: ChartOperator,
        fronts: Vec<Front>,
    ) -> Studio {
        Studio {
            env,
            ns,
            admin,
            sidecar_url: operator.sidecar_url.clone(),
            exec,
            operator: OperatorHandle::Chart(Box::new(operator)),
            bindings: None,
            fronts,
            home: None,
        }
    }

    /// Applies the options' manifests and binds its users; shuts the studio down on an error.
    async fn prepare(self, options: &ChartStudioOptions<'_>) -> Result<Studio> {
        let (env, studio) = (self.env, self);
        let ready = async {
            if !options.manifests.trim().is_empty() {
                apply_yaml(&studio.admin, Some(&studio.ns.name), options.manifests).await?;
            }
            for user in options.users {
                grant_studio_user(env, &studio.ns.name, user).await?;
            }
            anyhow::Ok(())
        }
        .await;
        if let Err(e) = ready {
            let _ = studio.shutdown().await;
            return Err(e);
        }
        Ok(studio)
    }

    /// Installs the chart with `replicated.replicas` operator pods on one PostgreSQL database,
    /// every pod (the operator's, runners, probes) in its own network namespace on a bridge of
    /// the test's, so each replica has its own address and the NetworkPolicies are enforced:
    /// the chart's own policy for the operator's pods (here narrowed to the node's real
    /// endpoints: the API server's forward on the gateway and PostgreSQL's front) and the
    /// operator's run policies. The operator's pods reach the API server through the
    /// `kubernetes` Service, as in a cluster.
    ///
    /// Runners reach the sidecar through a Service of the test's, `sidecar-front` (the dev node
    /// has no cluster DNS, so `sidecar.url` names a cluster IP, which must exist before the
    /// install), that selects only the pods labelled `test.orrery.dev/front=true`: the first
    /// replica by name. The returned URLs are every replica's sidecar by pod address, that
    /// first replica's first ([`Studio::sidecar_url`] is it too).
    pub async fn install_replicated(
        options: ChartStudioOptions<'_>,
        replicated: ReplicatedOptions<'_>,
    ) -> Result<(Studio, Vec<String>)> {
        let env = testenv::shared_async().await?;
        ensure_crds(env).await?;
        let ns = TestNamespace::create(env, options.prefix).await?;
        let admin = env.admin().await?;
        if !options.prelude.trim().is_empty() {
            apply_yaml(&admin, Some(&ns.name), options.prelude).await?;
        }
        let network = NetworkConfig::named(replicated.bridge, replicated.subnet.parse()?);
        let gateway = network.gateway()?;
        let exec = isolated_executor(env, &admin, &ns.name, network).await?;
        let installed = async {
            let (front, secret) =
                postgres_front(&admin, &ns.name, gateway, replicated.database).await?;
            let cluster_ip = sidecar_front(&admin, &ns.name).await?;
            let sidecar_url = format!("http://{cluster_ip}:{SIDECAR_PORT}");
            let ports = crate::chart::DevPorts {
                sidecar: SIDECAR_PORT,
                metrics: METRICS_PORT,
                sidecar_metrics: SIDECAR_METRICS_PORT,
            };
            let mut sets = crate::chart::dev_node_values(&cluster_ip, ports);
            sets.extend([
                format!("replicaCount={}", replicated.replicas),
                "controller.leaderElection.enabled=true".to_owned(),
                "store.type=postgres".to_owned(),
                format!("store.postgres.urlSecret.name={secret}"),
                format!("networkPolicy.apiServer.cidrs={{{gateway}/32}}"),
                format!(
                    "networkPolicy.apiServer.ports={{{}}}",
                    crate::pod_executor::API_PORT
                ),
                format!("networkPolicy.postgres.cidrs={{{gateway}/32}}"),
                format!("networkPolicy.postgres.port={}", front.addr().port()),
            ]);
            let operator = ChartOperator::helm_install(
                env,
                &ns.name,
                &ns.name,
                sets,
                options.policies,
                options.values,
                &sidecar_url,
                SIDECAR_PORT,
            )
            .await?;
            anyhow::Ok((front, operator))
        }
        .await;
        let (front, mut operator) = match installed {
            Ok(done) => done,
            Err(e) => {
                let _ = exec.shutdown().await;
                return Err(e);
            }
        };
        let replicas = async {
            let urls = wait_replicas(&admin, &ns.name, &operator.name, replicated.replicas).await?;
            for url in &urls {
                wait_sidecar(url, INSTALL_TIMEOUT)
                    .await
                    .with_context(|| format!("the replica's sidecar at {url} did not answer"))?;
            }
            if options.policies {
                wait_policies_act(env, &ns.name).await?;
            }
            anyhow::Ok(urls)
        }
        .await;
        if let Ok(urls) = &replicas
            && let Some(first) = urls.first()
        {
            first.clone_into(&mut operator.sidecar_url);
        }
        let studio = Studio::of_chart(env, ns, admin, exec, operator, vec![front]);
        let urls = match replicas {
            Ok(urls) => urls,
            Err(e) => {
                let _ = studio.shutdown().await;
                return Err(e);
            }
        };
        Ok((studio.prepare(&options).await?, urls))
    }

    /// Runs `test` on this studio, then shuts it down whatever happened: an error, or a panic
    /// (an `assert!`), which goes on once the studio is down.
    pub async fn test(mut self, test: impl AsyncFnOnce(&mut Studio) -> Result<()>) -> Result<()> {
        use futures::FutureExt as _;
        let result = std::panic::AssertUnwindSafe(test(&mut self))
            .catch_unwind()
            .await;
        let stopped = self.shutdown().await;
        match result {
            Ok(result) => result.and(stopped),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// The chart's operator, unless the controllers run in-process ([`Studio::start`]).
    pub fn chart(&self) -> Option<&ChartOperator> {
        match &self.operator {
            OperatorHandle::Chart(operator) => Some(operator),
            OperatorHandle::InProcess { .. } => None,
        }
    }

    /// The dev node that runs the namespace's pods (for a [`Kubelet::OperatorOnly`] studio, the
    /// release namespace's).
    pub fn executor(&self) -> &PodExecutor {
        &self.exec
    }

    /// Kills container `container` of pod `pod` in the namespace with SIGKILL where it runs (as
    /// a crash or the kernel's OOM killer would): `runc kill`, in container mode.
    pub async fn kill_container(&self, pod: &str, container: &str) -> Result<()> {
        let pod = self.pods().get(pod).await?;
        let id = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.iter().find(|c| c.name == container))
            .and_then(|c| c.container_id.clone())
            .with_context(|| {
                format!("pod {} has no containerID for {container}", pod.name_any())
            })?;
        let id = id
            .strip_prefix("runc://")
            .with_context(|| format!("containerID {id}: not a runc container"))?;
        let state = self
            .executor()
            .runc_state_dir()
            .context("container mode has a runc state directory")?;
        let out = tokio::process::Command::new("runc")
            .arg("--root")
            .arg(state)
            .args(["kill", id, "KILL"])
            .output()
            .await?;
        ensure!(
            out.status.success(),
            "runc kill {id}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    }

    /// Server-side applies `yaml` (one or more documents) in the namespace, as admin.
    pub async fn apply(&self, yaml: &str) -> Result<()> {
        apply_yaml(&self.admin, Some(&self.ns.name), yaml).await?;
        Ok(())
    }

    /// The namespace's runs, as admin.
    pub fn runs(&self) -> Api<StudioRun> {
        self.ns.api(&self.admin)
    }

    /// The namespace's pods, as admin.
    pub fn pods(&self) -> Api<Pod> {
        self.ns.api(&self.admin)
    }

    /// Waits until run `name` is in `phase`.
    pub async fn wait_phase(&self, name: &str, phase: RunPhase) -> Result<StudioRun> {
        self.wait_run(name, &format!("{phase:?}"), move |r| {
            r.status.as_ref().and_then(|s| s.phase) == Some(phase)
        })
        .await
    }

    /// Waits until the `Succeeded` condition of run `name` has `reason` (a wait, a queue, a
    /// refusal).
    pub async fn wait_reason(&self, name: &str, reason: &str) -> Result<StudioRun> {
        let want = reason.to_owned();
        self.wait_run(name, reason, move |r| {
            r.status
                .as_ref()
                .and_then(|s| find(&s.conditions, "Succeeded"))
                .is_some_and(|c| c.reason == want)
        })
        .await
    }

    /// Starts a run through this studio's sidecar as the holder of `token` (see
    /// [`start_via_api`]); returns its name.
    pub async fn start_via_api(&self, token: &str, body: Value) -> Result<String> {
        start_via_api(&self.sidecar_url, &self.ns.name, token, body).await
    }

    /// Waits until run `name` waits for a person; returns the run as it is then (its first
    /// pending approval is `status.pendingApprovals[0]`).
    pub async fn wait_pending_approval(&self, name: &str) -> Result<StudioRun> {
        self.wait_run(name, "a pending approval", |r: &StudioRun| {
            r.status.as_ref().is_some_and(|s| {
                s.phase == Some(RunPhase::AwaitingApproval) && !s.pending_approvals.is_empty()
            })
        })
        .await
    }

    /// Waits until run `name` satisfies `ready`.
    pub async fn wait_run(
        &self,
        name: &str,
        what: &str,
        ready: impl Fn(&StudioRun) -> bool + Send + 'static,
    ) -> Result<StudioRun> {
        wait_for(
            &self.runs(),
            name,
            what,
            RUN_TIMEOUT,
            move |r: Option<&StudioRun>| r.is_some_and(&ready),
        )
        .await?
        .with_context(|| format!("{name} is gone"))
    }

    /// The runner pods of run `run` (by its UID label), however many there are.
    pub async fn runner_pods(&self, run: &StudioRun) -> Result<Vec<Pod>> {
        let uid = run.uid().context("uid")?;
        Ok(self
            .pods()
            .list(&ListParams::default().labels(&format!("{RUN_UID_LABEL}={uid}")))
            .await?
            .items)
    }

    /// The children of runs in the namespace (pods, Secrets and NetworkPolicies with the run
    /// UID label), of the run `uid` only when given: each as `Kind/name` and the run UID it
    /// names.
    pub async fn run_children(&self, uid: Option<&str>) -> Result<Vec<(String, String)>> {
        use k8s_openapi::api::core::v1::Secret;
        use k8s_openapi::api::networking::v1::NetworkPolicy;
        let selector = ListParams::default().labels(&match uid {
            Some(uid) => format!("{RUN_UID_LABEL}={uid}"),
            None => RUN_UID_LABEL.to_owned(),
        });
        fn named(kind: &str, meta: kube::api::ObjectMeta) -> (String, String) {
            let uid = meta
                .labels
                .as_ref()
                .and_then(|l| l.get(RUN_UID_LABEL).cloned())
                .unwrap_or_default();
            (format!("{kind}/{}", meta.name.unwrap_or_default()), uid)
        }
        let mut children = Vec::new();
        for pod in self.pods().list(&selector).await?.items {
            children.push(named("Pod", pod.metadata));
        }
        let secrets: Api<Secret> = self.ns.api(&self.admin);
        for secret in secrets.list(&selector).await?.items {
            children.push(named("Secret", secret.metadata));
        }
        let policies: Api<NetworkPolicy> = self.ns.api(&self.admin);
        for policy in policies.list(&selector).await?.items {
            children.push(named("NetworkPolicy", policy.metadata));
        }
        Ok(children)
    }

    /// Where the dev node keeps what `pod`'s runner container wrote (`kubectl logs`).
    fn runner_log_file(&self, pod: &Pod) -> std::path::PathBuf {
        self.exec.pod_dir(pod).join("logs").join("runner.log")
    }

    /// The trace the runner printed on its standard output (`kubectl logs`), event by event.
    pub async fn runner_log(&self, run: &StudioRun) -> Result<Vec<TraceEvent>> {
        let pods = self.runner_pods(run).await?;
        let pod = pods.first().context("no runner pod")?;
        let log = self.runner_log_file(pod);
        let text =
            std::fs::read_to_string(&log).with_context(|| format!("reading {}", log.display()))?;
        Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str::<TraceEvent>(l).ok())
            .collect())
    }

    /// Waits until the runner of run `name` has started the run (its `run.start` event is in
    /// the pod's log): its signal handlers are installed by then. A SIGTERM before that reaches
    /// a container's first process with no handler yet, which the kernel ignores (as in any
    /// cluster), and only the grace period's SIGKILL would stop it.
    pub async fn wait_run_started(&self, name: &str) -> Result<()> {
        let run = self.runs().get(name).await?;
        crate::harness::eventually(RUN_TIMEOUT, || async {
            let pods = self.runner_pods(&run).await?;
            let pod = pods.first().context("no runner pod yet")?;
            let log = self.runner_log_file(pod);
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            ensure!(
                text.contains("\"type\":\"run.start\""),
                "no run.start in {} yet",
                log.display()
            );
            Ok(())
        })
        .await
    }

    /// The Events about the object `name` in the namespace, as `(reason, note)`.
    pub async fn events_of(&self, name: &str) -> Result<Vec<(String, String)>> {
        let events: Api<Event> = self.ns.api(&self.admin);
        Ok(events
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
            .collect())
    }

    /// What every container of the namespace's pods wrote (standard output and error, as
    /// `kubectl logs` shows it): `(pod, container, text)` for each log file the dev node kept,
    /// the chart's operator pod (controller, sidecar) and runner and probe pods alike.
    pub async fn container_logs(&self) -> Result<Vec<(String, String, String)>> {
        let pods: Api<Pod> = self.ns.api(&self.admin);
        let mut out = Vec::new();
        for pod in pods.list(&ListParams::default()).await?.items {
            let dir = self.exec.pod_dir(&pod).join("logs");
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let Some(container) = path.file_stem().and_then(|s| s.to_str()) else {
                    continue;
                };
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("reading {}", path.display()))?;
                out.push((pod.name_any(), container.to_owned(), text));
            }
        }
        Ok(out)
    }

    /// Stops the operator (the in-process controllers, or `helm uninstall` of the chart's
    /// release and its pod gone) and the pod executor, and removes the policy bindings. Each
    /// step runs even when an earlier one failed (so no pod's process outlives the test); the
    /// first error is returned.
    pub async fn shutdown(self) -> Result<()> {
        let stopped = match self.operator {
            OperatorHandle::InProcess { running, .. } => match running {
                Some(operator) => operator.stop().await,
                None => Ok(()),
            },
            OperatorHandle::Chart(operator) => operator.stop().await,
        };
        let node = self.exec.shutdown().await.map_err(anyhow::Error::from);
        for front in self.fronts {
            front.stop().await;
        }
        drop(self.bindings);
        stopped.and(node)
    }
}

/// Binds the example `studio-user` Role (`examples/rbac/`) to `user` in `ns` (RoleBinding
/// `<user>-studio-user`), and waits until the authorizer lets them create runs there.
pub async fn grant_studio_user(env: &TestEnv, ns: &str, user: &str) -> Result<()> {
    grant_studio_role(
        env,
        ns,
        &format!("{user}-studio-user"),
        &[Subject::User(user)],
    )
    .await?;
    if let Ok(client) = env.client(user).await {
        wait_allowed(
            &client,
            Some(ns),
            "create",
            "studio.orrery.dev",
            "studioruns",
        )
        .await?;
    }
    Ok(())
}

/// Applies the example `studio-user` Role in `ns` (`kubectl apply -f
/// examples/rbac/studio-user-role.yaml`, with the file's own example RoleBinding) and binds it to
/// `subjects` as RoleBinding `binding` ([`studio_user_binding`]). The authorizer learns of a
/// RoleBinding a moment later: wait for what the subjects may do before relying on it.
pub async fn grant_studio_role(
    env: &TestEnv,
    ns: &str,
    binding: &str,
    subjects: &[Subject<'_>],
) -> Result<()> {
    apply_example(env, ns, "examples/rbac/studio-user-role.yaml").await?;
    apply_yaml(
        &env.admin().await?,
        Some(ns),
        &studio_user_binding(binding, subjects),
    )
    .await?;
    Ok(())
}

/// `kubectl apply -n <ns> -f <file>` as the admin, `file` relative to the workspace.
async fn apply_example(env: &TestEnv, ns: &str, file: &str) -> Result<()> {
    kubectl_ok(env, ADMIN, &["apply", "-n", ns, "-f", file])
        .await
        .map(drop)
}

/// Applies the example `composition-editor` Role in `ns` (`kubectl apply -f
/// examples/rbac/composition-editor-role.yaml`, with the file's own example RoleBinding), binds
/// it to `user` (RoleBinding `<user>-composition-editor`), and waits until the authorizer lets
/// them patch Compositions there: what saving through the sidecar needs.
pub async fn grant_composition_editor(env: &TestEnv, ns: &str, user: &str) -> Result<()> {
    apply_example(env, ns, "examples/rbac/composition-editor-role.yaml").await?;
    apply_yaml(
        &env.admin().await?,
        Some(ns),
        &role_binding(
            &format!("{user}-composition-editor"),
            "composition-editor",
            &[Subject::User(user)],
        ),
    )
    .await?;
    let client = env.client(user).await?;
    wait_allowed(
        &client,
        Some(ns),
        "patch",
        "studio.orrery.dev",
        "compositions",
    )
    .await
}

/// A user's bearer token (`TESTENV_<USER>_TOKEN`).
pub fn token(env: &TestEnv, user: &str) -> Result<String> {
    let key = format!("TESTENV_{}_TOKEN", user.to_uppercase());
    env.var(&key)
        .map(str::to_owned)
        .with_context(|| format!("{key} missing from the testenv"))
}

/// Waits until the sidecar at `url` answers `/healthz` (at most `timeout`).
pub async fn wait_sidecar(url: &str, timeout: Duration) -> Result<()> {
    let health = format!("{url}/healthz");
    let http = http_client()?;
    crate::harness::eventually(timeout, || async {
        let response = http.get(&health).send().await?;
        ensure!(
            response.status().is_success(),
            "{health}: {}",
            response.status()
        );
        Ok(())
    })
    .await
}

/// An HTTP client for the sidecar's API: no proxy, a timeout.
pub fn http_client() -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()
        .context("http client")
}

/// Starts a run in `ns` through the sidecar at `sidecar` as the holder of `token` (`body` as
/// `POST /api/v1/runs/{ns}` takes it); returns the created run's name. Anything but 201 is an
/// error carrying the reply.
pub async fn start_via_api(sidecar: &str, ns: &str, token: &str, body: Value) -> Result<String> {
    let (status, run) = api_call(
        reqwest::Method::POST,
        format!("{sidecar}/api/v1/runs/{ns}"),
        token,
        Some(body),
    )
    .await?;
    ensure!(
        status == reqwest::StatusCode::CREATED,
        "start: {status} {run}"
    );
    run["metadata"]["name"]
        .as_str()
        .map(str::to_owned)
        .context("the created run has a name")
}

/// A call to the sidecar's API as the holder of `token`: the status and the JSON body (a body
/// that is not JSON comes back as `{"raw": …}`).
pub async fn api_call(
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<Value>,
) -> Result<(reqwest::StatusCode, Value)> {
    let mut request = http_client()?.request(method, url).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await?;
    let status = response.status();
    let text = response.text().await?;
    Ok((
        status,
        serde_json::from_str(&text).unwrap_or(json!({ "raw": text })),
    ))
}
