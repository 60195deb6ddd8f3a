//! The MCP client: rmcp over streamable HTTP (the 2025-11-25 session model and 2026-07-28,
//! chosen by rmcp's automatic lifecycle) and legacy HTTP+SSE, never stdio (rules 5.4–5.9, 7.x).
//!
//! - [`McpEndpoint`]: a registry entry resolved for a run (URL, allowlists, token, limits).
//! - [`GuardedMcpHttp`]: rmcp's HTTP backend over the network guard (redirects and compressed
//!   replies refused by name, byte caps, `x-orrery-hop: 1`, the token only to its origin).
//! - [`LegacySseTransport`]: the 2024-11-05 HTTP+SSE transport.
//! - [`McpSession`]: one run's session with one server; tools checked (read-only hint, schema
//!   references, screened descriptions) and pinned across runs; `tools/list_changed` disables
//!   them.
//! - [`McpTool`]: one tool as the model sees it, with `mcp.call` events.

mod checks;
mod endpoint;
mod error;
mod http;
mod listing;
mod result;
mod schema;
mod session;
mod sse;
mod tool;

pub use checks::{ToolDefinition, ToolState};
pub use endpoint::{DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_REPLY_BYTES, EndpointError, McpEndpoint};
pub use error::{ConnectError, McpCallError, PinSaveError, StreamFault};
pub use http::{GuardedMcpHttp, HOP_HEADER};
pub use result::{is_error, result_text};
pub use schema::{SchemaProblem, check_input_schema};
pub use session::McpSession;
pub use sse::{LegacySseTransport, SseTransportError, SseTransportLimits};
pub use tool::McpTool;
