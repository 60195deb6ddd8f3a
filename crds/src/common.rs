//! Types shared by the three resources: conditions, validation issues, secret references.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The API group of every Orrery Studio resource.
pub const GROUP: &str = "studio.orrery.dev";
/// The API version of every Orrery Studio resource.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` as written in manifests.
pub const API_VERSION: &str = "studio.orrery.dev/v1alpha1";

/// A standard Kubernetes condition (the shape of `metav1.Condition`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Type of condition in CamelCase, e.g. `Valid`, `Ready`, `Pinned`, `Succeeded`.
    pub r#type: String,
    /// Status of the condition: `True`, `False` or `Unknown`.
    pub status: ConditionStatus,
    /// The last time the condition's status changed (RFC 3339). Kept when only the reason or
    /// message changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// The `.metadata.generation` the condition was set for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// A CamelCase, machine-readable reason for the condition's last transition.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// A human-readable message with details about the transition.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// Status of a condition.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// It is not known yet whether the condition holds.
    Unknown,
}

/// One element of a field path: an object key or a list index.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(untagged)]
pub enum PathSegment {
    /// A list index.
    Index(usize),
    /// An object key, in the resource's own camelCase.
    Key(String),
}

impl JsonSchema for PathSegment {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PathSegment".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An object key or a list index.",
            "x-kubernetes-int-or-string": true
        })
    }
    fn inline_schema() -> bool {
        true
    }
}

impl From<&str> for PathSegment {
    fn from(value: &str) -> Self {
        PathSegment::Key(value.to_owned())
    }
}

impl From<usize> for PathSegment {
    fn from(value: usize) -> Self {
        PathSegment::Index(value)
    }
}

/// A field path such as `["spec","nodes",1,"tools",0]`.
pub type Loc = Vec<PathSegment>;

/// Renders a field path the way `kubectl explain` reads it: `spec.nodes[1].tools[0]`.
pub fn loc_to_string(loc: &[PathSegment]) -> String {
    let mut out = String::new();
    for seg in loc {
        match seg {
            PathSegment::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
            PathSegment::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
        }
    }
    out
}

/// Builds a [`Loc`] from a list of keys and indexes: `loc!["spec", "nodes", 1]`.
#[macro_export]
macro_rules! loc {
    ($($seg:expr),* $(,)?) => {
        vec![$($crate::common::PathSegment::from($seg)),*]
    };
}

/// Whether a validation finding refuses the resource or only warns.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum Severity {
    /// The composition cannot run.
    Error,
    /// The composition runs, but probably not as its author meant.
    Warning,
}

/// One problem the validator found, at the field that caused it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidationIssue {
    /// Path of the offending field in the resource's own camelCase, e.g.
    /// `["spec","nodes",1,"tools",0]`.
    pub loc: Loc,
    /// The same path as text, e.g. `spec.nodes[1].tools[0]`.
    #[serde(default)]
    pub field: String,
    /// Machine-readable code (the seeds' codes, e.g. `unknown_tool`, `unbounded_cycle`).
    pub code: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for ValidationIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.field, self.message, self.code)
    }
}

/// A reference to one key of a Secret in the resource's own namespace. The value is never
/// stored in a resource.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretKeyRef {
    /// Name of the Secret, in the same namespace.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Key inside the Secret's data.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// A reference to one key of a ConfigMap in the resource's own namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigMapKeyRef {
    /// Name of the ConfigMap, in the same namespace.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Key inside the ConfigMap's data.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// Credentials sent to an entry's own origin only.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BearerAuth {
    /// The Secret key holding the bearer token sent as `Authorization: Bearer …`.
    pub secret_key_ref: SecretKeyRef,
}

impl BearerAuth {
    /// A bearer token read from key `key` of Secret `name`.
    pub fn from_secret(name: &str, key: &str) -> Self {
        BearerAuth {
            secret_key_ref: SecretKeyRef {
                name: name.to_owned(),
                key: key.to_owned(),
            },
        }
    }
}

/// Sets or replaces a condition by type, keeping `lastTransitionTime` when the status did not
/// change. Returns true when anything changed.
pub fn set_condition(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    if let Some(existing) = conditions.iter_mut().find(|c| c.r#type == new.r#type) {
        let mut updated = new;
        if existing.status == updated.status {
            updated.last_transition_time = existing.last_transition_time.clone();
        }
        if *existing == updated {
            return false;
        }
        *existing = updated;
        true
    } else {
        conditions.push(new);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(status: ConditionStatus, time: &str, reason: &str) -> Condition {
        Condition {
            r#type: crate::conditions::VALID.into(),
            status,
            last_transition_time: Some(time.into()),
            observed_generation: Some(1),
            reason: reason.into(),
            message: String::new(),
        }
    }

    #[test]
    fn a_loc_renders_as_a_kubectl_style_path() {
        let loc: Loc = loc!["spec", "nodes", 1usize, "tools", 0usize];
        assert_eq!(loc_to_string(&loc), "spec.nodes[1].tools[0]");
    }

    #[test]
    fn a_loc_serializes_as_a_mixed_json_array() {
        let loc: Loc = loc!["spec", "nodes", 1usize];
        assert_eq!(
            serde_json::to_string(&loc).ok().as_deref(),
            Some(r#"["spec","nodes",1]"#)
        );
    }

    #[test]
    fn a_condition_keeps_its_transition_time_when_only_the_reason_changes() {
        let mut list = vec![cond(ConditionStatus::True, "t1", "A")];
        assert!(set_condition(
            &mut list,
            cond(ConditionStatus::True, "t2", "B")
        ));
        assert_eq!(list[0].last_transition_time.as_deref(), Some("t1"));
        assert_eq!(list[0].reason, "B");
    }

    #[test]
    fn a_condition_takes_a_new_transition_time_when_its_status_flips() {
        let mut list = vec![cond(ConditionStatus::True, "t1", "A")];
        assert!(set_condition(
            &mut list,
            cond(ConditionStatus::False, "t2", "A")
        ));
        assert_eq!(list[0].last_transition_time.as_deref(), Some("t2"));
    }

    #[test]
    fn setting_the_same_condition_twice_changes_nothing() {
        let mut list = vec![cond(ConditionStatus::True, "t1", "A")];
        assert!(!set_condition(
            &mut list,
            cond(ConditionStatus::True, "t9", "A")
        ));
    }
}
