//! Models and budgets (seed rules 1.30, 1.56, 1.61, 2.29–2.30): a model-calling node runs its
//! own `model` (a model entry the deployment allows, no fallback), or the deployment's default,
//! or the only usable model entry; budgets stay within the deployment's ceilings.

use super::analysis::Analysis;
use super::report::{Report, node_field, plain_list};
use crate::budget::BudgetKey;
use crate::codes;
use crate::common::PathSegment;
use crate::composition::Node;
use crate::registry::EntryKind;
use crate::validate::{DeploymentLimits, RegistryView};

/// Model entries the deployment allows.
fn usable_models<'r>(registry: &'r RegistryView, limits: &DeploymentLimits) -> Vec<&'r str> {
    registry
        .entries
        .iter()
        .filter(|(name, e)| {
            e.kind() == EntryKind::Model
                && limits
                    .allowed_models
                    .as_ref()
                    .is_none_or(|allowed| allowed.contains(*name))
        })
        .map(|(name, _)| name.as_str())
        .collect()
}

/// The model entry a node runs on: `Ok(None)` for kinds that call no model.
pub(crate) fn resolve_model(
    node: &Node,
    registry: &RegistryView,
    limits: &DeploymentLimits,
) -> Result<Option<String>, (&'static str, String)> {
    if !node.kind.calls_model() {
        return Ok(None);
    }
    let usable = usable_models(registry, limits);
    let choices = plain_list(&usable);
    if let Some(model) = &node.model {
        let is_model = registry
            .entries
            .get(model)
            .is_some_and(|e| e.kind() == EntryKind::Model);
        if !is_model {
            return Err((
                codes::MODEL_NOT_ALLOWED,
                format!(
                    "model '{model}' of node '{}' is not a model entry in the registry; use one of: {choices}",
                    node.id
                ),
            ));
        }
        if !usable.contains(&model.as_str()) {
            return Err((
                codes::MODEL_NOT_ALLOWED,
                format!("model '{model}' is not allowed in this deployment; use one of: {choices}"),
            ));
        }
        return Ok(Some(model.clone()));
    }
    if let Some(default) = &limits.default_model {
        if usable.contains(&default.as_str()) {
            return Ok(Some(default.clone()));
        }
        return Err((
            codes::MODEL_REQUIRED,
            format!(
                "node '{}' names no model, and the deployment's default model '{default}' is not a usable model entry; set model to one of: {choices}",
                node.id
            ),
        ));
    }
    match usable.as_slice() {
        [only] => Ok(Some((*only).to_owned())),
        [] => Err((
            codes::MODEL_REQUIRED,
            format!(
                "node '{}' needs a model, and the registry has no usable model entry; add a RegistryEntry with spec.model and name it here",
                node.id
            ),
        )),
        _ => Err((
            codes::MODEL_REQUIRED,
            format!(
                "node '{}' names no model, and the deployment sets no default; set model to one of: {choices}",
                node.id
            ),
        )),
    }
}

/// Reports model and budget rules.
pub(crate) fn check(
    a: &Analysis,
    registry: &RegistryView,
    limits: &DeploymentLimits,
    r: &mut Report,
) {
    for (i, node) in a.spec.nodes.iter().enumerate() {
        if let Err((code, message)) = resolve_model(node, registry, limits) {
            r.error(code, node_field(i, "model"), message);
        }
    }
    for key in BudgetKey::ALL {
        let Some(value) = a.spec.budgets.get(key) else {
            continue;
        };
        let field = key.as_str();
        let ceiling = limits.ceilings.get(key);
        let loc = vec![
            PathSegment::from("spec"),
            PathSegment::from("budgets"),
            PathSegment::from(field),
        ];
        if value > ceiling {
            r.error(
                codes::BUDGET_OVER_CEILING,
                loc,
                format!(
                    "{field} {value} is over this deployment's ceiling of {ceiling}; lower it, or leave it out to get the ceiling"
                ),
            );
        } else if value < key.minimum() {
            r.error(
                codes::BUDGET_OUT_OF_RANGE,
                loc,
                format!("{field} is {value}, so the run could do nothing; set at least {}, or leave it out to get the ceiling ({ceiling})", key.minimum()),
            );
        }
    }
}
