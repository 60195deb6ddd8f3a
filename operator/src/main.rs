//! `orrery-operator`: the Orrery Studio operator.
//!
//! `controller --config FILE` checks the deployment config, connects to the cluster of
//! `KUBECONFIG` (or the in-cluster config) and campaigns for the leader Lease
//! (`--leader-election-namespace`/`--leader-election-name`, default
//! `$POD_NAMESPACE`/`orrery-operator`). Only the holder runs the Composition, RegistryEntry and
//! StudioRun controllers (`--namespace NS` scopes them to one namespace); a standby waits
//! and takes over when the holder stops renewing (within `--lease-duration`) or releases the
//! Lease. `--leader-elect=false` runs the controllers without a Lease (one process, dev use).
//!
//! Every process serves `/metrics`, `/healthz` and `/readyz` on `--listen` (default
//! `0.0.0.0:8080`; see [`orrery_operator::http`] for what readiness means).
//!
//! Exit: SIGTERM or SIGINT stops accepting new reconciles, lets the ones in flight finish,
//! releases the Lease (a standby takes over at once) and exits 0; a second signal exits 1 at
//! once. A leader that loses the Lease stops its controllers at once and exits 1 (its
//! Deployment restarts it as a candidate).
//!
//! `sidecar --config FILE` serves runners' trace events and the run API (see
//! [`orrery_operator::sidecar`]).

use anyhow::Context as _;
use clap::{ArgAction, Args, Parser, Subcommand};
use kube::api::ListParams;
use kube::{Api, Client};
use orrery_operator::Config;
use orrery_operator::controller::Stopped;
use orrery_operator::http::Health;
use orrery_operator::leader::{self, Elector, LeaseSettings, Role};
use orrery_operator::metrics::Metrics;
use orrery_operator::run::token::RunTokenSigner;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Orrery Studio operator: reconciles Compositions, RegistryEntries and StudioRuns and runs each
/// StudioRun in its own sandboxed runner pod.
#[derive(Debug, Parser)]
#[command(name = "orrery-operator", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the controllers (Compositions, RegistryEntries, StudioRuns) against the cluster of
    /// KUBECONFIG, or the in-cluster config in a pod. Of the processes sharing a leader Lease
    /// only the holder runs them; the others wait as standbys. SIGTERM/SIGINT: finish the
    /// reconciles in flight, release the Lease, exit 0.
    Controller(ControllerArgs),
    /// The sidecar: stores runners' trace events and serves the run API (events as SSE with
    /// resume, or JSON pages) to the runs' owners and approvers, acting with each caller's own
    /// bearer token. SIGTERM/SIGINT: end open streams, finish requests in flight, exit 0.
    Sidecar(SidecarArgs),
}

#[derive(Debug, Args)]
struct SidecarArgs {
    /// The deployment config (YAML), the same file the controller reads; the sidecar uses
    /// runToken.verifyingKeyFile and runToken.audience, and listens on sidecar.targetPort.
    #[arg(long, value_name = "FILE")]
    config: String,

    /// Where to serve the API, /healthz and /readyz [default: 0.0.0.0:<sidecar.targetPort of
    /// the config>, what runner pods are allowed to reach].
    #[arg(long, value_name = "ADDR")]
    listen: Option<std::net::SocketAddr>,

    /// The event store: `sqlite:/PATH` (a file on a volume; created if missing) or
    /// `postgres://USER:PASSWORD@HOST/DB` (several replicas share it). Pass a URL with a
    /// password through the environment (from a Secret), not the command line.
    #[arg(
        long,
        value_name = "URL",
        env = "ORRERY_STORE_URL",
        hide_env_values = true,
        default_value = "sqlite:/var/lib/orrery/events.db"
    )]
    store: String,

    /// Event streams one person may hold open at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    max_streams_per_person: usize,

    /// Event batches stored at once; past it runners are told to retry (429).
    #[arg(long, value_name = "N", default_value_t = 32)]
    ingest_concurrency: usize,

    /// Runs one person may start through the API per minute (429 past it).
    #[arg(long, value_name = "N", default_value_t = 30)]
    starts_per_minute: u32,

    /// Decisions one person may make through the API per minute (429 past it).
    #[arg(long, value_name = "N", default_value_t = 30)]
    decisions_per_minute: u32,

    /// The one namespace this install serves (single-namespace installs, with the
    /// controller's --namespace): the sweep of deleted runs' events lists and sweeps that
    /// namespace only, so it needs no cluster-wide right. Default: every namespace.
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,
}

#[derive(Debug, Args)]
struct ControllerArgs {
    /// The deployment config (YAML); see examples/operator/config.yaml.
    #[arg(long, value_name = "FILE")]
    config: String,

    /// Watch and reconcile only this namespace (single-namespace installs, tests); default:
    /// every namespace.
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,

    /// Where to serve GET /metrics (Prometheus text), /healthz (liveness: 200 while the
    /// process runs, whatever the cluster does) and /readyz (200 for a standby that reads the
    /// Lease and so can take over, or for the leader once every kind its controllers watch
    /// could be listed; 503 with the reason while connecting to the cluster, while the leader
    /// starts, while stopping, or after losing the Lease).
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8080")]
    listen: std::net::SocketAddr,

    /// Campaign for the leader Lease and run the controllers only while holding it.
    /// `--leader-elect=false` runs them at once without a Lease: for a single process only.
    #[arg(
        long = "leader-elect",
        value_name = "BOOL",
        action = ArgAction::Set,
        num_args = 0..=1,
        require_equals = true,
        default_value_t = true,
        default_missing_value = "true"
    )]
    leader_elect: bool,

    /// The same as --leader-elect=false.
    #[arg(long = "no-leader-election", conflicts_with = "leader_elect")]
    no_leader_election: bool,

    /// The name of the leader Lease (coordination.k8s.io/v1).
    #[arg(long, value_name = "NAME", default_value = leader::DEFAULT_LEASE_NAME)]
    leader_election_name: String,

    /// The namespace of the leader Lease [default: $POD_NAMESPACE, else orrery-system].
    #[arg(long, value_name = "NS")]
    leader_election_namespace: Option<String>,

    /// This process's identity in the Lease [default: $POD_NAME, else <host name>-<pid>].
    #[arg(long, value_name = "ID")]
    leader_election_identity: Option<String>,

    /// Seconds the Lease stays valid after a renewal: how long a standby waits for a holder
    /// that died without releasing it.
    #[arg(long, value_name = "SECONDS", default_value_t = leader::DEFAULT_DURATION_SECONDS)]
    lease_duration: u64,

    /// Seconds before the Lease expires that the holder renews it (below --lease-duration).
    #[arg(long, value_name = "SECONDS", default_value_t = leader::DEFAULT_GRACE_SECONDS)]
    lease_grace: u64,

    /// After SIGTERM/SIGINT, how many seconds the reconciles in flight get to finish before
    /// the controllers are stopped anyway (keep it below the pod's
    /// terminationGracePeriodSeconds, 30 by default, so the Lease is still released).
    #[arg(long, value_name = "SECONDS", default_value_t = 20)]
    shutdown_timeout: u64,
}

impl ControllerArgs {
    /// The Lease to campaign on, or `None` without leader election. Defaults come from the
    /// pod's downward-API variables `POD_NAMESPACE` and `POD_NAME`.
    fn lease(
        &self,
        pod_namespace: Option<String>,
        pod_name: Option<String>,
    ) -> Option<LeaseSettings> {
        if !self.leader_elect || self.no_leader_election {
            return None;
        }
        Some(LeaseSettings {
            name: self.leader_election_name.clone(),
            namespace: leader::default_namespace(
                self.leader_election_namespace.clone(),
                pod_namespace,
            ),
            identity: leader::default_identity(
                self.leader_election_identity.clone(),
                pod_name,
                leader::host_name(),
                std::process::id(),
            ),
            duration_seconds: self.lease_duration,
            grace_seconds: self.lease_grace,
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Controller(args) => {
            let loaded = Config::load(&args.config).and_then(|c| {
                RunTokenSigner::from_config(&args.config, &c.run_token).map(|signer| (c, signer))
            });
            match loaded {
                Ok((config, signer)) => match controller(args, config, signer) {
                    Ok(code) => code,
                    Err(e) => {
                        eprintln!("orrery-operator: {e:#}");
                        ExitCode::from(1)
                    }
                },
                Err(e) => {
                    eprintln!("orrery-operator: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Sidecar(args) => match sidecar(args) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("orrery-operator sidecar: {e:#}");
                ExitCode::from(1)
            }
        },
    }
}

/// SIGTERM/SIGINT, listened for from the start (a signal before the Lease is won is not
/// lost): the first sets the returned flag; a second exits 1 at once.
fn signals() -> anyhow::Result<watch::Receiver<bool>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        eprintln!("orrery-operator: stopping: finishing the reconciles in flight");
        tx.send_replace(true);
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        eprintln!("orrery-operator: second signal: exiting at once");
        std::process::exit(1);
    });
    Ok(rx)
}

/// Runs the sidecar process until SIGTERM/SIGINT.
fn sidecar(args: SidecarArgs) -> anyhow::Result<ExitCode> {
    use orrery_operator::sidecar::SidecarSettings;
    use orrery_operator::sidecar::process::{Bound, verifier_from_config};
    let config = Config::load(&args.config)?;
    let verifier = verifier_from_config(&args.config, &config)?;
    let listen = args
        .listen
        .unwrap_or_else(|| std::net::SocketAddr::from(([0, 0, 0, 0], config.sidecar.pod_port())));
    let settings = SidecarSettings {
        max_streams_per_person: args.max_streams_per_person,
        ingest_concurrency: args.ingest_concurrency,
        starts_per_minute: args.starts_per_minute,
        decisions_per_minute: args.decisions_per_minute,
        namespace: args.namespace,
    };
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        let stop = signals()?;
        let kube_config = kube::Config::infer().await.context(
            "reading the cluster's config (KUBECONFIG, ~/.kube/config or the in-cluster config): \
             the sidecar acts for callers on that cluster",
        )?;
        let bound = Bound::start(
            listen,
            &args.store,
            verifier,
            kube_config,
            Arc::new(config),
            &settings,
        )
        .await?;
        eprintln!(
            "orrery-operator sidecar: serving on http://{} (store: {:?})",
            bound.address(),
            bound.sidecar.store
        );
        bound.serve(stopping(stop)).await.context("serving")?;
        eprintln!("orrery-operator sidecar: stopped");
        Ok(ExitCode::SUCCESS)
    })
}

/// Resolves once a stop signal came.
async fn stopping(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await;
}

/// Runs the controller process (see the module docs); returns its exit code.
fn controller(
    args: ControllerArgs,
    config: Config,
    signer: RunTokenSigner,
) -> anyhow::Result<ExitCode> {
    let lease = args.lease(
        std::env::var("POD_NAMESPACE").ok(),
        std::env::var("POD_NAME").ok(),
    );
    if let Some(settings) = &lease {
        settings.check()?;
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        let stop = signals()?;
        let metrics = Arc::new(Metrics::new());
        let health = Arc::new(Health::new());
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| {
                format!(
                    "--listen {}: cannot listen there; pick a free address (e.g. \
                     --listen 127.0.0.1:0 for any port)",
                    args.listen
                )
            })?;
        let address = listener.local_addr().unwrap_or(args.listen);
        let (server_stop, server_stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(orrery_operator::http::serve(
            listener,
            metrics.clone(),
            health.clone(),
            async move {
                let _ = server_stopped.await;
            },
        ));
        eprintln!("orrery-operator: serving /metrics, /healthz, /readyz on http://{address}");

        let code = lead(&args, config, signer, lease, &metrics, &health, stop).await;
        health.not_ready("stopped");
        let _ = server_stop.send(());
        match server.await {
            Ok(Err(e)) => eprintln!("orrery-operator: the HTTP server on {address}: {e}"),
            Err(e) => eprintln!("orrery-operator: the HTTP server on {address}: {e}"),
            Ok(Ok(())) => {}
        }
        code
    })
}

/// Connects, campaigns (unless `lease` is `None`), runs the controllers while leading, and
/// stops on a signal or a lost Lease.
async fn lead(
    args: &ControllerArgs,
    config: Config,
    signer: RunTokenSigner,
    lease: Option<LeaseSettings>,
    metrics: &Arc<Metrics>,
    health: &Arc<Health>,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<ExitCode> {
    let kube_config = kube::Config::infer().await.context(
        "reading the cluster's config (KUBECONFIG, ~/.kube/config or the in-cluster config): set \
         KUBECONFIG to a kubeconfig whose current context reaches the cluster",
    )?;
    let client = Client::try_from(kube_config.clone()).context("building the cluster client")?;
    if !connect(&client, health, stop.clone()).await {
        eprintln!("orrery-operator: stopped before reaching the cluster");
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "orrery-operator: config {}; reconciling {}",
        args.config,
        args.namespace
            .as_deref()
            .map_or("every namespace".to_owned(), |ns| format!("namespace {ns}"))
    );

    let elector = match lease {
        None => {
            eprintln!(
                "orrery-operator: leader election off (--leader-elect=false): leading at once"
            );
            None
        }
        Some(settings) => {
            let elector = Elector::start(kube_config, settings).await?;
            if !wait_leading(&elector, health, stop.clone()).await {
                health.not_ready("stopping");
                elector.release().await?;
                eprintln!("orrery-operator: stopped as a standby");
                return Ok(ExitCode::SUCCESS);
            }
            Some(elector)
        }
    };

    metrics.set_leader(true);
    health.not_ready("leader: starting the controllers (listing what they watch)");
    let lost = match &elector {
        Some(e) => futures::future::Either::Left(leader::lost(e.role())),
        None => futures::future::Either::Right(std::future::pending::<String>()),
    };
    let ready = async {
        tokio::select! {
            () = listable(&client, args.namespace.as_deref(), health) => {
                health.ready("leader: controllers running");
            }
            () = stopping(stop.clone()) => {}
        }
        std::future::pending::<()>().await
    };
    // After the signal the controllers take no new work and finish the reconciles in flight,
    // for at most --shutdown-timeout (a reconcile still running then is abandoned at its next
    // await; reconciles are idempotent, so the next leader redoes it).
    let drain = Duration::from_secs(args.shutdown_timeout);
    let controllers = orrery_operator::controller::run(
        client.clone(),
        Arc::new(config),
        metrics.clone(),
        Arc::new(signer),
        args.namespace.clone(),
        stopping(stop.clone()),
        drain,
    );
    tokio::select! {
        stopped = controllers => match stopped {
            Stopped::Drained => {}
            Stopped::Idle => {
                eprintln!("orrery-operator: no reconcile in flight: the controllers are stopped");
            }
            Stopped::Overdue => eprintln!(
                "orrery-operator: the controllers did not stop within {drain:?} of the signal \
                 (--shutdown-timeout); stopping them now"
            ),
        },
        reason = lost => {
            // Stop at once: dropping the controllers abandons the reconciles in flight at their
            // next await; they are idempotent, so the new leader redoes them.
            metrics.set_leader(false);
            health.not_ready(format!("lost the leader Lease: {reason}"));
            eprintln!(
                "orrery-operator: lost the leader Lease: {reason}; stopped the controllers; \
                 exiting 1 (restart as a candidate)"
            );
            return Ok(ExitCode::from(1));
        }
        () = ready => {}
    }
    metrics.set_leader(false);
    health.not_ready("stopping");
    if let Some(elector) = elector {
        let settings = elector.settings().clone();
        match elector.release().await {
            Ok(()) => eprintln!(
                "orrery-operator: released the Lease {}/{}",
                settings.namespace, settings.name
            ),
            Err(e) => eprintln!(
                "orrery-operator: could not release the Lease (it expires by itself within {} s): {e}",
                settings.duration_seconds
            ),
        }
    }
    eprintln!("orrery-operator: stopped");
    Ok(ExitCode::SUCCESS)
}

/// Waits until the apiserver answers (retrying every 2 s, reporting the error on /readyz);
/// false if a stop signal came first.
async fn connect(client: &Client, health: &Health, stop: watch::Receiver<bool>) -> bool {
    let mut last_error = String::new();
    loop {
        let attempt = tokio::select! {
            r = client.apiserver_version() => r,
            () = stopping(stop.clone()) => return false,
        };
        match attempt {
            Ok(_) => return true,
            Err(e) => {
                let text = format!("connecting to the cluster: {e}");
                if text != last_error {
                    eprintln!("orrery-operator: {text}; retrying every 2 s");
                    last_error = text.clone();
                }
                health.not_ready(text);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(2)) => {}
            () = stopping(stop.clone()) => return false,
        }
    }
}

/// Waits until this process leads; meanwhile it is a ready standby and logs who holds the
/// Lease. False if a stop signal came first.
async fn wait_leading(elector: &Elector, health: &Health, stop: watch::Receiver<bool>) -> bool {
    let settings = elector.settings();
    let mut role = elector.role();
    let mut stopped = std::pin::pin!(stopping(stop));
    let mut logged: Option<String> = None;
    loop {
        let now = role.borrow_and_update().clone();
        match now {
            Role::Leader => {
                eprintln!(
                    "orrery-operator: {} holds the Lease {}/{}: leading",
                    settings.identity, settings.namespace, settings.name
                );
                return true;
            }
            // Our own name while not leading yet: the manager is about to say it leads.
            Role::Standby { holder } if holder.as_deref() != Some(settings.identity.as_str()) => {
                let holder = holder.unwrap_or_else(|| "nobody yet".into());
                if logged.as_ref() != Some(&holder) {
                    eprintln!(
                        "orrery-operator: standby {}: waiting for the Lease {}/{}, held by {holder}",
                        settings.identity, settings.namespace, settings.name
                    );
                    logged = Some(holder.clone());
                }
                health.ready(format!("standby: the Lease is held by {holder}"));
            }
            Role::Standby { .. } => {}
            Role::Lost { .. } | Role::Released => return false,
        }
        tokio::select! {
            changed = role.changed() => if changed.is_err() { return false },
            () = &mut stopped => return false,
        }
    }
}

/// Retries (every 2 s) until one list of every kind the controllers watch succeeds in their
/// scope: the CRDs are installed and RBAC lets the operator list them.
async fn listable(client: &Client, namespace: Option<&str>, health: &Health) {
    use orrery_operator::controller::scoped;
    let params = ListParams::default().limit(1);
    loop {
        let compositions: Api<orrery_crds::Composition> = scoped(client.clone(), namespace);
        let entries: Api<orrery_crds::registry::RegistryEntry> = scoped(client.clone(), namespace);
        let runs: Api<orrery_crds::StudioRun> = scoped(client.clone(), namespace);
        let revisions: Api<k8s_openapi::api::apps::v1::ControllerRevision> =
            scoped(client.clone(), namespace);
        let result = async {
            compositions
                .list_metadata(&params)
                .await
                .context("listing Compositions")?;
            entries
                .list_metadata(&params)
                .await
                .context("listing RegistryEntries")?;
            runs.list_metadata(&params)
                .await
                .context("listing StudioRuns")?;
            revisions
                .list_metadata(&params)
                .await
                .context("listing ControllerRevisions")?;
            anyhow::Ok(())
        }
        .await;
        match result {
            Ok(()) => return,
            Err(e) => {
                let text = format!("leader: the controllers cannot start: {e:#}");
                eprintln!("orrery-operator: {text}; retrying every 2 s");
                health.not_ready(text);
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;

    fn controller_args(extra: &[&str]) -> ControllerArgs {
        let mut argv = vec!["orrery-operator", "controller", "--config", "c.yaml"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("the flags parse").command {
            Command::Controller(args) => args,
            Command::Sidecar(_) => panic!("`controller` parsed as `sidecar`"),
        }
    }

    #[test]
    fn the_defaults_campaign_on_the_orrery_operator_lease_and_listen_on_8080() {
        let args = controller_args(&[]);
        assert_eq!(args.listen.to_string(), "0.0.0.0:8080");
        assert_eq!(args.namespace, None);
        let lease = args
            .lease(None, Some("orrery-operator-abc".into()))
            .expect("leader election is on by default");
        assert_eq!(lease.name, "orrery-operator");
        assert_eq!(lease.namespace, "orrery-system");
        assert_eq!(lease.identity, "orrery-operator-abc");
        assert_eq!((lease.duration_seconds, lease.grace_seconds), (15, 5));
        let in_pod = args.lease(Some("ops".into()), None).expect("on");
        assert_eq!(in_pod.namespace, "ops");
        assert!(
            in_pod
                .identity
                .ends_with(&format!("-{}", std::process::id())),
            "{}",
            in_pod.identity
        );
    }

    #[test]
    fn every_leader_election_flag_is_taken() {
        let args = controller_args(&[
            "--namespace",
            "team-a",
            "--listen",
            "127.0.0.1:9090",
            "--leader-election-name",
            "op-lease",
            "--leader-election-namespace",
            "team-a",
            "--leader-election-identity",
            "op-b",
            "--lease-duration",
            "6",
            "--lease-grace",
            "2",
        ]);
        assert_eq!(args.namespace.as_deref(), Some("team-a"));
        assert_eq!(args.listen.to_string(), "127.0.0.1:9090");
        let lease = args.lease(Some("ignored".into()), Some("ignored".into()));
        assert_eq!(
            lease,
            Some(LeaseSettings {
                name: "op-lease".into(),
                namespace: "team-a".into(),
                identity: "op-b".into(),
                duration_seconds: 6,
                grace_seconds: 2,
            })
        );
    }

    #[test]
    fn leader_election_is_turned_off_by_either_spelling_and_on_by_the_bare_flag() {
        assert_eq!(
            controller_args(&["--leader-elect=false"]).lease(None, None),
            None
        );
        assert_eq!(
            controller_args(&["--no-leader-election"]).lease(None, None),
            None
        );
        assert!(
            controller_args(&["--leader-elect"])
                .lease(None, None)
                .is_some()
        );
        assert!(
            controller_args(&["--leader-elect=true"])
                .lease(None, None)
                .is_some()
        );
        let both = Cli::try_parse_from([
            "orrery-operator",
            "controller",
            "--config",
            "c.yaml",
            "--leader-elect=true",
            "--no-leader-election",
        ]);
        assert!(both.is_err(), "contradicting flags are refused");
    }

    #[test]
    fn a_listen_address_that_is_not_host_and_port_is_refused() {
        let parsed = Cli::try_parse_from([
            "orrery-operator",
            "controller",
            "--config",
            "c.yaml",
            "--listen",
            "8080",
        ]);
        let text = parsed.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("--listen"), "{text}");
    }
}
