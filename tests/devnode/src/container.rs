//! Container mode: a pod's container run from an OCI image archive with `runc` instead of as a
//! local process (see [`crate::oci`] for the archive, the bundle and runc).
//!
//! An [`ExecutorConfig`](crate::ExecutorConfig) with an images directory runs an image whose
//! repository's last component is `NAME` (`localhost/orrery/runner:dev` → `runner`) from
//! `<images dir>/NAME.tar` when that file exists; any other image runs in process mode.
//!
//! The bundle is made from the Pod as the kubelet would make the container:
//!
//! - argv: `command` replaces the image's `Entrypoint`, `args` its `Cmd` (a `command` without
//!   `args` drops the `Cmd`), each expanded with `$(VAR)` against the container env;
//! - env: the image's `Env`, then the container's (`env`/`envFrom`, `KUBERNETES_SERVICE_*`),
//!   then `HOSTNAME` when neither sets it;
//! - user: `runAsUser`/`runAsGroup` (container's over the pod's) else the image's `User`;
//!   supplementary groups `fsGroup` and `supplementalGroups`;
//! - `readOnlyRootFilesystem` → a read-only root;
//! - every `volumeMount` a bind mount of the volume's directory (or its `subPath`), `readOnly`
//!   honoured; the termination-message file bound at `terminationMessagePath`;
//! - the host's network namespace (pods share the host network in this mode) or a given one.
//!
//! With a pod `fsGroup`, volume files are given that group and group read (group write for
//! `emptyDir`), as the kubelet's volume ownership does: a `0400` Secret file becomes `0440`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod};
use kube::ResourceExt;

use crate::images::repository;
use crate::launch::{Env, LaunchError, termination_message_path};
use crate::oci::{BindMount, BundleSpec, ImageConfig, OciArchive, OciError, Runc};

/// Names the images directory for the `orrery-devnode` binary (`--images-dir`).
pub const IMAGES_DIR_ENV: &str = "ORRERY_IMAGES_DIR";

/// Why container mode cannot run an image.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    #[error("image archive {}: {source}", archive.display())]
    Image {
        archive: PathBuf,
        #[source]
        source: OciError,
    },
    #[error(
        "container mode: {source}; install runc or run without an images directory (process mode)"
    )]
    Runc {
        #[source]
        source: OciError,
    },
    #[error("container mode: {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("container mode: unpacking an image was interrupted (a thread panicked); retry")]
    Poisoned,
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ContainerError {
    let path = path.to_path_buf();
    move |source| ContainerError::Io {
        action,
        path,
        source,
    }
}

/// Container mode's machinery: where the image archives are, the unpacked root filesystems
/// (one per manifest digest, under the work directory) and runc with its private state.
#[derive(Debug)]
pub struct ContainerRuntime {
    images_dir: PathBuf,
    cache_dir: PathBuf,
    state_dir: PathBuf,
    runc: Runc,
    unpacking: std::sync::Mutex<()>,
}

/// An image ready to run: its unpacked root filesystem and its config.
#[derive(Debug, Clone)]
pub struct PreparedImage {
    pub rootfs: PathBuf,
    pub config: ImageConfig,
    pub digest: String,
}

impl ContainerRuntime {
    /// Archives from `images_dir`; root filesystems and runc state under `work_dir`.
    pub fn new(images_dir: &Path, work_dir: &Path) -> Result<ContainerRuntime, ContainerError> {
        let state_dir = work_dir.join("runc");
        let runc = Runc::locate(&state_dir).map_err(|source| ContainerError::Runc { source })?;
        Ok(ContainerRuntime {
            images_dir: images_dir.to_path_buf(),
            cache_dir: work_dir.join("images"),
            state_dir,
            runc,
            unpacking: std::sync::Mutex::new(()),
        })
    }

    /// The archive `image` runs from, if it has one (else process mode).
    pub fn archive_for(&self, image: &str) -> Option<PathBuf> {
        archive_for(&self.images_dir, image)
    }

    pub fn runc(&self) -> &Runc {
        &self.runc
    }

    /// runc's state directory (`runc --root`).
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// Opens `archive` and unpacks it unless its manifest digest was unpacked before.
    /// Blocking (it may unpack a whole image).
    pub fn prepare(&self, archive: &Path) -> Result<PreparedImage, ContainerError> {
        let image = |source| ContainerError::Image {
            archive: archive.to_path_buf(),
            source,
        };
        let opened = OciArchive::open(archive).map_err(image)?;
        let digest = opened.manifest_digest().to_owned();
        let key = digest.replace(':', "-");
        let dir = self.cache_dir.join(&key);
        let rootfs = dir.join("rootfs");
        let done = dir.join("unpacked");
        let _guard = self
            .unpacking
            .lock()
            .map_err(|_| ContainerError::Poisoned)?;
        if !done.exists() {
            if dir.exists() {
                std::fs::remove_dir_all(&dir).map_err(io_err("removing", &dir))?;
            }
            opened.unpack(&rootfs).map_err(image)?;
            std::fs::write(&done, digest.as_bytes()).map_err(io_err("writing", &done))?;
        }
        Ok(PreparedImage {
            rootfs,
            config: opened.config().clone(),
            digest,
        })
    }

    /// The ids of the containers runc knows in this runtime's state directory.
    pub fn containers(&self) -> Vec<String> {
        std::fs::read_dir(&self.state_dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Kills and deletes the containers an earlier executor with `work_dir` left behind (one
    /// that was killed before its shutdown: its `runc run` processes died with it, but the
    /// containers did not). Call it before reusing or removing such a work directory: once its
    /// runc state is gone, nothing can stop them. Returns the ids it could not delete.
    pub fn clear_leftovers(work_dir: &Path) -> Result<Vec<String>, ContainerError> {
        if !work_dir.join("runc").is_dir() {
            return Ok(Vec::new());
        }
        Ok(ContainerRuntime::new(work_dir, work_dir)?.remove_all())
    }

    /// Kills and deletes every container left (executor shutdown). Returns what could not
    /// be deleted.
    pub fn remove_all(&self) -> Vec<String> {
        let mut failed = Vec::new();
        for id in self.containers() {
            let _ = self.runc.kill(&id, crate::oci::RuncSignal::Kill);
            if let Err(e) = self.runc.delete(&id) {
                failed.push(format!("{id}: {e}"));
            }
        }
        failed
    }
}

/// Kills and deletes a runc container when dropped: a pod worker that ends without stopping
/// its containers (the executor dropped without [`crate::PodExecutor::shutdown`], its runtime
/// gone) leaves none behind. Killing `runc run` alone would not stop the container.
#[derive(Debug)]
pub struct RuncGuard {
    runtime: std::sync::Arc<ContainerRuntime>,
    id: String,
}

impl RuncGuard {
    pub fn new(runtime: std::sync::Arc<ContainerRuntime>, id: String) -> RuncGuard {
        RuncGuard { runtime, id }
    }

    /// The container's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Drop for RuncGuard {
    fn drop(&mut self) {
        // Both fail harmlessly when the container has ended and was deleted already.
        let _ = self
            .runtime
            .runc
            .kill(&self.id, crate::oci::RuncSignal::Kill);
        let _ = self.runtime.runc.delete(&self.id);
    }
}

/// The network namespace a pod's containers join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodNetwork {
    /// The host's (no new namespace): every pod shares the host network.
    Host,
    /// An existing namespace, e.g. `/var/run/netns/<pod>`.
    Path(PathBuf),
}

/// The image archive `<dir>/<name>.tar` for `image`, if there is one.
pub fn archive_for(dir: &Path, image: &str) -> Option<PathBuf> {
    let repo = repository(image);
    let name = repo.rsplit('/').next().filter(|n| !n.is_empty())?;
    let path = dir.join(format!("{name}.tar"));
    path.is_file().then_some(path)
}

/// A container id for runc: unique per pod UID and container name.
pub fn container_id(pod: &Pod, container: &str) -> String {
    let uid = pod.uid().unwrap_or_else(|| pod.name_any());
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("orrery-{}-{}", clean(&uid), clean(container))
}

/// The container's argv with Kubernetes' semantics (see the module docs).
pub fn container_args(
    c: &Container,
    image: &ImageConfig,
    env: &Env,
) -> Result<Vec<String>, LaunchError> {
    let command = c.command.as_ref().filter(|v| !v.is_empty());
    let args = c.args.as_ref().filter(|v| !v.is_empty());
    let mut argv: Vec<String> = match command {
        Some(cmd) => cmd.iter().map(|a| env.expand(a)).collect(),
        None => image.entrypoint.clone(),
    };
    match (command, args) {
        (_, Some(args)) => argv.extend(args.iter().map(|a| env.expand(a))),
        (Some(_), None) => {}
        (None, None) => argv.extend(image.cmd.iter().cloned()),
    }
    if argv.is_empty() {
        return Err(LaunchError::Start(format!(
            "container {}: neither the pod nor image {:?} says what to run (no command, args, Entrypoint or Cmd)",
            c.name,
            c.image.clone().unwrap_or_default()
        )));
    }
    Ok(argv)
}

/// `NAME=value` entries: the image's env, the container's over it, `HOSTNAME` by default.
pub fn container_env(pod: &Pod, image: &ImageConfig, env: &Env) -> Vec<String> {
    let mut out = Env::default();
    for entry in &image.env {
        let (k, v) = entry.split_once('=').unwrap_or((entry.as_str(), ""));
        out.set(k, v.to_owned());
    }
    for (k, v) in env.vars() {
        out.set(k, v.clone());
    }
    let hostname = pod
        .spec
        .as_ref()
        .and_then(|s| s.hostname.clone())
        .unwrap_or_else(|| pod.name_any());
    out.set_default("HOSTNAME", hostname);
    out.vars().iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// `(uid, gid, supplementary gids)` per the security contexts, else the image's user.
pub fn container_user(
    pod: &Pod,
    c: &Container,
    image: &ImageConfig,
) -> Result<(u32, u32, Vec<u32>), LaunchError> {
    let psc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let csc = c.security_context.as_ref();
    let id = |v: Option<i64>, what: &str| -> Result<Option<u32>, LaunchError> {
        v.map(|v| {
            u32::try_from(v).map_err(|_| {
                LaunchError::Start(format!(
                    "container {}: {what} {v} is not a valid id",
                    c.name
                ))
            })
        })
        .transpose()
    };
    let uid = id(
        csc.and_then(|s| s.run_as_user)
            .or_else(|| psc.and_then(|s| s.run_as_user)),
        "runAsUser",
    )?;
    let gid = id(
        csc.and_then(|s| s.run_as_group)
            .or_else(|| psc.and_then(|s| s.run_as_group)),
        "runAsGroup",
    )?;
    let from_image = image.numeric_user();
    let (uid, gid) = match (uid, gid, from_image) {
        (Some(u), Some(g), _) => (u, g),
        (Some(u), None, Some((_, g))) => (u, g),
        (Some(u), None, None) => (u, 0),
        (None, g, Some((iu, ig))) => (iu, g.unwrap_or(ig)),
        (None, _, None) => {
            return Err(LaunchError::Start(format!(
                "container {}: image user {:?} is a name, which this node cannot look up; set securityContext.runAsUser",
                c.name, image.user
            )));
        }
    };
    let mut groups = Vec::new();
    if let Some(fs_group) = id(psc.and_then(|s| s.fs_group), "fsGroup")? {
        groups.push(fs_group);
    }
    for g in psc
        .and_then(|s| s.supplemental_groups.clone())
        .iter()
        .flatten()
    {
        if let Some(g) = id(Some(*g), "supplementalGroups")?
            && !groups.contains(&g)
        {
            groups.push(g);
        }
    }
    Ok((uid, gid, groups))
}

/// The bind mounts: every `volumeMount` (its volume's directory, or a simple `subPath` in
/// it) and the termination-message file `termination_file` at `terminationMessagePath`.
pub fn container_binds(
    c: &Container,
    volumes: &BTreeMap<String, PathBuf>,
    env: &Env,
    termination_file: &Path,
) -> Result<Vec<BindMount>, LaunchError> {
    let mut binds = Vec::new();
    let mut mounts: Vec<_> = c.volume_mounts.iter().flatten().collect();
    mounts.sort_by_key(|m| m.mount_path.len());
    for m in mounts {
        let (vdir, sub) = crate::volumes::mount_source(m, volumes, env)?;
        let source = if sub.is_empty() {
            vdir.clone()
        } else {
            vdir.join(&sub)
        };
        binds.push(BindMount {
            source,
            destination: m.mount_path.clone(),
            read_only: m.read_only == Some(true),
        });
    }
    binds.push(BindMount {
        source: termination_file.to_path_buf(),
        destination: termination_message_path(c),
        read_only: false,
    });
    Ok(binds)
}

/// The whole bundle spec for container `c` of `pod` from `image`.
pub fn bundle_spec(
    pod: &Pod,
    c: &Container,
    image: &ImageConfig,
    env: &Env,
    volumes: &BTreeMap<String, PathBuf>,
    termination_file: &Path,
    network: &PodNetwork,
) -> Result<BundleSpec, LaunchError> {
    let (uid, gid, groups) = container_user(pod, c, image)?;
    let mut spec = BundleSpec::new(container_args(c, image, env)?, uid, gid);
    spec.env = container_env(pod, image, env);
    spec.additional_gids = groups;
    spec.cwd = c
        .working_dir
        .clone()
        .filter(|w| !w.is_empty())
        .unwrap_or_else(|| image.cwd().to_owned());
    spec.hostname = pod
        .spec
        .as_ref()
        .and_then(|s| s.hostname.clone())
        .unwrap_or_else(|| pod.name_any());
    spec.readonly_root = c
        .security_context
        .as_ref()
        .and_then(|s| s.read_only_root_filesystem)
        == Some(true);
    spec.network = match network {
        PodNetwork::Host => crate::oci::Network::Host,
        PodNetwork::Path(p) => crate::oci::Network::Path(p.clone()),
    };
    spec.binds = container_binds(c, volumes, env, termination_file)?;
    Ok(spec)
}

/// Applies the pod's `fsGroup` to its volume directories like the kubelet: group `fs_group`
/// on every file and directory, group read (and search on directories) for all, group write
/// for `writable` volumes (`emptyDir`), setgid on directories.
pub fn apply_fs_group(dir: &Path, fs_group: u32, writable: bool) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    std::os::unix::fs::lchown(dir, None, Some(fs_group))?;
    let mut mask = if writable { 0o060 } else { 0o040 };
    if meta.is_dir() {
        mask |= 0o2010;
    }
    let mode = meta.permissions().mode() & 0o7777;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | mask))?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(dir)? {
            apply_fs_group(&entry?.path(), fs_group, writable)?;
        }
    }
    Ok(())
}

/// Copies the root filesystem `from` to `to` (modes, owners and symlinks kept; hard links
/// become copies; device nodes, sockets and fifos are left out): the private root of a
/// container whose root is writable, so it never writes into the shared unpacked image.
pub fn copy_rootfs(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(from)?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)?;
    } else if kind.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_rootfs(&entry.path(), &to.join(entry.file_name()))?;
        }
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
    } else if kind.is_file() {
        std::fs::copy(from, to)?;
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
    } else {
        return Ok(());
    }
    std::os::unix::fs::lchown(to, Some(meta.uid()), Some(meta.gid()))
}

#[cfg(test)]
#[path = "container_tests.rs"]
mod tests;
