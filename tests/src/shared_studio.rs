//! One [`Studio`] shared by the tests of a test binary that run at the same time, when each
//! test only reads it through its URLs and tokens (e.g. the console's browser specs): a
//! `static SHARED: SharedStudio = SharedStudio::new(install);` in the test file, and each test
//! calls [`SharedStudio::with`].
//!
//! The first test installs it (the others wait); it runs on a thread and runtime of its own, so
//! it outlives the test that installed it; the last test to finish with it shuts it down (its
//! pods stopped, the release uninstalled) before that test returns, after lingering a moment in
//! case another test is about to start. So a test binary never exits with the studio's
//! containers still running, whatever order and parallelism libtest picks; with
//! `--test-threads=1` each test simply gets a studio of its own. If the install fails, every
//! test that wanted it fails with that error.

use crate::studio::Studio;
use crate::testenv::TestEnv;
use anyhow::{Context as _, Result, anyhow, bail};
use futures::future::LocalBoxFuture;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the last test to finish keeps the studio for a test that may start right after.
const LINGER: Duration = Duration::from_secs(3);

/// What the tests sharing a studio see of it.
#[derive(Debug, Clone)]
pub struct SharedInfo {
    /// The control plane.
    pub env: &'static TestEnv,
    /// The studio's namespace.
    pub namespace: String,
    /// Its sidecar (the run API, the console).
    pub sidecar_url: String,
}

/// Installs the studio; called on the studio's own thread.
pub type Install = fn() -> LocalBoxFuture<'static, Result<Studio>>;

/// A studio the concurrently running tests of one binary share (see the module docs).
pub struct SharedStudio {
    install: Install,
    state: Mutex<State>,
    changed: Condvar,
}

enum State {
    Idle,
    Starting,
    Running(Running),
    Stopping,
    Failed(String),
}

struct Running {
    info: Arc<SharedInfo>,
    holders: usize,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: JoinHandle<Result<()>>,
}

impl Running {
    /// Shuts the studio down and waits for its thread.
    fn stop(self) -> Result<()> {
        let _ = self.stop.send(());
        self.thread
            .join()
            .map_err(|_| anyhow!("the shared studio's thread panicked"))?
            .context("shutting the shared studio down")
    }
}

impl SharedStudio {
    /// A studio `install` makes when the first test asks for it.
    pub const fn new(install: Install) -> SharedStudio {
        SharedStudio {
            install,
            state: Mutex::new(State::Idle),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `test` on the shared studio (installed first if no other test holds it), then lets
    /// go of it: the last test to let go shuts it down, and its error, if any, is this test's
    /// too. Blocks: call it from a plain `#[test]`, or through `spawn_blocking`.
    pub fn with<T>(&'static self, test: impl FnOnce(&SharedInfo) -> Result<T>) -> Result<T> {
        let lease = self.acquire()?;
        let result = test(&lease.info);
        let released = lease.release();
        match (result, released) {
            (Ok(value), Ok(())) => Ok(value),
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(e),
        }
    }

    fn acquire(&'static self) -> Result<Lease> {
        let mut state = self.lock();
        loop {
            match &mut *state {
                State::Running(running) => {
                    running.holders += 1;
                    let info = running.info.clone();
                    self.changed.notify_all();
                    return Ok(Lease {
                        shared: self,
                        info,
                        held: true,
                    });
                }
                State::Failed(e) => bail!("the shared studio did not start: {e}"),
                State::Starting | State::Stopping => {
                    state = self
                        .changed
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                State::Idle => {
                    *state = State::Starting;
                    drop(state);
                    let started = self.start();
                    state = self.lock();
                    self.changed.notify_all();
                    match started {
                        Ok(running) => {
                            let info = running.info.clone();
                            *state = State::Running(running);
                            return Ok(Lease {
                                shared: self,
                                info,
                                held: true,
                            });
                        }
                        Err(e) => {
                            *state = State::Failed(format!("{e:#}"));
                            return Err(e);
                        }
                    }
                }
            }
        }
    }

    /// Installs the studio on a thread of its own and waits until it is up.
    fn start(&self) -> Result<Running> {
        let install = self.install;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<SharedInfo>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("shared-studio".into())
            .spawn(move || -> Result<()> {
                let runtime = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready_tx.send(Err(anyhow!("the shared studio's runtime: {e}")));
                        return Ok(());
                    }
                };
                runtime.block_on(async move {
                    let studio = match install().await {
                        Ok(studio) => studio,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return Ok(());
                        }
                    };
                    let info = SharedInfo {
                        env: studio.env,
                        namespace: studio.ns.name.clone(),
                        sidecar_url: studio.sidecar_url.clone(),
                    };
                    if ready_tx.send(Ok(info)).is_ok() {
                        // Until told to stop, or until the sender is gone (it never is before).
                        let _ = stop_rx.await;
                    }
                    studio.shutdown().await
                })
            })
            .context("starting the shared studio's thread")?;
        match ready_rx.recv() {
            Ok(Ok(info)) => Ok(Running {
                info: Arc::new(info),
                holders: 1,
                stop: stop_tx,
                thread,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e.context("installing the shared studio"))
            }
            Err(_) => {
                let _ = thread.join();
                bail!("the shared studio's thread ended before the studio was up")
            }
        }
    }

    /// One holder lets go; the last one (after [`LINGER`] with no newcomer) shuts it down.
    fn release_one(&self) -> Result<()> {
        let mut state = self.lock();
        match &mut *state {
            State::Running(running) => running.holders = running.holders.saturating_sub(1),
            _ => return Ok(()),
        }
        let deadline = Instant::now() + LINGER;
        loop {
            match &*state {
                State::Running(running) if running.holders > 0 => return Ok(()),
                State::Running(_) => {}
                // Another releaser took it over (it cannot happen: only the last one waits).
                _ => return Ok(()),
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let State::Running(running) = std::mem::replace(&mut *state, State::Stopping) else {
            return Ok(());
        };
        drop(state);
        let stopped = running.stop();
        *self.lock() = State::Idle;
        self.changed.notify_all();
        stopped
    }
}

/// One test's hold on the shared studio; let go by [`Lease::release`], or when dropped (a
/// panicking test).
struct Lease {
    shared: &'static SharedStudio,
    info: Arc<SharedInfo>,
    held: bool,
}

impl Lease {
    fn release(mut self) -> Result<()> {
        self.held = false;
        self.shared.release_one()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.held {
            self.held = false;
            if let Err(e) = self.shared.release_one() {
                eprintln!("the shared studio: {e:#}");
            }
        }
    }
}
