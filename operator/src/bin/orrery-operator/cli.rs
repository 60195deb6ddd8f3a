//! The command line: `controller` and `sidecar`, their flags and defaults.

use clap::{ArgAction, Args, Parser, Subcommand};
use orrery_operator::leader::{self, LeaseSettings};

/// Orrery Studio operator: reconciles Compositions, RegistryEntries and StudioRuns and runs each
/// StudioRun in its own sandboxed runner pod.
#[derive(Debug, Parser)]
#[command(name = "orrery-operator", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// How log lines are written to standard error: `text` (one readable line an event) or
    /// `json` (one JSON object a line, with the object's namespace, name and UID, the run's UID
    /// and the reconcile's trigger as fields; the chart's default).
    #[arg(long, global = true, value_name = "FORMAT", env = orrery_crds::logging::FORMAT_ENV, default_value = "text")]
    pub log_format: orrery_crds::logging::LogFormat,
    /// Which events are logged: a level (`error`, `warn`, `info`, `debug`, `trace`) or
    /// directives such as `warn,orrery_operator=debug`. Default: `RUST_LOG` when set, else info
    /// for the operator and warnings for the libraries under it.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
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
pub struct SidecarArgs {
    /// The deployment config (YAML), the same file the controller reads; the sidecar uses
    /// runToken.verifyingKeyFile and runToken.audience, and listens on sidecar.targetPort.
    #[arg(long, value_name = "FILE")]
    pub config: String,

    /// Where to serve the API, /healthz and /readyz [default: 0.0.0.0:<sidecar.targetPort of
    /// the config>, what runner pods are allowed to reach].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,

    /// Where to serve GET /metrics (Prometheus text: requests, ingest, the store, streams,
    /// approvals; see docs/observability.md), on a port of its own so that scrapers, not the
    /// runners and people who reach the API, are let in by NetworkPolicy. Default: no metrics.
    /// The chart sets it to sidecar.metricsPort.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,

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
    pub store: String,

    /// Event streams one person may hold open at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub max_streams_per_person: usize,

    /// Event batches stored at once; past it runners are told to retry (429).
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub ingest_concurrency: usize,

    /// Runs one person may start through the API per minute (429 past it).
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub starts_per_minute: u32,

    /// Decisions one person may make through the API per minute (429 past it).
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub decisions_per_minute: u32,

    /// Composition saves (dry runs too) one person may make through the API per minute (429
    /// past it).
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub saves_per_minute: u32,

    /// The one namespace this install serves (single-namespace installs, with the
    /// controller's --namespace): the sweep of deleted runs' events lists and sweeps that
    /// namespace only, so it needs no cluster-wide right. Default: every namespace.
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// The web console's built files (`web/dist`; the operator image carries them at
    /// /usr/share/orrery/console), served for GET and HEAD of every path outside the API.
    /// Without it (or when the directory is missing) such paths answer 404 "the console is not
    /// installed".
    #[arg(long, value_name = "DIR")]
    pub console_dir: Option<std::path::PathBuf>,

    #[command(flatten)]
    pub otel: OtelArgs,

    /// Also export the content a run captured (inputs, answers, tool arguments and results,
    /// approval text), redacted and cut as the store holds it. Off: no content is exported,
    /// even of runs that capture it.
    #[arg(long, requires = "otel_endpoint")]
    pub otel_export_content: bool,
}

/// Where traces go (both processes): the sidecar sends runs, the controller its reconciles.
#[derive(Debug, Args)]
pub struct OtelArgs {
    /// Send OpenTelemetry traces to this OTLP/HTTP collector (protobuf, `<URL>/v1/traces`),
    /// e.g. http://otel-collector.monitoring:4318. The sidecar sends each run as a trace (a
    /// span per node entry, tool call, MCP call, A2A exchange and approval, as they end); the
    /// controller sends its reconciles, a run's in the run's trace (docs/observability.md).
    /// Runner pods gain no egress. Default: no traces.
    #[arg(long, value_name = "URL", env = "ORRERY_OTEL_ENDPOINT")]
    pub otel_endpoint: Option<String>,

    /// Headers for the collector (an API key), `name=value` separated by commas or lines, as
    /// in OTEL_EXPORTER_OTLP_HEADERS; a file of a mounted Secret.
    #[arg(long, value_name = "FILE", requires = "otel_endpoint")]
    pub otel_headers_file: Option<String>,

    /// PEM certificates the collector's TLS certificate is checked against (beside the
    /// system's roots).
    #[arg(long, value_name = "FILE", requires = "otel_endpoint")]
    pub otel_ca_file: Option<String>,

    /// Ended spans that may wait for a slow or absent collector; past it new spans are
    /// dropped and counted (orrery_sidecar_otel_spans_dropped_total).
    #[arg(long, value_name = "N", default_value_t = orrery_operator::otel::DEFAULT_QUEUE_SPANS)]
    pub otel_queue_spans: usize,
}

impl OtelArgs {
    /// The settings the flags give, if an endpoint is set; a file that cannot be used is an
    /// error naming the flag.
    pub fn settings(
        &self,
    ) -> Result<Option<orrery_operator::otel::OtelSettings>, orrery_operator::otel::OtelError> {
        use orrery_operator::otel::OtelSettings;
        let Some(endpoint) = &self.otel_endpoint else {
            return Ok(None);
        };
        let mut otel = OtelSettings::new(endpoint)?;
        if let Some(path) = &self.otel_headers_file {
            otel.headers = OtelSettings::read_headers(path)?;
        }
        if let Some(path) = &self.otel_ca_file {
            otel.ca_pem = Some(OtelSettings::read_ca(path)?);
        }
        otel.queue_spans = self.otel_queue_spans;
        Ok(Some(otel))
    }
}

#[derive(Debug, Args)]
pub struct ControllerArgs {
    /// The deployment config (YAML); see examples/operator/config.yaml.
    #[arg(long, value_name = "FILE")]
    pub config: String,

    /// Watch and reconcile only this namespace (single-namespace installs, tests); default:
    /// every namespace.
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,

    #[command(flatten)]
    pub otel: OtelArgs,

    /// Where to serve GET /metrics (Prometheus text), /healthz (liveness: 200 while the
    /// process runs, whatever the cluster does) and /readyz (200 for a standby that reads the
    /// Lease and so can take over, or for the leader once every kind its controllers watch
    /// could be listed; 503 with the reason while connecting to the cluster, while the leader
    /// starts, while stopping, or after losing the Lease).
    /// The default is the chart's `controller.metricsPort`, one beside the sidecar's 8080, so the
    /// two run side by side on one host with their defaults.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8081")]
    pub listen: std::net::SocketAddr,

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
    pub leader_elect: bool,

    /// The same as --leader-elect=false.
    #[arg(long = "no-leader-election", conflicts_with = "leader_elect")]
    pub no_leader_election: bool,

    /// The name of the leader Lease (coordination.k8s.io/v1).
    #[arg(long, value_name = "NAME", default_value = leader::DEFAULT_LEASE_NAME)]
    pub leader_election_name: String,

    /// The namespace of the leader Lease [default: $POD_NAMESPACE, else orrery-system].
    #[arg(long, value_name = "NS")]
    pub leader_election_namespace: Option<String>,

    /// This process's identity in the Lease [default: $POD_NAME, else <host name>-<pid>].
    #[arg(long, value_name = "ID")]
    pub leader_election_identity: Option<String>,

    /// Seconds the Lease stays valid after a renewal: how long a standby waits for a holder
    /// that died without releasing it.
    #[arg(long, value_name = "SECONDS", default_value_t = leader::DEFAULT_DURATION_SECONDS)]
    pub lease_duration: u64,

    /// Seconds before the Lease expires that the holder renews it (below --lease-duration).
    #[arg(long, value_name = "SECONDS", default_value_t = leader::DEFAULT_GRACE_SECONDS)]
    pub lease_grace: u64,

    /// After SIGTERM/SIGINT, how many seconds the reconciles in flight get to finish before
    /// the controllers are stopped anyway (keep it below the pod's
    /// terminationGracePeriodSeconds, 30 by default, so the Lease is still released).
    #[arg(long, value_name = "SECONDS", default_value_t = 20)]
    pub shutdown_timeout: u64,
}

impl ControllerArgs {
    /// The Lease to campaign on, or `None` without leader election. Defaults come from the
    /// pod's downward-API variables `POD_NAMESPACE` and `POD_NAME`.
    pub fn lease(
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
    fn the_defaults_campaign_on_the_orrery_operator_lease_and_listen_on_8081_beside_the_sidecar() {
        let args = controller_args(&[]);
        assert_eq!(args.listen.to_string(), "0.0.0.0:8081");
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
