//! Volumes materialised into the pod directory (`<pod dir>/volumes/<name>`), and each
//! container's mount root with its volume mounts as symlinks (see [`crate::launch`]).
//!
//! Supported: `secret`, `configMap`, `emptyDir`, `downwardAPI` and `projected` (secret,
//! configMap, downwardAPI and serviceAccountToken sources). `readOnly` is not enforced; files
//! get their `mode`/`defaultMode` (0644 by default). Later changes to a Secret or ConfigMap do not
//! reach a running pod.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::core::v1::{
    Container, DownwardAPIVolumeFile, KeyToPath, Pod, Volume, VolumeMount,
};
use kube::ResourceExt;

use crate::PodExecutorError;
use crate::launch::{Env, LaunchError, MountMap, PodAddresses, field_value};
use crate::objects::{Objects, token_key};

/// File mode when neither `mode` nor `defaultMode` says otherwise.
pub const DEFAULT_MODE: i32 = 0o644;

/// An error while preparing a pod's files.
#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    /// A missing object or key, or an unsupported volume: the container waits.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// The file system refused.
    #[error(transparent)]
    Io(#[from] PodExecutorError),
}

/// Writes every volume of `pod` under `dir/volumes/`, returning volume name → directory.
pub fn materialise(
    pod: &Pod,
    objects: &Objects,
    addresses: &PodAddresses,
    dir: &Path,
) -> Result<BTreeMap<String, PathBuf>, VolumeError> {
    let mut out = BTreeMap::new();
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.clone());
    for v in volumes.iter().flatten() {
        let vdir = dir.join("volumes").join(&v.name);
        // A restart of the executor's preparation rewrites the volume from scratch.
        if vdir.exists() {
            std::fs::remove_dir_all(&vdir)
                .map_err(|e| PodExecutorError::io("removing", &vdir, e))?;
        }
        create_dir(&vdir)?;
        let files = volume_files(pod, v, objects, addresses)?;
        for (rel, (bytes, mode)) in files {
            write_file(&vdir, &rel, &bytes, mode)?;
        }
        out.insert(v.name.clone(), vdir);
    }
    Ok(out)
}

/// The files of one volume: relative path → (content, mode).
type Files = BTreeMap<String, (Vec<u8>, i32)>;

fn volume_files(
    pod: &Pod,
    v: &Volume,
    objects: &Objects,
    at: &PodAddresses,
) -> Result<Files, LaunchError> {
    let ns = pod.namespace().unwrap_or_default();
    let mut files = Files::new();
    if v.empty_dir.is_some() {
        return Ok(files);
    }
    if let Some(s) = &v.secret {
        let name = s.secret_name.clone().unwrap_or_default();
        let mode = s.default_mode.unwrap_or(DEFAULT_MODE);
        add_keys(
            &mut files,
            ("Secret", &ns, &name),
            objects.secrets.get(&name),
            s.items.as_deref(),
            s.optional,
            mode,
        )?;
        return Ok(files);
    }
    if let Some(cm) = &v.config_map {
        let mode = cm.default_mode.unwrap_or(DEFAULT_MODE);
        add_keys(
            &mut files,
            ("ConfigMap", &ns, &cm.name),
            objects.config_maps.get(&cm.name),
            cm.items.as_deref(),
            cm.optional,
            mode,
        )?;
        return Ok(files);
    }
    if let Some(d) = &v.downward_api {
        let mode = d.default_mode.unwrap_or(DEFAULT_MODE);
        add_fields(&mut files, pod, d.items.as_deref(), mode, at)?;
        return Ok(files);
    }
    if let Some(p) = &v.projected {
        let mode = p.default_mode.unwrap_or(DEFAULT_MODE);
        for source in p.sources.iter().flatten() {
            if let Some(s) = &source.secret {
                add_keys(
                    &mut files,
                    ("Secret", &ns, &s.name),
                    objects.secrets.get(&s.name),
                    s.items.as_deref(),
                    s.optional,
                    mode,
                )?;
            } else if let Some(cm) = &source.config_map {
                add_keys(
                    &mut files,
                    ("ConfigMap", &ns, &cm.name),
                    objects.config_maps.get(&cm.name),
                    cm.items.as_deref(),
                    cm.optional,
                    mode,
                )?;
            } else if let Some(d) = &source.downward_api {
                add_fields(&mut files, pod, d.items.as_deref(), mode, at)?;
            } else if let Some(t) = &source.service_account_token {
                let key = token_key(t.audience.as_deref(), t.expiration_seconds);
                let token = objects.tokens.get(&key).ok_or_else(|| {
                    LaunchError::Config(format!(
                        "volume {}: no service-account token was issued",
                        v.name
                    ))
                })?;
                files.insert(t.path.clone(), (token.clone().into_bytes(), mode));
            } else {
                return Err(LaunchError::Config(format!(
                    "volume {}: only secret, configMap, downwardAPI and serviceAccountToken projections are supported by the pod executor",
                    v.name
                )));
            }
        }
        return Ok(files);
    }
    Err(LaunchError::Config(format!(
        "volume {}: only secret, configMap, emptyDir, downwardAPI and projected volumes are supported by the pod executor",
        v.name
    )))
}

fn add_keys(
    files: &mut Files,
    (kind, ns, name): (&str, &str, &str),
    data: Option<&BTreeMap<String, Vec<u8>>>,
    items: Option<&[KeyToPath]>,
    optional: Option<bool>,
    mode: i32,
) -> Result<(), LaunchError> {
    let optional = optional == Some(true);
    let Some(data) = data else {
        return if optional {
            Ok(())
        } else {
            Err(LaunchError::Config(format!("{kind} {ns}/{name} not found")))
        };
    };
    match items {
        Some(items) => {
            for item in items {
                match data.get(&item.key) {
                    Some(bytes) => {
                        files.insert(
                            item.path.clone(),
                            (bytes.clone(), item.mode.unwrap_or(mode)),
                        );
                    }
                    None if optional => {}
                    None => {
                        return Err(LaunchError::Config(format!(
                            "couldn't find key {} in {kind} {ns}/{name}",
                            item.key
                        )));
                    }
                }
            }
        }
        None => {
            for (k, bytes) in data {
                files.insert(k.clone(), (bytes.clone(), mode));
            }
        }
    }
    Ok(())
}

fn add_fields(
    files: &mut Files,
    pod: &Pod,
    items: Option<&[DownwardAPIVolumeFile]>,
    mode: i32,
    at: &PodAddresses,
) -> Result<(), LaunchError> {
    for item in items.into_iter().flatten() {
        let field = item.field_ref.as_ref().ok_or_else(|| {
            LaunchError::Config(format!(
                "downwardAPI file {}: only fieldRef is supported by the pod executor",
                item.path
            ))
        })?;
        let value = field_value(pod, &field.field_path, at)?;
        files.insert(
            item.path.clone(),
            (value.into_bytes(), item.mode.unwrap_or(mode)),
        );
    }
    Ok(())
}

fn create_dir(dir: &Path) -> Result<(), PodExecutorError> {
    std::fs::create_dir_all(dir).map_err(|e| PodExecutorError::io("creating", dir, e))
}

fn write_file(dir: &Path, rel: &str, bytes: &[u8], mode: i32) -> Result<(), VolumeError> {
    let rel_path = Path::new(rel);
    if rel_path
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(LaunchError::Config(format!(
            "volume file path {rel:?} must be relative and must not contain '..'"
        ))
        .into());
    }
    let path = dir.join(rel_path);
    if let Some(parent) = path.parent() {
        create_dir(parent)?;
    }
    std::fs::write(&path, bytes).map_err(|e| PodExecutorError::io("writing", &path, e))?;
    let mode = u32::try_from(mode & 0o777).unwrap_or(0o644);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| PodExecutorError::io("setting the mode of", &path, e))?;
    Ok(())
}

/// The volume directory a `volumeMount` names and its `subPath` (or expanded `subPathExpr`;
/// empty for none), refused unless relative and free of `..`. The process and container modes
/// both mount from here.
pub fn mount_source<'a>(
    m: &VolumeMount,
    volumes: &'a BTreeMap<String, PathBuf>,
    env: &Env,
) -> Result<(&'a PathBuf, String), LaunchError> {
    let vdir = volumes.get(&m.name).ok_or_else(|| {
        LaunchError::Config(format!(
            "volumeMount {}: the pod has no volume {:?}",
            m.mount_path, m.name
        ))
    })?;
    let sub = match (&m.sub_path, &m.sub_path_expr) {
        (Some(s), _) if !s.is_empty() => s.clone(),
        (_, Some(e)) if !e.is_empty() => env.expand(e),
        _ => String::new(),
    };
    if Path::new(&sub)
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(LaunchError::Config(format!(
            "volumeMount {}: subPath {sub:?} must be relative and must not contain '..'",
            m.mount_path
        )));
    }
    Ok((vdir, sub))
}

/// Creates `container`'s mount root: each volume mount as a symlink at `<root><mountPath>`
/// (to the volume directory, or its `subPath`/`subPathExpr`), and an empty termination-message
/// file. `env` expands `subPathExpr`.
pub fn mount_container(
    container: &Container,
    volumes: &BTreeMap<String, PathBuf>,
    mounts: &MountMap,
    env: &Env,
    termination_path: &str,
) -> Result<(), VolumeError> {
    let root = mounts.root();
    if root.exists() {
        std::fs::remove_dir_all(root).map_err(|e| PodExecutorError::io("removing", root, e))?;
    }
    create_dir(root)?;
    let mut vm: Vec<_> = container.volume_mounts.iter().flatten().collect();
    vm.sort_by_key(|m| m.mount_path.len());
    for m in vm {
        let (vdir, sub) = mount_source(m, volumes, env)?;
        let target = if sub.is_empty() {
            vdir.clone()
        } else {
            let t = vdir.join(&sub);
            if !t.exists() {
                // The kubelet creates a missing subPath as a directory.
                create_dir(&t)?;
            }
            t
        };
        let link = mounts.host_path(&m.mount_path);
        if let Some(parent) = link.parent() {
            create_dir(parent)?;
        }
        std::os::unix::fs::symlink(&target, &link)
            .map_err(|e| PodExecutorError::io("linking", &link, e))?;
    }
    let msg = mounts.host_path(termination_path);
    if let Some(parent) = msg.parent() {
        create_dir(parent)?;
    }
    std::fs::write(&msg, b"").map_err(|e| PodExecutorError::io("creating", &msg, e))?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "orrery-volumes-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
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
            "kube-root-ca.crt".into(),
            [("ca.crt".into(), b"CA".to_vec())].into(),
        );
        o.tokens.insert((String::new(), 3607), "tok".into());
        o
    }

    fn at() -> PodAddresses {
        PodAddresses {
            pod_ip: "127.0.0.1".into(),
            host_ip: "127.0.0.1".into(),
            node_name: "n".into(),
        }
    }

    fn pod(volumes: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": { "name": "p", "namespace": "team", "labels": { "a": "1" } },
            "spec": { "containers": [], "volumes": volumes }
        }))
        .unwrap()
    }

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap()
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn secret_config_map_downward_api_and_projected_volumes_become_files() {
        let dir = scratch("kinds");
        let p = pod(json!([
            { "name": "all-keys", "secret": { "secretName": "creds" } },
            { "name": "one-key", "secret": { "secretName": "creds", "defaultMode": 0o400,
                "items": [{ "key": "api-key", "path": "nested/key" }] } },
            { "name": "scratch", "emptyDir": {} },
            { "name": "info", "downwardAPI": { "items": [
                { "path": "name", "fieldRef": { "fieldPath": "metadata.name" } },
                { "path": "labels", "fieldRef": { "fieldPath": "metadata.labels" } }
            ] } },
            { "name": "kube-api-access", "projected": { "defaultMode": 0o440, "sources": [
                { "serviceAccountToken": { "path": "token", "expirationSeconds": 3607 } },
                { "configMap": { "name": "kube-root-ca.crt", "items": [{ "key": "ca.crt", "path": "ca.crt" }] } },
                { "downwardAPI": { "items": [{ "path": "namespace", "fieldRef": { "fieldPath": "metadata.namespace" } }] } }
            ] } }
        ]));
        let vols = materialise(&p, &objects(), &at(), &dir).unwrap();
        assert_eq!(read(&vols["all-keys"].join("api-key")), "s3cret");
        assert_eq!(read(&vols["all-keys"].join("user")), "u");
        assert_eq!(mode(&vols["all-keys"].join("user")), 0o644);
        assert_eq!(read(&vols["one-key"].join("nested/key")), "s3cret");
        assert_eq!(mode(&vols["one-key"].join("nested/key")), 0o400);
        assert!(!vols["one-key"].join("user").exists());
        assert!(vols["scratch"].is_dir());
        assert_eq!(read(&vols["info"].join("name")), "p");
        assert_eq!(read(&vols["info"].join("labels")), "a=\"1\"");
        let sa = &vols["kube-api-access"];
        assert_eq!(read(&sa.join("token")), "tok");
        assert_eq!(mode(&sa.join("token")), 0o440);
        assert_eq!(read(&sa.join("ca.crt")), "CA");
        assert_eq!(read(&sa.join("namespace")), "team");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_sources_and_unsupported_volumes_are_config_errors() {
        let dir = scratch("errors");
        let cases = [
            (
                json!({ "name": "v", "secret": { "secretName": "nope" } }),
                Some("Secret team/nope not found"),
            ),
            (
                json!({ "name": "v", "secret": { "secretName": "nope", "optional": true } }),
                None,
            ),
            (
                json!({ "name": "v", "configMap": { "name": "kube-root-ca.crt", "items": [{ "key": "x", "path": "x" }] } }),
                Some("couldn't find key x in ConfigMap team/kube-root-ca.crt"),
            ),
            (
                json!({ "name": "v", "hostPath": { "path": "/etc" } }),
                Some(
                    "volume v: only secret, configMap, emptyDir, downwardAPI and projected volumes are supported by the pod executor",
                ),
            ),
            (
                json!({ "name": "v", "secret": { "secretName": "creds", "items": [{ "key": "user", "path": "../escape" }] } }),
                Some("volume file path \"../escape\" must be relative and must not contain '..'"),
            ),
        ];
        for (vol, want) in cases {
            let got = materialise(&pod(json!([vol])), &objects(), &at(), &dir);
            match (want, got) {
                (None, Ok(_)) => {}
                (Some(msg), Err(VolumeError::Launch(LaunchError::Config(got)))) => {
                    assert_eq!(got, msg)
                }
                (want, got) => panic!("{vol}: want {want:?}, got {got:?}"),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn mounts_are_symlinks_under_the_mount_root() {
        let dir = scratch("mounts");
        let p = pod(json!([
            { "name": "creds", "secret": { "secretName": "creds" } },
            { "name": "work", "emptyDir": {} }
        ]));
        let vols = materialise(&p, &objects(), &at(), &dir).unwrap();
        let c: Container = serde_json::from_value(json!({
            "name": "c",
            "volumeMounts": [
                { "name": "creds", "mountPath": "/var/run/creds" },
                { "name": "creds", "mountPath": "/etc/key", "subPath": "api-key" },
                { "name": "work", "mountPath": "/work", "subPathExpr": "$(POD)" }
            ]
        }))
        .unwrap();
        let root = dir.join("containers/c/root");
        let mounts = MountMap::new(&root, &c);
        let mut env = Env::default();
        env.set("POD", "p".into());
        mount_container(&c, &vols, &mounts, &env, "/dev/termination-log").unwrap();
        assert_eq!(read(&root.join("var/run/creds/api-key")), "s3cret");
        assert_eq!(read(&root.join("etc/key")), "s3cret");
        std::fs::write(root.join("work/out"), "x").unwrap();
        assert_eq!(read(&vols["work"].join("p/out")), "x");
        assert_eq!(read(&root.join("dev/termination-log")), "");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
