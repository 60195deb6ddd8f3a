//! The CRD schema's bounds on text lengths and list sizes (`maxLength`, `maxItems`, `minItems`),
//! checked here too, so `orrery validate` never says valid for what the apiserver refuses at
//! apply time (the GitOps promise). The numbers live in [`crate::codes::limits`]; a test keeps
//! them equal to the generated CRD. Node and edge counts, ids, labels, tool references,
//! `maxIterations` and the budgets' minimums are checked by the rules they belong to.

use super::analysis::Analysis;
use super::report::{Report, node_field, node_loc, spec_loc};
use crate::codes::{self, limits};
use crate::common::Loc;

/// Reports text and list bounds.
pub(crate) fn check(a: &Analysis, r: &mut Report) {
    let spec = a.spec;
    if let Some(description) = &spec.description {
        too_long(
            r,
            spec_loc("description"),
            "the composition's description",
            description,
            limits::MAX_DESCRIPTION_CHARS,
        );
    }
    for (i, node) in spec.nodes.iter().enumerate() {
        let what = |field: &str| format!("the {field} of node '{}'", node.id);
        let texts = [
            (
                "description",
                &node.description,
                limits::MAX_DESCRIPTION_CHARS,
            ),
            (
                "instruction",
                &node.instruction,
                limits::MAX_INSTRUCTION_CHARS,
            ),
            ("prompt", &node.prompt, limits::MAX_PROMPT_CHARS),
            ("model", &node.model, limits::MAX_MODEL_NAME_CHARS),
        ];
        for (field, text, max) in texts {
            if let Some(text) = text {
                too_long(r, node_field(i, field), &what(field), text, max);
            }
        }
        too_many(
            r,
            node_field(i, "tools"),
            &format!("node '{}' has {} tools", node.id, node.tools.len()),
            node.tools.len(),
            limits::MAX_TOOLS_PER_NODE,
        );
        too_many(
            r,
            node_field(i, "children"),
            &format!(
                "supervisor '{}' has {} children",
                node.id,
                node.children.len()
            ),
            node.children.len(),
            limits::MAX_CHILDREN,
        );
        if let Some(output) = &node.output {
            let loc = node_loc(i, &["output".into(), "labels".into()]);
            if output.labels.len() < limits::MIN_LABELS {
                r.error(
                    codes::MISSING_FIELD,
                    loc,
                    format!(
                        "node '{}' sets output with no labels; list at least {} label (e.g. labels: [approved, rejected]), or remove output",
                        node.id,
                        limits::MIN_LABELS
                    ),
                );
            } else {
                too_many(
                    r,
                    loc,
                    &format!(
                        "node '{}' has {} output.labels",
                        node.id,
                        output.labels.len()
                    ),
                    output.labels.len(),
                    limits::MAX_LABELS,
                );
            }
        }
    }
}

fn too_long(r: &mut Report, loc: Loc, what: &str, text: &str, max: usize) {
    // The apiserver counts characters (code points), not bytes.
    let chars = text.chars().count();
    if chars > max {
        r.error(
            codes::TEXT_TOO_LONG,
            loc,
            format!(
                "{what} is {chars} characters long; the CRD schema allows at most {max}: shorten it"
            ),
        );
    }
}

/// `has` reads e.g. "node 'a' has 33 tools".
fn too_many(r: &mut Report, loc: Loc, has: &str, count: usize, max: usize) {
    if count > max {
        r.error(
            codes::TOO_MANY_ITEMS,
            loc,
            format!("{has}; the CRD schema allows at most {max}: remove some"),
        );
    }
}
