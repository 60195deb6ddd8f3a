//! What every reconciler shares: the client, the deployment config, the Event recorder; the
//! server-side apply of a status; Events; and running the controllers until a shutdown signal.

use crate::config::Config;
use crate::error::Result;
use crate::metrics::Metrics;
use futures::StreamExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

/// The controller name Events are reported under.
pub const REPORTER: &str = "orrery-operator";

/// What a reconciler is given.
pub struct Context {
    /// The client of the cluster.
    pub client: Client,
    /// The deployment config.
    pub config: Arc<Config>,
    /// Publishes Kubernetes Events (`events.k8s.io/v1`).
    pub recorder: Recorder,
    /// What `/metrics` shows: reconciles, errors, runs, the queue, pod start latency.
    pub metrics: Arc<Metrics>,
}

impl Context {
    /// A context for `client` and `config`; Events are reported by `orrery-operator` with the
    /// pod's name (`POD_NAME`) or the host name as the instance; the reconcilers count into
    /// `metrics`.
    pub fn new(client: Client, config: Arc<Config>, metrics: Arc<Metrics>) -> Self {
        let reporter = Reporter {
            controller: REPORTER.into(),
            instance: std::env::var("POD_NAME")
                .ok()
                .or_else(|| Reporter::from(REPORTER).instance),
        };
        let recorder = Recorder::new(client.clone(), reporter);
        Context {
            client,
            config,
            recorder,
            metrics,
        }
    }

    /// Publishes an Event about `object`. A failed Event is logged, never a failed reconcile:
    /// the status carries the same facts.
    pub async fn event<K>(&self, object: &K, type_: EventType, reason: &str, note: String)
    where
        K: Resource<DynamicType = ()>,
    {
        let event = Event {
            type_,
            reason: reason.to_owned(),
            note: Some(truncate(note, 1000)),
            action: "Reconcile".into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, &object.object_ref(&())).await {
            eprintln!(
                "orrery-operator: could not publish the {reason} Event for {}: {e}",
                object.meta().name.as_deref().unwrap_or_default()
            );
        }
    }
}

fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max.saturating_sub(3);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

/// Server-side applies `status` as the status of `name` (field manager `orrery-operator`,
/// forced: the operator owns the status it writes).
pub async fn apply_status<K, S>(api: &Api<K>, name: &str, status: &S) -> Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    S: Serialize + Debug,
{
    let body = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    let params = PatchParams::apply(crate::FIELD_MANAGER).force();
    Ok(api
        .patch_status(name, &params, &Patch::Apply(&body))
        .await?)
}

/// Drains a controller's stream, logging each failed reconcile, until the controller stops.
pub async fn drain<S, T, E>(name: &'static str, stream: S)
where
    S: futures::Stream<Item = std::result::Result<T, E>>,
    E: std::fmt::Display,
{
    stream
        .for_each(|result| async move {
            if let Err(e) = result {
                eprintln!("orrery-operator: {name} controller: {e}");
            }
        })
        .await;
}

/// The objects a controller watches: every namespace, or one (tests run one operator per
/// namespace).
pub fn scoped<K>(client: Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
{
    match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    }
}

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
    signer: Arc<crate::run::token::RunTokenSigner>,
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

/// How long a failed reconcile waits before it is tried again.
pub const RETRY: std::time::Duration = std::time::Duration::from_secs(15);

/// A reconciler's context that carries the process's [`Metrics`].
pub trait Metered {
    /// The metrics the reconciles are counted in.
    fn metrics(&self) -> &Metrics;
}

impl Metered for Context {
    fn metrics(&self) -> &Metrics {
        &self.metrics
    }
}

impl Metered for crate::run::reconcile::RunContext {
    fn metrics(&self) -> &Metrics {
        &self.base.metrics
    }
}

/// Wraps a reconciler so that each reconcile it starts is counted in
/// `orrery_reconciles_total{kind}` (failed ones too: [`error_policy`] counts those again by
/// their error label) and in `orrery_reconciles_in_flight` while it runs.
pub fn counted<K, C, F, Fut>(
    mut reconcile: F,
) -> impl FnMut(Arc<K>, Arc<C>) -> futures::future::BoxFuture<'static, Fut::Output>
where
    K: Resource<DynamicType = ()>,
    C: Metered,
    F: FnMut(Arc<K>, Arc<C>) -> Fut,
    Fut: Future + Send + 'static,
{
    move |object, ctx| {
        let in_flight = ctx.metrics().start_reconcile(&K::kind(&()));
        let reconcile = reconcile(object, ctx);
        Box::pin(async move {
            let out = reconcile.await;
            drop(in_flight);
            out
        })
    }
}

/// What happens after a failed reconcile of any kind: logged with the object, the error and
/// its metric label, counted in `orrery_reconcile_errors_total{kind,error}`, and retried after
/// [`RETRY`].
pub fn error_policy<K>(
    object: Arc<K>,
    error: &crate::error::Error,
    ctx: Arc<Context>,
) -> kube::runtime::controller::Action
where
    K: Resource<DynamicType = ()>,
{
    use kube::ResourceExt;
    ctx.metrics.failed(&K::kind(&()), error.label());
    eprintln!(
        "orrery-operator: {} {}/{}: {} [{}]",
        K::kind(&()),
        object.namespace().unwrap_or_default(),
        object.name_any(),
        error,
        error.label()
    );
    kube::runtime::controller::Action::requeue(RETRY)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;

    #[test]
    fn a_long_note_is_cut_on_a_character_boundary_and_marked() {
        let note = truncate("é".repeat(800), 1000);
        assert!(note.len() <= 1000, "{}", note.len());
        assert!(note.ends_with("..."));
        assert_eq!(truncate("short".into(), 1000), "short");
    }

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
        let signer = crate::run::token::RunTokenSigner::from_ed_pem(
            crate::run::token::tests::PRIVATE.as_bytes(),
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
