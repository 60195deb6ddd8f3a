//! `orrery up` end to end, as a person runs it: the `orrery-up` binary (what `orrery up` hands
//! over to) with a state directory of its own.
//!
//! Detached: it returns once the whole system is up and the critic-loop demo run has
//! Succeeded in a runner pod (a runc container from the runner image, scheduled by the chart's
//! operator, itself running from its image); `--status` shows it with the run; the kubeconfig it
//! prints works; a second `orrery up` is refused; `--down` stops it and nothing of it is left
//! running. Detached runs with isolated pod networking (`--pod-network isolated`): the runner
//! pod has an address of its own on the bridge, and so has the operator's pod (runners reach its
//! sidecar through the chart's Service at a fixed cluster IP), the demo fleet's entries are `privateNetwork` https URLs on the gateway (behind
//! TLS fronts whose CA the pods trust through `runner.trustedCertificates`), probed Ready and
//! used by the run under its NetworkPolicy; after `--down` the bridge is gone. Foreground (pods
//! on the host's network, `--pod-network host`): Ctrl-C (SIGINT) once it is ready stops
//! everything, exit code 0.
//!
//! Killed (issue 29): after SIGKILL, `--status` reports the containers and the bridge it left
//! and `--down` removes them, as the next `orrery up` would.
//!
//! Each `orrery up` starts its own control plane (it does not use the tests' shared one). Needs
//! root, buildah and runc (scripts/test.sh installs them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client};
use orrery_crds::StudioRun;
use orrery_crds::run::RunPhase;
use orrery_up::{self as up, state};

const UP: &str = env!("CARGO_BIN_EXE_orrery-up");

/// One `orrery up` at a time: each makes the bridge `orrery0` and wants the same ports.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Long enough for a build of the images and the whole start.
const START_TIMEOUT: Duration = Duration::from_secs(600);

fn state_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("orrery-e2e-up-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn up_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(UP);
    cmd.arg("--state-dir")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null());
    cmd
}

fn run(dir: &Path, args: &[&str]) -> Result<Output> {
    let out = up_cmd(dir, args)
        .output()
        .with_context(|| format!("running orrery-up {args:?}"))?;
    Ok(out)
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The demo run's runner pod (it has ended; its status keeps its containers and address).
async fn demo_runner(pods: &Api<Pod>) -> Result<Pod> {
    pods.list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .find(|p| {
            p.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(up::DEMO_RUN))
        })
        .context("no runner pod of the demo run")
}

/// Isolated networking as `orrery up` sets it up: the runner had an address of its own on the
/// bridge (not the host's), so did the operator's pod, under the chart's NetworkPolicy, with
/// the chart's Service at its fixed cluster IP in front of it, the fleet's entries are private https entries on the gateway and Ready (probed from isolated
/// probe pods through the TLS fronts), and the run had its NetworkPolicy.
async fn isolated_as_promised(client: &Client, runner_ip: &str) -> Result<()> {
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use orrery_crds::registry::RegistryEntry;
    let subnet = "10.213.0.";
    ensure!(
        runner_ip.starts_with(subnet) && runner_ip != "10.213.0.1",
        "the runner pod's address {runner_ip} is not its own on the bridge"
    );
    let operator: Vec<Pod> = Api::<Pod>::namespaced(client.clone(), up::RELEASE_NAMESPACE)
        .list(&ListParams::default())
        .await?
        .items;
    let operator = operator.first().context("no operator pod")?;
    let operator_ip = operator
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .unwrap_or_default();
    ensure!(
        operator.spec.as_ref().and_then(|s| s.host_network) != Some(true)
            && operator_ip.starts_with(subnet)
            && operator_ip != "10.213.0.1"
            && operator_ip != runner_ip,
        "the operator's pod has no address of its own on the bridge: {operator_ip:?}"
    );
    let service = Api::<k8s_openapi::api::core::v1::Service>::namespaced(
        client.clone(),
        up::RELEASE_NAMESPACE,
    )
    .list(&ListParams::default())
    .await?
    .items;
    ensure!(
        service
            .iter()
            .any(|s| s.spec.as_ref().and_then(|s| s.cluster_ip.as_deref())
                == Some(up::SIDECAR_CLUSTER_IP)),
        "no Service of the release at {}",
        up::SIDECAR_CLUSTER_IP
    );
    let operator_policies = Api::<NetworkPolicy>::namespaced(client.clone(), up::RELEASE_NAMESPACE)
        .list(&ListParams::default())
        .await?
        .items;
    ensure!(
        !operator_policies.is_empty(),
        "the chart's NetworkPolicy for the operator's pod is missing"
    );
    let entries: Api<RegistryEntry> = Api::namespaced(client.clone(), up::NAMESPACE);
    let tools = entries.get("demo-tools").await?;
    let mcp = tools.spec.mcp.as_ref().context("demo-tools is not MCP")?;
    ensure!(
        mcp.private_network && mcp.url.starts_with("https://10.213.0.1:"),
        "demo-tools: {} private {}",
        mcp.url,
        mcp.private_network
    );
    let writer = entries.get("demo-writer").await?;
    let a2a = writer.spec.a2a.as_ref().context("demo-writer is not A2A")?;
    ensure!(
        a2a.private_network && a2a.card_url.starts_with("https://10.213.0.1:"),
        "demo-writer: {} private {}",
        a2a.card_url,
        a2a.private_network
    );
    let policies: Vec<String> = Api::<NetworkPolicy>::namespaced(client.clone(), up::NAMESPACE)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    ensure!(
        policies.iter().any(|n| n.starts_with(up::DEMO_RUN)),
        "no NetworkPolicy of the demo run: {policies:?}"
    );
    Ok(())
}

/// `--detach` printed the ready banner once (not also the background process's own, echoed
/// from its log), saying how to stop it from here: `--down`, not Ctrl-C.
fn banner_once_saying_down(out: &Output) -> Result<()> {
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(
        all.matches("Orrery Studio is up").count() == 1,
        "the banner is not printed exactly once:\n{}",
        text(out)
    );
    ensure!(
        !all.contains("Ctrl-C here"),
        "--detach says to stop it with Ctrl-C:\n{}",
        text(out)
    );
    Ok(())
}

/// Whether a network interface named `name` exists on the host.
fn link_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

async fn client_of(kubeconfig: &Path) -> Result<Client> {
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(kubeconfig)?,
        &KubeConfigOptions::default(),
    )
    .await?;
    Ok(Client::try_from(config)?)
}

/// Nothing of the environment runs: no process names its state directory (runc containers'
/// bundles, the control plane's data) and no `orrery-up` of it is alive.
fn nothing_left(dir: &Path) -> Result<()> {
    let left = orrery_tests::harness::processes_naming(&dir.to_string_lossy());
    ensure!(left.is_empty(), "processes left: {left:?}");
    ensure!(
        state::live(dir)?.is_none(),
        "a live orrery up in {}",
        dir.display()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orrery_up_brings_the_system_up_runs_the_demo_in_a_pod_and_leaves_nothing_behind()
-> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    // Detached, then --status, the kubeconfig, a refused second start, --down.
    let dir = state_dir("detached");
    let started = Instant::now();
    let out = tokio::task::spawn_blocking({
        let dir = dir.clone();
        move || {
            run(
                &dir,
                &[
                    "--detach",
                    "--sidecar-port",
                    "0",
                    "--pod-network",
                    "isolated",
                ],
            )
        }
    })
    .await??;
    let detached = async {
        ensure!(
            out.status.success(),
            "orrery up --detach failed:\n{}",
            text(&out)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        for want in [
            "Orrery Studio is up",
            "export KUBECONFIG=",
            "Stop: `orrery up --down`",
            "NetworkPolicies enforced",
        ] {
            ensure!(stdout.contains(want), "{want:?} missing:\n{}", text(&out));
        }
        banner_once_saying_down(&out)?;
        let st = state::live(&dir)?.context("no live state after --detach")?;
        ensure!(st.phase == state::Phase::Ready, "{st:?}");

        let status = run(&dir, &["--status"])?;
        ensure!(status.status.success(), "--status:\n{}", text(&status));
        ensure!(
            String::from_utf8_lossy(&status.stdout).contains("default/release-notes-1  Succeeded"),
            "--status does not show the demo run Succeeded:\n{}",
            text(&status)
        );

        let kubeconfig = st
            .kubeconfig
            .clone()
            .context("no kubeconfig in the state")?;
        let client = client_of(&kubeconfig).await?;
        let demo: StudioRun = Api::namespaced(client.clone(), up::NAMESPACE)
            .get(up::DEMO_RUN)
            .await?;
        let phase = demo.status.as_ref().and_then(|s| s.phase);
        ensure!(
            phase == Some(RunPhase::Succeeded),
            "the demo run is {phase:?}"
        );
        // It ran in a runner pod on the dev node, as a runc container.
        let pods: Api<Pod> = Api::namespaced(client.clone(), up::NAMESPACE);
        let runner = demo_runner(&pods).await?;
        let runner_ip = runner
            .status
            .as_ref()
            .and_then(|s| s.pod_ip.clone())
            .context("the runner pod has no podIP")?;
        let ids: Vec<String> = runner
            .status
            .and_then(|s| s.container_statuses)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|c| c.container_id)
            .collect();
        ensure!(
            !ids.is_empty() && ids.iter().all(|i| i.starts_with("runc://")),
            "the runner pod's containers: {ids:?}"
        );
        isolated_as_promised(&client, &runner_ip).await?;

        let again = run(&dir, &["--detach"])?;
        ensure!(
            !again.status.success()
                && String::from_utf8_lossy(&again.stderr).contains("already up"),
            "a second orrery up was not refused:\n{}",
            text(&again)
        );
        Ok(())
    }
    .await;
    let down = run(&dir, &["--down"])?;
    detached?;
    ensure!(down.status.success(), "--down:\n{}", text(&down));
    nothing_left(&dir)?;
    ensure!(
        !link_exists("orrery0"),
        "the bridge orrery0 is left after --down"
    );
    let status = run(&dir, &["--status"])?;
    ensure!(
        status.status.code() == Some(3),
        "--status after --down:\n{}",
        text(&status)
    );
    eprintln!("detached up and down: {:?}", started.elapsed());
    let _ = std::fs::remove_dir_all(&dir);

    // Foreground, then Ctrl-C once ready, as a terminal sends it: SIGINT to the job's whole
    // process group (orrery-up is started as a job of its own, like a shell does).
    let dir = state_dir("foreground");
    std::fs::create_dir_all(&dir)?;
    let log_path = dir.with_extension("stderr");
    let log = std::fs::File::create(&log_path)?;
    let mut child = {
        use std::os::unix::process::CommandExt;
        up_cmd(
            &dir,
            &["--no-run", "--sidecar-port", "0", "--pod-network", "host"],
        )
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()?
    };
    let group = nix::unistd::Pid::from_raw(i32::try_from(child.id())?);
    let log_text = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(code) = child.try_wait()? {
            bail!(
                "orrery up exited ({code}) before it was ready:\n{}",
                log_text()
            );
        }
        if state::read(&dir)?.is_some_and(|s| s.phase == state::Phase::Ready) {
            break;
        }
        if Instant::now() > deadline {
            // Stopped as it would be, so a slow start leaves nothing behind either.
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGTERM);
            let _ = tokio::task::spawn_blocking(move || child.wait()).await;
            bail!(
                "orrery up not ready within {START_TIMEOUT:?}:\n{}",
                log_text()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGINT)?;
    let status = tokio::task::spawn_blocking(move || child.wait()).await??;
    let stderr = log_text();
    ensure!(
        status.success(),
        "orrery up after Ctrl-C ({status}):\n{stderr}"
    );
    ensure!(stderr.contains("nothing of it runs now"), "{stderr}");
    let _ = std::fs::remove_file(&log_path);
    nothing_left(&dir)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// SIGKILL leaves the pods' containers and the bridge; `--status` says so (still "not up",
/// exit 3) and `--down` removes them, as the next `orrery up` does. Detached with `--no-run`, so
/// the banner (printed once) names no demo run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_orrery_up_is_killed_status_reports_what_it_left_and_down_removes_it() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let dir = state_dir("killed");
    let out = tokio::task::spawn_blocking({
        let dir = dir.clone();
        move || {
            run(
                &dir,
                &[
                    "--detach",
                    "--no-run",
                    "--sidecar-port",
                    "0",
                    "--pod-network",
                    "isolated",
                ],
            )
        }
    })
    .await??;
    let killed = async {
        ensure!(
            out.status.success(),
            "orrery up --detach --no-run failed:\n{}",
            text(&out)
        );
        banner_once_saying_down(&out)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        for never in ["studiorun release-notes-1", "studiorun/release-notes-1"] {
            ensure!(
                !stdout.contains(never),
                "--no-run, yet the hints name the demo run ({never}):\n{}",
                text(&out)
            );
        }
        let st = state::live(&dir)?.context("no live state after --detach")?;
        let pid = nix::unistd::Pid::from_raw(i32::try_from(st.pid)?);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL)?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while state::alive(st.pid) {
            ensure!(Instant::now() < deadline, "orrery up survived SIGKILL");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // What the kill left: the operator's pod's container, and the bridge.
        let left = up::leftovers::find(&dir)?;
        ensure!(
            !left.containers.is_empty() && left.bridge.as_deref() == Some("orrery0"),
            "the kill left no containers or no bridge, so this test proves nothing: {left:?}"
        );
        ensure!(link_exists("orrery0"), "no bridge after the kill");

        let status = run(&dir, &["--status"])?;
        let said = String::from_utf8_lossy(&status.stdout);
        ensure!(
            status.status.code() == Some(3)
                && said.contains("killed before it could stop")
                && said.contains("runc container")
                && said.contains("the pod bridge orrery0")
                && said.contains("orrery up --down"),
            "--status after a kill does not report what is left:\n{}",
            text(&status)
        );

        let down = run(&dir, &["--down"])?;
        ensure!(
            down.status.success()
                && String::from_utf8_lossy(&down.stdout).contains("removed what an orrery up"),
            "--down after a kill:\n{}",
            text(&down)
        );
        nothing_left(&dir)?;
        ensure!(
            !link_exists("orrery0"),
            "the bridge orrery0 is left after --down"
        );
        let left = up::leftovers::find(&dir)?;
        ensure!(left.is_empty(), "left after --down: {left:?}");
        let status = run(&dir, &["--status"])?;
        ensure!(
            status.status.code() == Some(3)
                && String::from_utf8_lossy(&status.stdout).contains("not running (no live"),
            "--status once it is all gone:\n{}",
            text(&status)
        );
        Ok(())
    }
    .await;
    // Whatever failed above, nothing stays running (the fix under test, or the next start).
    let _ = run(&dir, &["--down"]);
    killed?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
