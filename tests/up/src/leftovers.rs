//! What an `orrery up` that did not stop (SIGKILL, a crash, a power cut) left on this machine:
//! its pods' runc containers (they outlive the process that started them), processes that name
//! its dev node's or control plane's directories (`runc run` of those containers, a control
//! plane still shutting down),
//! and the pod bridge (`orrery0`) when its pods were isolated. [`find`] says what is there
//! without changing anything (`orrery up --status`); [`clear`] removes it (`orrery up --down`,
//! and every `orrery up` before it starts anything).
//!
//! The bridge is this state directory's only when the marker file [`NETWORK_MARKER`] says so: it
//! is written before the dev node makes the bridge and removed once the node has taken it down,
//! so a bridge of the same name that another dev node made (a test's) is never touched.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use orrery_devnode::container::ContainerRuntime;
use orrery_devnode::net::{NetworkConfig, PodNetwork};

/// The marker of an isolated pod network in the state directory (it holds the bridge's name).
pub const NETWORK_MARKER: &str = "pod-network";

/// How long the processes left behind get to end once their containers are gone (a control
/// plane whose supervisor died stops by itself) before they are killed.
const SETTLE: Duration = Duration::from_secs(15);

/// What a stopped-without-cleaning `orrery up` left behind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// The ids of runc containers under `<state>/node/runc`.
    pub containers: Vec<String>,
    /// `pid: command line` of processes of its dev node or control plane.
    pub processes: Vec<String>,
    /// The pod bridge, when the marker names one that exists.
    pub bridge: Option<String>,
}

impl Leftovers {
    /// Whether nothing is left.
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.processes.is_empty() && self.bridge.is_none()
    }

    /// One line: what is left.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.containers.is_empty() {
            parts.push(format!(
                "{} runc container(s) ({})",
                self.containers.len(),
                self.containers.join(", ")
            ));
        }
        if !self.processes.is_empty() {
            parts.push(format!(
                "{} process(es) of its node or control plane ({})",
                self.processes.len(),
                self.processes.join("; ")
            ));
        }
        if let Some(bridge) = &self.bridge {
            parts.push(format!("the pod bridge {bridge}"));
        }
        parts.join(", ")
    }
}

/// The dev node's work directory in a state directory (its runc state is `runc/` in it).
pub fn node_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("node")
}

/// The control plane's directory in a state directory.
pub fn cluster_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("cluster")
}

fn marker(state_dir: &Path) -> PathBuf {
    state_dir.join(NETWORK_MARKER)
}

/// Records that the pod network `config` is being made for this state directory.
pub fn mark_network(state_dir: &Path, config: &NetworkConfig) -> Result<()> {
    let path = marker(state_dir);
    std::fs::write(&path, &config.bridge).with_context(|| format!("writing {}", path.display()))
}

/// Forgets the pod network (once the dev node has taken it down).
pub fn unmark_network(state_dir: &Path) {
    let _ = std::fs::remove_file(marker(state_dir));
}

/// Processes whose command line names what `orrery up` starts in `state_dir`: the dev node's
/// work directory (`runc run` of its containers) and the control plane's (`testenv`, etcd, the
/// API server). Not the state directory itself: `orrery up --detach` waiting for its child, or a
/// `tail -f` of its log, name it and are not leftovers.
fn processes(state_dir: &Path) -> Vec<String> {
    let me = format!("{}:", std::process::id());
    let mut found: Vec<String> = [node_dir(state_dir), cluster_dir(state_dir)]
        .iter()
        .flat_map(|dir| orrery_tests::harness::processes_naming(&dir.to_string_lossy()))
        .filter(|p| !p.starts_with(&me))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The runc containers of the dev node's work directory (none when it has no runc state).
fn containers(state_dir: &Path) -> Result<Vec<String>> {
    let work_dir = node_dir(state_dir);
    if !work_dir.join("runc").is_dir() {
        return Ok(Vec::new());
    }
    let runtime = ContainerRuntime::new(&work_dir, &work_dir).with_context(|| {
        format!(
            "{} holds runc state but runc cannot be used to list it",
            work_dir.display()
        )
    })?;
    Ok(runtime.containers())
}

/// The bridge the marker names, when it exists on this machine.
fn bridge(state_dir: &Path) -> Option<String> {
    let name = std::fs::read_to_string(marker(state_dir)).ok()?;
    let name = name.trim();
    (!name.is_empty() && Path::new("/sys/class/net").join(name).exists()).then(|| name.to_owned())
}

/// What is left of an earlier `orrery up` with `state_dir` (changes nothing).
pub fn find(state_dir: &Path) -> Result<Leftovers> {
    Ok(Leftovers {
        containers: containers(state_dir)?,
        processes: processes(state_dir),
        bridge: bridge(state_dir),
    })
}

/// Removes what an earlier `orrery up` with `state_dir` left: its containers (killed and
/// deleted, before their runc state could be lost), then the processes of its node and control
/// plane still running (given [`SETTLE`] to end, then SIGKILL), then its pod network. Call it only when no
/// live `orrery up` uses `state_dir`. Returns what was there.
pub fn clear(state_dir: &Path) -> Result<Leftovers> {
    clear_within(state_dir, SETTLE)
}

fn clear_within(state_dir: &Path, settle: Duration) -> Result<Leftovers> {
    let found = find(state_dir)?;
    if found.is_empty() {
        unmark_network(state_dir);
        return Ok(found);
    }
    let work_dir = node_dir(state_dir);
    let failed = ContainerRuntime::clear_leftovers(&work_dir)
        .with_context(|| format!("removing the containers under {}", work_dir.display()))?;
    if !failed.is_empty() {
        bail!(
            "containers an earlier orrery up left could not be removed: {failed:?}; see `runc \
             --root {} list`",
            work_dir.join("runc").display()
        );
    }
    let deadline = Instant::now() + settle;
    while !processes(state_dir).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    kill_all(&processes(state_dir));
    let left = processes(state_dir);
    if !left.is_empty() {
        bail!(
            "processes an earlier orrery up left do not end even on SIGKILL: {left:?}; run \
             orrery up --down as root"
        );
    }
    if found.bridge.is_some() {
        // The marker is only ever written for the dev node's default network.
        PodNetwork::teardown_leftovers(&NetworkConfig::default())
            .context("removing the pod network an earlier orrery up left")?;
    }
    unmark_network(state_dir);
    Ok(found)
}

/// SIGKILL to each `pid: …` of `processes`, then a moment for them to go.
fn kill_all(processes: &[String]) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let mut sent = false;
    for line in processes {
        if let Some(pid) = line
            .split_once(':')
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        {
            sent |= kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok();
        }
    }
    if sent {
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("orrery-up-left-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn a_state_directory_of_a_clean_stop_has_nothing_left() {
        let dir = temp_dir("clean");
        let found = find(&dir).expect("find");
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(found.describe(), "");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn a_process_of_its_node_is_left_and_clear_ends_it() {
        let dir = temp_dir("process");
        // `sh` waits in its builtin `read` on a pipe the test holds open: one process that never
        // forks (a loop running `sleep` showed its children, between fork and exec, under the
        // same command line), whose command line names the directory.
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("read line")
            .arg(node_dir(&dir).join("pod-1"))
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        // The new process's command line can show the spawner's for a moment after the spawn.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut found = find(&dir).expect("find");
        while found.processes.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            found = find(&dir).expect("find");
        }
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.id())).unwrap_or_default();
        assert_eq!(
            found.processes.len(),
            1,
            "{found:?}; the child's command line: {}",
            String::from_utf8_lossy(&cmdline)
        );
        assert!(
            found
                .describe()
                .contains("1 process(es) of its node or control plane"),
            "{}",
            found.describe()
        );
        let cleared = clear_within(&dir, Duration::from_millis(300)).expect("clear");
        assert_eq!(cleared, found);
        assert!(child.wait().expect("wait").code().is_none(), "killed");
        assert!(find(&dir).expect("find").is_empty());
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn a_marker_naming_no_existing_bridge_is_not_a_leftover_and_is_removed_by_clear() {
        let dir = temp_dir("marker");
        mark_network(
            &dir,
            &NetworkConfig::named("orxnone9", "10.9.8.0/24".parse().expect("net")),
        )
        .expect("mark");
        let found = find(&dir).expect("find");
        assert_eq!(found.bridge, None);
        clear(&dir).expect("clear");
        assert!(!marker(&dir).exists());
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
