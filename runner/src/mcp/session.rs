//! One run's connection to one MCP server: connected on first use (or by the factory's
//! preflight), its tools listed, checked and pinned, closed when the run ends (rule 7.10).
//!
//! Each tool the entry allows is checked before a model may use it: listed by the server,
//! listed `readOnly` by the entry, marked `readOnlyHint: true` by the server (a tool listed
//! read-only without it is refused loudly), an input schema with no reference leaving the
//! document, a description the safety screen does not flag, and a pin that matches (pinned on
//! first sight, kept across runs). After `notifications/tools/list_changed` (on the 2025-11-25
//! GET stream, or on a 2026-07-28 `subscriptions/listen`) no call is made until the tools are
//! listed and checked again: a tool whose definition differs from its pin stays disabled until
//! it is re-pinned (`orrery pins reset <entry>`), in this run and the next; one that is exactly
//! as pinned is called again. rmcp's response cache is off, so every list is the server's.

use super::checks::{ToolDefinition, ToolState, check_all};
use super::endpoint::McpEndpoint;
pub use super::error::McpCallError;
use super::error::{ConnectError, StreamFault, reason, reason_with};
use super::http::GuardedMcpHttp;
use super::listing::{ListCaps, ListError, list_tools_capped};
use super::sse::{LegacySseTransport, SseTransportLimits};
use crate::net::GuardedClient;
use crate::pin::store::Pins;
use orrery_crds::registry::McpTransport;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    JsonObject, ProtocolVersion, SubscriptionFilter,
};
use rmcp::service::{MaybeSendFuture, NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::SseRetryPolicy;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{
    ClientCacheConfig, ClientHandler, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient,
    ServiceExt,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long closing a session may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Our client side of the protocol: no capabilities (no sampling, no elicitation, no roots), and
/// a flag raised by `notifications/tools/list_changed`.
#[derive(Clone, Debug)]
struct OrreryClient {
    config: ClientConfig,
    list_changed: Arc<AtomicBool>,
}

impl ClientHandler for OrreryClient {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.list_changed.store(true, Ordering::SeqCst);
        std::future::ready(())
    }
}

/// At most three quick reconnects of an event stream.
#[derive(Debug)]
struct FewRetries;

impl SseRetryPolicy for FewRetries {
    fn retry(&self, current_times: usize) -> Option<Duration> {
        (current_times < 3).then(|| Duration::from_millis(250 * (current_times as u64 + 1)))
    }
}

struct Ready {
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, OrreryClient>>>,
    tools: std::sync::Mutex<BTreeMap<String, ToolState>>,
    listener: Option<JoinHandle<()>>,
}

enum Connection {
    NotYet,
    Ready(Arc<Ready>),
    Failed(ConnectError),
    Closed,
}

/// One run's session with one MCP server.
pub struct McpSession {
    endpoint: McpEndpoint,
    client: GuardedClient,
    pins: Arc<dyn Pins>,
    list_changed: Arc<AtomicBool>,
    connection: tokio::sync::Mutex<Connection>,
    /// Why an event stream ended early (a byte cap), which rmcp reports as a closed
    /// connection.
    fault: StreamFault,
}

impl std::fmt::Debug for McpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSession")
            .field("entry", &self.endpoint.entry)
            .finish_non_exhaustive()
    }
}

impl McpSession {
    /// A session (not yet connected) for `endpoint`, sending through `client`, pinning in
    /// `pins`.
    pub fn new(endpoint: McpEndpoint, client: GuardedClient, pins: Arc<dyn Pins>) -> Self {
        McpSession {
            endpoint,
            client,
            pins,
            list_changed: Arc::new(AtomicBool::new(false)),
            connection: tokio::sync::Mutex::new(Connection::NotYet),
            fault: StreamFault::default(),
        }
    }

    /// The entry's configuration.
    pub fn endpoint(&self) -> &McpEndpoint {
        &self.endpoint
    }

    /// Whether the server announced a tool list change that is not checked yet.
    pub fn list_changed(&self) -> bool {
        self.list_changed.load(Ordering::SeqCst)
    }

    /// The pinned definition of `tool` from the pin store (an earlier run), if any.
    pub fn stored_definition(&self, tool: &str) -> Option<ToolDefinition> {
        self.pins
            .stored_tool(&self.endpoint.pin_key(), tool)
            .map(|p| ToolDefinition {
                description: p.description,
                input_schema: p.input_schema,
            })
    }

    /// Connects if needed and returns every allowed tool's state. A server that cannot be
    /// reached is an error naming the entry.
    pub async fn tools(&self) -> Result<BTreeMap<String, ToolState>, McpCallError> {
        Ok(lock(&self.ready().await?.tools).clone())
    }

    /// The state of one tool, if the session is already connected (no I/O).
    pub fn tool_state_now(&self, tool: &str) -> Option<ToolState> {
        let connection = self.connection.try_lock().ok()?;
        match &*connection {
            Connection::Ready(ready) => lock(&ready.tools).get(tool).cloned(),
            _ => None,
        }
    }

    async fn ready(&self) -> Result<Arc<Ready>, McpCallError> {
        let mut connection = self.connection.lock().await;
        match &*connection {
            Connection::Ready(ready) => return Ok(ready.clone()),
            Connection::Failed(e) => return Err(McpCallError::Connect(e.clone())),
            Connection::Closed => {
                return Err(McpCallError::Connect(ConnectError::Closed {
                    entry: self.endpoint.entry.clone(),
                }));
            }
            Connection::NotYet => {}
        }
        let timeout = self.endpoint.call_timeout;
        match tokio::time::timeout(timeout, self.connect()).await {
            Ok(Ok(ready)) => {
                let ready = Arc::new(ready);
                *connection = Connection::Ready(ready.clone());
                Ok(ready)
            }
            Ok(Err(e)) => {
                *connection = Connection::Failed(e.clone());
                Err(McpCallError::Connect(e))
            }
            Err(_) => {
                let e = ConnectError::Timeout {
                    entry: self.endpoint.entry.clone(),
                    url: self.endpoint.url.to_string(),
                    seconds: timeout.as_secs(),
                };
                *connection = Connection::Failed(e.clone());
                Err(McpCallError::Connect(e))
            }
        }
    }

    fn handler(&self) -> OrreryClient {
        let config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("orrery", env!("CARGO_PKG_VERSION")),
        );
        OrreryClient {
            config,
            list_changed: self.list_changed.clone(),
        }
    }

    async fn connect(&self) -> Result<Ready, ConnectError> {
        let (entry, url) = (self.endpoint.entry.clone(), self.endpoint.url.to_string());
        let fault = &self.fault;
        let session = |e: &(dyn std::error::Error + 'static)| ConnectError::Session {
            entry: entry.clone(),
            url: url.clone(),
            reason: reason_with(e, fault),
        };
        let service = match self.endpoint.transport {
            McpTransport::StreamableHttp => {
                let http = GuardedMcpHttp::new(
                    self.client.clone(),
                    self.endpoint.origins.clone(),
                    self.endpoint.max_reply_bytes,
                )
                .with_post_stream_idle_timeout(self.endpoint.call_timeout)
                .with_fault(self.fault.clone());
                let max = usize::try_from(self.endpoint.max_reply_bytes).unwrap_or(usize::MAX);
                let mut config =
                    StreamableHttpClientTransportConfig::with_uri(self.endpoint.url.as_str())
                        .max_json_response_size(max)
                        .max_sse_event_size(max)
                        .control_request_timeout(self.endpoint.call_timeout);
                config.retry_config = Arc::new(FewRetries);
                if let Some(token) = &self.endpoint.bearer {
                    config = config.auth_header(token.expose());
                }
                let transport = StreamableHttpClientTransport::with_client(http, config);
                let lifecycle = ClientLifecycleMode::Auto {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    legacy_version: None,
                };
                self.handler()
                    .serve_with_lifecycle(transport, lifecycle)
                    .await
                    .map_err(|e| session(&e))?
            }
            McpTransport::Sse => {
                let limits = SseTransportLimits {
                    connect_timeout: self.endpoint.call_timeout,
                    max_event_bytes: self.endpoint.max_reply_bytes,
                    max_reply_bytes: 64 * 1024,
                };
                let transport = LegacySseTransport::connect(
                    self.client.clone(),
                    &self.endpoint.url,
                    self.endpoint.bearer.clone(),
                    &self.endpoint.origins,
                    limits,
                )
                .await
                .map_err(|e| ConnectError::EventStream {
                    entry: entry.clone(),
                    url: url.clone(),
                    reason: reason(&e),
                })?;
                self.handler()
                    .serve(transport)
                    .await
                    .map_err(|e| session(&e))?
            }
        };
        let peer = service.peer().clone();
        peer.set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        let listed = list_tools_capped(|p| peer.list_tools(p), ListCaps::default())
            .await
            .map_err(|e| ConnectError::List {
                entry: entry.clone(),
                url: url.clone(),
                reason: match e {
                    ListError::Fetch(e) => reason_with(&e, fault),
                    refused => refused.to_string(),
                },
            })?;
        let listener = self.listen_for_changes(&peer).await;
        let tools = check_all(&self.endpoint, self.pins.as_ref(), &listed)?;
        Ok(Ready {
            peer,
            service: tokio::sync::Mutex::new(Some(service)),
            tools: std::sync::Mutex::new(tools),
            listener,
        })
    }

    /// After a `list_changed`: lists and checks the tools again. Until that succeeds no tool of
    /// the server is called.
    async fn recheck(&self, ready: &Ready) {
        let entry = &self.endpoint.entry;
        let relist = list_tools_capped(|p| ready.peer.list_tools(p), ListCaps::default());
        let relisted = match tokio::time::timeout(self.endpoint.call_timeout, relist).await {
            Ok(Ok(listed)) => {
                check_all(&self.endpoint, self.pins.as_ref(), &listed).map_err(|e| e.to_string())
            }
            Ok(Err(ListError::Fetch(e))) => Err(reason_with(&e, &self.fault)),
            Ok(Err(refused)) => Err(refused.to_string()),
            Err(_) => Err(format!(
                "no answer within {} s (the entry's limits.timeoutSeconds)",
                self.endpoint.call_timeout.as_secs()
            )),
        };
        let states = relisted.unwrap_or_else(|why| {
            let reason = format!(
                "MCP server '{entry}' announced that its tools changed (notifications/tools/list_changed), and they could not be listed and checked again ({why}); its tools are disabled for this run"
            );
            self.endpoint.tools.iter().map(|t| (t.clone(), ToolState::Refused(reason.clone()))).collect()
        });
        *lock(&ready.tools) = states;
    }

    /// On a 2026-07-28 connection, change notifications arrive only on a subscription.
    async fn listen_for_changes(&self, peer: &Peer<RoleClient>) -> Option<JoinHandle<()>> {
        let info = peer.peer_info()?;
        let announces = info
            .capabilities
            .tools
            .as_ref()
            .and_then(|t| t.list_changed)
            == Some(true);
        if info.protocol_version < ProtocolVersion::V_2026_07_28 || !announces {
            return None;
        }
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let mut subscription = match peer.listen(filter).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(entry = %self.endpoint.entry, "could not subscribe to tool list changes: {e}");
                return None;
            }
        };
        let flag = self.list_changed.clone();
        Some(tokio::spawn(async move {
            while let Ok(Some(notification)) = subscription.next().await {
                if matches!(
                    notification,
                    rmcp::model::ServerNotification::ToolListChangedNotification(_)
                ) {
                    flag.store(true, Ordering::SeqCst);
                }
            }
        }))
    }

    /// Calls `tool` with `arguments`, within the entry's timeout; `cancel` stops it.
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, McpCallError> {
        let ready = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(McpCallError::Cancelled),
            r = self.ready() => r?,
        };
        let entry = &self.endpoint.entry;
        if self.list_changed.swap(false, Ordering::SeqCst) {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(McpCallError::Cancelled),
                _ = self.recheck(&ready) => {}
            }
        }
        let state = lock(&ready.tools).get(tool).cloned();
        match state {
            Some(ToolState::Usable(_)) => {}
            Some(ToolState::Refused(reason)) => return Err(McpCallError::Refused(reason)),
            None => {
                return Err(McpCallError::Refused(format!(
                    "tool '{tool}' is not among the tools MCP entry '{entry}' allows"
                )));
            }
        }
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let timeout = self.endpoint.call_timeout;
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(McpCallError::Cancelled),
            r = tokio::time::timeout(timeout, ready.peer.call_tool(params)) => match r {
                Err(_) => Err(McpCallError::Timeout { entry: entry.clone(), seconds: timeout.as_secs() }),
                Ok(Err(e)) => Err(McpCallError::Call {
                    entry: entry.clone(),
                    url: self.endpoint.url.to_string(),
                    tool: tool.to_owned(),
                    reason: reason_with(&e, &self.fault),
                }),
                Ok(Ok(result)) => Ok(result),
            },
        }
    }

    /// Ends the session (a `DELETE` in the 2025-11-25 session model). Later calls fail.
    pub async fn close(&self) {
        let previous = std::mem::replace(&mut *self.connection.lock().await, Connection::Closed);
        if let Connection::Ready(ready) = previous {
            if let Some(listener) = &ready.listener {
                listener.abort();
            }
            if let Some(mut service) = ready.service.lock().await.take() {
                let _ = service.close_with_timeout(CLOSE_TIMEOUT).await;
            }
        }
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
