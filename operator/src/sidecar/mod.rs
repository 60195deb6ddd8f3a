//! The sidecar (`orrery-operator sidecar`): what runners, the console, approvers and scripts
//! talk to, beside the controller in the operator's pod (same image, second container).
//!
//! - [`store`]: the event store: SQLite by default, PostgreSQL when several replicas serve.
//! - [`ingest`]: `POST /internal/v1/runs/{uid}/events`, a runner's events, with its run token.
//! - [`events`]: `GET /api/v1/runs/{namespace}/{name}/events`, SSE with resume, or JSON pages.
//! - [`api`]: the rest of `/api/v1` (identity, schema, validate, registry, runs: list, get,
//!   start, cancel), each with the caller's own token.
//! - [`compositions`]: Compositions listed, read, followed live (SSE over the apiserver's
//!   watch), saved (server-side apply as `orrery-console`) and their revisions, with the
//!   caller's own token; [`import`]: a seed spec converted as `orrery import` converts it.
//! - [`verdict`]: the one validator's verdict on a spec, as every route that takes one gives it.
//! - [`objects`]: objects of the apiserver as replies (no `managedFields`; their managers).
//! - [`limits`]: per-person rate limits on starts, decisions and saves.
//! - [`metrics`]: the sidecar's Prometheus metrics, on a listener of their own.
//! - [`process`]: the sidecar as a process (store, listener, PostgreSQL wakes, retention).
//! - [`caller`]: who calls (SelfSubjectReview with the caller's own token) and whether they
//!   may see a run (a `get` with that token, then the owner/approver rule).
//! - [`relay`]: the runner side of approvals (ask, long-poll the decision, settle).
//! - [`approvals`]: approvals for people (the text to owners and approvers, decisions as
//!   status appends with the caller's token).
//! - [`run_status`]: the pending approvals the sidecar writes into a run's status.
//! - [`hub`]: waking this process's followers of a run.
//! - [`problem`]: every error reply (`loc`, `code`, `message`).
//!
//! Every reply carries security headers ([`security_headers`]); `/healthz` and `/readyz` serve
//! the kubelet's probes.

pub mod api;
pub mod approvals;
pub mod body;
pub mod caller;
pub mod compositions;
pub mod console;
pub mod events;
pub mod extract;
pub mod hub;
pub mod import;
pub mod ingest;
pub mod limits;
pub mod metrics;
pub mod objects;
pub mod otel;
pub mod problem;
pub mod process;
pub mod relay;
pub mod run_list;
pub mod run_spec;
pub mod run_status;
pub mod store;
pub mod verdict;

use crate::run_token::RunTokenVerifier;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use caller::{Caller, Callers};
use events::StreamLimits;
use hub::Hub;
use problem::Problem;
use std::sync::Arc;
use store::Store;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// What a deployment may tune.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SidecarSettings {
    /// Event streams one person may hold open at once (rule 10.36: 4).
    pub max_streams_per_person: usize,
    /// Batches stored at once; past it runners get 429 and retry.
    pub ingest_concurrency: usize,
    /// Runs one person may start per minute.
    pub starts_per_minute: u32,
    /// Decisions one person may make per minute.
    pub decisions_per_minute: u32,
    /// Composition saves (dry runs too) one person may make per minute.
    pub saves_per_minute: u32,
    /// The one namespace whose runs this sidecar serves (`--namespace`, a single-namespace
    /// install): the retention sweep lists and sweeps that namespace's runs only. `None`: every
    /// namespace.
    pub namespace: Option<String>,
    /// The web console's built files (`--console-dir`; the operator image carries them at
    /// `/usr/share/orrery/console`): `None` serves no console.
    pub console_dir: Option<std::path::PathBuf>,
    /// How long a followed run's event stream may be quiet before the run's status is read, to
    /// end the stream of a run that ended with no `run.end` (10 s).
    pub stream_status_check: std::time::Duration,
    /// Where to serve `GET /metrics` (`--metrics-listen`); `None` serves no metrics. Never the
    /// API's port: the API is reachable by every runner and person, the metrics by scrapers.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Where runs are exported as OpenTelemetry traces (`--otel-endpoint`); `None` exports
    /// nothing.
    pub otel: Option<crate::otel::OtelSettings>,
}

impl Default for SidecarSettings {
    fn default() -> Self {
        SidecarSettings {
            max_streams_per_person: 4,
            ingest_concurrency: 32,
            starts_per_minute: 30,
            decisions_per_minute: 30,
            saves_per_minute: 30,
            namespace: None,
            console_dir: None,
            stream_status_check: std::time::Duration::from_secs(10),
            metrics_listen: None,
            otel: None,
        }
    }
}

/// The sidecar's shared state.
pub struct Sidecar {
    /// The event store.
    pub store: Store,
    /// Live followers.
    pub hub: Hub,
    /// Checks run tokens.
    pub verifier: RunTokenVerifier,
    /// Makes callers from bearer tokens.
    pub callers: Callers,
    /// Open streams per person.
    pub streams: StreamLimits,
    /// Starts, decisions and saves per person.
    pub limits: limits::Limits,
    /// The deployment config (limits, ceilings, approval timeout).
    pub config: Arc<crate::Config>,
    /// The sidecar's own client (its ServiceAccount): only for what the system writes
    /// (pending approvals) and reads (decisions for the relay, the retention sweep).
    pub own_client: Option<kube::Client>,
    /// Back-pressure on ingest.
    pub ingest_slots: Semaphore,
    /// Cancelled on shutdown: open streams end.
    pub shutdown: CancellationToken,
    /// The one namespace served, if the install serves one (see [`SidecarSettings::namespace`]).
    pub namespace: Option<String>,
    /// The web console's files (see [`console`]), when served.
    pub console_dir: Option<std::path::PathBuf>,
    /// See [`SidecarSettings::stream_status_check`].
    pub stream_status_check: std::time::Duration,
    /// The sidecar's metrics.
    pub metrics: metrics::SidecarMetrics,
    /// The trace exporter, once started ([`process::Bound::start`] starts it when
    /// [`SidecarSettings::otel`] is set).
    pub otel: std::sync::OnceLock<otel::Exporter>,
}

impl std::fmt::Debug for Sidecar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sidecar")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl Sidecar {
    /// A sidecar over `store`, verifying run tokens with `verifier`, acting for callers on the
    /// cluster of `kube_config` (its own credentials are never lent to a caller).
    pub fn new(
        store: Store,
        verifier: RunTokenVerifier,
        kube_config: kube::Config,
        config: Arc<crate::Config>,
        settings: &SidecarSettings,
    ) -> Sidecar {
        let own_client = kube::Client::try_from(kube_config.clone()).ok();
        let store_ops = store.operations();
        Sidecar {
            own_client,
            store,
            hub: Hub::new(),
            verifier,
            callers: Callers::new(kube_config),
            streams: StreamLimits::new(settings.max_streams_per_person.max(1)),
            limits: limits::Limits::new(
                limits::PerMinute(settings.starts_per_minute),
                limits::PerMinute(settings.decisions_per_minute),
                limits::PerMinute(settings.saves_per_minute),
            ),
            config,
            ingest_slots: Semaphore::new(settings.ingest_concurrency.max(1)),
            shutdown: CancellationToken::new(),
            namespace: settings.namespace.clone(),
            console_dir: settings.console_dir.clone(),
            stream_status_check: settings
                .stream_status_check
                .max(std::time::Duration::from_millis(100)),
            metrics: metrics::SidecarMetrics::new(&store_ops),
            otel: std::sync::OnceLock::new(),
        }
    }

    /// The caller of a request: its bearer token, identified by the cluster.
    pub async fn caller(&self, headers: &HeaderMap) -> Result<Caller, Problem> {
        let token = ingest::bearer(headers).ok_or_else(|| {
            Problem::unauthenticated(
                "no bearer token: send `Authorization: Bearer <token>` with a token the cluster accepts (`kubectl create token`, your OIDC id token)",
            )
        })?;
        self.callers.identify(token).await
    }

    /// Events stored by this process since it started.
    pub fn ingested(&self) -> u64 {
        self.metrics.stored()
    }
}

/// Every route of the sidecar.
pub fn router(sidecar: Arc<Sidecar>) -> Router {
    Router::new()
        .route(
            orrery_crds::events::ingest::INGEST_ROUTE,
            post(ingest::ingest).layer(axum::middleware::from_fn_with_state(
                orrery_crds::events::ingest::MAX_BATCH_BYTES,
                body::body_limit,
            )),
        )
        .route("/api/v1/me", get(api::me))
        .route("/api/v1/schema", get(api::schema))
        .route(
            "/api/v1/namespaces/{namespace}/validate",
            post(api::validate_spec),
        )
        .route(
            "/api/v1/namespaces/{namespace}/compositions",
            get(compositions::list),
        )
        .route(
            "/api/v1/namespaces/{namespace}/compositions/{name}",
            get(compositions::get).put(compositions::save::save),
        )
        .route(
            "/api/v1/namespaces/{namespace}/compositions/{name}/revisions",
            get(compositions::revisions::list),
        )
        .route(
            "/api/v1/namespaces/{namespace}/compositions/{name}/revisions/{revision}",
            get(compositions::revisions::one),
        )
        .route(
            "/api/v1/namespaces/{namespace}/import",
            post(import::import)
                .layer::<_, std::convert::Infallible>(axum::middleware::from_fn_with_state(
                    import::MAX_IMPORT_BYTES,
                    body::body_limit,
                ))
                .layer(axum::extract::DefaultBodyLimit::max(
                    import::MAX_IMPORT_BYTES,
                )),
        )
        .route(
            "/api/v1/namespaces/{namespace}/registry",
            get(api::registry),
        )
        .route(
            "/api/v1/runs/{namespace}",
            get(api::list_runs).post(api::start_run),
        )
        .route("/api/v1/runs/{namespace}/{name}", get(api::get_run))
        .route(
            "/api/v1/runs/{namespace}/{name}/cancel",
            post(api::cancel_run),
        )
        .route(
            "/api/v1/runs/{namespace}/{name}/composition",
            get(run_spec::run_composition),
        )
        .route(
            "/api/v1/runs/{namespace}/{name}/events",
            get(events::events),
        )
        .route(
            "/api/v1/runs/{namespace}/{name}/approvals",
            get(approvals::list),
        )
        .route(
            "/api/v1/runs/{namespace}/{name}/approvals/{id}",
            post(approvals::decide),
        )
        .route(
            orrery_crds::relay::ASK_ROUTE,
            post(relay::ask).layer(axum::middleware::from_fn_with_state(
                relay::MAX_ASK_BYTES,
                body::body_limit,
            )),
        )
        .route(
            orrery_crds::relay::DECISION_ROUTE,
            get(relay::wait_decision),
        )
        .route(orrery_crds::relay::SETTLE_ROUTE, post(relay::settled))
        .route("/api/v1/openapi.json", get(openapi))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .fallback(console::fallback)
        .layer(axum::middleware::from_fn_with_state(
            body::MAX_BODY_BYTES,
            body::body_limit,
        ))
        .layer(body::extractor_limit())
        .layer(axum::middleware::from_fn_with_state(
            REQUEST_TIMEOUT,
            request_timeout,
        ))
        .layer(axum::middleware::map_response(security_headers))
        .layer(axum::middleware::from_fn_with_state(
            sidecar.clone(),
            metrics::track,
        ))
        .with_state(sidecar)
}

/// The longest any request may take to be answered (a stream's events after its headers are
/// not counted): the longest waits, a decision's and a runner's long-poll, are 30 s.
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Answers 503 (`unavailable`, with `Retry-After`) a request not answered within
/// `limit` ([`REQUEST_TIMEOUT`] on the router), so no caller waits on a stuck apiserver or
/// store for ever.
async fn request_timeout(
    State(limit): State<std::time::Duration>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => Problem::unavailable(format!(
            "the request was not answered within {} s; retry",
            limit.as_secs_f64()
        ))
        .into_response(),
    }
}

/// The API's OpenAPI document (`docs/openapi.json`, checked in; a test keeps it in step with
/// the routes).
pub const OPENAPI: &str = include_str!("../../../docs/openapi.json");

async fn openapi() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        OPENAPI,
    )
        .into_response()
}

async fn readyz(State(sidecar): State<Arc<Sidecar>>) -> Response {
    match sidecar.store.last_seq("").await {
        Ok(_) if !sidecar.shutdown.is_cancelled() => (StatusCode::OK, "ok").into_response(),
        Ok(_) => (StatusCode::SERVICE_UNAVAILABLE, "stopping").into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the event store cannot be read: {e}"),
        )
            .into_response(),
    }
}

/// The headers every reply carries: no sniffing, no framing, no referrer, no caching of
/// what a person may see, and a CSP that allows nothing (the API serves no page).
pub async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let set = [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
    ];
    for (name, value) in set {
        headers.insert(name, HeaderValue::from_static(value));
    }
    // The API's policy unless the reply is the console's own (which sets its policy).
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
        );
    }
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// Serves `router(sidecar)` on `listener` until `shutdown` resolves; then open event streams
/// end (the shutdown token), requests in flight finish, and the function returns.
pub async fn serve(
    listener: tokio::net::TcpListener,
    sidecar: Arc<Sidecar>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let token = sidecar.shutdown.clone();
    tokio::spawn({
        let token = token.clone();
        async move {
            shutdown.await;
            token.cancel();
        }
    });
    let app = router(sidecar);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { token.cancelled().await })
        .await
}

#[cfg(test)]
mod fuzz_tests;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use axum::body::Body;
    use axum::http::{Method, Request};
    use tower::ServiceExt;

    /// The private half of [`PUBLIC`] (a key made for these tests only).
    const PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIJFsMCDY7n2ZvsfrK8nmpZUA0JQnU0Q3YI6biGiPXvhi
-----END PRIVATE KEY-----
";
    const PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEA3cchcNpgSSR94yoPqi3PPkFT3GbGkzotaslr7pm7CeQ=
-----END PUBLIC KEY-----
";

    pub(super) async fn sidecar() -> Arc<Sidecar> {
        sidecar_with(&SidecarSettings::default()).await
    }

    /// A test sidecar with `settings` (in-memory store, the test key, no cluster).
    pub(super) async fn sidecar_with(settings: &SidecarSettings) -> Arc<Sidecar> {
        let store = Store::open("sqlite::memory:").await.expect("store");
        let verifier =
            RunTokenVerifier::from_public_pem(PUBLIC.as_bytes(), "orrery-sidecar").expect("key");
        let kube = kube::Config::new("https://127.0.0.1:1".parse().expect("url"));
        let config = crate::Config::parse(
            "c.yaml",
            "apiVersion: config.studio.orrery.dev/v1alpha1\nkind: OperatorConfig\nrunner: {image: 'o:1'}\nsidecar: {namespace: s, serviceName: s, port: 8080}\nrunToken: {signingKeyFile: k}\n",
        )
        .expect("config");
        Arc::new(Sidecar::new(
            store,
            verifier,
            kube,
            Arc::new(config),
            settings,
        ))
    }

    /// The paths and methods of the checked-in OpenAPI document.
    fn documented() -> Vec<(Method, String)> {
        let doc: serde_json::Value =
            serde_json::from_str(OPENAPI).expect("docs/openapi.json is JSON");
        let mut out = Vec::new();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for method in item.as_object().expect("path item").keys() {
                out.push((method.to_uppercase().parse().expect("method"), path.clone()));
            }
        }
        out
    }

    #[tokio::test]
    async fn every_documented_endpoint_is_served_and_every_served_one_is_documented() {
        let app = router(sidecar().await);
        let documented = documented();
        for (method, path) in &documented {
            let concrete = path
                .replace("{namespace}", "ns")
                .replace("{name}", "r")
                .replace("{revision}", "1")
                .replace("{uid}", "u");
            let response = app
                .clone()
                .oneshot(
                    Request::builder()
                        .method(method.clone())
                        .uri(&concrete)
                        .body(Body::empty())
                        .expect("request"),
                )
                .await
                .expect("response");
            let status = response.status();
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
            let body = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .expect("body");
            let text = String::from_utf8_lossy(&body);
            assert!(
                !text.contains("no such endpoint"),
                "{method} {path} is not served"
            );
            if path.starts_with("/api/v1/") && path != "/api/v1/openapi.json"
                || path.starts_with("/internal/")
            {
                assert_eq!(
                    status,
                    StatusCode::UNAUTHORIZED,
                    "{method} {path} needs a token"
                );
            }
        }
        let source = include_str!("mod.rs");
        let code = source.split("#[cfg(test)]").next().unwrap_or_default();
        let served: Vec<&str> = code
            .split(".route(")
            .skip(1)
            .filter_map(|rest| rest.trim_start().strip_prefix('"'))
            .filter_map(|rest| rest.split('"').next())
            .collect();
        assert!(served.len() >= 10, "{served:?}");
        for path in served {
            assert!(
                documented.iter().any(|(_, p)| p == path),
                "{path} is served but missing from docs/openapi.json"
            );
        }
        assert!(
            documented
                .iter()
                .any(|(_, p)| p == orrery_crds::events::ingest::INGEST_ROUTE),
            "the ingest route is documented"
        );
    }

    #[tokio::test]
    async fn every_reply_carries_the_security_headers_and_errors_are_json_with_a_code() {
        let app = router(sidecar().await);
        let response = app
            .oneshot(
                Request::builder()
                    .uri("/api/v1/nowhere")
                    .body(Body::empty())
                    .expect("request"),
            )
            .await
            .expect("response");
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let headers = response.headers().clone();
        for (name, value) in [
            ("x-content-type-options", "nosniff"),
            ("x-frame-options", "DENY"),
            ("referrer-policy", "no-referrer"),
            ("cache-control", "no-store"),
            (
                "content-security-policy",
                "default-src 'none'; frame-ancestors 'none'",
            ),
        ] {
            assert_eq!(
                headers.get(name).map(|v| v.to_str().unwrap()),
                Some(value),
                "{name}"
            );
        }
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("body");
        let error: orrery_crds::events::ingest::ApiError =
            serde_json::from_slice(&body).expect("an ApiError");
        assert_eq!(error.code, problem::codes::NOT_FOUND);
    }

    #[tokio::test]
    async fn a_request_not_answered_in_time_gets_a_503_problem_naming_the_timeout() {
        let limit = std::time::Duration::from_millis(100);
        let app = Router::new()
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                    "late"
                }),
            )
            .route("/fast", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(limit, request_timeout));
        let fast = app
            .clone()
            .oneshot(Request::get("/fast").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(fast.status(), StatusCode::OK);
        let slow = app
            .oneshot(Request::get("/slow").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(slow.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(slow.headers().contains_key(header::RETRY_AFTER));
        let body = axum::body::to_bytes(slow.into_body(), 1 << 20)
            .await
            .unwrap();
        let error: orrery_crds::events::ingest::ApiError =
            serde_json::from_slice(&body).expect("an ApiError");
        assert_eq!(error.code, problem::codes::UNAVAILABLE);
        assert!(error.message.contains("0.1 s"), "{}", error.message);
    }

    #[tokio::test]
    async fn a_run_asks_at_most_twelve_times_through_the_relay_rule_4_20() {
        use orrery_crds::approval::ApprovalRequest;
        use orrery_crds::relay::{approval_digest, ask_path};
        let sidecar = sidecar().await;
        let run = store::RunRecord {
            uid: "uid-1".into(),
            namespace: "team".into(),
            name: "r".into(),
        };
        let ask = |n: u32| {
            let id = format!("approval-{n}");
            ApprovalRequest {
                digest: approval_digest("uid-1", &id, "text"),
                id,
                kind: orrery_crds::run::ApprovalKind::Approval,
                node: "review".into(),
                prompt: String::new(),
                text: "text".into(),
                size: 4,
                complete: true,
                expires_at: "2026-12-02T10:00:00.000Z".into(),
            }
        };
        for n in 1..=12 {
            sidecar
                .store
                .put_approval(&run, &ask(n))
                .await
                .expect("stored");
        }
        let token = run_token("uid-1");
        let response = router(sidecar.clone())
            .oneshot(
                Request::builder()
                    .method(Method::POST)
                    .uri(ask_path("uid-1"))
                    .header("authorization", format!("Bearer {token}"))
                    .header("content-type", "application/json")
                    .body(Body::from(serde_json::to_vec(&ask(13)).expect("json")))
                    .expect("request"),
            )
            .await
            .expect("response");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("body");
        let error: orrery_crds::events::ingest::ApiError =
            serde_json::from_slice(&body).expect("an ApiError");
        assert!(
            error.message.contains("asked 12 times"),
            "{}",
            error.message
        );
        assert_eq!(
            sidecar.store.approvals("uid-1").await.expect("read").len(),
            12
        );
    }

    /// A run token for run `uid` (`team/r`), signed with [`PRIVATE`].
    pub(super) fn run_token(uid: &str) -> String {
        let signer =
            crate::run_token::RunTokenSigner::from_ed_pem(PRIVATE.as_bytes()).expect("key");
        let now = i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_secs(),
        )
        .expect("now");
        signer
            .sign(&crate::run_token::run_claims(
                "team",
                "r",
                uid,
                "orrery-sidecar",
                now,
                600,
            ))
            .expect("token")
    }

    #[tokio::test]
    async fn ingest_past_its_concurrency_answers_429_with_retry_after_and_stores_nothing() {
        use orrery_crds::events::ingest::ingest_path;
        let sidecar = sidecar().await;
        // Every ingest slot is taken (the default settings allow 32 batches at once).
        let _held = sidecar
            .ingest_slots
            .acquire_many(32)
            .await
            .expect("the slots");
        let batch = serde_json::json!({"events": [{
            "seq": 1, "runId": "uid-2", "ts": "2026-12-02T00:00:00.000Z",
            "type": "run.start", "composition": "c", "pattern": "Pipeline", "nodes": 1,
            "budgets": {"maxTokens": 1, "maxToolCalls": 1, "maxDelegations": 1,
                        "maxRemoteCalls": 1, "timeoutSeconds": 1},
            "captureContent": false, "dryRunTools": false, "inputSize": 1
        }]});
        let response = router(sidecar.clone())
            .oneshot(
                Request::builder()
                    .method(Method::POST)
                    .uri(ingest_path("uid-2"))
                    .header("authorization", format!("Bearer {}", run_token("uid-2")))
                    .header("content-type", "application/json")
                    .body(Body::from(batch.to_string()))
                    .expect("request"),
            )
            .await
            .expect("response");
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            response
                .headers()
                .get(header::RETRY_AFTER)
                .map(|v| v.as_bytes()),
            Some(&b"1"[..])
        );
        assert_eq!(sidecar.store.last_seq("uid-2").await.expect("read"), 0);
    }
}
