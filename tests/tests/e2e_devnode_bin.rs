//! The `orrery-devnode` binary (the development node) against the real kube-apiserver: started with a kubeconfig, it
//! registers its Node and says so, runs a podtest pod to `Succeeded` (its output in the log
//! file the start-up line names), and on SIGTERM removes its Node and exits 0.
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, PostParams};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use orrery_tests::harness::{TIMEOUT, TestNamespace, wait_deleted, wait_for};
use orrery_tests::testenv;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The directory of the workspace's binaries (`orrery-podtest`, `orrery-devnode`).
fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_orrery-podtest"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Kills the binary if the test ends before it stopped it.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
}

#[tokio::test]
async fn the_devnode_binary_runs_a_pod_to_success_and_exits_cleanly_on_sigterm() -> Result<()> {
    let env = testenv::shared_async().await?;
    let ns = TestNamespace::create(env, "exec-bin").await?;
    let admin = env.admin().await?;
    let node = format!("node-{}", ns.name);
    let work_dir = std::env::temp_dir().join(format!("orrery-exec-bin-{}", ns.name));

    // Built when missing or stale (`cargo test` builds only a package's own binaries).
    let devnode = orrery_tests::harness::workspace_binary("orrery-devnode")?;
    let child = Command::new(&devnode)
        .arg("--kubeconfig")
        .arg(&env.kubeconfig)
        .args(["--node-name", &node, "--namespace", &ns.name])
        .arg("--bin-dir")
        .arg(bin_dir())
        .arg("--work-dir")
        .arg(&work_dir)
        .env_remove("ORRERY_TESTENV_KEEP")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("starting the orrery-devnode binary")?;
    let mut running = Running(child);
    let stdout = running.0.stdout.take().context("stdout pipe")?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(TIMEOUT, lines.next_line())
        .await
        .context("no start-up line from orrery-devnode")??
        .context("orrery-devnode closed stdout without a start-up line")?;
    ensure!(
        ready.contains(&format!("registered node {node}"))
            && ready.contains(&format!("pod logs go to {}", work_dir.display())),
        "start-up line: {ready}"
    );
    let nodes: Api<Node> = Api::all(admin.clone());
    ensure!(nodes.get_opt(&node).await?.is_some(), "node {node} exists");

    let pods: Api<Pod> = ns.api(&admin);
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "hello" },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{
                "name": "main",
                "image": "orrery/podtest:e2e",
                "args": ["--message", "hello from the binary"],
            }]
        }
    }))?;
    let created = pods.create(&PostParams::default(), &pod).await?;
    let done = wait_for(
        &pods,
        "hello",
        "phase Succeeded",
        TIMEOUT,
        |p: Option<&Pod>| {
            p.and_then(|p| p.status.as_ref())
                .and_then(|s| s.phase.as_deref())
                == Some("Succeeded")
        },
    )
    .await?
    .context("the pod vanished")?;
    assert_eq!(
        done.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        Some(node.as_str()),
        "bound to the binary's node"
    );
    let uid = created.metadata.uid.context("pod uid")?;
    let log = work_dir
        .join(format!("{}_hello_{uid}", ns.name))
        .join("logs/main.log");
    let text =
        std::fs::read_to_string(&log).with_context(|| format!("reading {}", log.display()))?;
    assert!(
        text.contains("hello from the binary"),
        "{}: {text}",
        log.display()
    );

    let pid = running.0.id().context("orrery-devnode pid")?;
    kill(Pid::from_raw(i32::try_from(pid)?), Signal::SIGTERM)?;
    let status = tokio::time::timeout(TIMEOUT, running.0.wait())
        .await
        .context("orrery-devnode did not exit after SIGTERM")??;
    assert_eq!(status.code(), Some(0), "exit status {status}");
    wait_deleted(&nodes, &node, TIMEOUT).await?;
    let _ = std::fs::remove_dir_all(&work_dir);
    Ok(())
}
