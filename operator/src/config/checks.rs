//! The config's checks: every semantic problem of a config that parsed, each at its field with
//! its fix ([`Config::problems`]), one function per part of the config.

use super::{
    AllowEntry, CONFIG_API_VERSION, CONFIG_KIND, Config, ConfigProblem,
    MAX_APPROVAL_TIMEOUT_SECONDS, MAX_PROBE_INTERVAL_SECONDS, MAX_TRUSTED_CERTIFICATES_BYTES,
    MIN_PROBE_INTERVAL_SECONDS, RESYNC_SECONDS_RANGE,
};
use ipnet::IpNet;
use orrery_crds::budget::BudgetKey;
use std::net::IpAddr;

/// The problems found so far.
struct Problems(Vec<ConfigProblem>);

impl Problems {
    fn add(&mut self, field: String, problem: String, fix: &str) {
        self.0.push(ConfigProblem {
            field,
            problem,
            fix: fix.to_owned(),
        });
    }
}

impl Config {
    /// Every semantic problem of a config that parsed, in the order of the fields.
    pub fn problems(&self) -> Vec<ConfigProblem> {
        let mut out = Problems(Vec::new());
        for check in [
            document,
            network,
            models_and_budgets,
            limits_and_timings,
            runner,
            sidecar,
            run_token,
        ] {
            check(self, &mut out);
        }
        out.0
    }
}

/// The apiVersion and kind.
fn document(config: &Config, out: &mut Problems) {
    if config.api_version != CONFIG_API_VERSION {
        out.add(
            "apiVersion".into(),
            format!(
                "{:?} is not a config version this operator reads",
                config.api_version
            ),
            "write apiVersion: config.studio.orrery.dev/v1alpha1",
        );
    }
    if config.kind != CONFIG_KIND {
        out.add(
            "kind".into(),
            format!("{:?} is not an operator config", config.kind),
            "write kind: OperatorConfig",
        );
    }
}

/// The private-network allowlist and the egress proxy.
fn network(config: &Config, out: &mut Problems) {
    for (i, entry) in config.private_network_allowlist.iter().enumerate() {
        if let Err(why) = AllowEntry::parse(entry) {
            out.add(
                format!("privateNetworkAllowlist[{i}]"),
                why.to_string(),
                "write a host name (vllm.ml.svc), an address (10.0.0.5), a network (10.0.0.0/8) of at least /8 (IPv6 /32), or an address and port (10.96.12.7:8080)",
            );
        }
    }
    for (i, range) in config.cluster_ranges.iter().enumerate() {
        if orrery_crds::host::parse_cluster_range(range).is_none() {
            out.add(
                format!("clusterRanges[{i}]"),
                format!("{range:?} is neither a network nor an address"),
                "write the cluster's node, pod and service networks (10.0.0.0/16, 10.96.0.0/12) and the API server's address (192.168.1.10)",
            );
        }
    }
    if let Some(proxy) = &config.egress_proxy {
        match url::Url::parse(proxy.url.trim()) {
            Ok(u)
                if u.scheme() == "http"
                    && u.host().is_some()
                    && u.port().is_some()
                    && u.path() == "/" => {}
            _ => out.add(
                "egressProxy.url".into(),
                format!("{:?} is not http://host:port", proxy.url),
                "write the proxy as http://host:port (no path, no credentials)",
            ),
        }
        for (i, addr) in proxy.addresses.iter().enumerate() {
            if addr.parse::<IpAddr>().is_err() && addr.parse::<IpNet>().is_err() {
                out.add(
                    format!("egressProxy.addresses[{i}]"),
                    format!("{addr:?} is not an IP address or network"),
                    "list the proxy's addresses as IPs (203.0.113.7) or networks (203.0.113.0/28)",
                );
            }
        }
        if proxy.addresses.is_empty() && proxy.pods.is_none() {
            out.add(
                "egressProxy".into(),
                "neither addresses nor pods say where the proxy is, so no NetworkPolicy can let runners reach it".into(),
                "set egressProxy.addresses (outside the cluster) or egressProxy.pods (inside it)",
            );
        }
        if let Some(pods) = &proxy.pods
            && pods.match_labels.is_empty()
        {
            out.add(
                "egressProxy.pods.matchLabels".into(),
                "empty labels would let runners reach every pod of the namespace".into(),
                "name the proxy pods' labels, e.g. app.kubernetes.io/name: egress-proxy",
            );
        }
    }
}

/// The default model and the budget ceilings.
fn models_and_budgets(config: &Config, out: &mut Problems) {
    if let (Some(default), Some(allowed)) = (&config.default_model, &config.allowed_models)
        && !allowed.contains(default)
    {
        out.add(
            "defaultModel".into(),
            format!("{default:?} is not in allowedModels"),
            "add it to allowedModels or pick one of them",
        );
    }
    for key in BudgetKey::ALL {
        if config.budget_ceilings.get(key) == Some(0) && key.minimum() > 0 {
            out.add(
                format!("budgetCeilings.{key}"),
                "a ceiling of 0 would refuse every composition".into(),
                "set at least 1, or leave it out for the default ceiling",
            );
        }
    }
}

/// The run limits, the approval timeout, the TTL, the start timeout and the probe interval.
fn limits_and_timings(config: &Config, out: &mut Problems) {
    let limits = &config.run_limits;
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
            out.add(
                field.into(),
                "0 would keep every run from starting".into(),
                "set at least 1, or leave it out for no limit",
            );
        }
    }
    if config.approval_timeout_seconds == 0
        || config.approval_timeout_seconds > MAX_APPROVAL_TIMEOUT_SECONDS
    {
        out.add(
            "approvalTimeoutSeconds".into(),
            format!(
                "{} is outside 1..={MAX_APPROVAL_TIMEOUT_SECONDS}",
                config.approval_timeout_seconds
            ),
            "set between 1 and 86400 seconds (a day); the default is 900",
        );
    }
    if config.run_limits.daily_token_budget_per_owner.is_some()
        && config.ttl_seconds_after_finished < 24 * 3600
    {
        out.add(
            "ttlSecondsAfterFinished".into(),
            format!(
                "{} deletes finished runs within a day, but the daily token budget is the sum of the owner's runs of the day: deleted runs would stop counting",
                config.ttl_seconds_after_finished
            ),
            "set at least 86400 while runLimits.dailyTokenBudgetPerOwner is set",
        );
    }
    if !(1..=24 * 3600).contains(&config.runner.start_timeout_seconds) {
        out.add(
            "runner.startTimeoutSeconds".into(),
            format!(
                "{} is outside 1..=86400",
                config.runner.start_timeout_seconds
            ),
            "set between 1 and 86400 seconds; the default is 300",
        );
    }
    if config.ttl_seconds_after_finished == 0 {
        out.add(
            "ttlSecondsAfterFinished".into(),
            "0 would delete a run the moment it ends, before anyone reads its outcome".into(),
            "set at least 1 (the default is 1209600, 14 days)",
        );
    }
    if !(MIN_PROBE_INTERVAL_SECONDS..=MAX_PROBE_INTERVAL_SECONDS)
        .contains(&config.probe_interval_seconds)
    {
        out.add(
            "probeIntervalSeconds".into(),
            format!(
                "{} is outside {MIN_PROBE_INTERVAL_SECONDS}..={MAX_PROBE_INTERVAL_SECONDS} (each probe is a pod)",
                config.probe_interval_seconds
            ),
            "set between 60 seconds and 604800 (a week); the default is 3600",
        );
    }
    if !RESYNC_SECONDS_RANGE.contains(&config.resync_seconds) {
        out.add(
            "resyncSeconds".into(),
            format!(
                "{} is outside {}..={} (each look reads a running run's pod)",
                config.resync_seconds,
                RESYNC_SECONDS_RANGE.start(),
                RESYNC_SECONDS_RANGE.end()
            ),
            "set between 1 and 3600 seconds; the default is 60",
        );
    }
    for (i, p) in config.admission_policies.iter().enumerate() {
        for (field, name) in [("policy", &p.policy), ("binding", &p.binding)] {
            if !is_dns_subdomain(name) {
                out.add(
                    format!("admissionPolicies[{i}].{field}"),
                    format!("{name:?} is not a Kubernetes object name"),
                    "name the ValidatingAdmissionPolicy and its ValidatingAdmissionPolicyBinding as installed (lowercase letters, digits, '-' and '.'), e.g. studioruns-decisions.studio.orrery.dev",
                );
            }
        }
    }
}

/// The runner pods: image, pull policy, runtime class, resources, trusted certificates.
fn runner(config: &Config, out: &mut Problems) {
    let runner = &config.runner;
    if let Some(why) = image_problem(&runner.image) {
        out.add(
            "runner.image".into(),
            why,
            "name the image with a tag or digest, e.g. ghcr.io/example/orrery:0.1.0",
        );
    }
    if !["Always", "IfNotPresent", "Never"].contains(&runner.image_pull_policy.as_str()) {
        out.add(
            "runner.imagePullPolicy".into(),
            format!("{:?} is not a pull policy", runner.image_pull_policy),
            "use Always, IfNotPresent or Never",
        );
    }
    if let Some(class) = &runner.runtime_class_name
        && !is_dns_subdomain(class)
    {
        out.add(
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
                out.add(
                    field,
                    format!("{name:?} is not a runner resource"),
                    "use cpu, memory or ephemeral-storage",
                );
            } else if !is_quantity(quantity) {
                out.add(
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
        out.add(
            "runner.trustedCertificates".into(),
            why.to_string(),
            "give PEM certificates only (-----BEGIN CERTIFICATE----- blocks), e.g. your private CA's ca.crt, at most 64 KiB",
        );
    }
    if !runner.resources.limits.contains_key("memory") {
        out.add(
            "runner.resources.limits.memory".into(),
            "a runner without a memory limit can take its node's memory".into(),
            "set a memory limit, e.g. 512Mi",
        );
    }
}

/// Where runners reach the sidecar.
fn sidecar(config: &Config, out: &mut Problems) {
    let sidecar = &config.sidecar;
    for (field, value) in [
        ("sidecar.namespace", &sidecar.namespace),
        ("sidecar.serviceName", &sidecar.service_name),
    ] {
        if !is_dns_label(value) {
            out.add(
                field.into(),
                format!("{value:?} is not a Kubernetes name"),
                "use at most 63 lowercase letters, digits and '-', starting with a letter",
            );
        }
    }
    if sidecar.port == 0 || sidecar.target_port == Some(0) {
        out.add(
            "sidecar.port".into(),
            "port 0 cannot be reached".into(),
            "set the Service port (and targetPort when it differs), e.g. 8080",
        );
    }
    if sidecar.pod_labels.is_empty() {
        out.add(
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
            out.add(
                "sidecar.url".into(),
                format!("{url:?} is not an http(s) URL of a host and port alone"),
                "give the sidecar's base URL, e.g. http://orrery-sidecar.orrery-system.svc.example.org:8080, or leave it out for the Service's cluster DNS name",
            );
        }
    }
}

/// The run token's key and audience.
fn run_token(config: &Config, out: &mut Problems) {
    if config.run_token.signing_key_file.trim().is_empty() {
        out.add(
            "runToken.signingKeyFile".into(),
            "no file named".into(),
            "mount the Ed25519 private key (PEM, PKCS#8) and give its path",
        );
    }
    if config.run_token.audience.trim().is_empty() {
        out.add(
            "runToken.audience".into(),
            "an empty audience".into(),
            "leave it out for orrery-sidecar, or name the audience the sidecar checks",
        );
    }
}

/// Why a text cannot be `runner.trustedCertificates`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum TrustedCertificatesError {
    /// Over [`MAX_TRUSTED_CERTIFICATES_BYTES`].
    #[error("{bytes} bytes is more than {MAX_TRUSTED_CERTIFICATES_BYTES}")]
    TooLarge {
        /// Its size.
        bytes: usize,
    },
    /// A section that is not a certificate (a private key must never be written where every
    /// tenant's pods can read it).
    #[error(
        "holds a {label} section, not only certificates (if it is a private key, rotate it: it was written into the operator's config)"
    )]
    NotOnlyCertificates {
        /// The section's PEM label or kind.
        label: String,
    },
    /// Not PEM.
    #[error("is not valid PEM: {message}")]
    NotPem {
        /// The parser's message.
        message: String,
    },
    /// PEM without a certificate.
    #[error("holds no PEM certificate")]
    NoCertificate,
    /// A CERTIFICATE section that is not a certificate a TLS client can trust (every run's
    /// HTTP client would fail to build with it).
    #[error(
        "certificate {number} is not an X.509 certificate a TLS client can trust ({message}); give the CA's certificate as `openssl x509 -outform PEM` writes it"
    )]
    NotACertificate {
        /// Which, from 1.
        number: usize,
        /// rustls's reason.
        message: String,
    },
}

/// Why `pem` cannot be `runner.trustedCertificates`: not PEM, no certificate, something that
/// is not a certificate (a private key must never be written where every tenant's pods can
/// read it), or too large. `Ok` is the number of certificates.
pub(super) fn trusted_certificates_problem(pem: &str) -> Result<usize, TrustedCertificatesError> {
    use rustls_pki_types::pem::{PemObject, SectionKind};
    if pem.len() > MAX_TRUSTED_CERTIFICATES_BYTES {
        return Err(TrustedCertificatesError::TooLarge { bytes: pem.len() });
    }
    // Every PEM label first: the parser below skips labels it does not know (`ENCRYPTED
    // PRIVATE KEY`, `OPENSSH PRIVATE KEY`...) without a word.
    if let Some(label) = pem.lines().find_map(|line| {
        line.trim()
            .strip_prefix("-----BEGIN ")
            .and_then(|rest| rest.strip_suffix("-----"))
            .filter(|label| *label != "CERTIFICATE")
    }) {
        return Err(TrustedCertificatesError::NotOnlyCertificates {
            label: label.to_owned(),
        });
    }
    let mut certificates = 0;
    // What the runner's TLS client does with them (runner/src/net/tls.rs): a section that
    // decodes but is no certificate would pass here and fail every run.
    let mut anchors = rustls::RootCertStore::empty();
    for section in <(SectionKind, Vec<u8>)>::pem_slice_iter(pem.as_bytes()) {
        match section {
            Ok((SectionKind::Certificate, der)) => {
                certificates += 1;
                anchors
                    .add(rustls_pki_types::CertificateDer::from(der))
                    .map_err(|e| TrustedCertificatesError::NotACertificate {
                        number: certificates,
                        message: e.to_string(),
                    })?;
            }
            Ok((kind, _)) => {
                return Err(TrustedCertificatesError::NotOnlyCertificates {
                    label: format!("{kind:?}"),
                });
            }
            Err(e) => {
                return Err(TrustedCertificatesError::NotPem {
                    message: e.to_string(),
                });
            }
        }
    }
    if certificates == 0 {
        return Err(TrustedCertificatesError::NoCertificate);
    }
    Ok(certificates)
}

/// Why an image reference cannot be pulled reproducibly: no tag or digest, or `:latest`.
pub(super) fn image_problem(image: &str) -> Option<String> {
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
fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A DNS-1123 subdomain (RuntimeClass names).
pub(super) fn is_dns_subdomain(s: &str) -> bool {
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
pub(super) fn is_quantity(s: &str) -> bool {
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
