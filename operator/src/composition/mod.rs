//! The Composition controller's pure parts: the status from the validator's answer
//! ([`status`]) and the immutable revisions, one ControllerRevision per generation
//! ([`builders`]).

pub mod builders;
pub mod status;
