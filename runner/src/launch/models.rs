//! Model providers for local runs, built through the network guard.
//!
//! [`GuardedModels`] gives every real model entry its own [`GuardedClient`] for the entry's
//! endpoint (its `baseUrl`, or the provider's public endpoint): `privateNetwork` per entry, the
//! deployment's private allowlist and egress proxy, plain http only to a loopback host, every
//! connect checked on the resolved address. So the guard is the one HTTP layer for models too,
//! as it is for MCP and A2A. A Scripted entry has no endpoint and needs no client.

use crate::model::{
    ModelError, ModelProvider, ProviderFactory, RetryPolicy, ScriptedProvider, anthropic, gemini,
    http::DEFAULT_TIMEOUT, openai,
};
use crate::net::{GuardPolicy, GuardedClient, Limits, NameResolver, SystemResolver};
use crate::secrets::SecretResolver;
use orrery_crds::registry::{ModelEntry, ModelProvider as ProviderKind};
use reqwest::Url;
use std::sync::Arc;
use std::time::Duration;

/// Builds the provider of a model entry.
pub trait ModelFactory: Send + Sync {
    /// The provider of entry `entry_name`, whose `spec.model` is `entry`.
    fn build(
        &self,
        entry_name: &str,
        entry: &ModelEntry,
    ) -> Result<Arc<dyn ModelProvider>, ModelError>;
}

/// A [`ProviderFactory`] uses the one client it was given for every entry (tests that bring
/// their own client); local runs use [`GuardedModels`].
impl ModelFactory for ProviderFactory {
    fn build(
        &self,
        entry_name: &str,
        entry: &ModelEntry,
    ) -> Result<Arc<dyn ModelProvider>, ModelError> {
        ProviderFactory::build(self, entry_name, entry)
    }
}

/// Model providers whose HTTP goes through the network guard, one guarded client per entry.
#[derive(Clone)]
pub struct GuardedModels {
    network: GuardPolicy,
    secrets: Arc<dyn SecretResolver>,
    resolver: Arc<dyn NameResolver>,
    retry: RetryPolicy,
}

impl std::fmt::Debug for GuardedModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedModels")
            .field("network", &self.network)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl GuardedModels {
    /// Providers under the deployment's `network` policy (private allowlist, egress proxy,
    /// extra CAs; `privateNetwork` and the loopback flag are set per entry), with API keys from
    /// `secrets` and the system resolver.
    pub fn new(network: GuardPolicy, secrets: Arc<dyn SecretResolver>) -> Self {
        GuardedModels {
            network,
            secrets,
            resolver: Arc::new(SystemResolver),
            retry: RetryPolicy::default(),
        }
    }

    /// Resolves names with `resolver` (tests pin names to addresses).
    pub fn with_resolver(mut self, resolver: Arc<dyn NameResolver>) -> Self {
        self.resolver = resolver;
        self
    }

    /// Uses `retry` instead of the default policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The guard policy of `entry`'s endpoint: checked now, so a refused endpoint (plain http
    /// off loopback, a private or metadata address) stops the run before any model call.
    pub fn policy_for(
        &self,
        entry_name: &str,
        entry: &ModelEntry,
    ) -> Result<GuardPolicy, ModelError> {
        let endpoint = endpoint(entry_name, entry)?;
        let mut policy = GuardPolicy::for_endpoint(&endpoint, entry.private_network, &self.network);
        // The provider's own timeout covers the whole call (retries included); the guard's
        // per-request and per-read timeouts must not cut it shorter.
        let timeout = entry
            .limits
            .as_ref()
            .and_then(|l| l.timeout_seconds)
            .map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs(u64::from(s)));
        policy.limits = Limits {
            request_timeout: Some(timeout),
            read_timeout: Some(timeout),
            ..policy.limits
        };
        policy.check_url(&endpoint).map_err(|e| {
            ModelError::Misconfigured(format!(
                "registry entry {entry_name}: the endpoint {endpoint} is refused by the network guard: {e}"
            ))
        })?;
        Ok(policy)
    }
}

impl ModelFactory for GuardedModels {
    fn build(
        &self,
        entry_name: &str,
        entry: &ModelEntry,
    ) -> Result<Arc<dyn ModelProvider>, ModelError> {
        if entry.provider == ProviderKind::Scripted {
            let script = entry.script.clone().ok_or_else(|| {
                ModelError::Misconfigured(format!(
                    "registry entry {entry_name}: a Scripted model needs spec.model.script"
                ))
            })?;
            return Ok(Arc::new(ScriptedProvider::new(script)));
        }
        let policy = self.policy_for(entry_name, entry)?;
        let client = GuardedClient::with_resolver(policy, self.resolver.clone())
            .map_err(|e| ModelError::Misconfigured(format!("registry entry {entry_name}: {e}")))?;
        ProviderFactory::new(client.reqwest().clone(), self.secrets.clone())
            .with_retry(self.retry.clone())
            .build(entry_name, entry)
    }
}

/// The URL a real provider calls: the entry's `baseUrl`, or the provider's public endpoint.
fn endpoint(entry_name: &str, entry: &ModelEntry) -> Result<Url, ModelError> {
    let text = match entry
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
    {
        Some(url) => url,
        None => match entry.provider {
            ProviderKind::OpenAi => openai::DEFAULT_BASE_URL,
            ProviderKind::Anthropic => anthropic::DEFAULT_BASE_URL,
            ProviderKind::Gemini => gemini::DEFAULT_BASE_URL,
            ProviderKind::Scripted => {
                return Err(ModelError::Misconfigured(format!(
                    "registry entry {entry_name}: a Scripted model has no endpoint"
                )));
            }
        },
    };
    crate::net::parse_url(text).map_err(|e| {
        ModelError::Misconfigured(format!(
            "registry entry {entry_name}: baseUrl {text:?}: {e}"
        ))
    })
}

#[cfg(test)]
#[path = "models_tests.rs"]
mod tests;
