//! The project's images for tests: `tests/images/build.sh` run on the workspace's debug
//! binaries (built first when missing or stale), its OCI archives written beside the binaries
//! (`<target>/<profile>/orrery-images/`), at most once per test binary and only when a binary
//! or the script is newer than the archives. Needs root, buildah and runc.
//!
//! [`built_with_pod_build`] is the same pair of images with the runner image's binary built the
//! way `operator/Dockerfile` ships it: statically linked, without the `cli` feature
//! ([`pod_build_binary`]).
//!
//! The operator image carries the built web console at [`CONSOLE_DIR`], from [`console_source`]
//! (`web/dist` unless `ORRERY_IMAGES_CONSOLE_DIR` says otherwise): build it first with
//! `cd web && npm ci --engine-strict && npm run build` (scripts/test.sh's `web` step does).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use anyhow::{Context, Result, bail, ensure};

use crate::harness::{TestBuild, workspace_binary, workspace_root};

/// The flags `operator/Dockerfile` links the runner image's binary with: static glibc, no
/// position-independent code (so no loader and no relocations at start).
pub const POD_BUILD_RUSTFLAGS: &str = "-C target-feature=+crt-static -C relocation-model=static";

/// Where the operator image keeps the web console's files: `operator/Dockerfile` copies the
/// `console` stage's build there, `tests/images/build.sh` copies [`console_source`] there, and
/// the chart's sidecar serves it (`sidecar.consoleDir`, `--console-dir`).
pub const CONSOLE_DIR: &str = "/usr/share/orrery/console";

/// The variable that names the built console `tests/images/build.sh` copies into the operator
/// image instead of `web/dist`.
pub const CONSOLE_SOURCE_ENV: &str = "ORRERY_IMAGES_CONSOLE_DIR";

/// The built console the operator image gets: `ORRERY_IMAGES_CONSOLE_DIR`, else `web/dist`.
pub fn console_source() -> PathBuf {
    std::env::var_os(CONSOLE_SOURCE_ENV)
        .filter(|d| !d.is_empty())
        .map_or_else(|| workspace_root().join("web/dist"), PathBuf::from)
}

/// The newest modification time of the files under `dir` (None when it cannot be read).
fn newest_under(dir: &Path) -> Option<std::time::SystemTime> {
    let mut newest = std::fs::metadata(dir).and_then(|m| m.modified()).ok()?;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).ok()? {
            let path = entry.ok()?.path();
            let meta = std::fs::symlink_metadata(&path).ok()?;
            newest = newest.max(meta.modified().ok()?);
            if meta.is_dir() {
                pending.push(path);
            }
        }
    }
    Some(newest)
}

/// Builds the web console into `web/dist` when it is missing or older than what it is built
/// from (`web/src`, `web/index.html`, the lockfile, the Vite config): `npm ci --engine-strict`
/// when `node_modules` is older than the lockfile, then `npm run build`. `orrery up` calls it
/// before the images, so a fresh clone needs nothing but Node 20.19 or later. Returns `web/dist`.
pub fn build_console() -> Result<PathBuf> {
    let web = workspace_root().join("web");
    let dist = web.join("dist");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let inputs = [
        newest_under(&web.join("src")),
        modified(&web.join("index.html")),
        modified(&web.join("package-lock.json")),
        modified(&web.join("vite.config.ts")),
    ];
    let newest_input = inputs.iter().flatten().max().copied();
    let built = modified(&dist.join("index.html"));
    if built.is_some() && built >= newest_input {
        return Ok(dist);
    }
    let npm = |args: &[&str]| -> Result<()> {
        let status = Command::new("npm")
            .args(args)
            .current_dir(&web)
            .status()
            .with_context(|| {
                format!(
                    "running npm {} in web/: is Node 20.19 or later with npm installed?",
                    args.join(" ")
                )
            })?;
        ensure!(
            status.success(),
            "npm {} in web/ failed ({status}): see its output above",
            args.join(" ")
        );
        Ok(())
    };
    let installed = modified(&web.join("node_modules/.package-lock.json"));
    if installed.is_none() || installed < modified(&web.join("package-lock.json")) {
        npm(&["ci", "--engine-strict", "--no-audit", "--no-fund"])?;
    }
    npm(&["run", "build"])?;
    ensure!(
        dist.join("index.html").is_file(),
        "npm run build wrote no web/dist/index.html"
    );
    Ok(dist)
}

/// Runs `tests/images/build.sh <directory of the workspace's binaries> <out>`; returns the
/// directory it printed last (where `runner.tar` and `operator.tar` are).
pub fn build(out: &Path) -> Result<PathBuf> {
    build_with(out, None)
}

/// [`build`], with the runner image's binary taken from `runner` when given
/// (`ORRERY_IMAGES_RUNNER_BIN`) instead of the workspace's `orrery`.
fn build_with(out: &Path, runner: Option<&Path>) -> Result<PathBuf> {
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
    let mut command = Command::new("bash");
    command.arg(&script).arg(&bins).arg(out);
    match runner {
        Some(runner) => command.env("ORRERY_IMAGES_RUNNER_BIN", runner),
        None => command.env_remove("ORRERY_IMAGES_RUNNER_BIN"),
    };
    let output = command
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
    static BUILT: Built = OnceLock::new();
    built_once(&BUILT, "orrery-images", || workspace_binary("orrery"))
}

/// Where a test binary keeps the images it built.
type Built = OnceLock<Mutex<Option<PathBuf>>>;

/// The images in `<target>/<profile>/<name>/`, built there unless fresh, once for this test
/// binary (`slot`), with the runner image's binary that `runner` builds.
fn built_once(
    slot: &Built,
    name: &str,
    runner: impl FnOnce() -> Result<PathBuf>,
) -> Result<PathBuf> {
    let mut built = slot
        .get_or_init(|| Mutex::new(None))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(dir) = built.as_ref() {
        return Ok(dir.clone());
    }
    let runner = runner()?;
    let bins = workspace_binary("orrery")?
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let out = bins.join(name);
    let dir = match fresh_with(&out, runner.clone()) {
        Some(dir) => dir,
        None => build_with(&out, Some(&runner))?,
    };
    *built = Some(dir.clone());
    Ok(dir)
}

/// `out`, when both archives in it are newer than the binaries they hold, the console's files
/// ([`console_source`]) and the script that builds them: the build is reproducible, so a
/// rebuild would write the same archives. The binaries are built first when stale (as [`build`]
/// does).
pub fn fresh(out: &Path) -> Option<PathBuf> {
    fresh_with(out, workspace_binary("orrery").ok()?)
}

/// [`fresh`], for images whose runner binary is `runner`.
fn fresh_with(out: &Path, runner: PathBuf) -> Option<PathBuf> {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let operator = workspace_binary("orrery-operator").ok()?;
    let inputs = [
        runner,
        operator,
        workspace_root().join("tests/images/build.sh"),
    ];
    let console = console_source();
    // No built console: not fresh, and the build says how to make one.
    modified(&console.join("index.html"))?;
    let newest_input = inputs
        .iter()
        .map(|p| modified(p))
        .chain([newest_under(&console)])
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

/// The images with the runner image's binary as `operator/Dockerfile` builds it
/// ([`pod_build_binary`]), built once for this test binary beside the workspace's binaries
/// (`<target>/<profile>/orrery-images-pod/`).
pub fn built_with_pod_build() -> Result<PathBuf> {
    static BUILT: Built = OnceLock::new();
    built_once(&BUILT, "orrery-images-pod", pod_build_binary)
}

/// The runner image's binary as `operator/Dockerfile` builds it, in this build's profile:
/// `orrery` without the `cli` feature (run, probe and validate only), linked with
/// [`POD_BUILD_RUSTFLAGS`] for the host's target (`--target`, so build scripts and proc macros
/// are built as usual and share the workspace's). Built when missing or stale, into
/// `<target>/<host triple>/<profile>/orrery`.
pub fn pod_build_binary() -> Result<PathBuf> {
    let build = TestBuild::current()?;
    let host = host_triple()?;
    let mut cargo = build.cargo();
    cargo
        .args(["build", "--quiet", "--locked", "-p", "orrery-runner"])
        .args([
            "--bin",
            "orrery",
            "--no-default-features",
            "--target",
            &host,
        ])
        .env("RUSTFLAGS", POD_BUILD_RUSTFLAGS)
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    build.profile_args(&mut cargo);
    let what = format!(
        "RUSTFLAGS='{POD_BUILD_RUSTFLAGS}' cargo build -p orrery-runner --bin orrery \
         --no-default-features --target {host}"
    );
    let status = cargo.status().with_context(|| format!("running {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    let path = build
        .target_dir
        .join(&host)
        .join(&build.profile)
        .join("orrery");
    if !path.is_file() {
        bail!("{what} left no {}", path.display());
    }
    Ok(path)
}

/// The host's target triple, as `rustc -vV` names it.
fn host_triple() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(&rustc)
        .arg("-vV")
        .output()
        .context("running rustc -vV")?;
    ensure!(
        output.status.success(),
        "rustc -vV failed ({})",
        output.status
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(|host| host.trim().to_owned())
        .context("rustc -vV named no host triple")
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_dockerfile_the_image_script_and_the_chart_put_the_console_in_one_place() {
        for (file, says) in [
            (
                "operator/Dockerfile",
                format!("COPY --from=console --chown=0:0 /web/dist {CONSOLE_DIR}"),
            ),
            (
                "tests/images/build.sh",
                format!("console_path={CONSOLE_DIR}"),
            ),
            (
                "charts/orrery/values.yaml",
                format!("consoleDir: {CONSOLE_DIR}"),
            ),
        ] {
            let text = std::fs::read_to_string(workspace_root().join(file)).expect(file);
            assert!(text.contains(&says), "{file} says `{says}`");
        }
        let script = std::fs::read_to_string(workspace_root().join("tests/images/build.sh"))
            .expect("build.sh");
        assert!(
            script.contains(&format!("{CONSOLE_SOURCE_ENV}:-$repo/web/dist"))
                && script.contains("cd web && npm ci --engine-strict && npm run build"),
            "build.sh takes web/dist unless {CONSOLE_SOURCE_ENV} is set, and names the fix"
        );
    }

    #[test]
    fn every_build_of_the_runner_image_binary_links_it_with_the_tests_flags() {
        for file in [
            "operator/Dockerfile",
            "scripts/test.sh",
            "tests/bench/compare/run.sh",
        ] {
            let text = std::fs::read_to_string(workspace_root().join(file)).expect(file);
            assert!(
                text.contains(&format!("RUSTFLAGS=\"{POD_BUILD_RUSTFLAGS}\"")),
                "{file} builds the runner image's binary with RUSTFLAGS=\"{POD_BUILD_RUSTFLAGS}\""
            );
            assert!(
                text.contains("--no-default-features") && text.contains("--target"),
                "{file} builds it without the cli feature, for the host's --target"
            );
        }
    }
}
