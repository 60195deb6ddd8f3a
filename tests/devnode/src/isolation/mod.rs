//! Isolated pod networking for container mode ([`NetworkMode::Isolated`]): the executor owns a
//! [`PodNetwork`] (a bridge, e.g. `orrery0` on `10.213.0.0/24`), gives every pod that runs
//! runc containers a network namespace of its own with an address on it before any container
//! starts (all the pod's containers join that namespace; `status.podIP`/`podIPs` report the
//! address), and keeps the NetworkPolicies that select the pod loaded as nftables rules inside
//! that namespace ([`policies`]). The pod's namespace, veth and rules go when the pod ends; the
//! bridge and everything with the network's names go at shutdown, and a crashed earlier run's
//! leftovers with the same names are cleared at start ([`PodNetwork::create`]).
//!
//! Process-mode containers (images without an archive) stay in the host's network, as do all
//! pods in [`NetworkMode::Host`], the default.

mod policies;
pub mod services;

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::{Client, ResourceExt};
use tokio_util::sync::CancellationToken;

use crate::net::{NetError, NetworkConfig, PodNet, PodNetwork};
use crate::netpol::{Ruleset, TranslateError};

pub(crate) use policies::{Policies, describe};

/// The network a container-mode pod gets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum NetworkMode {
    /// The host's network, shared by every pod (the default; what the tests that reach pods on
    /// 127.0.0.1 and `orrery up --pod-network host` use). NetworkPolicies are not enforced.
    #[default]
    Host,
    /// A network namespace per pod on the bridge `config` names, and the NetworkPolicies that
    /// select the pod enforced inside it. Needs root, `ip` (iproute2) and `nft` (nftables).
    Isolated(NetworkConfig),
}

impl NetworkMode {
    /// Isolated on the default bridge `orrery0`, `10.213.0.0/24`.
    pub fn isolated() -> NetworkMode {
        NetworkMode::Isolated(NetworkConfig::default())
    }
}

/// Why isolated networking could not start, or could not give a pod its network.
#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    #[error("pod network: {0}")]
    Net(#[from] NetError),
    #[error("pod {pod}: {source}; fix or delete the policy (the pod waits until then)")]
    Translate {
        pod: String,
        #[source]
        source: TranslateError,
    },
    #[error("{action}: {source}")]
    Kube {
        action: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error(
        "watching {what} for NetworkPolicy enforcement: no list within {timeout:?}; the \
         executor's credentials must list and watch pods, namespaces, services and \
         networkpolicies in every namespace"
    )]
    NotListed {
        what: &'static str,
        timeout: Duration,
    },
    #[error(
        "listening on {address} (the pods' way to the API server): {source}; something else \
         listens there: stop it, or give this node a network of its own (NetworkConfig::named)"
    )]
    ApiForward {
        address: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the pod network task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// The executor's pod network and policy enforcement (isolated mode).
pub(crate) struct Isolation {
    network: Arc<PodNetwork>,
    policies: Arc<Policies>,
    token: CancellationToken,
    tasks: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Isolation")
            .field("network", &self.network)
            .finish_non_exhaustive()
    }
}

/// How long [`Isolation::start`] waits for the first lists of pods and namespaces.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);

impl Isolation {
    /// Makes the bridge (clearing what an earlier run with the same names left), starts the
    /// forward to the API server at `api_server` (`https://<address>:<port>`; see
    /// [`services`]) and watching NetworkPolicies, Services, pods and namespaces; returns once
    /// the first lists are in.
    pub async fn start(
        client: Client,
        config: NetworkConfig,
        api_server: Option<&str>,
    ) -> Result<Isolation, IsolationError> {
        let network = tokio::task::spawn_blocking(move || PodNetwork::create(config)).await??;
        let network = Arc::new(network);
        let token = CancellationToken::new();
        let mut tasks = Vec::new();
        let mut api = None;
        let upstream = match api_server {
            Some(url) => {
                let found = services::upstream_of(url).await;
                if found.is_none() {
                    eprintln!(
                        "pod-executor: the API server {url} is not an https://host:port that \
                         resolves: isolated pods get no `kubernetes` Service"
                    );
                }
                found
            }
            None => None,
        };
        if let Some(upstream) = upstream {
            let subnet = network.subnet();
            match services::ApiForward::start(network.gateway(), subnet, upstream, token.clone())
                .await
            {
                Ok((forward, task)) => {
                    api = Some(forward.endpoint);
                    tasks.push(task);
                }
                Err(e) => {
                    token.cancel();
                    let config = network.config().clone();
                    let _ = tokio::task::spawn_blocking(move || {
                        PodNetwork::teardown_leftovers(&config)
                    })
                    .await;
                    return Err(e);
                }
            }
        }
        let (policies, more) = Policies::start(client, network.gateway(), api, token.clone());
        tasks.extend(more);
        let isolation = Isolation {
            network,
            policies,
            token,
            tasks: std::sync::Mutex::new(tasks),
        };
        if let Err(e) = isolation.policies.ready(LIST_TIMEOUT).await {
            let _ = isolation.shutdown().await;
            return Err(e);
        }
        Ok(isolation)
    }

    /// `KUBERNETES_SERVICE_*` for a pod with its own namespace: the `kubernetes` Service's
    /// cluster IP, routed to the node's forward to the API server (`None` without one).
    pub fn service_env(&self) -> Option<Vec<(String, String)>> {
        self.policies.service_env()
    }

    /// The bridge's address: where pods reach the host's services.
    pub fn gateway(&self) -> Ipv4Addr {
        self.network.gateway()
    }

    /// Gives `pod` its namespace and address and loads the rules of the policies selecting it
    /// (before any of its containers may start). On a failure nothing of the pod is left.
    pub async fn attach(&self, pod: &Pod) -> Result<(PodNet, Ruleset), IsolationError> {
        let id = pod_id(pod);
        let network = self.network.clone();
        let net_id = id.clone();
        // A namespace left by an earlier attempt for this pod.
        let podnet = tokio::task::spawn_blocking(move || {
            if network.pod(&net_id).is_some() {
                network.remove_pod(&net_id)?;
            }
            network.add_pod(&net_id)
        })
        .await??;
        match self.policies.register(&id, pod, &podnet).await {
            Ok(ruleset) => Ok((podnet, ruleset)),
            Err(e) => {
                self.detach_id(&id).await;
                Err(e)
            }
        }
    }

    /// Removes the pod's rules, namespace and veth (its containers have stopped).
    pub async fn detach(&self, pod: &Pod) {
        self.detach_id(&pod_id(pod)).await;
    }

    async fn detach_id(&self, id: &str) {
        self.policies.unregister(id).await;
        let network = self.network.clone();
        let owned = id.to_owned();
        let removed = tokio::task::spawn_blocking(move || match network.remove_pod(&owned) {
            Err(NetError::UnknownPod(_)) => Ok(()),
            other => other,
        })
        .await;
        match removed {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("pod-executor: removing the network of pod {id}: {e}"),
            Err(e) => eprintln!("pod-executor: removing the network of pod {id}: {e}"),
        }
    }

    /// Stops the watches and removes the bridge and every pod namespace and veth of the
    /// network (by their names, so also those of pods still attached).
    pub async fn shutdown(&self) -> Result<(), IsolationError> {
        self.token.cancel();
        let tasks = std::mem::take(
            &mut *self
                .tasks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for task in tasks {
            let _ = task.await;
        }
        let config = self.network.config().clone();
        tokio::task::spawn_blocking(move || PodNetwork::teardown_leftovers(&config)).await??;
        Ok(())
    }
}

impl Drop for Isolation {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

/// The id a pod's network is known by: its UID (unique on the node; its namespace is
/// `<prefix><uid>`).
fn pod_id(pod: &Pod) -> String {
    pod.uid()
        .unwrap_or_else(|| format!("{}-{}", pod.namespace().unwrap_or_default(), pod.name_any()))
}
