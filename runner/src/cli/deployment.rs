//! The deployment's flags, one struct flattened into `orrery run`, `orrery validate` and
//! `orrery schema`: what the operator's Helm values decide in a cluster.

use clap::Args;
use orrery_crds::budget::BudgetLimits;
use orrery_crds::validate::DeploymentLimits;
use orrery_runner::launch::{Deployment, DeploymentError};

/// What only the deployment decides.
#[derive(Clone, Debug, Default, Args)]
pub struct DeploymentArgs {
    /// The model entry a node without `model` runs on. Without it such a node is refused
    /// unless its namespace has exactly one model entry.
    #[arg(long, value_name = "NAME", help_heading = "Deployment")]
    pub default_model: Option<String>,
    /// A model entry nodes may name (repeat for several). Without it, every model entry is
    /// allowed.
    #[arg(
        long = "allowed-model",
        value_name = "NAME",
        help_heading = "Deployment"
    )]
    pub allowed_models: Vec<String>,
    /// Allow A2A entries with `effect: Acting` (each call is confirmed by you).
    #[arg(long, help_heading = "Deployment")]
    pub acting_remotes: bool,
    /// A private host, address or network (CIDR) entries with `privateNetwork` may reach, added
    /// to `ORRERY_A2A_PRIVATE_ALLOW` (repeat, or separate with commas).
    #[arg(
        long = "allow-private",
        value_name = "HOST|ADDR|CIDR",
        help_heading = "Deployment"
    )]
    pub allow_private: Vec<String>,
    /// Redact IP addresses in captured content too (as `ORRERY_REDACT_IPS=true`).
    #[arg(long, help_heading = "Deployment")]
    pub redact_ips: bool,
    /// Ceiling of a composition's `budgets.maxTokens` (default 500000).
    #[arg(long, value_name = "N", help_heading = "Budget ceilings")]
    pub max_tokens_ceiling: Option<u64>,
    /// Ceiling of `budgets.maxToolCalls` (default 100).
    #[arg(long, value_name = "N", help_heading = "Budget ceilings")]
    pub max_tool_calls_ceiling: Option<u64>,
    /// Ceiling of `budgets.maxDelegations` (default 50).
    #[arg(long, value_name = "N", help_heading = "Budget ceilings")]
    pub max_delegations_ceiling: Option<u64>,
    /// Ceiling of `budgets.maxRemoteCalls` (default 20).
    #[arg(long, value_name = "N", help_heading = "Budget ceilings")]
    pub max_remote_calls_ceiling: Option<u64>,
    /// Ceiling of `budgets.timeoutSeconds` (default 1800).
    #[arg(long, value_name = "SECS", help_heading = "Budget ceilings")]
    pub timeout_seconds_ceiling: Option<u64>,
}

impl DeploymentArgs {
    /// What the validator and planner enforce.
    pub fn limits(&self) -> DeploymentLimits {
        let d = BudgetLimits::default();
        DeploymentLimits {
            ceilings: BudgetLimits {
                max_tokens: self.max_tokens_ceiling.unwrap_or(d.max_tokens),
                max_tool_calls: self.max_tool_calls_ceiling.unwrap_or(d.max_tool_calls),
                max_delegations: self.max_delegations_ceiling.unwrap_or(d.max_delegations),
                max_remote_calls: self.max_remote_calls_ceiling.unwrap_or(d.max_remote_calls),
                timeout_seconds: self.timeout_seconds_ceiling.unwrap_or(d.timeout_seconds),
            },
            allowed_models: (!self.allowed_models.is_empty())
                .then(|| self.allowed_models.iter().cloned().collect()),
            acting_remotes: self.acting_remotes,
            default_model: self.default_model.clone(),
        }
    }

    /// The deployment: the environment's settings, read once, with these flags on top.
    pub fn deployment(&self) -> Result<Deployment, DeploymentError> {
        self.apply(Deployment::from_env()?)
    }

    /// These flags applied to `base` (the environment's settings).
    pub fn apply(&self, mut base: Deployment) -> Result<Deployment, DeploymentError> {
        base.limits = self.limits();
        base.allow_private(&self.allow_private)?;
        base.redact.redact_ips |= self.redact_ips;
        Ok(base)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn the_flags_become_the_deployments_limits() {
        let args = DeploymentArgs {
            acting_remotes: true,
            allowed_models: vec!["scripted".into()],
            default_model: Some("scripted".into()),
            max_tokens_ceiling: Some(10),
            ..DeploymentArgs::default()
        };
        let limits = args.limits();
        assert!(limits.acting_remotes);
        assert_eq!(
            limits
                .allowed_models
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            ["scripted"]
        );
        assert_eq!(limits.default_model.as_deref(), Some("scripted"));
        assert_eq!(limits.ceilings.max_tokens, 10);
        assert_eq!(
            limits.ceilings.max_tool_calls,
            BudgetLimits::default().max_tool_calls
        );
    }

    #[test]
    fn redact_ips_is_on_when_the_flag_or_the_environment_says_so() {
        let on = Deployment::from_lookup(|name| {
            (name == orrery_runner::launch::REDACT_IPS_ENV).then(|| "true".to_owned())
        })
        .unwrap();
        let off = Deployment::default();
        let flag = DeploymentArgs {
            redact_ips: true,
            ..DeploymentArgs::default()
        };
        let none = DeploymentArgs::default();
        assert!(flag.apply(off.clone()).unwrap().redact.redact_ips);
        assert!(none.apply(on).unwrap().redact.redact_ips);
        assert!(!none.apply(off).unwrap().redact.redact_ips);
    }
}
