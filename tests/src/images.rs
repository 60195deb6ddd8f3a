//! The project's images for tests: `tests/images/build.sh` run on the workspace's debug
//! binaries (built first when missing or stale), its OCI archives written beside the binaries
//! (`<target>/<profile>/orrery-images/`), at most once per test binary and only when a binary
//! or the script is newer than the archives. Needs root, buildah and runc.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use anyhow::{Context, Result, ensure};

use crate::harness::{workspace_binary, workspace_root};

/// Runs `tests/images/build.sh <directory of the workspace's binaries> <out>`; returns the
/// directory it printed last (where `runner.tar` and `operator.tar` are).
pub fn build(out: &Path) -> Result<PathBuf> {
    let mut bins = None;
    // `cargo test` builds only a package's own binaries: build these when missing or stale.
    for binary in ["orrery", "orrery-operator"] {
        let path = workspace_binary(binary)?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        ensure!(
            bins.as_ref().is_none_or(|b| *b == dir),
            "{} is not beside the other binaries",
            path.display()
        );
        bins = Some(dir);
    }
    let bins = bins.unwrap_or_default();
    let euid = std::fs::metadata("/proc/self")
        .context("reading /proc/self")?
        .uid();
    ensure!(
        euid == 0,
        "building and running images needs root (buildah vfs, runc); this runs as uid {euid}"
    );
    let script = workspace_root().join("tests/images/build.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg(&bins)
        .arg(out)
        .output()
        .with_context(|| format!("starting {}", script.display()))?;
    ensure!(
        output.status.success(),
        "{} failed ({}): {}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    Ok(PathBuf::from(stdout.lines().last().unwrap_or_default()))
}

/// The images, built once for this test binary, beside the workspace's binaries.
pub fn built() -> Result<PathBuf> {
    static BUILT: OnceLock<Mutex<Option<PathBuf>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(|| Mutex::new(None))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(dir) = built.as_ref() {
        return Ok(dir.clone());
    }
    let bins = workspace_binary("orrery")?
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let out = bins.join("orrery-images");
    let dir = match fresh(&out) {
        Some(dir) => dir,
        None => build(&out)?,
    };
    *built = Some(dir.clone());
    Ok(dir)
}

/// `out`, when both archives in it are newer than the binaries they hold and the script that
/// builds them: the build is reproducible, so a rebuild would write the same archives. The
/// binaries are built first when stale (as [`build`] does).
pub fn fresh(out: &Path) -> Option<PathBuf> {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let runner = workspace_binary("orrery").ok()?;
    let operator = workspace_binary("orrery-operator").ok()?;
    let inputs = [
        runner,
        operator,
        workspace_root().join("tests/images/build.sh"),
    ];
    let newest_input = inputs
        .iter()
        .map(|p| modified(p))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .max()?;
    let oldest_archive = ["runner.tar", "operator.tar"]
        .iter()
        .map(|a| modified(&out.join(a)))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .min()?;
    (oldest_archive > newest_input).then(|| out.to_path_buf())
}
