//! What an MCP or A2A registry entry says about reaching it, resolved once for both clients:
//! the bearer token (read from its secret) and the per-call limits with their defaults.

use crate::secrets::{SecretError, SecretResolver, SecretValue};
use orrery_crds::common::BearerAuth;
use orrery_crds::registry::EndpointLimits;
use std::time::Duration;

/// An entry's token and limits, resolved.
#[derive(Clone, Debug)]
pub struct EndpointAccess {
    /// The bearer token, if the entry has `auth`.
    pub bearer: Option<SecretValue>,
    /// Time for one call or message: `limits.timeoutSeconds`, or the client's default.
    pub timeout: Duration,
    /// Largest reply read: `limits.maxReplyBytes`, or the client's default.
    pub max_reply_bytes: u64,
    /// The entry's limits as written (defaults for what it leaves out are the caller's).
    pub limits: EndpointLimits,
}

impl EndpointAccess {
    /// Reads the token of `auth` with `secrets` and applies the defaults to `limits`.
    pub fn resolve(
        auth: Option<&BearerAuth>,
        limits: Option<&EndpointLimits>,
        secrets: &dyn SecretResolver,
        default_timeout: Duration,
        default_max_reply_bytes: u64,
    ) -> Result<Self, SecretError> {
        let bearer = auth
            .map(|auth| secrets.resolve(&auth.secret_key_ref))
            .transpose()?;
        let limits = limits.cloned().unwrap_or_default();
        Ok(EndpointAccess {
            bearer,
            timeout: limits
                .timeout_seconds
                .map_or(default_timeout, |s| Duration::from_secs(u64::from(s))),
            max_reply_bytes: limits.max_reply_bytes.unwrap_or(default_max_reply_bytes),
            limits,
        })
    }
}
