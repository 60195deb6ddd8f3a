//! The contract between the operator and a runner pod, both ways, as serde types only: the
//! [`PlanDocument`] the operator writes into the plan Secret (`plan.json`) and `orrery run
//! --plan` reads, and the [`RunSummary`] the runner writes as its pod's termination message and
//! the operator reads back ([`parse_summary`]). One type on each side of the wire, so the two
//! cannot drift.

use crate::CompositionSpec;
use crate::events::{EventBody, Outcome};
use crate::plan::Plan;
use crate::registry::{PinnedTool, RegistryEntry, RegistryEntrySpec};
use crate::run::{RanComposition, RunError, RunTotals};
use crate::validate::DeploymentLimits;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The file next to `plan.json` in the plan Secret that holds the run's input.
pub const INPUT_FILE: &str = "input";

/// The file next to `plan.json` in the plan Secret that holds the run-scoped token the runner
/// sends the sidecar (trace events, the approval relay) as `Authorization: Bearer`.
pub const TOKEN_FILE: &str = "token";

/// Version of [`PlanDocument`].
pub const PLAN_DOCUMENT_VERSION: u32 = 1;

/// Who a run is: what every child names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunIdentity {
    /// The run's name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// Its UID.
    pub uid: String,
}

/// What the probe pinned for an entry, carried to the runner (which checks what the remote
/// serves against it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryPins {
    /// The pinned card digest (A2A).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "cardSHA256")]
    pub card_sha256: Option<String>,
    /// The pinned skills (A2A).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// The pinned tools (MCP).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<PinnedTool>,
    /// The addresses the host resolved to (the NetworkPolicy opens exactly these).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved_addresses: Vec<String>,
}

/// One entry a plan uses: its spec and its pins.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedEntry {
    /// The RegistryEntry's name.
    pub name: String,
    /// Its spec.
    pub spec: RegistryEntrySpec,
    /// Its pins.
    pub pins: EntryPins,
}

impl PlannedEntry {
    /// The entry as the plan carries it.
    pub fn from_entry(entry: &RegistryEntry) -> PlannedEntry {
        let status = entry.status.clone().unwrap_or_default();
        PlannedEntry {
            name: entry.metadata.name.clone().unwrap_or_default(),
            spec: entry.spec.clone(),
            pins: EntryPins {
                card_sha256: status.card_sha256,
                skills: status.skills,
                tools: status.tools,
                resolved_addresses: status.resolved_addresses,
            },
        }
    }

    /// The entry as a [`RegistryEntry`] (name and spec; no status): what the validator's
    /// registry view and the runner's builders read.
    pub fn to_entry(&self) -> RegistryEntry {
        RegistryEntry::new(&self.name, self.spec.clone())
    }
}

/// The compiled plan a runner pod executes (`plan.json` of the plan Secret): the composition
/// snapshot at its revision and its plan, the entries it uses with their pins, the deployment's
/// limits, and where the sidecar is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanDocument {
    /// [`PLAN_DOCUMENT_VERSION`].
    pub version: u32,
    /// The run.
    pub run: RunIdentity,
    /// Which composition, revision and digest this is.
    pub composition: RanComposition,
    /// The composition spec (run budget overrides applied).
    pub spec: CompositionSpec,
    /// Its plan (`crds::plan::plan` of the spec, the entries and the limits).
    pub plan: Plan,
    /// The entries the plan uses, by name order.
    pub entries: Vec<PlannedEntry>,
    /// The deployment's limits the plan was built under.
    pub limits: DeploymentLimits,
    /// Whether content is captured in trace events.
    pub capture_content: bool,
    /// Where the runner posts trace events.
    pub sidecar_url: String,
    /// Seconds an approval may wait.
    pub approval_timeout_seconds: u64,
    /// Seconds the runner, once its run has ended (its summary written), keeps trying to give
    /// the sidecar every event and approval settlement it does not have yet: a sidecar that is
    /// down or unreachable for a while (restarting, its Service without a ready endpoint, its
    /// database restarting) still gets the whole trace. The operator sets it within the pod's
    /// deadline margin; absent (a plan written before it was added), 30 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_seconds: Option<u64>,
}

/// The entries a plan uses: every node's model and every tool's entry.
pub fn plan_entry_names(plan: &Plan) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for node in &plan.nodes {
        names.extend(node.model.iter().cloned());
        names.extend(node.tools.iter().map(|t| t.entry.clone()));
    }
    names
}

/// The summary a runner writes as its pod's termination message: the `run.end` event (as a
/// whole trace event or its body alone, one JSON line, without the output text so it stays
/// under the kubelet's 4096-byte cap).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    /// How the run ended.
    pub outcome: Outcome,
    /// Why, when it did not succeed.
    pub error: Option<RunError>,
    /// What it used.
    pub totals: RunTotals,
    /// Trace events dropped past the per-run cap.
    pub dropped: u64,
}

impl RunSummary {
    /// The summary as the runner writes it: one `run.end` body, one JSON line, without the
    /// output text (what [`parse_summary`] reads).
    pub fn to_line(&self, output_size: usize) -> String {
        let body = EventBody::RunEnd {
            outcome: self.outcome,
            error: self.error.clone(),
            totals: self.totals.clone(),
            dropped: self.dropped,
            output_size,
            output: None,
        };
        // An enum of plain data always serializes; an empty line would read as "no summary".
        serde_json::to_string(&body).unwrap_or_default()
    }
}

/// Reads a termination message: the last non-empty line that is a `run.end` event. `None`
/// for anything else (an empty file, a crash's stack trace, a message cut by the kubelet).
pub fn parse_summary(message: &str) -> Option<RunSummary> {
    message
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .find_map(|line| match serde_json::from_str::<EventBody>(line).ok()? {
            EventBody::RunEnd {
                outcome,
                error,
                totals,
                dropped,
                ..
            } => Some(RunSummary {
                outcome,
                error,
                totals,
                dropped,
            }),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;

    #[test]
    fn a_summary_written_as_a_line_reads_back_the_same() {
        let summary = RunSummary {
            outcome: Outcome::Failed,
            error: Some(RunError {
                node: Some("write".into()),
                message: "the model said no".into(),
            }),
            totals: RunTotals {
                tokens: 12,
                tool_calls: 1,
                ..RunTotals::default()
            },
            dropped: 3,
        };
        let line = summary.to_line(0);
        assert!(!line.contains('\n'), "one line: {line}");
        assert_eq!(parse_summary(&line), Some(summary));
    }
}
