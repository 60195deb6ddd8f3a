//! `orrery up`: the whole system on one machine, for trying it and for development.
//!
//! In order: the Debian packages the dev node needs (buildah, runc, iproute2, nftables; installed
//! when missing), the workspace's binaries (`cargo build`), the local control plane and Helm (built
//! from the Go module proxy by `tests/testenv/build.sh` and `tests/helm/build.sh` the first time,
//! cached after), the images (`tests/images/build.sh`); then the control plane is started, a
//! development node runs pods as runc containers from those images, the Helm chart is installed
//! (the operator runs in its own pod, from its image, with its projected ServiceAccount token), the
//! demo fleet starts in this process and is registered as RegistryEntries, the examples are
//! applied, and the critic-loop StudioRun is started and followed live through the sidecar. Then it
//! stays up, printing what to try, until Ctrl-C or SIGTERM (or `orrery up --down`), and stops
//! everything it started: the pods' containers, the fleet, the control plane.
//!
//! Pod networking: by default ([`PodNetworkChoice::Auto`]) every runner and probe pod gets a
//! network namespace of its own on the bridge `orrery0` and the NetworkPolicies the operator
//! makes are enforced in it (nftables inside the pod's namespace; the host's tables are never
//! touched). The operator's pod is one of them, under the chart's own NetworkPolicy: it reaches
//! the control plane through the `kubernetes` Service (the node forwards its gateway's port 6443
//! to it), runners reach its sidecar through the chart's Service at a fixed cluster IP
//! ([`SIDECAR_CLUSTER_IP`]: the node routes cluster IPs but has no cluster DNS), and the sidecar
//! is forwarded to loopback (following the pod if it is replaced). The demo fleet is registered as `privateNetwork` entries at `https://<gateway>:<port>` behind TLS
//! fronts whose throwaway CA the pods trust (`runner.trustedCertificates`), and the gateway is
//! on `privateNetworkAllowlist`. Where the bridge cannot be made (no `ip`/`nft`, no
//! CAP_NET_ADMIN), pods share the host's network, NetworkPolicies are not enforced, and it says
//! so.
//!
//! Nothing here is a production install: the control plane is the test one (`tests/testenv/`),
//! the node is the dev node (`tests/devnode/`). The cluster's state lives in the state
//! directory and is started fresh every time.

pub mod leftovers;
pub mod state;
pub mod steps;
pub mod traces;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};
use orrery_crds::registry::RegistryEntry;
use orrery_crds::{Composition, StudioRun};
use orrery_runner::demo::{Fleet, FleetConfig, start_fleet};

use orrery_devnode::net::NetworkConfig;
use orrery_devnode::{ExecutorConfig, NetworkMode, PodExecutor};
use orrery_tests::chart;
use orrery_tests::front::{Front, TestCa};
use orrery_tests::harness::{
    apply_yaml, eventually, free_port, has_condition, wait_for, workspace_root,
};
use orrery_tests::images;
use orrery_tests::testenv::{self, TestEnv};
use steps::Progress;

/// The Helm release and its namespace.
pub const RELEASE: &str = "orrery";
pub const RELEASE_NAMESPACE: &str = "orrery-system";
/// Where the examples and the demo run go.
pub const NAMESPACE: &str = "default";
/// The demo run (examples/runs/critic-loop-run.yaml).
pub const DEMO_RUN: &str = "release-notes-1";
/// The dev node's name.
pub const NODE: &str = "devnode";
/// The user the kubeconfig's current context is (the run's owner).
const ADMIN: &str = testenv::ADMIN;
/// The person the banner tells to sign in to the console: a user of the control plane (not a
/// ServiceAccount, which cannot decide approvals) bound to the example studio-user Role in
/// [`NAMESPACE`], so the console shows what a team member sees, not what an admin does.
const CONSOLE_USER: &str = testenv::ALICE;

/// How long to wait for the operator's pod, the examples and the run.
const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// The number of numbered steps [`start`] prints.
pub const STEPS: usize = 11;

/// How pods are networked (`--pod-network`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PodNetworkChoice {
    /// Isolated when the bridge can be made, else the host's network (said when it happens).
    #[default]
    Auto,
    /// The host's network for every pod; NetworkPolicies are not enforced.
    Host,
    /// A namespace per pod with its NetworkPolicies enforced; failing to make it is an error.
    Isolated,
}

impl PodNetworkChoice {
    /// As `--pod-network` spells it.
    pub fn as_arg(self) -> &'static str {
        match self {
            PodNetworkChoice::Auto => "auto",
            PodNetworkChoice::Host => "host",
            PodNetworkChoice::Isolated => "isolated",
        }
    }
}

impl std::str::FromStr for PodNetworkChoice {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "auto" => Ok(PodNetworkChoice::Auto),
            "host" => Ok(PodNetworkChoice::Host),
            "isolated" => Ok(PodNetworkChoice::Isolated),
            other => Err(format!("{other:?}: use auto, host or isolated")),
        }
    }
}

/// What `orrery up` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the control plane's files, the dev node's pods and the state go.
    pub state_dir: PathBuf,
    /// The sidecar's port on loopback (0: 8080 when free, else any free port).
    pub sidecar_port: u16,
    /// Start the demo run and follow it live.
    pub demo_run: bool,
    /// How pods are networked.
    pub pod_network: PodNetworkChoice,
    /// Whether runs are exported as OpenTelemetry traces, and where.
    pub traces: Traces,
}

/// Where `orrery up` has runs exported as OpenTelemetry traces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Traces {
    /// Not exported.
    #[default]
    Off,
    /// To a receiver of its own ([`traces`]): each run's trace as a tree in
    /// `<state-dir>/traces.txt`.
    Local,
    /// To the collector at this OTLP/HTTP base URL.
    Endpoint(String),
}

/// The port a local trace receiver takes when free (OTLP/HTTP's).
const OTLP_HTTP_PORT: u16 = 4318;

/// The default state directory: `$XDG_STATE_HOME/orrery/up`, else `~/.local/state/orrery/up`.
pub fn default_state_dir() -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join("state")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("orrery").join("up")
}

/// Everything [`start`] started, each part present once started. [`Running::stop`] stops what is
/// there, so a start cut short (an error, Ctrl-C) is stopped the same way.
#[derive(Default)]
pub struct Running {
    pub env: Option<TestEnv>,
    pub executor: Option<PodExecutor>,
    pub fleet: Option<Fleet>,
    /// The TLS fronts of the fleet on the gateway and the sidecar's loopback forward
    /// (isolated networking).
    pub fronts: Vec<Front>,
    /// Tasks that live as long as the system (the loopback forward following the operator's
    /// pod); aborted by [`Running::stop`].
    pub tasks: Vec<tokio::task::JoinHandle<()>>,
    pub sidecar_url: Option<String>,
    /// What to try, printed once ready and kept for `--status`.
    pub banner: String,
    /// The state directory whose pod network marker ([`leftovers::mark_network`]) goes once
    /// the dev node has taken its network down.
    pub marked_network: Option<PathBuf>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("env", &self.env.as_ref().map(|e| &e.server))
            .field("sidecar_url", &self.sidecar_url)
            .finish_non_exhaustive()
    }
}

/// `preferred` when it is free on every address (pods share the host's network), else a free
/// port.
fn port_or_free(preferred: u16) -> Result<u16> {
    if preferred != 0 && std::net::TcpListener::bind(("0.0.0.0", preferred)).is_ok() {
        return Ok(preferred);
    }
    free_port()
}

fn effective_uid() -> Result<u32> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata("/proc/self")
        .context("reading /proc/self (orrery up needs Linux)")?
        .uid())
}

/// The Debian packages the dev node needs: buildah and runc, and for isolated pod networking
/// iproute2 and nftables.
const PACKAGES: [&str; 4] = ["buildah", "runc", "iproute2", "nftables"];

/// Installs [`PACKAGES`] with `scripts/install-packages.sh` when one is missing (the script
/// checks, and does nothing when all are there).
fn packages() -> Result<()> {
    let script = workspace_root().join("scripts/install-packages.sh");
    let status = Command::new("bash")
        .arg(&script)
        .args(PACKAGES)
        .status()
        .with_context(|| format!("running {}", script.display()))?;
    ensure!(
        status.success(),
        "{} {} failed ({status}): install them with apt-get (Debian) and run orrery up again",
        script.display(),
        PACKAGES.join(" ")
    );
    Ok(())
}

/// `cargo build --workspace --bin orrery --bin orrery-operator`, as `images::build` would, but
/// with cargo's progress on the terminal.
fn build_binaries() -> Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "--workspace",
            "--bin",
            "orrery",
            "--bin",
            "orrery-operator",
        ])
        .current_dir(workspace_root())
        .status()
        .context("running cargo build")?;
    ensure!(status.success(), "cargo build failed ({status})");
    Ok(())
}

/// Where pods reach the demo fleet: its loopback addresses (pods on the host network), or the
/// TLS fronts on the gateway (isolated pods; the entries are then `privateNetwork`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FleetUrls {
    tools: String,
    writer: String,
    private: bool,
}

/// The examples' fleet URLs replaced with where pods reach the fleet (it may have taken other
/// ports, or sit behind fronts); behind fronts, the two entries say `privateNetwork: true`.
fn point_at_fleet(text: &str, urls: &FleetUrls) -> String {
    let tools = &urls.tools;
    let writer = &urls.writer;
    let text = text
        .replace(
            &format!(
                "http://127.0.0.1:{}",
                orrery_runner::demo::fleet::DEFAULT_TOOLS_PORT
            ),
            tools,
        )
        .replace(
            &format!(
                "http://127.0.0.1:{}",
                orrery_runner::demo::fleet::DEFAULT_WRITER_PORT
            ),
            writer,
        );
    if !urls.private {
        return text;
    }
    // The entries' server block (`mcp:` / `a2a:`) gets `privateNetwork: true` as its first field.
    text.lines()
        .flat_map(|line| {
            let block = matches!(line, "  mcp:" | "  a2a:");
            std::iter::once(line.to_owned())
                .chain(block.then(|| "    privateNetwork: true".to_owned()))
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Applies the examples the dev node can serve: the Scripted model and the demo fleet's two
/// entries (examples/registry/, pointed at the fleet), and every Composition. `gpt.yaml` is left
/// out: it needs an API key and the internet.
async fn apply_examples(client: &Client, urls: &FleetUrls) -> Result<Vec<String>> {
    let root = workspace_root().join("examples");
    let mut files = vec![
        root.join("registry/scripted.yaml"),
        root.join("registry/demo-tools.yaml"),
        root.join("registry/demo-writer.yaml"),
    ];
    let mut compositions: Vec<PathBuf> = std::fs::read_dir(root.join("compositions"))
        .context("reading examples/compositions")?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    compositions.sort();
    files.extend(compositions.iter().cloned());
    for file in &files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let text = point_at_fleet(&text, urls);
        // The CRDs were just installed: retry while discovery catches up.
        eventually(Duration::from_secs(60), || {
            apply_yaml(client, Some(NAMESPACE), &text)
        })
        .await
        .with_context(|| format!("applying {}", file.display()))?;
    }
    Ok(compositions
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect())
}

/// Starts everything, filling `running` as it goes (see [`Running`]).
pub async fn start(options: &Options, running: &mut Running) -> Result<()> {
    let state_dir = &options.state_dir;
    std::fs::create_dir_all(state_dir)
        .with_context(|| format!("creating {}", state_dir.display()))?;
    let mut progress = Progress::new(STEPS, &state_dir.join("timings.json"));

    let uid = effective_uid()?;
    ensure!(
        uid == 0,
        "orrery up runs pods as runc containers in their own namespaces and builds images \
         with buildah, which needs root: run it as root (sudo -E env PATH=$PATH cargo run -p \
         orrery-runner --bin orrery -- up); `orrery demo` needs nothing of this"
    );
    // What an earlier `orrery up` killed before it could stop (SIGKILL, a crash) left running
    // goes first: its containers, before their runc state does, or nothing could stop them after.
    let dir = state_dir.clone();
    let cleared = tokio::task::spawn_blocking(move || leftovers::clear(&dir)).await??;
    if !cleared.is_empty() {
        eprintln!(
            "orrery up: removed what an earlier orrery up left: {}",
            cleared.describe()
        );
    }
    progress
        .step(
            "packages",
            "Debian packages (buildah, runc, iproute2, nftables)",
            None,
            packages,
        )
        .await?;
    progress
        .step(
            "binaries",
            "the operator's and the runner's binaries (cargo build)",
            Some("about 8 min on 2 cores"),
            build_binaries,
        )
        .await?;
    let testenv_bin = progress
        .step(
            "control-plane-build",
            "the local control plane: kube-apiserver, etcd, kube-controller-manager v1.36.3 \
             (tests/testenv/build.sh)",
            Some("about 9 min and 2.1 GiB of memory"),
            testenv::bin_dir,
        )
        .await?;
    progress
        .step(
            "helm-build",
            "Helm v4 (tests/helm/build.sh)",
            Some("about 4 min"),
            chart::helm_bin,
        )
        .await?;
    // Beside the binaries, where the tests' images go too (`images::built`): one build serves
    // both, and it is redone only when a binary or the script changed.
    let images_out = orrery_tests::harness::workspace_binary("orrery")?
        .parent()
        .map(|d| d.join("orrery-images"))
        .context("the binaries' directory")?;
    progress
        .step(
            "console",
            "the web console web/dist (npm ci and npm run build in web/)",
            Some("about 1 min"),
            images::build_console,
        )
        .await?;
    let images = progress
        .step(
            "images",
            "the images localhost/orrery/{operator,runner}:dev (tests/images/build.sh)",
            Some("about 1 min"),
            move || match images::fresh(&images_out) {
                Some(dir) => Ok(dir),
                None => images::build(&images_out),
            },
        )
        .await?;

    // A fresh cluster every time: the state of an earlier run is removed first.
    let cluster_dir = leftovers::cluster_dir(state_dir);
    let _ = std::fs::remove_dir_all(&cluster_dir);
    std::fs::create_dir_all(&cluster_dir)?;
    let started = progress.begin("starting the control plane");
    let dir_arg = cluster_dir.to_string_lossy().into_owned();
    let env =
        tokio::task::spawn_blocking(move || TestEnv::start(&testenv_bin, &["--dir", &dir_arg]))
            .await??;
    progress.end(started, &env.server);
    let kubeconfig = env.kubeconfig.clone();
    let server = env.server.clone();
    let admin_token = env
        .var("TESTENV_ADMIN_TOKEN")
        .map(str::to_owned)
        .context("the control plane's env file names no TESTENV_ADMIN_TOKEN")?;
    let client = env.admin().await?;
    running.env = Some(env);

    let started = progress.begin("starting the dev node (pods as runc containers)");
    let work_dir = leftovers::node_dir(state_dir);
    let _ = std::fs::remove_dir_all(&work_dir);
    let mut config = ExecutorConfig::new(NODE)
        .api_server(&server)
        .images_dir(&images);
    config.work_dir = Some(work_dir.clone());
    if options.pod_network != PodNetworkChoice::Host {
        // Marked before the bridge is made, so a kill from here on leaves it found by
        // `--status` and removed by `--down` (see `leftovers`).
        leftovers::mark_network(state_dir, &NetworkConfig::default())?;
        running.marked_network = Some(state_dir.clone());
    }
    let (executor, gateway, networking) = start_node(&client, config, options.pod_network).await?;
    progress.end(
        started,
        &format!(
            "node {NODE}; {networking}; pod logs under {}",
            work_dir.display()
        ),
    );
    running.executor = Some(executor);

    let started = progress.begin("installing the Helm chart and waiting for the operator's pod");
    let sidecar_port = if options.sidecar_port == 0 {
        port_or_free(8080)?
    } else {
        ensure!(
            std::net::TcpListener::bind(("0.0.0.0", options.sidecar_port)).is_ok(),
            "--sidecar-port {}: the port is taken on this machine (the sidecar is served on it, \
             on loopback): choose another, or leave it out for 8080 or a free one",
            options.sidecar_port
        );
        options.sidecar_port
    };

    let metrics_port = port_or_free(8081)?;
    // Isolated: the operator's pod has an address of its own like any pod, and runners reach
    // the sidecar through the chart's Service at a fixed cluster IP (the dev node routes cluster
    // IPs but has no cluster DNS); loopback gets a forward to the pod (below). On the host's
    // network, everything is on 127.0.0.1.
    let sidecar_host = match gateway {
        Some(_) => SIDECAR_CLUSTER_IP.to_owned(),
        None => "127.0.0.1".to_owned(),
    };
    let ports = chart::DevPorts {
        sidecar: sidecar_port,
        metrics: metrics_port,
        sidecar_metrics: port_or_free(9091)?,
    };
    let mut sets = chart::dev_node_values(&sidecar_host, ports);
    sets.push(format!("tenantNamespaces={{{NAMESPACE}}}"));
    // Where people reach the sidecar on this machine (`kubectl orrery` finds it there).
    sets.push(format!("service.publicUrl=http://127.0.0.1:{sidecar_port}"));
    // The CA of the fleet's TLS fronts, trusted by runner and probe pods.
    let ca = TestCa::new("orrery up demo fleet CA (this session only)")?;
    let ca_file = state_dir.join("fleet-ca.crt");
    std::fs::write(&ca_file, ca.pem()).with_context(|| format!("writing {}", ca_file.display()))?;
    // The demo fleet first: its fronts' exact addresses and ports go on the allowlist.
    let urls = start_demo_fleet(gateway, &ca, running).await?;
    if gateway.is_some() {
        sets.push(format!("service.clusterIP={SIDECAR_CLUSTER_IP}"));
        sets.push(format!("service.port={sidecar_port}"));
        // The cluster's own ranges (the pod bridge, which holds the gateway and the API
        // server's forward, and the Service CIDR): runners reach inside them only the fleet's
        // two fronts, at their exact address and port (anchor 19).
        let fronts: Vec<&str> = [&urls.tools, &urls.writer]
            .iter()
            .map(|u| u.trim_start_matches("https://"))
            .collect();
        sets.push(format!(
            "config.privateNetworkAllowlist={{{}}}",
            fronts.join(",")
        ));
        sets.push(format!(
            "config.clusterRanges={{{},{SERVICE_CIDR}}}",
            NetworkConfig::default().subnet
        ));
    }
    // Runs as traces: a receiver of its own where the operator's pod reaches it, or the
    // person's collector.
    let traces_text = match &options.traces {
        Traces::Off => {
            "\n\nRuns as OpenTelemetry traces: start with `orrery up --traces` (a receiver of its \
                        own draws each run's trace) or `--otel-endpoint URL` (your collector)."
                .to_owned()
        }
        Traces::Local => {
            let ip = gateway.unwrap_or(std::net::Ipv4Addr::LOCALHOST);
            let port = port_on(ip, OTLP_HTTP_PORT)?;
            let (receiver, task) = traces::start((ip, port).into(), state_dir).await?;
            running.tasks.push(task);
            sets.push(format!("otel.endpoint={}", receiver.url));
            sets.push(format!("otel.cidrs={{{ip}/32}}"));
            format!(
                "\n\nRuns as OpenTelemetry traces (the sidecar and the controller export them to \
                 {}):\n  cat {}        # each run's trace as a tree, when it ends\n  tail -f {}  \
                 # every span, one JSON line each",
                receiver.url,
                receiver.trees_file.display(),
                receiver.spans_file.display()
            )
        }
        Traces::Endpoint(url) => {
            sets.push(format!("otel.endpoint={url}"));
            format!(
                "\n\nRuns are exported as OpenTelemetry traces to {url}: search your backend for \
                 a run's UID without its dashes (kubectl get studiorun NAME -o \
                 jsonpath='{{.metadata.uid}}')."
            )
        }
    };
    let chart_dir = chart::chart_dir().to_string_lossy().into_owned();
    let mut args: Vec<String> = [
        "install",
        RELEASE,
        &chart_dir,
        "--namespace",
        RELEASE_NAMESPACE,
        "--create-namespace",
    ]
    .map(String::from)
    .to_vec();
    for set in sets {
        args.extend(["--set".to_owned(), set]);
    }
    if gateway.is_some() {
        args.extend([
            "--set-file".to_owned(),
            format!("runner.trustedCertificates={}", ca_file.display()),
        ]);
    }
    let helm_kubeconfig = kubeconfig.clone();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        chart::helm(&args, Some(&helm_kubeconfig))?.ok()
    })
    .await?
    .context("helm install")?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), RELEASE_NAMESPACE);
    let operator_pod = chart::wait_operator_pod(&pods, RELEASE, READY_TIMEOUT)
        .await
        .with_context(|| {
        format!(
            "the operator's pod did not start both containers (its logs: {}/{RELEASE_NAMESPACE}_*/logs/)",
            work_dir.display()
        )
    })?;
    let pod = operator_pod.name_any();
    let sidecar_url = format!("http://127.0.0.1:{sidecar_port}");
    if gateway.is_some() {
        let address = pod_address(&operator_pod).context("the operator's pod has no address")?;
        let forward = Front::tcp(
            (std::net::Ipv4Addr::LOCALHOST, sidecar_port).into(),
            (address, sidecar_port).into(),
        )
        .await
        .context("forwarding the sidecar to loopback")?;
        running.tasks.push(tokio::spawn(follow_operator_pod(
            pods.clone(),
            forward.retargeter(),
            sidecar_port,
        )));
        running.fronts.push(forward);
    }
    orrery_tests::studio::wait_sidecar(&sidecar_url, READY_TIMEOUT).await?;
    progress.end(
        started,
        &format!("pod {RELEASE_NAMESPACE}/{pod}; sidecar {sidecar_url}"),
    );
    running.sidecar_url = Some(sidecar_url.clone());

    let started = progress.begin("the demo fleet and the examples");
    let compositions = apply_examples(&client, &urls).await?;
    let api: Api<Composition> = Api::namespaced(client.clone(), NAMESPACE);
    for name in &compositions {
        wait_for(
            &api,
            name,
            "Valid=True",
            READY_TIMEOUT,
            has_condition::<Composition>("Valid", "True"),
        )
        .await
        .with_context(|| format!("Composition {NAMESPACE}/{name}"))?;
    }
    let entries: Api<RegistryEntry> = Api::namespaced(client.clone(), NAMESPACE);
    for name in ["demo-tools", "demo-writer", "scripted"] {
        wait_for(
            &entries,
            name,
            "Ready=True",
            READY_TIMEOUT,
            has_condition::<RegistryEntry>("Ready", "True"),
        )
        .await
        .with_context(|| format!("RegistryEntry {NAMESPACE}/{name} (probed in a pod)"))?;
    }
    progress.end(
        started,
        &format!(
            "{} Compositions Valid; demo-tools, demo-writer, scripted Ready",
            compositions.len()
        ),
    );

    // The console's person: the example studio-user Role in the examples' namespace.
    if let Some(env) = running.env.as_ref() {
        orrery_tests::studio::grant_studio_user(env, NAMESPACE, CONSOLE_USER)
            .await
            .with_context(|| format!("granting {CONSOLE_USER} the studio-user Role"))?;
    }
    let kubectl = running
        .env
        .as_ref()
        .and_then(|e| e.bin.as_ref())
        .map(|b| b.join("kubectl"));
    let bin_dir = command_dir(&cluster_dir, kubectl.as_deref()).await?;
    running.banner = banner(
        &kubeconfig,
        Some(&bin_dir),
        &sidecar_url,
        &cluster_dir,
        &networking,
        options.demo_run,
    );
    running.banner.push_str(&traces_text);

    let started = progress.begin("the critic-loop StudioRun, followed live through the sidecar");
    if options.demo_run {
        let run =
            std::fs::read_to_string(workspace_root().join("examples/runs/critic-loop-run.yaml"))
                .context("reading examples/runs/critic-loop-run.yaml")?
                .replace("owner: jane@example.com", &format!("owner: {ADMIN}"));
        let run: StudioRun = serde_yaml::from_str(&run).context("the example run")?;
        let runs: Api<StudioRun> = Api::namespaced(client.clone(), NAMESPACE);
        runs.create(&PostParams::default(), &run)
            .await
            .context("creating the demo StudioRun")?;
        let outcome = follow(&sidecar_url, &client, DEMO_RUN, &admin_token).await?;
        // The trace ends before the operator records the outcome (once the runner's pod has
        // ended): what `kubectl get studioruns` shows is waited for too.
        let recorded = wait_for(
            &runs,
            DEMO_RUN,
            "a final phase",
            READY_TIMEOUT,
            |r: Option<&StudioRun>| {
                r.and_then(|r| r.status.as_ref())
                    .and_then(|s| s.phase)
                    .is_some_and(|p| p.is_terminal())
            },
        )
        .await
        .with_context(|| format!("the operator did not record the end of {DEMO_RUN}"))?;
        let phase = recorded
            .and_then(|r| r.status)
            .and_then(|s| s.phase)
            .map(|p| format!("{p:?}"))
            .unwrap_or_default();
        ensure!(
            phase == outcome,
            "the demo run's trace ended {outcome} but the StudioRun says {phase}: kubectl \
             describe studiorun {DEMO_RUN}"
        );
        progress.end(
            started,
            &format!("StudioRun {NAMESPACE}/{DEMO_RUN} {outcome}"),
        );
        if outcome != "Succeeded" {
            bail!("the demo run ended {outcome}: kubectl describe studiorun {DEMO_RUN}");
        }
    } else {
        progress.end(started, "skipped (--no-run)");
    }
    Ok(())
}

/// Starts the dev node: with isolated pod networking unless `choice` says host (or, on
/// [`PodNetworkChoice::Auto`], the bridge cannot be made). Returns the node, the gateway
/// (isolated) and a line saying how pods are networked.
async fn start_node(
    client: &Client,
    config: ExecutorConfig,
    choice: PodNetworkChoice,
) -> Result<(PodExecutor, Option<std::net::Ipv4Addr>, String)> {
    let mut fallback = String::new();
    if choice != PodNetworkChoice::Host {
        let network = NetworkConfig::default();
        let gateway = network.gateway()?;
        let describe = format!(
            "pods isolated on bridge {} ({}), NetworkPolicies enforced",
            network.bridge, network.subnet
        );
        let mut isolated = config.clone().pod_network(NetworkMode::Isolated(network));
        // The node's address is where its pods reach it (what host-network pods would report
        // as their podIP).
        isolated.host_ip = gateway.to_string();
        match PodExecutor::start_with(client.clone(), isolated).await {
            Ok(executor) => return Ok((executor, Some(gateway), describe)),
            Err(e) if choice == PodNetworkChoice::Auto => {
                fallback = format!(
                    "pods share the host's network and NetworkPolicies are NOT enforced \
                     (isolated networking failed: {e}; --pod-network isolated makes this an \
                     error)"
                );
                eprintln!("orrery up: {fallback}");
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context("starting the dev node with isolated pod networking"));
            }
        }
    }
    let executor = PodExecutor::start_with(client.clone(), config)
        .await
        .context("starting the dev node")?;
    if fallback.is_empty() {
        fallback = "pods share the host's network (--pod-network host): NetworkPolicies are \
                    not enforced"
            .to_owned();
    }
    Ok((executor, None, fallback))
}

/// `preferred` on `ip` when it is free there, else a free port on `ip`.
fn port_on(ip: std::net::Ipv4Addr, preferred: u16) -> Result<u16> {
    if std::net::TcpListener::bind((ip, preferred)).is_ok() {
        return Ok(preferred);
    }
    Ok(std::net::TcpListener::bind((ip, 0))
        .with_context(|| format!("finding a free port on {ip}"))?
        .local_addr()?
        .port())
}

/// Starts the demo fleet on loopback (7801/7802, or free ports when taken) and, for isolated
/// pods, a TLS front for each server on the gateway; returns where pods reach it.
async fn start_demo_fleet(
    gateway: Option<std::net::Ipv4Addr>,
    ca: &TestCa,
    running: &mut Running,
) -> Result<FleetUrls> {
    use orrery_runner::demo::fleet::{DEFAULT_TOOLS_PORT, DEFAULT_WRITER_PORT, loopback_hosts};
    let mut config = FleetConfig::from_env()?;
    let fronts = match gateway {
        None => None,
        Some(g) => {
            let tools = port_on(g, DEFAULT_TOOLS_PORT)?;
            let writer = port_on(g, DEFAULT_WRITER_PORT)?;
            config.allowed_hosts = loopback_hosts();
            config.allowed_hosts.push(g.to_string());
            config.writer_public_url = Some(format!("https://{g}:{writer}"));
            Some((g, tools, writer))
        }
    };
    let fleet = match start_fleet(config.clone()).await {
        Ok(f) => f,
        // 7801/7802 taken: free ports, the entries point at them.
        Err(_) => {
            start_fleet(FleetConfig {
                tools_port: 0,
                writer_port: 0,
                ..config
            })
            .await?
        }
    };
    let (tools_addr, writer_addr) = (fleet.tools_addr(), fleet.writer_addr());
    running.fleet = Some(fleet);
    let Some((g, tools, writer)) = fronts else {
        return Ok(FleetUrls {
            tools: format!("http://{tools_addr}"),
            writer: format!("http://{writer_addr}"),
            private: false,
        });
    };
    for (port, target) in [(tools, tools_addr), (writer, writer_addr)] {
        let front = Front::tls((g, port).into(), target, ca).await?;
        running.fronts.push(front);
    }
    Ok(FleetUrls {
        tools: format!("https://{g}:{tools}"),
        writer: format!("https://{g}:{writer}"),
        private: true,
    })
}

/// A directory for the PATH with kubectl (when the control plane built one) and the
/// `kubectl orrery` plugin with its completion, linked from where they were built.
async fn command_dir(cluster_dir: &Path, kubectl: Option<&Path>) -> Result<PathBuf> {
    let dir = cluster_dir.join("bin");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut commands: Vec<PathBuf> = kubectl.map(Path::to_path_buf).into_iter().collect();
    for bin in ["kubectl-orrery", "kubectl_complete-orrery"] {
        let built =
            tokio::task::spawn_blocking(move || orrery_tests::harness::workspace_binary(bin))
                .await??;
        commands.push(built);
    }
    for command in commands {
        let Some(name) = command.file_name() else {
            continue;
        };
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&command, &link)
            .with_context(|| format!("linking {} to {}", link.display(), command.display()))?;
    }
    Ok(dir)
}

/// Follows `run` live through the sidecar as `kubectl orrery logs -f` does (the same code,
/// with the admin's token), printing its trace as `orrery run` does; gives the outcome.
async fn follow(sidecar_url: &str, client: &Client, run: &str, token: &str) -> Result<String> {
    use kubectl_orrery::logs::{Ending, Output, Printer};
    use kubectl_orrery::sidecar::{Reach, Sidecar};
    let mut config = kube::Config::new(sidecar_url.parse().context("the sidecar's URL")?);
    config.auth_info.token = Some(token.to_owned().into());
    let sidecar = Sidecar::at(&config, Reach::Given(sidecar_url.to_owned()), None)?;
    let mut printer = Printer::stdout(Output::Text);
    Ok(
        match kubectl_orrery::logs::follow(&sidecar, client, NAMESPACE, run, 0, &mut printer)
            .await?
        {
            Ending::RunEnd(outcome) | Ending::Phase(outcome) => outcome,
            Ending::Stored => "Unknown".to_owned(),
        },
    )
}

/// What to try, once up. With the demo run (`demo_run`), the hints name it; without
/// (`--no-run`), no run exists yet and they follow the one the hints create.
fn banner(
    kubeconfig: &Path,
    bin_dir: Option<&Path>,
    sidecar: &str,
    cluster_dir: &Path,
    networking: &str,
    demo_run: bool,
) -> String {
    let path_hint = match bin_dir {
        Some(dir) => format!(
            "  export PATH={}:$PATH   # kubectl v1.36.3 (built with the control plane) and kubectl orrery\n",
            dir.display()
        ),
        None => String::new(),
    };
    let describe_demo = if demo_run {
        format!("  kubectl describe studiorun {DEMO_RUN}\n")
    } else {
        String::new()
    };
    let demo_logs = if demo_run {
        format!(
            "  kubectl orrery logs {DEMO_RUN}                  # the demo run's trace, as `orrery run` prints it\n"
        )
    } else {
        String::new()
    };
    // The demo run's events, or (no demo run) those of the run the hints create (`$RUN` is
    // `studiorun.<group>/<name>`).
    let events_of = if demo_run {
        DEMO_RUN.to_owned()
    } else {
        "${RUN#*/}".to_owned()
    };
    format!(
        "Orrery Studio is up on this machine.

  export KUBECONFIG={kubeconfig}
{path_hint}
Pods: {networking}.

Try:
  kubectl get compositions,registryentries,studioruns
{describe_demo}  kubectl get pods -A -o wide                    # the operator's pod, probe and runner pods
  kubectl get networkpolicies                    # each run's egress rules
  RUN=$(sed 's/name: release-notes-1/generateName: release-notes-/; s/owner: .*/owner: admin/' \\
      examples/runs/critic-loop-run.yaml | kubectl create -f - -o name)
  kubectl wait --for=jsonpath='{{.status.phase}}'=Succeeded \"$RUN\"

kubectl orrery, runs from the terminal as yourself (the sidecar is found from the chart's Service):
  kubectl orrery runs -w                         # phase, revision, owner, tokens, approvals; follows changes
{demo_logs}  REVIEW=$(kubectl orrery start human-review --input 'version 2.4' -o name)
  kubectl orrery logs -f \"$REVIEW\"              # its trace, live (in a second terminal)
  kubectl orrery approvals \"$REVIEW\"            # the text under review, escapes visible, digest checked
  kubectl orrery approve \"$REVIEW\"              # shows the text, asks, then decides as you

The same decision with kubectl alone (what `kubectl orrery approve` writes; the admission
policies check it):
  ID=$(kubectl get \"$REVIEW\" -o jsonpath='{{.status.pendingApprovals[0].id}}')
  DIGEST=$(kubectl get \"$REVIEW\" -o jsonpath='{{.status.pendingApprovals[0].digest}}')
  kubectl patch \"$REVIEW\" --subresource=status --type=json -p \\
      \"[{{\\\"op\\\":\\\"add\\\",\\\"path\\\":\\\"/status/decisions/-\\\",\\\"value\\\":{{\\\"approvalId\\\":\\\"$ID\\\",\\\"decision\\\":\\\"Approve\\\",\\\"digest\\\":\\\"$DIGEST\\\",\\\"decidedBy\\\":\\\"admin\\\"}}}}]\"

The console, in a browser on this machine: {sidecar}/
  Sign in as {CONSOLE_USER}, a person holding the example studio-user Role in {NAMESPACE}: paste
  the token this prints (runs you start there are {CONSOLE_USER}'s; {CONSOLE_USER} approves them):
  sed -n 's/^TESTENV_{console_user_upper}_TOKEN=//p' {env}

The sidecar (run API, live trace, approvals) on loopback: {sidecar}
  TOKEN=$(sed -n 's/^TESTENV_ADMIN_TOKEN=//p' {env})
  curl -sN -H \"Authorization: Bearer $TOKEN\" -H 'Accept: text/event-stream' \\
      {sidecar}/api/v1/runs/{NAMESPACE}/{events_of}/events",
        kubeconfig = kubeconfig.display(),
        env = cluster_dir.join("env").display(),
        console_user_upper = CONSOLE_USER.to_uppercase(),
    )
}

/// How to stop it: Ctrl-C in the terminal it runs in, or `--down` when it runs in the
/// background (`--detach`).
pub fn stop_hint(detached: bool) -> &'static str {
    if detached {
        "Stop: `orrery up --down`; `orrery up --status` shows it."
    } else {
        "Stop: Ctrl-C here (or `orrery up --down` from another terminal); `orrery up --status` \
         shows it."
    }
}

/// What is printed once it is up: the banner and how to stop it.
pub fn ready_text(banner: &str, detached: bool) -> String {
    format!("{banner}\n\n{}", stop_hint(detached))
}

/// The fixed cluster IP of the chart's sidecar Service in isolated mode (from the static band of
/// the test control plane's Service CIDR, `10.96.0.0/16`, which dynamic allocation avoids).
pub const SIDECAR_CLUSTER_IP: &str = "10.96.0.80";

/// The test control plane's Service CIDR (`tests/testenv/up.go`), one of the cluster ranges
/// `orrery up` gives the chart.
pub const SERVICE_CIDR: &str = "10.96.0.0/16";

/// The address of a pod (`status.podIP`).
fn pod_address(pod: &Pod) -> Option<std::net::IpAddr> {
    pod.status.as_ref()?.pod_ip.as_deref()?.parse().ok()
}

/// Keeps the sidecar's loopback forward on the operator's pod: a pod that replaces it (a
/// deleted pod, a restarted Deployment) has another address.
async fn follow_operator_pod(pods: Api<Pod>, forward: orrery_tests::front::Retargeter, port: u16) {
    let selector = chart::operator_selector(RELEASE);
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let Ok(list) = pods
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
        else {
            continue;
        };
        let running = list.items.iter().find(|p| {
            p.metadata.deletion_timestamp.is_none()
                && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        });
        if let Some(address) = running.and_then(pod_address) {
            let target = std::net::SocketAddr::new(address, port);
            if forward.get() != target {
                forward.set(target);
            }
        }
    }
}

impl Running {
    /// Stops what was started, in reverse: the dev node (its pods' containers; the Node goes),
    /// the fleet, the control plane. Reports what could not be stopped.
    pub async fn stop(&mut self) -> Result<()> {
        let mut problems = Vec::new();
        for task in self.tasks.drain(..) {
            task.abort();
        }
        for front in self.fronts.drain(..) {
            front.stop().await;
        }
        let mut node_down = true;
        if let Some(executor) = self.executor.take() {
            let work_dir = executor.work_dir().to_path_buf();
            if let Err(e) = executor.shutdown().await {
                problems.push(format!("the dev node: {e}"));
                node_down = false;
            }
            let left = orrery_tests::harness::processes_naming(&work_dir.to_string_lossy());
            if !left.is_empty() {
                problems.push(format!("processes of the dev node's pods left: {left:?}"));
                node_down = false;
            }
        }
        if node_down && let Some(state_dir) = self.marked_network.take() {
            // The node is down and took its bridge with it (or never made it); otherwise the
            // marker stays, and `orrery up --down` or the next `orrery up` removes the bridge.
            leftovers::unmark_network(&state_dir);
        }
        if let Some(fleet) = self.fleet.take()
            && let Err(e) = fleet.shutdown().await
        {
            problems.push(format!("the demo fleet: {e}"));
        }
        if let Some(env) = self.env.take() {
            // Dropping it ends `testenv up`, which stops the apiserver, etcd and the
            // controller manager.
            tokio::task::spawn_blocking(move || drop(env)).await?;
        }
        if problems.is_empty() {
            Ok(())
        } else {
            bail!("stopping: {}", problems.join("; "))
        }
    }
}

/// `(ppid, pgrp)` of a process, from `/proc/<pid>/stat`.
fn parent_and_group(stat: &str) -> Option<(u32, u32)> {
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let _state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((ppid, pgrp))
}

/// Stops the builds this process started (cargo, the build scripts and what they run, helm):
/// SIGTERM to every descendant of this process that is in its process group. The control plane
/// and the pods' containers run in process groups of their own and are stopped in order by
/// [`Running::stop`]; a build cut short would otherwise keep going on its blocking thread.
pub fn stop_builds() {
    use std::collections::HashMap;
    let me = std::process::id();
    let Some((_, my_group)) = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| parent_and_group(&s))
    else {
        return;
    };
    let mut procs: HashMap<u32, (u32, u32)> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if let Some(pg) = std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|s| parent_and_group(&s))
            {
                procs.insert(pid, pg);
            }
        }
    }
    for pid in builds_to_stop(me, my_group, &procs) {
        if let Ok(pid) = i32::try_from(pid) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
}

/// The descendants of `me` (pid → (ppid, pgrp) in `procs`) that are in `group`.
fn builds_to_stop(
    me: u32,
    group: u32,
    procs: &std::collections::HashMap<u32, (u32, u32)>,
) -> Vec<u32> {
    let mut descendants = vec![me];
    let mut i = 0;
    while i < descendants.len() {
        let parent = descendants[i];
        let mut children: Vec<u32> = procs
            .iter()
            .filter(|(pid, (ppid, _))| *ppid == parent && !descendants.contains(pid))
            .map(|(pid, _)| *pid)
            .collect();
        children.sort_unstable();
        descendants.extend(children);
        i += 1;
    }
    descendants
        .into_iter()
        .skip(1)
        .filter(|pid| procs.get(pid).is_some_and(|(_, g)| *g == group))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn a_processes_parent_and_group_are_read_past_a_name_with_parentheses() {
        assert_eq!(
            parent_and_group("4242 (cargo (build)) S 17 4200 17 0 -1"),
            Some((17, 4200))
        );
        assert_eq!(parent_and_group("garbage"), None);
    }

    #[test]
    fn the_builds_to_stop_are_the_descendants_in_this_process_group_only() {
        // 10 is this process (group 10): 11 (cargo) and its child 12 (rustc) are builds; 13 is
        // the control plane in a group of its own, 14 its child; 20 is not ours.
        let procs: std::collections::HashMap<u32, (u32, u32)> = [
            (10, (1, 10)),
            (11, (10, 10)),
            (12, (11, 10)),
            (13, (10, 13)),
            (14, (13, 13)),
            (20, (1, 10)),
        ]
        .into();
        assert_eq!(builds_to_stop(10, 10, &procs), [11, 12]);
        assert!(builds_to_stop(12, 10, &procs).is_empty());
    }

    fn banner_for(demo_run: bool) -> String {
        banner(
            Path::new("/s/cluster/kubeconfig"),
            Some(Path::new("/bin/dir")),
            "http://127.0.0.1:8080",
            Path::new("/s/cluster"),
            "pods isolated on bridge orrery0 (10.213.0.0/24), NetworkPolicies enforced",
            demo_run,
        )
    }

    #[test]
    fn the_banner_names_the_kubeconfig_the_sidecar_and_how_to_stop() {
        let text = ready_text(&banner_for(true), false);
        for want in [
            "The console, in a browser on this machine: http://127.0.0.1:8080/",
            "Sign in as alice",
            "sed -n 's/^TESTENV_ALICE_TOKEN=//p' /s/cluster/env",
            "export KUBECONFIG=/s/cluster/kubeconfig",
            "export PATH=/bin/dir:$PATH",
            "kubectl get compositions,registryentries,studioruns",
            "kubectl describe studiorun release-notes-1",
            "http://127.0.0.1:8080/api/v1/runs/default/release-notes-1/events",
            "sed -n 's/^TESTENV_ADMIN_TOKEN=//p' /s/cluster/env",
            "Stop: Ctrl-C here (or `orrery up --down` from another terminal)",
            "\"[{\\\"op\\\":\\\"add\\\"",
            "Pods: pods isolated on bridge orrery0",
            "kubectl orrery runs -w",
            "kubectl orrery logs release-notes-1",
            "REVIEW=$(kubectl orrery start human-review --input 'version 2.4' -o name)",
            "kubectl orrery approve \"$REVIEW\"",
        ] {
            assert!(text.contains(want), "{want:?} missing from:\n{text}");
        }
        assert_eq!(text.matches("Orrery Studio is up").count(), 1, "{text}");
    }

    #[test]
    fn detached_the_ready_text_says_down_and_never_ctrl_c() {
        let text = ready_text(&banner_for(true), true);
        assert!(text.contains("Stop: `orrery up --down`"), "{text}");
        assert!(!text.contains("Ctrl-C"), "{text}");
    }

    #[test]
    fn the_generate_name_hint_waits_for_the_run_it_created_not_the_demo_run() {
        for demo_run in [true, false] {
            let text = banner_for(demo_run);
            assert!(
                text.contains("kubectl create -f - -o name)"),
                "the created run's name is kept:\n{text}"
            );
            assert!(
                text.contains("kubectl wait --for=jsonpath='{.status.phase}'=Succeeded \"$RUN\""),
                "{text}"
            );
            assert!(
                !text.contains("studiorun/release-notes-1"),
                "a wait on the demo run:\n{text}"
            );
        }
    }

    #[test]
    fn without_the_demo_run_no_hint_names_it() {
        let text = banner_for(false);
        // The sed expressions rewrite the example file's own name; no command names the run.
        for never in [
            "studiorun release-notes-1",
            "studiorun/release-notes-1",
            "/runs/default/release-notes-1/",
        ] {
            assert!(!text.contains(never), "{never:?} in:\n{text}");
        }
        assert!(
            text.contains("http://127.0.0.1:8080/api/v1/runs/default/${RUN#*/}/events"),
            "{text}"
        );
    }

    const DEMO_TOOLS: &str = "apiVersion: studio.orrery.dev/v1alpha1
kind: RegistryEntry
metadata:
  name: demo-tools
spec:
  description: Demo MCP server
  mcp:
    url: http://127.0.0.1:7801/mcp    # plain http is accepted on loopback only
    transport: StreamableHttp
";

    #[test]
    fn the_examples_point_at_the_fleet_on_loopback_or_behind_its_fronts_as_private_entries() {
        let loopback = FleetUrls {
            tools: "http://127.0.0.1:40001".into(),
            writer: "http://127.0.0.1:40002".into(),
            private: false,
        };
        let text = point_at_fleet(DEMO_TOOLS, &loopback);
        assert!(text.contains("url: http://127.0.0.1:40001/mcp"), "{text}");
        assert!(!text.contains("privateNetwork"), "{text}");
        let fronted = FleetUrls {
            tools: "https://10.213.0.1:7801".into(),
            writer: "https://10.213.0.1:7802".into(),
            private: true,
        };
        let text = point_at_fleet(DEMO_TOOLS, &fronted);
        assert!(
            text.contains("  mcp:\n    privateNetwork: true\n    url: https://10.213.0.1:7801/mcp"),
            "{text}"
        );
        // The real examples parse as entries with the flag set and the URL replaced.
        for (file, field) in [("demo-tools.yaml", "mcp"), ("demo-writer.yaml", "a2a")] {
            let raw =
                std::fs::read_to_string(workspace_root().join("examples/registry").join(file))
                    .unwrap_or_default();
            let entry: serde_yaml::Value =
                serde_yaml::from_str(&point_at_fleet(&raw, &fronted)).unwrap_or_default();
            assert_eq!(
                entry["spec"][field]["privateNetwork"],
                serde_yaml::Value::Bool(true),
                "{file}"
            );
            let url = entry["spec"][field]["url"]
                .as_str()
                .or_else(|| entry["spec"][field]["cardUrl"].as_str())
                .unwrap_or_default();
            assert!(url.starts_with("https://10.213.0.1:780"), "{file}: {url}");
        }
    }

    #[test]
    fn pod_network_modes_read_as_they_are_written() {
        for choice in [
            PodNetworkChoice::Auto,
            PodNetworkChoice::Host,
            PodNetworkChoice::Isolated,
        ] {
            assert_eq!(choice.as_arg().parse::<PodNetworkChoice>(), Ok(choice));
        }
        assert!("bridge".parse::<PodNetworkChoice>().is_err());
    }
}
