//! A RegistryEntry's static checks (before any probe): https unless loopback, private hosts
//! only on the deployment's allowlist, acting only if allowed, every secretKeyRef naming a key
//! that exists. They set `Ready`/`Pinned` with reasons; the probe's result (next) fills in the
//! pins.

use super::builders::{entry_urls, is_private, is_secure_url, scheme_and_host, secret_refs};
use crate::config::{AllowEntry, Config};
use crate::kstatus::{self, Health};
use ipnet::IpNet;
use k8s_openapi::jiff::Timestamp;
use orrery_crds::common::{ConditionStatus, set_condition};
use orrery_crds::conditions::{PINNED, reasons};
use orrery_crds::registry::{Effect, ModelProvider, RegistryEntry, RegistryEntryStatus};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;

/// The Secrets of the entry's namespace: name → the keys of its data.
pub type SecretKeys = BTreeMap<String, BTreeSet<String>>;

/// One static problem of an entry, at its field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecProblem {
    /// The field, e.g. `spec.mcp.url`.
    pub field: String,
    /// What is wrong.
    pub problem: String,
    /// How to fix it.
    pub fix: String,
}

impl fmt::Display for SpecProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}; fix: {}", self.field, self.problem, self.fix)
    }
}

/// Address space that is never a public endpoint: an entry reaching a literal address in it
/// must be `privateNetwork` and allowlisted.
const NON_PUBLIC: [&str; 9] = [
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "169.254.0.0/16",
    "0.0.0.0/8",
    "fc00::/7",
    "fe80::/10",
    "::/128",
];

fn is_non_public(addr: IpAddr) -> bool {
    NON_PUBLIC
        .iter()
        .filter_map(|n| n.parse::<IpNet>().ok())
        .any(|n| n.contains(&addr))
}

/// Every static problem of `entry` under `config`, given the Secrets of its namespace.
pub fn static_problems(
    entry: &RegistryEntry,
    config: &Config,
    secrets: &SecretKeys,
) -> Vec<SpecProblem> {
    let spec = &entry.spec;
    let mut out = Vec::new();
    let mut problem = |field: &str, problem: String, fix: &str| {
        out.push(SpecProblem {
            field: field.to_owned(),
            problem,
            fix: fix.to_owned(),
        });
    };
    if spec.kind().is_none() {
        problem(
            "spec",
            "the entry sets none or several of mcp, a2a and model".into(),
            "set exactly one of spec.mcp, spec.a2a or spec.model",
        );
    }
    let private = is_private(spec);
    let allowlist = config.allowlist();
    for url in entry_urls(spec) {
        if !is_secure_url(&url.url) {
            problem(
                &url.field,
                format!(
                    "{:?} is not https (plain http is allowed only to localhost, 127.0.0.1 or [::1])",
                    url.url
                ),
                "use an https URL",
            );
            continue;
        }
        let Some((_, host)) = scheme_and_host(&url.url) else {
            continue;
        };
        let loopback = super::builders::LOOPBACK_HOSTS.contains(&host.as_str());
        let literal = host.parse::<IpAddr>().ok();
        if private && !loopback {
            let named = allowlist.iter().any(|a| a.covers(&host));
            // A name may still resolve into an allowlisted network: the probe decides.
            let may_resolve_in =
                literal.is_none() && allowlist.iter().any(|a| matches!(a, AllowEntry::Net(_)));
            if !named && !may_resolve_in {
                problem(
                    &url.field,
                    format!(
                        "the private host {host} is not on the deployment's privateNetworkAllowlist"
                    ),
                    "ask the platform team to add the host (or its network) to privateNetworkAllowlist in the operator config, or use a public endpoint",
                );
            }
        } else if !private
            && let Some(addr) = literal.filter(|a| !a.is_loopback() && is_non_public(*a))
        {
            problem(
                &url.field,
                format!("{addr} is a private address but the entry is not privateNetwork"),
                "set privateNetwork: true and have the address put on the deployment's privateNetworkAllowlist",
            );
        }
    }
    if let Some(a2a) = &spec.a2a
        && a2a.effect == Effect::Acting
        && !config.acting_remotes
    {
        problem(
            "spec.a2a.effect",
            "this deployment does not allow acting remotes".into(),
            "use effect: ReadOnly, or ask the platform team to set actingRemotes: true in the operator config",
        );
    }
    for (field, reference) in secret_refs(spec) {
        match secrets.get(&reference.name) {
            None => problem(
                &field,
                format!(
                    "Secret {:?} does not exist in this namespace",
                    reference.name
                ),
                "create the Secret (kubectl create secret generic NAME --from-literal=KEY=VALUE) or fix the name",
            ),
            Some(keys) if !keys.contains(&reference.key) => problem(
                &field,
                format!("Secret {:?} has no key {:?}", reference.name, reference.key),
                "add the key to the Secret or fix secretKeyRef.key",
            ),
            Some(_) => {}
        }
    }
    out
}

/// Whether the entry reaches no network (a Scripted model), so nothing is probed or pinned.
pub fn needs_no_probe(entry: &RegistryEntry) -> bool {
    entry
        .spec
        .model
        .as_ref()
        .is_some_and(|m| m.provider == ModelProvider::Scripted)
}

/// The entry's status after its static checks: with problems, `Ready=False` (reason
/// `SpecRefused`, every problem in the message) and `Stalled`; a Scripted model is `Ready` and
/// `Pinned` at once (reason `NothingToProbe`); otherwise the probe runs next (`Ready=Unknown`,
/// reason `Probing`, `Reconciling`). Pins already in the status are kept.
pub fn static_status(
    entry: &RegistryEntry,
    problems: &[SpecProblem],
    now: Timestamp,
) -> RegistryEntryStatus {
    let generation = entry.metadata.generation;
    let mut status = entry.status.clone().unwrap_or_default();
    status.kind = entry.spec.kind();
    status.observed_generation = generation;
    let health = if !problems.is_empty() {
        let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
        let message = format!("refused: {}", list.join("; "));
        status.last_error = Some(message.clone());
        Health::Stalled {
            reason: reasons::SPEC_REFUSED,
            message,
        }
    } else if needs_no_probe(entry) {
        status.last_error = None;
        set_condition(
            &mut status.conditions,
            kstatus::condition(
                PINNED,
                ConditionStatus::True,
                reasons::NOTHING_TO_PROBE,
                "a Scripted model reaches no network: nothing to pin",
                generation,
                now,
            ),
        );
        Health::Ready {
            reason: reasons::NOTHING_TO_PROBE,
            message: "a Scripted model reaches no network: ready without a probe".into(),
        }
    } else {
        Health::Reconciling {
            reason: reasons::PROBING,
            message: "the static checks passed; the probe pod checks the endpoint and pins it"
                .into(),
        }
    };
    if !status.conditions.iter().any(|c| c.r#type == PINNED) {
        set_condition(
            &mut status.conditions,
            kstatus::condition(
                PINNED,
                ConditionStatus::Unknown,
                reasons::PROBING,
                "not probed yet",
                generation,
                now,
            ),
        );
    }
    kstatus::set_health(&mut status.conditions, &health, generation, now);
    status
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use crate::kstatus::find;
    use orrery_crds::conditions::{READY, RECONCILING, STALLED};

    fn config(extra: &str) -> Config {
        Config::parse(
            "t.yaml",
            &format!(
                "apiVersion: config.studio.orrery.dev/v1alpha1\nkind: OperatorConfig\n\
                 runner: {{image: 'o:1'}}\nsidecar: {{namespace: s, serviceName: s, port: 1}}\n\
                 runToken: {{signingKeyFile: k}}\n{extra}\n"
            ),
        )
        .expect("config")
    }

    fn entry(yaml: &str) -> RegistryEntry {
        let mut e: RegistryEntry = serde_yaml::from_str(&format!(
            "apiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\nmetadata: {{name: e, generation: 4}}\n{yaml}"
        ))
        .expect("entry");
        e.metadata.generation = Some(4);
        e
    }

    fn secrets() -> SecretKeys {
        BTreeMap::from([("keys".to_owned(), BTreeSet::from(["openai".to_owned()]))])
    }

    fn fields(yaml: &str, config: &Config) -> Vec<String> {
        static_problems(&entry(yaml), config, &secrets())
            .into_iter()
            .map(|p| p.field)
            .collect()
    }

    #[test]
    fn each_static_rule_refuses_its_case_and_passes_its_neighbour() {
        let plain = config("");
        let allow = config("privateNetworkAllowlist: [vllm.ml.svc, 10.20.0.0/16]");
        let names_only = config("privateNetworkAllowlist: [vllm.ml.svc]");
        let acting = config("actingRemotes: true");
        let cases: Vec<(&str, &Config, &[&str])> = vec![
            (
                "spec: {mcp: {url: 'https://t.example/mcp', tools: [a]}}",
                &plain,
                &[],
            ),
            (
                "spec: {mcp: {url: 'http://t.example/mcp', tools: [a]}}",
                &plain,
                &["spec.mcp.url"],
            ),
            (
                "spec: {mcp: {url: 'http://127.0.0.1:7801/mcp', tools: [a]}}",
                &plain,
                &[],
            ),
            (
                "spec: {a2a: {cardUrl: 'https://w/card', skills: [s], serviceOrigins: ['http://rpc:80']}}",
                &plain,
                &["spec.a2a.serviceOrigins[0]"],
            ),
            // private hosts
            (
                "spec: {model: {provider: OpenAI, model: m, baseUrl: 'https://vllm.ml.svc/v1', privateNetwork: true}}",
                &allow,
                &[],
            ),
            (
                "spec: {model: {provider: OpenAI, model: m, baseUrl: 'https://vllm.ml.svc/v1', privateNetwork: true}}",
                &plain,
                &["spec.model.baseUrl"],
            ),
            (
                "spec: {model: {provider: OpenAI, model: m, baseUrl: 'https://other.ml.svc/v1', privateNetwork: true}}",
                &names_only,
                &["spec.model.baseUrl"],
            ),
            (
                "spec: {model: {provider: OpenAI, model: m, baseUrl: 'https://other.ml.svc/v1', privateNetwork: true}}",
                &allow,
                &[],
            ),
            (
                "spec: {mcp: {url: 'https://10.20.1.2/mcp', tools: [a], privateNetwork: true}}",
                &allow,
                &[],
            ),
            (
                "spec: {mcp: {url: 'https://10.30.1.2/mcp', tools: [a], privateNetwork: true}}",
                &allow,
                &["spec.mcp.url"],
            ),
            (
                "spec: {mcp: {url: 'https://10.20.1.2/mcp', tools: [a]}}",
                &allow,
                &["spec.mcp.url"],
            ),
            (
                "spec: {mcp: {url: 'https://[fd00::5]/mcp', tools: [a]}}",
                &plain,
                &["spec.mcp.url"],
            ),
            (
                "spec: {mcp: {url: 'https://203.0.113.7/mcp', tools: [a]}}",
                &plain,
                &[],
            ),
            // acting
            (
                "spec: {a2a: {cardUrl: 'https://w/card', skills: [s], effect: Acting}}",
                &plain,
                &["spec.a2a.effect"],
            ),
            (
                "spec: {a2a: {cardUrl: 'https://w/card', skills: [s], effect: Acting}}",
                &acting,
                &[],
            ),
            // secrets
            (
                "spec: {model: {provider: OpenAI, model: m, apiKey: {secretKeyRef: {name: keys, key: openai}}}}",
                &plain,
                &[],
            ),
            (
                "spec: {model: {provider: OpenAI, model: m, apiKey: {secretKeyRef: {name: nokeys, key: openai}}}}",
                &plain,
                &["spec.model.apiKey.secretKeyRef"],
            ),
            (
                "spec: {mcp: {url: 'https://t/mcp', tools: [a], auth: {secretKeyRef: {name: keys, key: mcp}}}}",
                &plain,
                &["spec.mcp.auth.secretKeyRef"],
            ),
            ("spec: {}", &plain, &["spec"]),
        ];
        for (yaml, config, want) in cases {
            assert_eq!(fields(yaml, config), want, "{yaml}");
        }
    }

    #[test]
    fn a_missing_secret_and_a_missing_key_say_which() {
        let problems = |yaml: &str| {
            static_problems(&entry(yaml), &config(""), &secrets())
                .into_iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let no_secret = problems(
            "spec: {model: {provider: OpenAI, model: m, apiKey: {secretKeyRef: {name: nokeys, key: openai}}}}",
        );
        assert!(
            no_secret.contains("Secret \"nokeys\" does not exist"),
            "{no_secret}"
        );
        let no_key = problems(
            "spec: {model: {provider: OpenAI, model: m, apiKey: {secretKeyRef: {name: keys, key: anthropic}}}}",
        );
        assert!(
            no_key.contains("Secret \"keys\" has no key \"anthropic\""),
            "{no_key}"
        );
    }

    #[test]
    fn the_status_says_refused_probing_or_ready_with_reasons() {
        let refused_problem = SpecProblem {
            field: "spec.a2a.effect".into(),
            problem: "this deployment does not allow acting remotes".into(),
            fix: "use effect: ReadOnly".into(),
        };
        let at = Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
        let mcp = entry("spec: {mcp: {url: 'https://t/mcp', tools: [a]}}");
        let scripted = entry("spec: {model: {provider: Scripted, model: s, script: {}}}");
        // (entry, problems, Ready status, Ready reason, Pinned status, abnormal)
        let cases = [
            (
                &mcp,
                vec![refused_problem],
                ConditionStatus::False,
                reasons::SPEC_REFUSED,
                ConditionStatus::Unknown,
                Some(STALLED),
            ),
            (
                &mcp,
                vec![],
                ConditionStatus::Unknown,
                reasons::PROBING,
                ConditionStatus::Unknown,
                Some(RECONCILING),
            ),
            (
                &scripted,
                vec![],
                ConditionStatus::True,
                reasons::NOTHING_TO_PROBE,
                ConditionStatus::True,
                None,
            ),
        ];
        for (e, problems, ready, reason, pinned, abnormal) in cases {
            let status = static_status(e, &problems, at);
            let ready_c = find(&status.conditions, READY).expect("Ready");
            assert_eq!(
                (ready_c.status, ready_c.reason.as_str()),
                (ready, reason),
                "{problems:?}"
            );
            assert_eq!(
                find(&status.conditions, PINNED).map(|c| c.status),
                Some(pinned)
            );
            for t in [RECONCILING, STALLED] {
                assert_eq!(
                    find(&status.conditions, t).is_some(),
                    abnormal == Some(t),
                    "{t}"
                );
            }
            assert_eq!(status.observed_generation, Some(4));
            assert_eq!(status.kind, e.spec.kind());
            if !problems.is_empty() {
                assert!(ready_c.message.contains("spec.a2a.effect: this deployment does not allow acting remotes; fix: use effect: ReadOnly"), "{}", ready_c.message);
                assert_eq!(status.last_error.as_deref(), Some(ready_c.message.as_str()));
            }
        }
    }

    #[test]
    fn pins_already_in_the_status_survive_the_static_checks() {
        let mut e = entry("spec: {a2a: {cardUrl: 'https://w/card', skills: [s]}}");
        e.status = Some(RegistryEntryStatus {
            card_sha256: Some("ab".repeat(32)),
            skills: vec!["s".into()],
            ..RegistryEntryStatus::default()
        });
        let status = static_status(&e, &[], Timestamp::UNIX_EPOCH);
        assert_eq!(status.card_sha256, Some("ab".repeat(32)));
        assert_eq!(status.skills, ["s"]);
    }
}
