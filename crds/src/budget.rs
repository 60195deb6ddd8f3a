//! Budgets, the one home: the budget keys, what a composition asks for ([`Budgets`], its
//! `spec.budgets`), and a full set of limits ([`BudgetLimits`]: the deployment's ceilings, and
//! the budgets a run gets once the ceilings fill in what the spec leaves out). The validator, the
//! runner's ledger, the trace events, the operator and the sidecar all use these types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One of the run's budgets.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum BudgetKey {
    /// Model tokens (input + output).
    #[serde(rename = "maxTokens")]
    Tokens,
    /// Tool calls (MCP tools and A2A skills).
    #[serde(rename = "maxToolCalls")]
    ToolCalls,
    /// Delegations (supervisor child calls and A2A calls).
    #[serde(rename = "maxDelegations")]
    Delegations,
    /// Messages sent to remote A2A agents.
    #[serde(rename = "maxRemoteCalls")]
    RemoteCalls,
    /// The deadline, in seconds of run time (time waiting for people left out).
    #[serde(rename = "timeoutSeconds")]
    Timeout,
}

impl BudgetKey {
    /// Every budget, in the order of `spec.budgets`.
    pub const ALL: [BudgetKey; 5] = [
        BudgetKey::Tokens,
        BudgetKey::ToolCalls,
        BudgetKey::Delegations,
        BudgetKey::RemoteCalls,
        BudgetKey::Timeout,
    ];

    /// The budget a key names (`maxToolCalls`, …), as written in `spec.budgets`.
    pub fn from_key(key: &str) -> Option<BudgetKey> {
        BudgetKey::ALL.into_iter().find(|k| k.as_str() == key)
    }

    /// The budget's key as written in a composition's `spec.budgets`.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetKey::Tokens => "maxTokens",
            BudgetKey::ToolCalls => "maxToolCalls",
            BudgetKey::Delegations => "maxDelegations",
            BudgetKey::RemoteCalls => "maxRemoteCalls",
            BudgetKey::Timeout => "timeoutSeconds",
        }
    }

    /// The smallest value a composition may set: a run with no tokens or no time could do
    /// nothing, while zero tool calls, delegations or remote calls is a meaningful limit.
    pub fn minimum(self) -> u64 {
        match self {
            BudgetKey::Tokens | BudgetKey::Timeout => 1,
            BudgetKey::ToolCalls | BudgetKey::Delegations | BudgetKey::RemoteCalls => 0,
        }
    }
}

impl std::fmt::Display for BudgetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Budgets for one run. Whichever runs out first emits `budget.hit` and ends the run
/// `BudgetExhausted`; a call past a budget is refused before it runs.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Budgets {
    /// Model tokens (input + output, from each response's usage) for the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u64>,
    /// Tool calls (MCP tools and A2A skills) for the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_tool_calls: Option<u64>,
    /// Delegations: supervisor child calls and remote A2A calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_delegations: Option<u64>,
    /// Messages sent to remote A2A agents, answers to their questions included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_remote_calls: Option<u64>,
    /// Wall-clock deadline in seconds. It pauses while a person decides an approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout_seconds: Option<u64>,
}

impl Budgets {
    /// The budget the spec sets for `key`, if it sets one.
    pub fn get(&self, key: BudgetKey) -> Option<u64> {
        match key {
            BudgetKey::Tokens => self.max_tokens,
            BudgetKey::ToolCalls => self.max_tool_calls,
            BudgetKey::Delegations => self.max_delegations,
            BudgetKey::RemoteCalls => self.max_remote_calls,
            BudgetKey::Timeout => self.timeout_seconds,
        }
    }
}

/// A value for every budget: the deployment's ceilings, or the budgets one run gets
/// ([`BudgetLimits::effective`]); `run.start` reports the latter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetLimits {
    /// `maxTokens`.
    pub max_tokens: u64,
    /// `maxToolCalls`.
    pub max_tool_calls: u64,
    /// `maxDelegations`.
    pub max_delegations: u64,
    /// `maxRemoteCalls`.
    pub max_remote_calls: u64,
    /// `timeoutSeconds`.
    pub timeout_seconds: u64,
}

impl BudgetLimits {
    /// The ceilings of a deployment that sets none (seed rule 2.29).
    pub const DEFAULT_CEILINGS: BudgetLimits = BudgetLimits {
        max_tokens: 500_000,
        max_tool_calls: 100,
        max_delegations: 50,
        max_remote_calls: 20,
        timeout_seconds: 1800,
    };

    /// The limit for `key`.
    pub fn get(&self, key: BudgetKey) -> u64 {
        match key {
            BudgetKey::Tokens => self.max_tokens,
            BudgetKey::ToolCalls => self.max_tool_calls,
            BudgetKey::Delegations => self.max_delegations,
            BudgetKey::RemoteCalls => self.max_remote_calls,
            BudgetKey::Timeout => self.timeout_seconds,
        }
    }

    /// The budgets a run gets under these ceilings: each budget the spec leaves out is set to
    /// its ceiling.
    pub fn effective(&self, budgets: &Budgets) -> BudgetLimits {
        BudgetLimits {
            max_tokens: budgets.max_tokens.unwrap_or(self.max_tokens),
            max_tool_calls: budgets.max_tool_calls.unwrap_or(self.max_tool_calls),
            max_delegations: budgets.max_delegations.unwrap_or(self.max_delegations),
            max_remote_calls: budgets.max_remote_calls.unwrap_or(self.max_remote_calls),
            timeout_seconds: budgets.timeout_seconds.unwrap_or(self.timeout_seconds),
        }
    }
}

impl Default for BudgetLimits {
    /// The default ceilings ([`BudgetLimits::DEFAULT_CEILINGS`]).
    fn default() -> Self {
        BudgetLimits::DEFAULT_CEILINGS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_budget_key_reads_back_from_its_spec_name() {
        for key in BudgetKey::ALL {
            assert_eq!(BudgetKey::from_key(key.as_str()), Some(key));
            let json = serde_json::to_string(&key).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", key.as_str()));
        }
        assert_eq!(BudgetKey::from_key("maxCoffee"), None);
    }

    #[test]
    fn effective_budgets_take_the_spec_where_set_and_the_ceiling_elsewhere() {
        let spec = Budgets {
            max_tool_calls: Some(3),
            timeout_seconds: Some(60),
            ..Budgets::default()
        };
        let run = BudgetLimits::DEFAULT_CEILINGS.effective(&spec);
        for key in BudgetKey::ALL {
            let expected = spec
                .get(key)
                .unwrap_or(BudgetLimits::DEFAULT_CEILINGS.get(key));
            assert_eq!(run.get(key), expected, "{key}");
        }
    }

    #[test]
    fn the_spec_schema_minimum_of_each_budget_is_its_key_minimum() {
        let schema = serde_json::to_value(schemars::schema_for!(Budgets)).unwrap_or_default();
        for key in BudgetKey::ALL {
            let minimum = &schema["properties"][key.as_str()]["minimum"];
            assert_eq!(minimum.as_u64(), Some(key.minimum()), "{key}");
        }
    }
}
