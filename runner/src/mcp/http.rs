//! rmcp's streamable HTTP client backend over the network guard.
//!
//! rmcp ships a backend for a plain `reqwest::Client`, but handed the guard's client it would
//! see redirects and compressed replies as ordinary responses. [`GuardedMcpHttp`] sends every
//! request with [`GuardedClient::send`] instead, so a redirect (never followed) and a compressed
//! reply (never decoded) are refused by name, bodies are read within the byte caps
//! ([`read_capped`], [`SseReader`]), every request carries `x-orrery-hop: 1`, and the entry's
//! bearer token goes only to the entry's origin (rule 5.42).

use super::error::StreamFault;
use crate::net::{GuardError, GuardedClient, Origin, SseLimits, SseReader, authorize, read_capped};
use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The header every outbound call carries (rule 6.5).
pub const HOP_HEADER: &str = "x-orrery-hop";

type HttpResult<T> = Result<T, StreamableHttpError<GuardError>>;

/// How often one event stream may be resumed from the same event. rmcp counts its reconnect
/// attempts afresh after each stream that opened and closed gracefully, so a server that
/// accepts every resume and closes it at once would be reconnected to until the call's
/// timeout: past this many resumes from one event the resume is refused and the call ends.
const MAX_RESUMES_FROM_ONE_EVENT: u32 = 3;

/// A guarded HTTP backend for rmcp's streamable HTTP transport.
#[derive(Clone, Debug)]
pub struct GuardedMcpHttp {
    client: GuardedClient,
    origins: Arc<Vec<Origin>>,
    max_event_bytes: u64,
    post_stream_idle: Option<Duration>,
    fault: StreamFault,
    /// The last event an event stream was resumed from, and how often.
    resumes: Arc<std::sync::Mutex<Option<(String, u32)>>>,
}

impl GuardedMcpHttp {
    /// A backend sending through `client`; the bearer token (rmcp's `auth_header`) goes only to
    /// `origins`; one SSE event may be at most `max_event_bytes`, and so may the whole event
    /// stream answering one POST (the long-lived `GET` notification stream is not capped).
    pub fn new(client: GuardedClient, origins: Vec<Origin>, max_event_bytes: u64) -> Self {
        GuardedMcpHttp {
            client,
            origins: Arc::new(origins),
            max_event_bytes,
            post_stream_idle: None,
            fault: StreamFault::default(),
            resumes: Arc::new(std::sync::Mutex::new(None)),
        }
    }

    /// Why an event stream ended early (a byte cap, a malformed stream) is recorded in
    /// `fault`: rmcp only sees the stream end, and would report a closed connection.
    pub fn with_fault(mut self, fault: StreamFault) -> Self {
        self.fault = fault;
        self
    }

    /// Counts a resume from event `id`; an error once it is one too many.
    fn count_resume(&self, id: &str) -> HttpResult<()> {
        let mut last = self
            .resumes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let times = match last.as_mut() {
            Some((last_id, times)) if last_id == id => {
                *times += 1;
                *times
            }
            _ => {
                *last = Some((id.to_owned(), 1));
                1
            }
        };
        if times > MAX_RESUMES_FROM_ONE_EVENT {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!(
                    "the event stream was resumed from event '{id}' {MAX_RESUMES_FROM_ONE_EVENT} times and each ended without a reply (the reconnect limit)"
                ),
            )));
        }
        Ok(())
    }

    /// An event stream answering a POST that is silent for `idle` is ended with a timeout.
    pub fn with_post_stream_idle_timeout(mut self, idle: Duration) -> Self {
        self.post_stream_idle = Some(idle);
        self
    }

    fn request(
        &self,
        method: reqwest::Method,
        uri: &str,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<reqwest::RequestBuilder> {
        let url = crate::net::parse_url(uri).map_err(StreamableHttpError::Client)?;
        self.client
            .check_url(&url)
            .map_err(StreamableHttpError::Client)?;
        let mut builder = self
            .client
            .reqwest()
            .request(method, url.clone())
            .header(HOP_HEADER, "1");
        for (name, value) in custom_headers {
            if name == http::header::AUTHORIZATION {
                continue;
            }
            builder = builder.header(name, value);
        }
        if let Some(token) = auth_token
            && authorize(&url, &self.origins)
        {
            builder = builder.bearer_auth(token);
        }
        Ok(builder)
    }

    async fn send(&self, builder: reqwest::RequestBuilder) -> HttpResult<Response> {
        self.client
            .send(builder)
            .await
            .map_err(StreamableHttpError::Client)
    }

    /// The events of `response`. The stream answering one POST is capped at
    /// `max_event_bytes` in all and ends when idle; only the long-lived `GET` stream
    /// (`long_lived`), which carries notifications for the whole session, is not.
    fn event_stream(
        &self,
        response: Response,
        long_lived: bool,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let limits = if long_lived {
            SseLimits {
                max_event_bytes: self.max_event_bytes,
                max_total_bytes: None,
                idle_timeout: None,
                total_timeout: None,
            }
        } else {
            SseLimits {
                max_event_bytes: self.max_event_bytes,
                max_total_bytes: Some(self.max_event_bytes),
                idle_timeout: self.post_stream_idle,
                total_timeout: None,
            }
        };
        let reader = SseReader::new(response, limits).map_err(StreamableHttpError::Client)?;
        Ok(sse_stream(reader, self.fault.clone()))
    }
}

/// The events of `reader` as rmcp wants them; the stream ends after the first error.
pub(crate) fn sse_stream(
    reader: SseReader,
    fault: StreamFault,
) -> BoxStream<'static, Result<Sse, SseError>> {
    futures::stream::unfold(Some(reader), move |state| {
        let fault = fault.clone();
        async move {
            let mut reader = state?;
            match reader.next_event().await {
                Ok(Some(event)) => {
                    let sse = Sse {
                        event: event.event,
                        data: Some(event.data),
                        id: event.id,
                        retry: event.retry,
                    };
                    Some((Ok(sse), Some(reader)))
                }
                Ok(None) => None,
                Err(e) => {
                    fault.record(&e);
                    Some((Err(SseError::Body(Box::new(e))), None))
                }
            }
        }
    })
    .boxed()
}

fn content_type(response: &Response) -> Option<String> {
    response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
}

fn media_type_is(content_type: Option<&str>, expected: &str) -> bool {
    content_type.is_some_and(|ct| ct.split(';').next().is_some_and(|m| m.trim() == expected))
}

/// A rejected `server/discover` on a legacy server becomes a JSON-RPC error for the request,
/// so rmcp's automatic lifecycle falls back to `initialize` (as its own backend does).
fn discover_rejection(
    message: &ClientJsonRpcMessage,
    session_attached: bool,
    status: StatusCode,
    body: &str,
) -> Option<StreamableHttpPostResponse> {
    if session_attached
        || !status.is_client_error()
        || matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
    {
        return None;
    }
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    if !matches!(request.request, ClientRequest::DiscoverRequest(_)) {
        return None;
    }
    let error = match serde_json::from_str::<ServerJsonRpcMessage>(body) {
        Ok(ServerJsonRpcMessage::Error(error)) => error.error,
        _ => ErrorData::invalid_request(
            format!("server/discover rejected with HTTP {status}: {body}"),
            None,
        ),
    };
    Some(StreamableHttpPostResponse::Json(
        ServerJsonRpcMessage::error(error, Some(request.id.clone())),
        None,
    ))
}

fn text_prefix(body: &[u8], max: usize) -> String {
    let cut = body.len().min(max);
    String::from_utf8_lossy(&body[..cut]).into_owned()
}

impl StreamableHttpClient for GuardedMcpHttp {
    type Error = GuardError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let session_attached = session_id.is_some();
        let mut builder = self
            .request(reqwest::Method::POST, &uri, auth_header, custom_headers)?
            .header(
                ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            );
        if let Some(session) = &session_id {
            builder = builder.header(HEADER_SESSION_ID, session.as_ref());
        }
        let response = self.send(builder.json(&message)).await?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_attached {
            return Err(StreamableHttpError::SessionExpired);
        }
        let ct = content_type(&response);
        let new_session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let awaits_no_response = !matches!(message, ClientJsonRpcMessage::Request(_));
        let max_json = u64::try_from(limits.max_json_response_size).unwrap_or(u64::MAX);
        if !status.is_success() {
            let body = read_capped(response, max_json)
                .await
                .map_err(StreamableHttpError::Client)?;
            let text = String::from_utf8_lossy(&body);
            if let Some(answer) = discover_rejection(&message, session_attached, status, &text) {
                return Ok(answer);
            }
            if media_type_is(ct.as_deref(), JSON_MIME_TYPE)
                && !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
                && let Ok(error @ ServerJsonRpcMessage::Error(_)) =
                    serde_json::from_str::<ServerJsonRpcMessage>(&text)
            {
                return Ok(StreamableHttpPostResponse::Json(error, new_session));
            }
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!(
                    "HTTP {status}: {}",
                    text_prefix(&body, limits.max_error_response_size.min(2048))
                ),
            )));
        }
        if awaits_no_response && response.content_length() == Some(0) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if media_type_is(ct.as_deref(), EVENT_STREAM_MIME_TYPE) {
            return Ok(StreamableHttpPostResponse::Sse(
                self.event_stream(response, false)?,
                new_session,
            ));
        }
        if media_type_is(ct.as_deref(), JSON_MIME_TYPE) {
            let body = read_capped(response, max_json)
                .await
                .map_err(StreamableHttpError::Client)?;
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, new_session)),
                Err(_) if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
                Err(e) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                    format!("the reply is not a JSON-RPC message ({e})"),
                ))),
            };
        }
        if awaits_no_response {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(ct))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let builder = self
            .request(reqwest::Method::DELETE, &uri, auth_header, custom_headers)?
            .header(HEADER_SESSION_ID, session_id.as_ref());
        let response = self.send(builder).await?;
        let status = response.status();
        if status.is_success() || status == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
            format!("ending the session answered HTTP {status}"),
        )))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let mut builder = self
            .request(reqwest::Method::GET, &uri, auth_header, custom_headers)?
            .header(ACCEPT, EVENT_STREAM_MIME_TYPE);
        if let Some(session) = session_id {
            builder = builder.header(HEADER_SESSION_ID, session.as_ref());
        }
        if let Some(id) = last_event_id {
            self.count_resume(&id)?;
            builder = builder.header(HEADER_LAST_EVENT_ID, id);
        }
        let response = self.send(builder).await?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !status.is_success() {
            let body = read_capped(response, 4096).await.unwrap_or_default();
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!(
                    "opening the event stream answered HTTP {status}: {}",
                    text_prefix(&body, 2048)
                ),
            )));
        }
        let ct = content_type(&response);
        if !media_type_is(ct.as_deref(), EVENT_STREAM_MIME_TYPE) {
            return Err(StreamableHttpError::UnexpectedContentType(ct));
        }
        self.event_stream(response, true)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn media_types_are_compared_without_parameters() {
        assert!(media_type_is(
            Some("application/json; charset=utf-8"),
            JSON_MIME_TYPE
        ));
        assert!(media_type_is(
            Some("text/event-stream"),
            EVENT_STREAM_MIME_TYPE
        ));
        assert!(!media_type_is(Some("application/jsonx"), JSON_MIME_TYPE));
        assert!(!media_type_is(None, JSON_MIME_TYPE));
    }

    #[test]
    fn only_a_rejected_discover_without_a_session_becomes_a_json_rpc_error() {
        let discover: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}
        }))
        .unwrap();
        let answer = discover_rejection(
            &discover,
            false,
            StatusCode::BAD_REQUEST,
            "Bad Request: Server not initialized",
        );
        match answer {
            Some(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(e), None)) => {
                assert!(
                    e.error.message.contains("Server not initialized"),
                    "{}",
                    e.error.message
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(discover_rejection(&discover, true, StatusCode::BAD_REQUEST, "").is_none());
        assert!(discover_rejection(&discover, false, StatusCode::UNAUTHORIZED, "").is_none());
        let list: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}
        }))
        .unwrap();
        assert!(discover_rejection(&list, false, StatusCode::BAD_REQUEST, "").is_none());
    }
}
