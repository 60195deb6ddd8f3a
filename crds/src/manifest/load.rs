//! Reading files and folders into documents.

use super::depth::too_deep_at;
use super::yaml::{YamlError, documents};
use super::{Format, LoadError, MAX_FILE_BYTES, ManifestSet};
use crate::unique_keys::UniqueKeys;
use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

/// File extensions read when walking a folder.
const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Reads every path: a file is read whatever its extension; a folder is walked recursively
/// (sorted, hidden entries skipped) for `.yaml`, `.yml` and `.json` files. A file reached twice
/// (named twice, or inside two folders given) is read once. A file named on the command line
/// that holds no document is an error. Nothing stops at the first unreadable path: each lands
/// in [`ManifestSet::unreadable`].
pub fn load_paths<P: AsRef<Path>>(paths: &[P]) -> ManifestSet {
    let mut set = ManifestSet::default();
    let mut read: HashSet<PathBuf> = HashSet::new();
    // A file is read at most once, whichever way it was named.
    let mut first_time = |file: &Path| {
        let key = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        read.insert(key)
    };
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
                    if first_time(&file) {
                        set.add_file(&file);
                    }
                }
            }
            Ok(_) => {
                if !first_time(path) {
                    continue;
                }
                let before = set.documents();
                let failures = set.unreadable.len();
                set.add_file(path);
                if set.documents() == before && set.unreadable.len() == failures {
                    set.unreadable.push(LoadError::EmptyFile {
                        path: path.to_path_buf(),
                    });
                }
            }
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
    /// Documents read so far: resources, ignored documents and problems.
    fn documents(&self) -> usize {
        self.resources.len() + self.ignored.len() + self.problems.len()
    }

    /// Reads one file (its format from its extension). A file over [`MAX_FILE_BYTES`] is not
    /// read.
    pub fn add_file(&mut self, path: &Path) {
        let mut bytes = Vec::new();
        let read = std::fs::File::open(path)
            .and_then(|file| file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes));
        if let Err(source) = read {
            self.unreadable.push(LoadError::Io {
                path: path.to_path_buf(),
                source,
            });
            return;
        }
        if bytes.len() as u64 > MAX_FILE_BYTES {
            self.unreadable.push(LoadError::TooLarge {
                path: path.to_path_buf(),
            });
            return;
        }
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
    /// the error is returned (and nothing after it is read). A text over [`MAX_FILE_BYTES`], or
    /// nested deeper than [`super::MAX_DEPTH`], is refused before it is parsed.
    pub fn add_text(&mut self, path: &Path, text: &str, format: Format) -> Result<(), LoadError> {
        self.files.push(path.to_path_buf());
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(LoadError::TooLarge {
                path: path.to_path_buf(),
            });
        }
        if let Some(line) = too_deep_at(text, format) {
            return Err(LoadError::TooDeep {
                path: path.to_path_buf(),
                line,
            });
        }
        for (position, document) in split_documents(path, text, format)?.into_iter().enumerate() {
            if !document.is_null() {
                self.add_document(path, position + 1, document);
            }
        }
        Ok(())
    }
}

/// Splits a text into its documents (YAML `---` separated, or concatenated JSON values). An
/// empty YAML document reads as `null`. YAML reads as kubectl reads it (`yes` a boolean, `0777`
/// octal: [`super::yaml`], rule 1.81); JSON is JSON. A key twice in one mapping, at any depth, is
/// an error naming the key and its line ([`UniqueKeys`], [`super::yaml`]), never the last one
/// silently winning.
fn split_documents(
    path: &Path,
    text: &str,
    format: Format,
) -> Result<Vec<serde_json::Value>, LoadError> {
    match format {
        Format::Json => serde_json::Deserializer::from_str(text)
            .into_iter::<UniqueKeys>()
            .map(|document| document.map(|UniqueKeys(value)| value))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| LoadError::Json {
                path: path.to_path_buf(),
                message: e.to_string(),
            }),
        Format::Yaml => documents(text).map_err(|error| match error {
            YamlError::Syntax { document, message } => LoadError::Yaml {
                path: path.to_path_buf(),
                document,
                message,
            },
            YamlError::NotJson { document, message } => LoadError::NotJson {
                path: path.to_path_buf(),
                document,
                message,
            },
        }),
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
    fn a_key_twice_in_a_mapping_is_refused_with_the_key_the_document_and_the_line() {
        // (what, text, format, document, key, line)
        #[rustfmt::skip]
        let cases: &[(&str, &str, Format, usize, &str, usize)] = &[
            ("yaml, top level", "kind: Composition\nspec:\n  pattern: Pipeline\n  pattern: Router\n", Format::Yaml, 1, "pattern", 4),
            ("yaml, in a node", "spec:\n  nodes:\n    - id: a\n      kind: LLMAgent\n      kind: Router\n", Format::Yaml, 1, "kind", 5),
            ("yaml, flow style", "spec: {nodes: [{id: a, id: b}]}\n", Format::Yaml, 1, "id", 1),
            ("yaml, second document", "a: 1\n---\nb: 1\nc:\n  d: 1\n  d: 2\n", Format::Yaml, 2, "d", 6),
            ("json", "{\"spec\": {\"pattern\": \"Pipeline\",\n \"pattern\": \"Router\"}}", Format::Json, 1, "pattern", 2),
            ("json, second value", "{\"a\": 1}\n{\"b\": {\"c\": 1,\n\"c\": 2}}", Format::Json, 2, "c", 3),
        ];
        for (what, text, format, document, key, line) in cases {
            let err = docs(text, *format).unwrap_err();
            let message = err.to_string();
            match (&err, format) {
                (LoadError::Yaml { document: d, .. }, Format::Yaml) => {
                    assert_eq!(d, document, "{what}: {message}")
                }
                (LoadError::Json { .. }, Format::Json) => {}
                _ => panic!("{what}: {err:?}"),
            }
            assert!(
                message.contains(&format!("duplicate key \"{key}\"")),
                "{what}: {message}"
            );
            assert!(
                message.contains(&format!("line {line}")),
                "{what}: {message}"
            );
        }
        // The same key in two mappings is no duplicate.
        assert_eq!(
            docs("a: {x: 1}\nb: {x: 1}\n", Format::Yaml).unwrap().len(),
            1
        );
    }

    #[test]
    fn a_json_syntax_error_is_a_json_error() {
        assert!(matches!(
            docs("{\"a\":", Format::Json),
            Err(LoadError::Json { .. })
        ));
    }

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("orrery-load-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n";

    #[test]
    fn a_file_reached_twice_is_read_once() {
        let dir = scratch("twice");
        let file = dir.join("a.yaml");
        std::fs::write(&file, CONFIG_MAP).unwrap();
        let set = load_paths(&[dir.clone(), file.clone(), dir.join(".").join("a.yaml")]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(set.files.len(), 1);
        assert_eq!(set.ignored.len(), 1);
        assert!(set.unreadable.is_empty());
    }

    #[test]
    fn a_named_file_without_documents_is_an_error_but_one_in_a_folder_is_not() {
        let dir = scratch("empty-file");
        let empty = dir.join("empty.yaml");
        std::fs::write(&empty, "# nothing here\n").unwrap();
        std::fs::write(dir.join("b.yaml"), CONFIG_MAP).unwrap();
        let from_folder = load_paths(std::slice::from_ref(&dir));
        let named = load_paths(std::slice::from_ref(&empty));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(from_folder.unreadable.is_empty());
        assert!(matches!(
            named.unreadable[..],
            [LoadError::EmptyFile { .. }]
        ));
        assert!(
            named.unreadable[0]
                .to_string()
                .starts_with("no manifests in ")
        );
    }

    #[test]
    fn a_file_over_the_request_limit_is_not_read() {
        let dir = scratch("large");
        let big = dir.join("big.yaml");
        let mut text = String::from(CONFIG_MAP);
        text.push_str(&format!(
            "data: {{a: '{}'}}\n",
            "x".repeat(MAX_FILE_BYTES as usize)
        ));
        std::fs::write(&big, &text).unwrap();
        let set = load_paths(&[big]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(set.unreadable[..], [LoadError::TooLarge { .. }]));
        assert!(set.ignored.is_empty());
    }

    #[test]
    fn a_deeply_nested_text_is_refused_quickly_before_parsing() {
        let text = format!("a: {}", "[".repeat(100_000));
        let started = std::time::Instant::now();
        let mut set = ManifestSet::default();
        let err = set
            .add_text(Path::new("deep.yaml"), &text, Format::Yaml)
            .unwrap_err();
        assert!(matches!(err, LoadError::TooDeep { line: 1, .. }), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
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
