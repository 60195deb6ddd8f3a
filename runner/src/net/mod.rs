//! The network guard: ONE HTTP client layer for every remote call (cards, MCP, A2A, models).
//! Rules 5.22–5.40; anchors "Network guard" 6–19.
//!
//! - [`GuardPolicy`]: one entry's network (privateNetwork, loopback entry, the deployment's
//!   private allowlist, egress proxy, byte caps, timeouts) and the pure checks
//!   ([`GuardPolicy::check_url`], [`GuardPolicy::check_addr`], [`GuardPolicy::check_resolved`]).
//! - [`classify`]: our own address table, unwrapping IPv4-embedding IPv6 forms, and the loopback
//!   host test; both live in `orrery_crds::host`, shared with `orrery validate`.
//! - [`parse_url`], [`check_written`]: text becomes a URL only here, refusing a loopback host
//!   not written exactly (`0x7f000001`, `127.1`, `LOCALHOST` …), which the parsed URL hides.
//! - [`GuardedClient`]: a reqwest client whose every connect is checked — names by the guard's
//!   resolver (every address, every connect), IP literals by the connector layer before
//!   connecting, and the peer address again after. Redirects never followed, proxy environment
//!   variables ignored, `Accept-Encoding: identity`, no decompression, timeouts.
//! - [`read_capped`], [`SseReader`]: byte caps while streaming (chunked and SSE too), compressed
//!   replies refused before reading.
//! - [`Origin`], [`authorize`]: secrets only to an entry's origins.

mod classify;
mod client;
mod connector;
mod endpoint;
mod error;
mod policy;
mod resolve;
mod sse;
pub(crate) mod tls;
mod written;

pub use classify::{
    AddrClass, Classified, classify, classify_v4, embedded_ipv4, is_loopback_host,
    never_allowlistable,
};
pub use client::{GuardedClient, check_encoding, check_response, read_capped};
pub use endpoint::EndpointAccess;
pub use error::{GuardError, Rule};
pub use policy::{AllowRule, GuardPolicy, Limits, Origin, Route, authorize};
pub use resolve::{NameResolver, StaticResolver, SystemResolver};
pub use sse::{SseEvent, SseLimits, SseParseError, SseParser, SseReader};
pub use written::{check_written, parse_url};
