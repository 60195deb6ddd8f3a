//! OCI images on one machine without a daemon: read an image archive, unpack it into a root
//! filesystem, write a runc bundle for it and run it with the `runc` binary.
//!
//! - [`OciArchive`]: an `oci-archive` (a tar of an OCI image layout, as `buildah push …
//!   oci-archive:FILE` writes): `index.json` → manifest → config and layers, every blob checked
//!   against its sha256 digest. [`ImageConfig`] is the config's `User`, `Entrypoint`, `Cmd`,
//!   `Env`, `WorkingDir` and labels.
//! - [`unpack_layer`] (and [`OciArchive::unpack`]): layers applied in order, whiteouts (`.wh.`,
//!   opaque `.wh..wh..opq`) honoured; an entry naming `..` is refused, and every path is
//!   resolved inside the root filesystem, so a symlink (absolute or relative) in the image can
//!   never make a later entry write outside it.
//! - [`BundleSpec`]: `config.json` for runtime spec 1.x: no `process.rlimits` (runc cannot set
//!   them on these machines, see `shared/reference/devnode.md`), no capabilities,
//!   `noNewPrivileges`, pid/ipc/uts/mount/network namespaces (the network new or an existing
//!   one), the usual `/proc`, `/dev`, `/sys` mounts plus the caller's binds and tmpfs.
//! - [`Runc`]: `runc run`/`kill`/`delete` with a private state root.
//!
//! Needs root for runc (and for unpacking an image whose files are owned by several users).

mod archive;
mod bundle;
mod runc;
mod unpack;

use std::path::{Path, PathBuf};

pub use archive::{ImageConfig, OciArchive};
pub use bundle::{BindMount, BundleSpec, Network, TmpfsMount};
pub use runc::{Output, RunOutcome, Runc, RuncSignal};
pub use unpack::{UnpackStats, unpack_layer};

/// What went wrong with an image, a bundle or a container: what, where, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {what} is not valid JSON of its kind: {source}", path.display())]
    Json {
        what: String,
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "{}: not an OCI image archive: {problem}; write one with `buildah push IMAGE oci-archive:FILE`",
        path.display()
    )]
    Layout { path: PathBuf, problem: String },
    #[error(
        "{}: blob {digest} does not match its digest (got sha256:{actual}); the archive is corrupt or was altered, rebuild it",
        path.display()
    )]
    Digest {
        path: PathBuf,
        digest: String,
        actual: String,
    },
    #[error(
        "{}: layer {layer}: entry {entry:?} {problem}; refusing to unpack this image",
        path.display()
    )]
    UnsafeEntry {
        path: PathBuf,
        layer: String,
        entry: String,
        problem: &'static str,
    },
    #[error(
        "runc not found (looked for {looked}): apt-get install runc, or set ORRERY_RUNC to its path"
    )]
    RuncNotFound { looked: String },
    #[error("runc {action} {id} failed ({status}): {stderr}")]
    Runc {
        action: &'static str,
        id: String,
        status: String,
        stderr: String,
    },
    #[error(
        "container {id} did not exit within {timeout:?}; it was killed (its output: {})",
        output.display()
    )]
    Timeout {
        id: String,
        timeout: std::time::Duration,
        output: PathBuf,
    },
}

impl OciError {
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        OciError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}
