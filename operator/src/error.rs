//! The operator's error type. Every variant is one metric label ([`Error::label`]), so the
//! `errors` counter of `/metrics` says which kind of failure a reconcile hit without parsing
//! messages.

use crate::config::ConfigError;

/// What went wrong while reconciling or building an object.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A call to the Kubernetes API failed.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// The deployment config is wrong (only at start-up: the process refuses to start).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An object read from the cluster lacks a field the apiserver always sets.
    #[error(
        "{kind} {name:?} has no metadata.{field}; the apiserver sets it on every stored object, \
         so build children only from objects read from the cluster"
    )]
    MissingMetadata {
        /// The object's kind.
        kind: &'static str,
        /// The object's name (empty when that is what is missing).
        name: String,
        /// The missing field (`uid`, `namespace`, `name`, `generation`).
        field: &'static str,
    },
    /// A value could not be turned into JSON (or read back from it).
    #[error("{what}: {source}")]
    Json {
        /// What was being (de)serialized.
        what: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// A value could not be written as RFC 8785 canonical JSON (for its digest).
    #[error("{what}: cannot write it as canonical JSON (RFC 8785): {message}")]
    Canonical {
        /// What was being digested.
        what: String,
        /// The canonicalizer's message.
        message: String,
    },
    /// The run-scoped token could not be signed (or a signing key could not be read).
    #[error("run token: {message}")]
    RunToken {
        /// What failed and how to fix it.
        message: String,
    },
    /// A registry entry's network endpoint cannot be put into a NetworkPolicy.
    #[error("RegistryEntry {entry:?}: {problem}; fix: {fix}")]
    Endpoint {
        /// The entry's name.
        entry: String,
        /// What is wrong.
        problem: String,
        /// How to fix it.
        fix: String,
    },
    /// A child's name is taken by an object the run does not own.
    #[error(
        "a {kind} named {name:?} already exists in namespace {namespace} and is not this run's: \
         delete it or give the run another name"
    )]
    NameTaken {
        /// The child's kind.
        kind: String,
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
    },
    /// A child's name is held by a child of an earlier StudioRun of the same name, deleted
    /// since (fault case 7): it is being removed, and the run waits for it.
    #[error(
        "the {kind} {name:?} in namespace {namespace} belongs to an earlier StudioRun of this \
         name, deleted since; it is being removed, and this run starts once it is gone"
    )]
    Predecessor {
        /// The child's kind.
        kind: String,
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
    },
    /// The object changed since it was read (written by someone else, seen late by the
    /// watch, or deleted and created again under the same name): a status computed from the
    /// older version was not written, and is computed again (fault cases 3, 4 and 7).
    #[error(
        "the {kind} {name:?} in namespace {namespace} changed since it was read; its status is \
         computed again from the newer version"
    )]
    Outdated {
        /// The object's kind.
        kind: String,
        /// Its name.
        name: String,
        /// Its namespace (empty for a cluster-scoped object).
        namespace: String,
    },
    /// A child left by an earlier attempt holds something other than what the run would
    /// create now (another plan, another policy): it is never used.
    #[error(
        "the {kind} {name:?} in namespace {namespace} was made for this run but holds another \
         plan than it would get now (an earlier attempt before its Composition or entries \
         changed, or not the operator's): delete it and the run is started again"
    )]
    ChildDiffers {
        /// The child's kind.
        kind: String,
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
    },
    /// A Composition revision (ControllerRevision) is missing or unreadable.
    #[error("ControllerRevision {name:?}: {problem}")]
    Revision {
        /// The revision object's name.
        name: String,
        /// What is wrong.
        problem: String,
    },
}

impl Error {
    /// Every label [`Error::label`] can return, for registering the metric series up front.
    pub const LABELS: [&'static str; 12] = [
        "kube_api",
        "config",
        "missing_metadata",
        "json",
        "canonical_json",
        "run_token",
        "endpoint",
        "revision",
        "name_taken",
        "predecessor",
        "outdated",
        "child_differs",
    ];

    /// The metric label of this error (`errors_total{error="…"}`).
    pub fn label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "kube_api",
            Error::Config(_) => "config",
            Error::MissingMetadata { .. } => "missing_metadata",
            Error::Json { .. } => "json",
            Error::Canonical { .. } => "canonical_json",
            Error::RunToken { .. } => "run_token",
            Error::Endpoint { .. } => "endpoint",
            Error::Revision { .. } => "revision",
            Error::NameTaken { .. } => "name_taken",
            Error::Predecessor { .. } => "predecessor",
            Error::Outdated { .. } => "outdated",
            Error::ChildDiffers { .. } => "child_differs",
        }
    }

    /// A [`Error::Json`] for `what`.
    pub fn json(what: impl Into<String>, source: serde_json::Error) -> Self {
        Error::Json {
            what: what.into(),
            source,
        }
    }
}

/// The operator's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn one_of_each() -> Vec<Error> {
        let json = serde_json::from_str::<serde_json::Value>("{").err();
        let mut all = vec![
            Error::Kube(kube::Error::LinesCodecMaxLineLengthExceeded),
            Error::Config(ConfigError::Read {
                path: "x".into(),
                message: "gone".into(),
            }),
            Error::MissingMetadata {
                kind: "StudioRun",
                name: "r".into(),
                field: "uid",
            },
            Error::Canonical {
                what: "spec".into(),
                message: "m".into(),
            },
            Error::RunToken {
                message: "m".into(),
            },
            Error::Endpoint {
                entry: "e".into(),
                problem: "p".into(),
                fix: "f".into(),
            },
            Error::Revision {
                name: "n".into(),
                problem: "p".into(),
            },
            Error::NameTaken {
                kind: "Pod".into(),
                name: "r-runner".into(),
                namespace: "team".into(),
            },
            Error::Predecessor {
                kind: "Pod".into(),
                name: "r-runner".into(),
                namespace: "team".into(),
            },
            Error::Outdated {
                kind: "StudioRun".into(),
                name: "r".into(),
                namespace: "team".into(),
            },
            Error::ChildDiffers {
                kind: "Secret".into(),
                name: "r-plan".into(),
                namespace: "team".into(),
            },
        ];
        if let Some(source) = json {
            all.push(Error::json("plan", source));
        }
        all
    }

    #[test]
    fn every_variant_has_a_distinct_label_from_the_published_list() {
        let errors = one_of_each();
        assert_eq!(errors.len(), Error::LABELS.len(), "one sample per variant");
        let mut labels: Vec<&str> = errors.iter().map(Error::label).collect();
        labels.sort_unstable();
        let mut published = Error::LABELS.to_vec();
        published.sort_unstable();
        assert_eq!(labels, published);
    }

    #[test]
    fn a_missing_metadata_error_names_the_object_and_the_field() {
        let text = Error::MissingMetadata {
            kind: "StudioRun",
            name: "demo".into(),
            field: "uid",
        }
        .to_string();
        assert!(text.contains("StudioRun \"demo\""), "{text}");
        assert!(text.contains("metadata.uid"), "{text}");
    }
}
