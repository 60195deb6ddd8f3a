//! The pod executor against the real kube-apiserver: binding, the kubelet-like status
//! transitions, env/volume materialisation, `$(VAR)` expansion, restarts, deletion and
//! shutdown. Each test scopes its own executor (and Node) to its own namespace.
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use futures::FutureExt;
use k8s_openapi::api::core::v1::{ConfigMap, ContainerStatus, Node, Pod, PodCondition, Secret};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use orrery_tests::harness::{TIMEOUT, TestNamespace, eventually, wait_deleted, wait_for};
use orrery_tests::pod_executor::{
    CONTAINER_ID_PREFIX, ExecutorConfig, MOUNT_ROOT_ENV, PodExecutor,
};
use orrery_tests::testenv;
use serde_json::json;

/// The directory of this package's binaries (`orrery-podtest`); `orrery` is next to it when
/// the workspace is built.
fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_orrery-podtest"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

struct Fixture {
    ns: TestNamespace,
    admin: Client,
    exec: PodExecutor,
}

impl Fixture {
    async fn new(prefix: &str) -> Result<Fixture> {
        let env = testenv::shared_async().await?;
        let ns = TestNamespace::create(env, prefix).await?;
        let admin = env.admin().await?;
        let config = ExecutorConfig::new(format!("node-{}", ns.name))
            .namespace(&ns.name)
            .bin_dir(bin_dir())
            .api_server(&env.server);
        let exec = PodExecutor::start_with(admin.clone(), config).await?;
        Ok(Fixture { ns, admin, exec })
    }

    fn pods(&self) -> Api<Pod> {
        self.ns.api(&self.admin)
    }

    async fn create(&self, pod: serde_json::Value) -> Result<Pod> {
        let pod: Pod = serde_json::from_value(pod)?;
        Ok(self.pods().create(&PostParams::default(), &pod).await?)
    }

    async fn wait_phase(&self, name: &str, phase: &str) -> Result<Pod> {
        let want = phase.to_string();
        wait_for(
            &self.pods(),
            name,
            &format!("phase {phase}"),
            TIMEOUT,
            move |p: Option<&Pod>| phase_of(p) == Some(want.as_str()),
        )
        .await?
        .context("pod vanished")
    }

    async fn shutdown(self) -> Result<()> {
        self.exec.shutdown().await?;
        drop(self.ns);
        Ok(())
    }
}

/// Runs `test` with a fresh [`Fixture`], and shuts the executor down whether it passes, fails
/// or panics (so the namespace's pods end, the namespace can be deleted and no pod directory
/// is left behind).
async fn run(prefix: &str, test: impl AsyncFnOnce(&Fixture) -> Result<()>) -> Result<()> {
    let f = Fixture::new(prefix).await?;
    let result = AssertUnwindSafe(test(&f)).catch_unwind().await;
    let stopped = f.shutdown().await;
    match result {
        Ok(result) => result.and(stopped),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

fn phase_of(p: Option<&Pod>) -> Option<&str> {
    p.and_then(|p| p.status.as_ref())
        .and_then(|s| s.phase.as_deref())
}

/// A podtest pod that never restarts; its report goes to the termination message.
fn podtest(name: &str, args: &[&str]) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name },
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 5,
            "containers": [{
                "name": "main",
                "image": "orrery/podtest:e2e",
                "args": args,
                "env": [{ "name": "PODTEST_TERMINATION_FILE", "value": "/dev/termination-log" }]
            }]
        }
    })
}

fn container(pod: &Pod) -> Result<&ContainerStatus> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .context("no container status")
}

fn condition<'a>(pod: &'a Pod, type_: &str) -> Option<&'a PodCondition> {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
}

fn condition_status(pod: &Pod, type_: &str) -> Option<String> {
    condition(pod, type_).map(|c| c.status.clone())
}

fn terminated(pod: &Pod) -> Result<k8s_openapi::api::core::v1::ContainerStateTerminated> {
    container(pod)?
        .state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .context("container not terminated")
}

fn pid_of(pod: &Pod) -> Result<u32> {
    let id = container(pod)?
        .container_id
        .as_deref()
        .context("no containerID")?;
    Ok(id
        .strip_prefix(CONTAINER_ID_PREFIX)
        .with_context(|| format!("containerID {id}"))?
        .parse()?)
}

/// Whether process `pid` exists and is not a zombie.
fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

async fn wait_process_gone(pid: u32) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while process_alive(pid) {
        ensure!(Instant::now() < deadline, "process {pid} is still running");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_that_exits_0_succeeds_with_its_termination_message() -> Result<()> {
    run("pe-ok", async |f| {
        f.create(podtest("ok", &["--message", "all done"])).await?;
        let pod = f.wait_phase("ok", "Succeeded").await?;

        let spec = pod.spec.as_ref().context("spec")?;
        assert_eq!(spec.node_name.as_deref(), Some(f.exec.node_name()));
        let status = pod.status.as_ref().context("status")?;
        assert!(status.start_time.is_some());
        assert_eq!(status.pod_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(status.host_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(
            condition_status(&pod, "PodScheduled").as_deref(),
            Some("True")
        );
        assert_eq!(
            condition_status(&pod, "Initialized").as_deref(),
            Some("True")
        );
        let ready = condition(&pod, "Ready").context("Ready")?;
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_deref()),
            ("False", Some("PodCompleted"))
        );

        let t = terminated(&pod)?;
        assert_eq!(t.exit_code, 0);
        assert_eq!(t.reason.as_deref(), Some("Completed"));
        assert_eq!(t.message.as_deref(), Some("all done"));
        assert!(t.started_at.is_some() && t.finished_at.is_some());
        let c = container(&pod)?;
        assert!(!c.ready);
        assert_eq!(c.restart_count, 0);
        assert_eq!(c.image, "orrery/podtest:e2e");
        // Its output went to the log file.
        let log = f.exec.pod_dir(&pod).join("logs/main.log");
        assert_eq!(std::fs::read_to_string(&log)?, "all done\nall done\n");
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_that_exits_3_fails_with_reason_error() -> Result<()> {
    run("pe-fail", async |f| {
        f.create(podtest("bad", &["--message", "bad input", "--exit", "3"]))
            .await?;
        let pod = f.wait_phase("bad", "Failed").await?;
        let t = terminated(&pod)?;
        assert_eq!(t.exit_code, 3);
        assert_eq!(t.reason.as_deref(), Some("Error"));
        assert_eq!(t.message.as_deref(), Some("bad input"));
        assert_eq!(
            condition_status(&pod, "ContainersReady").as_deref(),
            Some("False")
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_container_without_a_message_file_reports_its_log_tail_when_asked() -> Result<()> {
    run("pe-logtail", async |f| {
        let mut pod = podtest("tail", &["--message", "stack trace here", "--exit", "2"]);
        // No termination file: only the log has the output.
        pod["spec"]["containers"][0]["env"] = json!([]);
        pod["spec"]["containers"][0]["terminationMessagePolicy"] = json!("FallbackToLogsOnError");
        f.create(pod).await?;
        let pod = f.wait_phase("tail", "Failed").await?;
        let t = terminated(&pod)?;
        assert_eq!(
            t.message.as_deref(),
            Some("stack trace here\nstack trace here")
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_pod_is_ready_and_deleting_it_stops_its_process() -> Result<()> {
    run("pe-run", async |f| {
        let mut sleeper = podtest("sleeper", &["--message", "up", "--sleep", "600"]);
        // A long grace period: a quick deletion shows SIGTERM (not SIGKILL after it) ended it.
        sleeper["spec"]["terminationGracePeriodSeconds"] = json!(30);
        f.create(sleeper).await?;
        let pods = f.pods();
        let pod = wait_for(&pods, "sleeper", "Ready", TIMEOUT, |p: Option<&Pod>| {
            p.is_some_and(|p| condition_status(p, "Ready").as_deref() == Some("True"))
        })
        .await?
        .context("pod vanished")?;
        assert_eq!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Running")
        );
        for c in [
            "PodScheduled",
            "Initialized",
            "ContainersReady",
            "Ready",
            "PodReadyToStartContainers",
        ] {
            assert_eq!(condition_status(&pod, c).as_deref(), Some("True"), "{c}");
        }
        let c = container(&pod)?;
        assert!(c.ready && c.started == Some(true));
        let running = c
            .state
            .as_ref()
            .and_then(|s| s.running.as_ref())
            .context("running")?;
        assert!(running.started_at.is_some());
        let pid = pid_of(&pod)?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))?;
        assert!(String::from_utf8_lossy(&cmdline).contains("orrery-podtest"));

        // Graceful deletion: SIGTERM (podtest exits at once), final status, then the pod is gone.
        let started = Instant::now();
        pods.delete("sleeper", &DeleteParams::default()).await?;
        wait_deleted(&pods, "sleeper", TIMEOUT).await?;
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{:?}",
            started.elapsed()
        );
        wait_process_gone(pid).await?;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_deleted_after_its_worker_ended_is_still_removed_by_the_node() -> Result<()> {
    run("pe-late", async |f| {
        // A pod deleted as its container exits reaches the API server while it still reads
        // Running, so it gets a grace period and waits for the node's final delete; the
        // node's worker for it may have ended already. Made certain here: the pod ends, its
        // status is set back to Running (as it read when the delete came), then it is deleted.
        f.create(podtest("late", &["--message", "done"])).await?;
        f.wait_phase("late", "Succeeded").await?;
        let pods = f.pods();
        pods.patch_status(
            "late",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "phase": "Running" } })),
        )
        .await?;
        pods.delete("late", &DeleteParams::default()).await?;
        let pod = pods.get_opt("late").await?;
        ensure!(
            pod.as_ref()
                .is_none_or(|p| p.metadata.deletion_timestamp.is_some()),
            "the pod is being deleted with a grace period"
        );
        wait_deleted(&pods, "late", Duration::from_secs(20)).await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_lowered_active_deadline_stops_a_running_pod_and_keeps_it_with_its_message() -> Result<()>
{
    run("pe-deadline", async |f| {
        let mut sleeper = podtest("deadline", &["--message", "up", "--sleep", "600"]);
        sleeper["spec"]["activeDeadlineSeconds"] = json!(3600);
        sleeper["spec"]["terminationGracePeriodSeconds"] = json!(30);
        f.create(sleeper).await?;
        let pods = f.pods();
        let running = wait_for(&pods, "deadline", "Running", TIMEOUT, |p: Option<&Pod>| {
            phase_of(p) == Some("Running")
        })
        .await?
        .context("pod vanished")?;
        let pid = pid_of(&running)?;
        // Lowering the deadline below the time the pod has run (what the operator does to
        // cancel a run) stops it with SIGTERM, and the object stays for its status.
        let patch = json!({ "spec": { "activeDeadlineSeconds": 1 } });
        pods.patch("deadline", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        let pod = f.wait_phase("deadline", "Failed").await?;
        let status = pod.status.as_ref().context("status")?;
        assert_eq!(status.reason.as_deref(), Some("DeadlineExceeded"));
        let t = terminated(&pod)?;
        assert_eq!(t.exit_code, 143, "ended by SIGTERM, not SIGKILL");
        let message = t.message.unwrap_or_default();
        assert!(
            message.contains("up") && message.contains("got SIGTERM"),
            "{message}"
        );
        wait_process_gone(pid).await?;
        assert!(pods.get_opt("deadline").await?.is_some(), "the pod is kept");
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_ignoring_sigterm_is_killed_after_the_grace_period() -> Result<()> {
    run("pe-kill", async |f| {
        let mut pod = podtest(
            "stubborn",
            &[
                "--ignore-sigterm",
                "--message",
                "ignoring",
                "--sleep",
                "600",
            ],
        );
        pod["spec"]["terminationGracePeriodSeconds"] = json!(2);
        f.create(pod).await?;
        let pod = f.wait_phase("stubborn", "Running").await?;
        let pid = pid_of(&pod)?;
        // Running is the process started; it ignores SIGTERM once it says so (a SIGTERM before
        // its handler exists would end it at once).
        let log = f.exec.pod_dir(&pod).join("logs/main.log");
        eventually(TIMEOUT, || async {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            ensure!(text.contains("ignoring"), "not ready yet: {text:?}");
            Ok(())
        })
        .await?;
        let pods = f.pods();
        let started = Instant::now();
        pods.delete("stubborn", &DeleteParams::default()).await?;
        wait_deleted(&pods, "stubborn", TIMEOUT).await?;
        let took = started.elapsed();
        assert!(
            took >= Duration::from_secs(2),
            "deleted after {took:?}, before the grace period"
        );
        assert!(took < Duration::from_secs(10), "deleted after {took:?}");
        wait_process_gone(pid).await?;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_secrets_config_maps_and_volumes_reach_the_process() -> Result<()> {
    run("pe-env", async |f| {
        let secret: Secret = serde_json::from_value(json!({
            "metadata": { "name": "creds" },
            "stringData": { "api-key": "s3cret", "user": "robot" }
        }))?;
        f.ns.api::<Secret>(&f.admin).create(&PostParams::default(), &secret).await?;
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": { "name": "settings" },
            "data": { "mode": "fast", "greeting": "hello" }
        }))?;
        f.ns.api::<ConfigMap>(&f.admin).create(&PostParams::default(), &cm).await?;

        let sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
        let ns_file = format!("{sa_dir}/namespace");
        let args = [
            "--env", "API_KEY", "--env", "MODE", "--env", "POD_NAME", "--env", "POD_NAMESPACE",
            "--env", "NODE", "--env", "PLAIN", "--env", "CFG_greeting", "--env", "KEY_FILE",
            "--env", "KUBERNETES_SERVICE_HOST", "--env", MOUNT_ROOT_ENV,
            "--file", "/etc/creds/api-key", "--file", "/etc/settings/hello.txt",
            "--file", "/scratch", "--file", &ns_file,
        ];
        let mut pod = podtest("env", &args);
        let c = &mut pod["spec"]["containers"][0];
        c["env"] = json!([
            { "name": "PODTEST_TERMINATION_FILE", "value": "/dev/termination-log" },
            { "name": "API_KEY", "valueFrom": { "secretKeyRef": { "name": "creds", "key": "api-key" } } },
            { "name": "MODE", "valueFrom": { "configMapKeyRef": { "name": "settings", "key": "mode" } } },
            { "name": "POD_NAME", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } },
            { "name": "POD_NAMESPACE", "valueFrom": { "fieldRef": { "fieldPath": "metadata.namespace" } } },
            { "name": "NODE", "valueFrom": { "fieldRef": { "fieldPath": "spec.nodeName" } } },
            { "name": "PLAIN", "value": "mode is $(MODE)" },
            { "name": "KEY_FILE", "value": "/etc/creds/api-key" }
        ]);
        c["envFrom"] = json!([{ "configMapRef": { "name": "settings" }, "prefix": "CFG_" }]);
        c["volumeMounts"] = json!([
            { "name": "creds", "mountPath": "/etc/creds", "readOnly": true },
            { "name": "settings", "mountPath": "/etc/settings" },
            { "name": "scratch", "mountPath": "/scratch" }
        ]);
        pod["spec"]["volumes"] = json!([
            { "name": "creds", "secret": { "secretName": "creds" } },
            { "name": "settings", "configMap": { "name": "settings",
                "items": [{ "key": "greeting", "path": "hello.txt" }] } },
            { "name": "scratch", "emptyDir": {} }
        ]);
        f.create(pod).await?;
        let pod = f.wait_phase("env", "Succeeded").await?;
        let report = terminated(&pod)?.message.context("no termination message")?;
        let lines: Vec<&str> = report.lines().collect();
        let root = lines
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{MOUNT_ROOT_ENV}=")))
            .context("no mount root")?
            .to_string();
        assert!(root.starts_with(&f.exec.work_dir().to_string_lossy().into_owned()), "{root}");
        let node = format!("NODE={}", f.exec.node_name());
        let pod_ns = format!("POD_NAMESPACE={}", f.ns.name);
        let key_file = format!("KEY_FILE={root}/etc/creds/api-key");
        let creds = format!("{root}/etc/creds/api-key: s3cret");
        let hello = format!("{root}/etc/settings/hello.txt: hello");
        // The service-account token volume the apiserver adds to every pod is there too.
        let sa_ns = format!("{root}{ns_file}: {}", f.ns.name);
        let want = [
            "API_KEY=s3cret",
            "MODE=fast",
            "POD_NAME=env",
            &pod_ns,
            &node,
            "PLAIN=mode is fast",
            "CFG_greeting=hello",
            &key_file,
            "KUBERNETES_SERVICE_HOST=127.0.0.1",
            &creds,
            &hello,
            &sa_ns,
        ];
        for w in want {
            assert!(lines.contains(&w), "missing {w:?} in:\n{report}");
        }
        // The emptyDir is a directory (reading it as a file fails).
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("{root}/scratch: <error"))),
            "{report}"
        );
        let token = std::fs::read_to_string(
            f.exec.pod_dir(&pod).join("containers/main/root").join(&sa_dir[1..]).join("token"),
        )?;
        assert_eq!(token.split('.').count(), 3, "not a JWT: {token}");
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_and_args_expand_variables_like_the_kubelet() -> Result<()> {
    run("pe-expand", async |f| {
        let mut pod = podtest("expand", &[]);
        let c = &mut pod["spec"]["containers"][0];
        c["command"] = json!([
            "/usr/local/bin/orrery-podtest",
            "--message",
            "$(GREETING), $(WHO)"
        ]);
        c["args"] = json!([
            "--message",
            "$$(GREETING)",
            "--message",
            "$(UNDEFINED)",
            "--message",
            "$(GREETING"
        ]);
        c["env"] = json!([
            { "name": "PODTEST_TERMINATION_FILE", "value": "/dev/termination-log" },
            { "name": "WHO", "value": "world" },
            { "name": "GREETING", "value": "hello $(WHO)" }
        ]);
        f.create(pod).await?;
        let pod = f.wait_phase("expand", "Succeeded").await?;
        let report = terminated(&pod)?
            .message
            .context("no termination message")?;
        assert_eq!(
            report,
            "hello world, world\n$(GREETING)\n$(UNDEFINED)\n$(GREETING"
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_containers_run_first_and_share_volumes_with_the_containers() -> Result<()> {
    run("pe-init", async |f| {
        let mut pod = podtest("init", &["--file", "/work/greeting"]);
        pod["spec"]["containers"][0]["volumeMounts"] =
            json!([{ "name": "work", "mountPath": "/work" }]);
        pod["spec"]["initContainers"] = json!([{
            "name": "prepare",
            "image": "orrery/podtest:e2e",
            "args": ["--write", "/work/greeting=hello from init"],
            "volumeMounts": [{ "name": "work", "mountPath": "/work" }]
        }]);
        pod["spec"]["volumes"] = json!([{ "name": "work", "emptyDir": {} }]);
        f.create(pod).await?;
        let pod = f.wait_phase("init", "Succeeded").await?;
        let report = terminated(&pod)?
            .message
            .context("no termination message")?;
        assert!(
            report.ends_with("/work/greeting: hello from init"),
            "{report}"
        );
        let init = pod
            .status
            .as_ref()
            .and_then(|s| s.init_container_statuses.as_ref())
            .and_then(|c| c.first())
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.terminated.as_ref())
            .context("no terminated init container")?;
        assert_eq!(
            (init.exit_code, init.reason.as_deref()),
            (0, Some("Completed"))
        );
        assert_eq!(
            condition_status(&pod, "Initialized").as_deref(),
            Some("True")
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_init_container_fails_the_pod_before_its_containers_start() -> Result<()> {
    run("pe-init-fail", async |f| {
        let mut pod = podtest("init-fails", &["--message", "never runs"]);
        pod["spec"]["initContainers"] = json!([{
            "name": "migrate", "image": "orrery/podtest:e2e", "args": ["--exit", "7"]
        }]);
        f.create(pod).await?;
        let pod = f.wait_phase("init-fails", "Failed").await?;
        let status = pod.status.as_ref().context("status")?;
        let init = status
            .init_container_statuses
            .as_ref()
            .and_then(|c| c.first())
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.terminated.as_ref())
            .context("no terminated init container")?;
        assert_eq!((init.exit_code, init.reason.as_deref()), (7, Some("Error")));
        let waiting = container(&pod)?
            .state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .context("the container is not waiting")?;
        assert_eq!(waiting.reason.as_deref(), Some("PodInitializing"));
        let initialized = condition(&pod, "Initialized").context("Initialized")?;
        assert_eq!(initialized.status, "False");
        assert_eq!(
            initialized.message.as_deref(),
            Some("containers with incomplete status: [migrate]")
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_image_fails_the_pod_with_a_clear_reason() -> Result<()> {
    run("pe-image", async |f| {
        let mut pod = podtest("busybox", &[]);
        pod["spec"]["containers"][0]["image"] = json!("busybox:1.36");
        f.create(pod).await?;
        let pod = f.wait_phase("busybox", "Failed").await?;
        let status = pod.status.as_ref().context("status")?;
        assert_eq!(status.reason.as_deref(), Some("ErrImagePull"));
        let want = "image \"busybox:1.36\" is not one of the project's images (orrery/runner, orrery/podtest)";
        assert_eq!(status.message.as_deref(), Some(want));
        let waiting = container(&pod)?
            .state
            .as_ref()
            .and_then(|s| s.waiting.clone())
            .context("waiting")?;
        assert_eq!(waiting.reason.as_deref(), Some("ErrImagePull"));
        assert_eq!(waiting.message.as_deref(), Some(want));
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runner_image_runs_the_orrery_binary() -> Result<()> {
    run("pe-runner", async |f| {
        let mut pod = podtest("runner", &["--version"]);
        pod["spec"]["containers"][0]["image"] = json!("orrery/runner:dev");
        f.create(pod).await?;
        let pod = f.wait_phase("runner", "Succeeded").await;
        let pod = match pod {
            Ok(p) => p,
            Err(e) => {
                let p = f.pods().get("runner").await?;
                bail!("{e:#}\nstatus: {:#?}", p.status);
            }
        };
        let log = std::fs::read_to_string(f.exec.pod_dir(&pod).join("logs/main.log"))?;
        assert!(log.starts_with("orrery "), "{log}");
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_secret_holds_the_container_until_it_exists() -> Result<()> {
    run("pe-late", async |f| {
        let mut pod = podtest("late", &["--env", "TOKEN"]);
        pod["spec"]["containers"][0]["env"] = json!([
            { "name": "PODTEST_TERMINATION_FILE", "value": "/dev/termination-log" },
            { "name": "TOKEN", "valueFrom": { "secretKeyRef": { "name": "late", "key": "token" } } }
        ]);
        f.create(pod).await?;
        let want = format!("Secret {}/late not found", f.ns.name);
        let pods = f.pods();
        let waiting = wait_for(
            &pods,
            "late",
            "CreateContainerConfigError",
            TIMEOUT,
            |p: Option<&Pod>| {
                p.and_then(|p| container(p).ok())
                    .and_then(|c| c.state.as_ref())
                    .and_then(|s| s.waiting.as_ref())
                    .is_some_and(|w| w.reason.as_deref() == Some("CreateContainerConfigError"))
            },
        )
        .await?
        .context("pod vanished")?;
        assert_eq!(phase_of(Some(&waiting)), Some("Pending"));
        let message = container(&waiting)?
            .state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.message.clone());
        assert_eq!(message.as_deref(), Some(want.as_str()));

        let secret: Secret = serde_json::from_value(json!({
            "metadata": { "name": "late" }, "stringData": { "token": "t0k" }
        }))?;
        f.ns.api::<Secret>(&f.admin)
            .create(&PostParams::default(), &secret)
            .await?;
        let pod = f.wait_phase("late", "Succeeded").await?;
        assert_eq!(terminated(&pod)?.message.as_deref(), Some("TOKEN=t0k"));
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_failure_pods_restart_with_a_count_and_the_last_state() -> Result<()> {
    run("pe-restart", async |f| {
        let mut pod = podtest("flaky", &["--message", "try again", "--exit", "1"]);
        pod["spec"]["restartPolicy"] = json!("OnFailure");
        f.create(pod).await?;
        let pods = f.pods();
        let pod = wait_for(&pods, "flaky", "a restart", TIMEOUT, |p: Option<&Pod>| {
            p.and_then(|p| container(p).ok())
                .is_some_and(|c| c.restart_count >= 1)
        })
        .await?
        .context("pod vanished")?;
        let c = container(&pod)?;
        let last = c
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .context("no lastState.terminated")?;
        assert_eq!(
            (last.exit_code, last.message.as_deref()),
            (1, Some("try again"))
        );
        assert_eq!(phase_of(Some(&pod)), Some("Running"));
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_is_ready_and_shutdown_ends_pods_like_a_node_shutdown() -> Result<()> {
    let f = Fixture::new("pe-node").await?;
    let nodes: Api<Node> = Api::all(f.admin.clone());
    let node = nodes.get(f.exec.node_name()).await?;
    let status = node.status.as_ref().context("node status")?;
    let ready = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .context("no Ready condition")?;
    assert_eq!(ready.status, "True");
    let capacity = status.capacity.as_ref().context("capacity")?;
    assert_eq!(capacity.get("pods").map(|q| q.0.as_str()), Some("110"));
    assert!(
        node.spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .is_none_or(Vec::is_empty)
    );

    f.create(podtest("long", &["--sleep", "600"])).await?;
    let pod = f.wait_phase("long", "Running").await?;
    let pid = pid_of(&pod)?;
    let Fixture { ns, admin, exec } = f;
    let node_name = exec.node_name().to_string();
    exec.shutdown().await?;
    wait_process_gone(pid).await?;
    let pod = ns.api::<Pod>(&admin).get("long").await?;
    let status = pod.status.as_ref().context("status")?;
    assert_eq!(status.phase.as_deref(), Some("Failed"));
    assert_eq!(status.reason.as_deref(), Some("Terminated"));
    assert_eq!(terminated(&pod)?.exit_code, 143);
    assert!(
        nodes.get_opt(&node_name).await?.is_none(),
        "the Node is still registered"
    );
    Ok(())
}
