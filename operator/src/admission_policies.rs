//! Whether the admission policies a deployment relies on (config `admissionPolicies`) are in
//! place: each ValidatingAdmissionPolicy and its binding read by name, a binding that binds
//! another policy or does not `Deny` counted as missing (attack 46, fault case 16). The StudioRun
//! controller holds runs that can ask a person while one is missing (`run::policies`); the
//! sidecar honours a decision written to a run's status by hand only while all are in place
//! (`sidecar::relay`). Shared by both, owned by neither.

use crate::config::AdmissionPolicyRef;
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use kube::{Api, Client};

/// What one look at the policies found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Looked {
    /// What is missing or wrong, each named (empty: all in place). A policy the operator may
    /// not read (403) is counted here: it cannot be shown to be there.
    pub missing: Vec<String>,
    /// Reads that failed for a passing reason (the API server unreachable, a 5xx, a
    /// timeout): what was not seen cannot be said to be in place or gone.
    pub unread: Vec<String>,
}

/// Reads each policy and binding of `wanted`: what is missing, each named with what is wrong
/// (empty: all in place), and a read that failed for a passing reason counted as missing too.
pub async fn look(client: &Client, wanted: &[AdmissionPolicyRef]) -> Vec<String> {
    let looked = look_closely(client, wanted).await;
    let mut missing = looked.missing;
    missing.extend(looked.unread);
    missing
}

/// [`look`], telling what is missing from what could not be read just now: the sidecar asks it
/// before it relays a decision it did not make itself (`sidecar::relay`), and asks
/// again later rather than refuse a decision for good over a passing error.
pub async fn look_closely(client: &Client, wanted: &[AdmissionPolicyRef]) -> Looked {
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client.clone());
    let mut looked = Looked::default();
    let failed = |looked: &mut Looked, what: String, e: kube::Error, verb: &str| {
        let text = format!("{what} cannot be read ({e}); the operator needs get on {verb}");
        match &e {
            kube::Error::Api(s) if s.code == 401 || s.code == 403 => looked.missing.push(text),
            _ => looked.unread.push(text),
        }
    };
    for want in wanted {
        match policies.get_opt(&want.policy).await {
            Ok(Some(_)) => {}
            Ok(None) => looked.missing.push(format!(
                "ValidatingAdmissionPolicy {} is missing",
                want.policy
            )),
            Err(e) => failed(
                &mut looked,
                format!("ValidatingAdmissionPolicy {}", want.policy),
                e,
                "validatingadmissionpolicies",
            ),
        }
        match bindings.get_opt(&want.binding).await {
            Ok(Some(binding)) => {
                if let Some(why) = binding_problem(&binding, &want.policy) {
                    looked.missing.push(format!(
                        "ValidatingAdmissionPolicyBinding {} {why}",
                        want.binding
                    ));
                }
            }
            Ok(None) => looked.missing.push(format!(
                "ValidatingAdmissionPolicyBinding {} is missing",
                want.binding
            )),
            Err(e) => failed(
                &mut looked,
                format!("ValidatingAdmissionPolicyBinding {}", want.binding),
                e,
                "validatingadmissionpolicybindings",
            ),
        }
    }
    looked
}

/// Why `binding` does not make `policy` refuse what it catches, if it does not: it binds
/// another policy, or its `validationActions` lack `Deny` (`Warn` and `Audit` let the write
/// through).
fn binding_problem(binding: &ValidatingAdmissionPolicyBinding, policy: &str) -> Option<String> {
    let spec = &binding.spec;
    let bound = spec.policy_name.as_str();
    if bound != policy {
        return Some(format!("binds policy {bound:?}, not {policy}"));
    }
    let actions = &spec.validation_actions;
    (!actions.iter().any(|a| a == "Deny")).then(|| {
        format!("does not deny (validationActions {actions:?}): set validationActions to [Deny]")
    })
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(spec: serde_json::Value) -> ValidatingAdmissionPolicyBinding {
        serde_json::from_value(json!({"metadata": {"name": "b"}, "spec": spec}))
            .expect("a test binding")
    }

    #[test]
    fn a_binding_acts_only_when_it_binds_the_policy_and_denies() {
        let cases = [
            (
                json!({"policyName": "p", "validationActions": ["Deny"]}),
                None,
            ),
            (
                json!({"policyName": "p", "validationActions": ["Warn", "Deny"]}),
                None,
            ),
            (
                json!({"policyName": "p", "validationActions": ["Warn", "Audit"]}),
                Some("does not deny"),
            ),
            (json!({"policyName": "p"}), Some("does not deny")),
            (
                json!({"policyName": "other", "validationActions": ["Deny"]}),
                Some("binds policy \"other\""),
            ),
        ];
        for (spec, want) in cases {
            let got = binding_problem(&binding(spec.clone()), "p");
            match want {
                None => assert_eq!(got, None, "{spec}"),
                Some(part) => assert!(
                    got.as_deref().is_some_and(|g| g.contains(part)),
                    "{spec}: {got:?}"
                ),
            }
        }
    }
}
