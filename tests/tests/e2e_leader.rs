//! Leader election, metrics, health and graceful shutdown of the `orrery-operator controller`
//! process against the real kube-apiserver: two operator processes (the real binary, built by
//! [`workspace_binary`]) campaign on one Lease in the test's namespace; only the holder
//! reconciles; killing it hands the Lease to the other; SIGTERM releases it and exits 0; a
//! leader whose Lease is taken stops and exits 1.
//!
//! The processes run with the admin kubeconfig, `--namespace <test namespace>` and the Lease in
//! that namespace, `examples/operator/config.yaml` with a test signing key, a short Lease
//! (6 s, renewed 2 s before expiry) and `--listen 127.0.0.1:0` (each prints the port it got).
//!
//! One test runs the chart with two replicas on PostgreSQL (`Studio::install_replicated`: each
//! operator pod in its own network namespace on the dev node): one pod holds the Lease and
//! reconciles; deleting it (a roll, a drain) hands the Lease to another pod (the other replica
//! or the Deployment's replacement, never the deleted one), which runs the next
//! run.
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use axum::http::Method;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use orrery_crds::Composition;
use orrery_crds::registry::RegistryEntry;
use orrery_tests::fault_proxy::{Fault, FaultProxy, Matcher};
use orrery_tests::harness::{
    TIMEOUT, TestNamespace, apply_yaml, ensure_crds, eventually, has_condition, keep, unique_name,
    wait_for, workspace_binary, workspace_root,
};
use orrery_tests::operator_fixture::TEST_SIGNING_KEY;
use orrery_tests::testenv::{self, TestEnv};

/// The Lease's duration and grace in these tests (the defaults are 15 s and 5 s).
const LEASE_DURATION: u64 = 6;
const LEASE_GRACE: u64 = 2;
/// How long past the Lease's duration a standby may take to take over a killed leader: it
/// notices when the Lease it last read expires (at most the duration after the last renewal)
/// plus up to 1 s of kube-lease-manager's random back-off; the rest is room for a loaded
/// 2-core machine.
const TAKEOVER_MARGIN: Duration = Duration::from_secs(10);
const LEASE_NAME: &str = "orrery-operator";
/// The short Lease most tests use.
const SHORT: (u64, u64) = (LEASE_DURATION, LEASE_GRACE);

/// A directory with the operator's config and signing key, removed on drop unless kept.
struct Files {
    dir: PathBuf,
    config: PathBuf,
}

impl Files {
    fn write() -> Result<Files> {
        let dir = std::env::temp_dir().join(unique_name("orrery-e2e-leader"));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let key = dir.join("key.pem");
        std::fs::write(&key, TEST_SIGNING_KEY)?;
        let example = workspace_root().join("examples/operator/config.yaml");
        let mut config: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&example)?)?;
        let run_token = config
            .get_mut("runToken")
            .and_then(serde_yaml::Value::as_mapping_mut)
            .context("the example config has runToken")?;
        run_token.insert(
            "signingKeyFile".into(),
            key.to_string_lossy().into_owned().into(),
        );
        let path = dir.join("config.yaml");
        std::fs::write(&path, serde_yaml::to_string(&config)?)?;
        Ok(Files { dir, config: path })
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        if !keep() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// One `orrery-operator controller` process; SIGKILLed on drop if still running.
struct Operator {
    identity: String,
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
    base: String,
}

impl Operator {
    /// Starts a candidate for the Lease `orrery-operator` in `namespace`, with `identity` and
    /// a Lease of `duration` seconds renewed `grace` seconds before expiry.
    async fn start(
        bin: &Path,
        env: &TestEnv,
        files: &Files,
        namespace: &str,
        identity: &str,
        lease: (u64, u64),
    ) -> Result<Operator> {
        Operator::start_with(bin, &env.kubeconfig, files, namespace, identity, lease).await
    }

    /// [`Operator::start`] with the kubeconfig `kubeconfig`.
    async fn start_with(
        bin: &Path,
        kubeconfig: &Path,
        files: &Files,
        namespace: &str,
        identity: &str,
        (duration, grace): (u64, u64),
    ) -> Result<Operator> {
        let duration = duration.to_string();
        let grace = grace.to_string();
        let election = [
            "--leader-election-namespace",
            namespace,
            "--leader-election-identity",
            identity,
            "--lease-duration",
            &duration,
            "--lease-grace",
            &grace,
        ];
        Operator::spawn(bin, kubeconfig, files, namespace, identity, &election).await
    }

    /// Starts `orrery-operator controller` for `namespace` with `extra` flags; `identity`
    /// names it in the test's log.
    async fn spawn(
        bin: &Path,
        kubeconfig: &Path,
        files: &Files,
        namespace: &str,
        identity: &str,
        extra: &[&str],
    ) -> Result<Operator> {
        let mut child = Command::new(bin)
            .arg("controller")
            .arg("--config")
            .arg(&files.config)
            .args(["--namespace", namespace])
            .args(extra)
            .args(["--listen", "127.0.0.1:0"])
            .env("KUBECONFIG", kubeconfig)
            .env_remove("POD_NAME")
            .env_remove("POD_NAMESPACE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let log = Arc::new(Mutex::new(Vec::new()));
        if let Some(stderr) = child.stderr.take() {
            let log = log.clone();
            let id = identity.to_owned();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    eprintln!("[{id}] {line}");
                    if let Ok(mut log) = log.lock() {
                        log.push(line);
                    }
                }
            });
        }
        let mut operator = Operator {
            identity: identity.to_owned(),
            child,
            log,
            base: String::new(),
        };
        let line = operator
            .wait_log("serving /metrics", TIMEOUT)
            .await
            .context("the operator prints where it serves")?;
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .with_context(|| format!("no URL in {line:?}"))?;
        operator.base = url.trim_end_matches('/').to_owned();
        Ok(operator)
    }

    fn lines(&self) -> Vec<String> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Waits until a log line contains `needle`; returns it.
    async fn wait_log(&mut self, needle: &str, timeout: Duration) -> Result<String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(line) = self.lines().into_iter().find(|l| l.contains(needle)) {
                return Ok(line);
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "{} exited ({status}) before logging {needle:?}; log: {:#?}",
                    self.identity,
                    self.lines()
                );
            }
            if tokio::time::Instant::now() >= deadline {
                bail!(
                    "{} did not log {needle:?} within {timeout:?}; log: {:#?}",
                    self.identity,
                    self.lines()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// GET `path`: the status code and the body.
    async fn get(&self, path: &str) -> Result<(u16, String)> {
        let response = reqwest::get(format!("{}{path}", self.base))
            .await
            .with_context(|| format!("GET {path} of {}", self.identity))?;
        let status = response.status().as_u16();
        Ok((status, response.text().await?))
    }

    async fn metric(&self, series: &str) -> Result<f64> {
        let (status, text) = self.get("/metrics").await?;
        ensure!(status == 200, "/metrics of {}: {status}", self.identity);
        metric(&text, series).with_context(|| format!("{series} in /metrics of {}", self.identity))
    }

    fn signal(&self, signal: nix::sys::signal::Signal) -> Result<()> {
        let pid = i32::try_from(self.child.id()).context("the pid fits an i32")?;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal)
            .with_context(|| format!("sending {signal} to {}", self.identity))
    }

    /// Waits for the process to exit; its status.
    async fn exited(&mut self, timeout: Duration) -> Result<ExitStatus> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if tokio::time::Instant::now() >= deadline {
                bail!(
                    "{} still runs after {timeout:?}; log: {:#?}",
                    self.identity,
                    self.lines()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// The value of `series` (name with its labels, as printed) in Prometheus text.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// The process stopped its controllers without hitting --shutdown-timeout.
fn assert_drained(op: &Operator) {
    assert!(
        !op.lines().iter().any(|l| l.contains("did not stop within")),
        "{} drained without the shutdown timeout: {:#?}",
        op.identity,
        op.lines()
    );
}

fn composition(name: &str) -> String {
    format!(
        "apiVersion: studio.orrery.dev/v1alpha1\nkind: Composition\nmetadata:\n  name: {name}\n\
         spec:\n  pattern: Pipeline\n  nodes:\n    - {{id: editor, kind: LLMAgent, model: scripted, \
         instruction: Tighten the draft.}}\n"
    )
}

async fn holder(leases: &Api<Lease>) -> Result<Option<String>> {
    Ok(leases
        .get_opt(LEASE_NAME)
        .await?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity))
}

/// Waits until the Lease is held by one of `candidates`; returns the holder.
async fn wait_holder(
    leases: &Api<Lease>,
    candidates: &[&str],
    timeout: Duration,
) -> Result<String> {
    eventually(timeout, || async {
        match holder(leases).await? {
            Some(h) if candidates.contains(&h.as_str()) => Ok(h),
            other => bail!("the Lease is held by {other:?}, not one of {candidates:?}"),
        }
    })
    .await
}

async fn setup(prefix: &str) -> Result<(&'static TestEnv, TestNamespace, Client, PathBuf, Files)> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, prefix).await?;
    let client = env.admin().await?;
    let bin = tokio::task::spawn_blocking(|| workspace_binary("orrery-operator"))
        .await
        .context("the build task")??;
    let scripted =
        std::fs::read_to_string(workspace_root().join("examples/registry/scripted.yaml"))?;
    apply_yaml(&client, Some(&ns.name), &scripted).await?;
    Ok((env, ns, client, bin, Files::write()?))
}

async fn wait_valid(api: &Api<Composition>, name: &str) -> Result<()> {
    wait_for(
        api,
        name,
        "Valid=True",
        TIMEOUT,
        has_condition::<Composition>("Valid", "True"),
    )
    .await
    .map(|_| ())
}

#[tokio::test]
async fn of_two_operators_only_the_lease_holder_reconciles_and_the_other_takes_over_when_it_is_killed()
-> Result<()> {
    let (env, ns, client, bin, files) = setup("op-leader").await?;
    let a = Operator::start(&bin, env, &files, &ns.name, "op-a", SHORT).await?;
    let b = Operator::start(&bin, env, &files, &ns.name, "op-b", SHORT).await?;
    let leases: Api<Lease> = ns.api(&client);
    let first = wait_holder(&leases, &["op-a", "op-b"], TIMEOUT).await?;
    let (mut leader, mut standby) = if first == "op-a" { (a, b) } else { (b, a) };

    // The leader is ready once its controllers can list what they watch; the standby is
    // ready to take over and says who holds the Lease.
    // The Lease can name the leader a moment before the leader itself has seen its renewal
    // succeed (until then it still says "standby: … held by nobody yet", also 200), so wait for
    // its words, not only its status.
    let (code, body) = eventually(TIMEOUT, || async {
        let (code, body) = leader.get("/readyz").await?;
        ensure!(
            code == 200 && body.trim() == "leader: controllers running",
            "{code} {body}"
        );
        Ok((code, body))
    })
    .await?;
    assert_eq!((code, body.trim()), (200, "leader: controllers running"));
    let want = format!("standby: the Lease is held by {first}");
    eventually(TIMEOUT, || async {
        let (code, body) = standby.get("/readyz").await?;
        ensure!((code, body.trim()) == (200, want.as_str()), "{code} {body}");
        Ok(())
    })
    .await
    .context("the standby is ready and names the holder")?;
    for op in [&leader, &standby] {
        assert_eq!(op.get("/healthz").await?.0, 200, "{}", op.identity);
    }
    standby
        .wait_log(&format!("held by {first}"), TIMEOUT)
        .await
        .context("the standby logs who holds the Lease")?;

    // Only the leader reconciles.
    let compositions: Api<Composition> = ns.api(&client);
    apply_yaml(&client, Some(&ns.name), &composition("first")).await?;
    wait_valid(&compositions, "first").await?;
    assert!(
        leader
            .metric("orrery_reconciles_total{kind=\"Composition\"}")
            .await?
            >= 1.0
    );
    // The scripted entry gets its status from the leader (and so a counted reconcile).
    wait_for(
        &ns.api::<RegistryEntry>(&client),
        "scripted",
        "Ready=True",
        TIMEOUT,
        has_condition::<RegistryEntry>("Ready", "True"),
    )
    .await?;
    assert!(
        leader
            .metric("orrery_reconciles_total{kind=\"RegistryEntry\"}")
            .await?
            >= 1.0,
        "the scripted entry was reconciled"
    );
    assert_eq!(leader.metric("orrery_leader").await?, 1.0);
    assert_eq!(standby.metric("orrery_leader").await?, 0.0);
    for kind in ["Composition", "RegistryEntry", "StudioRun"] {
        assert_eq!(
            standby
                .metric(&format!("orrery_reconciles_total{{kind=\"{kind}\"}}"))
                .await?,
            0.0,
            "the standby reconciled no {kind}"
        );
    }
    assert_eq!(holder(&leases).await?.as_deref(), Some(first.as_str()));

    // SIGKILL: the Lease is not released; the standby takes over once it expires.
    leader.signal(nix::sys::signal::Signal::SIGKILL)?;
    leader.exited(TIMEOUT).await?;
    let takeover = Duration::from_secs(LEASE_DURATION) + TAKEOVER_MARGIN;
    let second = wait_holder(&leases, &[standby.identity.as_str()], takeover)
        .await
        .with_context(|| format!("the standby takes the Lease within {takeover:?} of the kill"))?;
    standby
        .wait_log("leading", TIMEOUT)
        .await
        .context("the new leader says it leads")?;
    apply_yaml(&client, Some(&ns.name), &composition("second")).await?;
    wait_valid(&compositions, "second").await?;
    assert_eq!(standby.metric("orrery_leader").await?, 1.0);
    assert!(
        standby
            .metric("orrery_reconciles_total{kind=\"Composition\"}")
            .await?
            >= 1.0
    );

    // SIGTERM: the reconciles in flight finish, the Lease is released, exit 0.
    standby.signal(nix::sys::signal::Signal::SIGTERM)?;
    let status = standby.exited(TIMEOUT).await?;
    assert!(
        status.success(),
        "{second} exits 0 on SIGTERM: {status}; log: {:#?}",
        standby.lines()
    );
    assert!(
        standby
            .lines()
            .iter()
            .any(|l| l.contains("released the Lease")),
        "{:#?}",
        standby.lines()
    );
    assert_drained(&standby);
    let lease = leases.get(LEASE_NAME).await?;
    let spec = lease.spec.unwrap_or_default();
    assert_eq!(
        (spec.holder_identity, spec.renew_time),
        (None, None),
        "SIGTERM released the Lease (no holder, no renewal)"
    );
    Ok(())
}

#[tokio::test]
async fn a_leader_whose_lease_is_taken_stops_its_controllers_and_exits_1() -> Result<()> {
    let (env, ns, client, bin, files) = setup("op-lost").await?;
    let mut op = Operator::start(&bin, env, &files, &ns.name, "op-c", SHORT).await?;
    let leases: Api<Lease> = ns.api(&client);
    wait_holder(&leases, &["op-c"], TIMEOUT).await?;
    op.wait_log("leading", TIMEOUT).await?;

    // Another candidate takes the Lease over (as after a partition): at its next renewal the
    // leader reads the new holder and must stop.
    let patch = serde_json::json!({
        "spec": { "holderIdentity": "intruder", "renewTime": MicroTime(Timestamp::now()) }
    });
    leases
        .patch(LEASE_NAME, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let status = op
        .exited(Duration::from_secs(LEASE_DURATION) + TIMEOUT)
        .await?;
    assert_eq!(status.code(), Some(1), "{:#?}", op.lines());
    assert!(
        op.lines()
            .iter()
            .any(|l| l.contains("lost the leader Lease") && l.contains("intruder")),
        "{:#?}",
        op.lines()
    );
    assert_eq!(holder(&leases).await?.as_deref(), Some("intruder"));
    Ok(())
}

/// `env`'s kubeconfig with its server the fault proxy's (and the proxy's CA, written beside
/// it), its credentials kept; returns its path.
fn kubeconfig_through(env: &TestEnv, proxy: &FaultProxy, files: &Files) -> Result<PathBuf> {
    let ca = files.dir.join("proxy-ca.pem");
    std::fs::write(&ca, proxy.ca().pem())?;
    let mut config: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&env.kubeconfig)?)?;
    let clusters = config
        .get_mut("clusters")
        .and_then(serde_yaml::Value::as_sequence_mut)
        .context("the kubeconfig has clusters")?;
    for cluster in clusters {
        let cluster = cluster
            .get_mut("cluster")
            .and_then(serde_yaml::Value::as_mapping_mut)
            .context("a cluster entry")?;
        cluster.remove("certificate-authority-data");
        cluster.insert("server".into(), proxy.url().into());
        cluster.insert(
            "certificate-authority".into(),
            ca.to_string_lossy().into_owned().into(),
        );
    }
    let path = files.dir.join("kubeconfig-through-proxy");
    std::fs::write(&path, serde_yaml::to_string(&config)?)?;
    Ok(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_held_in_flight_while_its_leader_loses_the_lease_never_lands_over_the_new_leaders_fault_3()
-> Result<()> {
    let (env, ns, client, bin, files) = setup("op-handover").await?;
    let proxy = FaultProxy::start(env).await?;
    // The old leader reaches the API server through the fault proxy, the new one directly.
    let through = kubeconfig_through(env, &proxy, &files)?;
    let mut old = Operator::start_with(&bin, &through, &files, &ns.name, "op-old", SHORT).await?;
    let leases: Api<Lease> = ns.api(&client);
    wait_holder(&leases, &["op-old"], TIMEOUT).await?;
    old.wait_log("leading", TIMEOUT).await?;
    let mut new = Operator::start(&bin, env, &files, &ns.name, "op-new", SHORT).await?;
    new.wait_log("held by op-old", TIMEOUT).await?;

    // The old leader's status write for a new Composition is held in flight.
    let holding = std::time::Instant::now();
    proxy.set(
        Fault::Hold,
        Matcher::of(Method::PATCH, "/compositions/handed/status"),
    );
    apply_yaml(&client, Some(&ns.name), &composition("handed")).await?;
    eventually(TIMEOUT, || async {
        ensure!(proxy.held() >= 1, "no status write held yet");
        Ok(())
    })
    .await?;
    // Then it cannot renew its Lease: it stops and exits 1, its write still in flight.
    proxy.set(Fault::Reset, Matcher::of(Method::PATCH, "/leases/"));
    let status = old
        .exited(Duration::from_secs(LEASE_DURATION) + TIMEOUT)
        .await?;
    assert_eq!(status.code(), Some(1), "{:#?}", old.lines());
    assert!(proxy.held() >= 1, "the old leader's write is still held");

    // The new leader takes over and writes the Composition's status, then again once it is
    // changed (an edge to a node that does not exist: no longer valid).
    wait_holder(
        &leases,
        &["op-new"],
        Duration::from_secs(LEASE_DURATION) + TAKEOVER_MARGIN,
    )
    .await?;
    let compositions: Api<Composition> = ns.api(&client);
    wait_valid(&compositions, "handed").await?;
    let broken = format!(
        "{}  edges:\n    - {{from: editor, to: ghost}}\n",
        composition("handed")
    );
    apply_yaml(&client, Some(&ns.name), &broken).await?;
    let judged = |c: Option<&Composition>| {
        c.and_then(|c| c.status.as_ref()).is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.r#type == "Valid"
                    && c.status == orrery_crds::ConditionStatus::False
                    && c.observed_generation == Some(2)
            })
        })
    };
    wait_for(
        &compositions,
        "handed",
        "Valid=False at generation 2",
        TIMEOUT,
        judged,
    )
    .await?;

    // The old write goes on now, late: the API server refuses it (it names the version the
    // old leader read), and the new leader's status stands.
    proxy.release();
    eventually(TIMEOUT, || async {
        let refused = proxy.answered(0, &Method::PATCH, "/compositions/handed/status", 409);
        ensure!(
            refused == 1,
            "the held write was answered 409: {:?}",
            proxy.seen()
        );
        Ok(())
    })
    .await?;
    let after = compositions.get("handed").await?;
    assert!(judged(Some(&after)), "{:?}", after.status);
    assert_eq!(
        proxy
            .seen()
            .iter()
            .filter(|s| {
                s.at >= holding && s.path.contains("/compositions/handed/status") && s.status == 200
            })
            .count(),
        0,
        "no status write of the old leader's for it landed"
    );
    drop(new);
    proxy.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_leader_stopped_with_sigterm_releases_the_lease_and_the_standby_takes_it_before_it_would_expire()
-> Result<()> {
    let (env, ns, client, bin, files) = setup("op-release").await?;
    // A long Lease (30 s, renewed 10 s before expiry): whenever the leader stops, its Lease
    // would stay valid for at least 10 s more, so a takeover before that expiry can only come
    // from the release.
    let long = (30, 10);
    let mut first = Operator::start(&bin, env, &files, &ns.name, "op-d", long).await?;
    let leases: Api<Lease> = ns.api(&client);
    wait_holder(&leases, &["op-d"], TIMEOUT).await?;
    first.wait_log("leading", TIMEOUT).await?;
    let mut second = Operator::start(&bin, env, &files, &ns.name, "op-e", long).await?;
    second.wait_log("held by op-d", TIMEOUT).await?;

    // The Lease's expiry just before the leader is told to stop (a renewal after this read
    // only moves the real expiry later, which makes the check below stricter).
    let held = leases.get(LEASE_NAME).await?.spec.unwrap_or_default();
    first.signal(nix::sys::signal::Signal::SIGTERM)?;
    let status = first.exited(TIMEOUT).await?;
    assert!(status.success(), "{status}; log: {:#?}", first.lines());
    wait_holder(&leases, &["op-e"], TIMEOUT).await?;
    second.wait_log("leading", TIMEOUT).await?;
    let taken = leases.get(LEASE_NAME).await?.spec.unwrap_or_default();
    let (Some(renewed), Some(seconds)) = (held.renew_time.clone(), held.lease_duration_seconds)
    else {
        bail!("the held Lease has renewTime and leaseDurationSeconds: {held:?}");
    };
    let expiry = renewed.0 + k8s_openapi::jiff::SignedDuration::from_secs(i64::from(seconds));
    let acquired = taken
        .acquire_time
        .context("the new holder set acquireTime")?;
    assert!(
        acquired.0 < expiry,
        "op-e acquired the Lease at {} before op-d's would have expired at {expiry}",
        acquired.0
    );
    // Stopped at once, while its controllers may still be listing: it must not wait for
    // --shutdown-timeout (20 s) since no reconcile is in flight.
    second.signal(nix::sys::signal::Signal::SIGTERM)?;
    let status = second.exited(TIMEOUT).await?;
    assert!(status.success(), "{status}; log: {:#?}", second.lines());
    assert_drained(&second);
    assert_drained(&first);
    Ok(())
}

#[tokio::test]
async fn without_leader_election_one_process_reconciles_at_once_and_makes_no_lease() -> Result<()> {
    let (env, ns, client, bin, files) = setup("op-single").await?;
    let mut op = Operator::spawn(
        &bin,
        &env.kubeconfig,
        &files,
        &ns.name,
        "op-solo",
        &["--leader-elect=false"],
    )
    .await?;
    let compositions: Api<Composition> = ns.api(&client);
    apply_yaml(&client, Some(&ns.name), &composition("solo")).await?;
    wait_valid(&compositions, "solo").await?;
    eventually(TIMEOUT, || async {
        let (code, body) = op.get("/readyz").await?;
        ensure!(
            (code, body.trim()) == (200, "leader: controllers running"),
            "{code} {body}"
        );
        Ok(())
    })
    .await?;
    assert_eq!(op.metric("orrery_leader").await?, 1.0);
    let leases: Api<Lease> = ns.api(&client);
    assert!(
        leases.get_opt(LEASE_NAME).await?.is_none(),
        "no Lease without leader election"
    );
    op.signal(nix::sys::signal::Signal::SIGTERM)?;
    let status = op.exited(TIMEOUT).await?;
    assert!(status.success(), "{status}; log: {:#?}", op.lines());
    assert_drained(&op);
    Ok(())
}

/// A one-node run on the Scripted model.
fn chart_run(name: &str) -> String {
    serde_json::json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": name},
        "spec": {
            "composition": {
                "pattern": "Pipeline",
                "nodes": [{"id": "draft", "kind": "LLMAgent", "model": "scripted", "instruction": "Draft it."}]
            },
            "input": "the notes",
            "owner": "jane@example.com"
        }
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_chart_replicas_elect_one_leader_and_a_deleted_leaders_pod_hands_the_lease_to_another_pod()
-> Result<()> {
    use k8s_openapi::api::core::v1::Pod;
    use kube::ResourceExt;
    use kube::api::{DeleteParams, ListParams};
    use orrery_crds::run::RunPhase;
    use orrery_tests::studio::{
        ChartStudioOptions, FRONT_LABEL, ReplicatedOptions, Studio, release_name,
    };
    let database = orrery_tests::postgres::database("leader-chart").await?;
    // The example Scripted model (a node its script does not name echoes its input).
    let scripted =
        std::fs::read_to_string(workspace_root().join("examples/registry/scripted.yaml"))?;
    let (studio, _) = Studio::install_replicated(
        ChartStudioOptions {
            prefix: "ld-chart",
            prelude: "",
            manifests: &scripted,
            users: &[],
            policies: false,
            values: &[
                "controller.leaderElection.leaseDurationSeconds=6",
                "controller.leaderElection.leaseGraceSeconds=2",
            ],
        },
        ReplicatedOptions {
            replicas: 2,
            bridge: "orxld1",
            subnet: "10.213.132.0/24",
            database: &database,
        },
    )
    .await?;
    let result = async {
        let ns = studio.ns.name.clone();
        let release = release_name(&ns);
        let leases: Api<Lease> = Api::namespaced(studio.admin.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(studio.admin.clone(), &ns);
        let operator_pods =
            ListParams::default().labels(&orrery_tests::chart::operator_selector(&release));
        let lease_name = format!("{release}-operator");
        // One of the two pods holds the Lease and reconciles: a run succeeds.
        let leader = eventually(TAKEOVER_MARGIN, || {
            chart_holder(&leases, &lease_name, &pods, &operator_pods, None)
        })
        .await?;
        apply_yaml(&studio.admin, Some(&ns), &chart_run("first")).await?;
        studio.wait_phase("first", RunPhase::Succeeded).await?;

        // The leader's pod is deleted (a roll, a drain): it releases the Lease as it stops and a
        // standby, never the deleted pod, holds it; the surviving replica serves the runners.
        pods.delete(&leader, &DeleteParams::default()).await?;
        let successor = eventually(
            Duration::from_secs(LEASE_DURATION) + TAKEOVER_MARGIN,
            || chart_holder(&leases, &lease_name, &pods, &operator_pods, Some(&leader)),
        )
        .await?;
        for pod in pods.list(&operator_pods).await?.items {
            if pod.metadata.deletion_timestamp.is_none() && pod.name_any() != leader {
                let patch = serde_json::json!({"metadata": {"labels": {FRONT_LABEL: "true"}}});
                pods.patch(
                    &pod.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await?;
            }
        }
        apply_yaml(&studio.admin, Some(&ns), &chart_run("second")).await?;
        studio
            .wait_phase("second", RunPhase::Succeeded)
            .await
            .with_context(|| format!("the second run, under {successor}"))?;
        Ok(())
    }
    .await;
    result.and(studio.shutdown().await)
}

/// The holder of Lease `name`, if it is one of the operator pods `params` selects that is not
/// being deleted and is not `not`.
async fn chart_holder(
    leases: &Api<Lease>,
    name: &str,
    pods: &Api<k8s_openapi::api::core::v1::Pod>,
    params: &kube::api::ListParams,
    not: Option<&str>,
) -> Result<String> {
    let names = pods_named(pods, params).await?;
    let holder = leases
        .get(name)
        .await?
        .spec
        .and_then(|s| s.holder_identity)
        .context("no holder yet")?;
    ensure!(
        names.contains(&holder) && Some(holder.as_str()) != not,
        "the Lease is held by {holder:?}; running operator pods: {names:?}"
    );
    Ok(holder)
}

/// The names of the running, not deleted pods `params` selects.
async fn pods_named(
    pods: &Api<k8s_openapi::api::core::v1::Pod>,
    params: &kube::api::ListParams,
) -> Result<Vec<String>> {
    use kube::ResourceExt;
    Ok(pods
        .list(params)
        .await?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| p.name_any())
        .collect())
}
