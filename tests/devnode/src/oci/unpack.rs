//! Applying one layer (a tar) to a root filesystem, as a container runtime does.
//!
//! - An entry whose path or hard-link target names `..` is refused (the whole image is).
//! - Leading `/` and `./` are dropped: every path is relative to the root filesystem.
//! - Every path is resolved inside the root filesystem before anything is written: a symlink
//!   met on the way (one an earlier entry or layer made, absolute or relative) is followed as
//!   if the root filesystem were `/`, `..` stopping at it (as `chroot` would see it), so no entry
//!   can write, link or delete outside the root filesystem. The entry's own last component is
//!   never followed: an existing file, link or (for a non-directory) directory there is replaced.
//! - Whiteouts: `.wh.NAME` deletes `NAME` of the layers below; `.wh..wh..opq` empties its
//!   directory of what the layers below put there (entries of the same layer stay).
//! - Owners are kept when running as root (ignored otherwise), modes always (`& 0o7777`).
//!   Device nodes and FIFOs are skipped (counted in [`UnpackStats::skipped`]); modification
//!   times are not kept.

use std::collections::{HashSet, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use tar::EntryType;

use super::OciError;

const WHITEOUT: &str = ".wh.";
const OPAQUE: &str = ".wh..wh..opq";
/// As Linux's limit on symlinks followed while resolving one path.
const MAX_SYMLINKS: usize = 40;

/// What unpacking wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnpackStats {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub hardlinks: u64,
    pub whiteouts: u64,
    /// Device nodes and FIFOs, not created.
    pub skipped: u64,
    /// Bytes of regular files written.
    pub bytes: u64,
}

impl UnpackStats {
    pub(crate) fn add(&mut self, other: &UnpackStats) {
        self.files += other.files;
        self.dirs += other.dirs;
        self.symlinks += other.symlinks;
        self.hardlinks += other.hardlinks;
        self.whiteouts += other.whiteouts;
        self.skipped += other.skipped;
        self.bytes += other.bytes;
    }
}

/// Applies one uncompressed layer tar read from `reader` to `rootfs` (which must exist).
/// `archive` and `layer` name the layer in errors.
pub fn unpack_layer<R: Read>(
    reader: R,
    rootfs: &Path,
    archive: &Path,
    layer: &str,
) -> Result<UnpackStats, OciError> {
    let mut unpacker = Unpacker {
        root: rootfs,
        archive,
        layer,
        created: HashSet::new(),
        stats: UnpackStats::default(),
    };
    let read_err = |e| OciError::io("reading a layer of", archive, e);
    let mut tar = tar::Archive::new(reader);
    for entry in tar.entries().map_err(read_err)? {
        let mut entry = entry.map_err(read_err)?;
        let raw = entry.path().map_err(read_err)?.into_owned();
        unpacker.entry(&mut entry, &raw)?;
    }
    Ok(unpacker.stats)
}

struct Unpacker<'a> {
    root: &'a Path,
    archive: &'a Path,
    layer: &'a str,
    /// The paths this layer wrote (an opaque whiteout keeps them).
    created: HashSet<PathBuf>,
    stats: UnpackStats,
}

impl Unpacker<'_> {
    fn entry<R: Read>(&mut self, entry: &mut tar::Entry<R>, raw: &Path) -> Result<(), OciError> {
        let rel = self.relative(raw)?;
        let Some(name) = rel.file_name().map(OsStr::to_owned) else {
            return Ok(()); // the root itself (`./`): its mode is the runtime's business
        };
        let parent = self.resolve(rel.parent().unwrap_or(Path::new("")), true, raw)?;
        let name_str = name.to_string_lossy();
        if name_str == OPAQUE {
            self.stats.whiteouts += 1;
            return self.opaque(&parent);
        }
        if let Some(hidden) = name_str.strip_prefix(WHITEOUT) {
            self.stats.whiteouts += 1;
            if hidden.is_empty() || hidden == "." || hidden == ".." {
                return Err(self.unsafe_entry(raw, "is a whiteout of nothing"));
            }
            return remove(&parent.join(hidden));
        }
        let target = parent.join(&name);
        let header = entry.header();
        let kind = header.entry_type();
        let mode = header.mode().unwrap_or(0o644) & 0o7777;
        let owner = (header.uid().ok(), header.gid().ok());
        let mkdirs = |dir: &Path| {
            fs::create_dir_all(dir).map_err(|e| OciError::io("creating directory", dir, e))
        };
        match kind {
            EntryType::Directory => {
                let is_dir = fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir());
                if !is_dir {
                    remove(&target)?;
                    mkdirs(&target)?;
                }
                self.stats.dirs += 1;
            }
            EntryType::Regular | EntryType::Continuous => {
                mkdirs(&parent)?;
                remove(&target)?;
                let mut file = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&target)
                    .map_err(|e| OciError::io("creating file", &target, e))?;
                self.stats.bytes += io::copy(entry, &mut file)
                    .map_err(|e| OciError::io("writing file", &target, e))?;
                self.stats.files += 1;
            }
            EntryType::Symlink => {
                let link = self.link_name(entry, raw)?;
                mkdirs(&parent)?;
                remove(&target)?;
                std::os::unix::fs::symlink(&link, &target)
                    .map_err(|e| OciError::io("creating symlink", &target, e))?;
                self.stats.symlinks += 1;
            }
            EntryType::Link => {
                let link = self.link_name(entry, raw)?;
                let source_rel = self
                    .relative(&link)
                    .map_err(|_| self.unsafe_entry(raw, "is a hard link to a path naming `..`"))?;
                let source = self.resolve(&source_rel, false, raw)?;
                mkdirs(&parent)?;
                remove(&target)?;
                fs::hard_link(&source, &target)
                    .map_err(|e| OciError::io("creating hard link", &target, e))?;
                self.stats.hardlinks += 1;
                self.created.insert(target);
                return Ok(()); // a hard link shares its source's owner and mode
            }
            EntryType::Char | EntryType::Block | EntryType::Fifo => {
                self.stats.skipped += 1;
                return Ok(());
            }
            _ => return Ok(()), // pax/GNU headers are folded into the entries by `tar`
        }
        if let (Some(uid), Some(gid)) = owner {
            set_owner(&target, uid, gid)?;
        }
        if kind != EntryType::Symlink {
            fs::set_permissions(&target, fs::Permissions::from_mode(mode))
                .map_err(|e| OciError::io("setting the mode of", &target, e))?;
        }
        self.created.insert(target);
        Ok(())
    }

    /// The entry's path relative to the root: `/` and `.` dropped, `..` refused.
    fn relative(&self, raw: &Path) -> Result<PathBuf, OciError> {
        let mut rel = PathBuf::new();
        for component in raw.components() {
            match component {
                Component::Normal(c) => rel.push(c),
                Component::RootDir | Component::CurDir => {}
                Component::ParentDir => {
                    return Err(self.unsafe_entry(raw, "names `..` (a path traversal)"));
                }
                Component::Prefix(_) => {
                    return Err(self.unsafe_entry(raw, "has a path prefix"));
                }
            }
        }
        Ok(rel)
    }

    fn link_name<R: Read>(&self, entry: &tar::Entry<R>, raw: &Path) -> Result<PathBuf, OciError> {
        match entry.link_name() {
            Ok(Some(link)) if !link.as_os_str().is_empty() => Ok(link.into_owned()),
            Ok(_) => Err(self.unsafe_entry(raw, "is a link without a target")),
            Err(e) => Err(OciError::io("reading a layer of", self.archive, e)),
        }
    }

    /// `rel` resolved inside the root: symlinks followed as if the root were `/` (the last
    /// component only when `follow_last`), `..` stopping at the root.
    fn resolve(&self, rel: &Path, follow_last: bool, raw: &Path) -> Result<PathBuf, OciError> {
        let mut pending: VecDeque<OsString> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(c) => Some(c.to_owned()),
                _ => None,
            })
            .collect();
        let mut resolved = PathBuf::new();
        let mut followed = 0;
        while let Some(component) = pending.pop_front() {
            if component == ".." {
                resolved.pop();
                continue;
            }
            if component == "." {
                continue;
            }
            let candidate = self.root.join(&resolved).join(&component);
            let is_link = fs::symlink_metadata(&candidate).is_ok_and(|m| m.is_symlink());
            if !is_link || (pending.is_empty() && !follow_last) {
                resolved.push(component);
                continue;
            }
            followed += 1;
            if followed > MAX_SYMLINKS {
                return Err(self.unsafe_entry(raw, "goes through too many symlinks"));
            }
            let target = fs::read_link(&candidate)
                .map_err(|e| OciError::io("reading symlink", &candidate, e))?;
            if target.is_absolute() {
                resolved = PathBuf::new();
            }
            let mut expanded: VecDeque<OsString> = target
                .components()
                .filter_map(|c| match c {
                    Component::Normal(c) => Some(c.to_owned()),
                    Component::ParentDir => Some(OsString::from("..")),
                    _ => None,
                })
                .collect();
            expanded.extend(pending);
            pending = expanded;
        }
        Ok(self.root.join(resolved))
    }

    /// Empties `dir` of what lower layers put there.
    fn opaque(&self, dir: &Path) -> Result<(), OciError> {
        let children = match fs::read_dir(dir) {
            Ok(children) => children,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(OciError::io("reading directory", dir, e)),
        };
        for child in children {
            let child = child.map_err(|e| OciError::io("reading directory", dir, e))?;
            let path = child.path();
            if !self.created.contains(&path) {
                remove(&path)?;
            }
        }
        Ok(())
    }

    fn unsafe_entry(&self, raw: &Path, problem: &'static str) -> OciError {
        OciError::UnsafeEntry {
            path: self.archive.to_path_buf(),
            layer: self.layer.to_owned(),
            entry: raw.to_string_lossy().into_owned(),
            problem,
        }
    }
}

/// Removes whatever is at `path` (never following a symlink there); nothing there is fine.
fn remove(path: &Path) -> Result<(), OciError> {
    let result = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    };
    result.map_err(|e| OciError::io("removing", path, e))
}

/// The entry's owner, when this process may set it (root); otherwise the unpacking user's.
fn set_owner(path: &Path, uid: u64, gid: u64) -> Result<(), OciError> {
    let (Ok(uid), Ok(gid)) = (u32::try_from(uid), u32::try_from(gid)) else {
        return Ok(());
    };
    match std::os::unix::fs::lchown(path, Some(uid), Some(gid)) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Ok(()),
        other => other.map_err(|e| OciError::io("setting the owner of", path, e)),
    }
}

#[cfg(test)]
#[path = "unpack_tests.rs"]
pub(crate) mod tests;
