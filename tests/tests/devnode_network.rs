//! The dev node's container-mode network on this machine: real namespaces, veths, a bridge and
//! nftables, no control plane. Needs root, `ip` (iproute2), `nft` (nftables) and `unshare`
//! (util-linux); a missing one FAILS the test with what to install.
//!
//! Every test has its own bridge (`orxnt<N>`) and subnet (`10.213.10<N>.0/24`), so test
//! binaries running at once do not clash, and leaves no namespace, veth or bridge behind. No
//! rule is ever written to the host's own tables: a pod's rules live in its namespace.
//!
//! Run: `cargo test -p orrery-tests --test devnode_network` (as root).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use k8s_openapi::api::networking::v1::NetworkPolicy;
use orrery_devnode::net::{self, Ipv4Net, NetError, NetworkConfig, PodNet, PodNetwork};
use orrery_devnode::netpol::{
    self, Enforcer, Inventory, NamedPort, Options, Protocol, ServiceRoute, TargetPod,
};
use orrery_tests::netcheck::{CountingListener, connect_from, host_has_orrery_table};
use serde_json::json;

/// Fails (never skips) when the machine cannot run these tests, saying what to install.
fn require_prerequisites() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("?");
    assert_eq!(
        euid, "0",
        "devnode_network needs root (network namespaces, veths, a bridge, nftables): run it as \
         root, e.g. `sudo -E cargo test -p orrery-tests --test devnode_network`"
    );
    for (program, arg) in [("ip", "-V"), ("nft", "--version"), ("unshare", "--version")] {
        let ok = std::process::Command::new(program)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "devnode_network needs `{program}`: apt-get install {}",
            net::package_of(program)
        );
    }
}

/// A pod network of the test's own; torn down on drop, and checked to leave nothing behind.
struct TestNet {
    net: Option<PodNetwork>,
    config: NetworkConfig,
}

impl TestNet {
    fn new(n: u8) -> TestNet {
        require_prerequisites();
        let subnet: Ipv4Net = format!("10.213.{}.0/24", 100 + u16::from(n))
            .parse()
            .unwrap();
        let config = NetworkConfig::named(format!("orxnt{n}"), subnet);
        let net = PodNetwork::create(config.clone()).expect("the pod network is created");
        TestNet {
            net: Some(net),
            config,
        }
    }

    fn net(&self) -> &PodNetwork {
        self.net.as_ref().expect("the network is up")
    }

    fn add(&self, id: &str) -> PodNet {
        self.net().add_pod(id).expect("the pod gets a network")
    }

    /// Tears down and asserts nothing of this network is left on the host.
    fn finish(mut self) {
        if let Some(net) = self.net.take() {
            net.teardown().expect("teardown");
        }
        assert_nothing_left(&self.config);
    }
}

impl Drop for TestNet {
    fn drop(&mut self) {
        if let Some(net) = self.net.take() {
            let _ = net.teardown();
        }
    }
}

fn links() -> Vec<String> {
    let out = std::process::Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .expect("ip link show");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name).to_owned())
        .collect()
}

fn assert_nothing_left(config: &NetworkConfig) {
    let namespaces: Vec<String> = net::list_netns()
        .expect("ip netns list")
        .into_iter()
        .filter(|n| n.starts_with(&config.netns_prefix))
        .collect();
    assert!(namespaces.is_empty(), "namespaces left: {namespaces:?}");
    let left: Vec<String> = links()
        .into_iter()
        .filter(|l| l.starts_with(&config.bridge))
        .collect();
    assert!(left.is_empty(), "links left: {left:?}");
}

/// Connects from inside `pod` to `to`; the error kind when it fails.
fn connect(pod: &PodNet, to: SocketAddr) -> Result<(), ErrorKind> {
    connect_from(Some(&pod.netns), to).expect("a thread in the pod's namespace")
}

/// Connects from the host to `to`.
fn connect_from_host(to: SocketAddr) -> Result<(), ErrorKind> {
    connect_from(None, to).expect("a connect from the host")
}

const STUDIO: &str = "studio";
const SIDECAR_PORT: u16 = 18080;
const REGISTRY_PORT: u16 = 7801;

/// The runner's policy, shaped as the operator's (`operator/src/run/network.rs`): its runner pod
/// by the run's UID label; Ingress and Egress; egress to DNS, to the sidecar's pods on their
/// port, and to the registry endpoint's address on its port.
fn run_policy(registry: Ipv4Addr) -> NetworkPolicy {
    serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "notes-1-egress", "namespace": STUDIO},
        "spec": {
            "podSelector": {"matchLabels": {"studio.orrery.dev/run-uid": "u-1"}},
            "policyTypes": ["Ingress", "Egress"],
            "egress": [
                {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                         "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                 "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
                {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "orrery-system"}},
                         "podSelector": {"matchLabels": {"app.kubernetes.io/name": "orrery-sidecar"}}}],
                 "ports": [{"protocol": "TCP", "port": SIDECAR_PORT}]},
                {"to": [{"ipBlock": {"cidr": format!("{registry}/32")}}],
                 "ports": [{"protocol": "TCP", "port": REGISTRY_PORT}]}
            ]
        }
    }))
    .expect("a NetworkPolicy")
}

fn runner_labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app".to_owned(), "runner".to_owned()),
        ("studio.orrery.dev/run-uid".to_owned(), "u-1".to_owned()),
    ])
}

/// Whether the host's own ruleset has a table called `orrery` (it must never).
#[test]
fn a_runner_pod_reaches_its_endpoint_and_the_sidecar_and_nothing_else() {
    let t = TestNet::new(1);
    let gateway = t.net().gateway();
    let runner = t.add("runner");
    let registry = t.add("registry");
    let canary = t.add("canary");

    // The registry endpoint and a canary in pods; the sidecar and a canary on the node.
    let endpoint = CountingListener::start(Some(&registry.netns), registry.address, REGISTRY_PORT)
        .expect("the listener is up");
    let canary_pod = CountingListener::start(Some(&canary.netns), canary.address, REGISTRY_PORT)
        .expect("the listener is up");
    let sidecar = CountingListener::start(None, gateway, SIDECAR_PORT).expect("the listener is up");
    let canary_node =
        CountingListener::start(None, gateway, SIDECAR_PORT + 1).expect("the listener is up");
    let runner_port = CountingListener::start(Some(&runner.netns), runner.address, 7900)
        .expect("the listener is up");

    // With no policy, everything is reachable (so the test can fail).
    for l in [&endpoint, &canary_pod, &sidecar, &canary_node] {
        assert_eq!(connect(&runner, l.addr), Ok(()), "no policy: {}", l.addr);
    }
    assert_eq!(connect(&canary, runner_port.addr), Ok(()));
    assert_eq!(canary_pod.accepted(), 1);
    assert_eq!(canary_node.accepted(), 1);

    // The policy: the sidecar's pods are on the node (the gateway), as on the dev node.
    let inventory = Inventory::new()
        .pod(
            STUDIO,
            [("app", "runner"), ("studio.orrery.dev/run-uid", "u-1")],
            runner.address.into(),
            vec![],
        )
        .pod(
            STUDIO,
            [("app", "registry")],
            registry.address.into(),
            vec![],
        )
        .pod(STUDIO, [("app", "canary")], canary.address.into(), vec![])
        .pod(
            "orrery-system",
            [("app.kubernetes.io/name", "orrery-sidecar")],
            gateway.into(),
            vec![NamedPort {
                name: "http".into(),
                protocol: Protocol::Tcp,
                port: SIDECAR_PORT,
            }],
        );
    let labels = runner_labels();
    let pod = TargetPod {
        namespace: STUDIO,
        labels: &labels,
        ports: &[],
    };
    let options = Options {
        node_addresses: vec![gateway.into()],
        services: vec![],
    };
    let policies = [run_policy(registry.address)];
    let ruleset = netpol::translate(&pod, &policies, &inventory, &options).expect("translates");
    assert!(ruleset.egress_isolated && ruleset.ingress_isolated);
    let enforcer = Enforcer::new();
    assert!(enforcer.sync(&runner.netns, &ruleset).expect("applied"));
    assert!(
        !enforcer.sync(&runner.netns, &ruleset).expect("same text"),
        "the same ruleset is not loaded twice"
    );
    assert!(
        !host_has_orrery_table().expect("nft list tables"),
        "the rules are in the pod's namespace, not the host's"
    );

    // Allowed: the endpoint and the sidecar.
    assert_eq!(
        connect(&runner, endpoint.addr),
        Ok(()),
        "the registry endpoint"
    );
    assert_eq!(
        connect(&runner, sidecar.addr),
        Ok(()),
        "the sidecar on the gateway"
    );
    assert_eq!(endpoint.accepted(), 2);
    assert_eq!(sidecar.accepted(), 2);

    // Refused at once with a reset, and the canaries see nothing.
    assert_eq!(
        connect(&runner, canary_pod.addr),
        Err(ErrorKind::ConnectionRefused),
        "another pod's address"
    );
    assert_eq!(
        connect(&runner, canary_node.addr),
        Err(ErrorKind::ConnectionRefused),
        "another port on the gateway"
    );
    let other_port = SocketAddr::V4(SocketAddrV4::new(registry.address, REGISTRY_PORT + 1));
    assert_eq!(
        connect(&runner, other_port),
        Err(ErrorKind::ConnectionRefused)
    );
    assert_eq!(
        canary_pod.accepted(),
        1,
        "the canary pod saw no new connection"
    );
    assert_eq!(
        canary_node.accepted(),
        1,
        "the canary port saw no new connection"
    );

    // No ingress rule: another pod cannot reach the runner; the node can (probes).
    assert_eq!(
        connect(&canary, runner_port.addr),
        Err(ErrorKind::ConnectionRefused)
    );
    assert_eq!(connect_from_host(runner_port.addr), Ok(()));
    assert_eq!(runner_port.accepted(), 2);

    // Removing the policy restores everything.
    let none = netpol::translate(&pod, &[], &inventory, &options).expect("translates");
    assert!(!none.egress_isolated && !none.ingress_isolated);
    assert!(enforcer.sync(&runner.netns, &none).expect("replaced"));
    assert_eq!(connect(&runner, canary_pod.addr), Ok(()));
    assert_eq!(connect(&runner, canary_node.addr), Ok(()));
    assert_eq!(connect(&canary, runner_port.addr), Ok(()));
    assert_eq!(canary_pod.accepted(), 2);
    assert_eq!(canary_node.accepted(), 2);
    netpol::remove(&runner.netns).expect("the table is removed");

    drop((endpoint, canary_pod, sidecar, canary_node, runner_port));
    t.finish();
}

#[test]
fn pods_reach_each_other_and_the_gateway_and_a_teardown_leaves_nothing_behind() {
    let t = TestNet::new(2);
    let gateway = t.net().gateway();
    let a = t.add("pod-a");
    let b = t.add("pod-b");
    assert_ne!(a.address, b.address);
    assert!(t.net().subnet().contains(&a.address));
    assert_eq!(a.netns, "orxnt2-pod-a");

    let on_b =
        CountingListener::start(Some(&b.netns), b.address, 9000).expect("the listener is up");
    let on_gateway = CountingListener::start(None, gateway, 9001).expect("the listener is up");
    let on_any =
        CountingListener::start(None, Ipv4Addr::UNSPECIFIED, 19002).expect("the listener is up");
    let firewall = net::inspect_host_firewall();
    eprintln!("host firewall: {}", firewall.describe());
    let across = connect(&a, on_b.addr);
    assert_eq!(
        across,
        Ok(()),
        "pod to pod across the bridge; the host firewall: {}",
        firewall.describe()
    );
    assert_eq!(
        connect(&a, on_gateway.addr),
        Ok(()),
        "pod to a service on the gateway"
    );
    let any = SocketAddr::V4(SocketAddrV4::new(gateway, 19002));
    assert_eq!(
        connect(&b, any),
        Ok(()),
        "pod to a service on 0.0.0.0, by the gateway"
    );
    assert_eq!(on_b.accepted(), 1);

    // A removed pod frees its address and leaves no namespace or veth.
    t.net().remove_pod("pod-b").expect("removed");
    assert!(!net::netns_path(&b.netns).exists());
    assert!(!links().contains(&b.host_veth));
    let c = t.add("pod-c");
    assert_eq!(
        c.address, b.address,
        "the freed address is handed out again"
    );
    drop((on_b, on_gateway, on_any));
    t.finish();
}

#[test]
fn a_new_network_clears_what_a_crashed_run_left_and_refuses_an_overlapping_subnet() {
    require_prerequisites();
    let subnet: Ipv4Net = "10.213.103.0/24".parse().unwrap();
    let config = NetworkConfig::named("orxnt3", subnet);
    // A crashed run: a namespace and a stray veth with the network's names.
    let run = |args: &[&str]| {
        let ok = std::process::Command::new("ip")
            .args(args)
            .status()
            .expect("ip");
        assert!(ok.success(), "ip {args:?}");
    };
    let _ = PodNetwork::teardown_leftovers(&config);
    run(&["netns", "add", "orxnt3-crashed"]);
    run(&[
        "link", "add", "orxnt3v9", "type", "veth", "peer", "name", "orxnt3p9",
    ]);
    let net = PodNetwork::create(config.clone()).expect("created over the leftovers");
    assert!(
        !net::netns_path("orxnt3-crashed").exists(),
        "the leftover namespace is gone"
    );
    assert!(!links().iter().any(|l| l == "orxnt3v9" || l == "orxnt3p9"));
    // Idempotent: the bridge is there already.
    drop(PodNetwork::create(config.clone()).expect("created again"));
    drop(net);
    assert_nothing_left(&config);

    // 127.213.0.0/24 lies in loopback's 127.0.0.0/8.
    let overlapping = NetworkConfig::named("orxnt3", "127.213.0.0/24".parse().unwrap());
    match PodNetwork::create(overlapping) {
        Err(NetError::Overlap { interface, .. }) => assert_eq!(interface, "lo"),
        other => panic!("an overlapping subnet must be refused, got {other:?}"),
    }
    assert_nothing_left(&config);
}

/// A Service's cluster IP leads a pod to the Service's endpoint (DNAT in the pod's namespace),
/// the egress policy judges the endpoint, not the cluster IP, and a Service without endpoints
/// is refused at once.
#[test]
fn a_service_ip_leads_to_its_endpoint_and_the_egress_policy_judges_the_endpoint() {
    let t = TestNet::new(4);
    let runner = t.add("runner");
    let registry = t.add("registry");
    let canary = t.add("canary");
    let endpoint = CountingListener::start(Some(&registry.netns), registry.address, REGISTRY_PORT)
        .expect("the listener is up");
    let canary_pod = CountingListener::start(Some(&canary.netns), canary.address, REGISTRY_PORT)
        .expect("the listener is up");
    let route = |name: &str, ip: &str, to: Option<Ipv4Addr>| ServiceRoute {
        service: format!("{STUDIO}/{name}:80"),
        cluster_ip: ip.parse().expect("an address"),
        protocol: Protocol::Tcp,
        port: 80,
        backends: to.map(|a| (a.into(), REGISTRY_PORT)).into_iter().collect(),
    };
    let services = vec![
        route("registry", "10.96.50.1", Some(registry.address)),
        route("canary", "10.96.50.2", Some(canary.address)),
        route("empty", "10.96.50.3", None),
    ];
    let at = |ip: &str| SocketAddr::new(ip.parse().expect("an address"), 80);
    let inventory = Inventory::new();
    let labels = runner_labels();
    let pod = TargetPod {
        namespace: STUDIO,
        labels: &labels,
        ports: &[],
    };
    let options = Options {
        node_addresses: vec![t.net().gateway().into()],
        services,
    };
    let enforcer = Enforcer::new();

    // No policy: both Services lead to their pods; the empty one is refused, not left to time out.
    let open = netpol::translate(&pod, &[], &inventory, &options).expect("translates");
    assert!(enforcer.sync(&runner.netns, &open).expect("applied"));
    assert_eq!(connect(&runner, at("10.96.50.1")), Ok(()));
    assert_eq!(connect(&runner, at("10.96.50.2")), Ok(()));
    assert_eq!((endpoint.accepted(), canary_pod.accepted()), (1, 1));
    let started = std::time::Instant::now();
    assert_eq!(
        connect(&runner, at("10.96.50.3")),
        Err(ErrorKind::ConnectionRefused)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(2));

    // The run's policy allows the registry pod's address: its Service works, the canary's not.
    let policies = [run_policy(registry.address)];
    let closed = netpol::translate(&pod, &policies, &inventory, &options).expect("translates");
    assert!(enforcer.sync(&runner.netns, &closed).expect("applied"));
    assert_eq!(connect(&runner, at("10.96.50.1")), Ok(()));
    assert_eq!(
        connect(&runner, at("10.96.50.2")),
        Err(ErrorKind::ConnectionRefused)
    );
    assert_eq!(
        (endpoint.accepted(), canary_pod.accepted()),
        (2, 1),
        "the canary saw no new connection"
    );
    assert!(
        !host_has_orrery_table().expect("nft list tables"),
        "the rules are in the pod's namespace, not the host's"
    );
}
