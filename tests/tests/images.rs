//! The project's images, built here without a daemon and run with runc: `tests/images/build.sh`
//! makes `localhost/orrery/runner:dev` and `localhost/orrery/operator:dev` from the debug
//! binaries beside this test's (the layout of `operator/Dockerfile`'s runtime stage), and each
//! is read, unpacked and run through `orrery_devnode::oci` as a restricted pod would run it:
//! user 65532, read-only root filesystem, no capabilities, its own namespaces. A long-running
//! runner (the demo fleet) is stopped with `runc kill TERM` and exits 0; building twice from the
//! same binaries gives the same manifests. The operator image carries the built web console
//! (`web/dist`, or `ORRERY_IMAGES_CONSOLE_DIR`) at `/usr/share/orrery/console`.
//!
//! Needs root, buildah and runc (Debian packages `buildah` and `runc`); the binaries are built
//! first when missing (`harness::workspace_binary`); the console must be built
//! (`cd web && npm ci --engine-strict && npm run build`).

use std::collections::BTreeSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use orrery_tests::images;
use orrery_tests::pod_executor::oci::{
    BindMount, BundleSpec, OciArchive, Output, Runc, RuncSignal, TmpfsMount,
};

const NONROOT: u32 = 65532;
const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// Any of these in an image would be a shell (or a way to one).
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "ash", "zsh", "ksh", "busybox", "toybox",
];

/// A scratch directory, removed when dropped (kept with `ORRERY_TESTENV_KEEP`).
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("orrery-images-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::env::var_os("ORRERY_TESTENV_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Every path in the root filesystem, relative (`usr/local/bin/orrery`).
fn walk(root: &Path) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let path = entry?.path();
            let meta = std::fs::symlink_metadata(&path)?;
            out.insert(path.strip_prefix(root)?.to_string_lossy().into_owned());
            if meta.is_dir() {
                pending.push(path);
            }
        }
    }
    Ok(out)
}

/// An image unpacked into a bundle, with runc ready to run it.
struct Unpacked {
    scratch: Scratch,
    image: OciArchive,
    runc: Runc,
}

impl Unpacked {
    /// The image `name` (`runner`, `operator`) in a bundle of its own for the test `purpose`.
    fn new(name: &str, purpose: &str) -> Result<Self> {
        let archive = images::built()?.join(format!("{name}.tar"));
        let image = OciArchive::open(&archive)?;
        let scratch = Scratch::new(&format!("{name}-{purpose}"))?;
        image.unpack(&scratch.0.join("bundle/rootfs"))?;
        let runc = Runc::locate(&scratch.0.join("runc-state"))?;
        Ok(Unpacked {
            scratch,
            image,
            runc,
        })
    }

    fn rootfs(&self) -> PathBuf {
        self.scratch.0.join("bundle/rootfs")
    }

    /// A spec as the image and a restricted pod say: its user, env, working directory, a
    /// read-only root and a writable `/tmp`.
    fn spec(&self, args: &[&str]) -> Result<BundleSpec> {
        let config = self.image.config();
        let (uid, gid) = config
            .numeric_user()
            .with_context(|| format!("User {:?} is not numeric", config.user))?;
        let mut spec = BundleSpec::new(config.argv(args), uid, gid);
        spec.env = config.env.clone();
        spec.cwd = config.cwd().to_owned();
        spec.readonly_root = true;
        spec.tmpfs.push(TmpfsMount {
            destination: "/tmp".into(),
            size_bytes: Some(64 << 20),
            mode: 0o1777,
        });
        Ok(spec)
    }

    /// Runs the spec in this image's bundle: exit code, stdout, stderr.
    fn run(&self, id: &str, spec: &BundleSpec) -> Result<(Option<i32>, String, String)> {
        let bundle = self.scratch.0.join("bundle");
        spec.write(&bundle)?;
        let id = format!("orrery-images-{id}-{}", std::process::id());
        let outcome = self
            .runc
            .run(&bundle, &id, &self.scratch.0.join("out"), RUN_TIMEOUT)?;
        Ok((outcome.status.code(), outcome.stdout, outcome.stderr))
    }
}

/// The image config and contents every project image must have: user 65532 (not root), the
/// binary as entrypoint, the OCI labels, and no shell.
fn check_image(image: &Unpacked, binary: &str, title: &str) -> Result<()> {
    let config = image.image.config();
    assert_eq!(config.user, "65532:65532");
    assert_eq!(config.numeric_user(), Some((NONROOT, NONROOT)));
    assert_eq!(config.entrypoint, [format!("/usr/local/bin/{binary}")]);
    assert!(config.cmd.is_empty(), "no Cmd: {:?}", config.cmd);
    assert_eq!(
        config
            .labels
            .get("org.opencontainers.image.title")
            .map(String::as_str),
        Some(title)
    );
    assert_eq!(
        config
            .labels
            .get("org.opencontainers.image.version")
            .map(String::as_str),
        Some(env!("CARGO_PKG_VERSION"))
    );
    let files = walk(&image.rootfs())?;
    let shells: Vec<&String> = files
        .iter()
        .filter(|f| SHELLS.iter().any(|s| f.rsplit('/').next() == Some(*s)))
        .collect();
    assert!(shells.is_empty(), "shells in the image: {shells:?}");
    assert!(
        !files.contains("bin") && !files.contains("usr/bin"),
        "{files:?}"
    );
    // The binary, the loader and the libraries; nothing else is executable.
    let executables: Vec<&String> = files
        .iter()
        .filter(|f| {
            std::fs::symlink_metadata(image.rootfs().join(f))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .filter(|f| !f.contains(".so"))
        .collect();
    assert_eq!(executables, [&format!("usr/local/bin/{binary}")]);
    let binary_meta = std::fs::metadata(image.rootfs().join("usr/local/bin").join(binary))?;
    assert_eq!(
        (binary_meta.uid(), binary_meta.mode() & 0o7777),
        (0, 0o755),
        "root-owned, not writable by 65532"
    );
    Ok(())
}

#[test]
fn the_runner_image_runs_as_non_root_from_a_read_only_root_without_a_shell() -> Result<()> {
    let image = Unpacked::new("runner", "restricted")?;
    check_image(&image, "orrery", "orrery-runner")?;

    let (code, stdout, stderr) = image.run("runner-version", &image.spec(&["--version"])?)?;
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_eq!(stdout, format!("orrery {}\n", env!("CARGO_PKG_VERSION")));

    // The root filesystem is read-only: writing the CRDs under / fails.
    let (code, _, stderr) =
        image.run("runner-root", &image.spec(&["crds", "--write", "/crds"])?)?;
    assert_eq!(code, Some(2), "stderr: {stderr}");
    assert!(stderr.contains("Read-only file system"), "{stderr}");

    // Writable mounts: one owned by 65532, one owned by root (0755). The process may write the
    // first and not the second, which only a non-root user is refused; what it writes is 65532's.
    let mine = image.scratch.0.join("mine");
    let roots = image.scratch.0.join("roots");
    for (dir, owner) in [(&mine, NONROOT), (&roots, 0)] {
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
        std::os::unix::fs::chown(dir, Some(owner), Some(owner))?;
    }
    let mut spec = image.spec(&["crds", "--write", "/mine/crds"])?;
    spec.binds.push(BindMount {
        source: mine.clone(),
        destination: "/mine".into(),
        read_only: false,
    });
    let (code, _, stderr) = image.run("runner-mine", &spec)?;
    assert_eq!(code, Some(0), "stderr: {stderr}");
    let written = mine.join("crds/studioruns.yaml");
    let meta = std::fs::metadata(&written)
        .with_context(|| format!("{} was not written", written.display()))?;
    assert_eq!((meta.uid(), meta.gid()), (NONROOT, NONROOT));

    let mut spec = image.spec(&["crds", "--write", "/roots/crds"])?;
    spec.binds.push(BindMount {
        source: roots.clone(),
        destination: "/roots".into(),
        read_only: false,
    });
    let (code, _, stderr) = image.run("runner-roots", &spec)?;
    assert_eq!(code, Some(2), "stderr: {stderr}");
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert!(!roots.join("crds").exists());
    Ok(())
}

#[test]
fn the_operator_image_runs_as_non_root_from_a_read_only_root_without_a_shell() -> Result<()> {
    let image = Unpacked::new("operator", "restricted")?;
    check_image(&image, "orrery-operator", "orrery-operator")?;

    let (code, stdout, stderr) = image.run("operator-version", &image.spec(&["--version"])?)?;
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_eq!(
        stdout,
        format!("orrery-operator {}\n", env!("CARGO_PKG_VERSION"))
    );

    let (code, stdout, stderr) = image.run("operator-help", &image.spec(&["--help"])?)?;
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(
        stdout.contains("controller") && stdout.contains("sidecar"),
        "{stdout}"
    );

    Ok(())
}

#[test]
fn the_operator_image_carries_the_built_console_owned_by_root_and_read_only_for_its_user()
-> Result<()> {
    let image = Unpacked::new("operator", "console")?;
    let console = image
        .rootfs()
        .join(images::CONSOLE_DIR.trim_start_matches('/'));
    let source = images::console_source();
    let files = walk(&console)?;
    assert!(files.contains("index.html"), "{files:?}");
    assert_eq!(
        files,
        walk(&source)?,
        "the image holds exactly the build's files"
    );
    for file in std::iter::once(String::new()).chain(files) {
        let path = console.join(&file);
        let meta = std::fs::symlink_metadata(&path)?;
        let mode = meta.mode() & 0o7777;
        assert_eq!(meta.uid(), 0, "{file} is root's");
        if meta.is_dir() {
            assert_eq!(mode, 0o755, "{file}/: {mode:o}");
        } else {
            assert!(meta.is_file(), "{file} is a plain file");
            assert_eq!(mode, 0o644, "{file}: {mode:o}");
            assert!(
                std::fs::read(&path)? == std::fs::read(source.join(&file))?,
                "{file} is the build's"
            );
        }
    }
    Ok(())
}

#[test]
fn a_long_running_runner_container_stops_cleanly_on_runc_kill_term() -> Result<()> {
    let image = Unpacked::new("runner", "kill")?;
    // The demo fleet serves on the container's own loopback until it is signalled.
    let spec = image.spec(&["demo", "--fleet-only", "--port-base", "0"])?;
    let bundle = image.scratch.0.join("bundle");
    spec.write(&bundle)?;
    let id = format!("orrery-images-kill-{}", std::process::id());
    let stdout = image.scratch.0.join("kill.stdout");
    let stderr = image.scratch.0.join("kill.stderr");
    let output = Output::Files {
        stdout: stdout.clone(),
        stderr: stderr.clone(),
    };
    let mut child = image.runc.spawn(&bundle, &id, output)?;
    let started = std::time::Instant::now();
    let mut printed = String::new();
    while !printed.contains("demo fleet running") {
        if let Some(status) = child.try_wait()? {
            bail!(
                "the container ended ({status}) before the fleet ran: {}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        }
        if started.elapsed() > RUN_TIMEOUT {
            let _ = image.runc.kill(&id, RuncSignal::Kill);
            let _ = child.wait();
            let _ = image.runc.delete(&id);
            bail!("the fleet did not start within {RUN_TIMEOUT:?}: {printed}");
        }
        std::thread::sleep(Duration::from_millis(50));
        printed = std::fs::read_to_string(&stdout).unwrap_or_default();
    }
    image.runc.kill(&id, RuncSignal::Term)?;
    let status = child.wait()?;
    image.runc.delete(&id)?;
    let said = std::fs::read_to_string(&stderr)?;
    assert_eq!(status.code(), Some(0), "{said}");
    assert!(said.contains("stopping the demo fleet"), "{said}");
    Ok(())
}

#[test]
fn the_same_binaries_build_the_same_images() -> Result<()> {
    let first = images::built()?;
    let scratch = Scratch::new("rebuild")?;
    let second = images::build(&scratch.0)?;
    assert_eq!(
        second, scratch.0,
        "build.sh prints its output directory last"
    );
    for name in ["runner", "operator"] {
        let index = |dir: &Path| -> Result<String> {
            let archive = dir.join(format!("{name}.tar"));
            let out = Command::new("tar")
                .arg("-xOf")
                .arg(&archive)
                .arg("index.json")
                .output()?;
            ensure!(
                out.status.success(),
                "tar -xOf {} index.json failed",
                archive.display()
            );
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        };
        assert_eq!(
            index(&first)?,
            index(&second)?,
            "{name}: the manifest digest differs"
        );
    }
    Ok(())
}
