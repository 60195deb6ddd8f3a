//! Resolving a `SecretKeyRef` locally: from `$ORRERY_SECRETS_DIR/<name>/<key>` (the layout a
//! mounted Secret volume has) or, failing that, from the environment variable
//! `ORRERY_SECRET_<NAME>_<KEY>` (uppercased, `-` and `.` become `_`).
//!
//! Values are never logged: [`SecretValue`]'s `Debug` hides them and errors name only the
//! reference and where it was looked for.

use orrery_crds::common::SecretKeyRef;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The environment variable naming the directory Secrets are mounted in.
pub const SECRETS_DIR_ENV: &str = "ORRERY_SECRETS_DIR";

/// A secret's value. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself: use it only to send it where it belongs.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

/// Why a secret could not be resolved. Messages name the reference and where it was looked
/// for, never a value.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// Neither the file nor the environment variable exists.
    #[error(
        "secret {name}/{key} not found: looked for {} and the environment variable {env_var}",
        file.as_ref().map_or_else(|| format!("a file (set {SECRETS_DIR_ENV} to the directory Secrets are mounted in)"), |p| format!("the file {}", p.display()))
    )]
    NotFound {
        /// The Secret's name.
        name: String,
        /// The key inside the Secret.
        key: String,
        /// The file looked for (none when no secrets directory is set).
        file: Option<PathBuf>,
        /// The environment variable looked for.
        env_var: String,
    },
    /// The file exists but could not be read.
    #[error("secret {name}/{key}: could not read {}: {reason}", path.display())]
    Unreadable {
        /// The Secret's name.
        name: String,
        /// The key inside the Secret.
        key: String,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The value found is empty.
    #[error("secret {name}/{key} is empty (in {location})")]
    Empty {
        /// The Secret's name.
        name: String,
        /// The key inside the Secret.
        key: String,
        /// The file or environment variable holding the empty value.
        location: String,
    },
    /// The reference cannot name a file safely (e.g. contains `/` or is `..`).
    #[error(
        "secret reference {name}/{key} is invalid: names and keys may hold only letters, digits, '-', '_' and '.', and may not be '.' or '..'"
    )]
    InvalidRef {
        /// The Secret's name.
        name: String,
        /// The key inside the Secret.
        key: String,
    },
}

/// Resolves Secret references to values.
pub trait SecretResolver: Send + Sync {
    /// The value `reference` names.
    fn resolve(&self, reference: &SecretKeyRef) -> Result<SecretValue, SecretError>;
}

/// Looks up an environment variable (injectable for tests).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Resolves secrets from a mounted directory, then from the environment.
#[derive(Clone)]
pub struct LocalSecrets {
    dir: Option<PathBuf>,
    env: EnvLookup,
}

impl fmt::Debug for LocalSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSecrets")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl LocalSecrets {
    /// Reads the directory from `$ORRERY_SECRETS_DIR` and variables from the process
    /// environment.
    pub fn from_env() -> Self {
        Self {
            dir: std::env::var_os(SECRETS_DIR_ENV)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
            env: Arc::new(|name| std::env::var(name).ok()),
        }
    }

    /// Uses `dir` (if any) and the given environment lookup.
    pub fn new(dir: Option<PathBuf>, env: EnvLookup) -> Self {
        Self { dir, env }
    }

    /// The directory secrets are read from, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }
}

/// The environment variable for a reference: `ORRERY_SECRET_<NAME>_<KEY>`, uppercased, with
/// `-` and `.` replaced by `_`.
pub fn env_var_name(reference: &SecretKeyRef) -> String {
    let part = |s: &str| {
        s.chars()
            .map(|c| match c {
                '-' | '.' => '_',
                c => c.to_ascii_uppercase(),
            })
            .collect::<String>()
    };
    format!(
        "ORRERY_SECRET_{}_{}",
        part(&reference.name),
        part(&reference.key)
    )
}

/// Whether a Secret name or key can be used as one path component.
fn is_safe_component(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Strips the trailing line ending a file written by hand usually has.
fn trim_line_end(value: &str) -> &str {
    value.trim_end_matches(['\n', '\r'])
}

impl SecretResolver for LocalSecrets {
    fn resolve(&self, reference: &SecretKeyRef) -> Result<SecretValue, SecretError> {
        let name = reference.name.clone();
        let key = reference.key.clone();
        if !is_safe_component(&name) || !is_safe_component(&key) {
            return Err(SecretError::InvalidRef { name, key });
        }
        let file = self.dir.as_ref().map(|d| d.join(&name).join(&key));
        if let Some(path) = &file {
            match std::fs::read_to_string(path) {
                Ok(contents) => {
                    let value = trim_line_end(&contents);
                    if value.is_empty() {
                        return Err(SecretError::Empty {
                            name,
                            key,
                            location: path.display().to_string(),
                        });
                    }
                    return Ok(SecretValue::new(value));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(SecretError::Unreadable {
                        name,
                        key,
                        path: path.clone(),
                        reason: e.to_string(),
                    });
                }
            }
        }
        let env_var = env_var_name(reference);
        match (self.env)(&env_var) {
            Some(value) if value.is_empty() => Err(SecretError::Empty {
                name,
                key,
                location: format!("the environment variable {env_var}"),
            }),
            Some(value) => Ok(SecretValue::new(value)),
            None => Err(SecretError::NotFound {
                name,
                key,
                file,
                env_var,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use std::collections::HashMap;

    fn reference(name: &str, key: &str) -> SecretKeyRef {
        SecretKeyRef {
            name: name.into(),
            key: key.into(),
        }
    }

    fn env(vars: &[(&str, &str)]) -> EnvLookup {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Arc::new(move |name| map.get(name).cloned())
    }

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "orrery-secrets-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn env_var_names_are_uppercased_with_dashes_and_dots_as_underscores() {
        let cases = [
            ("openai", "api-key", "ORRERY_SECRET_OPENAI_API_KEY"),
            (
                "model-keys",
                "anthropic.key",
                "ORRERY_SECRET_MODEL_KEYS_ANTHROPIC_KEY",
            ),
            ("a", "B_c", "ORRERY_SECRET_A_B_C"),
        ];
        for (name, key, expected) in cases {
            assert_eq!(env_var_name(&reference(name, key)), expected);
        }
    }

    #[test]
    fn a_mounted_file_is_read_without_its_trailing_newline() {
        let dir = temp_dir("file");
        std::fs::create_dir_all(dir.join("openai")).unwrap();
        std::fs::write(dir.join("openai").join("api-key"), "sk-file\n").unwrap();
        let secrets = LocalSecrets::new(
            Some(dir.clone()),
            env(&[("ORRERY_SECRET_OPENAI_API_KEY", "sk-env")]),
        );
        let value = secrets.resolve(&reference("openai", "api-key")).unwrap();
        assert_eq!(value.expose(), "sk-file", "the file wins over the variable");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_environment_is_used_when_the_file_is_missing() {
        let dir = temp_dir("env");
        let secrets = LocalSecrets::new(
            Some(dir.clone()),
            env(&[("ORRERY_SECRET_OPENAI_API_KEY", "sk-env")]),
        );
        let value = secrets.resolve(&reference("openai", "api-key")).unwrap();
        assert_eq!(value.expose(), "sk-env");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_missing_secret_names_the_file_and_variable_looked_for() {
        let dir = temp_dir("missing");
        let secrets = LocalSecrets::new(Some(dir.clone()), env(&[]));
        let err = secrets
            .resolve(&reference("openai", "api-key"))
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("openai/api-key"), "{text}");
        assert!(
            text.contains(&dir.join("openai").join("api-key").display().to_string()),
            "{text}"
        );
        assert!(text.contains("ORRERY_SECRET_OPENAI_API_KEY"), "{text}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn without_a_secrets_dir_the_error_says_how_to_set_one() {
        let secrets = LocalSecrets::new(None, env(&[]));
        let text = secrets
            .resolve(&reference("k", "v"))
            .unwrap_err()
            .to_string();
        assert!(text.contains(SECRETS_DIR_ENV), "{text}");
    }

    #[test]
    fn empty_values_are_refused_without_showing_anything() {
        let secrets = LocalSecrets::new(None, env(&[("ORRERY_SECRET_K_V", "")]));
        let err = secrets.resolve(&reference("k", "v")).unwrap_err();
        assert!(matches!(err, SecretError::Empty { .. }), "{err}");
    }

    #[test]
    fn references_that_could_escape_the_directory_are_refused() {
        let secrets = LocalSecrets::new(Some(PathBuf::from("/nonexistent")), env(&[]));
        for (name, key) in [
            ("..", "k"),
            ("a/b", "k"),
            ("n", "../etc"),
            (".", "k"),
            ("n", ""),
        ] {
            let err = secrets.resolve(&reference(name, key)).unwrap_err();
            assert!(
                matches!(err, SecretError::InvalidRef { .. }),
                "{name}/{key}: {err}"
            );
        }
    }

    #[test]
    fn a_secret_value_never_shows_in_debug_output() {
        let value = SecretValue::new("sk-very-secret");
        assert!(!format!("{value:?}").contains("sk-very-secret"));
    }
}
