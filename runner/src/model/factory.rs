//! Building a provider from a registry entry's `spec.model`.

use super::anthropic::AnthropicProvider;
use super::gemini::GeminiProvider;
use super::http::{CallLimits, DEFAULT_MAX_REPLY_BYTES, DEFAULT_TIMEOUT, HttpCaller, RetryPolicy};
use super::openai::OpenAiProvider;
use super::{ModelError, ModelProvider, ScriptedProvider};
use crate::secrets::{SecretResolver, SecretValue};
use orrery_crds::registry::{ModelEntry, ModelProvider as ProviderKind};
use std::sync::Arc;
use std::time::Duration;

/// Builds providers from model entries, sharing one HTTP client and a secret resolver.
#[derive(Clone)]
pub struct ProviderFactory {
    client: reqwest::Client,
    secrets: Arc<dyn SecretResolver>,
    retry: RetryPolicy,
}

impl std::fmt::Debug for ProviderFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderFactory")
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl ProviderFactory {
    /// A factory using `client` for every real provider (build it with
    /// [`super::http::client_builder`], or let the network guard supply it) and `secrets` for
    /// API keys.
    pub fn new(client: reqwest::Client, secrets: Arc<dyn SecretResolver>) -> Self {
        Self {
            client,
            secrets,
            retry: RetryPolicy::default(),
        }
    }

    /// Uses `retry` instead of the default policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The provider `entry` describes. `entry_name` names the registry entry in errors.
    pub fn build(
        &self,
        entry_name: &str,
        entry: &ModelEntry,
    ) -> Result<Arc<dyn ModelProvider>, ModelError> {
        type Make = fn(HttpCaller, Option<&str>, Option<SecretValue>) -> Arc<dyn ModelProvider>;
        let make: Make = match entry.provider {
            ProviderKind::Scripted => {
                let script = entry.script.clone().ok_or_else(|| {
                    ModelError::Misconfigured(format!(
                        "registry entry {entry_name}: a Scripted model needs spec.model.script"
                    ))
                })?;
                return Ok(Arc::new(ScriptedProvider::new(script)));
            }
            ProviderKind::OpenAi => |h, b, k| Arc::new(OpenAiProvider::new(h, b, k)),
            ProviderKind::Anthropic => |h, b, k| Arc::new(AnthropicProvider::new(h, b, k)),
            ProviderKind::Gemini => |h, b, k| Arc::new(GeminiProvider::new(h, b, k)),
        };
        let api_key = self.api_key(entry_name, entry)?;
        let base_url = entry
            .base_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty());
        if api_key.is_none() && base_url.is_none() {
            return Err(ModelError::Misconfigured(format!(
                "registry entry {entry_name}: a real provider needs spec.model.apiKey (a secretKeyRef), or a baseUrl for a keyless local server"
            )));
        }
        if let Some(url) = base_url
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            return Err(ModelError::Misconfigured(format!(
                "registry entry {entry_name}: baseUrl {url:?} must start with https:// (or http:// to loopback)"
            )));
        }
        let http = HttpCaller::new(self.client.clone(), self.retry.clone(), limits(entry));
        Ok(make(http, base_url, api_key))
    }

    fn api_key(
        &self,
        entry_name: &str,
        entry: &ModelEntry,
    ) -> Result<Option<SecretValue>, ModelError> {
        let Some(source) = &entry.api_key else {
            return Ok(None);
        };
        self.secrets
            .resolve(&source.secret_key_ref)
            .map(Some)
            .map_err(|e| {
                ModelError::Misconfigured(format!("registry entry {entry_name}: API key: {e}"))
            })
    }
}

/// The entry's limits, with defaults.
fn limits(entry: &ModelEntry) -> CallLimits {
    let limits = entry.limits.as_ref();
    CallLimits {
        timeout: limits
            .and_then(|l| l.timeout_seconds)
            .map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs(u64::from(s))),
        max_reply_bytes: limits
            .and_then(|l| l.max_reply_bytes)
            .unwrap_or(DEFAULT_MAX_REPLY_BYTES),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::secrets::LocalSecrets;
    use orrery_crds::common::SecretKeyRef;
    use orrery_crds::registry::{ApiKeySource, EndpointLimits, ModelScript};

    fn entry(provider: ProviderKind) -> ModelEntry {
        ModelEntry::new(provider, "m")
    }

    fn factory() -> ProviderFactory {
        let secrets = LocalSecrets::new(
            None,
            Arc::new(|name| (name == "ORRERY_SECRET_KEYS_OPENAI").then(|| "sk-test".to_string())),
        );
        ProviderFactory::new(reqwest::Client::new(), Arc::new(secrets))
    }

    fn key(name: &str) -> Option<ApiKeySource> {
        Some(ApiKeySource {
            secret_key_ref: SecretKeyRef {
                name: "keys".into(),
                key: name.into(),
            },
        })
    }

    #[test]
    fn each_kind_builds_or_fails_with_an_actionable_message() {
        let f = factory();
        let mut scripted = entry(ProviderKind::Scripted);
        assert!(f.build("s", &scripted).is_err());
        scripted.script = Some(ModelScript::default());
        assert!(f.build("s", &scripted).is_ok());

        let mut openai = entry(ProviderKind::OpenAi);
        let err = f.build("gpt", &openai).err().unwrap().to_string();
        assert!(err.contains("gpt") && err.contains("apiKey"), "{err}");
        openai.api_key = key("openai");
        assert!(f.build("gpt", &openai).is_ok());

        let mut anthropic = entry(ProviderKind::Anthropic);
        anthropic.api_key = key("anthropic");
        let err = f.build("claude", &anthropic).err().unwrap().to_string();
        assert!(err.contains("keys/anthropic"), "{err}");
        assert!(err.contains("ORRERY_SECRET_KEYS_ANTHROPIC"), "{err}");

        let mut gemini = entry(ProviderKind::Gemini);
        gemini.base_url = Some("http://127.0.0.1:9/".into());
        assert!(f.build("local", &gemini).is_ok(), "a keyless local server");
        gemini.base_url = Some("ftp://x".into());
        assert!(f.build("local", &gemini).is_err());
    }

    #[test]
    fn limits_default_to_two_minutes_and_eight_mebibytes() {
        let mut e = entry(ProviderKind::OpenAi);
        assert_eq!(limits(&e), CallLimits::default());
        assert_eq!(CallLimits::default().timeout, Duration::from_secs(120));
        e.limits = Some(EndpointLimits {
            timeout_seconds: Some(7),
            max_reply_bytes: Some(2048),
            max_card_bytes: None,
        });
        assert_eq!(
            limits(&e),
            CallLimits {
                timeout: Duration::from_secs(7),
                max_reply_bytes: 2048
            }
        );
    }
}
