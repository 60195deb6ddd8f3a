//! What a Composition revision is, for the controllers and the sidecar alike: the name of a
//! revision's ControllerRevision, the label that ties it to its Composition, the spec it holds, and the spec digest a StudioRun records of
//! what it ran. The Composition controller writes revisions, the StudioRun controller runs them,
//! the sidecar serves them to a run's owner: none of them owns these rules.

use crate::error::{Error, Result};
use k8s_openapi::api::apps::v1::ControllerRevision;
use orrery_crds::CompositionSpec;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Label on every revision: the UID of its Composition (label values hold at most 63
/// characters, so the name, up to 253, cannot be the selector).
pub const COMPOSITION_UID_LABEL: &str = "studio.orrery.dev/composition-uid";

/// The name of revision `revision` of Composition `composition`: `<composition>-r<revision>`
/// (shortened and tagged with a hash when too long for an object name).
pub fn revision_name(composition: &str, revision: i64) -> String {
    crate::names::suffixed(composition, &format!("-r{revision}"))
}

/// The spec a revision holds.
pub fn spec_of(revision: &ControllerRevision) -> Result<CompositionSpec> {
    let name = revision.metadata.name.clone().unwrap_or_default();
    let data = revision.data.as_ref().ok_or_else(|| Error::Revision {
        name: name.clone(),
        problem: "it has no data".into(),
    })?;
    serde_json::from_value(data.0.clone()).map_err(|e| Error::Revision {
        name,
        problem: format!("its data is not a composition spec: {e}"),
    })
}

/// SHA-256 (hex) of the RFC 8785 canonical JSON of `value`.
pub fn canonical_sha256(what: &str, value: &impl Serialize) -> Result<String> {
    let json = serde_json::to_value(value).map_err(|e| Error::json(what, e))?;
    let text = serde_json_canonicalizer::to_string(&json).map_err(|e| Error::Canonical {
        what: what.to_owned(),
        message: e.to_string(),
    })?;
    Ok(hex::encode(Sha256::digest(text.as_bytes())))
}

/// The spec digest: SHA-256 (hex) of the canonical JSON of the spec. Key order and formatting
/// of the manifest do not change it; any value does.
pub fn spec_digest(spec: &CompositionSpec) -> Result<String> {
    canonical_sha256("composition spec", spec)
}
