//! The `runc` binary: run a bundle's container in the foreground (runc's exit status is the
//! container process's), kill it, delete it. Every call names a private state directory
//! (`runc --root DIR`), so the containers are never mixed with the machine's.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::OciError;

/// Overrides where `runc` is.
pub const RUNC_ENV: &str = "ORRERY_RUNC";

/// A signal for [`Runc::kill`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuncSignal {
    Term,
    Kill,
}

impl RuncSignal {
    fn name(self) -> &'static str {
        match self {
            RuncSignal::Term => "TERM",
            RuncSignal::Kill => "KILL",
        }
    }
}

/// Where a container's standard output and error go when it is [spawned](Runc::spawn).
#[derive(Debug)]
pub enum Output {
    /// Appended to these files.
    Files { stdout: PathBuf, stderr: PathBuf },
    /// Pipes, read from the returned [`Child`].
    Pipes,
    /// Discarded.
    Null,
}

/// How a container that ran to its end ended, and what it printed.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// runc's exit status: the container process's (128 + N when signal N ended it).
    pub status: ExitStatus,
    pub stdout: String,
    /// The container's standard error, and runc's own messages when it could not start it.
    pub stderr: String,
}

/// The `runc` binary with a private state directory.
#[derive(Debug, Clone)]
pub struct Runc {
    binary: PathBuf,
    state_root: PathBuf,
}

impl Runc {
    /// `runc` from `ORRERY_RUNC`, `PATH`, `/usr/sbin` or `/sbin`; containers' state in
    /// `state_root` (created by runc when missing).
    pub fn locate(state_root: &Path) -> Result<Self, OciError> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(path) = std::env::var_os(RUNC_ENV) {
            candidates.push(PathBuf::from(path));
        } else {
            if let Some(path) = std::env::var_os("PATH") {
                candidates.extend(std::env::split_paths(&path).map(|dir| dir.join("runc")));
            }
            candidates.push(PathBuf::from("/usr/sbin/runc"));
            candidates.push(PathBuf::from("/sbin/runc"));
        }
        let found = candidates.iter().find(|c| is_executable(c)).cloned();
        match found {
            Some(binary) => Ok(Runc::new(binary, state_root)),
            None => Err(OciError::RuncNotFound {
                looked: candidates
                    .iter()
                    .map(|c| c.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// A given `runc` binary.
    pub fn new(binary: PathBuf, state_root: &Path) -> Self {
        Runc {
            binary,
            state_root: state_root.to_path_buf(),
        }
    }

    pub fn binary(&self) -> &Path {
        &self.binary
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.binary);
        command.arg("--root").arg(&self.state_root);
        command
    }

    /// Starts `runc run --bundle BUNDLE ID` (the container in the foreground of that child;
    /// standard input is closed). Wait for the child for the container's exit status.
    pub fn spawn(&self, bundle: &Path, id: &str, output: Output) -> Result<Child, OciError> {
        let (stdout, stderr) = match output {
            Output::Files { stdout, stderr } => (append(&stdout)?, append(&stderr)?),
            Output::Pipes => (Stdio::piped(), Stdio::piped()),
            Output::Null => (Stdio::null(), Stdio::null()),
        };
        self.command()
            .arg("run")
            .arg("--bundle")
            .arg(bundle)
            .arg(id)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|e| OciError::io("starting runc", &self.binary, e))
    }

    /// Runs the container to its end (at most `timeout`: then it is killed, deleted and
    /// [`OciError::Timeout`] returned), its output in `<output_dir>/<id>.stdout` and `.stderr`.
    pub fn run(
        &self,
        bundle: &Path,
        id: &str,
        output_dir: &Path,
        timeout: Duration,
    ) -> Result<RunOutcome, OciError> {
        std::fs::create_dir_all(output_dir)
            .map_err(|e| OciError::io("creating the output directory", output_dir, e))?;
        let stdout = output_dir.join(format!("{id}.stdout"));
        let stderr = output_dir.join(format!("{id}.stderr"));
        for file in [&stdout, &stderr] {
            std::fs::write(file, b"").map_err(|e| OciError::io("creating", file, e))?;
        }
        let files = Output::Files {
            stdout: stdout.clone(),
            stderr: stderr.clone(),
        };
        let mut child = self.spawn(bundle, id, files)?;
        let deadline = Instant::now() + timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() >= deadline => {
                    // The container first, then runc itself should it still hang on.
                    let _ = self.kill(id, RuncSignal::Kill);
                    let _ = child.kill();
                    let _ = child.wait();
                    let _ = self.delete(id);
                    return Err(OciError::Timeout {
                        id: id.to_owned(),
                        timeout,
                        output: stderr,
                    });
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(OciError::io("waiting for runc", &self.binary, e)),
            }
        };
        // `runc run` removes the container when it ends; a failed start may leave it behind.
        self.delete(id)?;
        let read = |path: &Path| {
            std::fs::read(path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|e| OciError::io("reading the container's output", path, e))
        };
        Ok(RunOutcome {
            status,
            stdout: read(&stdout)?,
            stderr: read(&stderr)?,
        })
    }

    /// `runc kill ID SIGNAL`.
    pub fn kill(&self, id: &str, signal: RuncSignal) -> Result<(), OciError> {
        self.simple("kill", id, &["kill", id, signal.name()])
    }

    /// `runc delete --force ID`; a container that does not exist (any more) is fine.
    pub fn delete(&self, id: &str) -> Result<(), OciError> {
        match self.simple("delete", id, &["delete", "--force", id]) {
            Err(OciError::Runc { stderr, .. }) if stderr.contains("does not exist") => Ok(()),
            other => other,
        }
    }

    fn simple(&self, action: &'static str, id: &str, args: &[&str]) -> Result<(), OciError> {
        let output = self
            .command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| OciError::io("starting runc", &self.binary, e))?;
        if output.status.success() {
            return Ok(());
        }
        Err(OciError::Runc {
            action,
            id: id.to_owned(),
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

fn append(path: &Path) -> Result<Stdio, OciError> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map(Stdio::from)
        .map_err(|e| OciError::io("opening the container's output file", path, e))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn a_missing_runc_names_the_package_to_install() {
        let runc = Runc::new("/nonexistent/runc".into(), Path::new("/tmp/unused"));
        let err = runc.kill("c", RuncSignal::Term).expect_err("no binary");
        assert!(err.to_string().contains("/nonexistent/runc"), "{err}");
        let err = OciError::RuncNotFound {
            looked: "/usr/sbin/runc".into(),
        };
        assert!(err.to_string().contains("apt-get install runc"), "{err}");
    }

    #[test]
    fn signals_are_passed_by_name() {
        assert_eq!(RuncSignal::Term.name(), "TERM");
        assert_eq!(RuncSignal::Kill.name(), "KILL");
    }
}
