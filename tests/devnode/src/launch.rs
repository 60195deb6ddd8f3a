//! How one container becomes a process: its environment (`env`, `envFrom`, downward API
//! fields), its argv (`command` + `args` with `$(VAR)` expansion) and the mapping of its
//! container paths into the pod directory.
//!
//! ## Path mapping
//!
//! There are no mount namespaces here: the container's file system view is a directory
//! `<pod dir>/containers/<name>/root` (its *mount root*), passed to the process as
//! `ORRERY_MOUNT_ROOT`. Each `volumeMount` appears at `<mount root><mountPath>` (a symlink to
//! the volume's directory), and the termination-message file at
//! `<mount root><terminationMessagePath>`. Any argument or env value that starts with one of
//! those container paths (the path itself or a path below it) is rewritten to the same path
//! under the mount root, so `--config /etc/orrery/plan.json` reaches the process as
//! `<mount root>/etc/orrery/plan.json`. Values that merely contain such a path elsewhere
//! (`--config=/etc/...`) are not rewritten.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod};
use kube::ResourceExt;

use crate::expand::expand;
use crate::images::ImageBinary;
use crate::objects::Objects;

/// The env var that tells a process where its container paths are (see the module docs).
pub const MOUNT_ROOT_ENV: &str = "ORRERY_MOUNT_ROOT";
/// The kubelet's default `terminationMessagePath`.
pub const DEFAULT_TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";
/// `PATH` for processes whose env does not set one (the usual image default).
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Why a container cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// A missing Secret, ConfigMap or key, or an unsupported reference: the container waits
    /// (`CreateContainerConfigError`) and is retried, as with the kubelet.
    #[error("{0}")]
    Config(String),
    /// The command cannot be run from the image: the container ends with `StartError`.
    #[error("{0}")]
    Start(String),
}

/// Where the pod is, for downward-API fields.
#[derive(Debug, Clone)]
pub struct PodAddresses {
    pub pod_ip: String,
    pub host_ip: String,
    pub node_name: String,
}

/// An ordered environment in which a later definition replaces an earlier one in place.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Env {
    vars: Vec<(String, String)>,
}

impl Env {
    /// Sets `name`, replacing an earlier value.
    pub fn set(&mut self, name: &str, value: String) {
        match self.vars.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.vars.push((name.to_string(), value)),
        }
    }

    /// Sets `name` unless it is already defined.
    pub fn set_default(&mut self, name: &str, value: String) {
        if self.get(name).is_none() {
            self.vars.push((name.to_string(), value));
        }
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `$(VAR)` expansion against this environment.
    pub fn expand(&self, s: &str) -> String {
        expand(s, |n| self.get(n).map(str::to_string))
    }

    /// The variables, in definition order.
    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }
}

/// The container's environment as the process inside a container would see it (container
/// paths, not yet mapped): `envFrom` first, then `env` (each value expanded against the
/// variables before it), then `service` for variables neither defines (the kubelet's
/// `KUBERNETES_SERVICE_*`).
pub fn container_env(
    pod: &Pod,
    container: &Container,
    objects: &Objects,
    addresses: &PodAddresses,
    service: &[(String, String)],
) -> Result<Env, LaunchError> {
    let ns = pod.namespace().unwrap_or_default();
    let mut env = Env::default();
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.as_deref().unwrap_or_default();
        let (kind, name, optional, data) = if let Some(s) = &from.secret_ref {
            ("Secret", &s.name, s.optional, objects.secrets.get(&s.name))
        } else if let Some(cm) = &from.config_map_ref {
            (
                "ConfigMap",
                &cm.name,
                cm.optional,
                objects.config_maps.get(&cm.name),
            )
        } else {
            continue;
        };
        match data {
            Some(data) => {
                for (k, v) in data {
                    env.set(&format!("{prefix}{k}"), String::from_utf8_lossy(v).into());
                }
            }
            None if optional == Some(true) => {}
            None => return Err(not_found(kind, &ns, name)),
        }
    }

    let lookup_env = |env: &Env, s: &str| -> String {
        expand(s, |n| {
            env.get(n)
                .map(str::to_string)
                .or_else(|| service.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()))
        })
    };
    for var in container.env.iter().flatten() {
        let value = match (&var.value, &var.value_from) {
            (_, Some(from)) => {
                if let Some(sel) = &from.secret_key_ref {
                    match key_of(objects.secrets.get(&sel.name), &sel.key) {
                        Ok(v) => v,
                        Err(_) if sel.optional == Some(true) => continue,
                        Err(missing_object) => {
                            return Err(key_error(
                                "Secret",
                                &ns,
                                &sel.name,
                                &sel.key,
                                missing_object,
                            ));
                        }
                    }
                } else if let Some(sel) = &from.config_map_key_ref {
                    match key_of(objects.config_maps.get(&sel.name), &sel.key) {
                        Ok(v) => v,
                        Err(_) if sel.optional == Some(true) => continue,
                        Err(missing_object) => {
                            return Err(key_error(
                                "ConfigMap",
                                &ns,
                                &sel.name,
                                &sel.key,
                                missing_object,
                            ));
                        }
                    }
                } else if let Some(field) = &from.field_ref {
                    field_value(pod, &field.field_path, addresses)?
                } else {
                    return Err(LaunchError::Config(format!(
                        "env {}: only value, secretKeyRef, configMapKeyRef and fieldRef are supported by the pod executor",
                        var.name
                    )));
                }
            }
            (Some(value), None) => lookup_env(&env, value),
            (None, None) => String::new(),
        };
        env.set(&var.name, value);
    }
    for (k, v) in service {
        env.set_default(k, v.clone());
    }
    Ok(env)
}

fn not_found(kind: &str, ns: &str, name: &str) -> LaunchError {
    LaunchError::Config(format!("{kind} {ns}/{name} not found"))
}

/// `Err(true)`: the object is missing; `Err(false)`: the key is.
fn key_of(data: Option<&BTreeMap<String, Vec<u8>>>, key: &str) -> Result<String, bool> {
    let data = data.ok_or(true)?;
    data.get(key)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .ok_or(false)
}

fn key_error(kind: &str, ns: &str, name: &str, key: &str, missing_object: bool) -> LaunchError {
    if missing_object {
        not_found(kind, ns, name)
    } else {
        LaunchError::Config(format!("couldn't find key {key} in {kind} {ns}/{name}"))
    }
}

/// A downward-API field of the pod (`fieldRef.fieldPath`).
pub fn field_value(pod: &Pod, path: &str, at: &PodAddresses) -> Result<String, LaunchError> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    let indexed = |prefix: &str, map: Option<&BTreeMap<String, String>>| {
        path.strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix("['"))
            .and_then(|rest| rest.strip_suffix("']"))
            .map(|key| map.and_then(|m| m.get(key)).cloned().unwrap_or_default())
    };
    let value = match path {
        "metadata.name" => meta.name.clone().unwrap_or_default(),
        "metadata.namespace" => meta.namespace.clone().unwrap_or_default(),
        "metadata.uid" => meta.uid.clone().unwrap_or_default(),
        "metadata.labels" => format_map(meta.labels.as_ref()),
        "metadata.annotations" => format_map(meta.annotations.as_ref()),
        "spec.nodeName" => at.node_name.clone(),
        "spec.serviceAccountName" => spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default(),
        "status.podIP" | "status.podIPs" => at.pod_ip.clone(),
        "status.hostIP" | "status.hostIPs" => at.host_ip.clone(),
        _ => {
            if let Some(v) = indexed("metadata.labels", meta.labels.as_ref()) {
                v
            } else if let Some(v) = indexed("metadata.annotations", meta.annotations.as_ref()) {
                v
            } else {
                return Err(LaunchError::Config(format!(
                    "fieldRef {path:?} is not supported by the pod executor"
                )));
            }
        }
    };
    Ok(value)
}

/// Labels or annotations as the downward API writes them: `key="value"` lines, sorted.
fn format_map(map: Option<&BTreeMap<String, String>>) -> String {
    map.into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", serde_json::Value::String(v.clone())))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Container paths that exist in the mount root: the volume mounts and the termination-message
/// file. See the module docs.
#[derive(Debug, Clone)]
pub struct MountMap {
    root: PathBuf,
    paths: Vec<String>,
}

impl MountMap {
    /// The mapping for `container` with its mount root at `root`.
    pub fn new(root: impl Into<PathBuf>, container: &Container) -> MountMap {
        let mut paths: Vec<String> = container
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| m.mount_path.clone())
            .chain(std::iter::once(termination_message_path(container)))
            .map(|p| {
                let trimmed = p.trim_end_matches('/');
                if trimmed.is_empty() {
                    "/".into()
                } else {
                    trimmed.into()
                }
            })
            .filter(|p: &String| p.starts_with('/') && p != "/")
            .collect();
        paths.sort();
        paths.dedup();
        MountMap {
            root: root.into(),
            paths,
        }
    }

    /// The mount root (`ORRERY_MOUNT_ROOT`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the absolute container path `path` is on this machine.
    pub fn host_path(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    /// `value` with a leading mapped container path moved under the mount root.
    pub fn rewrite(&self, value: &str) -> String {
        let mapped = self.paths.iter().any(|p| {
            value
                .strip_prefix(p.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        });
        if mapped {
            self.host_path(value).to_string_lossy().into_owned()
        } else {
            value.to_string()
        }
    }
}

/// The container's `terminationMessagePath`, defaulted like the apiserver does.
pub fn termination_message_path(container: &Container) -> String {
    container
        .termination_message_path
        .clone()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| DEFAULT_TERMINATION_MESSAGE_PATH.to_string())
}

/// The arguments after the program: `command[1..]` (when `command` is set, its first element
/// must name the image's binary) then `args`, each expanded against `env` and then mapped.
pub fn argv(
    container: &Container,
    binary: &ImageBinary,
    env: &Env,
    mounts: &MountMap,
) -> Result<Vec<String>, LaunchError> {
    let command = container.command.clone().unwrap_or_default();
    let mut out = Vec::new();
    if let Some(first) = command.first() {
        let first = env.expand(first);
        let base = first.rsplit('/').next().unwrap_or_default();
        if base != binary.name {
            return Err(LaunchError::Start(format!(
                "command {first:?} is not in image {:?}: the pod executor runs only its binary {:?}",
                container.image.clone().unwrap_or_default(),
                binary.name
            )));
        }
        out.extend(command[1..].iter().map(|a| mounts.rewrite(&env.expand(a))));
    }
    out.extend(
        container
            .args
            .iter()
            .flatten()
            .map(|a| mounts.rewrite(&env.expand(a))),
    );
    Ok(out)
}

/// The process environment: the container env with values mapped, plus what the runtime
/// adds (`HOSTNAME`, `PATH`, `HOME`) and [`MOUNT_ROOT_ENV`].
pub fn process_env(pod: &Pod, env: &Env, mounts: &MountMap) -> Vec<(String, String)> {
    let mut out = Env::default();
    for (k, v) in env.vars() {
        out.set(k, mounts.rewrite(v));
    }
    let hostname = pod
        .spec
        .as_ref()
        .and_then(|s| s.hostname.clone())
        .unwrap_or_else(|| pod.name_any());
    out.set_default("HOSTNAME", hostname);
    out.set_default("PATH", DEFAULT_PATH.to_string());
    out.set_default("HOME", mounts.root().to_string_lossy().into_owned());
    out.set(MOUNT_ROOT_ENV, mounts.root().to_string_lossy().into_owned());
    out.vars
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(containers: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": "p1", "namespace": "team", "uid": "u-1",
                "labels": { "app": "x", "tier": "a\"b" }
            },
            "spec": { "serviceAccountName": "robot", "containers": containers }
        }))
        .unwrap()
    }

    fn addresses() -> PodAddresses {
        PodAddresses {
            pod_ip: "127.0.0.1".into(),
            host_ip: "127.0.0.2".into(),
            node_name: "n1".into(),
        }
    }

    fn objects() -> Objects {
        let mut o = Objects::default();
        o.secrets.insert(
            "creds".into(),
            [
                ("api-key".into(), b"s3cret".to_vec()),
                ("user".into(), b"u".to_vec()),
            ]
            .into(),
        );
        o.config_maps.insert(
            "settings".into(),
            [("mode".into(), b"fast".to_vec())].into(),
        );
        o
    }

    fn env_of(c: serde_json::Value) -> Result<Env, LaunchError> {
        let p = pod(json!([c]));
        let container = p.spec.as_ref().unwrap().containers[0].clone();
        let service = vec![(
            "KUBERNETES_SERVICE_HOST".to_string(),
            "127.0.0.1".to_string(),
        )];
        container_env(&p, &container, &objects(), &addresses(), &service)
    }

    #[test]
    fn env_comes_from_env_from_then_env_with_references_to_earlier_values() {
        let env = env_of(json!({
            "name": "c",
            "envFrom": [{ "secretRef": { "name": "creds" }, "prefix": "CREDS_" },
                        { "configMapRef": { "name": "settings" } }],
            "env": [
                { "name": "mode", "value": "overridden-$(mode)" },
                { "name": "KEY", "valueFrom": { "secretKeyRef": { "name": "creds", "key": "api-key" } } },
                { "name": "MODE", "valueFrom": { "configMapKeyRef": { "name": "settings", "key": "mode" } } },
                { "name": "POD", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } },
                { "name": "NS", "valueFrom": { "fieldRef": { "fieldPath": "metadata.namespace" } } },
                { "name": "APP", "valueFrom": { "fieldRef": { "fieldPath": "metadata.labels['app']" } } },
                { "name": "IP", "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } } },
                { "name": "SA", "valueFrom": { "fieldRef": { "fieldPath": "spec.serviceAccountName" } } },
                { "name": "URL", "value": "https://$(KUBERNETES_SERVICE_HOST)/$(POD)/$(LATER)/$$(POD)" },
                { "name": "LATER", "value": "later" },
                { "name": "EMPTY" }
            ]
        }))
        .unwrap();
        let want = [
            ("CREDS_api-key", "s3cret"),
            ("CREDS_user", "u"),
            ("mode", "overridden-fast"),
            ("KEY", "s3cret"),
            ("MODE", "fast"),
            ("POD", "p1"),
            ("NS", "team"),
            ("APP", "x"),
            ("IP", "127.0.0.1"),
            ("SA", "robot"),
            ("URL", "https://127.0.0.1/p1/$(LATER)/$(POD)"),
            ("LATER", "later"),
            ("EMPTY", ""),
            ("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
        ];
        let got: Vec<(&str, &str)> = env
            .vars()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn missing_references_are_config_errors_unless_optional() {
        let cases = [
            (
                json!({ "name": "X", "valueFrom": { "secretKeyRef": { "name": "nope", "key": "k" } } }),
                Some("Secret team/nope not found"),
            ),
            (
                json!({ "name": "X", "valueFrom": { "secretKeyRef": { "name": "creds", "key": "nope" } } }),
                Some("couldn't find key nope in Secret team/creds"),
            ),
            (
                json!({ "name": "X", "valueFrom": { "configMapKeyRef": { "name": "nope", "key": "k" } } }),
                Some("ConfigMap team/nope not found"),
            ),
            (
                json!({ "name": "X", "valueFrom": { "secretKeyRef": { "name": "nope", "key": "k", "optional": true } } }),
                None,
            ),
            (
                json!({ "name": "X", "valueFrom": { "configMapKeyRef": { "name": "settings", "key": "nope", "optional": true } } }),
                None,
            ),
            (
                json!({ "name": "X", "valueFrom": { "fieldRef": { "fieldPath": "status.phase" } } }),
                Some("fieldRef \"status.phase\" is not supported by the pod executor"),
            ),
        ];
        for (var, want) in cases {
            let got = env_of(json!({ "name": "c", "env": [var] }));
            match want {
                Some(msg) => assert_eq!(got, Err(LaunchError::Config(msg.into())), "{var}"),
                None => assert_eq!(got.unwrap().get("X"), None, "{var}"),
            }
        }
        let got = env_of(json!({ "name": "c", "envFrom": [{ "secretRef": { "name": "gone" } }] }));
        assert_eq!(
            got,
            Err(LaunchError::Config("Secret team/gone not found".into()))
        );
        let got = env_of(
            json!({ "name": "c", "envFrom": [{ "configMapRef": { "name": "gone", "optional": true } }] }),
        );
        assert!(got.is_ok());
    }

    #[test]
    fn labels_and_annotations_format_like_the_downward_api() {
        let p = pod(json!([]));
        assert_eq!(
            field_value(&p, "metadata.labels", &addresses()).unwrap(),
            "app=\"x\"\ntier=\"a\\\"b\""
        );
        assert_eq!(
            field_value(&p, "metadata.annotations['none']", &addresses()).unwrap(),
            ""
        );
        assert_eq!(
            field_value(&p, "status.hostIP", &addresses()).unwrap(),
            "127.0.0.2"
        );
    }

    fn container(c: serde_json::Value) -> Container {
        serde_json::from_value(c).unwrap()
    }

    #[test]
    fn mount_paths_and_the_termination_log_are_rewritten_at_the_start_of_values() {
        let c = container(json!({
            "name": "c",
            "volumeMounts": [
                { "name": "cfg", "mountPath": "/etc/orrery/" },
                { "name": "data", "mountPath": "/data" }
            ]
        }));
        let m = MountMap::new("/tmp/pod/root", &c);
        let cases = [
            ("/etc/orrery", "/tmp/pod/root/etc/orrery"),
            (
                "/etc/orrery/plan.json",
                "/tmp/pod/root/etc/orrery/plan.json",
            ),
            ("/data/x/y", "/tmp/pod/root/data/x/y"),
            ("/dev/termination-log", "/tmp/pod/root/dev/termination-log"),
            // Not a mount path, or not at a path boundary, or not at the start.
            ("/etc/orrery-other", "/etc/orrery-other"),
            ("/database", "/database"),
            ("--config=/data/x", "--config=/data/x"),
            ("relative/data", "relative/data"),
            ("/etc/passwd", "/etc/passwd"),
        ];
        for (value, want) in cases {
            assert_eq!(m.rewrite(value), want, "{value}");
        }
        let custom = container(json!({ "name": "c", "terminationMessagePath": "/run/msg" }));
        let m = MountMap::new("/r", &custom);
        assert_eq!(m.rewrite("/run/msg"), "/r/run/msg");
        assert_eq!(m.rewrite("/dev/termination-log"), "/dev/termination-log");
    }

    #[test]
    fn argv_is_command_tail_then_args_expanded_and_mapped() {
        let bin = ImageBinary {
            name: "orrery".into(),
            path: "/target/debug/orrery".into(),
        };
        let mut env = Env::default();
        env.set("PLAN", "/etc/plan/plan.json".into());
        env.set("RUN", "r1".into());
        let c = container(json!({
            "name": "c", "image": "orrery/runner:dev",
            "command": ["/usr/local/bin/orrery", "run-pod"],
            "args": ["--plan", "$(PLAN)", "--run=$(RUN)", "$$(RUN)", "$(NOPE)", "/etc/plan"],
            "volumeMounts": [{ "name": "plan", "mountPath": "/etc/plan" }]
        }));
        let m = MountMap::new("/pod/root", &c);
        assert_eq!(
            argv(&c, &bin, &env, &m).unwrap(),
            vec![
                "run-pod",
                "--plan",
                "/pod/root/etc/plan/plan.json",
                "--run=r1",
                "$(RUN)",
                "$(NOPE)",
                "/pod/root/etc/plan"
            ]
        );
        // Only args: the image's entrypoint (the binary) gets them.
        let c = container(json!({ "name": "c", "args": ["a"] }));
        assert_eq!(argv(&c, &bin, &env, &m).unwrap(), vec!["a"]);
        // A command the image does not have cannot start.
        let c = container(
            json!({ "name": "c", "image": "orrery/runner", "command": ["sh", "-c", "x"] }),
        );
        let err = argv(&c, &bin, &env, &m).unwrap_err();
        assert!(
            matches!(err, LaunchError::Start(ref m) if m.contains("\"sh\"")),
            "{err}"
        );
    }

    #[test]
    fn process_env_maps_values_and_adds_the_mount_root() {
        let p = pod(json!([]));
        let c = container(
            json!({ "name": "c", "volumeMounts": [{ "name": "v", "mountPath": "/secrets" }] }),
        );
        let m = MountMap::new("/pod/c/root", &c);
        let mut env = Env::default();
        env.set("KEY_FILE", "/secrets/key".into());
        env.set("PATH", "/bin".into());
        let got = process_env(&p, &env, &m);
        let get = |k: &str| got.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("KEY_FILE"), Some("/pod/c/root/secrets/key"));
        assert_eq!(get("PATH"), Some("/bin"));
        assert_eq!(get("HOSTNAME"), Some("p1"));
        assert_eq!(get(MOUNT_ROOT_ENV), Some("/pod/c/root"));
        assert_eq!(get("HOME"), Some("/pod/c/root"));
    }
}
