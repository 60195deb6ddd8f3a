//! The sandbox every pod the operator starts shares (the runner pod of a run and the probe pod
//! of a RegistryEntry): Pod Security `restricted` whatever the config says (not root, every
//! capability dropped, no privilege escalation, read-only root filesystem, seccomp
//! RuntimeDefault), `/tmp` an emptyDir, and Secrets mounted read-only under one directory.
//!
//! Both pods are built in one place: [`pod`] (the pod, from what differs between a runner and
//! a probe, and what its runner container says) and [`network`] (the NetworkPolicy shell and
//! its egress rules: DNS, the egress proxy, address blocks).

pub mod network;
pub mod pod;

pub use network::{DNS_NAMESPACE, DNS_POD_LABEL, NAMESPACE_NAME_LABEL};
pub use pod::{
    PodState, RUNNER_CONTAINER, SECRETS_DIR, SandboxedPod, TERMINATION_MESSAGE_PATH, pod_state,
    sandboxed_pod,
};

use k8s_openapi::api::core::v1::{
    Capabilities, DownwardAPIVolumeFile, DownwardAPIVolumeSource, EmptyDirVolumeSource, KeyToPath,
    ObjectFieldSelector, PodSecurityContext, SeccompProfile, SecretVolumeSource, SecurityContext,
    Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::{BTreeMap, BTreeSet};

/// The user and group the runner image runs as (not root).
pub const RUNNER_UID: i64 = 65532;

fn runtime_default() -> SeccompProfile {
    SeccompProfile {
        type_: "RuntimeDefault".to_owned(),
        localhost_profile: None,
    }
}

/// The container's security context: not root, no privilege escalation, not privileged, a
/// read-only root filesystem, every capability dropped, seccomp RuntimeDefault.
pub fn container_security_context() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        privileged: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        run_as_user: Some(RUNNER_UID),
        run_as_group: Some(RUNNER_UID),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_owned()]),
            add: None,
        }),
        seccomp_profile: Some(runtime_default()),
        ..SecurityContext::default()
    }
}

/// The pod's security context: not root, the runner's user and group, seccomp RuntimeDefault.
pub fn pod_security_context() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(RUNNER_UID),
        run_as_group: Some(RUNNER_UID),
        fs_group: Some(RUNNER_UID),
        seccomp_profile: Some(runtime_default()),
        ..PodSecurityContext::default()
    }
}

/// The `tmp` volume: an emptyDir of at most 64Mi (the root filesystem is read-only).
pub fn tmp_volume() -> Volume {
    Volume {
        name: "tmp".into(),
        empty_dir: Some(EmptyDirVolumeSource {
            size_limit: Some(Quantity("64Mi".into())),
            ..EmptyDirVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// The `tmp` volume mounted at `/tmp` (writable).
pub fn tmp_mount() -> VolumeMount {
    VolumeMount {
        name: "tmp".into(),
        mount_path: "/tmp".into(),
        ..VolumeMount::default()
    }
}

/// A read-only mount of volume `name` at `path`.
pub fn read_only_mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.to_owned(),
        mount_path: path.to_owned(),
        read_only: Some(true),
        ..VolumeMount::default()
    }
}

/// The volumes and read-only mounts of `secrets` (Secret name → the keys used): volume
/// `secret-<i>` holds exactly those keys and appears at `<dir>/<secret>/<key>`, where the
/// runner reads secrets (`ORRERY_SECRETS_DIR`). A missing Secret holds the pod (not optional).
pub fn secret_volumes(
    secrets: BTreeMap<String, BTreeSet<String>>,
    dir: &str,
) -> (Vec<Volume>, Vec<VolumeMount>) {
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    for (i, (secret, keys)) in secrets.into_iter().enumerate() {
        let volume = format!("secret-{i}");
        mounts.push(read_only_mount(&volume, &format!("{dir}/{secret}")));
        volumes.push(Volume {
            name: volume,
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret),
                default_mode: Some(0o440),
                items: Some(
                    keys.into_iter()
                        .map(|key| KeyToPath {
                            path: key.clone(),
                            key,
                            mode: None,
                        })
                        .collect(),
                ),
                optional: Some(false),
            }),
            ..Volume::default()
        });
    }
    (volumes, mounts)
}

/// The pod annotation that carries `runner.trustedCertificates` into runner and probe pods (a
/// downward-API file: no object to copy into every tenant namespace, and it changes with the
/// config for the next pod).
pub const TRUSTED_CERTIFICATES_ANNOTATION: &str = "studio.orrery.dev/trusted-certificates";
/// Where the trusted certificates appear in the pod (`<dir>/ca.crt`, read-only).
pub const TRUST_DIR: &str = "/etc/orrery/trust";
/// The image's own CA directory, still trusted beside [`TRUST_DIR`] (`SSL_CERT_DIR` lists
/// both; the runner's TLS verifier reads every certificate file of each).
pub const IMAGE_CA_DIR: &str = "/etc/ssl/certs";

/// Adds `runner.trustedCertificates`, when the config has some, to a runner or probe pod: the
/// annotation on `meta`, and its downward-API volume mounted read-only at [`TRUST_DIR`]
/// ([`runner_env`] points `SSL_CERT_DIR` at it).
pub fn add_trusted_certificates(
    config: &crate::config::Config,
    meta: &mut ObjectMeta,
    volumes: &mut Vec<Volume>,
    mounts: &mut Vec<VolumeMount>,
) {
    let Some(pem) = &config.runner.trusted_certificates else {
        return;
    };
    meta.annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(TRUSTED_CERTIFICATES_ANNOTATION.to_owned(), pem.clone());
    volumes.push(Volume {
        name: "trust".into(),
        downward_api: Some(DownwardAPIVolumeSource {
            items: Some(vec![DownwardAPIVolumeFile {
                path: "ca.crt".to_owned(),
                field_ref: Some(ObjectFieldSelector {
                    api_version: None,
                    field_path: format!(
                        "metadata.annotations['{TRUSTED_CERTIFICATES_ANNOTATION}']"
                    ),
                }),
                mode: None,
                resource_field_ref: None,
            }]),
            default_mode: Some(0o444),
        }),
        ..Volume::default()
    });
    mounts.push(read_only_mount("trust", TRUST_DIR));
}

/// The runner container's environment, the same in runner and probe pods: where the entries'
/// Secrets are mounted, `HOME` on the writable `/tmp`, the private-network allowlist and the
/// egress proxy the guard applies, with `runner.trustedCertificates` the CA directories
/// the TLS verifier reads (the image's and [`TRUST_DIR`]), with `runner.logFormat: json` the
/// log format (`ORRERY_LOG_FORMAT`), and with `runner.redactIps` the
/// runner's switch for redacting IP addresses in captured content.
pub fn runner_env(
    config: &crate::config::Config,
    secrets_dir: &str,
) -> Vec<k8s_openapi::api::core::v1::EnvVar> {
    let env = |name: &str, value: String| k8s_openapi::api::core::v1::EnvVar {
        name: name.to_owned(),
        value: Some(value),
        value_from: None,
    };
    let mut envs = vec![
        env("ORRERY_SECRETS_DIR", secrets_dir.to_owned()),
        env("HOME", "/tmp".to_owned()),
    ];
    if !config.private_network_allowlist.is_empty() {
        envs.push(env(
            "ORRERY_A2A_PRIVATE_ALLOW",
            config.private_network_allowlist.join(","),
        ));
    }
    if !config.cluster_ranges.is_empty() {
        // The runner's `remote::CLUSTER_RANGES_ENV`.
        envs.push(env(
            "ORRERY_CLUSTER_RANGES",
            config.cluster_ranges.join(","),
        ));
    }
    if let Some(proxy) = &config.egress_proxy {
        envs.push(env("ORRERY_STUDIO_EGRESS_PROXY", proxy.url.clone()));
    }
    if config.runner.trusted_certificates.is_some() {
        envs.push(env("SSL_CERT_DIR", format!("{IMAGE_CA_DIR}:{TRUST_DIR}")));
    }
    if config.runner.redact_ips {
        // The runner's `launch::REDACT_IPS_ENV` (rule 8.8).
        envs.push(env("ORRERY_REDACT_IPS", "true".to_owned()));
    }
    if config.runner.log_format != orrery_crds::logging::LogFormat::Text {
        envs.push(env(
            orrery_crds::logging::FORMAT_ENV,
            config.runner.log_format.as_str().to_owned(),
        ));
    }
    envs
}

/// Kubernetes quantities from the config's strings (`None` when there are none).
pub fn quantities(map: &BTreeMap<String, String>) -> Option<BTreeMap<String, Quantity>> {
    (!map.is_empty()).then(|| {
        map.iter()
            .map(|(k, v)| (k.clone(), Quantity(v.clone())))
            .collect()
    })
}
