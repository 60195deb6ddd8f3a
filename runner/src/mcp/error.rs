//! Why an MCP session or call failed, in words a person can act on: the endpoint, what
//! happened, and the limit when one was hit. rmcp's wrappers ("Send message error Transport
//! [rmcp::transport::worker::…] error: …") are taken off so the reason comes first, and a stream
//! the byte cap cut short is reported as such, not as a closed connection.

use crate::net::GuardError;
use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::StreamableHttpError;
use std::sync::{Arc, Mutex};

/// Why the session with an MCP server could not be set up (or is over).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The initialize handshake failed.
    #[error("MCP server '{entry}' at {url}: could not start a session: {reason}")]
    Session {
        /// The entry.
        entry: String,
        /// The server's URL.
        url: String,
        /// What happened.
        reason: String,
    },
    /// The legacy SSE stream could not be opened.
    #[error("MCP server '{entry}' at {url}: could not open the event stream: {reason}")]
    EventStream {
        /// The entry.
        entry: String,
        /// The server's URL.
        url: String,
        /// What happened.
        reason: String,
    },
    /// `tools/list` failed.
    #[error("MCP server '{entry}' at {url}: could not list its tools: {reason}")]
    List {
        /// The entry.
        entry: String,
        /// The server's URL.
        url: String,
        /// What happened.
        reason: String,
    },
    /// No answer within the entry's timeout.
    #[error(
        "MCP server '{entry}' at {url} did not answer within {seconds} s (the entry's limits.timeoutSeconds) while connecting and listing its tools"
    )]
    Timeout {
        /// The entry.
        entry: String,
        /// The server's URL.
        url: String,
        /// The timeout.
        seconds: u64,
    },
    /// The run ended and closed the session.
    #[error("the session with MCP server '{entry}' is closed (the run ended)")]
    Closed {
        /// The entry.
        entry: String,
    },
    /// A tool's pin could not be saved.
    #[error(transparent)]
    Pins(#[from] PinSaveError),
}

impl ConnectError {
    /// A stable label: `session`, `event_stream`, `list`, `timeout`, `closed`, `pins`.
    pub fn label(&self) -> &'static str {
        match self {
            ConnectError::Session { .. } => "session",
            ConnectError::EventStream { .. } => "event_stream",
            ConnectError::List { .. } => "list",
            ConnectError::Timeout { .. } => "timeout",
            ConnectError::Closed { .. } => "closed",
            ConnectError::Pins(_) => "pins",
        }
    }
}

/// A tool's pin could not be written to the pin store.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("MCP entry '{entry}': the pin of tool '{tool}' could not be saved: {reason}")]
pub struct PinSaveError {
    /// The entry.
    pub entry: String,
    /// The tool.
    pub tool: String,
    /// The pin store's error.
    pub reason: String,
}

/// Why an MCP call could not be made or did not answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum McpCallError {
    /// The tool (or the whole server) is unusable in this run.
    #[error("{0}")]
    Refused(String),
    /// The session could not be set up.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The server could not be reached or broke the protocol during the call.
    #[error("MCP server '{entry}' at {url}: tool '{tool}' failed: {reason}")]
    Call {
        /// The entry.
        entry: String,
        /// The server's URL.
        url: String,
        /// The tool.
        tool: String,
        /// What happened.
        reason: String,
    },
    /// No answer within the entry's timeout.
    #[error(
        "MCP server '{entry}' did not answer within {seconds} s (the entry's limits.timeoutSeconds)"
    )]
    Timeout {
        /// The entry.
        entry: String,
        /// The timeout.
        seconds: u64,
    },
    /// The run was cancelled.
    #[error("cancelled")]
    Cancelled,
}

impl McpCallError {
    /// A stable label: `refused`, `connect_<label>`, `call`, `timeout`, `cancelled`.
    pub fn label(&self) -> &'static str {
        match self {
            McpCallError::Refused(_) => "refused",
            McpCallError::Connect(e) => match e {
                ConnectError::Session { .. } => "connect_session",
                ConnectError::EventStream { .. } => "connect_event_stream",
                ConnectError::List { .. } => "connect_list",
                ConnectError::Timeout { .. } => "connect_timeout",
                ConnectError::Closed { .. } => "connect_closed",
                ConnectError::Pins(_) => "connect_pins",
            },
            McpCallError::Call { .. } => "call",
            McpCallError::Timeout { .. } => "timeout",
            McpCallError::Cancelled => "cancelled",
        }
    }
}

/// The first fault of the event streams of one session (a byte cap, a malformed stream), kept
/// because rmcp only sees such a stream end and reports a closed connection.
#[derive(Clone, Debug, Default)]
pub struct StreamFault(Arc<Mutex<Option<String>>>);

impl StreamFault {
    /// Records `fault` unless one is recorded already.
    pub fn record(&self, fault: &GuardError) {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(fault.to_string());
        }
    }

    /// Takes the fault recorded, if any.
    pub fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The reason inside an rmcp error, without rmcp's wrappers: for a transport error, the
/// transport's own message (the network guard's, which names the URL and the limit); for
/// anything else, rmcp's message.
pub fn reason(e: &(dyn std::error::Error + 'static)) -> String {
    if let Some(ClientInitializeError::TransportError { error, context }) = e.downcast_ref() {
        return format!("{} (while trying to {context})", reason(error));
    }
    if let Some(ServiceError::TransportSend(error)) = e.downcast_ref() {
        return reason(error);
    }
    if let Some(error) = e.downcast_ref::<DynamicTransportError>() {
        return reason(error.error.as_ref());
    }
    if let Some(StreamableHttpError::Client(error)) =
        e.downcast_ref::<StreamableHttpError<GuardError>>()
    {
        return error.to_string();
    }
    if let Some(error) = e.downcast_ref::<GuardError>() {
        return error.to_string();
    }
    e.to_string()
}

/// [`reason`], preferring a stream fault recorded meanwhile (which is why the connection
/// closed).
pub fn reason_with(e: &(dyn std::error::Error + 'static), fault: &StreamFault) -> String {
    match fault.take() {
        Some(fault) => fault,
        None => reason(e),
    }
}
