//! Keeping every isolated pod's ruleset current: the NetworkPolicies of its namespace (read
//! fresh from the API server on every sync, so a policy created before the pod is never
//! missed), the pods of every namespace (peers of selectors) and the namespaces' labels
//! (watched), turned into one ruleset per pod by [`crate::netpol::translate`] and loaded by the
//! [`Enforcer`] only when its text changes.
//!
//! A pod is registered before its containers start: its first ruleset is loaded then, or the
//! pod does not start. After that, any change of a policy, a pod or a namespace triggers a
//! sync of every registered pod. Syncs run one at a time (a later sync never loads older
//! rules than an earlier one); a policy that cannot be translated leaves the pod's last rules
//! in place and is logged.
//!
//! Services are routed in the same ruleset ([`super::services`]); a change of a Service
//! syncs like any other.
//!
//! Peers' addresses: a pod of this node with its own namespace has its bridge address; a pod
//! whose `status.podIP` is a loopback address (process mode, host network) or that uses the
//! host network is reached at the gateway, so a policy allowing it allows the gateway; other
//! pods by their `status.podIP`.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, ListParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use tokio::sync::{Mutex, Notify};
use tokio_util::sync::CancellationToken;

use super::IsolationError;
use super::services::{self, ApiEndpoint};
use crate::net::PodNet;
use crate::netpol::{self, Enforcer, Inventory, NamedPort, Options, Protocol, Ruleset, TargetPod};

/// How long a burst of changes is gathered before one sync.
const DEBOUNCE: Duration = Duration::from_millis(50);

/// A pod of this node with its own network namespace.
#[derive(Debug, Clone)]
struct Target {
    namespace: String,
    name: String,
    netns: String,
    address: Ipv4Addr,
    labels: BTreeMap<String, String>,
    ports: Vec<NamedPort>,
}

/// See the module docs.
pub(crate) struct Policies {
    client: Client,
    gateway: Ipv4Addr,
    pods: Store<Pod>,
    namespaces: Store<Namespace>,
    services: Store<Service>,
    /// The node's forward to the API server (the `kubernetes` Service's endpoint).
    api: Option<ApiEndpoint>,
    policies_listed: Arc<Notify>,
    policies_ready: Arc<std::sync::atomic::AtomicBool>,
    /// uid → target; the lock also serialises syncs.
    targets: Mutex<BTreeMap<String, Target>>,
    enforcer: Arc<Enforcer>,
    changed: Arc<Notify>,
}

impl Policies {
    /// Starts the watches and the sync loop (they end with `token`).
    pub fn start(
        client: Client,
        gateway: Ipv4Addr,
        api: Option<ApiEndpoint>,
        token: CancellationToken,
    ) -> (Arc<Policies>, Vec<tokio::task::JoinHandle<()>>) {
        let changed = Arc::new(Notify::new());
        let (pods, pods_writer) = reflector::store::<Pod>();
        let (namespaces, ns_writer) = reflector::store::<Namespace>();
        let (services, services_writer) = reflector::store::<Service>();
        let policies = Arc::new(Policies {
            client: client.clone(),
            gateway,
            pods,
            namespaces,
            services,
            api,
            policies_listed: Arc::new(Notify::new()),
            policies_ready: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            targets: Mutex::new(BTreeMap::new()),
            enforcer: Arc::new(Enforcer::new()),
            changed: changed.clone(),
        });
        let mut tasks = Vec::new();
        let pod_stream = reflector::reflector(
            pods_writer,
            watcher::watcher(Api::<Pod>::all(client.clone()), watcher::Config::default()),
        )
        .default_backoff();
        tasks.push(tokio::spawn(forward(
            "pods",
            pod_stream,
            changed.clone(),
            None,
            token.clone(),
        )));
        let ns_stream = reflector::reflector(
            ns_writer,
            watcher::watcher(
                Api::<Namespace>::all(client.clone()),
                watcher::Config::default(),
            ),
        )
        .default_backoff();
        tasks.push(tokio::spawn(forward(
            "namespaces",
            ns_stream,
            changed.clone(),
            None,
            token.clone(),
        )));
        let services_stream = reflector::reflector(
            services_writer,
            watcher::watcher(
                Api::<Service>::all(client.clone()),
                watcher::Config::default(),
            ),
        )
        .default_backoff();
        tasks.push(tokio::spawn(forward(
            "services",
            services_stream,
            changed.clone(),
            None,
            token.clone(),
        )));
        let np_stream = watcher::watcher(
            Api::<NetworkPolicy>::all(client),
            watcher::Config::default(),
        )
        .default_backoff();
        let listed = (
            policies.policies_listed.clone(),
            policies.policies_ready.clone(),
        );
        tasks.push(tokio::spawn(forward(
            "networkpolicies",
            np_stream,
            changed,
            Some(listed),
            token.clone(),
        )));
        let looping = policies.clone();
        tasks.push(tokio::spawn(async move { looping.sync_loop(token).await }));
        (policies, tasks)
    }

    /// Waits for the first lists of pods, namespaces and NetworkPolicies.
    pub async fn ready(&self, timeout: Duration) -> Result<(), IsolationError> {
        let not_listed = |what| IsolationError::NotListed { what, timeout };
        let deadline = tokio::time::Instant::now() + timeout;
        tokio::time::timeout_at(deadline, self.pods.wait_until_ready())
            .await
            .map_err(|_| not_listed("pods"))?
            .map_err(|_| not_listed("pods"))?;
        tokio::time::timeout_at(deadline, self.namespaces.wait_until_ready())
            .await
            .map_err(|_| not_listed("namespaces"))?
            .map_err(|_| not_listed("namespaces"))?;
        tokio::time::timeout_at(deadline, self.services.wait_until_ready())
            .await
            .map_err(|_| not_listed("services"))?
            .map_err(|_| not_listed("services"))?;
        let listed = self.policies_listed.notified();
        if !self
            .policies_ready
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            tokio::time::timeout_at(deadline, listed)
                .await
                .map_err(|_| not_listed("networkpolicies"))?;
        }
        Ok(())
    }

    /// Registers pod `pod` (network `net`, key `id`) and loads its first ruleset; on an error
    /// the pod is not registered.
    pub async fn register(
        &self,
        id: &str,
        pod: &Pod,
        net: &PodNet,
    ) -> Result<Ruleset, IsolationError> {
        let mut targets = self.targets.lock().await;
        let target = Target {
            namespace: pod.namespace().unwrap_or_default(),
            name: pod.name_any(),
            netns: net.netns.clone(),
            address: net.address,
            labels: pod.labels().clone(),
            ports: named_ports(pod),
        };
        let policies = self.list_policies(&target.namespace).await?;
        let mut all = targets.clone();
        all.insert(id.to_owned(), target.clone());
        let inventory = self.inventory(&all);
        let options = self.options();
        let ruleset = self
            .ruleset(&target, &policies, &inventory, &options)
            .map_err(|source| IsolationError::Translate {
                pod: format!("{}/{}", target.namespace, target.name),
                source,
            })?;
        self.load(&target.netns, &ruleset).await?;
        targets.insert(id.to_owned(), target);
        drop(targets);
        // Peers of other pods' policies may include this pod now.
        self.changed.notify_one();
        Ok(ruleset)
    }

    /// Forgets pod `id` (its namespace is about to go).
    pub async fn unregister(&self, id: &str) {
        let removed = self.targets.lock().await.remove(id);
        if let Some(target) = removed {
            self.enforcer.forget(&target.netns);
            self.changed.notify_one();
        }
    }

    async fn load(&self, netns: &str, ruleset: &Ruleset) -> Result<bool, IsolationError> {
        let enforcer = self.enforcer.clone();
        let (netns, ruleset) = (netns.to_owned(), ruleset.clone());
        Ok(tokio::task::spawn_blocking(move || enforcer.sync(&netns, &ruleset)).await??)
    }

    async fn list_policies(&self, namespace: &str) -> Result<Vec<NetworkPolicy>, IsolationError> {
        let api: Api<NetworkPolicy> = Api::namespaced(self.client.clone(), namespace);
        api.list(&ListParams::default())
            .await
            .map(|l| l.items)
            .map_err(|e| IsolationError::Kube {
                action: format!("listing the NetworkPolicies of namespace {namespace}"),
                source: Box::new(e),
            })
    }

    fn ruleset(
        &self,
        target: &Target,
        policies: &[NetworkPolicy],
        inventory: &Inventory,
        options: &Options,
    ) -> Result<Ruleset, netpol::TranslateError> {
        let pod = TargetPod {
            namespace: &target.namespace,
            labels: &target.labels,
            ports: &target.ports,
        };
        netpol::translate(&pod, policies, inventory, options)
    }

    /// The node's choices for every pod's ruleset: the node's address, and the Services as the
    /// cluster has them now.
    fn options(&self) -> Options {
        let pods = self.pods.state();
        let pods: Vec<&Pod> = pods.iter().map(|p| p.as_ref()).collect();
        let services = self.services.state();
        let gateway = self.gateway;
        Options {
            node_addresses: vec![IpAddr::V4(gateway)],
            services: services::routes(services.iter().map(|s| s.as_ref()), &pods, self.api, |p| {
                peer_address(p, gateway)
            }),
        }
    }

    /// `KUBERNETES_SERVICE_*` for an isolated pod (the `kubernetes` Service's cluster IP), once
    /// the node forwards to the API server and the Service is listed.
    pub fn service_env(&self) -> Option<Vec<(String, String)>> {
        self.api?;
        let kubernetes = self
            .services
            .get(&reflector::ObjectRef::new("kubernetes").within("default"))?;
        services::service_env(&kubernetes)
    }

    /// The namespaces and pods peers resolve against (see the module docs for addresses).
    fn inventory(&self, targets: &BTreeMap<String, Target>) -> Inventory {
        let mut inventory = Inventory::new();
        for ns in self.namespaces.state() {
            let labels = ns.labels().clone();
            inventory = inventory.namespace(
                &ns.name_any(),
                labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            );
        }
        for pod in self.pods.state() {
            let uid = pod.uid().unwrap_or_default();
            if targets.contains_key(&uid) || finished(&pod) {
                continue;
            }
            let Some(address) = peer_address(&pod, self.gateway) else {
                continue;
            };
            let labels = pod.labels().clone();
            inventory = inventory.pod(
                &pod.namespace().unwrap_or_default(),
                labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                address,
                named_ports(&pod),
            );
        }
        for target in targets.values() {
            inventory = inventory.pod(
                &target.namespace,
                target.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                IpAddr::V4(target.address),
                target.ports.clone(),
            );
        }
        inventory
    }

    /// Reloads every registered pod's ruleset whose text changed.
    async fn sync(&self) {
        let mut targets = self.targets.lock().await;
        // Labels may have changed since registration.
        for pod in self.pods.state() {
            if let Some(t) = pod.uid().and_then(|uid| targets.get_mut(&uid)) {
                t.labels = pod.labels().clone();
            }
        }
        let inventory = self.inventory(&targets);
        let options = self.options();
        let mut by_namespace: BTreeMap<String, Option<Vec<NetworkPolicy>>> = BTreeMap::new();
        for target in targets.values() {
            if !by_namespace.contains_key(&target.namespace) {
                let listed = match self.list_policies(&target.namespace).await {
                    Ok(list) => Some(list),
                    Err(e) => {
                        eprintln!("pod-executor: NetworkPolicies: {e}; rules kept as they are");
                        None
                    }
                };
                by_namespace.insert(target.namespace.clone(), listed);
            }
            let Some(Some(policies)) = by_namespace.get(&target.namespace) else {
                continue;
            };
            let pod = format!("{}/{}", target.namespace, target.name);
            match self.ruleset(target, policies, &inventory, &options) {
                Ok(ruleset) => match self.load(&target.netns, &ruleset).await {
                    Ok(true) => eprintln!(
                        "pod-executor: pod {pod}: NetworkPolicy rules reloaded ({})",
                        describe(&ruleset)
                    ),
                    Ok(false) => {}
                    Err(e) => eprintln!("pod-executor: pod {pod}: loading its rules: {e}"),
                },
                Err(e) => eprintln!("pod-executor: pod {pod}: {e}; its last rules stay in place"),
            }
        }
    }

    async fn sync_loop(self: Arc<Self>, token: CancellationToken) {
        loop {
            tokio::select! {
                _ = token.cancelled() => return,
                _ = self.changed.notified() => {}
            }
            tokio::select! {
                _ = token.cancelled() => return,
                _ = tokio::time::sleep(DEBOUNCE) => {}
            }
            self.sync().await;
        }
    }
}

/// One line about a ruleset for the log: which policies, which directions.
pub(crate) fn describe(ruleset: &Ruleset) -> String {
    if ruleset.policies.is_empty() {
        return "no NetworkPolicy selects it: unrestricted".into();
    }
    let mut dirs = Vec::new();
    if ruleset.egress_isolated {
        dirs.push("egress");
    }
    if ruleset.ingress_isolated {
        dirs.push("ingress");
    }
    let mut text = format!(
        "{} restricted by {}",
        dirs.join(" and "),
        ruleset.policies.join(", ")
    );
    for note in &ruleset.notes {
        text.push_str("; ");
        text.push_str(note);
    }
    text
}

/// Where a peer pod is reached from an isolated pod: its `status.podIP`, or the gateway when
/// that is a loopback address or the pod uses the host network (a pod of this node sharing the
/// host's network); `None` before it has an address.
fn peer_address(pod: &Pod, gateway: Ipv4Addr) -> Option<IpAddr> {
    let host_network = pod
        .spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false);
    let ip: IpAddr = pod.status.as_ref()?.pod_ip.as_deref()?.parse().ok()?;
    if host_network || ip.is_loopback() {
        Some(IpAddr::V4(gateway))
    } else {
        Some(ip)
    }
}

/// Whether the pod has ended (its address is free again).
fn finished(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The pod's named container ports.
fn named_ports(pod: &Pod) -> Vec<NamedPort> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    spec.containers
        .iter()
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let name = p.name.clone().filter(|n| !n.is_empty())?;
            let protocol = Protocol::parse(p.protocol.as_deref().unwrap_or("TCP"))?;
            let port = u16::try_from(p.container_port).ok()?;
            Some(NamedPort {
                name,
                protocol,
                port,
            })
        })
        .collect()
}

/// Drives a watch stream, waking the sync loop on every event; `listed` is told when the
/// first list is complete.
async fn forward<S, K, E>(
    what: &'static str,
    stream: S,
    changed: Arc<Notify>,
    listed: Option<(Arc<Notify>, Arc<std::sync::atomic::AtomicBool>)>,
    token: CancellationToken,
) where
    S: futures::Stream<Item = Result<watcher::Event<K>, E>>,
    E: std::fmt::Display,
{
    let mut stream = std::pin::pin!(stream);
    loop {
        let event = tokio::select! {
            _ = token.cancelled() => return,
            event = stream.next() => event,
        };
        match event {
            None => return,
            Some(Err(e)) => eprintln!("pod-executor: watching {what}: {e}"),
            Some(Ok(watcher::Event::InitDone)) => {
                if let Some((notify, ready)) = &listed {
                    ready.store(true, std::sync::atomic::Ordering::SeqCst);
                    notify.notify_waiters();
                }
                changed.notify_one();
            }
            Some(Ok(watcher::Event::Init | watcher::Event::InitApply(_))) => {}
            Some(Ok(_)) => changed.notify_one(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_peer_on_the_host_network_or_loopback_is_reached_at_the_gateway() {
        let gw = Ipv4Addr::new(10, 213, 0, 1);
        let cases = [
            (json!({"metadata": {"name": "a"}}), None),
            (
                json!({"metadata": {"name": "a"}, "status": {"podIP": "10.213.0.7"}}),
                Some("10.213.0.7"),
            ),
            (
                json!({"metadata": {"name": "a"}, "status": {"podIP": "127.0.0.1"}}),
                Some("10.213.0.1"),
            ),
            (
                json!({"metadata": {"name": "a"}, "spec": {"containers": [], "hostNetwork": true},
                       "status": {"podIP": "192.0.2.4"}}),
                Some("10.213.0.1"),
            ),
            (
                json!({"metadata": {"name": "a"}, "status": {"podIP": "not an address"}}),
                None,
            ),
        ];
        for (p, want) in cases {
            let got = peer_address(&pod(p.clone()), gw).map(|a| a.to_string());
            assert_eq!(got.as_deref(), want, "{p}");
        }
    }

    #[test]
    fn named_container_ports_are_peers_ports_and_unnamed_ones_are_not() {
        let p = pod(json!({"metadata": {"name": "a"}, "spec": {"containers": [
            {"name": "c", "ports": [
                {"name": "http", "containerPort": 8080},
                {"containerPort": 9090},
                {"name": "dns", "containerPort": 53, "protocol": "UDP"}
            ]}
        ]}}));
        assert_eq!(
            named_ports(&p),
            vec![
                NamedPort {
                    name: "http".into(),
                    protocol: Protocol::Tcp,
                    port: 8080
                },
                NamedPort {
                    name: "dns".into(),
                    protocol: Protocol::Udp,
                    port: 53
                },
            ]
        );
    }

    #[test]
    fn the_log_line_names_the_policies_and_directions_or_says_unrestricted() {
        let mut r = Ruleset {
            text: String::new(),
            policies: vec![],
            egress_isolated: false,
            ingress_isolated: false,
            notes: vec![],
        };
        assert!(describe(&r).contains("unrestricted"), "{}", describe(&r));
        r.policies = vec!["team/run-egress".into()];
        r.egress_isolated = true;
        r.ingress_isolated = true;
        assert_eq!(
            describe(&r),
            "egress and ingress restricted by team/run-egress"
        );
    }
}
