//! What a run needs of the cluster beyond its own objects (fault case 16). First, the
//! admission policies a deployment relies on (config `admissionPolicies`): the
//! ValidatingAdmissionPolicies that check who may create a run and who may append a decision
//! to `status.decisions`, and the bindings that make them act (fault case 16, attack 46).
//! Without them a `kubectl patch` of a run's status is not checked at all, so before a run that
//! can ask a person starts, the operator reads each policy and binding (a look is reused for a
//! few seconds); while one is missing, or a binding no longer denies, the run waits `Pending`
//! with reason `AdmissionPolicyMissing` naming it, and starts on its own once it is back. The
//! policies are also looked at when the controller starts and every minute after, and each
//! change is logged. Second, the kinds of `studio.orrery.dev`: when a list of one answers 404,
//! API discovery says which CRDs are gone, and the run waits `Pending` with reason
//! `CustomResourceDefinitionMissing` naming them until they are installed again.

use super::reconcile::RunContext;
use kube::Client;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long one look at the policies is reused.
const FRESH_FOR: Duration = Duration::from_secs(5);

/// The last look at the policies: when, and what was missing (empty: all in place).
#[derive(Default)]
pub(super) struct PolicyLook {
    last: Mutex<Option<(Instant, Vec<String>)>>,
}

impl RunContext {
    /// What of the configured admission policies is missing, each named with what is wrong;
    /// empty when all are in place (or none is configured).
    pub(super) async fn missing_policies(&self) -> Vec<String> {
        let wanted = &self.base.config.admission_policies;
        if wanted.is_empty() {
            return Vec::new();
        }
        if let Ok(last) = self.policies.last.lock()
            && let Some((at, missing)) = last.as_ref()
            && at.elapsed() < FRESH_FOR
        {
            return missing.clone();
        }
        let missing = crate::admission_policies::look(&self.base.client, wanted).await;
        if let Ok(mut last) = self.policies.last.lock() {
            let before = last.as_ref().map(|(_, m)| m.clone());
            if before.as_ref() != Some(&missing) {
                if missing.is_empty() {
                    tracing::info!("the admission policies are all in place");
                } else {
                    tracing::warn!(
                        missing = %missing.join("; "),
                        "admission policies missing: runs that can ask a person wait until they are back"
                    );
                }
            }
            *last = Some((Instant::now(), missing.clone()));
        }
        self.base.metrics.set_policies_missing(missing.len());
        missing
    }
}

/// Looks at the policies when the controller starts and then every [`WATCH_EVERY`] (or
/// `resyncSeconds`, if longer), so a missing one is logged and counted in
/// `orrery_admission_policies_missing` even while no run waits for it; ends with the
/// controller (its context dropped).
pub(super) async fn watch_policies(ctx: std::sync::Weak<RunContext>) {
    loop {
        let every = match ctx.upgrade() {
            Some(ctx) => {
                ctx.missing_policies().await;
                WATCH_EVERY.max(Duration::from_secs(ctx.base.config.resync_seconds))
            }
            None => return,
        };
        tokio::time::sleep(every).await;
    }
}

/// How often the policies are looked at with no run asking.
const WATCH_EVERY: Duration = Duration::from_secs(60);

/// The message of a run that waits for the policies.
pub(super) fn waiting_message(asks: &[String], missing: &[String]) -> String {
    format!(
        "the run can ask a person ({}), but the admission policies that check decisions written to status.decisions are not all in place: {}. A decision made by kubectl patch would go unchecked, so the run waits until they are back: upgrade the release (helm upgrade) or apply them again",
        asks.join(" and "),
        missing.join("; ")
    )
}

/// The kinds of `studio.orrery.dev/v1alpha1` this operator needs.
const KINDS: [&str; 3] = ["compositions", "registryentries", "studioruns"];

/// The kinds of [`KINDS`] the API server does not serve now (their CRDs deleted), as
/// `<plural>.studio.orrery.dev`; empty when all are served or discovery cannot tell.
pub(super) async fn kinds_not_served(client: &Client) -> Vec<String> {
    let served: Vec<String> = match client
        .list_api_group_resources("studio.orrery.dev/v1alpha1")
        .await
    {
        Ok(list) => list.resources.into_iter().map(|r| r.name).collect(),
        // The whole group is gone: no kind of it is served.
        Err(kube::Error::Api(s)) if s.code == 404 => Vec::new(),
        Err(e) => {
            tracing::warn!("API discovery of studio.orrery.dev/v1alpha1: {e}");
            return Vec::new();
        }
    };
    not_served(&served)
}

fn not_served(served: &[String]) -> Vec<String> {
    KINDS
        .iter()
        .filter(|k| !served.iter().any(|s| s == *k))
        .map(|k| format!("{k}.studio.orrery.dev"))
        .collect()
}

/// The message of a run that waits for CRDs.
pub(super) fn kinds_message(missing: &[String]) -> String {
    format!(
        "the API server does not serve {} (the CustomResourceDefinition was deleted, and every object of that kind with it); the run waits until it is installed again: upgrade the release (helm upgrade), or kubectl apply -f charts/orrery/crds/, then recreate the objects it needs",
        missing.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kinds_not_served_are_named_by_their_resource() {
        let served = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert!(
            not_served(&served(&[
                "compositions",
                "compositions/status",
                "registryentries",
                "studioruns"
            ]))
            .is_empty()
        );
        assert_eq!(
            not_served(&served(&[
                "compositions",
                "studioruns",
                "studioruns/status"
            ])),
            ["registryentries.studio.orrery.dev"]
        );
        assert_eq!(not_served(&[]).len(), 3);
        let m = kinds_message(&["registryentries.studio.orrery.dev".into()]);
        assert!(
            m.contains("registryentries.studio.orrery.dev") && m.contains("helm upgrade"),
            "{m}"
        );
    }

    #[test]
    fn the_waiting_message_names_what_asks_and_what_is_missing_and_the_fix() {
        let m = waiting_message(
            &["HumanApproval node(s) review".into()],
            &["ValidatingAdmissionPolicyBinding b is missing".into()],
        );
        for part in ["review", "b is missing", "kubectl patch", "helm upgrade"] {
            assert!(m.contains(part), "{m}");
        }
    }
}
