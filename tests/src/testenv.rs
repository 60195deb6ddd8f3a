//! The control-plane fixture: a real kube-apiserver + etcd + kube-controller-manager
//! (Kubernetes v1.36.3, built by `tests/testenv/build.sh`), one per test binary.
//!
//! [`shared()`] returns the test binary's control plane. It is, in order:
//! 1. the one whose kubeconfig `ORRERY_TESTENV_KUBECONFIG` names (started by CI or by hand with
//!    `testenv up --dir D`; its `D/env` is read when present);
//! 2. otherwise a fresh `testenv up`, started once and shared by every test of the binary. The
//!    binaries come from `ORRERY_TESTENV_BIN` or from `tests/testenv/build.sh` (cached; a cold
//!    build takes minutes and needs Go). The process exits when the test binary does: it holds
//!    the read end of a pipe (`--exit-on-stdin-eof`) and watches its parent.
//!
//! [`TestEnv::start`] starts a private control plane (stopped on drop) for tests that need one.
//! The users are `admin` (system:masters), `alice` and `bob` (no rights until a test grants
//! some); each is a context of the kubeconfig.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Names the kubeconfig of an already running control plane to use instead of starting one.
pub const KUBECONFIG_ENV: &str = "ORRERY_TESTENV_KUBECONFIG";
/// Names the directory holding `testenv` and `kubectl`, skipping `build.sh`.
pub const BIN_ENV: &str = "ORRERY_TESTENV_BIN";
/// The kubeconfig contexts (= users) `testenv up` writes.
pub const ADMIN: &str = "admin";
pub const ALICE: &str = "alice";
pub const BOB: &str = "bob";

/// How long to wait for `testenv up` to print its ready line.
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// A running control plane.
#[derive(Debug)]
pub struct TestEnv {
    /// Kubeconfig with contexts `admin` (current), `alice`, `bob`.
    pub kubeconfig: PathBuf,
    /// The testenv directory (kubeconfig, env, pki/, logs/).
    pub dir: PathBuf,
    /// `https://127.0.0.1:<port>`.
    pub server: String,
    /// Directory with `testenv` and `kubectl`, when known.
    pub bin: Option<PathBuf>,
    vars: HashMap<String, String>,
    process: Option<Process>,
}

#[derive(Debug)]
struct Process {
    child: Child,
    // Dropping it closes the pipe, which makes `testenv up --exit-on-stdin-eof` shut down.
    stdin: Option<ChildStdin>,
}

impl Drop for Process {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

static SHARED: OnceLock<Result<TestEnv, String>> = OnceLock::new();

/// The test binary's control plane (see the module docs). Blocks the first caller until it is
/// ready; later callers get it at once. A start-up failure is reported to every caller.
pub fn shared() -> Result<&'static TestEnv> {
    SHARED
        .get_or_init(|| {
            let env = match std::env::var_os(KUBECONFIG_ENV) {
                Some(kc) if !kc.is_empty() => TestEnv::existing(Path::new(&kc)),
                _ => bin_dir().and_then(|bin| TestEnv::start(&bin, &[])),
            };
            env.map_err(|e| format!("{e:#}"))
        })
        .as_ref()
        .map_err(|e| anyhow!("test control plane unavailable: {e}"))
}

/// [`shared()`] for async tests: the blocking start-up runs on tokio's blocking pool.
pub async fn shared_async() -> Result<&'static TestEnv> {
    tokio::task::spawn_blocking(shared)
        .await
        .context("testenv start-up task")?
}

/// The directory with the `testenv` and `kubectl` binaries: `$ORRERY_TESTENV_BIN`, or the
/// output of `tests/testenv/build.sh` (which builds them the first time).
pub fn bin_dir() -> Result<PathBuf> {
    if let Some(bin) = std::env::var_os(BIN_ENV).filter(|b| !b.is_empty()) {
        return Ok(PathBuf::from(bin));
    }
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| run_build_sh().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(|e| anyhow!(e))
}

fn run_build_sh() -> Result<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testenv")
        .join("build.sh");
    let out = Command::new(&script)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    if !out.status.success() {
        bail!("{} failed ({})", script.display(), out.status);
    }
    let stdout = String::from_utf8(out.stdout).context("build.sh output is not UTF-8")?;
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .context("build.sh printed no directory")?;
    Ok(PathBuf::from(last.trim()))
}

impl TestEnv {
    /// Starts a private control plane with `bin/testenv up --exit-on-stdin-eof [extra_args]`.
    /// It is stopped when the returned value is dropped (or the test process exits). It runs in
    /// a process group of its own, so a Ctrl-C in the terminal reaches the caller, which stops
    /// what runs on the control plane first, and not the control plane under it.
    pub fn start(bin: &Path, extra_args: &[&str]) -> Result<TestEnv> {
        use std::os::unix::process::CommandExt;
        let exe = bin.join("testenv");
        let mut child = Command::new(&exe)
            .process_group(0)
            .arg("up")
            .arg("--exit-on-stdin-eof")
            .args(extra_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", exe.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("no stdout pipe")?;
        let mut process = Process { child, stdin };

        // Read the one status line on a thread, so a hung start-up hits the timeout.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let r = BufReader::new(stdout).read_line(&mut line).map(|_| line);
            let _ = tx.send(r);
        });
        let line = match rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => return Err(e).context("reading the testenv ready line"),
            Err(_) => bail!("testenv did not get ready within {START_TIMEOUT:?}"),
        };
        let line = line.trim_end();
        let fields = parse_ready_line(line).with_context(|| match process.child.try_wait() {
            Ok(Some(status)) => format!("testenv exited ({status}); it printed {line:?}"),
            _ => format!("unexpected testenv output {line:?}"),
        })?;
        let kubeconfig = PathBuf::from(
            fields
                .get("kubeconfig")
                .context("ready line without kubeconfig=")?,
        );
        let mut env = TestEnv::existing(&kubeconfig)?;
        if env.bin.is_none() {
            env.bin = Some(bin.to_path_buf());
        }
        env.process = Some(process);
        Ok(env)
    }

    /// Uses a running control plane, given its kubeconfig. Reads `<dir>/env` next to it when
    /// present (written by `testenv up`).
    pub fn existing(kubeconfig: &Path) -> Result<TestEnv> {
        let kubeconfig = kubeconfig.to_path_buf();
        let dir = kubeconfig
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let vars = std::fs::read_to_string(dir.join("env"))
            .map(|s| parse_env(&s))
            .unwrap_or_default();
        let server = match vars.get("TESTENV_SERVER") {
            Some(s) => s.clone(),
            None => server_of(&kubeconfig)?,
        };
        let bin = std::env::var_os(BIN_ENV)
            .filter(|b| !b.is_empty())
            .map(PathBuf::from)
            .or_else(|| vars.get("TESTENV_BIN").map(PathBuf::from));
        Ok(TestEnv {
            kubeconfig,
            dir,
            server,
            bin,
            vars,
            process: None,
        })
    }

    /// A client acting as `user` (a kubeconfig context: [`ADMIN`], [`ALICE`], [`BOB`]).
    pub async fn client(&self, user: &str) -> Result<Client> {
        Client::try_from(self.config(user).await?).context("building the kube client")
    }

    /// The kube config of `user` (a kubeconfig context).
    pub async fn config(&self, user: &str) -> Result<kube::Config> {
        let kc = Kubeconfig::read_from(&self.kubeconfig)
            .with_context(|| format!("reading {}", self.kubeconfig.display()))?;
        let opts = KubeConfigOptions {
            context: Some(user.to_string()),
            ..Default::default()
        };
        kube::Config::from_custom_kubeconfig(kc, &opts)
            .await
            .with_context(|| format!("kubeconfig context {user:?}"))
    }

    /// A client acting as `admin` (group `system:masters`).
    pub async fn admin(&self) -> Result<Client> {
        self.client(ADMIN).await
    }

    /// `kubectl --kubeconfig <kubeconfig> --context <user>`: the built kubectl v1.36.3 when
    /// known, else `kubectl` from `PATH`.
    pub fn kubectl(&self, user: &str) -> Command {
        let mut cmd = Command::new(self.kubectl_exe());
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--context")
            .arg(user);
        cmd
    }

    /// The kubectl [`TestEnv::kubectl`] runs: the built one when known, else `kubectl`.
    pub fn kubectl_exe(&self) -> PathBuf {
        self.bin
            .as_ref()
            .map(|b| b.join("kubectl"))
            .filter(|p| p.exists())
            .unwrap_or_else(|| PathBuf::from("kubectl"))
    }

    /// A value from `<dir>/env`, e.g. `TESTENV_CA_FILE`, `TESTENV_ALICE_TOKEN`.
    pub fn var(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(String::as_str)
    }

    /// Whether this value owns the `testenv up` process (false for [`shared()`] reusing
    /// `ORRERY_TESTENV_KUBECONFIG`).
    pub fn owns_process(&self) -> bool {
        self.process.is_some()
    }
}

/// Parses `READY kubeconfig=... env=... server=... dir=... pid=...`; a `FAILED <reason>` line
/// becomes the error.
pub fn parse_ready_line(line: &str) -> Result<HashMap<String, String>> {
    if let Some(reason) = line.strip_prefix("FAILED") {
        bail!("testenv start-up failed: {}", reason.trim());
    }
    let rest = line
        .strip_prefix("READY ")
        .context("expected a READY line")?;
    Ok(rest
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

fn parse_env(s: &str) -> HashMap<String, String> {
    s.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.to_string()))
        .collect()
}

fn server_of(kubeconfig: &Path) -> Result<String> {
    let kc = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let ctx_name = kc.current_context.clone().unwrap_or_default();
    let cluster = kc
        .contexts
        .iter()
        .find(|c| c.name == ctx_name)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone())
        .or_else(|| kc.clusters.first().map(|c| c.name.clone()))
        .context("kubeconfig has no cluster")?;
    kc.clusters
        .iter()
        .find(|c| c.name == cluster)
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.server.clone())
        .with_context(|| format!("kubeconfig cluster {cluster:?} has no server"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn ready_line() -> Result<()> {
        let f = parse_ready_line(
            "READY kubeconfig=/tmp/d/kubeconfig env=/tmp/d/env server=https://127.0.0.1:1234 dir=/tmp/d pid=7",
        )?;
        assert_eq!(
            f.get("kubeconfig").map(String::as_str),
            Some("/tmp/d/kubeconfig")
        );
        assert_eq!(
            f.get("server").map(String::as_str),
            Some("https://127.0.0.1:1234")
        );
        assert!(parse_ready_line("FAILED kube-apiserver exited").is_err());
        assert!(parse_ready_line("garbage").is_err());
        Ok(())
    }
}
