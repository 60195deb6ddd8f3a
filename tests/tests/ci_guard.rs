//! The test command refuses to run when a variable that makes the golden-file and drift tests
//! rewrite their files is set (issue 22 §8): such a run would pass whatever changed.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use orrery_tests::harness::workspace_root;

/// Runs `scripts/test.sh` with `name=value` and returns (exit code, stderr). The script is in a
/// process group of its own and killed with it after 60 s, so a guard that stopped working
/// fails this test instead of starting the whole suite under it.
fn test_command_with(name: &str, value: &str) -> Result<(Option<i32>, String)> {
    let mut child = Command::new("bash")
        .arg("scripts/test.sh")
        .current_dir(workspace_root())
        .env(name, value)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .context("starting scripts/test.sh")?;
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            let out = child.wait_with_output()?;
            return Ok((
                status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ));
        }
        if started.elapsed() > Duration::from_secs(60) {
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
            let _ = child.wait();
            bail!(
                "scripts/test.sh with {name}={value} was still running after 60 s: it did not refuse"
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_test_command_refuses_to_run_with_an_update_variable_set_whatever_its_value() -> Result<()> {
    for (name, value) in [
        ("ORRERY_UPDATE_GOLDEN", "1"),
        ("ORRERY_UPDATE_GOLDEN", "0"),
        ("ORRERY_UPDATE_CRDS", "1"),
        ("ORRERY_UPDATE_DOCS", ""),
    ] {
        let (code, stderr) = test_command_with(name, value)?;
        ensure!(code == Some(2), "{name}={value:?}: exit {code:?}, {stderr}");
        ensure!(
            stderr.contains("refusing to run") && stderr.contains(name),
            "{name}={value:?}: the refusal names the variable: {stderr}"
        );
    }
    Ok(())
}
