//! A run in a runner pod: the plan document the operator wrote (`plan.json` of the plan
//! Secret, with the run's input next to it), read with a size cap and duplicate keys refused,
//! the composition snapshot validated again with the one validator against the entries the
//! document carries, the pins it carries as the run's only pins ([`FixedPins`]), and what in it
//! asks a person ([`asks_people`]); the sidecar a pod run talks to (its trace events, and the
//! approval relay through which people decide): the plan's `sidecarUrl` (or
//! [`SIDECAR_URL_ENV`]), with the run token of the [`TOKEN_FILE`] next to the plan.

use super::Prepared;
use crate::pin::store::FixedPins;
use orrery_crds::NodeKind;
pub use orrery_crds::plan_document::TOKEN_FILE;
use orrery_crds::plan_document::{INPUT_FILE, PLAN_DOCUMENT_VERSION, PlanDocument};
use orrery_crds::registry::{Effect, RegistryEntry};
use orrery_crds::validate::{RegistryView, validate};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest plan document read (a Secret holds at most 1 MiB).
pub const MAX_PLAN_BYTES: u64 = 1024 * 1024;

/// When set (and not empty), the sidecar URL a pod run posts its events to instead of the
/// plan's `sidecarUrl`: for test and dev setups where the in-cluster Service name does not
/// resolve.
pub const SIDECAR_URL_ENV: &str = "ORRERY_SIDECAR_URL";

/// The largest token file read (a run token is a JWT of a few hundred bytes).
const MAX_TOKEN_BYTES: u64 = 64 * 1024;

/// Why a plan document cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    /// The file could not be read.
    #[error("{}: cannot read the plan: {reason}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The file is over [`MAX_PLAN_BYTES`].
    #[error("{}: the plan is over {max} bytes; a plan Secret holds at most 1 MiB", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The cap.
        max: u64,
    },
    /// Not JSON, or a key twice.
    #[error("{}: the plan is not one JSON document with unique keys: {reason}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        reason: String,
    },
    /// A field is missing or of the wrong type.
    #[error("{}: field `{field}` of the plan: {reason}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// The field's path (`spec.nodes[0].kind`).
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// A version this runner does not read.
    #[error(
        "{}: field `version` of the plan is {found}; this runner reads version {PLAN_DOCUMENT_VERSION} (run the runner image that matches the operator)",
        path.display()
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// The version found.
        found: u32,
    },
    /// The input file next to the plan could not be read.
    #[error("{}: cannot read the run's input: {reason}", path.display())]
    Input {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The token file next to the plan is there but cannot be used (its content is never shown).
    #[error(
        "{}: cannot use the run token: {reason}; the operator writes it as the `token` key of the run's plan Secret",
        path.display()
    )]
    Token {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The composition snapshot does not validate against the entries the plan carries.
    #[error("the plan's composition does not validate: {0}")]
    Invalid(String),
}

/// Reads a plan document: at most [`MAX_PLAN_BYTES`], one JSON value, duplicate keys refused
/// at every depth, a missing or mistyped field named by its path.
pub fn read_plan_document(path: &Path) -> Result<PlanDocument, PlanFileError> {
    let read_error = |e: std::io::Error| PlanFileError::Read {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    file.take(MAX_PLAN_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_PLAN_BYTES {
        return Err(PlanFileError::TooLarge {
            path: path.to_owned(),
            max: MAX_PLAN_BYTES,
        });
    }
    let value =
        orrery_crds::unique_keys::json_from_slice(&bytes).map_err(|e| PlanFileError::Json {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
    let found = value.get("version").and_then(serde_json::Value::as_u64);
    if let Some(found) = found
        && found != u64::from(PLAN_DOCUMENT_VERSION)
    {
        return Err(PlanFileError::Version {
            path: path.to_owned(),
            found: u32::try_from(found).unwrap_or(u32::MAX),
        });
    }
    serde_path_to_error::deserialize(value).map_err(|e| PlanFileError::Field {
        path: path.to_owned(),
        field: e.path().to_string(),
        reason: e.inner().to_string(),
    })
}

/// The run's input: the [`INPUT_FILE`] next to the plan (both keys of the plan Secret).
pub fn read_plan_input(plan: &Path) -> Result<String, PlanFileError> {
    let path = plan
        .parent()
        .map_or_else(|| PathBuf::from(INPUT_FILE), |dir| dir.join(INPUT_FILE));
    std::fs::read_to_string(&path).map_err(|e| PlanFileError::Input {
        path,
        reason: e.to_string(),
    })
}

/// The run token: the [`TOKEN_FILE`] next to the plan, trimmed. `None` when there is no such
/// file (a pod-mode run outside a cluster: events go to standard output only).
pub fn read_plan_token(plan: &Path) -> Result<Option<String>, PlanFileError> {
    let path = plan
        .parent()
        .map_or_else(|| PathBuf::from(TOKEN_FILE), |dir| dir.join(TOKEN_FILE));
    let failed = |reason: String| PlanFileError::Token {
        path: path.clone(),
        reason,
    };
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(failed(e.to_string())),
    };
    let mut text = String::new();
    file.take(MAX_TOKEN_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| failed(e.to_string()))?;
    if text.len() as u64 > MAX_TOKEN_BYTES {
        return Err(failed(format!("the file is over {MAX_TOKEN_BYTES} bytes")));
    }
    let token = text.trim();
    if token.is_empty() {
        return Err(failed("the file is empty".into()));
    }
    Ok(Some(token.to_owned()))
}

/// Where a pod run posts its events: [`SIDECAR_URL_ENV`] when set, else the plan's
/// `sidecarUrl`.
pub fn sidecar_url(document: &PlanDocument) -> String {
    match std::env::var(SIDECAR_URL_ENV) {
        Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
        _ => document.sidecar_url.clone(),
    }
}

/// The document's composition, validated again with the one validator against the entries
/// and limits it carries, ready to run on the document's plan.
pub fn prepare_document(document: &PlanDocument) -> Result<Prepared, PlanFileError> {
    let entries: BTreeMap<String, RegistryEntry> = document
        .entries
        .iter()
        .map(|e| (e.name.clone(), e.to_entry()))
        .collect();
    let view = RegistryView::from_entries(entries.values());
    let validation = validate(&document.spec, &view, &document.limits);
    if !validation.is_valid() {
        let errors: Vec<String> = validation.errors.iter().map(ToString::to_string).collect();
        return Err(PlanFileError::Invalid(errors.join("; ")));
    }
    Ok(Prepared {
        name: document.composition.name.clone(),
        pattern: document.spec.pattern.as_str().to_owned(),
        plan: document.plan.clone(),
        entries,
        warnings: validation.warnings,
    })
}

/// The pins the document carries, the run's only pins: a card or tool without one, or that
/// differs from it, is refused.
pub fn document_pins(document: &PlanDocument) -> FixedPins {
    FixedPins::from_plan_entries(&document.entries)
}

/// What in a run asks a person (its HumanApproval nodes, its acting remotes, whose every call a
/// person confirms, and its other A2A remotes, which may ask a question), named; empty when
/// nothing does. A pod run asks through the sidecar's relay; without a run token nobody can be
/// asked, and the runner says so with these names.
pub fn asks_people(prepared: &Prepared) -> Vec<String> {
    let mut asks = Vec::new();
    for node in &prepared.plan.nodes {
        if node.kind == NodeKind::HumanApproval {
            asks.push(format!("HumanApproval node '{}'", node.id));
        }
        for tool in &node.tools {
            let Some(a2a) = prepared
                .entries
                .get(&tool.entry)
                .and_then(|e| e.spec.a2a.as_ref())
            else {
                continue;
            };
            let named = if a2a.effect == Effect::Acting {
                format!(
                    "acting remote '{}' at node '{}', each call",
                    tool.entry, node.id
                )
            } else {
                format!(
                    "remote agent '{}' at node '{}', its questions",
                    tool.entry, node.id
                )
            };
            if !asks.contains(&named) {
                asks.push(named);
            }
        }
    }
    asks
}
