//! The sandbox every pod the operator starts shares (the runner pod of a run and the probe pod
//! of a RegistryEntry): Pod Security `restricted` whatever the config says (not root, every
//! capability dropped, no privilege escalation, read-only root filesystem, seccomp
//! RuntimeDefault), `/tmp` an emptyDir, and Secrets mounted read-only under one directory.

use k8s_openapi::api::core::v1::{
    Capabilities, EmptyDirVolumeSource, KeyToPath, PodSecurityContext, SeccompProfile,
    SecretVolumeSource, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
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
