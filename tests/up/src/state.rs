//! What `orrery up` leaves for `--status` and `--down`: one JSON file, `<state>/up.json`, with
//! the supervising process and what it started. Written atomically (a temporary file renamed),
//! removed when the environment stops cleanly. A file whose process is gone is stale.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// The file name of a live supervisor's executable (guards against a reused pid).
const PROGRAM: &str = "orrery-up";

/// Where a running environment stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Phase {
    /// Building or starting.
    Starting,
    /// Everything is up; the demo run was started.
    Ready,
    /// Start-up failed; the process is stopping what it started.
    Failed,
    /// Stopping after Ctrl-C, SIGTERM or `--down`.
    Stopping,
}

/// The state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpState {
    /// The supervising `orrery-up` process.
    pub pid: u32,
    pub phase: Phase,
    /// Why start-up failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The admin kubeconfig of the local control plane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<PathBuf>,
    /// The API server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The `kubectl` built with the control plane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubectl: Option<PathBuf>,
    /// The sidecar (run API, trace stream, approvals) on loopback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sidecar_url: Option<String>,
    /// The detached process's log, when detached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    /// What `--status` and the ready banner print (commands to try).
    #[serde(default)]
    pub banner: String,
}

impl UpState {
    /// A state for this process.
    pub fn starting() -> UpState {
        UpState {
            pid: std::process::id(),
            phase: Phase::Starting,
            error: None,
            kubeconfig: None,
            server: None,
            kubectl: None,
            sidecar_url: None,
            log: None,
            banner: String::new(),
        }
    }
}

/// The state file of a state directory.
pub fn file(dir: &Path) -> PathBuf {
    dir.join("up.json")
}

/// Writes the state (atomically).
pub fn write(dir: &Path, state: &UpState) -> Result<()> {
    let path = file(dir);
    let tmp = dir.join(format!(".up.json.{}", std::process::id()));
    let text = serde_json::to_string_pretty(state).context("encoding the state")?;
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
}

/// The state, when there is a file.
pub fn read(dir: &Path) -> Result<Option<UpState>> {
    let path = file(dir);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .with_context(|| format!("{} is not an orrery up state file", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Removes the state file (this process's own only).
pub fn remove(dir: &Path) {
    if let Ok(Some(state)) = read(dir)
        && state.pid == std::process::id()
    {
        let _ = std::fs::remove_file(file(dir));
    }
}

/// Whether `pid` is a live `orrery-up` (not a zombie, not another program with a reused pid):
/// its executable is named `orrery-up` (`orrery-up (deleted)` once a rebuild replaced it).
pub fn alive(pid: u32) -> bool {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let exe = std::fs::read_link(proc_dir.join("exe")).unwrap_or_default();
    let named = exe
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(PROGRAM));
    let zombie = std::fs::read_to_string(proc_dir.join("stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false);
    named && !zombie
}

/// The live environment of a state directory, if any (a stale file is removed).
pub fn live(dir: &Path) -> Result<Option<UpState>> {
    match read(dir)? {
        Some(state) if alive(state.pid) => Ok(Some(state)),
        Some(_) => {
            let _ = std::fs::remove_file(file(dir));
            Ok(None)
        }
        None => Ok(None),
    }
}

/// Sends SIGTERM to the environment's process and waits until it is gone.
pub fn stop(state: &UpState, timeout: Duration) -> Result<()> {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let pid = i32::try_from(state.pid).context("a pid out of range")?;
    match kill(Pid::from_raw(pid), Signal::SIGTERM) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(e) => bail!(
            "cannot signal orrery up (pid {pid}): {e}; run `orrery up --down` as the user who \
             started it (root)"
        ),
    }
    let deadline = Instant::now() + timeout;
    while alive(state.pid) {
        if Instant::now() > deadline {
            bail!(
                "orrery up (pid {pid}) did not stop within {} s; its log says why{}",
                timeout.as_secs(),
                state
                    .log
                    .as_ref()
                    .map(|l| format!(": {}", l.display()))
                    .unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("orrery-up-state-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn the_state_file_round_trips_and_is_removed_by_its_own_process() {
        let dir = temp_dir("roundtrip");
        let mut state = UpState::starting();
        state.phase = Phase::Ready;
        state.sidecar_url = Some("http://127.0.0.1:8080".into());
        write(&dir, &state).expect("write");
        assert_eq!(read(&dir).expect("read"), Some(state));
        remove(&dir);
        assert_eq!(read(&dir).expect("read"), None);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn a_state_whose_process_is_not_orrery_up_is_stale_and_cleared() {
        let dir = temp_dir("stale");
        // This test binary is alive but is not orrery-up: as good as a reused pid.
        let state = UpState::starting();
        write(&dir, &state).expect("write");
        assert!(!alive(state.pid));
        assert_eq!(live(&dir).expect("live"), None);
        assert!(!file(&dir).exists());
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn a_file_that_is_not_a_state_is_an_error_naming_it() {
        let dir = temp_dir("garbage");
        std::fs::write(file(&dir), "not json").expect("write");
        let err = read(&dir).expect_err("refused");
        assert!(format!("{err:#}").contains("up.json"), "{err:#}");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
