//! Label selectors (`matchLabels` and `matchExpressions`) against a set of labels, as the API
//! server defines them: every requirement must hold; an empty selector matches everything.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Whether `selector` matches `labels`; an operator other than `In`, `NotIn`, `Exists` and
/// `DoesNotExist` (or `In`/`NotIn` with no values) is an error naming it.
pub fn matches(
    selector: &LabelSelector,
    labels: &BTreeMap<String, String>,
) -> Result<bool, String> {
    validate(selector)?;
    let by_labels = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let by_expressions = selector.match_expressions.iter().flatten().all(|e| {
        let value = labels.get(&e.key);
        let values = e.values.as_deref().unwrap_or_default();
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            _ => value.is_none(), // DoesNotExist (validated above)
        }
    });
    Ok(by_labels && by_expressions)
}

/// Checks the operators and values of `selector`'s expressions.
pub fn validate(selector: &LabelSelector) -> Result<(), String> {
    for e in selector.match_expressions.iter().flatten() {
        let n = e.values.as_ref().map_or(0, Vec::len);
        match e.operator.as_str() {
            "In" | "NotIn" if n == 0 => {
                return Err(format!(
                    "matchExpressions key {:?}: operator {} needs at least one value",
                    e.key, e.operator
                ));
            }
            "Exists" | "DoesNotExist" if n > 0 => {
                return Err(format!(
                    "matchExpressions key {:?}: operator {} takes no values",
                    e.key, e.operator
                ));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => {
                return Err(format!(
                    "matchExpressions key {:?}: unknown operator {other:?} (In, NotIn, Exists, \
                     DoesNotExist)",
                    e.key
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: if values.is_empty() {
                None
            } else {
                Some(values.iter().map(|v| (*v).to_owned()).collect())
            },
        }
    }

    #[test]
    fn selectors_match_labels_as_the_api_server_does() {
        let pod = labels(&[("app", "runner"), ("tier", "agents")]);
        let sel = |ml: &[(&str, &str)], me: Vec<LabelSelectorRequirement>| LabelSelector {
            match_labels: if ml.is_empty() {
                None
            } else {
                Some(labels(ml))
            },
            match_expressions: if me.is_empty() { None } else { Some(me) },
        };
        let cases = [
            (sel(&[], vec![]), true),
            (sel(&[("app", "runner")], vec![]), true),
            (sel(&[("app", "sidecar")], vec![]), false),
            (sel(&[("app", "runner"), ("x", "y")], vec![]), false),
            (sel(&[], vec![expr("tier", "In", &["agents", "web"])]), true),
            (sel(&[], vec![expr("tier", "In", &["web"])]), false),
            (sel(&[], vec![expr("tier", "NotIn", &["web"])]), true),
            (sel(&[], vec![expr("zone", "NotIn", &["a"])]), true),
            (sel(&[], vec![expr("app", "Exists", &[])]), true),
            (sel(&[], vec![expr("zone", "Exists", &[])]), false),
            (sel(&[], vec![expr("zone", "DoesNotExist", &[])]), true),
            (
                sel(&[("app", "runner")], vec![expr("app", "DoesNotExist", &[])]),
                false,
            ),
        ];
        for (i, (selector, want)) in cases.iter().enumerate() {
            assert_eq!(
                matches(selector, &pod).unwrap(),
                *want,
                "case {i}: {selector:?}"
            );
        }
    }

    #[test]
    fn a_bad_operator_or_missing_values_is_an_error_naming_the_key() {
        let bad = [
            expr("app", "Like", &["r"]),
            expr("app", "In", &[]),
            expr("app", "Exists", &["r"]),
        ];
        for e in bad {
            let sel = LabelSelector {
                match_labels: None,
                match_expressions: Some(vec![e]),
            };
            let err = matches(&sel, &BTreeMap::new()).unwrap_err();
            assert!(err.contains("\"app\""), "{err}");
        }
    }
}
