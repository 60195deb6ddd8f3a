#![allow(clippy::expect_used, clippy::panic)]
use super::*;
use std::os::unix::fs::MetadataExt;

/// A scratch directory under the temp dir, removed when dropped.
pub(crate) struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("orrery-oci-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    Scratch(dir)
}

/// One tar entry, its name and link name written as raw bytes so that a test can make the
/// entries a hostile image would have (the `tar` builder refuses `..`).
pub(crate) enum E<'a> {
    Dir(&'a str, u32),
    File(&'a str, u32, &'a [u8]),
    Symlink(&'a str, &'a str),
    Hardlink(&'a str, &'a str),
    Fifo(&'a str),
}

pub(crate) fn layer(entries: &[E<'_>]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for entry in entries {
        let mut header = tar::Header::new_old();
        let (name, kind, mode, link, data): (&str, EntryType, u32, Option<&str>, &[u8]) =
            match entry {
                E::Dir(name, mode) => (name, EntryType::Directory, *mode, None, b""),
                E::File(name, mode, data) => (name, EntryType::Regular, *mode, None, data),
                E::Symlink(name, to) => (name, EntryType::Symlink, 0o777, Some(*to), b""),
                E::Hardlink(name, to) => (name, EntryType::Link, 0o644, Some(*to), b""),
                E::Fifo(name) => (name, EntryType::Fifo, 0o644, None, b""),
            };
        let old = header.as_old_mut();
        old.name[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(link) = link {
            old.linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
        header.set_entry_type(kind);
        header.set_mode(mode);
        header.set_uid(0);
        header.set_gid(0);
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder.append(&header, data).expect("append");
    }
    builder.into_inner().expect("tar")
}

fn apply(root: &Path, entries: &[E<'_>]) -> Result<UnpackStats, OciError> {
    unpack_layer(
        &layer(entries)[..],
        root,
        Path::new("test.tar"),
        "sha256:test",
    )
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).expect("metadata").mode() & 0o7777
}

#[test]
fn files_directories_and_links_are_written_with_their_modes() {
    let base = scratch("plain");
    let root = base.join("rootfs");
    fs::create_dir_all(&root).expect("root");
    let stats = apply(
        &root,
        &[
            E::Dir("usr/", 0o755),
            E::Dir("usr/local/bin/", 0o755),
            E::File("usr/local/bin/orrery", 0o755, b"\x7fELF"),
            E::File(
                "./etc/passwd",
                0o644,
                b"nonroot:x:65532:65532::/:/nologin\n",
            ),
            E::Dir("/tmp/", 0o1777),
            E::Symlink("bin", "usr/local/bin"),
            E::Hardlink("usr/local/bin/orrery2", "usr/local/bin/orrery"),
            E::Fifo("run.fifo"),
        ],
    )
    .expect("unpack");
    assert_eq!(
        fs::read(root.join("usr/local/bin/orrery")).expect("read"),
        b"\x7fELF"
    );
    assert_eq!(mode(&root.join("usr/local/bin/orrery")), 0o755);
    assert_eq!(mode(&root.join("etc/passwd")), 0o644);
    assert_eq!(mode(&root.join("tmp")), 0o1777);
    assert_eq!(
        fs::read_link(root.join("bin")).expect("link"),
        Path::new("usr/local/bin")
    );
    let a = fs::metadata(root.join("usr/local/bin/orrery")).expect("a");
    let b = fs::metadata(root.join("usr/local/bin/orrery2")).expect("b");
    assert_eq!(a.ino(), b.ino(), "a hard link shares the inode");
    assert!(!root.join("run.fifo").exists(), "FIFOs are not created");
    assert_eq!(
        stats,
        UnpackStats {
            files: 2,
            dirs: 3,
            symlinks: 1,
            hardlinks: 1,
            whiteouts: 0,
            skipped: 1,
            bytes: 4 + 34,
        }
    );
}

#[test]
fn a_whiteout_deletes_a_lower_layers_file_and_an_opaque_one_empties_its_directory() {
    let base = scratch("whiteout");
    let root = base.join("rootfs");
    fs::create_dir_all(&root).expect("root");
    apply(
        &root,
        &[
            E::File("a/x", 0o644, b"x"),
            E::File("a/y", 0o644, b"y"),
            E::File("b/old", 0o644, b"old"),
            E::Dir("b/sub/", 0o755),
            E::File("b/sub/deep", 0o644, b"deep"),
            E::Dir("c/", 0o755),
        ],
    )
    .expect("lower layer");
    let stats = apply(
        &root,
        &[
            E::File("a/.wh.x", 0o644, b""),
            E::File("b/kept", 0o644, b"same layer, before the marker"),
            E::File("b/.wh..wh..opq", 0o644, b""),
            E::File("b/new", 0o644, b"new"),
            E::File(".wh.c", 0o644, b""),
            E::File("a/.wh.never-there", 0o644, b""),
        ],
    )
    .expect("upper layer");
    assert!(!root.join("a/x").exists());
    assert!(root.join("a/y").exists(), "only the named file goes");
    assert!(!root.join("b/old").exists() && !root.join("b/sub").exists());
    assert!(root.join("b/kept").exists() && root.join("b/new").exists());
    assert!(
        !root.join("c").exists(),
        "a whiteout deletes a directory too"
    );
    assert!(!root.join("a/.wh.x").exists() && !root.join("b/.wh..wh..opq").exists());
    assert_eq!(stats.whiteouts, 4);
}

#[test]
fn an_entry_naming_dot_dot_is_refused_and_nothing_is_written_outside() {
    let base = scratch("dotdot");
    let root = base.join("rootfs");
    fs::create_dir_all(&root).expect("root");
    for (entries, entry) in [
        (vec![E::File("../escaped", 0o644, b"pwned")], "../escaped"),
        (
            vec![E::File("a/../../escaped", 0o644, b"pwned")],
            "a/../../escaped",
        ),
        (
            vec![E::Dir("a/", 0o755), E::Hardlink("a/h", "../escaped")],
            "a/h",
        ),
        (vec![E::File("a/.wh...", 0o644, b"")], "a/.wh..."),
    ] {
        let err = apply(&root, &entries).expect_err("refused");
        match &err {
            OciError::UnsafeEntry {
                entry: got, layer, ..
            } => {
                assert_eq!(got, entry);
                assert_eq!(layer, "sha256:test");
            }
            other => panic!("{entry}: {other}"),
        }
        assert!(err.to_string().contains("refusing to unpack"), "{err}");
    }
    assert!(!base.join("escaped").exists());
}

#[test]
fn symlinks_in_the_image_cannot_redirect_writes_outside_the_root() {
    let base = scratch("symlinks");
    let root = base.join("rootfs");
    let outside = base.join("outside");
    fs::create_dir_all(&root).expect("root");
    fs::create_dir_all(&outside).expect("outside");
    let outside_str = outside.to_str().expect("utf-8");
    apply(
        &root,
        &[
            E::Symlink("abs", outside_str),
            E::Symlink("up", "../../../.."),
            E::Symlink("loop", "loop"),
            E::Symlink("victim", &format!("{outside_str}/target")),
        ],
    )
    .expect("links");
    apply(
        &root,
        &[
            E::File("abs/evil", 0o644, b"abs"),
            E::File("up/evil2", 0o644, b"rel"),
            E::Hardlink("stolen", "abs/../../../../etc/hostname-never"),
        ],
    )
    .expect_err("a hard link with .. is refused");
    apply(
        &root,
        &[
            E::File("abs/evil", 0o644, b"abs"),
            E::File("up/evil2", 0o644, b"rel"),
            E::File("victim", 0o644, b"replaces the link, not its target"),
        ],
    )
    .expect("writes");
    assert_eq!(
        fs::read_dir(&outside).expect("outside").count(),
        0,
        "nothing outside"
    );
    let inside = root.join(outside.strip_prefix("/").expect("absolute"));
    assert_eq!(fs::read(inside.join("evil")).expect("abs"), b"abs");
    assert_eq!(fs::read(root.join("evil2")).expect("rel"), b"rel");
    assert!(
        !fs::symlink_metadata(root.join("victim"))
            .expect("victim")
            .is_symlink()
    );
    let err = apply(&root, &[E::File("loop/x", 0o644, b"")]).expect_err("loop");
    assert!(err.to_string().contains("too many symlinks"), "{err}");
}

#[test]
fn a_later_layer_replaces_a_file_with_a_directory_and_back() {
    let base = scratch("replace");
    let root = base.join("rootfs");
    fs::create_dir_all(&root).expect("root");
    apply(
        &root,
        &[
            E::File("x", 0o644, b"file"),
            E::Dir("y/", 0o755),
            E::File("y/z", 0o600, b"z"),
        ],
    )
    .expect("lower");
    apply(
        &root,
        &[E::Dir("x/", 0o700), E::File("y", 0o640, b"now a file")],
    )
    .expect("upper");
    assert!(root.join("x").is_dir());
    assert_eq!(mode(&root.join("x")), 0o700);
    assert_eq!(fs::read(root.join("y")).expect("y"), b"now a file");
    assert_eq!(mode(&root.join("y")), 0o640);
}
