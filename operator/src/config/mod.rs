//! The deployment config (`orrery-operator controller --config FILE`, YAML): everything only the
//! deployment decides. Unknown fields are refused; a bad value stops the process at start-up
//! with the field path and the fix ([`ConfigError`]). `examples/operator/config.yaml` documents
//! every field.
//!
//! The settings are here; their checks ([`Config::problems`], each field's problem with its
//! fix) are in `checks`.

mod checks;

use ipnet::IpNet;
use orrery_crds::budget::{BudgetLimits, Budgets};
use orrery_crds::validate::DeploymentLimits;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;

/// Finished runs are deleted this long after they end unless the config says otherwise
/// (14 days, the seeds' retention).
pub const DEFAULT_TTL_SECONDS_AFTER_FINISHED: u64 = 14 * 24 * 3600;
/// An approval undecided this long expires (a rejection):
/// [`orrery_crds::approval::DEFAULT_APPROVAL_TIMEOUT`] in seconds.
pub const DEFAULT_APPROVAL_TIMEOUT_SECONDS: u64 =
    orrery_crds::approval::DEFAULT_APPROVAL_TIMEOUT.as_secs();
/// The longest approval timeout: [`orrery_crds::approval::MAX_APPROVAL_TIMEOUT`] in seconds.
pub const MAX_APPROVAL_TIMEOUT_SECONDS: u64 = orrery_crds::approval::MAX_APPROVAL_TIMEOUT.as_secs();
/// `activeDeadlineSeconds` of a runner pod is the run's deadline plus this margin, so the
/// runner's own deadline always fires first and the kubelet's is only a backstop (the seeds'
/// "deadline plus two minutes").
pub const DEFAULT_DEADLINE_MARGIN_SECONDS: u64 = 120;
/// Seconds between two probes of an unchanged RegistryEntry, by default (an hour).
pub const DEFAULT_PROBE_INTERVAL_SECONDS: u64 = 3600;
/// The shortest probe interval: each probe is a pod.
pub const MIN_PROBE_INTERVAL_SECONDS: u64 = 60;
/// The longest probe interval: a week.
pub const MAX_PROBE_INTERVAL_SECONDS: u64 = 7 * 24 * 3600;
/// Seconds between two looks at a run under way even when no watch event came (fault case 12:
/// a watch event lost between the API server and the operator is made up by this look), by
/// default.
pub const DEFAULT_RESYNC_SECONDS: u64 = 60;
/// The allowed range of `resyncSeconds`: each look is a read of the run's pod.
pub const RESYNC_SECONDS_RANGE: std::ops::RangeInclusive<u64> = 1..=3600;
/// A runner pod that has not started this long after it was created fails the run (it cannot
/// be scheduled, its image cannot be pulled, a Secret it mounts is missing).
pub const DEFAULT_START_TIMEOUT_SECONDS: u64 = 300;
/// The most `runner.trustedCertificates` may hold: it travels in an annotation of every runner
/// and probe pod (all of a pod's annotations together may hold 256 KiB).
pub const MAX_TRUSTED_CERTIFICATES_BYTES: usize = 64 * 1024;
/// The audience of run tokens: the sidecar.
pub const DEFAULT_RUN_TOKEN_AUDIENCE: &str = "orrery-sidecar";
/// The issuer of run tokens.
pub const RUN_TOKEN_ISSUER: &str = "orrery-operator";

/// `apiVersion` of the config file (a component config, like the kube-scheduler's: its own
/// group, so `orrery validate examples/` passes over it).
pub const CONFIG_API_VERSION: &str = "config.studio.orrery.dev/v1alpha1";
/// `kind` of the config file.
pub const CONFIG_KIND: &str = "OperatorConfig";

/// The operator's deployment config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// `config.studio.orrery.dev/v1alpha1`.
    pub api_version: String,
    /// `OperatorConfig`.
    pub kind: String,
    /// Private hosts and networks that `privateNetwork` entries may reach: host names
    /// (`vllm.ml.svc`), addresses (`10.0.0.5`), networks (`10.0.0.0/8`), or one address and
    /// port (`10.96.12.7:8080`), the only form that reaches inside `clusterRanges`.
    #[serde(default)]
    pub private_network_allowlist: Vec<String>,
    /// The cluster's own ranges: its node, pod and service networks and the API server's
    /// addresses (`10.0.0.0/16`, `10.96.0.0/12`, `192.168.1.10`). No run reaches them through a
    /// network or host on the allowlist, only at an address and port the allowlist names
    /// exactly, and never on a kubelet, kube-proxy or etcd port (anchor 19); runner and probe
    /// pods get them as `ORRERY_CLUSTER_RANGES`, and their NetworkPolicies leave them out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_ranges: Vec<String>,
    /// Whether entries with `effect: Acting` may be used.
    #[serde(default)]
    pub acting_remotes: bool,
    /// Whether every Secret a RegistryEntry references must name the origins it may be sent
    /// to (annotation `studio.orrery.dev/allowed-origins`); without it, only a Secret that
    /// carries the annotation is held to it (rules 5.46/5.47, anchor issue 27 §2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_secret_origins: bool,
    /// The egress proxy public traffic goes through; without it runners connect directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress_proxy: Option<EgressProxy>,
    /// Model entries nodes may name; absent: every model entry of the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_models: Option<BTreeSet<String>>,
    /// The model entry a node without `model` uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Budget ceilings; each one left out is the default ceiling.
    #[serde(default)]
    pub budget_ceilings: Budgets,
    /// Limits on runs.
    #[serde(default)]
    pub run_limits: RunLimits,
    /// Seconds an approval may wait before it expires (a rejection); at most a day.
    #[serde(default = "default_approval_timeout")]
    pub approval_timeout_seconds: u64,
    /// Seconds a finished run is kept (with its children) before it is deleted.
    #[serde(default = "default_ttl")]
    pub ttl_seconds_after_finished: u64,
    /// Seconds between two probes of a RegistryEntry whose spec did not change (a spec change
    /// probes at once).
    #[serde(default = "default_probe_interval")]
    pub probe_interval_seconds: u64,
    /// Seconds between two looks at a run under way that no watch event woke: the operator
    /// reads the run's pod again, so an event the watch lost (a connection cut at the wrong
    /// moment) delays a run's status by at most this long.
    #[serde(default = "default_resync")]
    pub resync_seconds: u64,
    /// The ValidatingAdmissionPolicies (and their bindings) that check decisions written to
    /// `status.decisions` and who may create a run (the chart's, when
    /// `admissionPolicies.enabled`). Before a run that can ask a person starts, the operator
    /// reads each: while one is missing the run waits `Pending` (reason
    /// `AdmissionPolicyMissing`), because a `kubectl patch` decision would go unchecked. Empty:
    /// none is checked.
    #[serde(default)]
    pub admission_policies: Vec<AdmissionPolicyRef>,
    /// The runner pods.
    pub runner: RunnerConfig,
    /// Where runners reach the sidecar.
    pub sidecar: SidecarConfig,
    /// The run-scoped tokens.
    pub run_token: RunTokenConfig,
}

fn default_approval_timeout() -> u64 {
    DEFAULT_APPROVAL_TIMEOUT_SECONDS
}

fn default_ttl() -> u64 {
    DEFAULT_TTL_SECONDS_AFTER_FINISHED
}

fn default_probe_interval() -> u64 {
    DEFAULT_PROBE_INTERVAL_SECONDS
}

fn default_resync() -> u64 {
    DEFAULT_RESYNC_SECONDS
}

/// One admission policy the deployment relies on, and the binding that makes it act.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionPolicyRef {
    /// The ValidatingAdmissionPolicy's name.
    pub policy: String,
    /// The ValidatingAdmissionPolicyBinding's name.
    pub binding: String,
}

/// The egress proxy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EgressProxy {
    /// `http://host:port`, handed to the runner (`ORRERY_STUDIO_EGRESS_PROXY`).
    pub url: String,
    /// The proxy's addresses outside the cluster (NetworkPolicy ipBlocks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
    /// The proxy's pods inside the cluster (a NetworkPolicy peer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<PodPeer>,
}

/// Pods in one namespace, picked by labels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodPeer {
    /// Their namespace.
    pub namespace: String,
    /// Their labels (all must match).
    pub match_labels: BTreeMap<String, String>,
}

/// Limits on runs. Each one left out is no limit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunLimits {
    /// Runs of one owner executing at once; more wait (`Pending`, reason `Queued`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_runs_per_owner: Option<u32>,
    /// Runs of one namespace executing at once; more wait (`Pending`, reason `Queued`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_runs_per_namespace: Option<u32>,
    /// Model tokens one owner's runs may use per UTC day; a run started past it is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_token_budget_per_owner: Option<u64>,
}

/// The runner pods.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunnerConfig {
    /// The runner image, with a tag or digest (`registry/orrery:0.1.0`, `…@sha256:…`).
    pub image: String,
    /// `Always`, `IfNotPresent` (default) or `Never`.
    #[serde(default = "default_pull_policy")]
    pub image_pull_policy: String,
    /// A RuntimeClass (gVisor, Kata) for the pods; it must exist in the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_class_name: Option<String>,
    /// The runner container's resources.
    #[serde(default)]
    pub resources: Resources,
    /// Seconds past the run's deadline before the kubelet kills its pod. A runner whose run has
    /// ended keeps trying to hand the sidecar its events and settlements for this margin less
    /// 15 s (at least 5 s), so a sidecar unreachable for that long loses nothing.
    #[serde(default = "default_margin")]
    pub deadline_margin_seconds: u64,
    /// Seconds a runner pod may take to start (scheduling, pulling the image, mounting its
    /// Secrets); past it the pod is deleted and the run fails with the reason it was stuck on.
    #[serde(default = "default_start_timeout")]
    pub start_timeout_seconds: u64,
    /// PEM certificates runner and probe pods trust beside the image's own CA bundle: the CA of
    /// private MCP servers, A2A agents or model endpoints (`https://` with a certificate no
    /// public CA signed). Certificates only, at most [`MAX_TRUSTED_CERTIFICATES_BYTES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_certificates: Option<String>,
    /// Replace IPv4 and IPv6 addresses in captured content (prompts, replies, tool arguments and
    /// results, when a run captures content) with `[REDACTED_IP]`, beside the credentials and
    /// email addresses always redacted (rule 8.8). Off by default; runner pods get
    /// `ORRERY_REDACT_IPS=true` when on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redact_ips: bool,
    /// How runner and probe pods write their log lines (`text` or `json`; the chart gives its
    /// `logging.format`, JSON by default). Pods get `ORRERY_LOG_FORMAT=json` when it is json.
    #[serde(
        default,
        skip_serializing_if = "orrery_crds::logging::LogFormat::is_text"
    )]
    pub log_format: orrery_crds::logging::LogFormat,
}

fn default_start_timeout() -> u64 {
    DEFAULT_START_TIMEOUT_SECONDS
}

fn default_pull_policy() -> String {
    "IfNotPresent".into()
}

fn default_margin() -> u64 {
    DEFAULT_DEADLINE_MARGIN_SECONDS
}

/// Container resources as Kubernetes quantities (`cpu`, `memory`, `ephemeral-storage`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resources {
    /// Requests.
    #[serde(default)]
    pub requests: BTreeMap<String, String>,
    /// Limits.
    #[serde(default)]
    pub limits: BTreeMap<String, String>,
}

impl Default for Resources {
    /// 100m CPU and 128Mi requested; 1 CPU, 512Mi and 1Gi of ephemeral storage at most.
    fn default() -> Self {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        Resources {
            requests: map(&[("cpu", "100m"), ("memory", "128Mi")]),
            limits: map(&[
                ("cpu", "1"),
                ("memory", "512Mi"),
                ("ephemeral-storage", "1Gi"),
            ]),
        }
    }
}

/// Where runners reach the sidecar.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SidecarConfig {
    /// The sidecar Service's namespace.
    pub namespace: String,
    /// The sidecar Service's name.
    pub service_name: String,
    /// The Service port runners connect to.
    pub port: u16,
    /// The sidecar pods' container port (NetworkPolicy ports are pod ports); default `port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_port: Option<u16>,
    /// The sidecar pods' labels (the NetworkPolicy peer).
    #[serde(default = "default_sidecar_labels")]
    pub pod_labels: BTreeMap<String, String>,
    /// The URL runners post to, when it is not the Service's cluster DNS name
    /// (`http://<serviceName>.<namespace>.svc:<port>`): a development node whose pods run on
    /// the host, a cluster with another DNS domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

fn default_sidecar_labels() -> BTreeMap<String, String> {
    BTreeMap::from([(
        "app.kubernetes.io/name".to_owned(),
        "orrery-sidecar".to_owned(),
    )])
}

impl SidecarConfig {
    /// The URL runners post to: `url` when set, else `http://<service>.<namespace>.svc:<port>`.
    pub fn url(&self) -> String {
        match &self.url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!(
                "http://{}.{}.svc:{}",
                self.service_name, self.namespace, self.port
            ),
        }
    }

    /// The pod port a NetworkPolicy must open.
    pub fn pod_port(&self) -> u16 {
        self.target_port.unwrap_or(self.port)
    }
}

/// The run-scoped tokens (JWTs the operator signs, the sidecar verifies).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunTokenConfig {
    /// A PEM file with the Ed25519 private key (PKCS#8) tokens are signed with; a relative
    /// path is read from the config file's directory.
    pub signing_key_file: String,
    /// A PEM file with the matching Ed25519 public key, which the sidecar verifies tokens
    /// with (it never holds the signing key): `openssl pkey -in key.pem -pubout`, or a
    /// certificate carrying that key (what the Helm chart makes). Required by
    /// `orrery-operator sidecar`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verifying_key_file: Option<String>,
    /// The tokens' audience.
    #[serde(default = "default_audience")]
    pub audience: String,
}

impl RunTokenConfig {
    /// Key files named by a relative path are read from the config file's directory (as
    /// kubectl reads a kubeconfig's certificate files): `signingKeyFile: key.pem` beside the
    /// config works from any working directory.
    pub fn resolve_against(&mut self, config_path: &str) {
        let dir = std::path::Path::new(config_path)
            .parent()
            .unwrap_or(std::path::Path::new(""));
        let resolve = |file: &mut String| {
            if !file.is_empty() && std::path::Path::new(file.as_str()).is_relative() {
                *file = dir.join(file.as_str()).to_string_lossy().into_owned();
            }
        };
        resolve(&mut self.signing_key_file);
        if let Some(file) = self.verifying_key_file.as_mut() {
            resolve(file);
        }
    }
}

fn default_audience() -> String {
    DEFAULT_RUN_TOKEN_AUDIENCE.into()
}

/// One problem of a config, at its field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The field path, e.g. `runner.image` or `privateNetworkAllowlist[2]`.
    pub field: String,
    /// What is wrong.
    pub problem: String,
    /// How to fix it.
    pub fix: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}; fix: {}", self.field, self.problem, self.fix)
    }
}

/// A config the operator refuses to start with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error(
        "operator config {path}: cannot read it: {message}; fix: pass an existing file with --config"
    )]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        message: String,
    },
    /// The YAML does not have the config's shape.
    #[error(
        "operator config {path}: field {field}: {message}; fix: see examples/operator/config.yaml for every field and its type"
    )]
    Parse {
        /// The file.
        path: String,
        /// The field path where parsing stopped (`.` for the document).
        field: String,
        /// The parser's message.
        message: String,
    },
    /// Values that parse but cannot work.
    #[error("operator config {path}: {}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid {
        /// The file.
        path: String,
        /// Every problem, each at its field.
        problems: Vec<ConfigProblem>,
    },
}

/// One entry of the private-network allowlist, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllowEntry {
    /// An exact host name (lowercase).
    Host(String),
    /// An address or network.
    Net(IpNet),
    /// One address and port (`10.96.12.7:8080`).
    Socket(std::net::SocketAddr),
}

/// Why a text cannot be an allowlist entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllowEntryError {
    /// Nothing but spaces.
    #[error("an empty entry")]
    Empty,
    /// A network the runner's guard never lets through the allowlist.
    #[error("{entry}: {why}")]
    NeverAllowlistable {
        /// The entry as written.
        entry: String,
        /// Why (too broad, link-local, metadata, unspecified, loopback).
        why: &'static str,
    },
    /// Neither a host name, an address nor a network.
    #[error("{entry:?} is neither a host name, an address nor a network")]
    NotAHostOrNetwork {
        /// The entry as written.
        entry: String,
    },
}

impl AllowEntry {
    /// Parses `host`, `10.0.0.5`, `10.0.0.0/8` or `10.96.12.7:8080` the way the runner's guard
    /// does, refusing networks that are too broad or cover link-local, metadata, unspecified or
    /// loopback space. `Err` says why.
    pub fn parse(text: &str) -> Result<AllowEntry, AllowEntryError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(AllowEntryError::Empty);
        }
        if let Ok(socket) = text.parse::<std::net::SocketAddr>() {
            return match never_allowlistable(&IpNet::from(socket.ip())) {
                Some(why) => Err(AllowEntryError::NeverAllowlistable {
                    entry: text.to_owned(),
                    why,
                }),
                None => Ok(AllowEntry::Socket(socket)),
            };
        }
        let net = text.parse::<IpNet>().ok().or_else(|| {
            text.trim_matches(['[', ']'])
                .parse::<IpAddr>()
                .ok()
                .map(IpNet::from)
        });
        if let Some(net) = net {
            return match never_allowlistable(&net) {
                Some(why) => Err(AllowEntryError::NeverAllowlistable {
                    entry: text.to_owned(),
                    why,
                }),
                None => Ok(AllowEntry::Net(net)),
            };
        }
        let host = text.to_ascii_lowercase();
        let labels_ok = host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
        if !labels_ok || host.len() > 253 || host == "localhost" {
            return Err(AllowEntryError::NotAHostOrNetwork {
                entry: text.to_owned(),
            });
        }
        Ok(AllowEntry::Host(host))
    }

    /// Whether a URL host (a name or an address literal) is on this entry. A name matches a
    /// host entry exactly; an address matches a network that contains it.
    pub fn covers(&self, host: &str) -> bool {
        let host = host.trim_matches(['[', ']']);
        match (self, host.parse::<IpAddr>()) {
            (AllowEntry::Net(net), Ok(addr)) => net.contains(&addr),
            (AllowEntry::Socket(socket), Ok(addr)) => socket.ip() == addr,
            (AllowEntry::Host(name), Err(_)) => name.eq_ignore_ascii_case(host),
            _ => false,
        }
    }
}

/// Why a network can never be on the allowlist (the runner guard's rule, anchor 4).
fn never_allowlistable(net: &IpNet) -> Option<&'static str> {
    if let Some(why) = orrery_crds::host::never_allowlistable(net) {
        return Some(why);
    }
    let overlaps = |a: &IpNet, b: &IpNet| a.contains(&b.network()) || b.contains(&a.network());
    let loopback = ["127.0.0.0/8", "::1/128"];
    if loopback
        .iter()
        .filter_map(|l| l.parse::<IpNet>().ok())
        .any(|l| overlaps(&l, net))
    {
        return Some("loopback is reached through loopback hosts, not the allowlist");
    }
    None
}

impl Config {
    /// Reads and checks the config file at `path`.
    pub fn load(path: &str) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let mut config = Config::parse(path, &text)?;
        config.run_token.resolve_against(path);
        Ok(config)
    }

    /// Parses and checks config text; `path` only names it in errors.
    pub fn parse(path: &str, text: &str) -> Result<Config, ConfigError> {
        let de = serde_yaml::Deserializer::from_str(text);
        let config: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let field = match e.path().to_string() {
                top if top == "." => "(top level)".to_owned(),
                path => path,
            };
            ConfigError::Parse {
                path: path.to_owned(),
                field,
                message: e.into_inner().to_string(),
            }
        })?;
        let problems = config.problems();
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError::Invalid {
                path: path.to_owned(),
                problems,
            })
        }
    }

    /// The budget ceilings: the configured ones, the default ceiling for each left out.
    pub fn ceilings(&self) -> BudgetLimits {
        BudgetLimits::DEFAULT_CEILINGS.effective(&self.budget_ceilings)
    }

    /// The limits the validator applies.
    pub fn deployment_limits(&self) -> DeploymentLimits {
        DeploymentLimits {
            ceilings: self.ceilings(),
            allowed_models: self.allowed_models.clone(),
            acting_remotes: self.acting_remotes,
            default_model: self.default_model.clone(),
        }
    }

    /// The cluster's ranges, parsed (entries that do not parse are left out; a loaded config
    /// has none).
    pub fn cluster_ranges(&self) -> Vec<IpNet> {
        self.cluster_ranges
            .iter()
            .filter_map(|r| orrery_crds::host::parse_cluster_range(r))
            .collect()
    }

    /// The allowlist's exact addresses and ports.
    pub fn exact_sockets(&self) -> Vec<std::net::SocketAddr> {
        self.allowlist()
            .into_iter()
            .filter_map(|a| match a {
                AllowEntry::Socket(socket) => Some(socket),
                _ => None,
            })
            .collect()
    }

    /// The private-network allowlist, parsed (entries that do not parse are left out; a
    /// loaded config has none).
    pub fn allowlist(&self) -> Vec<AllowEntry> {
        self.private_network_allowlist
            .iter()
            .filter_map(|e| AllowEntry::parse(e).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests;
