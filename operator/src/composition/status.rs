//! A Composition's status from the one validator's answer: the `Valid` condition, the errors
//! and warnings at their fields, the spec digest, the revision and the kstatus conditions.

use crate::error::Result;
use crate::kstatus::{self, Health};
use crate::revisions::spec_digest;
use k8s_openapi::jiff::Timestamp;
use orrery_crds::common::{ConditionStatus, ValidationIssue, set_condition};
use orrery_crds::conditions::{VALID, reasons};
use orrery_crds::validate::Validation;
use orrery_crds::{Composition, CompositionStatus};

/// At most this many errors (and as many warnings) go into a status, so its size stays
/// bounded; the `Valid` message says how many there were.
pub const MAX_ISSUES_IN_STATUS: usize = 100;

/// The status of `composition` after validating its current spec. `revision` is the revision
/// recorded for this generation (`None` while it is not yet stored: the composition is then
/// still reconciling). Conditions keep their `lastTransitionTime` while their status holds.
pub fn composition_status(
    composition: &Composition,
    validation: &Validation,
    revision: Option<i64>,
    now: Timestamp,
) -> Result<CompositionStatus> {
    let generation = composition.metadata.generation;
    let mut status = composition.status.clone().unwrap_or_default();
    let valid = validation.is_valid();
    let errors = validation.errors.len();
    let warnings = validation.warnings.len();
    let message = if valid {
        match warnings {
            0 => "the composition is valid".to_owned(),
            n => format!("the composition is valid, with {n} warning(s) in status.warnings"),
        }
    } else {
        let first = validation
            .errors
            .first()
            .map(ValidationIssue::to_string)
            .unwrap_or_default();
        let shown = if errors > MAX_ISSUES_IN_STATUS {
            format!(" (the first {MAX_ISSUES_IN_STATUS} are in status.errors)")
        } else {
            " (all in status.errors)".to_owned()
        };
        format!("{errors} error(s){shown}; the first: {first}")
    };
    set_condition(
        &mut status.conditions,
        kstatus::condition(
            VALID,
            if valid {
                ConditionStatus::True
            } else {
                ConditionStatus::False
            },
            if valid {
                reasons::VALID
            } else {
                reasons::INVALID
            },
            message.clone(),
            generation,
            now,
        ),
    );
    let health = match (valid, revision) {
        (false, _) => Health::Stalled {
            reason: reasons::INVALID,
            message,
        },
        (true, None) => Health::Reconciling {
            reason: reasons::PROGRESSING,
            message: "the composition is valid; its revision is being recorded".to_owned(),
        },
        (true, Some(r)) => Health::Ready {
            reason: reasons::VALID,
            message: format!("{message}; revision {r} is current"),
        },
    };
    kstatus::set_health(&mut status.conditions, &health, generation, now);
    status.observed_generation = generation;
    status.errors = validation
        .errors
        .iter()
        .take(MAX_ISSUES_IN_STATUS)
        .cloned()
        .collect();
    status.warnings = validation
        .warnings
        .iter()
        .take(MAX_ISSUES_IN_STATUS)
        .cloned()
        .collect();
    status.spec_digest = Some(spec_digest(&composition.spec)?);
    status.revision = revision;
    status.node_count = i64::try_from(composition.spec.nodes.len()).ok();
    Ok(status)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use crate::kstatus::find;
    use orrery_crds::CompositionSpec;
    use orrery_crds::conditions::{READY, RECONCILING, STALLED};

    fn spec(yaml: &str) -> CompositionSpec {
        serde_yaml::from_str(yaml).expect("a composition spec")
    }

    const PIPELINE: &str = "
pattern: Pipeline
nodes:
  - {id: a, kind: LLMAgent, model: m, instruction: do}
  - {id: b, kind: LLMAgent, model: m, instruction: do}
edges:
  - {from: a, to: b}
";

    fn composition(yaml: &str, generation: i64) -> Composition {
        let mut c = Composition::new("notes", spec(yaml));
        c.metadata.generation = Some(generation);
        c
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn issue(code: &str) -> ValidationIssue {
        ValidationIssue {
            loc: orrery_crds::loc!["spec", "nodes", 0usize],
            field: "spec.nodes[0]".into(),
            code: code.into(),
            message: "broken".into(),
        }
    }

    #[test]
    fn the_digest_ignores_key_order_and_layout_but_not_values() {
        let same = spec(
            "{edges: [{to: b, from: a}], nodes: [{kind: LLMAgent, id: a, instruction: do, model: m}, {id: b, kind: LLMAgent, model: m, instruction: do}], pattern: Pipeline}",
        );
        let a = spec_digest(&spec(PIPELINE)).expect("digest");
        assert_eq!(a.len(), 64);
        assert_eq!(spec_digest(&same).expect("digest"), a);
        let other = spec(&PIPELINE.replace(
            "instruction: do}\n  - {id: b",
            "instruction: done}\n  - {id: b",
        ));
        assert_ne!(spec_digest(&other).expect("digest"), a);
    }

    #[test]
    fn status_follows_the_validation_for_each_outcome() {
        let valid = Validation::default();
        let warned = Validation {
            errors: vec![],
            warnings: vec![issue("label_ends_run")],
        };
        let invalid = Validation {
            errors: vec![issue("unknown_tool"), issue("unbounded_cycle")],
            warnings: vec![],
        };
        // (validation, revision, Valid, Ready, abnormal condition present)
        let cases = [
            (
                &valid,
                Some(3),
                ConditionStatus::True,
                ConditionStatus::True,
                None,
            ),
            (
                &warned,
                Some(3),
                ConditionStatus::True,
                ConditionStatus::True,
                None,
            ),
            (
                &valid,
                None,
                ConditionStatus::True,
                ConditionStatus::Unknown,
                Some(RECONCILING),
            ),
            (
                &invalid,
                Some(3),
                ConditionStatus::False,
                ConditionStatus::False,
                Some(STALLED),
            ),
        ];
        for (validation, revision, want_valid, want_ready, abnormal) in cases {
            let c = composition(PIPELINE, 3);
            let status = composition_status(&c, validation, revision, at(0)).expect("status");
            let of = |t| find(&status.conditions, t).map(|c| c.status);
            assert_eq!(of(VALID), Some(want_valid), "{validation:?}");
            assert_eq!(of(READY), Some(want_ready), "{validation:?}");
            for t in [RECONCILING, STALLED] {
                assert_eq!(
                    of(t).is_some(),
                    abnormal == Some(t),
                    "{t} for {validation:?}"
                );
            }
            assert!(
                status
                    .conditions
                    .iter()
                    .all(|c| c.observed_generation == Some(3))
            );
            assert_eq!(status.observed_generation, Some(3));
            assert_eq!(status.errors, validation.errors);
            assert_eq!(status.warnings, validation.warnings);
            assert_eq!(status.revision, revision);
            assert_eq!(status.node_count, Some(2));
            assert_eq!(status.spec_digest, spec_digest(&c.spec).ok());
        }
    }

    #[test]
    fn the_invalid_message_counts_the_errors_and_names_the_first() {
        let invalid = Validation {
            errors: vec![issue("unknown_tool"), issue("unbounded_cycle")],
            warnings: vec![],
        };
        let status = composition_status(&composition(PIPELINE, 1), &invalid, Some(1), at(0))
            .expect("status");
        let message = find(&status.conditions, VALID)
            .map(|c| c.message.clone())
            .unwrap_or_default();
        assert!(message.starts_with("2 error(s)"), "{message}");
        assert!(
            message.contains("spec.nodes[0]: broken (unknown_tool)"),
            "{message}"
        );
        assert_eq!(
            find(&status.conditions, VALID).map(|c| c.reason.as_str()),
            Some(reasons::INVALID)
        );
    }

    #[test]
    fn the_status_keeps_at_most_the_cap_of_errors() {
        let many = Validation {
            errors: (0..MAX_ISSUES_IN_STATUS + 5)
                .map(|_| issue("unknown_tool"))
                .collect(),
            warnings: vec![],
        };
        let status =
            composition_status(&composition(PIPELINE, 1), &many, Some(1), at(0)).expect("status");
        assert_eq!(status.errors.len(), MAX_ISSUES_IN_STATUS);
        let message = find(&status.conditions, VALID)
            .map(|c| c.message.clone())
            .unwrap_or_default();
        assert!(
            message.starts_with(&format!(
                "{} error(s) (the first {MAX_ISSUES_IN_STATUS}",
                MAX_ISSUES_IN_STATUS + 5
            )),
            "{message}"
        );
    }

    #[test]
    fn a_new_generation_with_the_same_verdict_keeps_the_transition_time() {
        let mut c = composition(PIPELINE, 1);
        c.status =
            Some(composition_status(&c, &Validation::default(), Some(1), at(0)).expect("status"));
        c.metadata.generation = Some(2);
        let status =
            composition_status(&c, &Validation::default(), Some(2), at(90)).expect("status");
        let valid = find(&status.conditions, VALID).expect("Valid");
        assert_eq!(valid.last_transition_time, Some(kstatus::rfc3339(at(0))));
        assert_eq!(valid.observed_generation, Some(2));
        let broken = Validation {
            errors: vec![issue("unknown_tool")],
            warnings: vec![],
        };
        c.status = Some(status);
        let status = composition_status(&c, &broken, Some(2), at(120)).expect("status");
        let valid = find(&status.conditions, VALID).expect("Valid");
        assert_eq!(valid.last_transition_time, Some(kstatus::rfc3339(at(120))));
    }
}
