//! Remote tools for a run: [`RemoteToolFactory`] builds an MCP tool ([`McpTool`]) or an A2A
//! skill ([`A2aSkillTool`]) for each planned tool, from the RegistryEntries, the deployment's
//! network settings ([`RemoteConfig`]) and the pin store. One factory serves one run: tools of
//! the same entry share one MCP session or one A2A agent, closed when the run ends.
//!
//! Building a tool connects its MCP server or fetches its agent's card, before the run starts:
//! a refused tool (a read-only tool without `readOnlyHint`, a changed pin, a changed card, an
//! RPC target off the entry's origins) stops the run from starting with an error naming the
//! entry and the tool, and the model sees the servers' own tool descriptions.

use crate::a2a::client::{A2aAgent, A2aEndpoint, A2aSkillTool};
use crate::mcp::{McpEndpoint, McpSession, McpTool, ToolState};
use crate::net::{
    AllowRule, GuardError, GuardPolicy, GuardedClient, Limits, NameResolver, SystemResolver,
};
use crate::pin::store::Pins;
use crate::secrets::SecretResolver;
use crate::tools::Tool;
use crate::tools::{ToolBuildError, ToolFactory};
use orrery_crds::plan::{PlannedTool, ToolKind};
use orrery_crds::registry::{Effect, RegistryEntry};
use reqwest::Url;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The deployment's private-network allowlist (hosts, addresses, networks).
pub const PRIVATE_ALLOW_ENV: &str = "ORRERY_A2A_PRIVATE_ALLOW";
/// The cluster's own ranges (its node, pod and service networks and the API server's
/// addresses), comma-separated: reached only at an address and port the allowlist names
/// exactly, never on a cluster component's port (anchor 19).
pub const CLUSTER_RANGES_ENV: &str = "ORRERY_CLUSTER_RANGES";
/// The deployment's egress proxy, `http://host:port`.
pub const EGRESS_PROXY_ENV: &str = "ORRERY_STUDIO_EGRESS_PROXY";
/// Extra trusted CA certificates (PEM file) for remote endpoints.
pub const CA_FILE_ENV: &str = "ORRERY_A2A_CA_FILE";

/// Why the deployment's network settings are unusable.
#[derive(Debug, thiserror::Error)]
pub enum RemoteConfigError {
    /// An allowlist entry or the proxy is invalid.
    #[error("{var}: {source}")]
    Guard {
        /// The environment variable.
        var: &'static str,
        /// Why.
        source: GuardError,
    },
    /// The CA file could not be read.
    #[error("{CA_FILE_ENV}: cannot read {path}: {reason}")]
    CaFile {
        /// The file.
        path: String,
        /// The I/O error.
        reason: String,
    },
}

/// What only the deployment decides about remote endpoints.
#[derive(Clone)]
pub struct RemoteConfig {
    /// The private allowlist, egress proxy, extra CAs and timeouts every entry's guard starts
    /// from (`privateNetwork` and the loopback flag are set per entry).
    pub network: GuardPolicy,
    /// Whether A2A entries with `effect: Acting` may be called.
    pub acting_remotes: bool,
    /// Where pins are kept.
    pub pins: Arc<dyn Pins>,
    /// Where bearer tokens come from.
    pub secrets: Arc<dyn SecretResolver>,
    /// How names are resolved (the system's; tests pin names to loopback).
    pub resolver: Arc<dyn NameResolver>,
}

impl std::fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteConfig")
            .field("network", &self.network)
            .field("acting_remotes", &self.acting_remotes)
            .field("pins", &self.pins.describe())
            .finish_non_exhaustive()
    }
}

impl RemoteConfig {
    /// A configuration with the system resolver and `network` as the deployment's policy.
    pub fn new(
        network: GuardPolicy,
        acting_remotes: bool,
        pins: Arc<dyn Pins>,
        secrets: Arc<dyn SecretResolver>,
    ) -> Self {
        RemoteConfig {
            network,
            acting_remotes,
            pins,
            secrets,
            resolver: Arc::new(SystemResolver),
        }
    }
}

/// The deployment's network policy from the environment: [`PRIVATE_ALLOW_ENV`],
/// [`CLUSTER_RANGES_ENV`], [`EGRESS_PROXY_ENV`] and [`CA_FILE_ENV`]. Proxy environment
/// variables (`HTTPS_PROXY` …) are never read.
pub fn network_from_env() -> Result<GuardPolicy, RemoteConfigError> {
    network_from(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
}

/// [`network_from_env`] with an injectable lookup.
pub fn network_from(
    env: impl Fn(&str) -> Option<String>,
) -> Result<GuardPolicy, RemoteConfigError> {
    let private_allow = match env(PRIVATE_ALLOW_ENV) {
        Some(text) => AllowRule::parse_list(&text).map_err(|source| RemoteConfigError::Guard {
            var: PRIVATE_ALLOW_ENV,
            source,
        })?,
        None => Vec::new(),
    };
    let egress_proxy = env(EGRESS_PROXY_ENV)
        .map(|text| {
            Url::parse(text.trim()).map_err(|e| RemoteConfigError::Guard {
                var: EGRESS_PROXY_ENV,
                source: GuardError::InvalidUrl {
                    url: text.clone(),
                    reason: e.to_string(),
                },
            })
        })
        .transpose()?;
    let extra_roots_pem = match env(CA_FILE_ENV) {
        Some(path) => vec![
            std::fs::read(path.trim()).map_err(|e| RemoteConfigError::CaFile {
                path: path.clone(),
                reason: e.to_string(),
            })?,
        ],
        None => Vec::new(),
    };
    let cluster_ranges = match env(CLUSTER_RANGES_ENV) {
        Some(text) => text
            .split([',', ' ', '\n', '\t'])
            .filter(|r| !r.trim().is_empty())
            .map(|r| {
                orrery_crds::host::parse_cluster_range(r).ok_or_else(|| RemoteConfigError::Guard {
                    var: CLUSTER_RANGES_ENV,
                    source: GuardError::Config(format!(
                        "{:?} is neither a network (10.96.0.0/12) nor an address",
                        r.trim()
                    )),
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    let policy = GuardPolicy {
        private_allow,
        egress_proxy,
        extra_roots_pem,
        cluster_ranges,
        ..GuardPolicy::default()
    };
    policy
        .validate()
        .map_err(|source| RemoteConfigError::Guard {
            var: EGRESS_PROXY_ENV,
            source,
        })?;
    Ok(policy)
}

/// Why an entry's MCP session or A2A agent could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum RemoteEntryError {
    /// The entry is of another kind.
    #[error("registry entry '{entry}' is not an {kind} entry")]
    WrongKind {
        /// The entry.
        entry: String,
        /// `MCP` or `A2A`.
        kind: &'static str,
    },
    /// The entry acts and the deployment does not allow acting remotes.
    #[error(
        "misconfigured: A2A entry '{entry}' acts (effect: Acting), and this deployment does not allow acting remotes"
    )]
    ActingNotAllowed {
        /// The entry.
        entry: String,
    },
    /// The MCP entry's URL or token is unusable.
    #[error(transparent)]
    Mcp(#[from] crate::mcp::EndpointError),
    /// The A2A entry's URLs or token are unusable.
    #[error(transparent)]
    A2a(#[from] crate::a2a::client::EndpointError),
    /// The network guard refuses the entry's endpoint.
    #[error("{kind} entry '{entry}': {source}")]
    Guard {
        /// `MCP` or `A2A`.
        kind: &'static str,
        /// The entry.
        entry: String,
        /// Why.
        source: GuardError,
    },
}

/// Builds the real MCP and A2A tools of one run.
pub struct RemoteToolFactory {
    config: RemoteConfig,
    sessions: Mutex<BTreeMap<String, Arc<McpSession>>>,
    agents: Mutex<BTreeMap<String, Arc<A2aAgent>>>,
}

impl std::fmt::Debug for RemoteToolFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteToolFactory")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RemoteToolFactory {
    /// A factory for one run.
    pub fn new(config: RemoteConfig) -> Self {
        RemoteToolFactory {
            config,
            sessions: Mutex::new(BTreeMap::new()),
            agents: Mutex::new(BTreeMap::new()),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RemoteConfig {
        &self.config
    }

    /// An entry's guarded client. Timeouts are the clients' own (per call and message), so the
    /// connection is not cut under a long-lived MCP stream.
    fn client_for(&self, url: &Url, private_network: bool) -> Result<GuardedClient, GuardError> {
        let mut policy = GuardPolicy::for_endpoint(url, private_network, &self.config.network);
        policy.limits = Limits {
            request_timeout: None,
            read_timeout: None,
            ..policy.limits
        };
        GuardedClient::with_resolver(policy, self.config.resolver.clone())
    }

    /// The run's MCP session with entry `name` (not connected yet; the probe connects it too).
    pub fn mcp_session(
        &self,
        name: &str,
        entry: &RegistryEntry,
    ) -> Result<Arc<McpSession>, RemoteEntryError> {
        if let Some(session) = lock(&self.sessions).get(name) {
            return Ok(session.clone());
        }
        let spec = entry
            .spec
            .mcp
            .as_ref()
            .ok_or_else(|| RemoteEntryError::WrongKind {
                entry: name.to_owned(),
                kind: "MCP",
            })?;
        let endpoint = McpEndpoint::from_entry(name, spec, self.config.secrets.as_ref())?;
        let client = self
            .client_for(&endpoint.url, endpoint.private_network)
            .map_err(|source| RemoteEntryError::Guard {
                kind: "MCP",
                entry: name.to_owned(),
                source,
            })?;
        let session = Arc::new(McpSession::new(endpoint, client, self.config.pins.clone()));
        lock(&self.sessions).insert(name.to_owned(), session.clone());
        Ok(session)
    }

    /// The run's agent for A2A entry `name` (its card not fetched yet; the probe fetches it
    /// too).
    pub fn a2a_agent(
        &self,
        name: &str,
        entry: &RegistryEntry,
    ) -> Result<Arc<A2aAgent>, RemoteEntryError> {
        if let Some(agent) = lock(&self.agents).get(name) {
            return Ok(agent.clone());
        }
        let spec = entry
            .spec
            .a2a
            .as_ref()
            .ok_or_else(|| RemoteEntryError::WrongKind {
                entry: name.to_owned(),
                kind: "A2A",
            })?;
        if spec.effect == Effect::Acting && !self.config.acting_remotes {
            return Err(RemoteEntryError::ActingNotAllowed {
                entry: name.to_owned(),
            });
        }
        let endpoint = A2aEndpoint::from_entry(name, spec, self.config.secrets.as_ref())?;
        let client = self
            .client_for(&endpoint.card_url, endpoint.private_network)
            .map_err(|source| RemoteEntryError::Guard {
                kind: "A2A",
                entry: name.to_owned(),
                source,
            })?;
        let agent = Arc::new(A2aAgent::new(endpoint, client, self.config.pins.clone()));
        lock(&self.agents).insert(name.to_owned(), agent.clone());
        Ok(agent)
    }
}

#[async_trait::async_trait]
impl ToolFactory for RemoteToolFactory {
    /// Builds the tool, connecting its MCP server (tools listed, checked and pinned) or fetching
    /// and checking its agent's card first: a refused tool is an error naming the entry and the
    /// tool, and the run does not start.
    async fn build(
        &self,
        planned: &PlannedTool,
        entry: &RegistryEntry,
    ) -> Result<Arc<dyn Tool>, ToolBuildError> {
        let error = |message: String| ToolBuildError {
            reference: planned.reference.clone(),
            message,
        };
        let entry_error = |e: RemoteEntryError| error(e.to_string());
        match planned.kind {
            ToolKind::Mcp => {
                let session = self
                    .mcp_session(&planned.entry, entry)
                    .map_err(entry_error)?;
                match session
                    .tools()
                    .await
                    .map_err(|e| error(e.to_string()))?
                    .get(&planned.remote_name)
                {
                    Some(ToolState::Usable(_)) => {
                        Ok(Arc::new(McpTool::new(planned.clone(), session)))
                    }
                    Some(ToolState::Refused(reason)) => Err(error(reason.clone())),
                    None => Err(error(format!(
                        "MCP entry '{}' does not allow the tool '{}' (add it to tools and readOnly)",
                        planned.entry, planned.remote_name
                    ))),
                }
            }
            ToolKind::A2a => {
                let agent = self.a2a_agent(&planned.entry, entry).map_err(entry_error)?;
                let card = agent.card().await.map_err(|e| error(e.message))?;
                if card.card.skill(&planned.remote_name).is_none() {
                    return Err(error(format!(
                        "the card of remote agent '{}' has no skill '{}'",
                        planned.entry, planned.remote_name
                    )));
                }
                Ok(Arc::new(A2aSkillTool::new(planned.clone(), agent)))
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn the_clusters_ranges_come_from_their_variable_and_a_bad_one_is_named() {
        let policy = network_from(|name| {
            (name == CLUSTER_RANGES_ENV).then(|| "10.0.0.0/16, 10.96.0.0/12,192.168.1.10".into())
        })
        .unwrap();
        assert_eq!(
            policy.cluster_ranges,
            ["10.0.0.0/16", "10.96.0.0/12", "192.168.1.10/32"]
                .map(|r| r.parse::<ipnet::IpNet>().unwrap())
        );
        let err =
            network_from(|name| (name == CLUSTER_RANGES_ENV).then(|| "10.0.0.0/16,pods".into()))
                .unwrap_err();
        assert!(
            err.to_string().starts_with(CLUSTER_RANGES_ENV) && err.to_string().contains("\"pods\""),
            "{err}"
        );
    }

    #[test]
    fn the_network_comes_from_the_seed_variables_and_bad_values_are_named() {
        let policy = network_from(|name| match name {
            PRIVATE_ALLOW_ENV => Some("writer.internal, 10.0.0.0/8".into()),
            EGRESS_PROXY_ENV => Some("http://proxy.internal:3128".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(policy.private_allow.len(), 2);
        assert_eq!(
            policy.egress_proxy.unwrap().as_str(),
            "http://proxy.internal:3128/"
        );
        let err = network_from(|name| (name == PRIVATE_ALLOW_ENV).then(|| "169.254.0.0/16".into()))
            .unwrap_err();
        assert!(err.to_string().starts_with(PRIVATE_ALLOW_ENV), "{err}");
        let err = network_from(|name| {
            (name == EGRESS_PROXY_ENV).then(|| "https://proxy:3128/path".into())
        })
        .unwrap_err();
        assert!(err.to_string().contains("egress proxy"), "{err}");
        let err = network_from(|name| (name == CA_FILE_ENV).then(|| "/nonexistent/ca.pem".into()))
            .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    }
}
