//! An MCP registry entry as a run uses it: URL, transport, allowlists, the bearer token, the
//! origins it may go to, limits, and the key its pins are kept under (rule 5.19).

use crate::net::{EndpointAccess, Origin};
use crate::secrets::{SecretResolver, SecretValue};
use orrery_crds::registry::{McpEntry, McpTransport};
use reqwest::Url;
use std::time::Duration;

/// Time for one call (connect and list included) when the entry sets none.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest reply read when the entry sets none.
pub const DEFAULT_MAX_REPLY_BYTES: u64 = 1024 * 1024;

/// Why an MCP entry cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The URL does not parse, or the guard refuses how it is written.
    #[error("MCP entry '{entry}': url {url:?} cannot be used ({reason})")]
    Url {
        /// The entry.
        entry: String,
        /// The URL as written.
        url: String,
        /// The parser's message.
        reason: String,
    },
    /// The bearer token could not be read.
    #[error("MCP entry '{entry}': its bearer token: {source}")]
    Secret {
        /// The entry.
        entry: String,
        /// Why.
        source: Box<crate::secrets::SecretError>,
    },
}

/// One MCP entry, resolved for a run.
#[derive(Clone, Debug)]
pub struct McpEndpoint {
    /// The registry entry's name.
    pub entry: String,
    /// The server's URL (the streamable HTTP endpoint, or the legacy SSE URL).
    pub url: Url,
    /// Streamable HTTP or legacy SSE.
    pub transport: McpTransport,
    /// Whether the entry is `privateNetwork`.
    pub private_network: bool,
    /// The tools the entry allows.
    pub tools: Vec<String>,
    /// The tools the entry lists as read-only.
    pub read_only: Vec<String>,
    /// The bearer token, sent only to `origins`.
    pub bearer: Option<SecretValue>,
    /// Where the token may go: the URL's origin.
    pub origins: Vec<Origin>,
    /// Time for one call.
    pub call_timeout: Duration,
    /// Largest reply (JSON body or SSE event) read.
    pub max_reply_bytes: u64,
}

impl McpEndpoint {
    /// Resolves the entry `name`, reading its bearer token with `secrets`.
    pub fn from_entry(
        name: &str,
        spec: &McpEntry,
        secrets: &dyn SecretResolver,
    ) -> Result<Self, EndpointError> {
        let url = crate::net::parse_url(&spec.url).map_err(|e| EndpointError::Url {
            entry: name.to_owned(),
            url: spec.url.clone(),
            reason: e.to_string(),
        })?;
        let origins = Origin::of(&url)
            .map(|o| vec![o])
            .map_err(|e| EndpointError::Url {
                entry: name.to_owned(),
                url: spec.url.clone(),
                reason: e.to_string(),
            })?;
        let access = EndpointAccess::resolve(
            spec.auth.as_ref(),
            spec.limits.as_ref(),
            secrets,
            DEFAULT_CALL_TIMEOUT,
            DEFAULT_MAX_REPLY_BYTES,
        )
        .map_err(|e| EndpointError::Secret {
            entry: name.to_owned(),
            source: Box::new(e),
        })?;
        Ok(McpEndpoint {
            entry: name.to_owned(),
            url,
            transport: spec.transport,
            private_network: spec.private_network,
            tools: spec.tools.clone(),
            read_only: spec.read_only.clone(),
            bearer: access.bearer,
            origins,
            call_timeout: access.timeout,
            max_reply_bytes: access.max_reply_bytes,
        })
    }

    /// The key the endpoint's pins are kept under: URL, transport and network flag. A
    /// description or allowlist edit keeps it; a new URL is pinned afresh.
    pub fn pin_key(&self) -> String {
        let transport = match self.transport {
            McpTransport::StreamableHttp => "StreamableHttp",
            McpTransport::Sse => "Sse",
        };
        format!(
            "mcp {} transport={transport} privateNetwork={}",
            self.url, self.private_network
        )
    }
}
