//! What the sidecar hands back of an object the apiserver holds: the object without its
//! `managedFields` (no reader needs the field sets, and they are most of its size) and, where a
//! client shows who changed what, the managers those fields named: `[{manager, operation,
//! time}]`, once each.

use serde::Serialize;
use serde_json::{Value, json};

/// The object as JSON without `metadata.managedFields`.
pub fn tidy<K: Serialize>(object: &K) -> Value {
    let mut value = serde_json::to_value(object).unwrap_or(Value::Null);
    take_managed_fields(&mut value);
    value
}

/// Removes `metadata.managedFields` from `object` and returns what it held (`[]` when none).
pub fn take_managed_fields(object: &mut Value) -> Vec<Value> {
    object
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|meta| meta.remove("managedFields"))
        .and_then(|fields| match fields {
            Value::Array(entries) => Some(entries),
            _ => None,
        })
        .unwrap_or_default()
}

/// The managers of `managed_fields` (the entries of `metadata.managedFields`), as `[{manager,
/// operation, time}]` in the apiserver's order (an entry without a manager is `""`; without a
/// time, `null`). The field sets are left out.
pub fn managers(managed_fields: &[Value]) -> Vec<Value> {
    managed_fields
        .iter()
        .map(|entry| {
            json!({
                "manager": entry.get("manager").and_then(Value::as_str).unwrap_or_default(),
                "operation": entry.get("operation").and_then(Value::as_str).unwrap_or_default(),
                "time": entry.get("time").cloned().unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// `{object, managers}`: the object without `managedFields`, and the managers they named.
pub fn with_managers(mut object: Value) -> Value {
    let fields = take_managed_fields(&mut object);
    json!({"object": object, "managers": managers(&fields)})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managers_are_listed_once_each_and_the_object_loses_its_field_sets() {
        let object = json!({
            "metadata": {"name": "notes", "resourceVersion": "7", "managedFields": [
                {"manager": "orrery-console", "operation": "Apply", "time": "2026-01-01T00:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}},
                {"manager": "kubectl", "operation": "Update"}
            ]},
            "spec": {"pattern": "Pipeline"}
        });
        let out = with_managers(object);
        assert_eq!(
            out["managers"],
            json!([
                {"manager": "orrery-console", "operation": "Apply", "time": "2026-01-01T00:00:00Z"},
                {"manager": "kubectl", "operation": "Update", "time": null}
            ])
        );
        assert_eq!(
            out["object"],
            json!({"metadata": {"name": "notes", "resourceVersion": "7"}, "spec": {"pattern": "Pipeline"}})
        );
        let mut bare = json!({"metadata": {"name": "x"}});
        assert!(take_managed_fields(&mut bare).is_empty());
        assert_eq!(tidy(&bare), bare);
    }
}
