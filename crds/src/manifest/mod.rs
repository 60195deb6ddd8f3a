//! Manifests on disk: files and folders of multi-document YAML and JSON, read into the typed
//! resources (Composition, RegistryEntry, StudioRun of `studio.orrery.dev/v1alpha1`), with the
//! file, the document and the resource kept for every finding. [`check`] then resolves each
//! Composition against the RegistryEntries found beside it and runs the validator, the same one
//! the operator runs.
//!
//! - [`load_paths`] reads files and folders (recursing; `.yaml`, `.yml`, `.json`).
//! - [`ManifestSet::add_text`] reads one text (for callers that hold a body, not a file).
//! - [`check`] returns every problem of the set, each with file, resource, `loc` and code.

mod check;
pub mod codes;
mod depth;
mod entries;
mod load;
mod parse;
mod schema;
mod yaml;
pub(crate) use yaml::plain_is_text;

pub use check::{Report, Summary, check, composition_spec};
pub use load::load_paths;

use crate::common::{Loc, Severity, ValidationIssue, loc_to_string};
use crate::{Composition, RegistryEntry, StudioRun};
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

/// The namespace of a resource whose manifest names none (what `kubectl apply` would use
/// without `-n` in a fresh context).
pub const DEFAULT_NAMESPACE: &str = "default";

/// Where a document came from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// The file, as given or as found in a folder.
    pub file: PathBuf,
    /// The document's position in the file, from 1.
    pub document: usize,
    /// For an item of a `v1` `List` document: its index in `items`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<usize>,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (document {}", self.file.display(), self.document)?;
        if let Some(item) = self.item {
            write!(f, ", items[{item}]")?;
        }
        f.write_str(")")
    }
}

/// Which resource a finding is about.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ResourceRef {
    /// The resource's kind, e.g. `Composition`.
    pub kind: String,
    /// Its namespace ([`DEFAULT_NAMESPACE`] when the manifest names none).
    pub namespace: String,
    /// Its name (or `generateName` followed by `*`; empty when it has neither).
    pub name: String,
}

impl fmt::Display for ResourceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// One typed resource of our group.
#[derive(Clone, Debug)]
pub enum Resource {
    /// A Composition.
    Composition(Box<Composition>),
    /// A RegistryEntry.
    RegistryEntry(Box<RegistryEntry>),
    /// A StudioRun.
    StudioRun(Box<StudioRun>),
}

/// A resource read from a manifest.
#[derive(Clone, Debug)]
pub struct LoadedResource {
    /// Where it was read.
    pub source: Source,
    /// Its kind, namespace and name.
    pub reference: ResourceRef,
    /// The typed resource.
    pub resource: Resource,
}

/// A document of another API group (or the core group), counted but not checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IgnoredDocument {
    /// Where it was read.
    pub source: Source,
    /// Its `apiVersion`.
    pub api_version: String,
    /// Its `kind`.
    pub kind: String,
}

/// One problem (or warning) found in a manifest, at its field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// Where the document was read.
    pub source: Source,
    /// The resource, when the document names one.
    pub resource: Option<ResourceRef>,
    /// Error (refuses the resource) or Warning.
    pub severity: Severity,
    /// The field path, code and message. `loc` is the path inside the document.
    pub issue: ValidationIssue,
}

/// Why a file or folder could not be read. `orrery validate` exits 2 on any of them.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file or folder cannot be read (missing, no permission…).
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("{}: not UTF-8 text", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// A YAML document does not parse.
    #[error("{}: document {document} is not valid YAML: {message}", path.display())]
    Yaml {
        /// The file.
        path: PathBuf,
        /// The document's position, from 1.
        document: usize,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A YAML document that kubectl cannot turn into JSON (`.inf`, a null key, a value its tag
    /// does not take…): kubectl refuses the file too.
    #[error("{}: document {document} cannot become JSON as kubectl reads it: {message}", path.display())]
    NotJson {
        /// The file.
        path: PathBuf,
        /// The document's position, from 1.
        document: usize,
        /// What cannot become JSON, with line and column, and what to do.
        message: String,
    },
    /// A JSON file does not parse.
    #[error("{}: not valid JSON: {message}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A folder holds no `.yaml`, `.yml` or `.json` file (a mistyped path in CI would
    /// otherwise pass silently).
    #[error("{}: no .yaml, .yml or .json files found", path.display())]
    NoManifests {
        /// The folder.
        path: PathBuf,
    },
    /// A file named on the command line holds no document (it is empty, or only comments).
    #[error("no manifests in {}: the file holds no document", path.display())]
    EmptyFile {
        /// The file.
        path: PathBuf,
    },
    /// A file is larger than the apiserver accepts in one request.
    #[error("{}: the file is larger than {} MiB (the apiserver's request limit); split it", path.display(), MAX_FILE_BYTES / (1024 * 1024))]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// A YAML or JSON text nests deeper than any manifest does (read no further: parsing it
    /// would take minutes).
    #[error("{}: nested more than {MAX_DEPTH} levels deep (near line {line}); no manifest nests that deep", path.display())]
    TooDeep {
        /// The file.
        path: PathBuf,
        /// The line where the limit was passed, from 1.
        line: usize,
    },
}

impl LoadError {
    /// The file or folder the error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            LoadError::Io { path, .. }
            | LoadError::NotUtf8 { path }
            | LoadError::Yaml { path, .. }
            | LoadError::NotJson { path, .. }
            | LoadError::Json { path, .. }
            | LoadError::NoManifests { path }
            | LoadError::EmptyFile { path }
            | LoadError::TooLarge { path }
            | LoadError::TooDeep { path, .. } => path,
        }
    }
}

/// The largest manifest file read: 3 MiB, the apiserver's limit for one request body.
pub const MAX_FILE_BYTES: u64 = 3 * 1024 * 1024;
/// The deepest nesting of collections read from a text.
pub const MAX_DEPTH: usize = 256;

/// Everything read from a set of files and folders.
#[derive(Debug, Default)]
pub struct ManifestSet {
    /// Every file read, in order.
    pub files: Vec<PathBuf>,
    /// The resources of our group that parsed.
    pub resources: Vec<LoadedResource>,
    /// Documents of other groups, not checked.
    pub ignored: Vec<IgnoredDocument>,
    /// Documents of our group (or without apiVersion/kind) that could not be read as a
    /// resource: unknown kind or version, a field of the wrong type, an unknown field…
    pub problems: Vec<Finding>,
    /// Files and folders that could not be read at all.
    pub unreadable: Vec<LoadError>,
}

/// The format of a text: JSON (one or more concatenated values) or multi-document YAML.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JSON.
    Json,
    /// YAML, documents separated by `---`.
    Yaml,
}

impl Format {
    /// The format a file's extension implies: `.json` is JSON, everything else YAML.
    pub fn of(path: &std::path::Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Yaml,
        }
    }
}

/// Builds an issue, filling `field` from `loc`.
pub(crate) fn issue(loc: Loc, code: &str, message: impl Into<String>) -> ValidationIssue {
    ValidationIssue {
        field: loc_to_string(&loc),
        loc,
        code: code.to_owned(),
        message: message.into(),
    }
}
