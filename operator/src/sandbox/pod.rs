//! The sandboxed pod, one builder for both kinds: the runner pod of a run and the probe pod
//! of a RegistryEntry differ only in their metadata, their arguments, their own read-only
//! input volume, the Secrets they mount and their deadline ([`SandboxedPod`]); the rest
//! (security contexts, `/tmp`, the environment, the trusted certificates, resources, the
//! termination message, never restarted, no service-account token) is [`sandboxed_pod`]'s.
//! And what such a pod says ([`pod_state`]).

use super::{
    add_trusted_certificates, container_security_context, pod_security_context, quantities,
    read_only_mount, runner_env, secret_volumes, tmp_mount, tmp_volume,
};
use crate::config::Config;
use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodSpec, ResourceRequirements, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::{BTreeMap, BTreeSet};

/// The runner container's name (in runner and probe pods).
pub const RUNNER_CONTAINER: &str = "runner";
/// Where the entries' Secrets are mounted (`<dir>/<secret>/<key>`, `ORRERY_SECRETS_DIR`).
pub const SECRETS_DIR: &str = "/var/run/orrery/secrets";
/// The termination message file the runner writes its summary to.
pub const TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";

/// What differs between a runner pod and a probe pod.
#[derive(Clone, Debug)]
pub struct SandboxedPod {
    /// Name, namespace, labels, annotations, owner.
    pub metadata: ObjectMeta,
    /// The runner container's arguments (`run --plan ...`, `probe --entry ...`).
    pub args: Vec<String>,
    /// The pod's own input (the plan Secret, the probe request's downward-API file), mounted
    /// read-only at [`Self::input_dir`] under the volume's name.
    pub input: Volume,
    /// Where [`Self::input`] is mounted.
    pub input_dir: &'static str,
    /// The Secrets to mount under [`SECRETS_DIR`]: Secret name → the keys used.
    pub secrets: BTreeMap<String, BTreeSet<String>>,
    /// The deadline backstop (`activeDeadlineSeconds`).
    pub active_deadline_seconds: i64,
    /// Environment of this pod alone, after the runner's own (a run's `TRACEPARENT`).
    pub env: Vec<(String, String)>,
}

/// The sandboxed pod of `pod`. Pod Security `restricted` whatever the config says: not root,
/// read-only root filesystem, every capability dropped, no privilege escalation, seccomp
/// RuntimeDefault, no service-account token, no service links; the runner image and its
/// resources and runtime class from the config; the input and the Secrets mounted read-only,
/// `/tmp` an emptyDir, the trusted certificates when the config has some; the summary in the
/// termination message (`File`). Never restarted: it runs once.
pub fn sandboxed_pod(pod: SandboxedPod, config: &Config) -> Pod {
    let SandboxedPod {
        mut metadata,
        args,
        input,
        input_dir,
        secrets,
        active_deadline_seconds,
        env,
    } = pod;
    let mut mounts = vec![read_only_mount(&input.name, input_dir), tmp_mount()];
    let mut volumes = vec![input, tmp_volume()];
    let (secret_volumes, secret_mounts) = secret_volumes(secrets, SECRETS_DIR);
    volumes.extend(secret_volumes);
    mounts.extend(secret_mounts);
    add_trusted_certificates(config, &mut metadata, &mut volumes, &mut mounts);
    let container = Container {
        name: RUNNER_CONTAINER.to_owned(),
        image: Some(config.runner.image.clone()),
        image_pull_policy: Some(config.runner.image_pull_policy.clone()),
        args: Some(args),
        env: Some({
            let mut all = runner_env(config, SECRETS_DIR);
            all.extend(env.into_iter().map(|(name, value)| EnvVar {
                name,
                value: Some(value),
                value_from: None,
            }));
            all
        }),
        resources: Some(ResourceRequirements {
            requests: quantities(&config.runner.resources.requests),
            limits: quantities(&config.runner.resources.limits),
            ..ResourceRequirements::default()
        }),
        security_context: Some(container_security_context()),
        termination_message_path: Some(TERMINATION_MESSAGE_PATH.to_owned()),
        termination_message_policy: Some("File".to_owned()),
        volume_mounts: Some(mounts),
        ..Container::default()
    };
    Pod {
        metadata,
        spec: Some(PodSpec {
            containers: vec![container],
            restart_policy: Some("Never".to_owned()),
            active_deadline_seconds: Some(active_deadline_seconds),
            automount_service_account_token: Some(false),
            enable_service_links: Some(false),
            runtime_class_name: config.runner.runtime_class_name.clone(),
            security_context: Some(pod_security_context()),
            volumes: Some(volumes),
            ..PodSpec::default()
        }),
        status: None,
    }
}

/// What a sandboxed pod (a runner or a probe pod) says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodState {
    /// No pod.
    Absent,
    /// Created, the runner not started yet (scheduling, pulling the image).
    Starting,
    /// The runner is running.
    Running {
        /// When the pod started (RFC 3339).
        started_at: Option<String>,
    },
    /// The runner container ended.
    Terminated {
        /// Its exit code.
        exit_code: i32,
        /// The kubelet's reason (`Completed`, `Error`, `OOMKilled`…).
        reason: Option<String>,
        /// The termination message.
        message: Option<String>,
        /// When the pod started.
        started_at: Option<String>,
        /// When the container ended.
        finished_at: Option<String>,
    },
    /// The pod failed without the container ending on its own (the kubelet killed it past
    /// its deadline, an eviction).
    Killed {
        /// The pod's reason (`DeadlineExceeded`, `Evicted`…).
        reason: Option<String>,
        /// The pod's message.
        message: Option<String>,
    },
}

fn time(t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> String {
    crate::kstatus::rfc3339(t.0)
}

/// Reads a sandboxed pod's state from its runner container and its phase.
pub fn pod_state(pod: Option<&Pod>) -> PodState {
    let Some(pod) = pod else {
        return PodState::Absent;
    };
    let status = pod.status.clone().unwrap_or_default();
    let started_at = status.start_time.as_ref().map(time);
    let runner = status
        .container_statuses
        .iter()
        .flatten()
        .find(|c| c.name == RUNNER_CONTAINER);
    let state = runner.and_then(|c| c.state.as_ref());
    if let Some(t) = state.and_then(|s| s.terminated.as_ref()) {
        return PodState::Terminated {
            exit_code: t.exit_code,
            reason: t.reason.clone(),
            message: t.message.clone(),
            started_at,
            finished_at: t.finished_at.as_ref().map(time),
        };
    }
    match status.phase.as_deref() {
        Some("Failed") | Some("Succeeded") => PodState::Killed {
            reason: status.reason.clone(),
            message: status.message.clone(),
        },
        Some("Running") if state.is_some_and(|s| s.running.is_some()) => {
            PodState::Running { started_at }
        }
        _ => PodState::Starting,
    }
}
