//! Reading files and folders into documents.

use super::{Format, LoadError, ManifestSet};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// File extensions read when walking a folder.
const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Reads every path: a file is read whatever its extension; a folder is walked recursively
/// (sorted, hidden entries skipped) for `.yaml`, `.yml` and `.json` files. Nothing stops at the
/// first unreadable path: each lands in [`ManifestSet::unreadable`].
pub fn load_paths<P: AsRef<Path>>(paths: &[P]) -> ManifestSet {
    let mut set = ManifestSet::default();
    for path in paths {
        let path = path.as_ref();
        match std::fs::metadata(path) {
            Err(source) => set.unreadable.push(LoadError::Io {
                path: path.to_path_buf(),
                source,
            }),
            Ok(meta) if meta.is_dir() => {
                let mut files = Vec::new();
                let mut visited = Vec::new();
                walk(path, &mut files, &mut visited, &mut set.unreadable);
                if files.is_empty() {
                    set.unreadable.push(LoadError::NoManifests {
                        path: path.to_path_buf(),
                    });
                }
                for file in files {
                    set.add_file(&file);
                }
            }
            Ok(_) => set.add_file(path),
        }
    }
    set
}

/// Collects manifest files under `dir`, sorted by name, following symlinks once.
fn walk(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    visited: &mut Vec<PathBuf>,
    errors: &mut Vec<LoadError>,
) {
    if let Ok(canonical) = std::fs::canonicalize(dir) {
        if visited.contains(&canonical) {
            return;
        }
        visited.push(canonical);
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(source) => {
            errors.push(LoadError::Io {
                path: dir.to_path_buf(),
                source,
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => paths.push(entry.path()),
            Err(source) => errors.push(LoadError::Io {
                path: dir.to_path_buf(),
                source,
            }),
        }
    }
    paths.sort();
    for path in paths {
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => walk(&path, files, visited, errors),
            Ok(_) => {
                let wanted = path
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| EXTENSIONS.iter().any(|x| e.eq_ignore_ascii_case(x)));
                if wanted {
                    files.push(path);
                }
            }
            Err(source) => errors.push(LoadError::Io { path, source }),
        }
    }
}

impl ManifestSet {
    /// Reads one file (its format from its extension).
    pub fn add_file(&mut self, path: &Path) {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(source) => {
                self.unreadable.push(LoadError::Io {
                    path: path.to_path_buf(),
                    source,
                });
                return;
            }
        };
        let Ok(text) = String::from_utf8(bytes) else {
            self.unreadable.push(LoadError::NotUtf8 {
                path: path.to_path_buf(),
            });
            return;
        };
        if let Err(e) = self.add_text(path, &text, Format::of(path)) {
            self.unreadable.push(e);
        }
    }

    /// Reads one text as if it were the file `path`. Documents before a syntax error are kept;
    /// the error is returned (and nothing after it is read).
    pub fn add_text(&mut self, path: &Path, text: &str, format: Format) -> Result<(), LoadError> {
        self.files.push(path.to_path_buf());
        for (position, document) in split_documents(path, text, format)?.into_iter().enumerate() {
            if !document.is_null() {
                self.add_document(path, position + 1, document);
            }
        }
        Ok(())
    }
}

/// Splits a text into its documents (YAML `---` separated, or concatenated JSON values). An
/// empty YAML document reads as `null`.
fn split_documents(
    path: &Path,
    text: &str,
    format: Format,
) -> Result<Vec<serde_json::Value>, LoadError> {
    match format {
        Format::Json => serde_json::Deserializer::from_str(text)
            .into_iter::<serde_json::Value>()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| LoadError::Json {
                path: path.to_path_buf(),
                message: e.to_string(),
            }),
        Format::Yaml => {
            let mut documents = Vec::new();
            for (i, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
                let value = serde_json::Value::deserialize(doc).map_err(|e| LoadError::Yaml {
                    path: path.to_path_buf(),
                    document: i + 1,
                    message: e.to_string(),
                })?;
                documents.push(value);
            }
            Ok(documents)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn docs(text: &str, format: Format) -> Result<Vec<serde_json::Value>, LoadError> {
        split_documents(Path::new("t"), text, format)
    }

    #[test]
    fn a_yaml_stream_splits_into_its_documents_with_empty_ones_as_null() {
        let found = docs(
            "---\na: 1\n---\n# only a comment\n---\nb: 2\n",
            Format::Yaml,
        )
        .unwrap();
        let non_null: Vec<_> = found.iter().filter(|d| !d.is_null()).collect();
        assert_eq!(non_null.len(), 2);
    }

    #[test]
    fn concatenated_json_values_are_separate_documents() {
        assert_eq!(docs("{\"a\":1}\n{\"b\":2}", Format::Json).unwrap().len(), 2);
    }

    #[test]
    fn a_yaml_syntax_error_names_the_document() {
        let err = docs("a: 1\n---\nb: [1, 2\n", Format::Yaml).unwrap_err();
        assert!(matches!(err, LoadError::Yaml { document: 2, .. }), "{err}");
    }

    #[test]
    fn a_json_syntax_error_is_a_json_error() {
        assert!(matches!(
            docs("{\"a\":", Format::Json),
            Err(LoadError::Json { .. })
        ));
    }

    #[test]
    fn a_missing_path_is_unreadable_and_an_empty_folder_has_no_manifests() {
        let dir = std::env::temp_dir().join(format!("orrery-load-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let set = load_paths(&[dir.clone(), dir.join("missing.yaml")]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(set.unreadable[0], LoadError::NoManifests { .. }));
        assert!(matches!(set.unreadable[1], LoadError::Io { .. }));
    }
}
