//! The sidecar for end-to-end tests, in-process: [`shared`] is the test binary's one sidecar
//! (SQLite in a temporary directory, on a free loopback port), which runner pods of every test
//! post their events to; [`TestSidecar`] is one a test starts, kills, stops and restarts itself
//! (on the same port: a sidecar restart mid-run), on SQLite or on a PostgreSQL URL. A
//! [`TestSidecar`] runs on a Tokio runtime of its own, so that killing it ends everything it
//! runs at once, open connections included, as a crash of its process would.
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
use tokio::runtime::Runtime;
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

/// A sidecar a test starts and stops itself. It serves on a Tokio runtime of its own (two
/// worker threads), where its store, its cluster client and every connection it accepted live
/// too: [`TestSidecar::kill`] shuts that runtime down, so an open event stream or a kept-alive
/// connection (a browser's, a runner's) is cut there and then, as when the process dies. (On
/// the test's own runtime a killed server's connection tasks would go on serving.) Its state
/// ([`TestSidecar::sidecar`]) may be used from the test's runtime while it runs.
pub struct TestSidecar {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// Where it listens (a restart binds the same address).
    pub address: SocketAddr,
    /// Its state.
    pub sidecar: Arc<Sidecar>,
    store: String,
    settings: SidecarSettings,
    config: Arc<orrery_operator::Config>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
    /// The runtime it serves on; `None` once killed or stopped.
    runtime: Option<Runtime>,
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

    /// Starts a sidecar on `store` at `address` (a loopback port chosen beforehand, for a
    /// sidecar whose settings need what is made once its URL is known: the namespace of a
    /// `Studio` whose runners post to it).
    pub async fn start_on(
        address: SocketAddr,
        store: &str,
        settings: SidecarSettings,
    ) -> Result<TestSidecar> {
        TestSidecar::start_configured(address, store, settings, Arc::new(deployment_config()?))
            .await
    }

    /// [`TestSidecar::start_on`] with the example deployment config changed by `configure` (the
    /// admission policies of a [`crate::studio::Studio`] that binds them, for one).
    pub async fn start_on_with(
        address: SocketAddr,
        store: &str,
        settings: SidecarSettings,
        configure: &dyn Fn(&mut orrery_operator::Config),
    ) -> Result<TestSidecar> {
        let mut config = deployment_config()?;
        configure(&mut config);
        TestSidecar::start_configured(address, store, settings, Arc::new(config)).await
    }

    async fn start_configured(
        address: SocketAddr,
        store: &str,
        settings: SidecarSettings,
        config: Arc<orrery_operator::Config>,
    ) -> Result<TestSidecar> {
        let env = testenv::shared_async().await?;
        let kube = env.config(ADMIN).await?;
        let verifier = test_verifier()?;
        let kept = Arc::clone(&config);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("test-sidecar")
            .enable_all()
            .build()
            .context("the sidecar's runtime")?;
        let (ready, bound) = oneshot::channel::<Result<(SocketAddr, Arc<Sidecar>)>>();
        let (stop, stopped) = oneshot::channel::<()>();
        let (url, options) = (store.to_owned(), settings.clone());
        let task = runtime.spawn(async move {
            match Bound::start(address, &url, verifier, kube, config, &options).await {
                Ok(bound) => {
                    let _ = ready.send(Ok((bound.address(), bound.sidecar.clone())));
                    bound
                        .serve(async move {
                            let _ = stopped.await;
                        })
                        .await
                }
                Err(e) => {
                    let _ = ready.send(Err(anyhow!("{e}")));
                    Ok(())
                }
            }
        });
        let (address, sidecar) = match bound.await {
            Ok(Ok(bound)) => bound,
            Ok(Err(e)) => {
                runtime.shutdown_background();
                return Err(e);
            }
            Err(_) => {
                runtime.shutdown_background();
                return Err(anyhow!("the sidecar's task ended before it started"));
            }
        };
        Ok(TestSidecar {
            url: format!("http://{address}"),
            address,
            sidecar,
            store: store.to_owned(),
            settings,
            config: kept,
            stop: Some(stop),
            task: Some(task),
            runtime: Some(runtime),
        })
    }

    /// Kills it where it is, as a crash would: its runtime is shut down, so nothing finishes,
    /// every open connection is cut and its port refuses connections until
    /// [`TestSidecar::restart`].
    pub async fn kill(&mut self) {
        self.task = None;
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        self.stop = None;
    }

    /// Stops it gracefully: open streams end, requests in flight finish.
    pub async fn stop(&mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let served = match self.task.take() {
            Some(task) => task
                .await
                .context("the sidecar's task")
                .and_then(|served| served.context("serving")),
            None => Ok(()),
        };
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        served
    }

    /// Starts it again on the same address and store (after [`TestSidecar::kill`] or
    /// [`TestSidecar::stop`]).
    pub async fn restart(&mut self) -> Result<()> {
        self.kill().await;
        // The port may linger a moment after the listener is dropped.
        let mut last = None;
        for _ in 0..50 {
            match TestSidecar::start_configured(
                self.address,
                &self.store,
                self.settings.clone(),
                Arc::clone(&self.config),
            )
            .await
            {
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
        // Never a plain drop of the runtime: that blocks, which an async context forbids.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
