//! The Composition controller: its pure parts, the status from the validator's answer
//! ([`status`]) and the immutable revisions, one ControllerRevision per generation
//! ([`builders`]); and the thin reconciler over them ([`reconcile`]).

pub mod builders;
pub mod reconcile;
pub mod status;
