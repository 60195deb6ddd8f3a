//! What can be seen wrong in a RegistryEntry without reaching it: the rules the apiserver's CEL
//! rules enforce at apply time (so CI catches them first) and the deployment's acting rule.

use super::codes;
use super::issue;
use crate::common::{Loc, PathSegment, ValidationIssue};
use crate::loc;
use crate::registry::{Effect, ModelProvider, RegistryEntry};
use crate::validate::DeploymentLimits;
use regex::Regex;
use std::sync::LazyLock;

/// A RegistryEntry's name becomes part of tool names (`mcp_<entry>_<tool>`).
static ENTRY_NAME: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new("^[a-z][a-z0-9-]{0,62}$").ok());

/// The hosts plain http may reach, as the messages name them.
const LOOPBACK: &str = "localhost, 127.0.0.1 or [::1]";

/// Every problem of one entry, with locs inside its manifest.
pub(super) fn entry_problems(
    entry: &RegistryEntry,
    limits: &DeploymentLimits,
) -> Vec<ValidationIssue> {
    let mut out = Vec::new();
    let spec = &entry.spec;
    if let Some(name) = entry.metadata.name.as_deref()
        && !ENTRY_NAME.as_ref().is_some_and(|re| re.is_match(name))
    {
        out.push(issue(
            loc!["metadata", "name"],
            codes::INVALID_NAME,
            format!(
                "a RegistryEntry name must be at most 63 characters of lowercase letters, digits and '-', starting with a letter (it becomes part of tool names); {name:?} is not"
            ),
        ));
    }
    let set: Vec<&str> = [
        ("mcp", spec.mcp.is_some()),
        ("a2a", spec.a2a.is_some()),
        ("model", spec.model.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, present)| present.then_some(k))
    .collect();
    if set.len() != 1 {
        let found = if set.is_empty() {
            "none".to_owned()
        } else {
            set.join(", ")
        };
        out.push(issue(
            loc!["spec"],
            codes::EXACTLY_ONE_OF,
            format!("set exactly one of spec.mcp, spec.a2a or spec.model (found: {found})"),
        ));
    }
    if let Some(mcp) = &spec.mcp {
        address_problem(
            &mut out,
            loc!["spec", "mcp", "url"],
            &mcp.url,
            mcp.private_network,
        );
        if let Some(why) = url_problem(&mcp.url) {
            out.push(issue(
                loc!["spec", "mcp", "url"],
                codes::INSECURE_URL,
                format!("spec.mcp.url must be an https URL (plain http is allowed only to {LOOPBACK}); {why}"),
            ));
        }
        for (i, tool) in mcp.read_only.iter().enumerate() {
            if !mcp.tools.contains(tool) {
                out.push(issue(
                    loc!["spec", "mcp", "readOnly", i],
                    codes::READ_ONLY_NOT_LISTED,
                    format!("read-only tool {tool:?} is not in spec.mcp.tools; list it there too or remove it"),
                ));
            }
        }
    }
    if let Some(a2a) = &spec.a2a {
        address_problem(
            &mut out,
            loc!["spec", "a2a", "cardUrl"],
            &a2a.card_url,
            a2a.private_network,
        );
        for (i, origin) in a2a.service_origins.iter().enumerate() {
            address_problem(
                &mut out,
                loc!["spec", "a2a", "serviceOrigins", i],
                origin,
                a2a.private_network,
            );
        }
        if let Some(why) = url_problem(&a2a.card_url) {
            out.push(issue(
                loc!["spec", "a2a", "cardUrl"],
                codes::INSECURE_URL,
                format!("spec.a2a.cardUrl must be an https URL (plain http is allowed only to {LOOPBACK}); {why}"),
            ));
        }
        for (i, origin) in a2a.service_origins.iter().enumerate() {
            if let Some(why) = url_problem(origin) {
                out.push(issue(
                    loc!["spec", "a2a", "serviceOrigins", i],
                    codes::INSECURE_URL,
                    format!("each of spec.a2a.serviceOrigins must be an https URL (plain http is allowed only to {LOOPBACK}); {why}"),
                ));
            }
        }
        if let Some(why) = crate::registry::card_path_problem(&a2a.card_url) {
            out.push(issue(
                loc!["spec", "a2a", "cardUrl"],
                codes::CARD_NOT_WELL_KNOWN,
                why,
            ));
        }
        if let Some(signature) = &a2a.card_signature {
            if let Some(jwks) = &signature.jwks
                && let Err(e) = crate::jwks::parse_jwks(jwks.as_bytes())
            {
                out.push(issue(
                    loc!["spec", "a2a", "cardSignature", "jwks"],
                    codes::INVALID_KEY_SET,
                    format!("spec.a2a.cardSignature.jwks: {e}"),
                ));
            }
            if signature.jwks.is_none()
                && signature.jwks_config_map_ref.is_none()
                && !signature.allow_jku
            {
                out.push(issue(
                    loc!["spec", "a2a", "cardSignature"],
                    codes::INVALID_KEY_SET,
                    "spec.a2a.cardSignature needs trusted keys: set jwks to the agent's public key set (or jwksConfigMapRef to a ConfigMap holding it), or allowJku: true to take the key set a signature names on the card's own origin",
                ));
            }
            if signature.jwks.is_some() && signature.jwks_config_map_ref.is_some() {
                out.push(issue(
                    loc!["spec", "a2a", "cardSignature"],
                    codes::INVALID_KEY_SET,
                    "spec.a2a.cardSignature sets both jwks and jwksConfigMapRef; keep one",
                ));
            }
        }
        if a2a.effect == Effect::Acting && !limits.acting_remotes {
            out.push(issue(
                loc!["spec", "a2a", "effect"],
                codes::ACTING_NOT_ALLOWED,
                "an Acting remote needs the deployment to allow acting remotes (operator config actingRemotes, or --acting-remotes); use ReadOnly or ask the platform team",
            ));
        }
    }
    if let Some(model) = &spec.model {
        let at: Loc = vec![PathSegment::from("spec"), PathSegment::from("model")];
        if let Some(base_url) = &model.base_url {
            address_problem(
                &mut out,
                loc!["spec", "model", "baseUrl"],
                base_url,
                model.private_network,
            );
        }
        if let Some(base_url) = &model.base_url
            && let Some(why) = url_problem(base_url)
        {
            out.push(issue(
                loc!["spec", "model", "baseUrl"],
                codes::INSECURE_URL,
                format!("spec.model.baseUrl must be an https URL (plain http is allowed only to {LOOPBACK}); {why} (a private endpoint needs https too)"),
            ));
        }
        if model.provider == ModelProvider::Scripted && model.script.is_none() {
            out.push(issue(
                at.clone(),
                codes::MISSING_SCRIPT,
                "a Scripted model needs spec.model.script",
            ));
        }
        if model.provider != ModelProvider::Scripted
            && model.api_key.is_none()
            && model.base_url.is_none()
        {
            out.push(issue(
                at,
                codes::MISSING_API_KEY,
                "a real provider needs spec.model.apiKey (a secretKeyRef), or a baseUrl for a keyless local server",
            ));
        }
    }
    out
}

/// Refuses a URL whose literal address the guard never connects to
/// ([`crate::host::literal_address_refusal`]).
/// Refuses too a loopback host not written exactly ([`crate::host::loopback_spelling_problem`])
/// on a scheme other than plain http (plain http is [`url_problem`]'s): the guard never
/// connects to it either (rule 5.24).
fn address_problem(out: &mut Vec<ValidationIssue>, at: Loc, text: &str, private_network: bool) {
    let refusal = crate::host::literal_address_refusal(text, private_network).or_else(|| {
        (!is_plain_http(text))
            .then(|| crate::host::loopback_spelling_problem(text))
            .flatten()
    });
    if let Some(why) = refusal {
        out.push(issue(
            at,
            codes::UNREACHABLE_ADDRESS,
            format!("{text:?}: {why}"),
        ));
    }
}

fn is_plain_http(text: &str) -> bool {
    text.split_once(':')
        .is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case("http"))
}

/// What is wrong with an entry URL, as the end of a message (`None`: nothing). A URL passes when
/// [`crate::host::is_secure_url`] holds; a plain-http URL whose host the runtime reads as
/// loopback (e.g. `http://127.1/`) but that is not written as the apiserver's rule reads it is
/// named as such ([`crate::host::loopback_spelling_problem`]), so the message says why a
/// loopback URL fails.
fn url_problem(text: &str) -> Option<String> {
    if crate::host::is_secure_url(text) {
        return None;
    }
    if is_plain_http(text)
        && let Some(why) = crate::host::loopback_spelling_problem(text)
    {
        return Some(format!("{text:?}: {why}"));
    }
    Some(format!("{text:?} is not"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn entry(yaml: &str) -> RegistryEntry {
        serde_yaml::from_str(&format!(
            "apiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\nmetadata: {{name: e}}\n{yaml}"
        ))
        .unwrap()
    }

    fn codes(yaml: &str, limits: &DeploymentLimits) -> Vec<(String, String)> {
        entry_problems(&entry(yaml), limits)
            .into_iter()
            .map(|i| (i.code, i.field))
            .collect()
    }

    #[test]
    fn registry_entry_rules_have_a_failing_case_and_a_passing_neighbour() {
        let none = DeploymentLimits::default();
        let acting = DeploymentLimits {
            acting_remotes: true,
            ..DeploymentLimits::default()
        };
        let mcp = "spec: {mcp: {url: 'https://x/mcp', tools: [a, b], readOnly: [a]}}";
        type Case<'a> = (&'a str, &'a DeploymentLimits, &'a [(&'a str, &'a str)]);
        let card = "cardUrl: 'https://w/.well-known/agent-card.json', skills: [draft]";
        let ec = r#"{\"keys\": [{\"kty\": \"EC\", \"crv\": \"P-256\", \"kid\": \"k1\", \"x\": \"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU\", \"y\": \"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0\"}]}"#;
        let signed = format!("spec: {{a2a: {{{card}, cardSignature: {{jwks: \"{ec}\"}}}}}}");
        let private = signed.replace("\\\"y\\\"", "\\\"d\\\": \\\"AA\\\", \\\"y\\\"");
        let jku_only = format!("spec: {{a2a: {{{card}, cardSignature: {{allowJku: true}}}}}}");
        let no_keys = format!("spec: {{a2a: {{{card}, cardSignature: {{}}}}}}");
        let from_map = format!(
            "spec: {{a2a: {{{card}, cardSignature: {{jwksConfigMapRef: {{name: keys, key: jwks.json}}}}}}}}"
        );
        let both = format!(
            "spec: {{a2a: {{{card}, cardSignature: {{jwks: \"{ec}\", jwksConfigMapRef: {{name: keys, key: jwks.json}}}}}}}}"
        );
        let elsewhere = "spec: {a2a: {cardUrl: 'https://w/card.json', skills: [draft]}}";
        let prefixed = "spec: {a2a: {cardUrl: 'https://w/agents/a/.well-known/agent-card.json', skills: [draft]}}";
        let query =
            "spec: {a2a: {cardUrl: 'https://w/.well-known/agent-card.json?v=2', skills: [draft]}}";
        let cases: [Case; 19] = [
            (&signed, &none, &[]),
            (&from_map, &none, &[]),
            (
                &both,
                &none,
                &[("invalid_key_set", "spec.a2a.cardSignature")],
            ),
            (
                &private,
                &none,
                &[("invalid_key_set", "spec.a2a.cardSignature.jwks")],
            ),
            (&jku_only, &none, &[]),
            (
                &no_keys,
                &none,
                &[("invalid_key_set", "spec.a2a.cardSignature")],
            ),
            (
                elsewhere,
                &none,
                &[("card_not_well_known", "spec.a2a.cardUrl")],
            ),
            (prefixed, &none, &[]),
            (query, &none, &[]),
            (mcp, &none, &[]),
            ("spec: {}", &none, &[("exactly_one_of", "spec")]),
            (
                "spec: {mcp: {url: 'https://x', tools: [a]}, model: {provider: Scripted, model: s, script: {}}}",
                &none,
                &[("exactly_one_of", "spec")],
            ),
            (
                "spec: {mcp: {url: 'http://example.com/mcp', tools: [a]}}",
                &none,
                &[("insecure_url", "spec.mcp.url")],
            ),
            (
                "spec: {mcp: {url: 'http://127.0.0.1:7801/mcp', tools: [a], readOnly: [c]}}",
                &none,
                &[("read_only_not_listed", "spec.mcp.readOnly[0]")],
            ),
            (
                "spec: {a2a: {cardUrl: 'https://w/.well-known/agent-card.json', skills: [draft], effect: Acting}}",
                &none,
                &[("acting_not_allowed", "spec.a2a.effect")],
            ),
            (
                "spec: {a2a: {cardUrl: 'https://w/.well-known/agent-card.json', skills: [draft], effect: Acting}}",
                &acting,
                &[],
            ),
            (
                "spec: {model: {provider: Scripted, model: s}}",
                &none,
                &[("missing_script", "spec.model")],
            ),
            (
                "spec: {model: {provider: OpenAI, model: gpt}}",
                &none,
                &[("missing_api_key", "spec.model")],
            ),
            (
                "spec: {model: {provider: OpenAI, model: gpt, baseUrl: 'http://127.0.0.1:11434/v1'}}",
                &none,
                &[],
            ),
        ];
        for (yaml, limits, want) in cases {
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(c, f)| ((*c).to_owned(), (*f).to_owned()))
                .collect();
            assert_eq!(codes(yaml, limits), want, "{yaml}");
        }
    }

    #[test]
    fn a_loopback_host_in_another_spelling_is_refused_saying_it_is_loopback() {
        for url in [
            "http://127.1/mcp",
            "http://0x7f000001/mcp",
            "http://LOCALHOST/mcp",
            "http://127.0.0.2/mcp",
        ] {
            let found = entry_problems(
                &entry(&format!("spec: {{mcp: {{url: '{url}', tools: [a]}}}}")),
                &DeploymentLimits::default(),
            );
            assert_eq!(found.len(), 1, "{url}: {found:?}");
            assert_eq!(found[0].code, "insecure_url", "{url}");
            assert!(
                found[0].message.contains("reaches loopback"),
                "{url}: {}",
                found[0].message
            );
        }
        // https to a spelled loopback host passes the apiserver's rule, but the guard never
        // connects to it (rule 5.24): unreachable_address, on the card URL and origins too.
        for url in [
            "https://0x7f000001/",
            "https://127.1:8443/",
            "https://LOCALHOST/",
        ] {
            let found = entry_problems(
                &entry(&format!(
                    "spec: {{a2a: {{cardUrl: '{url}.well-known/agent-card.json', serviceOrigins: ['{url}'], skills: [a]}}}}"
                )),
                &DeploymentLimits::default(),
            );
            let got: Vec<(&str, &str)> = found
                .iter()
                .map(|i| (i.code.as_str(), i.field.as_str()))
                .collect();
            assert_eq!(
                got,
                [
                    ("unreachable_address", "spec.a2a.cardUrl"),
                    ("unreachable_address", "spec.a2a.serviceOrigins[0]")
                ],
                "{url}: {found:?}"
            );
            assert!(found[0].message.contains("not written exactly"), "{url}");
        }
        let other = entry_problems(
            &entry("spec: {mcp: {url: 'http://example.com/mcp', tools: [a]}}"),
            &DeploymentLimits::default(),
        );
        assert!(
            !other[0].message.contains("loopback,"),
            "{}",
            other[0].message
        );
    }

    #[test]
    fn service_origins_and_a_model_base_url_are_checked_too() {
        let none = DeploymentLimits::default();
        assert_eq!(
            codes(
                "spec: {a2a: {cardUrl: 'https://w/.well-known/agent-card.json', skills: [s], serviceOrigins: ['https://rpc.example', 'http://rpc.example:80']}}",
                &none
            ),
            [(
                "insecure_url".to_owned(),
                "spec.a2a.serviceOrigins[1]".to_owned()
            )]
        );
        assert_eq!(
            codes(
                "spec: {model: {provider: OpenAI, model: llama, baseUrl: 'http://vllm.ml.svc:8000/v1', privateNetwork: true}}",
                &none
            ),
            [("insecure_url".to_owned(), "spec.model.baseUrl".to_owned())]
        );
    }

    #[test]
    fn an_entry_name_with_underscores_or_capitals_is_invalid() {
        let mut e = entry("spec: {model: {provider: Scripted, model: s, script: {}}}");
        assert!(entry_problems(&e, &DeploymentLimits::default()).is_empty());
        e.metadata.name = Some("Demo_Tools".into());
        let found = entry_problems(&e, &DeploymentLimits::default());
        assert_eq!(found[0].code, "invalid_name");
    }
}
