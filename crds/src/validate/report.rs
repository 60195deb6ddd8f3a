//! Collects findings: one per (code, field), errors and warnings apart.

use crate::common::{Loc, PathSegment, ValidationIssue, loc_to_string};
use crate::validate::Validation;
use std::collections::HashSet;

/// Findings so far.
#[derive(Default)]
pub(crate) struct Report {
    validation: Validation,
    seen: HashSet<(String, Loc)>,
}

impl Report {
    /// Adds an error (a second one with the same code at the same field is dropped).
    pub fn error(&mut self, code: &str, loc: Loc, message: impl Into<String>) {
        if let Some(issue) = self.issue(code, loc, message.into()) {
            self.validation.errors.push(issue);
        }
    }

    /// Adds a warning.
    pub fn warn(&mut self, code: &str, loc: Loc, message: impl Into<String>) {
        if let Some(issue) = self.issue(code, loc, message.into()) {
            self.validation.warnings.push(issue);
        }
    }

    fn issue(&mut self, code: &str, loc: Loc, message: String) -> Option<ValidationIssue> {
        if !self.seen.insert((code.to_owned(), loc.clone())) {
            return None;
        }
        Some(ValidationIssue {
            field: loc_to_string(&loc),
            loc,
            code: code.to_owned(),
            message,
        })
    }

    /// The findings.
    pub fn finish(self) -> Validation {
        self.validation
    }
}

/// `spec.<key>`.
pub(crate) fn spec_loc(key: &str) -> Loc {
    vec![PathSegment::from("spec"), PathSegment::from(key)]
}

/// `spec.nodes[i]`, optionally with more keys.
pub(crate) fn node_loc(i: usize, rest: &[PathSegment]) -> Loc {
    let mut loc = vec![
        PathSegment::from("spec"),
        PathSegment::from("nodes"),
        PathSegment::Index(i),
    ];
    loc.extend_from_slice(rest);
    loc
}

/// `spec.nodes[i].<field>`.
pub(crate) fn node_field(i: usize, field: &str) -> Loc {
    node_loc(i, &[PathSegment::from(field)])
}

/// `spec.nodes[i].<field>[k]`.
pub(crate) fn node_item(i: usize, field: &str, k: usize) -> Loc {
    node_loc(i, &[PathSegment::from(field), PathSegment::Index(k)])
}

/// `spec.edges[j]`, optionally `.field`.
pub(crate) fn edge_loc(j: usize, field: Option<&str>) -> Loc {
    let mut loc = vec![
        PathSegment::from("spec"),
        PathSegment::from("edges"),
        PathSegment::Index(j),
    ];
    if let Some(field) = field {
        loc.push(PathSegment::from(field));
    }
    loc
}

/// `a, b, c` for "use one of" hints (`(none)` when empty).
pub(crate) fn plain_list<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let list: Vec<String> = items.into_iter().map(|s| s.as_ref().to_owned()).collect();
    if list.is_empty() {
        "(none)".to_owned()
    } else {
        list.join(", ")
    }
}
