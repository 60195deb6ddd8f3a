//! The development node: a stand-in kubelet for tests and for `orrery up` on one machine (never
//! part of a production install; a real cluster's kubelet runs the pods there).
//!
//! The test control plane has no kubelet and no scheduler. [`PodExecutor::start`] registers a
//! Node, binds pods that name no node to it (a `Binding`, like the scheduler), and runs the pods
//! bound to it whose images are the project's own (`orrery/runner:*` → the `orrery` binary,
//! `orrery/podtest:*` → `orrery-podtest`; see [`images`]) as local processes:
//!
//! - argv from `command`/`args` with `$(VAR)` expansion ([`expand`]); env from `env` (value,
//!   `secretKeyRef`, `configMapKeyRef`, `fieldRef`) and `envFrom` ([`launch`]);
//! - Secret, ConfigMap, emptyDir, downwardAPI and projected volumes (service-account tokens
//!   too) written to a per-pod directory, mount paths mapped through `ORRERY_MOUNT_ROOT` and path
//!   rewriting ([`launch`] explains the mapping, [`volumes`] the files);
//! - status patched like the kubelet ([`status`]): Pending (`ContainerCreating`) → Running
//!   (conditions, `startTime`, `containerStatuses` with `containerID: local://<pid>`, podIP
//!   127.0.0.1) → Succeeded/Failed with exit code, reason `Completed`/`Error` and the
//!   termination message from `terminationMessagePath`; restarts per `restartPolicy`;
//! - deletion: SIGTERM to the container's process group, SIGKILL after the grace period, the
//!   final status, then `DELETE` with grace period 0;
//! - `activeDeadlineSeconds` (counted from the start, re-read when the pod changes, so it may be
//!   lowered on a running pod): SIGTERM, SIGKILL after the grace period, then `Failed` with
//!   reason `DeadlineExceeded`, the object kept;
//! - an image that is not the project's: the pod fails with reason `ErrImagePull`.
//!
//! Container mode ([`ExecutorConfig::images_dir`], `orrery-devnode --images-dir` or
//! `ORRERY_IMAGES_DIR`): an image whose `<images dir>/NAME.tar` exists (`orrery/operator` →
//! `operator.tar`, as `tests/images/build.sh` writes) runs as a runc container instead
//! ([`container`]): its root filesystem unpacked once per manifest digest, a bundle per
//! container made from the Pod (Kubernetes `command`/`args` over `Entrypoint`/`Cmd`, env, user,
//! `readOnlyRootFilesystem`, volume mounts as binds, `fsGroup` on the volume files), the host's
//! network by default, `containerID: runc://<id>`; stopped with `runc kill` TERM then KILL and
//! `runc delete`. Other images still run as processes; each pod logs which mode its containers
//! use.
//!
//! Isolated pod networking ([`ExecutorConfig::pod_network`] with [`NetworkMode::Isolated`],
//! `orrery-devnode --pod-network isolated`): a pod with runc containers gets a network
//! namespace of its own with an address on a bridge this node owns ([`net`]) before anything
//! of it starts, reported as `status.podIP`/`podIPs`; the NetworkPolicies selecting it are
//! loaded as nftables rules inside that namespace before its first container starts and kept
//! current while it runs ([`netpol`]); the namespace goes with the pod, the bridge with the
//! executor. The host network stays the default.
//!
//! Not done: probes (containers are ready when started), resource limits, `kubectl
//! logs/exec` (logs are in `<pod dir>/logs/<container>.log`), Events, native sidecars.
//!
//! It runs as a task of the calling tokio runtime; call [`PodExecutor::shutdown`] at the end
//! of a test (its pods end `Failed`/`Terminated` like on a node shutdown, so their namespace
//! can be deleted). Dropping it without that kills its processes when the runtime stops.

pub mod container;
mod dispatch;
pub mod expand;
pub mod images;
mod isolation;
pub mod launch;
pub mod net;
pub mod netpol;
mod node;
pub mod objects;
pub mod oci;
pub mod process;
pub mod status;
pub mod volumes;
mod worker;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::{Client, ResourceExt};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub use images::{BIN_DIR_ENV, ImageTable, PROJECT_IMAGES, default_bin_dir};
pub use isolation::services::API_PORT;
pub use isolation::{IsolationError, NetworkMode};
pub use launch::MOUNT_ROOT_ENV;
pub use node::NODE_LABEL;
pub use status::CONTAINER_ID_PREFIX;

/// Keeps pod directories (and the work directory) after pods end, for debugging.
pub const KEEP_ENV: &str = "ORRERY_TESTENV_KEEP";

/// An error of the executor itself (not of a pod: those end up in the pod's status).
#[derive(Debug, thiserror::Error)]
pub enum PodExecutorError {
    #[error("{action}: {source}")]
    Kube {
        action: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("watching pods failed before the first list: {0}")]
    Watch(String),
    #[error("watching pods: no list within {0:?}")]
    WatchTimeout(Duration),
    #[error("the pod executor task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Container(#[from] container::ContainerError),
    #[error(transparent)]
    Isolation(#[from] IsolationError),
    #[error(
        "isolated pod networking is for container mode (runc): set an images directory \
         (ExecutorConfig::images_dir, --images-dir) or use NetworkMode::Host"
    )]
    IsolationWithoutContainers,
    #[error(
        "runc containers left after shutdown (state in {}): {}",
        state.display(),
        left.join("; ")
    )]
    ContainersLeft { state: PathBuf, left: Vec<String> },
}

impl PodExecutorError {
    pub(crate) fn kube(action: impl Into<String>, source: kube::Error) -> Self {
        PodExecutorError::Kube {
            action: action.into(),
            source: Box::new(source),
        }
    }

    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        PodExecutorError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// How a [`PodExecutor`] runs.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// The Node it registers and runs pods for.
    pub node_name: String,
    /// Only pods of this namespace (default: all namespaces). Tests running in parallel each
    /// scope their executor to their own namespace.
    pub namespace: Option<String>,
    /// Where the project's binaries are (default: [`default_bin_dir`]).
    pub bin_dir: PathBuf,
    /// Where pod directories go (default: a fresh directory under the temp dir, removed by
    /// [`PodExecutor::shutdown`] unless `ORRERY_TESTENV_KEEP` is set).
    pub work_dir: Option<PathBuf>,
    /// The apiserver's URL (`https://host:port`): sets `KUBERNETES_SERVICE_HOST`/`_PORT` in
    /// every container, as the kubelet does.
    pub api_server: Option<String>,
    /// Node and pod IP.
    pub host_ip: String,
    /// First restart back-off; doubled per restart up to `max_restart_backoff` (the kubelet
    /// uses 10 s and 5 min; tests want less).
    pub restart_backoff: Duration,
    pub max_restart_backoff: Duration,
    /// Longest grace period on [`PodExecutor::shutdown`].
    pub shutdown_grace: Duration,
    /// Container mode: an image whose repository's last component is `NAME` runs with runc
    /// from `<images_dir>/NAME.tar` when that exists (see [`container`]); other images, and
    /// all images without this, run as local processes.
    pub images_dir: Option<PathBuf>,
    /// The network of container-mode pods: the host's (the default) or a namespace per pod
    /// with NetworkPolicies enforced ([`NetworkMode::Isolated`], which needs `images_dir`).
    pub pod_network: NetworkMode,
    /// Variables set in every container besides its own (after the pod's, which
    /// they do not override): a test's way to run every pod of the node under a changed
    /// environment (a shifted clock, see `orrery_tests::skew`).
    pub extra_env: Vec<(String, String)>,
}

impl ExecutorConfig {
    /// Defaults for a node called `node_name`, all namespaces.
    pub fn new(node_name: impl Into<String>) -> ExecutorConfig {
        ExecutorConfig {
            node_name: node_name.into(),
            namespace: None,
            bin_dir: default_bin_dir(),
            work_dir: None,
            api_server: None,
            host_ip: "127.0.0.1".into(),
            restart_backoff: Duration::from_secs(1),
            max_restart_backoff: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(5),
            images_dir: None,
            pod_network: NetworkMode::Host,
            extra_env: Vec::new(),
        }
    }

    /// `name=value` in every container (see [`ExecutorConfig::extra_env`]).
    pub fn extra_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_env.push((name.into(), value.into()));
        self
    }

    /// How container-mode pods are networked (see [`ExecutorConfig::pod_network`]).
    pub fn pod_network(mut self, mode: NetworkMode) -> Self {
        self.pod_network = mode;
        self
    }

    /// Container mode for the images archived in `dir` (see [`ExecutorConfig::images_dir`]).
    pub fn images_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.images_dir = Some(dir.into());
        self
    }

    /// Only pods of `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Binaries from `dir`.
    pub fn bin_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.bin_dir = dir.into();
        self
    }

    /// `KUBERNETES_SERVICE_HOST`/`_PORT` from `url`.
    pub fn api_server(mut self, url: impl Into<String>) -> Self {
        self.api_server = Some(url.into());
        self
    }
}

/// What the pod workers share.
pub(crate) struct Ctx {
    pub client: Client,
    pub node_name: String,
    pub images: ImageTable,
    pub work_dir: PathBuf,
    pub host_ip: String,
    pub pod_ip: String,
    pub service_env: Vec<(String, String)>,
    pub restart_backoff: Duration,
    pub max_restart_backoff: Duration,
    pub shutdown_grace: Duration,
    pub keep: bool,
    /// Container mode, when the config names an images directory.
    pub containers: Option<Arc<container::ContainerRuntime>>,
    /// A network namespace per container-mode pod and its NetworkPolicies (isolated mode).
    pub isolation: Option<Arc<isolation::Isolation>>,
}

impl Ctx {
    pub fn pod_dir(&self, namespace: &str, name: &str, uid: &str) -> PathBuf {
        pod_dir(&self.work_dir, namespace, name, uid)
    }
}

fn pod_dir(work_dir: &Path, namespace: &str, name: &str, uid: &str) -> PathBuf {
    work_dir.join(format!("{namespace}_{name}_{uid}"))
}

/// A running pod executor. See the module docs.
pub struct PodExecutor {
    client: Client,
    node_name: String,
    work_dir: PathBuf,
    keep: bool,
    containers: Option<Arc<container::ContainerRuntime>>,
    isolation: Option<Arc<isolation::Isolation>>,
    token: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for PodExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodExecutor")
            .field("node_name", &self.node_name)
            .field("work_dir", &self.work_dir)
            .finish_non_exhaustive()
    }
}

/// How long [`PodExecutor::start`] waits for the first list of pods.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);

impl PodExecutor {
    /// Registers Node `node_name` and runs pods of all namespaces on it.
    pub async fn start(client: Client, node_name: &str) -> Result<PodExecutor, PodExecutorError> {
        PodExecutor::start_with(client, ExecutorConfig::new(node_name)).await
    }

    /// Starts an executor as `config` says; returns once the Node is Ready and the pods are
    /// listed.
    pub async fn start_with(
        client: Client,
        config: ExecutorConfig,
    ) -> Result<PodExecutor, PodExecutorError> {
        let keep = std::env::var_os(KEEP_ENV).is_some_and(|v| !v.is_empty() && v != "0");
        let work_dir = match &config.work_dir {
            Some(d) => d.clone(),
            None => std::env::temp_dir().join(format!(
                "orrery-pod-executor-{}-{}",
                std::process::id(),
                config.node_name
            )),
        };
        std::fs::create_dir_all(&work_dir)
            .map_err(|e| PodExecutorError::io("creating", &work_dir, e))?;
        let containers = match &config.images_dir {
            Some(dir) => Some(Arc::new(container::ContainerRuntime::new(dir, &work_dir)?)),
            None => None,
        };
        let isolation = match (&config.pod_network, &containers) {
            (NetworkMode::Host, _) => None,
            (NetworkMode::Isolated(_), None) => {
                return Err(PodExecutorError::IsolationWithoutContainers);
            }
            (NetworkMode::Isolated(net), Some(_)) => Some(Arc::new(
                isolation::Isolation::start(
                    client.clone(),
                    net.clone(),
                    config.api_server.as_deref(),
                )
                .await?,
            )),
        };
        node::register(&client, &config.node_name, &config.host_ip).await?;

        let ctx = Arc::new(Ctx {
            client: client.clone(),
            node_name: config.node_name.clone(),
            images: ImageTable::new(&config.bin_dir),
            work_dir: work_dir.clone(),
            host_ip: config.host_ip.clone(),
            pod_ip: config.host_ip.clone(),
            service_env: config
                .api_server
                .as_deref()
                .map(service_env)
                .unwrap_or_default()
                .into_iter()
                .chain(config.extra_env.iter().cloned())
                .collect(),
            restart_backoff: config.restart_backoff,
            max_restart_backoff: config.max_restart_backoff,
            shutdown_grace: config.shutdown_grace,
            keep,
            containers: containers.clone(),
            isolation: isolation.clone(),
        });
        let api: Api<Pod> = match &config.namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        };
        let token = CancellationToken::new();
        let (listed_tx, listed_rx) = oneshot::channel();
        let task = tokio::spawn(dispatch::watch_pods(ctx, api, token.clone(), listed_tx));
        let executor = PodExecutor {
            client,
            node_name: config.node_name,
            work_dir,
            keep,
            containers,
            isolation,
            token,
            task: Some(task),
        };
        match tokio::time::timeout(LIST_TIMEOUT, listed_rx).await {
            Ok(Ok(Ok(()))) => Ok(executor),
            Ok(Ok(Err(e))) => {
                executor.shutdown().await?;
                Err(PodExecutorError::Watch(e))
            }
            Ok(Err(_)) | Err(_) => {
                executor.shutdown().await?;
                Err(PodExecutorError::WatchTimeout(LIST_TIMEOUT))
            }
        }
    }

    /// The Node's name.
    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// Where pod directories are.
    pub fn work_dir(&self) -> &Path {
        &self.work_dir
    }

    /// The directory of a pod (volumes/, `containers/<name>/root`, `logs/<container>.log`).
    pub fn pod_dir(&self, pod: &Pod) -> PathBuf {
        pod_dir(
            &self.work_dir,
            &pod.namespace().unwrap_or_default(),
            &pod.name_any(),
            &pod.uid().unwrap_or_default(),
        )
    }

    /// Stops: running pods get SIGTERM (SIGKILL after at most `shutdown_grace`) and end
    /// `Failed` with reason `Terminated`; the Node is deleted; the work directory removed
    /// (unless `ORRERY_TESTENV_KEEP` is set).
    pub async fn shutdown(mut self) -> Result<(), PodExecutorError> {
        self.token.cancel();
        if let Some(task) = self.task.take() {
            task.await?;
        }
        // The pods' containers were stopped with their pods; anything runc still knows (a
        // container whose pod worker failed) goes now.
        let left = match &self.containers {
            Some(rt) => {
                let rt = rt.clone();
                let failed = tokio::task::spawn_blocking(move || rt.remove_all()).await?;
                self.containers
                    .as_ref()
                    .filter(|_| !failed.is_empty())
                    .map(|rt| (rt.state_dir().to_path_buf(), failed))
            }
            None => None,
        };
        // Every pod's namespace, then the bridge (the workers detached their pods already).
        let network = match self.isolation.take() {
            Some(isolation) => isolation.shutdown().await,
            None => Ok(()),
        };
        // The Node last, and its error last too: an unreachable API server (a control plane
        // already stopped) must not skip the reports and the clean-up before it.
        let node = node::remove(&self.client, &self.node_name).await;
        if left.is_none() && !self.keep {
            let _ = std::fs::remove_dir_all(&self.work_dir);
        }
        network?;
        if let Some((state, left)) = left {
            return Err(PodExecutorError::ContainersLeft { state, left });
        }
        node?;
        Ok(())
    }

    /// The ids of the runc containers running now (container mode; empty otherwise).
    pub fn containers(&self) -> Vec<String> {
        self.containers
            .as_ref()
            .map(|rt| rt.containers())
            .unwrap_or_default()
    }

    /// The pod network's gateway (the bridge's address) in isolated mode: where pods reach
    /// services of this machine, which must listen on it (or on 0.0.0.0), not on 127.0.0.1.
    pub fn pod_gateway(&self) -> Option<std::net::Ipv4Addr> {
        self.isolation.as_ref().map(|i| i.gateway())
    }

    /// runc's state directory (`runc --root DIR list`), in container mode.
    pub fn runc_state_dir(&self) -> Option<&Path> {
        self.containers.as_ref().map(|rt| rt.state_dir())
    }
}

impl Drop for PodExecutor {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

/// `KUBERNETES_SERVICE_HOST`/`_PORT` (and `_PORT_HTTPS`) for `https://host:port`.
fn service_env(url: &str) -> Vec<(String, String)> {
    let hostport = url
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => (h, p),
        _ => (hostport, "443"),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    vec![
        ("KUBERNETES_SERVICE_HOST".into(), host.into()),
        ("KUBERNETES_SERVICE_PORT".into(), port.into()),
        ("KUBERNETES_SERVICE_PORT_HTTPS".into(), port.into()),
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn the_apiserver_url_becomes_the_kubernetes_service_env() {
        let env = service_env("https://127.0.0.1:6443");
        assert_eq!(
            env[0],
            ("KUBERNETES_SERVICE_HOST".into(), "127.0.0.1".into())
        );
        assert_eq!(env[1], ("KUBERNETES_SERVICE_PORT".into(), "6443".into()));
        let env = service_env("https://[::1]:8443/");
        assert_eq!(env[0].1, "::1");
        assert_eq!(service_env("https://kube.example")[1].1, "443");
    }

    #[test]
    fn pods_share_the_host_network_unless_isolation_is_asked_for() {
        let config = ExecutorConfig::new("n");
        assert_eq!(config.pod_network, NetworkMode::Host);
        let isolated = config.pod_network(NetworkMode::isolated());
        assert_eq!(
            isolated.pod_network,
            NetworkMode::Isolated(net::NetworkConfig::default())
        );
    }

    #[tokio::test]
    async fn isolated_networking_without_container_mode_is_refused_at_start() {
        let kube = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = Client::try_from(kube).unwrap();
        let work = std::env::temp_dir().join(format!("orrery-devnode-iso-{}", std::process::id()));
        let mut config = ExecutorConfig::new("n").pod_network(NetworkMode::isolated());
        config.work_dir = Some(work.clone());
        let err = PodExecutor::start_with(client, config).await.unwrap_err();
        let _ = std::fs::remove_dir_all(&work);
        assert!(
            matches!(err, PodExecutorError::IsolationWithoutContainers),
            "{err}"
        );
        assert!(err.to_string().contains("images directory"), "{err}");
    }
}
