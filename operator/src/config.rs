//! The deployment config (`orrery-operator controller --config FILE`, YAML): everything only the
//! deployment decides. Unknown fields are refused; a bad value stops the process at start-up
//! with the field path and the fix ([`ConfigError`]). `examples/operator/config.yaml` documents
//! every field.

use ipnet::IpNet;
use orrery_crds::budget::{BudgetKey, BudgetLimits, Budgets};
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
    /// (`vllm.ml.svc`), addresses (`10.0.0.5`) or networks (`10.0.0.0/8`).
    #[serde(default)]
    pub private_network_allowlist: Vec<String>,
    /// Whether entries with `effect: Acting` may be used.
    #[serde(default)]
    pub acting_remotes: bool,
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
    /// Seconds past the run's deadline before the kubelet kills its pod.
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
}

/// Why `pem` cannot be `runner.trustedCertificates`: not PEM, no certificate, something that
/// is not a certificate (a private key must never be written where every tenant's pods can
/// read it), or too large.
fn trusted_certificates_problem(pem: &str) -> Result<usize, String> {
    use rustls_pki_types::pem::{PemObject, SectionKind};
    if pem.len() > MAX_TRUSTED_CERTIFICATES_BYTES {
        return Err(format!(
            "{} bytes is more than {MAX_TRUSTED_CERTIFICATES_BYTES}",
            pem.len()
        ));
    }
    // Every PEM label first: the parser below skips labels it does not know (`ENCRYPTED
    // PRIVATE KEY`, `OPENSSH PRIVATE KEY`…) without a word.
    if let Some(label) = pem.lines().find_map(|line| {
        line.trim()
            .strip_prefix("-----BEGIN ")
            .and_then(|rest| rest.strip_suffix("-----"))
            .filter(|label| *label != "CERTIFICATE")
    }) {
        return Err(format!(
            "holds a {label} section, not only certificates (if it is a private key, rotate \
             it: it was written into the operator's config)"
        ));
    }
    let mut certificates = 0;
    for section in <(SectionKind, Vec<u8>)>::pem_slice_iter(pem.as_bytes()) {
        match section {
            Ok((SectionKind::Certificate, _)) => certificates += 1,
            Ok((kind, _)) => {
                return Err(format!(
                    "holds a {kind:?} section, not only certificates (if it is a private key, \
                     rotate it: it was written into the operator's config)"
                ));
            }
            Err(e) => return Err(format!("is not valid PEM: {e}")),
        }
    }
    if certificates == 0 {
        return Err("holds no PEM certificate".into());
    }
    Ok(certificates)
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
    /// A PEM file with the Ed25519 private key (PKCS#8) tokens are signed with.
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
}

impl AllowEntry {
    /// Parses `host`, `10.0.0.5` or `10.0.0.0/8` the way the runner's guard does, refusing
    /// networks that are too broad or cover link-local, metadata, unspecified or loopback
    /// space. `Err` says why.
    pub fn parse(text: &str) -> Result<AllowEntry, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty entry".into());
        }
        let net = text.parse::<IpNet>().ok().or_else(|| {
            text.trim_matches(['[', ']'])
                .parse::<IpAddr>()
                .ok()
                .map(IpNet::from)
        });
        if let Some(net) = net {
            return match never_allowlistable(&net) {
                Some(why) => Err(format!("{text}: {why}")),
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
            return Err(format!(
                "{text:?} is neither a host name, an address nor a network"
            ));
        }
        Ok(AllowEntry::Host(host))
    }

    /// Whether a URL host (a name or an address literal) is on this entry. A name matches a
    /// host entry exactly; an address matches a network that contains it.
    pub fn covers(&self, host: &str) -> bool {
        let host = host.trim_matches(['[', ']']);
        match (self, host.parse::<IpAddr>()) {
            (AllowEntry::Net(net), Ok(addr)) => net.contains(&addr),
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
        Config::parse(path, &text)
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

    /// Every semantic problem of a config that parsed.
    pub fn problems(&self) -> Vec<ConfigProblem> {
        let mut out = Vec::new();
        let mut problem = |field: String, problem: String, fix: &str| {
            out.push(ConfigProblem {
                field,
                problem,
                fix: fix.to_owned(),
            });
        };
        if self.api_version != CONFIG_API_VERSION {
            problem(
                "apiVersion".into(),
                format!(
                    "{:?} is not a config version this operator reads",
                    self.api_version
                ),
                "write apiVersion: config.studio.orrery.dev/v1alpha1",
            );
        }
        if self.kind != CONFIG_KIND {
            problem(
                "kind".into(),
                format!("{:?} is not an operator config", self.kind),
                "write kind: OperatorConfig",
            );
        }
        for (i, entry) in self.private_network_allowlist.iter().enumerate() {
            if let Err(why) = AllowEntry::parse(entry) {
                problem(
                    format!("privateNetworkAllowlist[{i}]"),
                    why,
                    "write a host name (vllm.ml.svc), an address (10.0.0.5) or a network (10.0.0.0/8) of at least /8 (IPv6 /32)",
                );
            }
        }
        if let Some(proxy) = &self.egress_proxy {
            match url::Url::parse(proxy.url.trim()) {
                Ok(u)
                    if u.scheme() == "http"
                        && u.host().is_some()
                        && u.port().is_some()
                        && u.path() == "/" => {}
                _ => problem(
                    "egressProxy.url".into(),
                    format!("{:?} is not http://host:port", proxy.url),
                    "write the proxy as http://host:port (no path, no credentials)",
                ),
            }
            for (i, addr) in proxy.addresses.iter().enumerate() {
                if addr.parse::<IpAddr>().is_err() && addr.parse::<IpNet>().is_err() {
                    problem(
                        format!("egressProxy.addresses[{i}]"),
                        format!("{addr:?} is not an IP address or network"),
                        "list the proxy's addresses as IPs (203.0.113.7) or networks (203.0.113.0/28)",
                    );
                }
            }
            if proxy.addresses.is_empty() && proxy.pods.is_none() {
                problem(
                    "egressProxy".into(),
                    "neither addresses nor pods say where the proxy is, so no NetworkPolicy can let runners reach it".into(),
                    "set egressProxy.addresses (outside the cluster) or egressProxy.pods (inside it)",
                );
            }
            if let Some(pods) = &proxy.pods
                && pods.match_labels.is_empty()
            {
                problem(
                    "egressProxy.pods.matchLabels".into(),
                    "empty labels would let runners reach every pod of the namespace".into(),
                    "name the proxy pods' labels, e.g. app.kubernetes.io/name: egress-proxy",
                );
            }
        }
        if let (Some(default), Some(allowed)) = (&self.default_model, &self.allowed_models)
            && !allowed.contains(default)
        {
            problem(
                "defaultModel".into(),
                format!("{default:?} is not in allowedModels"),
                "add it to allowedModels or pick one of them",
            );
        }
        for key in BudgetKey::ALL {
            if self.budget_ceilings.get(key) == Some(0) && key.minimum() > 0 {
                problem(
                    format!("budgetCeilings.{key}"),
                    "a ceiling of 0 would refuse every composition".into(),
                    "set at least 1, or leave it out for the default ceiling",
                );
            }
        }
        let limits = &self.run_limits;
        for (field, value) in [
            (
                "runLimits.maxConcurrentRunsPerOwner",
                limits.max_concurrent_runs_per_owner.map(u64::from),
            ),
            (
                "runLimits.maxConcurrentRunsPerNamespace",
                limits.max_concurrent_runs_per_namespace.map(u64::from),
            ),
            (
                "runLimits.dailyTokenBudgetPerOwner",
                limits.daily_token_budget_per_owner,
            ),
        ] {
            if value == Some(0) {
                problem(
                    field.into(),
                    "0 would keep every run from starting".into(),
                    "set at least 1, or leave it out for no limit",
                );
            }
        }
        if self.approval_timeout_seconds == 0
            || self.approval_timeout_seconds > MAX_APPROVAL_TIMEOUT_SECONDS
        {
            problem(
                "approvalTimeoutSeconds".into(),
                format!(
                    "{} is outside 1..={MAX_APPROVAL_TIMEOUT_SECONDS}",
                    self.approval_timeout_seconds
                ),
                "set between 1 and 86400 seconds (a day); the default is 900",
            );
        }
        if self.run_limits.daily_token_budget_per_owner.is_some()
            && self.ttl_seconds_after_finished < 24 * 3600
        {
            problem(
                "ttlSecondsAfterFinished".into(),
                format!(
                    "{} deletes finished runs within a day, but the daily token budget is the sum of the owner's runs of the day: deleted runs would stop counting",
                    self.ttl_seconds_after_finished
                ),
                "set at least 86400 while runLimits.dailyTokenBudgetPerOwner is set",
            );
        }
        if !(1..=24 * 3600).contains(&self.runner.start_timeout_seconds) {
            problem(
                "runner.startTimeoutSeconds".into(),
                format!("{} is outside 1..=86400", self.runner.start_timeout_seconds),
                "set between 1 and 86400 seconds; the default is 300",
            );
        }
        if self.ttl_seconds_after_finished == 0 {
            problem(
                "ttlSecondsAfterFinished".into(),
                "0 would delete a run the moment it ends, before anyone reads its outcome".into(),
                "set at least 1 (the default is 1209600, 14 days)",
            );
        }
        if !(MIN_PROBE_INTERVAL_SECONDS..=MAX_PROBE_INTERVAL_SECONDS)
            .contains(&self.probe_interval_seconds)
        {
            problem(
                "probeIntervalSeconds".into(),
                format!(
                    "{} is outside {MIN_PROBE_INTERVAL_SECONDS}..={MAX_PROBE_INTERVAL_SECONDS} (each probe is a pod)",
                    self.probe_interval_seconds
                ),
                "set between 60 seconds and 604800 (a week); the default is 3600",
            );
        }
        let runner = &self.runner;
        if let Some(why) = image_problem(&runner.image) {
            problem(
                "runner.image".into(),
                why,
                "name the image with a tag or digest, e.g. ghcr.io/example/orrery:0.1.0",
            );
        }
        if !["Always", "IfNotPresent", "Never"].contains(&runner.image_pull_policy.as_str()) {
            problem(
                "runner.imagePullPolicy".into(),
                format!("{:?} is not a pull policy", runner.image_pull_policy),
                "use Always, IfNotPresent or Never",
            );
        }
        if let Some(class) = &runner.runtime_class_name
            && !is_dns_subdomain(class)
        {
            problem(
                "runner.runtimeClassName".into(),
                format!("{class:?} is not a RuntimeClass name"),
                "name an existing RuntimeClass (lowercase letters, digits, '-' and '.'), e.g. gvisor",
            );
        }
        for (part, map) in [
            ("requests", &runner.resources.requests),
            ("limits", &runner.resources.limits),
        ] {
            for (name, quantity) in map {
                let field = format!("runner.resources.{part}.{name}");
                if !["cpu", "memory", "ephemeral-storage"].contains(&name.as_str()) {
                    problem(
                        field,
                        format!("{name:?} is not a runner resource"),
                        "use cpu, memory or ephemeral-storage",
                    );
                } else if !is_quantity(quantity) {
                    problem(
                        field,
                        format!("{quantity:?} is not a Kubernetes quantity"),
                        "write e.g. 500m, 1, 256Mi or 1Gi",
                    );
                }
            }
        }
        if let Some(pem) = &runner.trusted_certificates
            && let Err(why) = trusted_certificates_problem(pem)
        {
            problem(
                "runner.trustedCertificates".into(),
                why,
                "give PEM certificates only (-----BEGIN CERTIFICATE----- blocks), e.g. your private CA's ca.crt, at most 64 KiB",
            );
        }
        if !runner.resources.limits.contains_key("memory") {
            problem(
                "runner.resources.limits.memory".into(),
                "a runner without a memory limit can take its node's memory".into(),
                "set a memory limit, e.g. 512Mi",
            );
        }
        let sidecar = &self.sidecar;
        for (field, value) in [
            ("sidecar.namespace", &sidecar.namespace),
            ("sidecar.serviceName", &sidecar.service_name),
        ] {
            if !is_dns_label(value) {
                problem(
                    field.into(),
                    format!("{value:?} is not a Kubernetes name"),
                    "use at most 63 lowercase letters, digits and '-', starting with a letter",
                );
            }
        }
        if sidecar.port == 0 || sidecar.target_port == Some(0) {
            problem(
                "sidecar.port".into(),
                "port 0 cannot be reached".into(),
                "set the Service port (and targetPort when it differs), e.g. 8080",
            );
        }
        if sidecar.pod_labels.is_empty() {
            problem(
                "sidecar.podLabels".into(),
                "empty labels would let runners reach every pod of the sidecar's namespace".into(),
                "name the sidecar pods' labels, e.g. app.kubernetes.io/name: orrery-sidecar",
            );
        }
        if let Some(url) = &sidecar.url {
            let parsed = url::Url::parse(url);
            let fine = parsed.as_ref().is_ok_and(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host_str().is_some()
                    && u.username().is_empty()
                    && u.password().is_none()
                    && u.query().is_none()
                    && u.fragment().is_none()
                    && matches!(u.path(), "" | "/")
            });
            if !fine {
                problem(
                    "sidecar.url".into(),
                    format!("{url:?} is not an http(s) URL of a host and port alone"),
                    "give the sidecar's base URL, e.g. http://orrery-sidecar.orrery-system.svc.example.org:8080, or leave it out for the Service's cluster DNS name",
                );
            }
        }
        if self.run_token.signing_key_file.trim().is_empty() {
            problem(
                "runToken.signingKeyFile".into(),
                "no file named".into(),
                "mount the Ed25519 private key (PEM, PKCS#8) and give its path",
            );
        }
        if self.run_token.audience.trim().is_empty() {
            problem(
                "runToken.audience".into(),
                "an empty audience".into(),
                "leave it out for orrery-sidecar, or name the audience the sidecar checks",
            );
        }
        out
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

    /// The private-network allowlist, parsed (entries that do not parse are left out; a
    /// loaded config has none).
    pub fn allowlist(&self) -> Vec<AllowEntry> {
        self.private_network_allowlist
            .iter()
            .filter_map(|e| AllowEntry::parse(e).ok())
            .collect()
    }
}

/// Why an image reference cannot be pulled reproducibly: no tag or digest, or `:latest`.
fn image_problem(image: &str) -> Option<String> {
    let image = image.trim();
    if image.is_empty() || image.chars().any(char::is_whitespace) {
        return Some(format!("{image:?} is not an image reference"));
    }
    if image.contains('@') {
        return None;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        None => Some(format!("{image:?} has no tag")),
        Some((_, "")) => Some(format!("{image:?} has an empty tag")),
        Some((_, "latest")) => Some(format!(
            "{image:?} uses :latest, which changes under running deployments"
        )),
        Some(_) => None,
    }
}

/// A DNS-1123 label (namespaces, Service names).
pub(crate) fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A DNS-1123 subdomain (RuntimeClass names).
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.starts_with(|c: char| c.is_ascii_alphanumeric())
                && label.ends_with(|c: char| c.is_ascii_alphanumeric())
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

/// A Kubernetes quantity as written in manifests: a decimal number and an optional suffix.
fn is_quantity(s: &str) -> bool {
    let digits_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(digits_end);
    let number_ok = !number.is_empty()
        && number.matches('.').count() <= 1
        && !number.starts_with('.')
        && !number.ends_with('.');
    let suffixes = [
        "", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    ];
    number_ok && suffixes.contains(&suffix)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;

    const MINIMAL: &str = "
apiVersion: config.studio.orrery.dev/v1alpha1
kind: OperatorConfig
runner: {image: 'ghcr.io/example/orrery:0.1.0'}
sidecar: {namespace: orrery-system, serviceName: orrery-sidecar, port: 8080}
runToken: {signingKeyFile: /etc/orrery/run-token/key.pem}
";

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse("test.yaml", text)
    }

    fn with(extra: &str) -> String {
        format!("{MINIMAL}{extra}\n")
    }

    fn problem_fields(text: &str) -> Vec<String> {
        match parse(text) {
            Err(ConfigError::Invalid { problems, .. }) => {
                problems.into_iter().map(|p| p.field).collect()
            }
            Ok(_) => Vec::new(),
            Err(other) => vec![format!("unexpected: {other}")],
        }
    }

    #[test]
    fn a_minimal_config_takes_the_documented_defaults() {
        let config = parse(MINIMAL).expect("the minimal config parses");
        assert_eq!(config.ttl_seconds_after_finished, 14 * 24 * 3600);
        assert_eq!(config.approval_timeout_seconds, 900);
        assert_eq!(config.probe_interval_seconds, 3600);
        assert_eq!(config.ceilings(), BudgetLimits::DEFAULT_CEILINGS);
        assert!(!config.acting_remotes);
        assert_eq!(config.runner.resources, Resources::default());
        assert_eq!(config.run_token.audience, "orrery-sidecar");
        assert_eq!(
            config.sidecar.url(),
            "http://orrery-sidecar.orrery-system.svc:8080"
        );
        assert_eq!(config.sidecar.pod_port(), 8080);
    }

    #[test]
    fn the_example_config_in_the_repository_parses_and_checks_clean() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/operator/config.yaml"
        );
        let config = Config::load(path).expect("examples/operator/config.yaml is a good config");
        // The example documents every field: each one the config serializes appears in it.
        let text = std::fs::read_to_string(path).expect("readable");
        let fields = serde_json::to_value(&config).expect("serializes");
        for (key, value) in fields.as_object().into_iter().flatten() {
            assert!(text.contains(&format!("{key}:")), "the example shows {key}");
            for inner in value.as_object().map(|o| o.keys()).into_iter().flatten() {
                assert!(
                    text.contains(&format!("{inner}:")),
                    "the example shows {key}.{inner}"
                );
            }
        }
        assert!(
            text.contains("# egressProxy:"),
            "the example shows the egress proxy, commented out"
        );
    }

    #[test]
    fn an_unknown_field_is_refused_at_its_path() {
        let err = parse(&MINIMAL.replace("port: 8080", "port: 8080, prot: 1")).err();
        match err {
            Some(ConfigError::Parse { field, message, .. }) => {
                assert_eq!(field, "sidecar.prot");
                assert!(message.contains("prot"), "{message}");
            }
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn a_value_of_the_wrong_type_is_refused_with_its_nested_path() {
        let err = parse(&with("runLimits: {maxConcurrentRunsPerOwner: many}")).err();
        match err {
            Some(ConfigError::Parse { field, .. }) => {
                assert_eq!(field, "runLimits.maxConcurrentRunsPerOwner")
            }
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn a_missing_required_section_is_refused() {
        let text = MINIMAL.replace(
            "runToken: {signingKeyFile: /etc/orrery/run-token/key.pem}",
            "",
        );
        let err = parse(&text)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("field (top level): missing field `runToken`"),
            "{err}"
        );
    }

    #[test]
    fn each_semantic_rule_names_its_field() {
        let cases: &[(&str, &[&str])] = &[
            (
                "privateNetworkAllowlist: [vllm.ml.svc, 10.0.0.0/8, '2001:db8::/32']",
                &[],
            ),
            (
                "privateNetworkAllowlist: ['not a host!']",
                &["privateNetworkAllowlist[0]"],
            ),
            (
                "privateNetworkAllowlist: [ok.example, 0.0.0.0/0]",
                &["privateNetworkAllowlist[1]"],
            ),
            (
                "privateNetworkAllowlist: [169.254.169.254]",
                &["privateNetworkAllowlist[0]"],
            ),
            (
                "privateNetworkAllowlist: [127.0.0.1, localhost]",
                &["privateNetworkAllowlist[0]", "privateNetworkAllowlist[1]"],
            ),
            (
                "egressProxy: {url: 'http://proxy.internal:3128', addresses: [203.0.113.7]}",
                &[],
            ),
            (
                "egressProxy: {url: 'https://proxy:3128/x', addresses: [203.0.113.7]}",
                &["egressProxy.url"],
            ),
            ("egressProxy: {url: 'http://proxy:3128'}", &["egressProxy"]),
            (
                "egressProxy: {url: 'http://proxy:3128', addresses: [proxy.example]}",
                &["egressProxy.addresses[0]"],
            ),
            (
                "egressProxy: {url: 'http://proxy:3128', pods: {namespace: net, matchLabels: {}}}",
                &["egressProxy.pods.matchLabels"],
            ),
            ("allowedModels: [a, b]\ndefaultModel: c", &["defaultModel"]),
            ("allowedModels: [a, b]\ndefaultModel: a", &[]),
            (
                "budgetCeilings: {maxTokens: 0}",
                &["budgetCeilings.maxTokens"],
            ),
            (
                "budgetCeilings: {timeoutSeconds: 0, maxToolCalls: 0}",
                &["budgetCeilings.timeoutSeconds"],
            ),
            (
                "runLimits: {maxConcurrentRunsPerOwner: 0, dailyTokenBudgetPerOwner: 0}",
                &[
                    "runLimits.maxConcurrentRunsPerOwner",
                    "runLimits.dailyTokenBudgetPerOwner",
                ],
            ),
            ("approvalTimeoutSeconds: 86401", &["approvalTimeoutSeconds"]),
            ("ttlSecondsAfterFinished: 0", &["ttlSecondsAfterFinished"]),
            ("probeIntervalSeconds: 59", &["probeIntervalSeconds"]),
            ("probeIntervalSeconds: 604801", &["probeIntervalSeconds"]),
            ("probeIntervalSeconds: 60", &[]),
            // The daily ledger is the day's runs: deleting them sooner would forget spending.
            (
                "runLimits: {dailyTokenBudgetPerOwner: 1000}\nttlSecondsAfterFinished: 3600",
                &["ttlSecondsAfterFinished"],
            ),
            (
                "runLimits: {dailyTokenBudgetPerOwner: 1000}\nttlSecondsAfterFinished: 86400",
                &[],
            ),
        ];
        let versioned: &[(String, &[&str])] = &[
            (MINIMAL.replace("/v1alpha1", "/v1"), &["apiVersion"]),
            (
                MINIMAL.replace("kind: OperatorConfig", "kind: Config"),
                &["kind"],
            ),
        ];
        for (text, want) in versioned {
            assert_eq!(problem_fields(text), *want, "{text}");
        }
        for (extra, want) in cases {
            assert_eq!(problem_fields(&with(extra)), *want, "{extra}");
        }
    }

    /// `runner.trustedCertificates` holds PEM certificates and nothing else: never a key (it is
    /// copied into every tenant's pods), never something the TLS verifier would skip.
    #[test]
    fn trusted_certificates_must_be_pem_certificates_only() {
        let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let key = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n";
        let encrypted =
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n";
        let openssh =
            "-----BEGIN OPENSSH PRIVATE KEY-----\nMIIB\n-----END OPENSSH PRIVATE KEY-----\n";
        let cases: Vec<(String, Result<usize, &str>)> = vec![
            (cert.to_owned(), Ok(1)),
            (format!("# our CA\n{cert}{cert}"), Ok(2)),
            (String::new(), Err("holds no PEM certificate")),
            ("not pem at all".to_owned(), Err("holds no PEM certificate")),
            (format!("{cert}{key}"), Err("holds a PRIVATE KEY section")),
            (
                format!("{cert}{encrypted}"),
                Err("holds a ENCRYPTED PRIVATE KEY section"),
            ),
            (
                format!("{openssh}{cert}"),
                Err("holds a OPENSSH PRIVATE KEY"),
            ),
            (
                format!("GlobalSign Root CA\n==================\n{cert}"),
                Ok(1),
            ),
            (
                "-----BEGIN CERTIFICATE-----\nMIIB\n".to_owned(),
                Err("is not valid PEM"),
            ),
            (
                cert.repeat(MAX_TRUSTED_CERTIFICATES_BYTES / cert.len() + 1),
                Err("is more than 65536"),
            ),
        ];
        for (pem, want) in cases {
            let got = trusted_certificates_problem(&pem);
            match (&got, want) {
                (Ok(n), Ok(m)) => assert_eq!(*n, m, "{pem}"),
                (Err(why), Err(start)) => assert!(why.contains(start), "{why} for {pem}"),
                _ => panic!("{got:?} for {pem:?}"),
            }
        }
        let text = MINIMAL.replace(
            "runner: {image: 'ghcr.io/example/orrery:0.1.0'}",
            &format!("runner: {{image: 'o:1', trustedCertificates: {key:?}}}"),
        );
        assert_eq!(problem_fields(&text), ["runner.trustedCertificates"]);
    }

    #[test]
    fn runner_and_sidecar_rules_name_their_fields() {
        let runner = |body: &str| {
            MINIMAL.replace(
                "runner: {image: 'ghcr.io/example/orrery:0.1.0'}",
                &format!("runner: {{{body}}}"),
            )
        };
        let cases: Vec<(String, &[&str])> = vec![
            (runner("image: ghcr.io/example/orrery"), &["runner.image"]),
            (runner("image: 'localhost:5000/orrery'"), &["runner.image"]),
            (runner("image: 'localhost:5000/orrery:1'"), &[]),
            (runner("image: 'orrery:latest'"), &["runner.image"]),
            (runner("image: 'orrery@sha256:0123'"), &[]),
            (
                runner("image: 'o:1', imagePullPolicy: Sometimes"),
                &["runner.imagePullPolicy"],
            ),
            (
                runner("image: 'o:1', runtimeClassName: gVisor"),
                &["runner.runtimeClassName"],
            ),
            (runner("image: 'o:1', runtimeClassName: gvisor"), &[]),
            (
                runner("image: 'o:1', resources: {limits: {memory: 1Gi, gpu: '1'}}"),
                &["runner.resources.limits.gpu"],
            ),
            (
                runner("image: 'o:1', resources: {requests: {cpu: lots}, limits: {memory: 1Gi}}"),
                &["runner.resources.requests.cpu"],
            ),
            (
                runner("image: 'o:1', resources: {limits: {cpu: '2'}}"),
                &["runner.resources.limits.memory"],
            ),
            (
                MINIMAL.replace("namespace: orrery-system", "namespace: Orrery"),
                &["sidecar.namespace"],
            ),
            (MINIMAL.replace("port: 8080", "port: 0"), &["sidecar.port"]),
            (
                MINIMAL.replace("port: 8080", "port: 8080, podLabels: {}"),
                &["sidecar.podLabels"],
            ),
            (
                MINIMAL.replace("port: 8080", "port: 8080, url: 'http://127.0.0.1:9000'"),
                &[],
            ),
            (
                MINIMAL.replace("port: 8080", "port: 8080, url: 'ftp://h:1'"),
                &["sidecar.url"],
            ),
            (
                MINIMAL.replace("port: 8080", "port: 8080, url: 'http://u:p@h:1/api?x'"),
                &["sidecar.url"],
            ),
            (
                MINIMAL.replace("/etc/orrery/run-token/key.pem", "' '"),
                &["runToken.signingKeyFile"],
            ),
        ];
        for (text, want) in cases {
            assert_eq!(problem_fields(&text), want, "{text}");
        }
    }

    #[test]
    fn an_invalid_config_message_carries_every_field_and_its_fix() {
        let err = parse(&with(
            "budgetCeilings: {maxTokens: 0}\nttlSecondsAfterFinished: 0",
        ))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(err.starts_with("operator config test.yaml: "), "{err}");
        assert!(
            err.contains("budgetCeilings.maxTokens: a ceiling of 0"),
            "{err}"
        );
        assert!(err.contains("fix: set at least 1"), "{err}");
        assert!(err.contains("ttlSecondsAfterFinished"), "{err}");
    }

    #[test]
    fn deployment_limits_carry_ceilings_models_and_acting() {
        let config = parse(&with(
            "budgetCeilings: {maxTokens: 1000}\nallowedModels: [m]\ndefaultModel: m\nactingRemotes: true",
        ))
        .expect("parses");
        let limits = config.deployment_limits();
        assert_eq!(limits.ceilings.max_tokens, 1000);
        assert_eq!(
            limits.ceilings.max_tool_calls,
            BudgetLimits::DEFAULT_CEILINGS.max_tool_calls
        );
        assert_eq!(
            limits.allowed_models,
            Some(BTreeSet::from(["m".to_owned()]))
        );
        assert_eq!(limits.default_model.as_deref(), Some("m"));
        assert!(limits.acting_remotes);
    }

    #[test]
    fn an_allowlist_entry_covers_exact_names_and_addresses_in_its_network() {
        let cases = [
            ("vllm.ml.svc", "vllm.ml.svc", true),
            ("vllm.ml.svc", "VLLM.ml.svc", true),
            ("vllm.ml.svc", "other.ml.svc", false),
            ("vllm.ml.svc", "10.0.0.1", false),
            ("10.0.0.0/8", "10.2.3.4", true),
            ("10.0.0.0/8", "11.0.0.1", false),
            ("10.0.0.0/8", "ten.example", false),
            ("2001:db8::/32", "[2001:db8::7]", true),
            ("10.0.0.5", "10.0.0.5", true),
        ];
        for (entry, host, want) in cases {
            let parsed = AllowEntry::parse(entry).expect("a valid entry");
            assert_eq!(parsed.covers(host), want, "{entry} covers {host}");
        }
    }

    #[test]
    fn quantities_and_images_follow_the_kubernetes_spelling() {
        for (q, ok) in [
            ("100m", true),
            ("1", true),
            ("0.5", true),
            ("512Mi", true),
            ("1Gi", true),
            ("1gi", false),
            ("", false),
            (".5", false),
            ("1..2", false),
            ("Mi", false),
        ] {
            assert_eq!(is_quantity(q), ok, "{q}");
        }
    }
}
