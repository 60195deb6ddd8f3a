//! The kstatus conditions every kind carries (`Ready`, `Reconciling`, `Stalled`), so Flux health
//! checks and `kubectl wait --for=condition=Ready` work without custom code. `Reconciling` and
//! `Stalled` are "abnormal-true": present only while true, as kstatus recommends.

use k8s_openapi::jiff::Timestamp;
use orrery_crds::common::{Condition, ConditionStatus, set_condition};
use orrery_crds::conditions::{READY, RECONCILING, STALLED};

/// Where an object stands, for GitOps tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// Reconciled and usable: `Ready=True`.
    Ready {
        /// CamelCase reason (a `crds::conditions::reasons` constant).
        reason: &'static str,
        /// What a person reads.
        message: String,
    },
    /// The controller is working towards the desired state: `Ready=Unknown`,
    /// `Reconciling=True`.
    Reconciling {
        /// CamelCase reason.
        reason: &'static str,
        /// What a person reads.
        message: String,
    },
    /// Nothing will change without a change to the object: `Ready=False`, `Stalled=True`.
    Stalled {
        /// CamelCase reason.
        reason: &'static str,
        /// What a person reads.
        message: String,
    },
}

/// A timestamp as Kubernetes writes `metav1.Time`: RFC 3339, UTC, whole seconds.
pub fn rfc3339(now: Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A condition set at `now` for `generation`.
pub fn condition(
    r#type: &str,
    status: ConditionStatus,
    reason: &str,
    message: impl Into<String>,
    generation: Option<i64>,
    now: Timestamp,
) -> Condition {
    Condition {
        r#type: r#type.to_owned(),
        status,
        last_transition_time: Some(rfc3339(now)),
        observed_generation: generation,
        reason: reason.to_owned(),
        message: message.into(),
    }
}

/// Sets `Ready` and adds or removes `Reconciling`/`Stalled` for `health`, keeping each
/// condition's `lastTransitionTime` when its status does not change. Returns true when
/// anything changed.
pub fn set_health(
    conditions: &mut Vec<Condition>,
    health: &Health,
    generation: Option<i64>,
    now: Timestamp,
) -> bool {
    let (ready, reason, message, abnormal) = match health {
        Health::Ready { reason, message } => (ConditionStatus::True, reason, message, None),
        Health::Reconciling { reason, message } => {
            (ConditionStatus::Unknown, reason, message, Some(RECONCILING))
        }
        Health::Stalled { reason, message } => {
            (ConditionStatus::False, reason, message, Some(STALLED))
        }
    };
    let mut changed = set_condition(
        conditions,
        condition(READY, ready, reason, message.clone(), generation, now),
    );
    for kind in [RECONCILING, STALLED] {
        if Some(kind) == abnormal {
            changed |= set_condition(
                conditions,
                condition(
                    kind,
                    ConditionStatus::True,
                    reason,
                    message.clone(),
                    generation,
                    now,
                ),
            );
        } else {
            let before = conditions.len();
            conditions.retain(|c| c.r#type != kind);
            changed |= conditions.len() != before;
        }
    }
    changed
}

/// The condition of `type` in a list.
pub fn find<'a>(conditions: &'a [Condition], r#type: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.r#type == r#type)
}

#[cfg(test)]
mod tests {
    use super::*;
    use orrery_crds::conditions::reasons;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn statuses(list: &[Condition]) -> Vec<(String, ConditionStatus)> {
        list.iter().map(|c| (c.r#type.clone(), c.status)).collect()
    }

    #[test]
    fn each_health_sets_ready_and_only_its_abnormal_condition() {
        let msg = String::new;
        let cases = [
            (
                Health::Ready {
                    reason: reasons::VALID,
                    message: msg(),
                },
                vec![(READY, ConditionStatus::True)],
            ),
            (
                Health::Reconciling {
                    reason: reasons::PROGRESSING,
                    message: msg(),
                },
                vec![
                    (READY, ConditionStatus::Unknown),
                    (RECONCILING, ConditionStatus::True),
                ],
            ),
            (
                Health::Stalled {
                    reason: reasons::INVALID,
                    message: msg(),
                },
                vec![
                    (READY, ConditionStatus::False),
                    (STALLED, ConditionStatus::True),
                ],
            ),
        ];
        for (health, want) in cases {
            // From every other state, so a leftover abnormal condition would show.
            for from in [
                Health::Reconciling {
                    reason: reasons::PROGRESSING,
                    message: msg(),
                },
                Health::Stalled {
                    reason: reasons::INVALID,
                    message: msg(),
                },
            ] {
                let mut list = Vec::new();
                set_health(&mut list, &from, Some(1), at(0));
                set_health(&mut list, &health, Some(2), at(1));
                let want: Vec<(String, ConditionStatus)> =
                    want.iter().map(|(t, s)| ((*t).to_owned(), *s)).collect();
                assert_eq!(statuses(&list), want, "{health:?} after {from:?}");
                assert!(list.iter().all(|c| c.observed_generation == Some(2)));
            }
        }
    }

    #[test]
    fn ready_keeps_its_transition_time_while_its_status_holds() {
        let mut list = Vec::new();
        let ready = |m: &str| Health::Ready {
            reason: reasons::VALID,
            message: m.into(),
        };
        assert!(set_health(&mut list, &ready("a"), Some(1), at(0)));
        assert!(set_health(&mut list, &ready("b"), Some(2), at(60)));
        assert_eq!(
            find(&list, READY).and_then(|c| c.last_transition_time.clone()),
            Some(rfc3339(at(0)))
        );
        assert!(
            !set_health(&mut list, &ready("b"), Some(2), at(120)),
            "nothing changed"
        );
    }

    #[test]
    fn timestamps_are_whole_seconds_in_utc() {
        let ts = Timestamp::from_millisecond(1_700_000_000_123).unwrap_or(Timestamp::UNIX_EPOCH);
        assert_eq!(rfc3339(ts), "2023-11-14T22:13:20Z");
    }
}
