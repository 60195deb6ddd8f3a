//! What only the deployment decides, read once at launch: the validator's limits (allowed and
//! default models, acting remotes, budget ceilings), the network policy (private allowlist,
//! egress proxy, extra CAs) and redaction (`ORRERY_REDACT_IPS`, rule 8.8). The CLI builds it from
//! the environment and then applies its flags; a runner pod from its environment alone.

use crate::net::{AllowRule, GuardError, GuardPolicy};
use crate::remote::{RemoteConfigError, network_from};
use crate::safety::RedactOptions;
use orrery_crds::validate::DeploymentLimits;

/// `true` (or `1`, `yes`, `on`): IP addresses in redacted text become `[REDACTED_IP]`.
pub const REDACT_IPS_ENV: &str = "ORRERY_REDACT_IPS";

/// Why the deployment's settings are unusable.
#[derive(Debug, thiserror::Error)]
pub enum DeploymentError {
    /// The network settings (allowlist, proxy, CA file) are invalid.
    #[error(transparent)]
    Network(#[from] RemoteConfigError),
    /// A yes/no variable holds something else.
    #[error("{var}: {value:?} is not a yes/no value; use true or false")]
    NotABool {
        /// The environment variable.
        var: &'static str,
        /// What it holds.
        value: String,
    },
    /// A private-allowlist entry given on the command line is invalid.
    #[error("--allow-private {value:?}: {source}")]
    AllowPrivate {
        /// The entry as given.
        value: String,
        /// Why it is refused.
        source: GuardError,
    },
}

/// What only the deployment decides, for every run it launches.
#[derive(Clone, Debug, Default)]
pub struct Deployment {
    /// What the validator and planner enforce.
    pub limits: DeploymentLimits,
    /// The policy every entry's network guard starts from.
    pub network: GuardPolicy,
    /// How captured content is redacted in events.
    pub redact: RedactOptions,
}

impl Deployment {
    /// The deployment from the process environment (`ORRERY_A2A_PRIVATE_ALLOW`,
    /// `ORRERY_STUDIO_EGRESS_PROXY`, `ORRERY_A2A_CA_FILE`, [`REDACT_IPS_ENV`]), with default
    /// limits.
    pub fn from_env() -> Result<Self, DeploymentError> {
        Deployment::from_lookup(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
    }

    /// [`Deployment::from_env`] with an injectable lookup.
    pub fn from_lookup(env: impl Fn(&str) -> Option<String>) -> Result<Self, DeploymentError> {
        let redact_ips = match env(REDACT_IPS_ENV) {
            Some(value) => yes_no(REDACT_IPS_ENV, &value)?,
            None => false,
        };
        Ok(Deployment {
            limits: DeploymentLimits::default(),
            network: network_from(env)?,
            redact: RedactOptions { redact_ips },
        })
    }

    /// Adds private-allowlist entries (hosts, addresses, networks) to the environment's.
    pub fn allow_private(&mut self, entries: &[String]) -> Result<(), DeploymentError> {
        for value in entries {
            let rules =
                AllowRule::parse_list(value).map_err(|source| DeploymentError::AllowPrivate {
                    value: value.clone(),
                    source,
                })?;
            self.network.private_allow.extend(rules);
        }
        Ok(())
    }
}

/// A yes/no setting: `true`/`1`/`yes`/`on` or `false`/`0`/`no`/`off`, any case.
fn yes_no(var: &'static str, value: &str) -> Result<bool, DeploymentError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" | "" => Ok(false),
        _ => Err(DeploymentError::NotABool {
            var,
            value: value.to_owned(),
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::remote::PRIVATE_ALLOW_ENV;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn orrery_redact_ips_turns_ip_redaction_on_rule_8_8() {
        for value in ["true", "1", "YES", "on"] {
            let d = Deployment::from_lookup(lookup(&[(REDACT_IPS_ENV, value)])).unwrap();
            assert!(d.redact.redact_ips, "{value}");
        }
        for value in ["false", "0", "no"] {
            let d = Deployment::from_lookup(lookup(&[(REDACT_IPS_ENV, value)])).unwrap();
            assert!(!d.redact.redact_ips, "{value}");
        }
        assert!(
            !Deployment::from_lookup(lookup(&[]))
                .unwrap()
                .redact
                .redact_ips
        );
    }

    #[test]
    fn a_redact_ips_value_that_is_not_yes_or_no_is_refused_by_name() {
        let err = Deployment::from_lookup(lookup(&[(REDACT_IPS_ENV, "maybe")])).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(REDACT_IPS_ENV) && text.contains("maybe"),
            "{text}"
        );
    }

    #[test]
    fn allow_private_adds_to_the_environments_allowlist_and_names_a_bad_entry() {
        let mut d =
            Deployment::from_lookup(lookup(&[(PRIVATE_ALLOW_ENV, "writer.internal")])).unwrap();
        d.allow_private(&["10.0.0.0/8".into()]).unwrap();
        assert_eq!(d.network.private_allow.len(), 2);
        let err = d.allow_private(&["169.254.0.0/16".into()]).unwrap_err();
        assert!(err.to_string().starts_with("--allow-private"), "{err}");
    }
}
