//! What a RegistryEntry reaches, read from its spec: its URLs (each at its field) and its
//! secret references. The registry's static checks and probe, the run's plan Secret and
//! NetworkPolicy and the sandbox's proxy rule read entries through these; its own module so
//! that none of them imports another controller's.

use crate::error::{Error, Result};
use orrery_crds::common::SecretKeyRef;
pub use orrery_crds::host::{LOOPBACK_HOSTS, is_secure_url, scheme_and_host};
use orrery_crds::registry::RegistryEntrySpec;
pub use orrery_crds::registry::{EntryUrl, default_base_url, entry_urls};

/// Whether the entry is on a private network (`privateNetwork: true` of its kind).
pub fn is_private(spec: &RegistryEntrySpec) -> bool {
    spec.mcp.as_ref().is_some_and(|m| m.private_network)
        || spec.a2a.as_ref().is_some_and(|a| a.private_network)
        || spec.model.as_ref().is_some_and(|m| m.private_network)
}

/// Every Secret key the entry references, at its field.
pub fn secret_refs(spec: &RegistryEntrySpec) -> Vec<(String, &SecretKeyRef)> {
    let mut out = Vec::new();
    if let Some(auth) = spec.mcp.as_ref().and_then(|m| m.auth.as_ref()) {
        out.push((
            "spec.mcp.auth.secretKeyRef".to_owned(),
            &auth.secret_key_ref,
        ));
    }
    if let Some(auth) = spec.a2a.as_ref().and_then(|a| a.auth.as_ref()) {
        out.push((
            "spec.a2a.auth.secretKeyRef".to_owned(),
            &auth.secret_key_ref,
        ));
    }
    if let Some(key) = spec.model.as_ref().and_then(|m| m.api_key.as_ref()) {
        out.push((
            "spec.model.apiKey.secretKeyRef".to_owned(),
            &key.secret_key_ref,
        ));
    }
    out
}

/// The annotation on a Secret that lists the origins it may be sent to (rules 5.46/5.47):
/// origins (`https://api.openai.com`, `https://mcp.corp.example:8443`) separated by commas or
/// white space; a URL stands for its origin.
pub const ALLOWED_ORIGINS_ANNOTATION: &str = "studio.orrery.dev/allowed-origins";

/// The origin of a URL as browsers write it (`https://host`, the port only when it is not the
/// scheme's default, the host in lowercase), or `None` when it is not a URL with a host.
pub fn origin_of(text: &str) -> Option<String> {
    let url = url::Url::parse(text.trim()).ok()?;
    url.host_str()?;
    Some(url.origin().ascii_serialization())
}

/// The origins the entry sends its Secret to: every URL it reaches ([`entry_urls`]: an MCP
/// server's URL, an agent's card and service origins, a model's base URL or its provider's
/// default), each once, in order.
pub fn secret_destinations(spec: &RegistryEntrySpec) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for url in entry_urls(spec) {
        if let Some(origin) = origin_of(&url.url)
            && !out.contains(&origin)
        {
            out.push(origin);
        }
    }
    out
}

/// The origins an [`ALLOWED_ORIGINS_ANNOTATION`] lists, or the first item that is not one.
pub fn allowed_origins(annotation: &str) -> Result<Vec<String>, String> {
    annotation
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|item| !item.is_empty())
        .map(|item| origin_of(item).ok_or_else(|| item.to_owned()))
        .collect()
}

/// The TCP port a URL reaches: its own, or its scheme's default.
pub fn url_port(text: &str) -> Option<u16> {
    url::Url::parse(text).ok()?.port_or_known_default()
}

/// The hosts and ports the URLs of entry `entry` reach outside the pod, each URL's host with
/// its port; loopback URLs are left out (they stay inside the pod). A URL that is not one, or
/// has no port, is an error at its field. The runner's and the probe's NetworkPolicies allow
/// exactly these ports.
pub fn reached(entry: &str, spec: &RegistryEntrySpec) -> Result<Vec<(String, u16)>> {
    let mut out = Vec::new();
    for url in entry_urls(spec) {
        let Some((_, host)) = scheme_and_host(&url.url) else {
            return Err(Error::Endpoint {
                entry: entry.to_owned(),
                problem: format!("{} {:?} is not a URL", url.field, url.url),
                fix: "correct the URL in the RegistryEntry".into(),
            });
        };
        if LOOPBACK_HOSTS.contains(&host.as_str()) {
            continue;
        }
        let port = url_port(&url.url).ok_or_else(|| Error::Endpoint {
            entry: entry.to_owned(),
            problem: format!("{} {:?} has no port", url.field, url.url),
            fix: "write the URL with https:// or an explicit port".into(),
        })?;
        out.push((host, port));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use orrery_crds::common::BearerAuth;
    use orrery_crds::registry::{A2aEntry, McpEntry, McpTransport, RegistryEntry};

    #[test]
    fn an_entrys_urls_and_secrets_are_listed_at_their_fields() {
        let mut a2a = A2aEntry::new("https://w.example/card", &["draft"]);
        a2a.service_origins = vec!["https://rpc.example".into()];
        a2a.auth = Some(BearerAuth::from_secret("w-token", "token"));
        let agent = RegistryEntry::from_a2a("w", a2a);
        let urls: Vec<(String, String)> = entry_urls(&agent.spec)
            .into_iter()
            .map(|u| (u.field, u.url))
            .collect();
        assert_eq!(
            urls,
            [
                (
                    "spec.a2a.cardUrl".to_owned(),
                    "https://w.example/card".to_owned()
                ),
                (
                    "spec.a2a.serviceOrigins[0]".to_owned(),
                    "https://rpc.example".to_owned()
                ),
            ]
        );
        let refs: Vec<(String, String)> = secret_refs(&agent.spec)
            .into_iter()
            .map(|(f, r)| (f, format!("{}/{}", r.name, r.key)))
            .collect();
        assert_eq!(
            refs,
            [(
                "spec.a2a.auth.secretKeyRef".to_owned(),
                "w-token/token".to_owned()
            )]
        );
        let mcp = RegistryEntry::from_mcp(
            "t",
            McpEntry::new(
                "http://127.0.0.1:7801/mcp",
                McpTransport::StreamableHttp,
                &["a"],
                &[],
            ),
        );
        assert_eq!(entry_urls(&mcp.spec).len(), 1);
        assert!(secret_refs(&mcp.spec).is_empty());
        assert!(!is_private(&mcp.spec));
    }

    #[test]
    fn a_model_without_base_url_reaches_its_providers_endpoint_and_scripted_reaches_none() {
        let model = |yaml: &str| -> RegistryEntrySpec { serde_yaml::from_str(yaml).expect("spec") };
        let openai = model(
            "{model: {provider: OpenAI, model: gpt, apiKey: {secretKeyRef: {name: k, key: v}}}}",
        );
        assert_eq!(
            entry_urls(&openai)
                .into_iter()
                .map(|u| u.url)
                .collect::<Vec<_>>(),
            ["https://api.openai.com/v1"]
        );
        let scripted = model("{model: {provider: Scripted, model: s, script: {}}}");
        assert!(entry_urls(&scripted).is_empty());
    }

    #[test]
    fn ports_come_from_the_url_or_its_scheme() {
        for (url, port) in [
            ("https://x.example/mcp", Some(443)),
            ("http://127.0.0.1:7801/mcp", Some(7801)),
            ("https://x.example:8443/", Some(8443)),
            ("nonsense", None),
        ] {
            assert_eq!(url_port(url), port, "{url}");
        }
    }
}
