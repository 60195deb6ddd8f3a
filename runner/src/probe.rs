//! `orrery probe`: one RegistryEntry checked and pinned the way a run would reach it, for the
//! operator's probe pod. Every request goes through the network guard, with the same clients a
//! run builds ([`RemoteToolFactory`]):
//!
//! - A2A: the card fetched and checked ([`crate::a2a::client::A2aAgent::card`]: cap, duplicate
//!   keys, `cardSHA256` when the entry sets it, the JSON-RPC interface on the entry's origins),
//!   its RFC 8785 trust digest and its skills; every skill the entry lists must be on the card.
//! - MCP: initialize and `tools/list`, each tool the entry allows checked as a run checks it
//!   (listed, `readOnlyHint: true` for a tool listed read-only, its schema, the safety screen)
//!   and pinned with [`crate::pin::pinned_tool`]. A refused tool makes the probe fail, naming
//!   it. Tools the entry allows but does not list read-only are never usable, so they are not
//!   pinned.
//! - Model: nothing is called (a call costs tokens); the hosts are resolved and checked.
//!
//! For every kind, each host the entry's URLs name (not loopback, not an address literal) is
//! resolved and the addresses checked by the guard's rules: they become the entry's
//! `resolvedAddresses`, which a run's NetworkPolicy opens. The result is a
//! [`ProbeReport`] (`orrery_crds::probe`).

use crate::net::{GuardPolicy, NameResolver, SystemResolver};
use crate::pin::store::{PinStore, Pins};
use crate::remote::{RemoteConfig, RemoteToolFactory};
use crate::secrets::SecretResolver;
use orrery_crds::plan_document::EntryPins;
use orrery_crds::probe::{ProbeReport, ProbeRequest};
use orrery_crds::registry::{RegistryEntry, entry_urls};
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use url::Host;

/// How long a probe may take when the caller sets nothing (under the probe pod's
/// `activeDeadlineSeconds`).
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(90);

/// What a probe reaches the network with.
#[derive(Clone)]
pub struct ProbeSettings {
    /// The deployment's network policy (allowlist, egress proxy, CAs).
    pub network: GuardPolicy,
    /// Where bearer tokens come from.
    pub secrets: Arc<dyn SecretResolver>,
    /// How names are resolved.
    pub resolver: Arc<dyn NameResolver>,
    /// The whole probe's time.
    pub timeout: Duration,
}

impl ProbeSettings {
    /// The system resolver, `network` and `secrets`, [`DEFAULT_PROBE_TIMEOUT`].
    pub fn new(network: GuardPolicy, secrets: Arc<dyn SecretResolver>) -> Self {
        ProbeSettings {
            network,
            secrets,
            resolver: Arc::new(SystemResolver),
            timeout: DEFAULT_PROBE_TIMEOUT,
        }
    }
}

/// Probes the entry of `request` and reports what it found. Never fails: whatever goes wrong
/// is an error report naming the entry, what happened and what to do.
pub async fn probe(request: &ProbeRequest, settings: &ProbeSettings) -> ProbeReport {
    let (name, generation) = (request.name.as_str(), request.generation);
    match tokio::time::timeout(settings.timeout, pins(request, settings)).await {
        Ok(Ok(pins)) => ProbeReport::ok(name, generation, pins),
        Ok(Err(message)) => ProbeReport::error(name, generation, message),
        Err(_) => ProbeReport::error(
            name,
            generation,
            format!(
                "entry '{name}': the probe got no complete answer within {} s; check that the endpoint is up and reachable from the cluster",
                settings.timeout.as_secs()
            ),
        ),
    }
}

async fn pins(request: &ProbeRequest, settings: &ProbeSettings) -> Result<EntryPins, String> {
    let name = request.name.as_str();
    let entry = RegistryEntry::new(name, request.spec.clone());
    let store = Arc::new(PinStore::in_memory());
    let factory = RemoteToolFactory::new(RemoteConfig {
        network: settings.network.clone(),
        // Whether acting remotes are allowed is the operator's static check; probing a card
        // calls no skill.
        acting_remotes: true,
        pins: store.clone() as Arc<dyn Pins>,
        secrets: settings.secrets.clone(),
        resolver: settings.resolver.clone(),
    });
    let mut pins = EntryPins::default();
    if let Some(spec) = &request.spec.mcp {
        let session = factory
            .mcp_session(name, &entry)
            .map_err(|e| e.to_string())?;
        let states = session.tools().await;
        session.close().await;
        let states = states.map_err(|e| e.to_string())?;
        let key = session.endpoint().pin_key();
        let mut refused = Vec::new();
        for tool in spec.tools.iter().filter(|t| spec.read_only.contains(t)) {
            match states.get(tool) {
                Some(crate::mcp::ToolState::Usable(_)) => {
                    let pin = store.tool_pin(&key, tool).ok_or_else(|| {
                        format!("MCP entry '{name}': tool '{tool}' was checked but not pinned")
                    })?;
                    let pinned = crate::pin::pinned_tool(
                        tool,
                        pin.description.as_deref(),
                        &pin.input_schema,
                        pin.annotations.as_ref(),
                    )
                    .map_err(|e| format!("MCP entry '{name}': tool '{tool}': {e}"))?;
                    pins.tools.push(pinned);
                }
                Some(crate::mcp::ToolState::Refused(reason)) => refused.push(reason.clone()),
                None => refused.push(format!(
                    "MCP server '{name}' does not list the tool '{tool}' that the entry allows"
                )),
            }
        }
        if !refused.is_empty() {
            return Err(refused.join("; "));
        }
        pins.tools.sort_by(|a, b| a.name.cmp(&b.name));
    }
    if let Some(spec) = &request.spec.a2a {
        let agent = factory.a2a_agent(name, &entry).map_err(|e| e.to_string())?;
        let card = agent.card().await;
        agent.close().await;
        let card = card.map_err(|e| e.message)?;
        let missing: Vec<&str> = spec
            .skills
            .iter()
            .filter(|s| card.card.skill(s).is_none())
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "the card of remote agent '{name}' has no skill {}; remove it from spec.a2a.skills or fix the agent",
                missing
                    .iter()
                    .map(|s| format!("'{s}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        pins.card_sha256 = Some(card.digest.clone());
        let skills: BTreeSet<String> = card.card.skills.iter().map(|s| s.id.clone()).collect();
        pins.skills = skills.into_iter().collect();
    }
    pins.resolved_addresses = resolve_hosts(request, settings).await?;
    Ok(pins)
}

/// Resolves every host the entry's URLs name (not loopback, not an address literal) and checks
/// the addresses with the guard's rules for the entry; the addresses, sorted.
async fn resolve_hosts(
    request: &ProbeRequest,
    settings: &ProbeSettings,
) -> Result<Vec<String>, String> {
    let name = request.name.as_str();
    let private = request.spec.mcp.as_ref().is_some_and(|m| m.private_network)
        || request.spec.a2a.as_ref().is_some_and(|a| a.private_network)
        || request
            .spec
            .model
            .as_ref()
            .is_some_and(|m| m.private_network);
    let mut out: BTreeSet<IpAddr> = BTreeSet::new();
    for url in entry_urls(&request.spec) {
        let parsed = crate::net::parse_url(&url.url)
            .map_err(|e| format!("entry '{name}': {} {:?}: {e}", url.field, url.url))?;
        let Some(Host::Domain(host)) = parsed.host() else {
            continue;
        };
        if host.eq_ignore_ascii_case("localhost") {
            continue;
        }
        let policy = GuardPolicy::for_endpoint(&parsed, private, &settings.network);
        let addrs = settings
            .resolver
            .lookup(host)
            .await
            .map_err(|e| format!("entry '{name}': {}: {e}", url.field))?;
        policy
            .check_resolved(&Host::Domain(host), &addrs)
            .map_err(|e| format!("entry '{name}': {}: {e}", url.field))?;
        out.extend(addrs);
    }
    Ok(out.into_iter().map(|a| a.to_string()).collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::net::StaticResolver;
    use crate::secrets::LocalSecrets;
    use orrery_crds::probe::ProbeOutcome;

    fn settings(resolver: StaticResolver) -> ProbeSettings {
        ProbeSettings {
            resolver: Arc::new(resolver),
            ..ProbeSettings::new(
                GuardPolicy::default(),
                Arc::new(LocalSecrets::new(None, Arc::new(|_| None))),
            )
        }
    }

    fn model(base_url: &str) -> ProbeRequest {
        serde_json::from_value(serde_json::json!({
            "name": "gpt", "generation": 2,
            "spec": {"model": {"provider": "OpenAI", "model": "m", "baseUrl": base_url}}
        }))
        .expect("request")
    }

    #[tokio::test]
    async fn a_models_host_is_resolved_and_checked_without_calling_it() {
        let resolver = StaticResolver::new().with(
            "models.example",
            &[
                "93.184.215.14".parse().expect("ip"),
                "2606:4700::1111".parse().expect("ip"),
            ],
        );
        let report = probe(&model("https://models.example/v1"), &settings(resolver)).await;
        assert_eq!(report.outcome, ProbeOutcome::Ok);
        assert_eq!(
            report.pins.resolved_addresses,
            ["93.184.215.14", "2606:4700::1111"]
        );
        let private =
            StaticResolver::new().with("models.example", &["10.1.2.3".parse().expect("ip")]);
        let report = probe(&model("https://models.example/v1"), &settings(private)).await;
        match report.outcome {
            ProbeOutcome::Error { message } => {
                assert!(message.contains("spec.model.baseUrl"), "{message}")
            }
            ProbeOutcome::Ok => panic!("a public entry resolving to a private address is refused"),
        }
        let unknown = probe(
            &model("https://nowhere.example/v1"),
            &settings(StaticResolver::new()),
        )
        .await;
        assert!(!unknown.is_ok());
    }
}
