//! A wall clock set wrong, for the processes of a dev node: `tests/skew/skew.c`, built here
//! with the system's C compiler (the one Rust links with), preloaded into a process, shifts its
//! `CLOCK_REALTIME` (and `gettimeofday`, `time`) by `ORRERY_CLOCK_SKEW_SECONDS` and leaves the
//! monotonic clocks alone, as on a machine whose clock is wrong. See
//! [`crate::studio::Studio::restart_node_with_env`].

use anyhow::{Context as _, Result, ensure};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The shared object, built once per test process.
pub fn library() -> Result<PathBuf> {
    static BUILT: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| build().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(|e| anyhow::anyhow!(e))
}

fn build() -> Result<PathBuf> {
    let source = crate::harness::workspace_root().join("tests/skew/skew.c");
    // Beside the test binary, not under /tmp: the dev node maps paths under a pod's mounts
    // (its /tmp among them) into the pod's own directory, and would map this one away too.
    let exe = std::env::current_exe().context("the test binary's path")?;
    let dir = exe
        .parent()
        .context("the test binary's directory")?
        .join("orrery-skew");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // Built under a name of this process's, then renamed into place: test processes building
    // at once each put a whole library there.
    let out = dir.join("libskew.so");
    let building = dir.join(format!("libskew.so.{}", std::process::id()));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = std::process::Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&building)
        .arg(&source)
        .arg("-ldl")
        .output()
        .with_context(|| format!("running {cc} (a C compiler, as Rust itself needs)"))?;
    ensure!(
        built.status.success(),
        "{cc} {}: {}",
        source.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    std::fs::rename(&building, &out).with_context(|| format!("renaming into {}", out.display()))?;
    Ok(out)
}

/// The environment that runs a process with its wall clock `seconds` off (negative: behind).
pub fn env(seconds: i64) -> Result<Vec<(String, String)>> {
    Ok(vec![
        ("LD_PRELOAD".into(), library()?.display().to_string()),
        ("ORRERY_CLOCK_SKEW_SECONDS".into(), seconds.to_string()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_under_the_library_reads_its_wall_clock_shifted_either_way() -> Result<()> {
        let date = |env: &[(String, String)]| -> Result<i64> {
            let out = std::process::Command::new("date")
                .arg("+%s")
                .envs(env.iter().map(|(k, v)| (k, v)))
                .output()?;
            Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
        };
        let plain = date(&[])?;
        let behind = date(&env(-7200)?)?;
        let ahead = date(&env(7200)?)?;
        ensure!((plain - 7200 - behind).abs() <= 5, "{plain} {behind}");
        ensure!((plain + 7200 - ahead).abs() <= 5, "{plain} {ahead}");
        Ok(())
    }
}
