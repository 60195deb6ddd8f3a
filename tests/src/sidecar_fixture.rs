//! The sidecar for end-to-end tests, in-process: [`shared`] is the test binary's one sidecar
//! (SQLite in a temporary directory, on a free loopback port), which runner pods of every test
//! post their events to; [`TestSidecar`] is one a test starts, stops and restarts itself (on the
//! same port: a sidecar restart mid-run), on SQLite or on a PostgreSQL URL.
//!
//! The sidecar acts for callers with their own tokens on the test control plane; its own client
//! (for the retention sweep) is the admin's.

use crate::operator_fixture::TEST_VERIFYING_KEY;
use crate::testenv::{self, ADMIN};
use anyhow::{Context as _, Result, anyhow};
use orrery_operator::config::DEFAULT_RUN_TOKEN_AUDIENCE;
use orrery_operator::run_token::RunTokenVerifier;
use orrery_operator::sidecar::process::Bound;
use orrery_operator::sidecar::{Sidecar, SidecarSettings};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The test binary's sidecar.
#[derive(Debug)]
pub struct SharedSidecar {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// Its state.
    pub sidecar: Arc<Sidecar>,
}

static SHARED: OnceLock<Result<SharedSidecar, String>> = OnceLock::new();

/// The verifier of the tests' run tokens.
pub fn test_verifier() -> Result<RunTokenVerifier> {
    RunTokenVerifier::from_public_pem(TEST_VERIFYING_KEY.as_bytes(), DEFAULT_RUN_TOKEN_AUDIENCE)
        .map_err(|e| anyhow!("{e}"))
}

/// The example deployment config, as the sidecar reads it (the shared sidecar's own URL is not
/// needed by the sidecar itself).
fn deployment_config() -> Result<orrery_operator::Config> {
    let path = crate::harness::workspace_root().join("examples/operator/config.yaml");
    orrery_operator::Config::load(&path.to_string_lossy()).map_err(|e| anyhow!("{e}"))
}

/// A fresh temporary directory.
pub fn temp_dir(prefix: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(crate::harness::unique_name(prefix));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// The test binary's sidecar, started on first use on a thread and runtime of its own (so it
/// outlives any one test's runtime), serving until the process exits.
pub fn shared() -> Result<&'static SharedSidecar> {
    SHARED
        .get_or_init(|| start_shared().map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow!("the tests' sidecar did not start: {e}"))
}

fn start_shared() -> Result<SharedSidecar> {
    let env = testenv::shared()?;
    let dir = temp_dir("sidecar")?;
    let store = format!("sqlite:{}", dir.join("events.db").display());
    let (tx, rx) = std::sync::mpsc::channel::<Result<SharedSidecar, String>>();
    std::thread::Builder::new()
        .name("test-sidecar".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send(Err(format!("runtime: {e}")));
                    return;
                }
            };
            runtime.block_on(async move {
                let started = async {
                    let config = env.config(ADMIN).await?;
                    let bound = Bound::start(
                        SocketAddr::from(([127, 0, 0, 1], 0)),
                        &store,
                        test_verifier()?,
                        config,
                        Arc::new(deployment_config()?),
                        &SidecarSettings::default(),
                    )
                    .await
                    .map_err(|e| anyhow!("{e}"))?;
                    anyhow::Ok(bound)
                }
                .await;
                match started {
                    Ok(bound) => {
                        let shared = SharedSidecar {
                            url: format!("http://{}", bound.address()),
                            sidecar: bound.sidecar.clone(),
                        };
                        let _ = tx.send(Ok(shared));
                        let _ = bound.serve(std::future::pending()).await;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(format!("{e:#}")));
                    }
                }
            });
        })
        .context("starting the sidecar's thread")?;
    rx.recv()
        .context("the sidecar's thread ended before it started")?
        .map_err(|e| anyhow!(e))
}

/// A sidecar a test starts and stops itself, on the test's runtime.
pub struct TestSidecar {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// Where it listens (a restart binds the same address).
    pub address: SocketAddr,
    /// Its state.
    pub sidecar: Arc<Sidecar>,
    store: String,
    settings: SidecarSettings,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestSidecar {
    /// Starts a sidecar on a SQLite file in a fresh temporary directory named after `prefix`,
    /// on a free port.
    pub async fn sqlite(prefix: &str, settings: SidecarSettings) -> Result<TestSidecar> {
        let dir = temp_dir(prefix)?;
        TestSidecar::start(
            &format!("sqlite:{}", dir.join("events.db").display()),
            settings,
        )
        .await
    }

    /// Starts a sidecar on `store` (`sqlite:/path` or a PostgreSQL URL), on a free port.
    pub async fn start(store: &str, settings: SidecarSettings) -> Result<TestSidecar> {
        TestSidecar::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), store, settings).await
    }

    async fn start_on(
        address: SocketAddr,
        store: &str,
        settings: SidecarSettings,
    ) -> Result<TestSidecar> {
        let env = testenv::shared_async().await?;
        let bound = Bound::start(
            address,
            store,
            test_verifier()?,
            env.config(ADMIN).await?,
            Arc::new(deployment_config()?),
            &settings,
        )
        .await
        .map_err(|e| anyhow!("{e}"))?;
        let address = bound.address();
        let sidecar = bound.sidecar.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(bound.serve(async move {
            let _ = stopped.await;
        }));
        Ok(TestSidecar {
            url: format!("http://{address}"),
            address,
            sidecar,
            store: store.to_owned(),
            settings,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// Kills it where it is (connections dropped, nothing finishes), as a crash would.
    pub async fn kill(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
        self.stop = None;
    }

    /// Stops it gracefully: open streams end, requests in flight finish.
    pub async fn stop(&mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await
                .context("the sidecar's task")?
                .context("serving")?;
        }
        Ok(())
    }

    /// Starts it again on the same address and store (after [`TestSidecar::kill`] or
    /// [`TestSidecar::stop`]).
    pub async fn restart(&mut self) -> Result<()> {
        self.kill().await;
        // The port may linger a moment after the listener is dropped.
        let mut last = None;
        for _ in 0..50 {
            match TestSidecar::start_on(self.address, &self.store, self.settings.clone()).await {
                Ok(again) => {
                    *self = again;
                    return Ok(());
                }
                Err(e) => {
                    last = Some(e);
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
        Err(last.unwrap_or_else(|| anyhow!("restart failed")))
    }
}

impl Drop for TestSidecar {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
