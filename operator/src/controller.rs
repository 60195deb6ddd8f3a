//! What every reconciler shares: the client, the deployment config, the Event recorder; the
//! server-side apply of a status; Events; counting reconciles and the retry after a failed
//! one (backoff per object, [`crate::retry`]). It imports no controller (each controller imports it); [`crate::manager`] runs them.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::retry::Retries;
use futures::StreamExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use tracing::Instrument as _;

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
    /// How many times each object has failed in a row (its backoff).
    pub retries: Retries,
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
            retries: Retries::new(),
        }
    }

    /// Publishes an Event about `object`. A failed Event is logged, never a failed reconcile:
    /// the status carries the same facts.
    pub async fn event<K>(&self, object: &K, type_: EventType, reason: &str, note: String)
    where
        K: Resource<DynamicType = ()>,
    {
        // The same fact in the log, inside the reconcile's span (its object and trigger).
        match type_ {
            EventType::Normal => tracing::info!(reason, "{note}"),
            EventType::Warning => tracing::warn!(reason, "{note}"),
        }
        let event = Event {
            type_,
            reason: reason.to_owned(),
            note: Some(truncate(note, 1000)),
            action: "Reconcile".into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, &object.object_ref(&())).await {
            tracing::warn!(
                "could not publish the {reason} Event for {}: {e}",
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

/// Server-side applies `status` as the status of `object` (field manager `orrery-operator`,
/// forced: the operator owns the status it writes), onto the very version of the object it was
/// computed from (fault cases 3, 4 and 7).
///
/// The body names the `resourceVersion` the object was read at, and the API server refuses the
/// write `409 Conflict` when the stored object is another version: one changed since by someone
/// else (the sidecar, a person's decision, another operator that took the lease over), or seen
/// late by the watch, or deleted and created again under the same name. (A UID in the body
/// would not do: the status strategy of a custom resource copies the stored metadata over the
/// request's before it compares, so a stale UID is accepted; checked on v1.36.) Such a refusal
/// is [`Error::Outdated`]: nothing is written, and the status is computed again from the newer
/// version, so a status is never written over a change its writer did not see.
pub async fn apply_status<K, S>(api: &Api<K>, object: &K, status: &S) -> Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    S: Serialize + Debug,
{
    let name = object.meta().name.as_deref().unwrap_or_default();
    let body = status_body::<K, S>(status, object.meta().resource_version.as_deref());
    let params = PatchParams::apply(crate::FIELD_MANAGER).force();
    match api.patch_status(name, &params, &Patch::Apply(&body)).await {
        Ok(written) => Ok(written),
        Err(kube::Error::Api(refusal)) if refusal.code == 409 => Err(Error::Outdated {
            kind: K::kind(&()).into_owned(),
            name: name.to_owned(),
            namespace: object.meta().namespace.clone().unwrap_or_default(),
        }),
        Err(e) => Err(e.into()),
    }
}

/// The body of a status apply: the status, at `version` when known.
fn status_body<K, S>(status: &S, version: Option<&str>) -> serde_json::Value
where
    K: Resource<DynamicType = ()>,
    S: Serialize,
{
    let mut body = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    if let Some(version) = version {
        body["metadata"] = serde_json::json!({ "resourceVersion": version });
    }
    body
}

/// The longest a watch is asked to last: below the client's read timeout (295 s).
const LONGEST_WATCH_SECONDS: u64 = 290;

/// The watch settings of every controller's watches: the API server ends each watch after
/// `resyncSeconds` (at most [`LONGEST_WATCH_SECONDS`]) and the watch resumes from the last
/// version it saw, so events lost on an open watch (fault case 12: the run created, the pod
/// ended) come again within that time instead of after the client's default of minutes.
pub fn watch_config(config: &Config) -> kube::runtime::watcher::Config {
    let seconds = config.resync_seconds.clamp(1, LONGEST_WATCH_SECONDS);
    kube::runtime::watcher::Config::default().timeout(u32::try_from(seconds).unwrap_or(290))
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
                tracing::warn!("{name} controller: {e}");
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

/// A reconciler's context that carries the process's [`Metrics`] and the objects' backoff.
pub trait Metered {
    /// The metrics the reconciles are counted in.
    fn metrics(&self) -> &Metrics;
    /// Failures in a row per object.
    fn retries(&self) -> &Retries;
    /// The client the reconciles read and write with.
    fn client(&self) -> &Client;
}

impl Metered for Context {
    fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    fn retries(&self) -> &Retries {
        &self.retries
    }

    fn client(&self) -> &Client {
        &self.client
    }
}

/// Wraps a reconciler so that each reconcile it starts is counted in
/// `orrery_reconciles_total{kind}` (failed ones too: [`error_policy`] counts those again by
/// their error label) and in `orrery_reconciles_in_flight` while it runs, and a success resets
/// the object's backoff.
///
/// A reconcile whose status write was refused as [`Error::Outdated`] runs once more at once, on
/// the object read fresh from the API server: the watched copy it ran on may lag, or stay old
/// for good when watch events are lost (fault case 12), and a write computed from it would be
/// refused every time. An object gone, or deleted and created again under its name, is left to
/// its own reconcile.
pub fn counted<K, C, F, Fut>(
    reconcile: F,
) -> impl FnMut(Arc<K>, Arc<C>) -> futures::future::BoxFuture<'static, Result<Action>>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
    C: Metered + Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<C>) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<Action>> + Send + 'static,
{
    move |object, ctx| {
        let in_flight = ctx.metrics().start_reconcile(&K::kind(&()));
        let started = std::time::SystemTime::now();
        let span = reconcile_span(object.as_ref());
        let id = object_id(object.as_ref());
        let again = reconcile.clone();
        let first = span.in_scope(|| reconcile(object.clone(), ctx.clone()));
        Box::pin(
            async move {
                let mut out = first.await;
                if matches!(out, Err(Error::Outdated { .. })) {
                    out = match read_fresh(ctx.client(), object.as_ref()).await {
                        Ok(Some(fresh)) => again(Arc::new(fresh), ctx.clone()).await,
                        Ok(None) => Ok(Action::await_change()),
                        Err(e) => Err(e),
                    };
                }
                if out.is_ok() {
                    ctx.retries().succeeded(&K::kind(&()), &id);
                }
                if let Some(traces) = ctx.metrics().traces()
                    && let Some(span) = reconcile_otel_span(object.as_ref(), started, &out)
                {
                    traces.send(vec![span]);
                }
                drop(in_flight);
                out
            }
            .instrument(span),
        )
    }
}

/// `object` as the API server has it now; `None` when it is gone or another object (another
/// UID) holds its name.
async fn read_fresh<K>(client: &Client, object: &K) -> Result<Option<K>>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug,
{
    let meta = object.meta();
    let api: Api<K> = Api::namespaced(
        client.clone(),
        meta.namespace.as_deref().unwrap_or_default(),
    );
    let fresh = api
        .get_opt(meta.name.as_deref().unwrap_or_default())
        .await?;
    Ok(fresh.filter(|f| f.meta().uid == meta.uid))
}

/// The key of an object's backoff: its UID, else (never stored yet) its namespace and name.
fn object_id<K: Resource<DynamicType = ()>>(object: &K) -> String {
    use kube::ResourceExt;
    object.uid().unwrap_or_else(|| {
        format!(
            "{}/{}",
            object.namespace().unwrap_or_default(),
            object.name_any()
        )
    })
}

/// A reconcile as an OpenTelemetry span (`--otel-endpoint`): in the trace of the object's UID,
/// so a StudioRun's reconciles are in its run's trace, under the run's root span (the sidecar
/// exports the rest of that trace); with the object and how the reconcile ended. `None` for an
/// object with no UID yet.
fn reconcile_otel_span<K>(
    object: &K,
    started: std::time::SystemTime,
    out: &Result<Action>,
) -> Option<crate::otel::proto::Span>
where
    K: Resource<DynamicType = ()>,
{
    use crate::otel::proto::{KIND_INTERNAL, KeyValue, STATUS_ERROR, Span, Status};
    use kube::ResourceExt;
    let kind = K::kind(&());
    let uid = object.uid()?;
    let nanos = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    };
    let parent = if kind == "StudioRun" {
        crate::otel::span_id(&uid, crate::otel::RUN_SPAN).to_vec()
    } else {
        Vec::new()
    };
    let mut attributes = vec![
        KeyValue::string("k8s.namespace.name", object.namespace().unwrap_or_default()),
        KeyValue::string("orrery.object.kind", kind.as_ref()),
        KeyValue::string("orrery.object.name", object.name_any()),
        KeyValue::string("orrery.object.uid", uid.as_str()),
    ];
    if kind == "StudioRun" {
        attributes.push(KeyValue::string("orrery.run.uid", uid.as_str()));
    }
    let status = match out {
        Ok(_) => {
            attributes.push(KeyValue::string("orrery.reconcile.result", "ok"));
            None
        }
        Err(e) => {
            attributes.push(KeyValue::string("orrery.reconcile.result", e.label()));
            Some(Status {
                message: e.to_string(),
                code: STATUS_ERROR,
            })
        }
    };
    Some(Span {
        trace_id: crate::otel::trace_id(&uid).to_vec(),
        span_id: rand::random::<[u8; 8]>().to_vec(),
        parent_span_id: parent,
        name: format!("reconcile {kind}"),
        kind: KIND_INTERNAL,
        start_time_unix_nano: nanos(started),
        end_time_unix_nano: nanos(std::time::SystemTime::now()),
        attributes,
        events: Vec::new(),
        status,
    })
}

/// The span a reconcile runs in: the object's kind, namespace, name and UID (and, for a
/// StudioRun, the run's UID as `run_uid`), so every log line of the reconcile names them; kube's
/// enclosing span adds what triggered it (`trigger` in a JSON line).
fn reconcile_span<K>(object: &K) -> tracing::Span
where
    K: Resource<DynamicType = ()>,
{
    use kube::ResourceExt;
    let kind = K::kind(&());
    let uid = object.uid().unwrap_or_default();
    let run_uid = (kind == "StudioRun").then_some(uid.as_str());
    tracing::info_span!(
        "reconcile",
        kind = kind.as_ref(),
        namespace = object.namespace().unwrap_or_default(),
        name = object.name_any(),
        uid = uid.as_str(),
        run_uid,
    )
}

/// What happens after a failed reconcile of any kind: logged with the object, the error and
/// its metric label, counted in `orrery_reconcile_errors_total{kind,error}`, and retried after
/// the object's backoff ([`crate::retry::delay`]), counted in
/// `orrery_reconcile_retries_total{kind,reason}`.
pub fn error_policy<K>(
    object: Arc<K>,
    error: &crate::error::Error,
    ctx: Arc<Context>,
) -> kube::runtime::controller::Action
where
    K: Resource<DynamicType = ()>,
{
    use kube::ResourceExt;
    let kind = K::kind(&());
    ctx.metrics.failed(&kind, error.label());
    let failures = ctx.retries.failed(&kind, &object_id(object.as_ref()));
    let (wait, reason) = crate::retry::delay(error, failures, rand::random::<f64>());
    ctx.metrics.retried(&kind, reason);
    if reason == crate::retry::Reason::Outdated {
        tracing::debug!(
            kind = kind.as_ref(),
            namespace = object.namespace().unwrap_or_default(),
            name = object.name_any(),
            "{error}"
        );
        return kube::runtime::controller::Action::requeue(wait);
    }
    tracing::warn!(
        kind = kind.as_ref(),
        namespace = object.namespace().unwrap_or_default(),
        name = object.name_any(),
        uid = object.uid().unwrap_or_default(),
        error = error.label(),
        failures,
        retry = reason.label(),
        "{} {}/{}: {}; retrying in {:.1} s (failure {failures} in a row, {})",
        kind,
        object.namespace().unwrap_or_default(),
        object.name_any(),
        error,
        wait.as_secs_f64(),
        reason.label()
    );
    kube::runtime::controller::Action::requeue(wait)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;

    #[test]
    fn every_watch_is_renewed_after_resync_seconds_and_never_outlives_the_clients_read_timeout() {
        let mut config = crate::testing::config("");
        for (resync, want) in [(5, 5), (60, 60), (290, 290), (3600, 290)] {
            config.resync_seconds = resync;
            assert_eq!(watch_config(&config).timeout, Some(want), "{resync}");
        }
    }

    #[test]
    fn a_status_write_names_the_version_it_was_read_at_and_nothing_else_of_the_metadata() {
        let status = serde_json::json!({"phase": "Running"});
        let body = status_body::<orrery_crds::StudioRun, _>(&status, Some("4711"));
        assert_eq!(
            body,
            serde_json::json!({
                "apiVersion": "studio.orrery.dev/v1alpha1",
                "kind": "StudioRun",
                "metadata": {"resourceVersion": "4711"},
                "status": {"phase": "Running"},
            })
        );
        let unread = status_body::<orrery_crds::StudioRun, _>(&status, None);
        assert!(unread.get("metadata").is_none(), "{unread}");
    }

    #[test]
    fn a_runs_reconcile_is_a_span_of_the_runs_trace_under_its_root_and_says_how_it_ended() {
        let uid = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";
        let mut run: orrery_crds::StudioRun = serde_json::from_value(serde_json::json!({
            "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "StudioRun",
            "metadata": {"name": "notes", "namespace": "team", "uid": uid},
            "spec": {"compositionRef": {"name": "c"}, "input": "x", "owner": "alice"}
        }))
        .expect("a run");
        let started = std::time::SystemTime::now();
        let ok = reconcile_otel_span(&run, started, &Ok(Action::await_change())).expect("a span");
        assert_eq!(ok.trace_id, crate::otel::trace_id(uid).to_vec());
        assert_eq!(
            ok.parent_span_id,
            crate::otel::span_id(uid, crate::otel::RUN_SPAN).to_vec()
        );
        assert_eq!(ok.name, "reconcile StudioRun");
        assert!(ok.start_time_unix_nano <= ok.end_time_unix_nano);
        assert!(ok.status.is_none());
        let attr = |span: &crate::otel::proto::Span, key: &str| {
            span.attributes
                .iter()
                .find(|kv| kv.key == key)
                .and_then(|kv| kv.value.clone())
                .and_then(|v| v.value)
        };
        use crate::otel::proto::Value;
        assert_eq!(
            attr(&ok, "orrery.reconcile.result"),
            Some(Value::String("ok".into()))
        );
        assert_eq!(
            attr(&ok, "k8s.namespace.name"),
            Some(Value::String("team".into()))
        );
        let failed = reconcile_otel_span(
            &run,
            started,
            &Err(Error::Outdated {
                kind: "StudioRun".into(),
                name: "notes".into(),
                namespace: "team".into(),
            }),
        )
        .expect("a span");
        assert_eq!(
            failed.status.as_ref().map(|s| s.code),
            Some(crate::otel::proto::STATUS_ERROR)
        );
        assert_ne!(
            failed.span_id, ok.span_id,
            "each reconcile a span of its own"
        );
        // A Composition's reconciles are in its own trace, with no parent.
        let composition: orrery_crds::Composition = serde_json::from_value(serde_json::json!({
            "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "Composition",
            "metadata": {"name": "c", "namespace": "team", "uid": "another"},
            "spec": {"pattern": "Pipeline", "nodes": [], "edges": []}
        }))
        .expect("a composition");
        let span = reconcile_otel_span(&composition, started, &Ok(Action::await_change()))
            .expect("a span");
        assert!(span.parent_span_id.is_empty());
        assert_eq!(span.trace_id, crate::otel::trace_id("another").to_vec());
        // An object not stored yet (no UID) has no trace.
        run.metadata.uid = None;
        assert!(reconcile_otel_span(&run, started, &Ok(Action::await_change())).is_none());
    }

    #[test]
    fn a_long_note_is_cut_on_a_character_boundary_and_marked() {
        let note = truncate("é".repeat(800), 1000);
        assert!(note.len() <= 1000, "{}", note.len());
        assert!(note.ends_with("..."));
        assert_eq!(truncate("short".into(), 1000), "short");
    }
}
