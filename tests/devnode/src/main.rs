//! `orrery-devnode`: the development node (the `orrery_devnode` crate) as a process of its own,
//! so a person can try the operator by hand on the test control plane, which has no kubelet:
//!
//! ```sh
//! cargo run -p orrery-devnode -- --kubeconfig /tmp/te/kubeconfig
//! ```
//!
//! It registers a Node, binds the pods that name no node to it and runs the project's images
//! (`orrery/runner` → `orrery`, `orrery/podtest` → `orrery-podtest`) as local processes, until
//! SIGTERM or SIGINT; then it stops them (their pods end `Failed`, reason `Terminated`), deletes
//! its Node and exits 0. It prints one line naming the Node and where pod logs go. Test
//! infrastructure only: never part of the product.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use orrery_devnode::net::{DEFAULT_BRIDGE, DEFAULT_SUBNET, Ipv4Net, NetworkConfig};
use orrery_devnode::{ExecutorConfig, NetworkMode, PodExecutor, default_bin_dir};
use tokio::signal::unix::{SignalKind, signal};

/// Runs pods of the project's images on this machine as a stand-in kubelet (test
/// infrastructure), until SIGTERM or SIGINT.
#[derive(Debug, Parser)]
#[command(name = "orrery-devnode")]
struct Cli {
    /// The kubeconfig of the cluster (its current context is used; it needs rights on Nodes,
    /// pods, pods/binding, pods/status, Secrets and ConfigMaps: `testenv up`'s admin).
    #[arg(long, value_name = "FILE")]
    kubeconfig: PathBuf,
    /// The Node to register and run pods for.
    #[arg(long, value_name = "NAME", default_value = "devnode")]
    node_name: String,
    /// Where the project's binaries are (`orrery`, `orrery-podtest`); default: next to this
    /// binary, else ORRERY_BIN_DIR, else the cargo target directory.
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Only pods of this namespace (default: all namespaces).
    #[arg(long, value_name = "NAMESPACE")]
    namespace: Option<String>,
    /// Where pod directories (volumes, logs) go; default: a fresh directory under the temp
    /// directory. Removed at exit unless ORRERY_TESTENV_KEEP=1.
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Container mode: images whose `<DIR>/NAME.tar` exists (an OCI archive, as
    /// tests/images/build.sh writes) run with runc; other images as local processes. Default:
    /// ORRERY_IMAGES_DIR.
    #[arg(long, value_name = "DIR")]
    images_dir: Option<PathBuf>,
    /// The network of container-mode pods: `host` (the host's, shared by all pods; the
    /// default) or `isolated` (a network namespace per pod on a bridge this node owns, with the
    /// NetworkPolicies that select it enforced as nftables rules inside it; needs root,
    /// --images-dir, iproute2 and nftables). Services pods must reach (the sidecar, registry
    /// endpoints) then listen on the bridge's gateway address, not on 127.0.0.1.
    #[arg(long, value_enum, default_value_t = PodNetworkArg::Host)]
    pod_network: PodNetworkArg,
    /// The bridge of `--pod-network isolated` (made and removed by this node; namespaces are
    /// `<bridge>-<pod uid>` unless it is the default).
    #[arg(long, value_name = "NAME", default_value = DEFAULT_BRIDGE)]
    pod_bridge: String,
    /// The pod subnet of `--pod-network isolated`; the bridge holds its first address (the
    /// gateway).
    #[arg(long, value_name = "CIDR", default_value = DEFAULT_SUBNET)]
    pod_subnet: Ipv4Net,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PodNetworkArg {
    Host,
    Isolated,
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let kubeconfig = Kubeconfig::read_from(&cli.kubeconfig)
        .with_context(|| format!("reading the kubeconfig {}", cli.kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .with_context(|| {
            format!(
                "the current context of {}: pass a kubeconfig whose current context reaches \
                 the cluster",
                cli.kubeconfig.display()
            )
        })?;
    let server = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_owned();
    let client = Client::try_from(config).context("building the kube client")?;

    let mut executor = ExecutorConfig::new(&cli.node_name)
        .bin_dir(cli.bin_dir.unwrap_or_else(default_bin_dir))
        .api_server(&server);
    if let Some(ns) = cli.namespace {
        executor = executor.namespace(ns);
    }
    executor.work_dir = cli.work_dir;
    executor.images_dir = cli.images_dir.or_else(|| {
        std::env::var_os(orrery_devnode::container::IMAGES_DIR_ENV)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
    });
    executor.pod_network = match cli.pod_network {
        PodNetworkArg::Host => NetworkMode::Host,
        PodNetworkArg::Isolated if cli.pod_bridge == DEFAULT_BRIDGE => {
            NetworkMode::Isolated(NetworkConfig {
                subnet: cli.pod_subnet,
                ..NetworkConfig::default()
            })
        }
        PodNetworkArg::Isolated => {
            NetworkMode::Isolated(NetworkConfig::named(&cli.pod_bridge, cli.pod_subnet))
        }
    };
    let bin_dir = executor.bin_dir.clone();

    // Listen before starting, so a signal during start-up is not lost.
    let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    let running = PodExecutor::start_with(client, executor)
        .await
        .context("starting the pod executor")?;
    let network = match running.pod_gateway() {
        Some(gw) => format!(
            "container-mode pods get their own network namespace (gateway {gw}, NetworkPolicies enforced)"
        ),
        None => "pods use the host network".to_owned(),
    };
    println!(
        "orrery-devnode: registered node {} on {server}; images run from {}; {network}; pod logs go to {}/<namespace>_<pod>_<uid>/logs/<container>.log",
        running.node_name(),
        bin_dir.display(),
        running.work_dir().display(),
    );
    tokio::select! {
        _ = term.recv() => eprintln!("orrery-devnode: SIGTERM: stopping the pods and removing the node"),
        _ = int.recv() => eprintln!("orrery-devnode: SIGINT: stopping the pods and removing the node"),
    }
    running
        .shutdown()
        .await
        .context("shutting the pod executor down")?;
    eprintln!("orrery-devnode: stopped");
    Ok(())
}
