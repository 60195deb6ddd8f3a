//! Whether a StudioRun may start: its budget overrides within the composition's, the relay it
//! would need, the concurrency limits (over one it waits in a queue, first come first served)
//! and its owner's daily token budget (the sum of the owner's runs' totals today: no second
//! store).

use crate::config::RunLimits;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::jiff::tz::TimeZone;
use orrery_crds::budget::{BudgetKey, BudgetLimits, Budgets};
use orrery_crds::common::ConditionStatus;
use orrery_crds::composition::NodeKind;
use orrery_crds::conditions::READY;
use orrery_crds::plan::{Plan, ToolKind};
use orrery_crds::registry::RegistryEntry;
use orrery_crds::run::RunPhase;
use orrery_crds::{CompositionSpec, StudioRun};
use std::borrow::Borrow;
use std::collections::BTreeMap;

/// Why a run may not start now, in the words its status carries.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// A budget override raises a budget above the composition's (or the ceiling).
    #[error(
        "spec.budgets.{key} is {wanted}, over the composition's {limit}: a run may only lower a budget"
    )]
    OverBudget {
        /// The budget (`maxTokens`...).
        key: String,
        /// The run's override.
        wanted: u64,
        /// The composition's budget, or the ceiling where it sets none.
        limit: u64,
    },
    /// The owner's runs used the daily token budget today.
    #[error(
        "owner {owner}'s runs used {used} of {limit} tokens today (UTC; runLimits.dailyTokenBudgetPerOwner): start the run tomorrow or ask the platform team to raise the budget"
    )]
    DailyBudgetUsed {
        /// The run's owner.
        owner: String,
        /// Tokens their runs used today.
        used: u64,
        /// `runLimits.dailyTokenBudgetPerOwner`.
        limit: u64,
    },
}

/// Applies a run's budget overrides to the composition's spec. Each override must be at most
/// the composition's own budget (the ceiling where the composition sets none); `Err` says
/// which one is over.
pub fn apply_budget_overrides(
    spec: &CompositionSpec,
    overrides: Option<&Budgets>,
    ceilings: &BudgetLimits,
) -> Result<CompositionSpec, AdmissionError> {
    let mut out = spec.clone();
    let Some(overrides) = overrides else {
        return Ok(out);
    };
    let allowed = ceilings.effective(&spec.budgets);
    for key in BudgetKey::ALL {
        let Some(wanted) = overrides.get(key) else {
            continue;
        };
        let limit = allowed.get(key);
        if wanted > limit {
            return Err(AdmissionError::OverBudget {
                key: key.to_string(),
                wanted,
                limit,
            });
        }
        let slot = match key {
            BudgetKey::Tokens => &mut out.budgets.max_tokens,
            BudgetKey::ToolCalls => &mut out.budgets.max_tool_calls,
            BudgetKey::Delegations => &mut out.budgets.max_delegations,
            BudgetKey::RemoteCalls => &mut out.budgets.max_remote_calls,
            BudgetKey::Timeout => &mut out.budgets.timeout_seconds,
        };
        *slot = Some(wanted);
    }
    Ok(out)
}

/// Whether `user` is a person: a user name not starting with `system:` (service accounts are
/// `system:serviceaccount:<namespace>:<name>`), as the admission policies of
/// the chart's admission policies tell them apart.
fn is_person(user: &str) -> bool {
    !user.starts_with("system:")
}

/// Why a run must name approvers and names none, or `None`: its owner is not a person (a
/// service account, e.g. a GitOps pipeline), so only `spec.approvers` could decide, and its
/// plan can ask a person: a HumanApproval node, or an A2A tool (a remote may ask a question, an
/// acting one asks for confirmation). Rule 4.54: the create policy refuses such a run when its
/// composition is inline; this catches one naming a Composition, which the policy cannot see.
pub fn needs_approvers(run: &StudioRun, plan: &Plan) -> Option<String> {
    let owner = run.spec.owner.as_str();
    let approvers = run.spec.approvers.as_ref();
    let named =
        approvers.is_some_and(|a| a.users.iter().any(|u| is_person(u)) || !a.groups.is_empty());
    if is_person(owner) || named {
        return None;
    }
    let asks = asking(plan);
    (!asks.is_empty()).then(|| {
        format!(
            "the run's owner {owner} is not a person and can never decide, but the composition can ask a person ({}) and the run names no approvers: name the people who decide in spec.approvers.users or spec.approvers.groups and create the run again",
            asks.join(" and ")
        )
    })
}

/// What in `plan` can ask a person, one phrase per kind (HumanApproval nodes; A2A tools, whose
/// remote may ask a question or, acting, for confirmation); empty when nothing can.
pub fn asking(plan: &Plan) -> Vec<String> {
    let approvals: Vec<&str> = plan
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::HumanApproval)
        .map(|n| n.id.as_str())
        .collect();
    let remotes: Vec<&str> = plan
        .nodes
        .iter()
        .flat_map(|n| n.tools.iter())
        .filter(|t| t.kind == ToolKind::A2a)
        .map(|t| t.reference.as_str())
        .collect();
    let mut asks = Vec::new();
    if !approvals.is_empty() {
        asks.push(format!("HumanApproval node(s) {}", approvals.join(", ")));
    }
    if !remotes.is_empty() {
        asks.push(format!("A2A tool(s) {}", remotes.join(", ")));
    }
    asks
}

/// Whether the entries a plan uses let it start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryReadiness {
    /// Every entry is `Ready=True`.
    Ready,
    /// Some entry has not been probed yet (`Ready` Unknown or absent): the run waits.
    Waiting(String),
    /// Some entry is missing or `Ready=False` (refused, probe failed, its pin changed and
    /// nobody accepted the new one): the run is refused.
    Refused(String),
}

/// The readiness of the entries `plan` uses; the messages name each entry and why.
pub fn entries_readiness(plan: &Plan, entries: &[RegistryEntry]) -> EntryReadiness {
    let mut refused = Vec::new();
    let mut waiting = Vec::new();
    for name in super::builders::plan_entry_names(plan) {
        let entry = entries
            .iter()
            .find(|e| e.metadata.name.as_deref() == Some(name.as_str()));
        let ready = entry.and_then(|e| {
            e.status
                .as_ref()
                .and_then(|s| crate::kstatus::find(&s.conditions, READY))
        });
        match (entry, ready) {
            (None, _) => refused.push(format!("RegistryEntry {name} does not exist")),
            // Ready, but of an older spec: the entry was edited (its URL moved, say) and is
            // not checked again yet, so what was Ready is not what would be called.
            (Some(e), Some(c))
                if c.status == ConditionStatus::True
                    && c.observed_generation.is_some()
                    && c.observed_generation != e.metadata.generation =>
            {
                waiting.push(format!(
                    "RegistryEntry {name} changed (generation {}) and is being checked again",
                    e.metadata.generation.unwrap_or_default()
                ))
            }
            (Some(_), Some(c)) if c.status == ConditionStatus::True => {}
            (Some(_), Some(c)) if c.status == ConditionStatus::False => refused.push(format!(
                "RegistryEntry {name} is not Ready ({}: {})",
                c.reason, c.message
            )),
            (Some(_), _) => waiting.push(format!("RegistryEntry {name} is not Ready yet")),
        }
    }
    if !refused.is_empty() {
        EntryReadiness::Refused(refused.join("; "))
    } else if !waiting.is_empty() {
        EntryReadiness::Waiting(waiting.join("; "))
    } else {
        EntryReadiness::Ready
    }
}

/// The Pod Security level a namespace enforces (`pod-security.kubernetes.io/enforce`).
pub const POD_SECURITY_ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";

/// Whether a namespace enforces Pod Security `restricted` (if not, the operator says so once
/// in an Event: the runner pod is restricted either way).
pub fn enforces_restricted(namespace: &Namespace) -> bool {
    namespace
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(POD_SECURITY_ENFORCE_LABEL))
        .is_some_and(|level| level == "restricted")
}

/// Where a run stands in the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueDecision {
    /// A slot is free: create its pod.
    Start,
    /// Over a limit: it waits.
    Queued {
        /// 1-based position among the namespace's waiting runs.
        position: usize,
        /// Which limit holds it, for the message.
        why: String,
    },
}

/// Whether a run holds a slot: it has a pod and has not ended.
fn holds_slot(run: &StudioRun) -> bool {
    run.status.as_ref().is_some_and(|s| {
        !s.phase.is_some_and(RunPhase::is_terminal)
            && (s.runner_pod.is_some()
                || matches!(
                    s.phase,
                    Some(RunPhase::Running | RunPhase::AwaitingApproval)
                ))
    })
}

/// Whether a run waits for a slot: not ended, no pod, not cancelled or being deleted.
fn waits(run: &StudioRun) -> bool {
    !run.spec.cancel
        && run.metadata.deletion_timestamp.is_none()
        && !holds_slot(run)
        && !run
            .status
            .as_ref()
            .is_some_and(|s| s.phase.is_some_and(RunPhase::is_terminal))
}

fn queue_key(run: &StudioRun) -> (Option<Timestamp>, String) {
    (
        run.metadata.creation_timestamp.as_ref().map(|t| t.0),
        run.metadata.name.clone().unwrap_or_default(),
    )
}

fn same_run(a: &StudioRun, b: &StudioRun) -> bool {
    std::ptr::eq(a, b)
        || (a.metadata.name == b.metadata.name && a.metadata.namespace == b.metadata.namespace)
}

fn namespace_of(run: &StudioRun) -> &str {
    run.metadata.namespace.as_deref().unwrap_or_default()
}

/// Whether `run` may start under the concurrency limits, given every run the operator sees
/// (`runs` may include `run` itself): an owner's runs count in every namespace, a namespace's
/// only there. Waiting runs are admitted in creation order: one that a limit holds does not
/// keep a later run from a slot it may take.
pub fn queue_decision<R: Borrow<StudioRun>>(
    run: &StudioRun,
    runs: &[R],
    limits: &RunLimits,
) -> QueueDecision {
    if holds_slot(run) {
        return QueueDecision::Start;
    }
    let per_owner = limits.max_concurrent_runs_per_owner.map(|n| n as usize);
    let per_namespace = limits.max_concurrent_runs_per_namespace.map(|n| n as usize);
    let mut namespace_active: BTreeMap<&str, usize> = BTreeMap::new();
    let mut owner_active: BTreeMap<&str, usize> = BTreeMap::new();
    let mut waiting: Vec<&StudioRun> = vec![run];
    for other in runs.iter().map(Borrow::borrow) {
        if same_run(other, run) {
            continue;
        }
        if holds_slot(other) {
            *namespace_active.entry(namespace_of(other)).or_default() += 1;
            *owner_active.entry(other.spec.owner.as_str()).or_default() += 1;
        } else if waits(other) {
            waiting.push(other);
        }
    }
    waiting.sort_by_key(|r| queue_key(r));
    let mine = namespace_of(run);
    let mut position = 0;
    for candidate in waiting {
        let owner = candidate.spec.owner.as_str();
        let namespace = namespace_of(candidate);
        let owned = owner_active.get(owner).copied().unwrap_or(0);
        let here = namespace_active.get(namespace).copied().unwrap_or(0);
        let owner_full = per_owner.is_some_and(|limit| owned >= limit);
        let namespace_full = per_namespace.is_some_and(|limit| here >= limit);
        let is_me = std::ptr::eq(candidate, run);
        if !owner_full && !namespace_full {
            if is_me {
                return QueueDecision::Start;
            }
            *namespace_active.entry(namespace).or_default() += 1;
            *owner_active.entry(owner).or_default() += 1;
            continue;
        }
        if namespace == mine || owner == run.spec.owner {
            position += 1;
        }
        if is_me {
            let why = if owner_full {
                format!(
                    "owner {owner} has {owned} of {} runs executing (runLimits.maxConcurrentRunsPerOwner)",
                    per_owner.unwrap_or(0)
                )
            } else {
                format!(
                    "the namespace has {here} of {} runs executing (runLimits.maxConcurrentRunsPerNamespace)",
                    per_namespace.unwrap_or(0)
                )
            };
            return QueueDecision::Queued { position, why };
        }
    }
    QueueDecision::Start
}

/// The model tokens `owner`'s runs created on `now`'s UTC day used (their status totals).
pub fn tokens_used_today<R: Borrow<StudioRun>>(owner: &str, runs: &[R], now: Timestamp) -> u64 {
    let today = now.to_zoned(TimeZone::UTC).date();
    runs.iter()
        .map(Borrow::borrow)
        .filter(|r| r.spec.owner == owner)
        .filter(|r| {
            r.metadata
                .creation_timestamp
                .as_ref()
                .is_some_and(|t| t.0.to_zoned(TimeZone::UTC).date() == today)
        })
        .filter_map(|r| r.status.as_ref().and_then(|s| s.totals.as_ref()))
        .map(|t| t.tokens)
        .fold(0u64, u64::saturating_add)
}

/// Refuses a run whose owner's runs already used the daily token budget today; `Err` is the
/// message for the run's status.
pub fn check_daily_budget<R: Borrow<StudioRun>>(
    run: &StudioRun,
    runs: &[R],
    limits: &RunLimits,
    now: Timestamp,
) -> Result<(), AdmissionError> {
    let Some(limit) = limits.daily_token_budget_per_owner else {
        return Ok(());
    };
    let owner = run.spec.owner.as_str();
    let used = tokens_used_today(owner, runs, now);
    if used >= limit {
        return Err(AdmissionError::DailyBudgetUsed {
            owner: owner.to_owned(),
            used,
            limit,
        });
    }
    Ok(())
}

#[cfg(test)]
#[path = "admission_tests.rs"]
mod tests;
