//! The sidecar as a process: what `orrery-operator sidecar` starts, and what tests start
//! in-process. It opens the store, reads the run-token verifying key named by the deployment
//! config, serves until told to stop, and sweeps the events of runs that are gone (retention
//! follows the run's TTL: the operator deletes a finished run after it, and the sweep deletes
//! its events).

use super::store::{RunRecord, Store, StoreError};
use super::{Sidecar, SidecarSettings};
use crate::config::{Config, ConfigError, ConfigProblem};
use crate::run_token::RunTokenVerifier;
use kube::api::ListParams;
use kube::{Api, Client};
use orrery_crds::StudioRun;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How often the events of deleted runs are swept.
pub const SWEEP_EVERY: Duration = Duration::from_secs(600);

/// Why the sidecar cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The deployment config is unreadable or wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store cannot be opened.
    #[error("the event store: {0}")]
    Store(#[from] StoreError),
    /// The trace export settings are wrong.
    #[error(transparent)]
    Otel(#[from] crate::otel::OtelError),
    /// The address cannot be listened on.
    #[error(
        "--{flag} {address}: cannot listen there: {reason}; pick a free address (e.g. --{flag} 127.0.0.1:0 for any port)"
    )]
    Listen {
        /// The flag that named it (`listen`, `metrics-listen`).
        flag: &'static str,
        /// The address.
        address: SocketAddr,
        /// The I/O error.
        reason: String,
    },
}

async fn bind(
    flag: &'static str,
    address: SocketAddr,
) -> Result<tokio::net::TcpListener, StartError> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| StartError::Listen {
            flag,
            address,
            reason: e.to_string(),
        })
}

/// The verifier of the deployment config's `runToken.verifyingKeyFile`: read at start-up, so a
/// missing or wrong key stops the sidecar with the field and the fix.
pub fn verifier_from_config(path: &str, config: &Config) -> Result<RunTokenVerifier, ConfigError> {
    let invalid = |problem: String| {
        ConfigError::Invalid {
        path: path.to_owned(),
        problems: vec![ConfigProblem {
            field: "runToken.verifyingKeyFile".into(),
            problem,
            fix: "mount the Ed25519 public key of runToken.signingKeyFile in PEM there; make it with `openssl pkey -in key.pem -pubout -out key.pub.pem`".into(),
        }],
    }
    };
    let file = config
        .run_token
        .verifying_key_file
        .as_deref()
        .ok_or_else(|| invalid("is not set; the sidecar verifies run tokens with it".into()))?;
    let pem = std::fs::read(file).map_err(|e| invalid(format!("cannot read {file}: {e}")))?;
    RunTokenVerifier::from_public_pem(&pem, &config.run_token.audience)
        .map_err(|_| invalid(format!("{file} is not an Ed25519 public key in PEM")))
}

/// A bound sidecar, ready to serve.
pub struct Bound {
    /// The state (for tests to look into).
    pub sidecar: Arc<Sidecar>,
    listener: tokio::net::TcpListener,
    address: SocketAddr,
    metrics: Option<tokio::net::TcpListener>,
    client: Option<Client>,
}

impl Bound {
    /// Binds `listen` and opens the store; a store that cannot be opened is an error at once.
    pub async fn start(
        listen: SocketAddr,
        store_url: &str,
        verifier: RunTokenVerifier,
        kube_config: kube::Config,
        config: Arc<Config>,
        settings: &SidecarSettings,
    ) -> Result<Bound, StartError> {
        let listener = bind("listen", listen).await?;
        let store = Store::open(store_url).await?;
        Bound::with_store(
            listen,
            listener,
            store,
            verifier,
            kube_config,
            config,
            settings,
        )
        .await
    }

    /// [`Bound::start`] for a sidecar process: a database server (PostgreSQL) that cannot be
    /// reached yet, or refuses the sidecar for now, is tried again with backoff (1 s doubling
    /// to [`STORE_RETRY_MAX`], each failure in a log line) while the sidecar answers on
    /// `listen` as starting ([`starting_router`]: alive, not ready), so a database that
    /// restarts or comes up after the sidecar costs no crash loop, and the Service sends nothing
    /// to a sidecar that cannot store. A wrong URL, a SQLite file that cannot be opened and a
    /// failed migration are errors at once. `None` when `stop` came first.
    pub async fn start_when_store_opens(
        listen: SocketAddr,
        store_url: &str,
        verifier: RunTokenVerifier,
        kube_config: kube::Config,
        config: Arc<Config>,
        settings: &SidecarSettings,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<Option<Bound>, StartError> {
        let listener = bind("listen", listen).await?;
        let Some(store) = open_store_serving(store_url, &listener, stop).await? else {
            return Ok(None);
        };
        Bound::with_store(
            listen,
            listener,
            store,
            verifier,
            kube_config,
            config,
            settings,
        )
        .await
        .map(Some)
    }

    async fn with_store(
        listen: SocketAddr,
        listener: tokio::net::TcpListener,
        store: Store,
        verifier: RunTokenVerifier,
        kube_config: kube::Config,
        config: Arc<Config>,
        settings: &SidecarSettings,
    ) -> Result<Bound, StartError> {
        let metrics = match settings.metrics_listen {
            Some(address) => Some(bind("metrics-listen", address).await?),
            None => None,
        };
        let address = listener.local_addr().unwrap_or(listen);
        let sidecar = Arc::new(Sidecar::new(store, verifier, kube_config, config, settings));
        if let Some(otel) = &settings.otel {
            let exporter = super::otel::Exporter::start(
                otel.clone(),
                sidecar.store.clone(),
                sidecar.metrics.otel.clone(),
                sidecar.shutdown.clone(),
            )?;
            // Set once, here, on a sidecar nobody else holds yet.
            let _ = sidecar.otel.set(exporter);
        }
        let client = sidecar.own_client.clone();
        Ok(Bound {
            sidecar,
            listener,
            address,
            metrics,
            client,
        })
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Where it serves its metrics, if it does.
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// Serves until `shutdown` resolves: open streams end, requests in flight finish, the
    /// store is closed. Also relays other replicas' appends (PostgreSQL) to this process's
    /// followers and sweeps the events of deleted runs with the sidecar's own client.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let Bound {
            sidecar,
            listener,
            metrics,
            client,
            ..
        } = self;
        let relay = tokio::spawn(relay_wakes(sidecar.clone()));
        let metrics = metrics.map(|listener| {
            let app = super::metrics::router(sidecar.clone());
            let stop = sidecar.shutdown.clone();
            tokio::spawn(async move {
                let served = axum::serve(listener, app)
                    .with_graceful_shutdown(async move { stop.cancelled().await })
                    .await;
                if let Err(e) = served {
                    tracing::warn!("serving metrics: {e}");
                }
            })
        });
        let sweep = client.map(|c| tokio::spawn(sweep_loop(sidecar.clone(), c)));
        let served = super::serve(listener, sidecar.clone(), shutdown).await;
        relay.abort();
        if let Some(metrics) = metrics {
            metrics.abort();
        }
        if let Some(sweep) = sweep {
            sweep.abort();
        }
        sidecar.store.close().await;
        served
    }
}

/// The longest wait between two tries to open a store that could not be opened.
pub const STORE_RETRY_MAX: Duration = Duration::from_secs(30);

/// Opens the store `url` names; while a database server cannot be opened, serves `listener` as
/// starting and tries again (see [`Bound::start_when_store_opens`]). `None` when `stop` came
/// first.
async fn open_store_serving(
    url: &str,
    listener: &tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Option<Store>, StartError> {
    let first = match Store::open(url).await {
        Ok(store) => return Ok(Some(store)),
        Err(e @ StoreError::Open { .. }) if Store::is_server_url(url) => e,
        Err(e) => return Err(e.into()),
    };
    // The same socket, served by a second listener until the store opens: connections
    // queued at the switch stay in its backlog for the full router.
    let starting = clone_listener(listener).map_err(|e| StartError::Listen {
        flag: "listen",
        address: listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0))),
        reason: e.to_string(),
    })?;
    let (why, reason) = tokio::sync::watch::channel(first.to_string());
    let done = tokio_util::sync::CancellationToken::new();
    let server = tokio::spawn({
        let done = done.clone();
        async move {
            let served = axum::serve(starting, starting_router(reason))
                .with_graceful_shutdown(async move { done.cancelled().await })
                .await;
            if let Err(e) = served {
                tracing::warn!("serving while the event store opens: {e}");
            }
        }
    });
    let opened = async {
        let mut error = first;
        let mut wait = Duration::from_secs(1);
        loop {
            tracing::warn!(
                "{error}; the sidecar is alive but not ready (its /readyz says why) and tries again in {} s",
                wait.as_secs()
            );
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(STORE_RETRY_MAX);
            match Store::open(url).await {
                Ok(store) => return Ok(store),
                Err(e @ StoreError::Open { .. }) => {
                    why.send_replace(e.to_string());
                    error = e;
                }
                Err(e) => return Err(StartError::from(e)),
            }
        }
    };
    let result = tokio::select! {
        opened = opened => opened.map(Some),
        () = stop => Ok(None),
    };
    done.cancel();
    let _ = server.await;
    if let Ok(Some(store)) = &result {
        tracing::info!("the event store is open ({store:?})");
    }
    result
}

/// A second handle on `listener`'s socket.
fn clone_listener(listener: &tokio::net::TcpListener) -> std::io::Result<tokio::net::TcpListener> {
    use std::os::fd::AsFd as _;
    let fd = listener.as_fd().try_clone_to_owned()?;
    let std = std::net::TcpListener::from(fd);
    std.set_nonblocking(true)?;
    tokio::net::TcpListener::from_std(std)
}

/// What a sidecar whose store is not open yet answers: `/healthz` 200 (it is alive: restarting
/// it would not open the store sooner), `/readyz` 503 with the reason, and every other request
/// 503 `unavailable` with `Retry-After`, so a runner's sink and a person's console retry.
pub fn starting_router(reason: tokio::sync::watch::Receiver<String>) -> axum::Router {
    use axum::response::IntoResponse as _;
    use axum::routing::get;
    let not_ready = reason.clone();
    axum::Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let why = not_ready.borrow().clone();
                async move {
                    (
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        format!("the event store is not open yet: {why}"),
                    )
                        .into_response()
                }
            }),
        )
        .fallback(move || {
            let why = reason.borrow().clone();
            async move {
                super::problem::Problem::unavailable(format!(
                    "the sidecar is starting: its event store is not open yet ({why}); retry"
                ))
                .into_response()
            }
        })
        .layer(axum::middleware::map_response(super::security_headers))
}

/// Other replicas' appends (PostgreSQL LISTEN) wake this process's followers; after a
/// reconnect every followed run is woken, and followers read the store from their cursors.
async fn relay_wakes(sidecar: Arc<Sidecar>) {
    loop {
        let mut listener = match sidecar.store.listen().await {
            Ok(Some(l)) => l,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("listening for other replicas' events: {e}; retrying in 2 s");
                tokio::time::sleep(Duration::from_secs(2)).await;
                continue;
            }
        };
        loop {
            match listener.next().await {
                Ok(super::store::Wake::Appended { run_uid, last_seq }) => {
                    sidecar
                        .hub
                        .publish(&run_uid, super::hub::Live::Wake(last_seq));
                }
                Ok(super::store::Wake::Resync) => sidecar.hub.wake_all(),
                Err(e) => {
                    tracing::warn!("listening for other replicas' events: {e}; reconnecting");
                    sidecar.hub.wake_all();
                    break;
                }
            }
        }
    }
}

/// The runs whose events to delete: stored (of `namespace` when the sidecar serves one), and
/// no StudioRun with their UID in a list taken after the store was read.
pub fn runs_to_sweep(
    stored: &[RunRecord],
    live: &HashSet<String>,
    namespace: Option<&str>,
) -> Vec<String> {
    stored
        .iter()
        .filter(|r| namespace.is_none_or(|ns| r.namespace == ns))
        .filter(|r| !live.contains(&r.uid))
        .map(|r| r.uid.clone())
        .collect()
}

async fn sweep_loop(sidecar: Arc<Sidecar>, client: Client) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(SWEEP_EVERY) => {}
            () = sidecar.shutdown.cancelled() => return,
        }
        if let Err(e) = sweep_once(&sidecar, &client).await {
            tracing::warn!("sweeping the events of deleted runs: {e}");
        }
    }
}

/// Why a retention sweep stopped (the next one, [`SWEEP_EVERY`] later, tries again).
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The store could not be read or a run's events could not be deleted.
    #[error("the retention sweep could not use the event store: {0}")]
    Store(#[from] super::store::StoreError),
    /// The StudioRuns could not be listed with the sidecar's own client.
    #[error(
        "the retention sweep could not list StudioRuns: {0}; check that the sidecar's \
         ServiceAccount may list studioruns and that the apiserver is reachable"
    )]
    List(#[source] kube::Error),
}

/// One sweep: reads the runs the store holds, then lists every StudioRun (the sidecar's own
/// client, a consistent read) of the namespace it serves (every namespace when it serves all),
/// and deletes the events of stored runs of that scope that no longer exist. The order
/// matters: a run's object exists before its first event is stored, so a run stored before the
/// list began is in the list unless it was deleted. Runs of other namespaces in a shared store
/// are never touched by a sidecar serving one namespace. Returns how many runs were swept.
pub async fn sweep_once(sidecar: &Sidecar, client: &Client) -> Result<usize, SweepError> {
    let stored = sidecar.store.runs().await?;
    let api = match &sidecar.namespace {
        Some(ns) => Api::<StudioRun>::namespaced(client.clone(), ns),
        None => Api::<StudioRun>::all(client.clone()),
    };
    let runs = api
        .list_metadata(&ListParams::default())
        .await
        .map_err(SweepError::List)?;
    let live: HashSet<String> = runs
        .items
        .into_iter()
        .filter_map(|r| r.metadata.uid)
        .collect();
    let gone = runs_to_sweep(&stored, &live, sidecar.namespace.as_deref());
    for uid in &gone {
        sidecar.store.delete_run(uid).await?;
    }
    Ok(gone.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_runs_missing_from_the_list_are_swept() {
        let record = |uid: &str| RunRecord {
            uid: uid.into(),
            namespace: "ns".into(),
            name: uid.into(),
        };
        let stored = [record("a"), record("b"), record("c")];
        let live: HashSet<String> = ["a".to_owned(), "c".to_owned(), "z".to_owned()].into();
        assert_eq!(runs_to_sweep(&stored, &live, None), ["b"]);
        assert!(runs_to_sweep(&[], &live, None).is_empty());
    }

    #[test]
    fn a_sidecar_serving_one_namespace_never_sweeps_another_namespaces_runs() {
        let record = |uid: &str, namespace: &str| RunRecord {
            uid: uid.into(),
            namespace: namespace.into(),
            name: uid.into(),
        };
        // A shared store; the list of team-a's runs has none of them any more.
        let stored = [record("a1", "team-a"), record("b1", "team-b")];
        let live = HashSet::new();
        assert_eq!(runs_to_sweep(&stored, &live, Some("team-a")), ["a1"]);
        assert_eq!(runs_to_sweep(&stored, &live, None), ["a1", "b1"]);
    }
}
