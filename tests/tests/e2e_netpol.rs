//! NetworkPolicies enforced on the development node: pods in container mode with a network
//! namespace of their own (`NetworkMode::Isolated`) on a bridge the test's executor owns, the
//! policies that select them loaded as nftables rules inside that namespace, against the real
//! control plane.
//!
//! - A runner pod (`localhost/orrery/runner:dev`, the operator's sandbox: uid 65532, read-only
//!   root) selected by a run's NetworkPolicy as the operator builds it
//!   (`orrery_operator::run::network::network_policy` over a real plan document: DNS to
//!   kube-dns, the sidecar's pods on their port, the endpoint's address on its port as a
//!   `/32`), reaches its endpoint and the sidecar stand-in and nothing else: canaries on
//!   another port of the gateway and on another address see no connection, DNS to anything but
//!   the (stand-in) cluster DNS gets no answer. A pod the policy does not select reaches the
//!   canaries (so the test can fail) until a policy made while it runs closes it off;
//!   deleting the run's policy opens the runner pod up again; a `hostNetwork` pod keeps the
//!   host's network.
//! - The operator's probe pod and probe policy (`orrery_operator::registry::probe`) for a
//!   `privateNetwork` entry on the gateway, allowlisted by `privateNetworkAllowlist`: the real
//!   probe in its container reaches the entry (the demo fleet behind a TLS front on the
//!   gateway: a non-loopback entry URL must be `https`) and reports Ok; a probe whose guard
//!   allows an address its policy does not never reaches it. The node clears a namespace a
//!   crashed run with its bridge's names left.
//!
//! What runs where: pods cannot reach the host's 127.0.0.1, so everything they must reach
//! listens on the bridge's gateway address (`PodExecutor::pod_gateway`); the demo fleet binds
//! 127.0.0.1 over plain http only, so a TLS front (`orrery_tests::front`, with a throwaway CA
//! the probe pod trusts through the operator's `runner.trustedCertificates`, as a deployment
//! trusts its private CA) stands for it on the gateway. The images have
//! no general network client, so the refused connections are made from a thread that enters the
//! pod's network namespace (the same network stack and rules as its containers; the test
//! checks the container's process is in that namespace).
//!
//! Needs root, buildah, runc, iproute2 and nftables: a missing one FAILS the
//! test, naming what to install. Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by
//! `tests/e2e.sh`), else one started for this test binary.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use orrery_crds::probe::{ProbeOutcome, parse_report};
use orrery_crds::registry::RegistryEntry;
use orrery_crds::run::RanComposition;
use orrery_crds::validate::RegistryView;
use orrery_crds::{CompositionSpec, StudioRun};
use orrery_operator::Config;
use orrery_operator::registry::probe::{probe_network_policy, probe_pod};
use orrery_operator::run::builders::{RUN_UID_LABEL, plan_document};
use orrery_operator::run::network::network_policy;
use orrery_operator::sandbox;
use orrery_runner::demo::fleet::loopback_hosts;
use orrery_runner::demo::{FleetConfig, start_fleet};
use orrery_tests::front::{Front, TestCa};
use orrery_tests::harness::{TestNamespace, ensure_crds, eventually, workspace_root};
use orrery_tests::manifests::scripted_model_with;
use orrery_tests::netcheck::{self, CountingListener, host_has_orrery_table};
use orrery_tests::pod_executor::PodExecutor;
use orrery_tests::pod_executor::net::{self, Ipv4Net, NetworkConfig};
use orrery_tests::testenv;
use serde_json::json;

/// Long enough for the first unpack of the images.
const START_TIMEOUT: Duration = Duration::from_secs(180);
const RUNNER_IMAGE: &str = "localhost/orrery/runner:dev";

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
        "e2e_netpol needs root (runc, network namespaces, a bridge, nftables): run it as root"
    );
    for (program, arg, package) in [
        ("ip", "-V", "iproute2"),
        ("nft", "--version", "nftables"),
        ("runc", "--version", "runc"),
        ("buildah", "--version", "buildah"),
    ] {
        let ok = std::process::Command::new(program)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "e2e_netpol needs `{program}`: apt-get install {package}"
        );
    }
}

/// An executor in container mode with isolated pod networking on bridge `bridge`.
async fn isolated_executor(
    client: &Client,
    env: &testenv::TestEnv,
    ns: &str,
    bridge: &str,
    subnet: &str,
) -> Result<PodExecutor> {
    let network = NetworkConfig::named(bridge, subnet.parse::<Ipv4Net>()?);
    orrery_tests::studio::isolated_executor(env, client, ns, network).await
}

/// A UDP "DNS server" on the host: counts the datagrams it gets and echoes each back.
struct Dns {
    addr: SocketAddr,
    received: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Dns {
    fn start(addr: Ipv4Addr) -> Result<Dns> {
        let socket = UdpSocket::bind(SocketAddrV4::new(addr, 53))
            .with_context(|| format!("binding {addr}:53 (UDP)"))?;
        socket.set_read_timeout(Some(Duration::from_millis(20)))?;
        let received = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, halt) = (received.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while !halt.load(Ordering::SeqCst) {
                if let Ok((n, from)) = socket.recv_from(&mut buf) {
                    count.fetch_add(1, Ordering::SeqCst);
                    let _ = socket.send_to(&buf[..n], from);
                }
            }
        });
        Ok(Dns {
            addr: SocketAddr::V4(SocketAddrV4::new(addr, 53)),
            received,
            stop,
            thread: Some(thread),
        })
    }

    fn received(&self) -> usize {
        std::thread::sleep(Duration::from_millis(50));
        self.received.load(Ordering::SeqCst)
    }
}

impl Drop for Dns {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Connects from inside network namespace `netns` to `to`; the error kind when it fails.
fn connect_from(netns: &str, to: SocketAddr) -> Result<(), ErrorKind> {
    netcheck::connect_from(Some(netns), to).expect("a thread in the pod's namespace")
}

/// A DNS-shaped UDP query from inside `netns` to `to`: whether an answer came back.
fn dns_query_from(netns: &str, to: SocketAddr) -> bool {
    net::run_in(netns, move || {
        let Ok(socket) = UdpSocket::bind("0.0.0.0:0") else {
            return false;
        };
        let _ = socket.set_read_timeout(Some(Duration::from_secs(2)));
        // A query for `canary.example. A`.
        let mut query = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in ["canary", "example"] {
            query.push(u8::try_from(label.len()).unwrap_or(0));
            query.extend_from_slice(label.as_bytes());
        }
        query.extend_from_slice(&[0, 0, 1, 0, 1]);
        if socket.send_to(&query, to).is_err() {
            return false;
        }
        let mut buf = [0u8; 512];
        socket.recv_from(&mut buf).is_ok()
    })
    .expect("a thread in the pod's namespace")
}

/// The network namespace process `pid` is in (`ip netns identify`).
fn netns_of(pid: u32) -> Result<String> {
    let out = std::process::Command::new("ip")
        .args(["netns", "identify", &pid.to_string()])
        .output()
        .context("ip netns identify")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The pid of runc container `id` (`runc --root <state> state <id>`).
fn container_pid(state: &std::path::Path, id: &str) -> Result<u32> {
    let out = std::process::Command::new("runc")
        .arg("--root")
        .arg(state)
        .args(["state", id])
        .output()
        .context("runc state")?;
    ensure!(
        out.status.success(),
        "runc state {id}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    ensure!(
        v["status"] == "running",
        "runc container {id}: {}",
        v["status"]
    );
    let pid = v["pid"].as_u64().context("runc state has no pid")?;
    Ok(u32::try_from(pid)?)
}

/// The runc container of `pod`'s first container: its pid and the network namespace it is in,
/// once runc has it running (the pod reports Running when `runc run` starts).
async fn container_netns(exec: &PodExecutor, pod: &Pod) -> Result<(u32, String)> {
    let (pid, netns) = container_netns_any(exec, pod).await?;
    ensure!(!netns.is_empty(), "process {pid} is in no named namespace");
    Ok((pid, netns))
}

/// Like [`container_netns`], the name empty when the process is in no named namespace (the
/// host's).
async fn container_netns_any(exec: &PodExecutor, pod: &Pod) -> Result<(u32, String)> {
    let id = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.clone())
        .unwrap_or_default()
        .first()
        .and_then(|c| c.container_id.clone())
        .unwrap_or_default();
    let id = id
        .strip_prefix("runc://")
        .with_context(|| format!("{} runs as {id:?}, not as a runc container", pod.name_any()))?
        .to_owned();
    let state = exec.runc_state_dir().context("runc state")?.to_path_buf();
    eventually(Duration::from_secs(30), || async {
        let pid = container_pid(&state, &id)?;
        Ok((pid, netns_of(pid)?))
    })
    .await
}

/// Whether the host's own ruleset has a table `inet orrery` (it must never).
fn bridge_exists(bridge: &str) -> bool {
    std::path::Path::new("/sys/class/net").join(bridge).exists()
}

/// A pod's single container running as a runc container: the pod (with its podIP).
async fn wait_running(pods: &Api<Pod>, name: &str) -> Result<Pod> {
    eventually(START_TIMEOUT, || async {
        let pod = pods.get(name).await?;
        let statuses = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default();
        ensure!(
            !statuses.is_empty()
                && statuses
                    .iter()
                    .all(|c| c.state.as_ref().is_some_and(|s| s.running.is_some())),
            "{name}: not running yet: {statuses:?}"
        );
        Ok(pod)
    })
    .await
}

fn pod_ip(pod: &Pod) -> Option<Ipv4Addr> {
    pod.status.as_ref()?.pod_ip.as_deref()?.parse().ok()
}

/// A long-running runner pod in the operator's sandbox (restricted security context, `/tmp`
/// an emptyDir, `HOME=/tmp`), labelled as a run's pod.
fn runner_pod(name: &str, run_uid: &str) -> Result<Pod> {
    let mut pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {RUN_UID_LABEL: run_uid}},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 5,
            "containers": [{
                "name": "runner",
                "image": RUNNER_IMAGE,
                "args": ["demo", "--fleet-only", "--port-base", "0"],
                "env": [{"name": "HOME", "value": "/tmp"}]
            }]
        }
    }))?;
    let spec = pod.spec.as_mut().context("spec")?;
    spec.security_context = Some(sandbox::pod_security_context());
    spec.volumes = Some(vec![sandbox::tmp_volume()]);
    let c = spec.containers.first_mut().context("container")?;
    c.security_context = Some(sandbox::container_security_context());
    c.volume_mounts = Some(vec![sandbox::tmp_mount()]);
    Ok(pod)
}

/// The run's policy, made by the operator's own builders (`plan_document`, then
/// `orrery_operator::run::network::network_policy`) for a run whose plan uses one MCP entry at
/// `endpoint` (`privateNetwork`, a literal address: no resolution needed) and a Scripted model
/// (no network): the run's pod by its UID label; Ingress and Egress with no ingress rule;
/// egress to the cluster DNS, the sidecar's pods on their port, and the endpoint's address as a
/// `/32` on its port. Its owner reference is dropped: no StudioRun object exists here, and the
/// garbage collector would delete a policy whose owner is missing.
fn run_policy(
    ns: &str,
    run_uid: &str,
    config: &Config,
    endpoint: SocketAddr,
) -> Result<NetworkPolicy> {
    let run: StudioRun = serde_json::from_value(json!({
        "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "StudioRun",
        "metadata": {"name": "run-1", "namespace": ns, "uid": run_uid, "generation": 1},
        "spec": {"compositionRef": {"name": "notes"}, "input": "hello", "owner": "jane"}
    }))?;
    let spec: CompositionSpec = serde_json::from_value(json!({
        "pattern": "Pipeline",
        "budgets": {"timeoutSeconds": 300},
        "nodes": [{"id": "research", "kind": "LLMAgent", "model": "scripted",
                   "instruction": "look", "tools": ["mcp:fleet-tools.current_time"]}]
    }))?;
    let entry = |v: serde_json::Value| -> Result<RegistryEntry> { Ok(serde_json::from_value(v)?) };
    let entries = vec![
        entry(json!({
            "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "RegistryEntry",
            "metadata": {"name": "fleet-tools", "namespace": ns},
            "spec": {"mcp": {"url": format!("https://{endpoint}/mcp"), "tools": ["current_time"],
                             "readOnly": ["current_time"], "privateNetwork": true}}
        }))?,
        {
            let mut model: RegistryEntry =
                serde_json::from_str(&scripted_model_with("scripted", serde_json::Value::Null))?;
            model.metadata.namespace = Some(ns.to_owned());
            model
        },
    ];
    let view = RegistryView::from_entries(&entries);
    let plan = orrery_crds::plan::plan(&spec, &view, &config.deployment_limits())
        .map_err(|v| anyhow::anyhow!("the test composition does not plan: {v:?}"))?;
    let document = plan_document(
        &run,
        RanComposition {
            name: "notes".into(),
            revision: Some(1),
            digest: "d".repeat(64),
        },
        spec,
        plan,
        &entries,
        config,
    )?;
    let mut policy = network_policy(&run, &document, config)?;
    policy.metadata.owner_references = None;
    Ok(policy)
}

/// A pod that stands for pods running elsewhere (bound to another node, so no executor runs
/// it), with `status.podIP` set as that node's kubelet would.
async fn remote_pod(
    client: &Client,
    ns: &str,
    name: &str,
    labels: serde_json::Value,
    ip: Ipv4Addr,
) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"nodeName": format!("elsewhere-{name}"),
                 "containers": [{"name": "c", "image": "registry.invalid/stand-in:1"}]}
    }))?;
    pods.create(&PostParams::default(), &pod).await?;
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(
            json!({"status": {"phase": "Running", "podIP": ip.to_string(),
                                        "podIPs": [{"ip": ip.to_string()}]}}),
        ),
    )
    .await?;
    Ok(())
}

fn ip(args: &[&str]) -> Result<()> {
    let out = std::process::Command::new("ip").args(args).output()?;
    ensure!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_runner_pod_under_its_runs_policy_reaches_its_endpoint_and_the_sidecar_and_nothing_else()
-> Result<()> {
    require_prerequisites();
    let env = testenv::shared_async().await?;
    let ns = TestNamespace::create(env, "netpol-run").await?;
    let client = env.admin().await?;
    let bridge = "orxnp1";
    let exec = isolated_executor(&client, env, &ns.name, bridge, "10.213.121.0/24").await?;
    let gateway = exec.pod_gateway().context("isolated mode has a gateway")?;
    // Another address on the node, where only canaries and the stand-in cluster DNS listen.
    let other = Ipv4Addr::new(10, 213, 121, 250);
    let dns_name = format!("kube-dns-{}", ns.name);
    let pods: Api<Pod> = ns.api(&client);
    let outcome = async {
        ip(&["addr", "replace", &format!("{other}/32"), "dev", bridge])?;
        let endpoint = CountingListener::start(None, gateway, 0)?;
        let sidecar = CountingListener::start(None, gateway, 0)?;
        let canary_gateway = CountingListener::start(None, gateway, 0)?;
        let canary_other = CountingListener::start(None, other, endpoint.port())?;
        let dns_gateway = Dns::start(gateway)?;
        let dns_cluster = Dns::start(other)?;

        let mut config = Config::load(
            &workspace_root()
                .join("examples/operator/config.yaml")
                .to_string_lossy(),
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        config.sidecar.namespace = ns.name.clone();
        config.sidecar.port = sidecar.port();
        config.sidecar.target_port = None;
        // The sidecar's pod runs elsewhere, at the gateway; the cluster DNS at `other`.
        let sidecar_labels = serde_json::to_value(&config.sidecar.pod_labels)?;
        remote_pod(&client, &ns.name, "sidecar", sidecar_labels, gateway).await?;
        remote_pod(
            &client,
            "kube-system",
            &dns_name,
            json!({"k8s-app": "kube-dns"}),
            other,
        )
        .await?;

        let policies: Api<NetworkPolicy> = ns.api(&client);
        policies
            .create(
                &PostParams::default(),
                &run_policy(&ns.name, "run-1", &config, endpoint.addr)?,
            )
            .await?;
        let post = PostParams::default();
        pods.create(&post, &runner_pod("runner", "run-1")?).await?;
        pods.create(&post, &runner_pod("bystander", "run-2")?)
            .await?;
        let mut on_host = runner_pod("on-host", "run-3")?;
        if let Some(spec) = on_host.spec.as_mut() {
            spec.host_network = Some(true);
        }
        pods.create(&post, &on_host).await?;
        let runner = wait_running(&pods, "runner").await?;
        let bystander = wait_running(&pods, "bystander").await?;

        // A pod asking for the host's network keeps it, in isolated mode too.
        let on_host = wait_running(&pods, "on-host").await?;
        ensure!(
            pod_ip(&on_host) == Some(Ipv4Addr::LOCALHOST),
            "a hostNetwork pod has podIP {:?}",
            pod_ip(&on_host)
        );
        let (_, host_netns) = container_netns_any(&exec, &on_host).await?;
        ensure!(
            host_netns.is_empty(),
            "a hostNetwork pod is in namespace {host_netns:?}"
        );

        // Its own address on the bridge, reported as podIP and podIPs.
        let subnet: Ipv4Net = "10.213.121.0/24".parse()?;
        let address = pod_ip(&runner).context("the runner pod has a podIP")?;
        ensure!(
            subnet.contains(&address) && address != gateway,
            "podIP {address} is not a pod address on {subnet}"
        );
        let ips = runner
            .status
            .as_ref()
            .and_then(|s| s.pod_ips.clone())
            .unwrap_or_default();
        ensure!(
            ips.len() == 1 && ips[0].ip == address.to_string(),
            "podIPs {ips:?}"
        );
        ensure!(pod_ip(&bystander) != Some(address), "two pods, one address");

        // A real container in that namespace: uid 65532, read-only root.
        let (pid, netns) = container_netns(&exec, &runner).await?;
        ensure!(
            netns.starts_with("orxnp1-"),
            "the runner's process {pid} is in network namespace {netns:?}, not one of the node's"
        );
        let proc_status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let uid_line = proc_status
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .unwrap_or_default();
        ensure!(
            uid_line.split_whitespace().skip(1).all(|u| u == "65532"),
            "the runner runs as {uid_line:?}, not 65532"
        );
        let mountinfo = std::fs::read_to_string(format!("/proc/{pid}/mountinfo"))?;
        let root = mountinfo
            .lines()
            .find(|l| l.split_whitespace().nth(4) == Some("/"))
            .context("no root mount")?;
        ensure!(
            root.split_whitespace()
                .nth(5)
                .is_some_and(|o| o.split(',').any(|x| x == "ro")),
            "the runner's root filesystem is not read-only: {root}"
        );
        let table = std::process::Command::new("ip")
            .args([
                "netns", "exec", &netns, "nft", "list", "table", "inet", "orrery",
            ])
            .output()?;
        let table = String::from_utf8_lossy(&table.stdout);
        ensure!(
            table.contains(&format!("{}/run-1-egress", ns.name)),
            "the pod's namespace has no rules of the policy: {table}"
        );
        ensure!(
            !host_has_orrery_table()?,
            "the rules are in the pod's namespace, never in the host's tables"
        );

        // The bystander is selected by nothing: the canaries are reachable (the test can fail).
        let (_, by_netns) = container_netns(&exec, &bystander).await?;
        ensure!(connect_from(&by_netns, canary_gateway.addr).is_ok());
        ensure!(connect_from(&by_netns, canary_other.addr).is_ok());
        ensure!(dns_query_from(&by_netns, dns_gateway.addr));
        ensure!(canary_gateway.accepted() == 1 && canary_other.accepted() == 1);
        ensure!(dns_gateway.received() == 1);

        // The runner: its endpoint, the sidecar and the cluster DNS; nothing else.
        ensure!(
            connect_from(&netns, endpoint.addr).is_ok(),
            "the endpoint {}",
            endpoint.addr
        );
        ensure!(
            connect_from(&netns, sidecar.addr).is_ok(),
            "the sidecar {}",
            sidecar.addr
        );
        ensure!(
            dns_query_from(&netns, dns_cluster.addr),
            "the cluster DNS {}",
            dns_cluster.addr
        );
        ensure!(endpoint.accepted() == 1 && sidecar.accepted() == 1);
        ensure!(dns_cluster.received() == 1);
        let refused = connect_from(&netns, canary_gateway.addr);
        ensure!(
            refused == Err(ErrorKind::ConnectionRefused),
            "another port on the gateway: {refused:?}"
        );
        let refused = connect_from(&netns, canary_other.addr);
        ensure!(
            refused == Err(ErrorKind::ConnectionRefused),
            "the endpoint's port on another address: {refused:?}"
        );
        ensure!(
            !dns_query_from(&netns, dns_gateway.addr),
            "DNS to a server that is not the cluster DNS was answered"
        );
        ensure!(
            canary_gateway.accepted() == 1,
            "the gateway canary saw the runner"
        );
        ensure!(
            canary_other.accepted() == 1,
            "the other address's canary saw the runner"
        );
        ensure!(
            dns_gateway.received() == 1,
            "the other DNS server saw the runner's query"
        );

        // A policy made while the bystander runs (egress to nothing) closes it off.
        let deny: NetworkPolicy = serde_json::from_value(json!({
            "metadata": {"name": "bystander-deny"},
            "spec": {"podSelector": {"matchLabels": {RUN_UID_LABEL: "run-2"}},
                     "policyTypes": ["Egress"]}
        }))?;
        policies.create(&PostParams::default(), &deny).await?;
        eventually(Duration::from_secs(30), || async {
            let result = connect_from(&by_netns, canary_gateway.addr);
            ensure!(
                result == Err(ErrorKind::ConnectionRefused),
                "the bystander is not closed off yet: {result:?}"
            );
            Ok(())
        })
        .await
        .context("after a policy selected the running bystander")?;
        let seen = canary_gateway.accepted();
        ensure!(connect_from(&by_netns, canary_gateway.addr).is_err());
        ensure!(
            canary_gateway.accepted() == seen,
            "the gateway canary saw the closed-off bystander"
        );

        // The policy deleted: the runner's rules follow.
        policies
            .delete("run-1-egress", &DeleteParams::default())
            .await?;
        eventually(Duration::from_secs(30), || async {
            ensure!(
                connect_from(&netns, canary_gateway.addr).is_ok(),
                "still restricted"
            );
            Ok(())
        })
        .await
        .context("after the policy was deleted")?;

        // Deleting the pod removes its namespace.
        pods.delete("runner", &DeleteParams::default()).await?;
        eventually(Duration::from_secs(30), || async {
            ensure!(
                pods.get_opt("runner").await?.is_none(),
                "runner still there"
            );
            ensure!(
                !net::list_netns()?.contains(&netns),
                "namespace {netns} still there"
            );
            Ok(())
        })
        .await?;
        Ok::<_, anyhow::Error>(())
    }
    .await;
    let kube_system: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let _ = kube_system
        .delete(&dns_name, &DeleteParams::default().grace_period(0))
        .await;
    let _ = pods
        .delete("sidecar", &DeleteParams::default().grace_period(0))
        .await;
    let shutdown = exec.shutdown().await;
    outcome?;
    shutdown?;
    ensure!(
        !bridge_exists(bridge),
        "the bridge {bridge} is left after shutdown"
    );
    let left: Vec<String> = net::list_netns()?
        .into_iter()
        .filter(|n| n.starts_with("orxnp1-"))
        .collect();
    ensure!(left.is_empty(), "namespaces left: {left:?}");
    ensure!(!host_has_orrery_table()?, "a table in the host's ruleset");
    Ok(())
}

/// A RegistryEntry (created, so it has a UID and a generation) for an MCP server at `url`.
async fn mcp_entry(
    client: &Client,
    ns: &str,
    name: &str,
    url: &str,
    private: bool,
) -> Result<RegistryEntry> {
    let tools = ["current_time"];
    let entry: RegistryEntry = serde_json::from_value(json!({
        "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "RegistryEntry",
        "metadata": {"name": name},
        "spec": {"mcp": {"url": url, "tools": tools, "readOnly": tools, "privateNetwork": private}}
    }))?;
    let api: Api<RegistryEntry> = Api::namespaced(client.clone(), ns);
    Ok(api.create(&PostParams::default(), &entry).await?)
}

/// The probe pod's report once its container has ended.
async fn probe_report(pods: &Api<Pod>, name: &str) -> Result<ProbeOutcome> {
    let message = eventually(START_TIMEOUT, || async {
        let pod = pods.get(name).await?;
        let status = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default();
        let t = status
            .first()
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.terminated.clone())
            .with_context(|| format!("{name}: not ended yet"))?;
        ensure!(
            t.container_id
                .as_deref()
                .is_some_and(|i| i.starts_with("runc://")),
            "{name} ran as {:?}, not as a runc container",
            t.container_id
        );
        Ok(t.message.unwrap_or_default())
    })
    .await?;
    match parse_report(&message) {
        Ok(report) => Ok(report.outcome),
        Err(e) => bail!("{name}: no probe report ({e}): {message:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_probe_pod_of_a_private_entry_reaches_it_on_the_gateway_and_nothing_its_policy_leaves_out()
-> Result<()> {
    require_prerequisites();
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "netpol-probe").await?;
    let client = env.admin().await?;
    // What a crashed run of a node with this bridge would have left: a pod's namespace.
    let _ = std::process::Command::new("ip")
        .args(["netns", "del", "orxnp2-crashed"])
        .output();
    ip(&["netns", "add", "orxnp2-crashed"])?;
    let exec = isolated_executor(&client, env, &ns.name, "orxnp2", "10.213.122.0/24").await;
    let leftover = net::list_netns()?.contains(&"orxnp2-crashed".to_owned());
    if leftover {
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", "orxnp2-crashed"])
            .output();
    }
    let exec = exec?;
    ensure!(
        !leftover,
        "the crashed run's namespace orxnp2-crashed is still there after the node started"
    );
    let gateway = exec.pod_gateway().context("isolated mode has a gateway")?;
    let outcome = async {
        // The demo fleet binds 127.0.0.1 over http: a TLS front on the gateway stands for it.
        let fleet = start_fleet(FleetConfig {
            allowed_hosts: loopback_hosts()
                .into_iter()
                .chain([gateway.to_string()])
                .collect(),
            ..FleetConfig::ephemeral()
        })
        .await?;
        let tools: SocketAddr = fleet
            .tools_url()
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .parse()?;
        let ca = TestCa::new("orrery e2e_netpol CA")?;
        let front = Front::tls((gateway, 0).into(), tools, &ca).await?;
        let canary = CountingListener::start(None, gateway, 0)?;

        let mut config = Config::load(
            &workspace_root()
                .join("examples/operator/config.yaml")
                .to_string_lossy(),
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        config.runner.image = RUNNER_IMAGE.to_owned();
        config.private_network_allowlist = vec![format!("{gateway}/32")];
        // The front's CA, as a deployment trusts its private CA: `runner.trustedCertificates`.
        config.runner.trusted_certificates = Some(ca.pem());
        let pods: Api<Pod> = ns.api(&client);
        let policies: Api<NetworkPolicy> = ns.api(&client);
        let post = PostParams::default();

        // The operator's pod and policy for a privateNetwork entry on the gateway.
        let entry = mcp_entry(
            &client,
            &ns.name,
            "fleet-tools",
            &format!("https://{}/mcp", front.addr()),
            true,
        )
        .await?;
        policies
            .create(&post, &probe_network_policy(&entry, &config)?)
            .await?;
        let pod = probe_pod(&entry, &config)?;
        let name = pod.name_any();
        pods.create(&post, &pod).await?;
        let outcome = probe_report(&pods, &name).await?;
        ensure!(
            outcome == ProbeOutcome::Ok,
            "the probe of {} in its own namespace: {outcome:?}",
            front.addr()
        );

        // The same guard (the allowlist in the pod's env) under a policy without it: public
        // addresses only. The probe is refused by the rules, and the canary sees nothing.
        let entry = mcp_entry(
            &client,
            &ns.name,
            "canary",
            &format!("https://{}/mcp", canary.addr),
            true,
        )
        .await?;
        let mut public_only = config.clone();
        public_only.private_network_allowlist.clear();
        policies
            .create(&post, &probe_network_policy(&entry, &public_only)?)
            .await?;
        let pod = probe_pod(&entry, &config)?;
        let name = pod.name_any();
        pods.create(&post, &pod).await?;
        let outcome = probe_report(&pods, &name).await?;
        match &outcome {
            ProbeOutcome::Error { message } => {
                eprintln!("the probe past its policy: {message}");
            }
            ProbeOutcome::Ok => bail!("the probe reached {} past its policy", canary.addr),
        }
        ensure!(
            canary.accepted() == 0,
            "the canary saw the probe ({outcome:?})"
        );
        drop(fleet);
        Ok::<_, anyhow::Error>(())
    }
    .await;
    let shutdown = exec.shutdown().await;
    outcome?;
    shutdown?;
    ensure!(
        !bridge_exists("orxnp2"),
        "the bridge is left after shutdown"
    );
    Ok(())
}

/// Waits until pod `name` has ended; its phase and its container's termination message.
async fn wait_ended(pods: &Api<Pod>, name: &str) -> Result<(String, String)> {
    eventually(Duration::from_secs(90), || async {
        let pod = pods.get(name).await?;
        let status = pod.status.as_ref();
        let phase = status.and_then(|s| s.phase.clone()).unwrap_or_default();
        ensure!(
            phase == "Succeeded" || phase == "Failed",
            "pod {name} is {phase:?}"
        );
        let message = status
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|cs| cs.first())
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.message.clone())
            .unwrap_or_default();
        Ok((phase, message))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_shipped_egress_check_is_held_under_its_policy_and_reaches_the_api_server_without_it_attack_48()
-> Result<()> {
    require_prerequisites();
    let env = testenv::shared_async().await?;
    let ns = TestNamespace::create(env, "netpol-egress").await?;
    let client = env.admin().await?;
    let exec = isolated_executor(&client, env, &ns.name, "orxeg1", "10.213.142.0/24").await?;
    let pods: Api<Pod> = ns.api(&client);
    let outcome = async {
        // The manifest a platform team applies, with the image the tests build.
        let text = std::fs::read_to_string(workspace_root().join("deploy/egress-check.yaml"))?;
        let mut policy: Option<NetworkPolicy> = None;
        let mut pod: Option<Pod> = None;
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let value =
                serde_json::to_value(<serde_yaml::Value as serde::Deserialize>::deserialize(doc)?)?;
            match value["kind"].as_str() {
                Some("NetworkPolicy") => policy = Some(serde_json::from_value(value)?),
                Some("Pod") => pod = Some(serde_json::from_value(value)?),
                other => bail!("deploy/egress-check.yaml holds a {other:?}"),
            }
        }
        let (policy, mut pod) = (
            policy.context("the manifest's NetworkPolicy")?,
            pod.context("the manifest's Pod")?,
        );
        let container = pod
            .spec
            .as_mut()
            .and_then(|s| s.containers.first_mut())
            .context("the check's container")?;
        container.image = Some(RUNNER_IMAGE.to_owned());
        let post = PostParams::default();

        // Without its policy (another name and label, so the policy never selects it), the
        // network lets it out: it reaches the API server and fails, saying so.
        let mut unheld = pod.clone();
        unheld.metadata.name = Some("unheld".into());
        unheld.metadata.labels = Some([("app".to_owned(), "unheld".to_owned())].into());
        pods.create(&post, &unheld).await?;
        let (phase, message) = wait_ended(&pods, "unheld").await?;
        let report: serde_json::Value = serde_json::from_str(message.trim())
            .with_context(|| format!("the report: {message:?}"))?;
        ensure!(
            phase == "Failed" && report["held"] == false,
            "without a policy: {phase} {report}"
        );
        let reached: Vec<&str> = report["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["reached"] == true)
            .filter_map(|t| t["target"].as_str())
            .collect();
        ensure!(!reached.is_empty(), "{report}");

        // Under its policy, as shipped: nothing is reached, and it succeeds.
        let policies: Api<NetworkPolicy> = ns.api(&client);
        policies.create(&post, &policy).await?;
        pods.create(&post, &pod).await?;
        let (phase, message) = wait_ended(&pods, "orrery-egress-check").await?;
        let report: serde_json::Value = serde_json::from_str(message.trim())
            .with_context(|| format!("the report: {message:?}"))?;
        ensure!(
            phase == "Succeeded" && report["held"] == true,
            "under the policy: {phase} {report}"
        );
        let tried: Vec<&str> = report["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["target"].as_str())
            .collect();
        ensure!(
            reached.iter().all(|r| tried.contains(r)) && tried.contains(&"169.254.169.254:80"),
            "the same targets were tried: {tried:?} (reached before: {reached:?})"
        );
        Ok(())
    }
    .await;
    let shutdown = exec.shutdown().await;
    outcome?;
    shutdown?;
    Ok(())
}
