//! Services for isolated pods, the part of kube-proxy a development node needs: every pod with
//! its own network namespace reaches a Service's cluster IP, and the API server through the
//! `default/kubernetes` Service, as in a cluster.
//!
//! - [`routes`] turns the Services and pods of the cluster into [`ServiceRoute`]s (pure): a
//!   Service with a selector is sent to the ready pods of its namespace matching it (their
//!   `targetPort`, a number or a container port's name); `default/kubernetes` to the node's
//!   forward to the API server ([`ApiForward`]); headless Services, Services without a
//!   selector (other than `default/kubernetes`) and ExternalName ones are not routed.
//! - The rules themselves are written by the translator with each pod's policies
//!   ([`crate::netpol::Options::services`]), so an egress policy judges the endpoint.
//! - [`ApiForward`] listens on the bridge's gateway at [`API_PORT`] and copies each connection
//!   to the API server, which listens on the host's loopback: pods cannot reach loopback, and
//!   the serving certificate names the `kubernetes` Service's cluster IP, which is what pods
//!   connect to (`KUBERNETES_SERVICE_HOST`, see [`service_env`]).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::IsolationError;
use crate::netpol::{Protocol, ServiceRoute};

/// The port of the node's forward to the API server on the gateway: the API server's usual
/// port, which a chart's egress policy for the API server allows by default.
pub const API_PORT: u16 = 6443;

/// Where pods reach the API server: the node's forward on the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiEndpoint {
    pub address: Ipv4Addr,
    pub port: u16,
}

/// Every Service port the node routes for its isolated pods (see the module docs); `peer`
/// gives a pod's address as other pods reach it (`None` before it has one).
pub fn routes<'a>(
    services: impl IntoIterator<Item = &'a Service>,
    pods: &[&Pod],
    api: Option<ApiEndpoint>,
    peer: impl Fn(&Pod) -> Option<IpAddr>,
) -> Vec<ServiceRoute> {
    let mut out = Vec::new();
    for service in services {
        let Some(spec) = service.spec.as_ref() else {
            continue;
        };
        let Some(cluster_ip) = spec
            .cluster_ip
            .as_deref()
            .and_then(|ip| ip.parse::<IpAddr>().ok())
        else {
            continue; // headless ("None"), ExternalName, or not allocated yet
        };
        let namespace = service.namespace().unwrap_or_default();
        let name = service.name_any();
        let is_api = namespace == "default" && name == "kubernetes";
        let selector = spec.selector.clone().unwrap_or_default();
        if selector.is_empty() && !is_api {
            continue; // endpoints managed by hand: nothing to route here
        }
        let backends: Vec<&Pod> = if is_api {
            Vec::new()
        } else {
            pods.iter()
                .copied()
                .filter(|p| p.namespace().as_deref() == Some(namespace.as_str()))
                .filter(|p| selects(&selector, p.labels()))
                .filter(|p| ready(p))
                .collect()
        };
        for port in spec.ports.iter().flatten() {
            let Some(protocol) = Protocol::parse(port.protocol.as_deref().unwrap_or("TCP")) else {
                continue;
            };
            let Ok(number) = u16::try_from(port.port) else {
                continue;
            };
            let backends = if is_api {
                api.map(|a| vec![(IpAddr::V4(a.address), a.port)])
                    .unwrap_or_default()
            } else {
                backends
                    .iter()
                    .filter_map(|p| {
                        let target = target_port(p, port.target_port.as_ref(), number, protocol)?;
                        Some((peer(p)?, target))
                    })
                    .collect()
            };
            out.push(ServiceRoute {
                service: format!("{namespace}/{name}:{number}"),
                cluster_ip,
                protocol,
                port: number,
                backends,
            });
        }
    }
    out
}

/// A Service's selector matches (equality on every key, as `spec.selector` means).
fn selects(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// A pod an endpoint may send to: running, not being deleted, and Ready (or without a Ready
/// condition yet reported: a pod without probes is ready once it runs).
fn ready(pod: &Pod) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(status) = pod.status.as_ref() else {
        return false;
    };
    if status.phase.as_deref() != Some("Running") {
        return false;
    }
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .is_none_or(|c| c.status == "True")
}

/// The pod's port for a Service port: `targetPort` as a number, or the container port with that
/// name and protocol; the Service's own port when absent.
fn target_port(
    pod: &Pod,
    target: Option<&IntOrString>,
    port: u16,
    protocol: Protocol,
) -> Option<u16> {
    match target {
        None => Some(port),
        Some(IntOrString::Int(n)) => u16::try_from(*n).ok(),
        Some(IntOrString::String(name)) => pod
            .spec
            .as_ref()?
            .containers
            .iter()
            .flat_map(|c| c.ports.iter().flatten())
            .find(|p| {
                p.name.as_deref() == Some(name.as_str())
                    && Protocol::parse(p.protocol.as_deref().unwrap_or("TCP")) == Some(protocol)
            })
            .and_then(|p| u16::try_from(p.container_port).ok()),
    }
}

/// `KUBERNETES_SERVICE_HOST`/`_PORT` (and `_PORT_HTTPS`) for an isolated pod: the `kubernetes`
/// Service's cluster IP and port, as the kubelet sets them.
pub fn service_env(kubernetes: &Service) -> Option<Vec<(String, String)>> {
    let spec = kubernetes.spec.as_ref()?;
    let ip = spec.cluster_ip.as_deref()?.parse::<IpAddr>().ok()?;
    let port = spec
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some("https"))
        .or_else(|| spec.ports.iter().flatten().next())?
        .port;
    Some(vec![
        ("KUBERNETES_SERVICE_HOST".into(), ip.to_string()),
        ("KUBERNETES_SERVICE_PORT".into(), port.to_string()),
        ("KUBERNETES_SERVICE_PORT_HTTPS".into(), port.to_string()),
    ])
}

/// The node's forward to the API server (see the module docs); stops with its token.
#[derive(Debug)]
pub struct ApiForward {
    pub endpoint: ApiEndpoint,
}

impl ApiForward {
    /// Listens on `gateway:`[`API_PORT`] and copies each connection from an address of
    /// `subnet` (the pods') to `upstream` (the API server's `host:port`) until `token` is
    /// cancelled; a connection from anywhere else is closed at once (the API server still
    /// authenticates every request; this keeps other bridges and other machines off it).
    pub async fn start(
        gateway: Ipv4Addr,
        subnet: ipnet::Ipv4Net,
        upstream: SocketAddr,
        token: CancellationToken,
    ) -> Result<(ApiForward, tokio::task::JoinHandle<()>), IsolationError> {
        let listener = TcpListener::bind((gateway, API_PORT))
            .await
            .map_err(|source| IsolationError::ApiForward {
                address: SocketAddr::from((gateway, API_PORT)),
                source,
            })?;
        let task = tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = token.cancelled() => return,
                    accepted = listener.accept() => accepted,
                };
                let (mut inbound, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // A lasting error (too many open files) must not spin.
                        eprintln!("pod-executor: the API server forward: accepting: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let from_pod = match peer.ip() {
                    IpAddr::V4(ip) => subnet.contains(&ip),
                    IpAddr::V6(_) => false,
                };
                if !from_pod {
                    continue; // dropped: closes the connection
                }
                let token = token.clone();
                tokio::spawn(async move {
                    let mut outbound = match TcpStream::connect(upstream).await {
                        Ok(outbound) => outbound,
                        Err(e) => {
                            eprintln!(
                                "pod-executor: the API server forward: connecting to {upstream}: {e}"
                            );
                            return;
                        }
                    };
                    tokio::select! {
                        _ = token.cancelled() => {}
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                    }
                });
            }
        });
        Ok((
            ApiForward {
                endpoint: ApiEndpoint {
                    address: gateway,
                    port: API_PORT,
                },
            },
            task,
        ))
    }
}

/// `host:port` of an `https://host:port` URL (a name is resolved, e.g. `localhost`); `None`
/// when it is not such a URL or the name does not resolve.
pub async fn upstream_of(url: &str) -> Option<SocketAddr> {
    let rest = url.strip_prefix("https://")?.trim_end_matches('/');
    if let Ok(addr) = rest.parse() {
        return Some(addr);
    }
    let (host, port) = rest.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    tokio::net::lookup_host((host.trim_start_matches('[').trim_end_matches(']'), port))
        .await
        .ok()?
        .next()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service(v: serde_json::Value) -> Service {
        serde_json::from_value(v).unwrap()
    }
    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }
    fn peer(p: &Pod) -> Option<IpAddr> {
        p.status.as_ref()?.pod_ip.as_deref()?.parse().ok()
    }

    fn sidecar_pod(name: &str, ip: &str, phase: &str, ready: &str) -> Pod {
        pod(json!({
            "metadata": {"name": name, "namespace": "studio", "labels": {"app": "orrery", "tier": "op"}},
            "spec": {"containers": [{"name": "sidecar", "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"phase": phase, "podIP": ip,
                       "conditions": [{"type": "Ready", "status": ready}]}
        }))
    }

    #[test]
    fn a_service_routes_to_the_ready_pods_its_selector_matches_through_their_named_port() {
        let services = [service(json!({
            "metadata": {"name": "sidecar", "namespace": "studio"},
            "spec": {"clusterIP": "10.96.0.20", "selector": {"app": "orrery"},
                     "ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "targetPort": 9000},
                               {"port": 82}, {"port": 53, "protocol": "UDP", "targetPort": "http"}]}
        }))];
        let pods = [
            sidecar_pod("a", "10.213.0.5", "Running", "True"),
            sidecar_pod("b", "10.213.0.6", "Running", "False"),
            sidecar_pod("c", "10.213.0.7", "Pending", "False"),
            sidecar_pod("d", "10.213.0.8", "Succeeded", "False"),
            pod(
                json!({"metadata": {"name": "other", "namespace": "elsewhere", "labels": {"app": "orrery"}},
                       "status": {"phase": "Running", "podIP": "10.213.0.9"}}),
            ),
        ];
        let refs: Vec<&Pod> = pods.iter().collect();
        let got = routes(&services, &refs, None, peer);
        let by_port: BTreeMap<u16, Vec<(IpAddr, u16)>> =
            got.iter().map(|r| (r.port, r.backends.clone())).collect();
        let a = "10.213.0.5".parse::<IpAddr>().unwrap();
        assert_eq!(
            by_port[&80],
            vec![(a, 8080)],
            "named targetPort, only the ready pod"
        );
        assert_eq!(by_port[&81], vec![(a, 9000)], "numbered targetPort");
        assert_eq!(
            by_port[&82],
            vec![(a, 82)],
            "no targetPort: the service's port"
        );
        assert_eq!(
            by_port[&53],
            vec![],
            "the name is a TCP port: no UDP endpoint"
        );
        assert!(
            got.iter().all(|r| r.service.starts_with("studio/sidecar:")),
            "{got:?}"
        );
    }

    #[test]
    fn the_kubernetes_service_goes_to_the_nodes_api_forward_and_hand_managed_or_headless_ones_are_not_routed()
     {
        let services = [
            service(
                json!({"metadata": {"name": "kubernetes", "namespace": "default"},
                           "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "targetPort": 6443}]}}),
            ),
            service(
                json!({"metadata": {"name": "manual", "namespace": "studio"},
                           "spec": {"clusterIP": "10.96.0.2", "ports": [{"port": 80}]}}),
            ),
            service(
                json!({"metadata": {"name": "headless", "namespace": "studio"},
                           "spec": {"clusterIP": "None", "selector": {"app": "orrery"}, "ports": [{"port": 80}]}}),
            ),
        ];
        let api = ApiEndpoint {
            address: Ipv4Addr::new(10, 213, 0, 1),
            port: API_PORT,
        };
        let got = routes(&services, &[], Some(api), peer);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].service, "default/kubernetes:443");
        assert_eq!(got[0].cluster_ip.to_string(), "10.96.0.1");
        assert_eq!(got[0].backends, vec![("10.213.0.1".parse().unwrap(), 6443)]);
        let env = service_env(&services[0]).unwrap();
        assert_eq!(
            env,
            vec![
                ("KUBERNETES_SERVICE_HOST".into(), "10.96.0.1".into()),
                ("KUBERNETES_SERVICE_PORT".into(), "443".into()),
                ("KUBERNETES_SERVICE_PORT_HTTPS".into(), "443".into()),
            ]
        );
    }

    #[tokio::test]
    async fn the_api_servers_address_is_read_from_its_url_and_a_name_is_resolved() {
        assert_eq!(
            upstream_of("https://127.0.0.1:34567/").await,
            Some("127.0.0.1:34567".parse().unwrap())
        );
        assert_eq!(
            upstream_of("https://[::1]:6443").await,
            Some("[::1]:6443".parse().unwrap())
        );
        let local = upstream_of("https://localhost:6443")
            .await
            .expect("localhost resolves");
        assert!(local.ip().is_loopback() && local.port() == 6443, "{local}");
        assert_eq!(upstream_of("https://no-such-host.invalid:6443").await, None);
        assert_eq!(upstream_of("http://127.0.0.1:8080").await, None);
    }

    #[tokio::test]
    async fn the_api_forward_copies_a_connection_to_the_api_server_both_ways() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // A stand-in upstream that answers with what it got, upper-cased.
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream_addr = upstream.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = upstream.accept().await.unwrap();
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).await.unwrap();
            s.write_all(&buf.to_ascii_uppercase()).await.unwrap();
        });
        // Loopback stands in for the gateway: 127.0.0.2 is ours on Linux.
        let token = CancellationToken::new();
        let gateway = Ipv4Addr::new(127, 0, 0, 2);
        let subnet = "127.0.0.0/8".parse().unwrap();
        let Ok((forward, task)) =
            ApiForward::start(gateway, subnet, upstream_addr, token.clone()).await
        else {
            eprintln!("127.0.0.2:{API_PORT} is taken here: forward test skipped");
            return;
        };
        let mut c = TcpStream::connect((forward.endpoint.address, forward.endpoint.port))
            .await
            .unwrap();
        c.write_all(b"hello").await.unwrap();
        let mut back = [0u8; 5];
        c.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"HELLO");
        token.cancel();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn the_api_forward_closes_a_connection_from_outside_the_pods_subnet() {
        use tokio::io::AsyncReadExt;
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream_addr = upstream.local_addr().unwrap();
        let token = CancellationToken::new();
        // Loopback stands in for the gateway; the pods' subnet is elsewhere.
        let gateway = Ipv4Addr::new(127, 0, 0, 3);
        let subnet = "10.213.0.0/24".parse().unwrap();
        let Ok((forward, task)) =
            ApiForward::start(gateway, subnet, upstream_addr, token.clone()).await
        else {
            eprintln!("127.0.0.3:{API_PORT} is taken here: forward test skipped");
            return;
        };
        let mut c = TcpStream::connect((forward.endpoint.address, forward.endpoint.port))
            .await
            .unwrap();
        let mut buf = [0u8; 1];
        let read = tokio::time::timeout(std::time::Duration::from_secs(5), c.read(&mut buf)).await;
        assert!(
            matches!(read, Ok(Ok(0)) | Ok(Err(_))),
            "the connection is closed at once: {read:?}"
        );
        let upstream_got =
            tokio::time::timeout(std::time::Duration::from_millis(200), upstream.accept()).await;
        assert!(upstream_got.is_err(), "nothing reached the API server");
        token.cancel();
        task.await.unwrap();
    }
}
