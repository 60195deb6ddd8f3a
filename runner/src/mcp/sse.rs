//! The legacy HTTP+SSE transport (MCP 2024-11-05), which rmcp 3.11 no longer ships: `GET` the
//! SSE endpoint, read the `endpoint` event naming where to POST, then POST each message there
//! and read every server message from the event stream.
//!
//! Everything goes through the network guard; the POST endpoint must be on the SSE URL's own
//! origin (a server cannot send our messages, or the bearer token, elsewhere).

use super::http::HOP_HEADER;
use crate::net::{GuardError, GuardedClient, Origin, SseLimits, SseReader, authorize, read_capped};
use crate::secrets::SecretValue;
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Why the legacy SSE transport failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SseTransportError {
    /// The guard refused, or the request failed.
    #[error(transparent)]
    Guard(#[from] GuardError),
    /// The server broke the transport's rules.
    #[error("{url}: {message}")]
    Protocol {
        /// The URL involved.
        url: String,
        /// What went wrong.
        message: String,
    },
}

/// An rmcp client transport over legacy HTTP+SSE.
#[derive(Debug)]
pub struct LegacySseTransport {
    client: GuardedClient,
    post_url: Url,
    bearer: Option<SecretValue>,
    inbound: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: JoinHandle<()>,
    max_reply_bytes: u64,
    post_timeout: Duration,
}

/// Caps of one legacy SSE connection.
#[derive(Clone, Copy, Debug)]
pub struct SseTransportLimits {
    /// Longest wait for the `endpoint` event, and for the answer to one POST.
    pub connect_timeout: Duration,
    /// Cap on one event (one server message).
    pub max_event_bytes: u64,
    /// Cap on the reply to one POST (normally empty).
    pub max_reply_bytes: u64,
}

impl LegacySseTransport {
    /// Opens the event stream at `sse_url` and waits for the `endpoint` event. `bearer` goes
    /// only to `origins`.
    pub async fn connect(
        client: GuardedClient,
        sse_url: &Url,
        bearer: Option<SecretValue>,
        origins: &[Origin],
        limits: SseTransportLimits,
    ) -> Result<Self, SseTransportError> {
        let mut request = client
            .get(sse_url.as_str())?
            .header(ACCEPT, "text/event-stream")
            .header(HOP_HEADER, "1");
        if let Some(token) = &bearer
            && authorize(sse_url, origins)
        {
            request = request.bearer_auth(token.expose());
        }
        let response = client.send(request).await?;
        let status = response.status();
        let protocol = |message: String| SseTransportError::Protocol {
            url: sse_url.to_string(),
            message,
        };
        if !status.is_success() {
            return Err(protocol(format!(
                "opening the event stream answered HTTP {status}"
            )));
        }
        let sse_limits = SseLimits {
            max_event_bytes: limits.max_event_bytes,
            max_total_bytes: None,
            idle_timeout: None,
            total_timeout: None,
        };
        let mut reader = SseReader::new(response, sse_limits)?;
        let endpoint = tokio::time::timeout(limits.connect_timeout, async {
            loop {
                match reader.next_event().await? {
                    Some(e) if e.event.as_deref() == Some("endpoint") => return Ok(Some(e.data)),
                    Some(_) => continue,
                    None => return Ok(None),
                }
            }
        })
        .await
        .map_err(|_| protocol("no `endpoint` event arrived in time".into()))?
        .map_err(SseTransportError::Guard)?
        .ok_or_else(|| protocol("the event stream ended before the `endpoint` event".into()))?;
        crate::net::check_written(endpoint.trim()).map_err(SseTransportError::Guard)?;
        let post_url = sse_url
            .join(endpoint.trim())
            .map_err(|e| protocol(format!("the `endpoint` event does not name a URL ({e})")))?;
        let same_origin = Origin::of(&post_url).ok() == Origin::of(sse_url).ok();
        if !same_origin {
            return Err(protocol(format!(
                "the `endpoint` event names {post_url}, which is not on the server's own origin; refused"
            )));
        }
        let (tx, inbound) = mpsc::channel(32);
        let reader = tokio::spawn(read_messages(reader, tx, sse_url.to_string()));
        let authorized = bearer.filter(|_| authorize(&post_url, origins));
        Ok(LegacySseTransport {
            client,
            post_url,
            bearer: authorized,
            inbound,
            reader,
            max_reply_bytes: limits.max_reply_bytes,
            post_timeout: limits.connect_timeout,
        })
    }

    /// Where messages are POSTed.
    pub fn post_url(&self) -> &Url {
        &self.post_url
    }
}

async fn read_messages(mut reader: SseReader, tx: mpsc::Sender<ServerJsonRpcMessage>, url: String) {
    loop {
        let event = match reader.next_event().await {
            Ok(Some(e)) => e,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(%url, "the MCP event stream failed: {e}");
                return;
            }
        };
        if !matches!(event.event.as_deref(), None | Some("message")) || event.data.trim().is_empty()
        {
            continue;
        }
        match serde_json::from_str::<ServerJsonRpcMessage>(&event.data) {
            Ok(message) => {
                if tx.send(message).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(%url, "a malformed MCP message on the event stream ended it: {e}");
                return;
            }
        }
    }
}

impl Drop for LegacySseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Transport<RoleClient> for LegacySseTransport {
    type Error = SseTransportError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let client = self.client.clone();
        let url = self.post_url.clone();
        let bearer = self.bearer.clone();
        let max = self.max_reply_bytes;
        let timeout = self.post_timeout;
        let post = async move {
            let mut request = client
                .post(url.as_str())?
                .header(HOP_HEADER, "1")
                .header(CONTENT_TYPE, "application/json")
                .json(&item);
            if let Some(token) = &bearer {
                request = request.bearer_auth(token.expose());
            }
            let response = client.send(request).await?;
            let status = response.status();
            let body = read_capped(response, max).await?;
            if !status.is_success() {
                return Err(SseTransportError::Protocol {
                    url: url.to_string(),
                    message: format!(
                        "posting a message answered HTTP {status}: {}",
                        String::from_utf8_lossy(&body[..body.len().min(512)])
                    ),
                });
            }
            Ok(())
        };
        let url = self.post_url.to_string();
        async move {
            tokio::time::timeout(timeout, post)
                .await
                .unwrap_or_else(|_| {
                    Err(SseTransportError::Guard(GuardError::Timeout {
                        url,
                        what: "posting a message".into(),
                    }))
                })
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.inbound.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.inbound.close();
        Ok(())
    }
}
