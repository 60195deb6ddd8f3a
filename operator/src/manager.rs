//! Runs the three controllers (Compositions, RegistryEntries, StudioRuns) until a shutdown
//! signal, then drains them. Apart from [`crate::controller`] (what every reconciler shares)
//! so that the controllers import that one and only this one imports the controllers.

use crate::config::Config;
use crate::controller::Context;
use crate::metrics::Metrics;
use crate::run_token::RunTokenSigner;
use kube::Client;
use std::future::Future;
use std::sync::Arc;

/// How the controllers ended after the shutdown signal (see [`run`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// Every controller finished its reconciles in flight and returned.
    Drained,
    /// No reconcile was in flight for a moment after the signal, so the controllers were
    /// dropped: one stopped before its first list completed never returns by itself.
    Idle,
    /// A reconcile was still running when the drain time ran out; it was abandoned at its
    /// next await (reconciles are idempotent, so the next operator redoes it).
    Overdue,
}

/// Runs the Composition, RegistryEntry and StudioRun controllers over every namespace (or only
/// `namespace`) until `shutdown` resolves; then each takes no new work and finishes the
/// reconciles in flight, for at most `drain`. They count their reconciles and errors into
/// `metrics`; `signer` signs the run tokens.
///
/// kube-runtime's graceful shutdown also waits for a controller's cache: a controller
/// stopped before its first list completed (the API server slow or refusing) would wait for
/// ever. So once no reconcile has been in flight for half a second after the signal, the
/// controllers are dropped; nothing of theirs is running then.
pub async fn run<F>(
    client: Client,
    config: Arc<Config>,
    metrics: Arc<Metrics>,
    signer: Arc<RunTokenSigner>,
    namespace: Option<String>,
    shutdown: F,
    drain: std::time::Duration,
) -> Stopped
where
    F: Future<Output = ()> + Send + Sync + 'static,
{
    let ctx = Arc::new(Context::new(client, config, metrics.clone()));
    let (tx, _) = tokio::sync::broadcast::channel::<()>(1);
    let signal = |tx: &tokio::sync::broadcast::Sender<()>| {
        let mut rx = tx.subscribe();
        async move {
            let _ = rx.recv().await;
        }
    };
    let compositions =
        crate::composition::reconcile::controller(ctx.clone(), namespace.as_deref(), signal(&tx));
    let entries =
        crate::registry::reconcile::controller(ctx.clone(), namespace.as_deref(), signal(&tx));
    let runs = crate::run::reconcile::controller(ctx, signer, namespace.as_deref(), signal(&tx));
    let (for_idle, for_overdue) = (signal(&tx), signal(&tx));
    tokio::spawn(async move {
        shutdown.await;
        let _ = tx.send(());
    });
    tokio::select! {
        biased;
        _ = async { futures::join!(compositions, entries, runs) } => Stopped::Drained,
        () = async {
            for_idle.await;
            idle_after_stop(&metrics).await;
        } => Stopped::Idle,
        () = async {
            for_overdue.await;
            tokio::time::sleep(drain).await;
        } => Stopped::Overdue,
    }
}

/// Resolves once no reconcile has been in flight for half a second, checked from one second
/// after it is called (the controllers first get the time to see the signal and drain).
async fn idle_after_stop(metrics: &Metrics) {
    use std::time::Duration;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut idle_since: Option<tokio::time::Instant> = None;
    loop {
        if metrics.in_flight() > 0 {
            idle_since = None;
        } else if idle_since
            .get_or_insert_with(tokio::time::Instant::now)
            .elapsed()
            >= Duration::from_millis(500)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;

    #[tokio::test]
    async fn controllers_stopped_before_their_first_list_completes_return_without_waiting_for_it() {
        // An API server that refuses every connection: no cache ever fills, which kube-runtime's
        // own graceful shutdown would wait for without end.
        let refusing = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", refusing.local_addr().expect("address"));
        drop(refusing);
        let client =
            Client::try_from(kube::Config::new(url.parse().expect("url"))).expect("client");
        let config = Config::load(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/operator/config.yaml"
        ))
        .expect("example config");
        let signer = crate::run_token::RunTokenSigner::from_ed_pem(
            crate::run_token::tests::PRIVATE.as_bytes(),
        )
        .expect("key");
        let started = std::time::Instant::now();
        let stopped = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            run(
                client,
                Arc::new(config),
                Arc::new(Metrics::new()),
                Arc::new(signer),
                Some("team".to_owned()),
                tokio::time::sleep(std::time::Duration::from_millis(200)),
                std::time::Duration::from_secs(60),
            ),
        )
        .await
        .expect("the controllers stop after the signal");
        assert_eq!(stopped, Stopped::Idle);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
}
