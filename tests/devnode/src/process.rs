//! Container processes: spawned in their own process group (so a signal reaches everything
//! the container started), stdout and stderr appended to a log file, killed with the group when
//! dropped, and their termination message read like the kubelet does.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::sync::mpsc::UnboundedSender;

use crate::PodExecutorError;

/// The most of a termination message the kubelet keeps (bytes).
pub const MAX_TERMINATION_MESSAGE: usize = 4096;
/// `FallbackToLogsOnError`: at most this many bytes...
pub const MAX_FALLBACK_BYTES: usize = 2048;
/// ...of at most this many last log lines.
pub const MAX_FALLBACK_LINES: usize = 80;

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub log: PathBuf,
}

/// Kills the process group with SIGKILL when dropped (or at [`GroupGuard::finish`]): no
/// container process outlives the executor.
#[derive(Debug)]
pub struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    /// Sends `signal` to the group; a group that is gone is not an error.
    pub fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(Pid::from_raw(pgid), signal);
        }
    }

    /// Kills what is left of the group and forgets it.
    pub fn finish(&mut self) {
        self.signal(Signal::SIGKILL);
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
}

/// Starts `spec`; its exit status is sent to `exits` with `tag`.
pub fn spawn<T: Send + 'static>(
    spec: &Spec,
    tag: T,
    exits: UnboundedSender<(T, std::io::Result<ExitStatus>)>,
) -> Result<(u32, GroupGuard), PodExecutorError> {
    if let Some(dir) = spec.log.parent() {
        std::fs::create_dir_all(dir).map_err(|e| PodExecutorError::io("creating", dir, e))?;
    }
    std::fs::create_dir_all(&spec.cwd)
        .map_err(|e| PodExecutorError::io("creating", &spec.cwd, e))?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.log)
        .map_err(|e| PodExecutorError::io("opening", &spec.log, e))?;
    let log2 = log
        .try_clone()
        .map_err(|e| PodExecutorError::io("opening", &spec.log, e))?;
    let mut child = tokio::process::Command::new(&spec.program)
        .args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2))
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| PodExecutorError::io("starting", &spec.program, e))?;
    let pid = child.id().unwrap_or_default();
    let guard = GroupGuard {
        pgid: i32::try_from(pid).ok().filter(|p| *p > 0),
    };
    tokio::spawn(async move {
        let status = child.wait().await;
        let _ = exits.send((tag, status));
    });
    Ok((pid, guard))
}

/// `(exitCode, signal)` the way the kubelet reports them: a signal `n` is exit code `128 + n`.
pub fn exit_code(status: &std::io::Result<ExitStatus>) -> (i32, Option<i32>) {
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => (code, None),
            (None, Some(sig)) => (128 + sig, Some(sig)),
            (None, None) => (-1, None),
        },
        Err(_) => (-1, None),
    }
}

/// The termination message: the file at `terminationMessagePath` (at most
/// [`MAX_TERMINATION_MESSAGE`] bytes); with policy `FallbackToLogsOnError`, a failed container
/// with an empty file gets the tail of its log instead.
pub fn termination_message(
    file: &Path,
    policy: &str,
    log: &Path,
    exit_code: i32,
) -> Option<String> {
    let from_file = std::fs::read(file)
        .ok()
        .map(|b| truncate(&b, MAX_TERMINATION_MESSAGE))
        .filter(|s| !s.is_empty());
    if from_file.is_some() || policy != "FallbackToLogsOnError" || exit_code == 0 {
        return from_file;
    }
    let log = std::fs::read(log).ok()?;
    let text = String::from_utf8_lossy(&log);
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(MAX_FALLBACK_LINES)..].join("\n");
    let bytes = tail.as_bytes();
    let start = bytes.len().saturating_sub(MAX_FALLBACK_BYTES);
    Some(String::from_utf8_lossy(&bytes[start..]).into_owned()).filter(|s| !s.is_empty())
}

fn truncate(bytes: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(max)]).into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("orrery-process-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn termination_messages_come_from_the_file_or_the_log_tail_on_error() {
        let d = scratch("msg");
        let file = d.join("termination-log");
        let log = d.join("c.log");
        let lines: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, &lines).unwrap();

        std::fs::write(&file, "all good").unwrap();
        assert_eq!(
            termination_message(&file, "File", &log, 0).as_deref(),
            Some("all good")
        );
        std::fs::write(&file, "x".repeat(5000)).unwrap();
        assert_eq!(
            termination_message(&file, "File", &log, 0).map(|m| m.len()),
            Some(MAX_TERMINATION_MESSAGE)
        );

        std::fs::write(&file, "").unwrap();
        assert_eq!(termination_message(&file, "File", &log, 1), None);
        assert_eq!(
            termination_message(&file, "FallbackToLogsOnError", &log, 0),
            None
        );
        let tail = termination_message(&file, "FallbackToLogsOnError", &log, 1).unwrap();
        assert!(
            tail.starts_with("line 21\n") && tail.ends_with("line 100"),
            "{tail}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn signals_become_exit_codes_above_128() {
        let killed = ExitStatus::from_raw(9); // terminated by SIGKILL
        assert_eq!(exit_code(&Ok(killed)), (137, Some(9)));
        let exited = ExitStatus::from_raw(3 << 8); // exit(3)
        assert_eq!(exit_code(&Ok(exited)), (3, None));
    }

    #[tokio::test]
    async fn a_process_runs_in_its_own_group_and_its_output_goes_to_the_log() {
        let d = scratch("spawn");
        let spec = Spec {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                "echo out; echo err >&2; echo $FOO; exit 4".into(),
            ],
            env: vec![("FOO".into(), "bar".into())],
            cwd: d.join("cwd"),
            log: d.join("logs/c.log"),
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let (pid, _guard) = spawn(&spec, "c", tx).unwrap();
        assert!(pid > 0);
        let (tag, status) = rx.recv().await.unwrap();
        assert_eq!(tag, "c");
        assert_eq!(exit_code(&status), (4, None));
        let log = std::fs::read_to_string(d.join("logs/c.log")).unwrap();
        assert_eq!(log, "out\nerr\nbar\n");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[tokio::test]
    async fn dropping_the_guard_kills_the_whole_group() {
        let d = scratch("guard");
        let spec = Spec {
            program: "/bin/sh".into(),
            // A child in the same group that would outlive its parent.
            args: vec!["-c".into(), "sleep 30 & echo $! > child.pid; wait".into()],
            env: vec![],
            cwd: d.clone(),
            log: d.join("c.log"),
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let (_pid, guard) = spawn(&spec, (), tx).unwrap();
        let child_pid = loop {
            if let Ok(s) = std::fs::read_to_string(d.join("child.pid"))
                && s.ends_with('\n')
            {
                break s.trim().to_string();
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        drop(guard);
        let (_, status) = rx.recv().await.unwrap();
        assert_eq!(exit_code(&status), (137, Some(9)));
        // The grandchild was killed too (it may linger as a zombie of init for a moment).
        let proc = PathBuf::from(format!("/proc/{child_pid}/stat"));
        for _ in 0..100 {
            match std::fs::read_to_string(&proc) {
                Err(_) => break,
                Ok(stat) if stat.contains(") Z ") => break,
                Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        }
        let stat = std::fs::read_to_string(&proc).unwrap_or_default();
        assert!(stat.is_empty() || stat.contains(") Z "), "{stat}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
