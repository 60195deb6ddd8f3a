//! Pins: A2A card digests and MCP tool pins, checked before a remote is used (rules 5.15–5.21).
//!
//! The MCP and A2A clients see pins only through the [`Pins`] trait, so where pins live is the
//! caller's choice: [`PinStore`], a JSON file kept across runs (locally
//! `$XDG_STATE_HOME/orrery/pins.json`), or [`FixedPins`], the pins a run was given up front and
//! may not add to (in a cluster: the RegistryEntry status, carried by the plan).
//!
//! Pins are keyed by the entry's *endpoint* (rule 5.19): for A2A the card URL, `cardSHA256`,
//! skills, service origins and network flag; for MCP the URL, transport and network flag. An
//! entry whose endpoint changed is pinned afresh (5.20), and a description edit keeps its pin.
//! A changed card or tool is refused until its pin is reset ([`PinStore::reset_entry`], the
//! library side of `orrery pins reset <entry>`) or the pin is deleted from the file.
//!
//! Every change is written at once (to a temporary file, then renamed), after re-reading the
//! file under an exclusive lock of `<file>.lock`, so that runs in other processes do not lose
//! each other's pins.

use orrery_crds::plan_document::PlannedEntry;
use orrery_crds::registry::PinnedTool;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file format's version.
const FORMAT_VERSION: u32 = 1;

/// Why the pin store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PinStoreError {
    /// The file could not be read.
    #[error("cannot read the pin store {}: {reason}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The file is not a pin store.
    #[error("the pin store {} is not valid ({reason}); fix or delete it (every remote is then pinned again on first use)", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The file could not be written.
    #[error("cannot write the pin store {}: {reason}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// No location for the default file.
    #[error("no place for the pin store: set XDG_STATE_HOME or HOME, or pass --pin-store FILE")]
    NoLocation,
}

/// How a card pin was set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PinSource {
    /// From the entry's `cardSHA256`.
    Config,
    /// Trusted on first use.
    FirstUse,
}

/// A pinned A2A card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CardPin {
    /// The registry entry.
    pub entry: String,
    /// The trust digest (`pin::card_trust_digest`).
    pub digest: String,
    /// How it was pinned.
    pub source: PinSource,
    /// When, RFC 3339.
    pub pinned_at: String,
}

/// A pinned MCP tool, with the description and schema as the server stated them (rule 7.12).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolPin {
    /// Digest of name, description, input schema and annotations
    /// (`pin::mcp_tool_pin_digest`).
    pub digest: String,
    /// The description as pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The input schema as pinned.
    pub input_schema: serde_json::Value,
    /// The annotations as pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<serde_json::Value>,
    /// When, RFC 3339.
    pub pinned_at: String,
}

/// The pins of one MCP endpoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPins {
    /// The registry entry.
    pub entry: String,
    /// Pins by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolPin>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PinFile {
    #[serde(default)]
    version: u32,
    /// Card pins by endpoint key.
    #[serde(default)]
    cards: BTreeMap<String, CardPin>,
    /// MCP pins by endpoint key.
    #[serde(default)]
    mcp: BTreeMap<String, McpPins>,
}

/// The outcome of comparing what a remote serves with its pin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PinCheck {
    /// Nothing was pinned: it is pinned now.
    PinnedNow,
    /// The pin matches.
    Matches,
    /// The pin differs: refuse until reset.
    Changed {
        /// The digest pinned.
        pinned: String,
    },
    /// Nothing was pinned, and this source does not pin on first use: refuse.
    Unpinned,
}

/// Where a run's pins come from. The MCP and A2A clients call only this.
pub trait Pins: Send + Sync + std::fmt::Debug {
    /// Compares a card's digest with the pin of the endpoint `key` (of registry entry
    /// `entry`), pinning it on first use when the source may.
    fn check_card(&self, key: &str, entry: &str, digest: &str) -> Result<PinCheck, PinStoreError>;

    /// Compares a listed tool with its pin, pinning it on first use when the source may.
    fn check_tool(
        &self,
        key: &str,
        entry: &str,
        tool: &str,
        pin: ToolPin,
    ) -> Result<PinCheck, PinStoreError>;

    /// The pinned tool as stated when it was pinned (description, schema), if this source
    /// keeps it: what a model is shown before the server is first listed in this run.
    fn stored_tool(&self, key: &str, tool: &str) -> Option<ToolPin>;

    /// Where the pins live, for logs and messages (a file's path, "the run's plan").
    fn describe(&self) -> String;
}

/// A file of pins (or an in-memory one, for tests and `--no-pin-store`).
#[derive(Debug)]
pub struct PinStore {
    path: Option<PathBuf>,
    state: Mutex<PinFile>,
}

/// The default file: `$XDG_STATE_HOME/orrery/pins.json`, else `$HOME/.local/state/orrery/pins.json`.
pub fn default_path() -> Result<PathBuf, PinStoreError> {
    let non_empty = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(state) = non_empty("XDG_STATE_HOME") {
        return Ok(state.join("orrery").join("pins.json"));
    }
    non_empty("HOME")
        .map(|home| {
            home.join(".local")
                .join("state")
                .join("orrery")
                .join("pins.json")
        })
        .ok_or(PinStoreError::NoLocation)
}

/// Pins fixed before the run (in a cluster, from RegistryEntry status through the plan): a
/// card or tool is used only when its pin is here and matches; nothing is pinned on first use,
/// because pinning is the probe's job and accepting a changed pin a person's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FixedPins {
    /// Card digests by endpoint key.
    pub cards: BTreeMap<String, String>,
    /// Tool pin digests by endpoint key, then tool name.
    pub tools: BTreeMap<String, BTreeMap<String, String>>,
    /// Card digests by registry entry (a plan's pins: the entry's spec travels with them).
    pub entry_cards: BTreeMap<String, String>,
    /// Tools as a RegistryEntry's status pins them ([`crate::pin::pinned_tool`]), by registry
    /// entry, then tool name.
    pub entry_tools: BTreeMap<String, BTreeMap<String, PinnedTool>>,
}

impl FixedPins {
    /// The pins a plan carries for its entries (from their RegistryEntry status).
    pub fn from_plan_entries(entries: &[PlannedEntry]) -> Self {
        let mut fixed = FixedPins::default();
        for entry in entries {
            if let Some(card) = &entry.pins.card_sha256 {
                fixed
                    .entry_cards
                    .insert(entry.name.clone(), card.to_ascii_lowercase());
            }
            if !entry.pins.tools.is_empty() {
                fixed.entry_tools.insert(
                    entry.name.clone(),
                    entry
                        .pins
                        .tools
                        .iter()
                        .map(|t| (t.name.clone(), t.clone()))
                        .collect(),
                );
            }
        }
        fixed
    }

    /// A tool listed as `pin` against its entry's pinned tool: the digests of the description,
    /// schema and annotations must all match.
    fn check_entry_tool(pinned: &PinnedTool, tool: &str, pin: &ToolPin) -> PinCheck {
        let listed = crate::pin::pinned_tool(
            tool,
            pin.description.as_deref(),
            &pin.input_schema,
            pin.annotations.as_ref(),
        );
        let same = listed.as_ref().is_ok_and(|l| {
            l.description_sha256
                .eq_ignore_ascii_case(&pinned.description_sha256)
                && l.schema_sha256.eq_ignore_ascii_case(&pinned.schema_sha256)
                && l.annotations_sha256
                    .eq_ignore_ascii_case(&pinned.annotations_sha256)
        });
        if same {
            PinCheck::Matches
        } else {
            PinCheck::Changed {
                pinned: format!(
                    "description {}, schema {}, annotations {}",
                    pinned.description_sha256, pinned.schema_sha256, pinned.annotations_sha256
                ),
            }
        }
    }
}

impl Pins for FixedPins {
    fn check_card(&self, key: &str, entry: &str, digest: &str) -> Result<PinCheck, PinStoreError> {
        Ok(
            match self.cards.get(key).or_else(|| self.entry_cards.get(entry)) {
                Some(pinned) if pinned.eq_ignore_ascii_case(digest) => PinCheck::Matches,
                Some(pinned) => PinCheck::Changed {
                    pinned: pinned.clone(),
                },
                None => PinCheck::Unpinned,
            },
        )
    }

    fn check_tool(
        &self,
        key: &str,
        entry: &str,
        tool: &str,
        pin: ToolPin,
    ) -> Result<PinCheck, PinStoreError> {
        if let Some(pinned) = self.tools.get(key).and_then(|t| t.get(tool)) {
            return Ok(if *pinned == pin.digest {
                PinCheck::Matches
            } else {
                PinCheck::Changed {
                    pinned: pinned.clone(),
                }
            });
        }
        Ok(
            match self.entry_tools.get(entry).and_then(|t| t.get(tool)) {
                Some(pinned) => FixedPins::check_entry_tool(pinned, tool, &pin),
                None => PinCheck::Unpinned,
            },
        )
    }

    fn stored_tool(&self, _key: &str, _tool: &str) -> Option<ToolPin> {
        None
    }

    fn describe(&self) -> String {
        "the pins the run was given".to_owned()
    }
}

impl Pins for PinStore {
    fn check_card(&self, key: &str, entry: &str, digest: &str) -> Result<PinCheck, PinStoreError> {
        PinStore::check_card(self, key, entry, digest, PinSource::FirstUse)
    }

    fn check_tool(
        &self,
        key: &str,
        entry: &str,
        tool: &str,
        pin: ToolPin,
    ) -> Result<PinCheck, PinStoreError> {
        PinStore::check_tool(self, key, entry, tool, pin)
    }

    fn stored_tool(&self, key: &str, tool: &str) -> Option<ToolPin> {
        self.tool_pin(key, tool)
    }

    fn describe(&self) -> String {
        match &self.path {
            Some(path) => format!("the pin store {}", path.display()),
            None => "an in-memory pin store".to_owned(),
        }
    }
}

fn now() -> String {
    crate::events::format_rfc3339(jiff::Timestamp::now())
}

impl PinStore {
    /// Pins kept only in memory (lost when the process ends).
    pub fn in_memory() -> Self {
        PinStore {
            path: None,
            state: Mutex::new(PinFile {
                version: FORMAT_VERSION,
                ..PinFile::default()
            }),
        }
    }

    /// Opens (or starts) the pin file at `path`. A missing file is an empty store.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, PinStoreError> {
        let path = path.into();
        let file = read_file(&path)?;
        Ok(PinStore {
            path: Some(path),
            state: Mutex::new(file),
        })
    }

    /// Opens the pin file at [`default_path`].
    pub fn open_default() -> Result<Self, PinStoreError> {
        Self::open(default_path()?)
    }

    /// The file, if the store has one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PinFile> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Under an exclusive lock of the file's lock file, re-reads the file, applies `change`,
    /// and writes it back when `change` says it changed something.
    fn update<T>(
        &self,
        change: impl FnOnce(&mut PinFile) -> (T, bool),
    ) -> Result<T, PinStoreError> {
        let mut state = self.lock();
        // Held until the change is written: another process (or store) updating the same
        // file waits, so neither loses the other's pins.
        let _file_lock = match &self.path {
            Some(path) => {
                let held = lock_file(path)?;
                *state = read_file(path)?;
                Some(held)
            }
            None => None,
        };
        let (out, changed) = change(&mut state);
        if changed && let Some(path) = &self.path {
            write_file(path, &state)?;
        }
        Ok(out)
    }

    /// The card pin of an endpoint.
    pub fn card_pin(&self, key: &str) -> Option<CardPin> {
        self.lock().cards.get(key).cloned()
    }

    /// Compares a card's digest with the endpoint's pin, pinning it when there is none.
    pub fn check_card(
        &self,
        key: &str,
        entry: &str,
        digest: &str,
        source: PinSource,
    ) -> Result<PinCheck, PinStoreError> {
        self.update(|file| match file.cards.get(key) {
            Some(pin) if pin.digest.eq_ignore_ascii_case(digest) => (PinCheck::Matches, false),
            Some(pin) => (
                PinCheck::Changed {
                    pinned: pin.digest.clone(),
                },
                false,
            ),
            None => {
                file.cards.insert(
                    key.to_owned(),
                    CardPin {
                        entry: entry.to_owned(),
                        digest: digest.to_ascii_lowercase(),
                        source,
                        pinned_at: now(),
                    },
                );
                (PinCheck::PinnedNow, true)
            }
        })
    }

    /// The pins of an MCP endpoint.
    pub fn mcp_pins(&self, key: &str) -> Option<McpPins> {
        self.lock().mcp.get(key).cloned()
    }

    /// The pin of one tool of an MCP endpoint.
    pub fn tool_pin(&self, key: &str, tool: &str) -> Option<ToolPin> {
        self.lock()
            .mcp
            .get(key)
            .and_then(|p| p.tools.get(tool))
            .cloned()
    }

    /// Compares a tool with its pin, pinning it when there is none.
    pub fn check_tool(
        &self,
        key: &str,
        entry: &str,
        tool: &str,
        pin: ToolPin,
    ) -> Result<PinCheck, PinStoreError> {
        self.update(|file| {
            let endpoint = file.mcp.entry(key.to_owned()).or_insert_with(|| McpPins {
                entry: entry.to_owned(),
                tools: BTreeMap::new(),
            });
            match endpoint.tools.get(tool) {
                Some(old) if old.digest == pin.digest => (PinCheck::Matches, false),
                Some(old) => (
                    PinCheck::Changed {
                        pinned: old.digest.clone(),
                    },
                    false,
                ),
                None => {
                    endpoint.tools.insert(tool.to_owned(), pin);
                    (PinCheck::PinnedNow, true)
                }
            }
        })
    }

    /// Removes every pin of `entry` (all its endpoints): its card and tools are pinned afresh
    /// on next use. Returns how many pins were removed.
    pub fn reset_entry(&self, entry: &str) -> Result<usize, PinStoreError> {
        self.update(|file| {
            let cards_before = file.cards.len();
            file.cards.retain(|_, pin| pin.entry != entry);
            let mut removed = cards_before - file.cards.len();
            file.mcp.retain(|_, pins| {
                if pins.entry == entry {
                    removed += pins.tools.len();
                    false
                } else {
                    true
                }
            });
            (removed, removed > 0)
        })
    }

    /// Removes the pin of one tool of `entry`. Returns whether one was removed.
    pub fn reset_tool(&self, entry: &str, tool: &str) -> Result<bool, PinStoreError> {
        self.update(|file| {
            let mut removed = false;
            for pins in file.mcp.values_mut().filter(|p| p.entry == entry) {
                removed |= pins.tools.remove(tool).is_some();
            }
            (removed, removed)
        })
    }

    /// Every card pin, by endpoint key.
    pub fn cards(&self) -> BTreeMap<String, CardPin> {
        self.lock().cards.clone()
    }

    /// Every MCP endpoint's pins, by endpoint key.
    pub fn mcp(&self) -> BTreeMap<String, McpPins> {
        self.lock().mcp.clone()
    }
}

fn read_file(path: &Path) -> Result<PinFile, PinStoreError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(PinFile {
                version: FORMAT_VERSION,
                ..PinFile::default()
            });
        }
        Err(e) => {
            return Err(PinStoreError::Read {
                path: path.to_owned(),
                reason: e.to_string(),
            });
        }
    };
    let file: PinFile = serde_json::from_str(&text).map_err(|e| PinStoreError::Invalid {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    if file.version > FORMAT_VERSION {
        return Err(PinStoreError::Invalid {
            path: path.to_owned(),
            reason: format!(
                "format version {} is newer than this orrery reads ({FORMAT_VERSION})",
                file.version
            ),
        });
    }
    Ok(file)
}

/// Takes an exclusive advisory lock on `<file>.lock` beside the pin file (the pin file itself is
/// replaced by a rename on every write, so it cannot carry the lock). Released when the
/// returned handle is dropped.
fn lock_file(path: &Path) -> Result<std::fs::File, PinStoreError> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    let err = |e: std::io::Error| PinStoreError::Write {
        path: lock_path.clone(),
        reason: format!("cannot lock: {e}"),
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(err)?;
    file.lock().map_err(err)?;
    Ok(file)
}

fn write_file(path: &Path, file: &PinFile) -> Result<(), PinStoreError> {
    let err = |e: std::io::Error| PinStoreError::Write {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let mut out = file.clone();
    out.version = FORMAT_VERSION;
    let text = serde_json::to_string_pretty(&out).map_err(|e| PinStoreError::Write {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let tmp = path.with_extension(format!("json.tmp-{}", std::process::id()));
    std::fs::write(&tmp, text + "\n").map_err(err)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(e)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool_pin(digest: &str) -> ToolPin {
        ToolPin {
            digest: digest.into(),
            description: Some("d".into()),
            input_schema: json!({"type": "object"}),
            annotations: None,
            pinned_at: now(),
        }
    }

    #[test]
    fn a_card_is_pinned_on_first_use_and_a_different_digest_is_a_change() {
        let store = PinStore::in_memory();
        assert_eq!(
            store
                .check_card("k", "writer", "AA", PinSource::FirstUse)
                .unwrap(),
            PinCheck::PinnedNow
        );
        assert_eq!(
            store
                .check_card("k", "writer", "aa", PinSource::FirstUse)
                .unwrap(),
            PinCheck::Matches
        );
        assert_eq!(
            store
                .check_card("k", "writer", "bb", PinSource::FirstUse)
                .unwrap(),
            PinCheck::Changed {
                pinned: "aa".into()
            }
        );
        assert_eq!(
            store.card_pin("k").unwrap().digest,
            "aa",
            "a change never replaces the pin"
        );
    }

    #[test]
    fn pins_survive_reopening_the_file_and_reset_removes_only_that_entry() {
        let dir = std::env::temp_dir().join(format!("orrery-pins-{}", uuid::Uuid::new_v4()));
        let path = dir.join("nested").join("pins.json");
        {
            let store = PinStore::open(&path).unwrap();
            store
                .check_card("card-a", "a", "11", PinSource::Config)
                .unwrap();
            store
                .check_tool("mcp-b", "b", "search", tool_pin("22"))
                .unwrap();
            store
                .check_tool("mcp-b", "b", "get", tool_pin("33"))
                .unwrap();
            store
                .check_tool("mcp-c", "c", "search", tool_pin("44"))
                .unwrap();
        }
        let store = PinStore::open(&path).unwrap();
        assert_eq!(store.card_pin("card-a").unwrap().source, PinSource::Config);
        assert_eq!(
            store
                .check_tool("mcp-b", "b", "search", tool_pin("99"))
                .unwrap(),
            PinCheck::Changed {
                pinned: "22".into()
            }
        );
        assert_eq!(store.reset_entry("b").unwrap(), 2);
        assert!(store.tool_pin("mcp-b", "search").is_none());
        assert!(
            store.tool_pin("mcp-c", "search").is_some(),
            "other entries keep their pins"
        );
        assert_eq!(
            PinStore::open(&path).unwrap().mcp().len(),
            1,
            "the reset was written"
        );
        assert!(store.reset_tool("c", "search").unwrap());
        assert!(!store.reset_tool("c", "search").unwrap());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_second_process_writing_the_same_file_keeps_the_other_pins() {
        let path = std::env::temp_dir().join(format!("orrery-pins-{}.json", uuid::Uuid::new_v4()));
        let one = PinStore::open(&path).unwrap();
        let two = PinStore::open(&path).unwrap();
        one.check_card("k1", "a", "11", PinSource::FirstUse)
            .unwrap();
        two.check_card("k2", "b", "22", PinSource::FirstUse)
            .unwrap();
        let reread = PinStore::open(&path).unwrap();
        assert_eq!(reread.cards().len(), 2);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_corrupt_file_is_refused_with_a_way_out() {
        let path = std::env::temp_dir().join(format!("orrery-pins-{}.json", uuid::Uuid::new_v4()));
        std::fs::write(&path, "{not json").unwrap();
        let err = PinStore::open(&path).unwrap_err();
        assert!(err.to_string().contains("fix or delete it"), "{err}");
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn concurrent_writers_of_one_file_lose_no_pin() {
        // Several stores on one file (runs in other processes) pin at the same time: the
        // read-modify-write is under a file lock, so every pin survives.
        let dir = std::env::temp_dir().join(format!(
            "orrery-pins-lock-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        let path = dir.join("pins.json");
        let threads: Vec<_> = (0..6)
            .map(|t| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let store = PinStore::open(&path).unwrap();
                    for i in 0..20 {
                        let key = format!("https://a{t}-{i}.example/card");
                        let check = store
                            .check_card(&key, &format!("e{t}"), "aa", PinSource::FirstUse)
                            .unwrap();
                        assert_eq!(check, PinCheck::PinnedNow);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let store = PinStore::open(&path).unwrap();
        assert_eq!(store.cards().len(), 120);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn fixed_pins_match_only_what_they_were_given_and_never_pin_on_first_use() {
        let mut fixed = FixedPins::default();
        fixed.cards.insert("card-key".into(), "aa".into());
        fixed
            .tools
            .entry("mcp-key".into())
            .or_default()
            .insert("search".into(), "t1".into());
        let pins: &dyn Pins = &fixed;
        assert_eq!(
            pins.check_card("card-key", "writer", "AA").unwrap(),
            PinCheck::Matches
        );
        assert_eq!(
            pins.check_card("card-key", "writer", "bb").unwrap(),
            PinCheck::Changed {
                pinned: "aa".into()
            }
        );
        assert_eq!(
            pins.check_card("other", "writer", "aa").unwrap(),
            PinCheck::Unpinned
        );
        assert_eq!(
            pins.check_card("other", "writer", "aa").unwrap(),
            PinCheck::Unpinned,
            "still unpinned"
        );
        assert_eq!(
            pins.check_tool("mcp-key", "tools", "search", tool_pin("t1"))
                .unwrap(),
            PinCheck::Matches
        );
        assert_eq!(
            pins.check_tool("mcp-key", "tools", "search", tool_pin("t2"))
                .unwrap(),
            PinCheck::Changed {
                pinned: "t1".into()
            }
        );
        assert_eq!(
            pins.check_tool("mcp-key", "tools", "other", tool_pin("t1"))
                .unwrap(),
            PinCheck::Unpinned
        );
        assert!(pins.stored_tool("mcp-key", "search").is_none());
    }

    #[test]
    fn a_plans_pins_refuse_a_changed_or_missing_tool_and_card_and_accept_the_pinned_ones() {
        let schema = serde_json::json!({"type": "object", "properties": {"q": {"type": "string"}}});
        let annotations = serde_json::json!({"readOnlyHint": true});
        let pinned =
            crate::pin::pinned_tool("search", Some("Search."), &schema, Some(&annotations))
                .unwrap();
        assert_eq!(pinned.read_only_hint, Some(true));
        let entries: Vec<PlannedEntry> = serde_json::from_value(serde_json::json!([
            {"name": "tools", "spec": {"mcp": {"url": "https://t.example/mcp", "tools": ["search"]}},
             "pins": {"tools": [pinned]}},
            {"name": "writer", "spec": {"a2a": {"cardUrl": "https://w.example/.well-known/agent-card.json", "skills": ["draft"]}},
             "pins": {"cardSHA256": "AA"}},
        ]))
        .unwrap();
        let fixed = FixedPins::from_plan_entries(&entries);
        let pins: &dyn Pins = &fixed;
        let listed = |description: &str, annotations: Option<serde_json::Value>| ToolPin {
            digest: "d".into(),
            description: Some(description.into()),
            input_schema: schema.clone(),
            annotations,
            pinned_at: String::new(),
        };
        assert_eq!(
            pins.check_tool(
                "any-key",
                "tools",
                "search",
                listed("Search.", Some(annotations.clone()))
            )
            .unwrap(),
            PinCheck::Matches
        );
        assert!(matches!(
            pins.check_tool(
                "any-key",
                "tools",
                "search",
                listed("Search, then mail it.", Some(annotations.clone()))
            )
            .unwrap(),
            PinCheck::Changed { .. }
        ));
        assert!(
            matches!(
                pins.check_tool("any-key", "tools", "search", listed("Search.", None))
                    .unwrap(),
                PinCheck::Changed { .. }
            ),
            "a dropped readOnlyHint is a change"
        );
        assert_eq!(
            pins.check_tool("any-key", "tools", "delete", listed("Search.", None))
                .unwrap(),
            PinCheck::Unpinned
        );
        assert_eq!(
            pins.check_tool(
                "any-key",
                "other",
                "search",
                listed("Search.", Some(annotations))
            )
            .unwrap(),
            PinCheck::Unpinned,
            "an entry the plan carries no pins for"
        );
        assert_eq!(
            pins.check_card("k", "writer", "aa").unwrap(),
            PinCheck::Matches
        );
        assert!(matches!(
            pins.check_card("k", "writer", "bb").unwrap(),
            PinCheck::Changed { .. }
        ));
        assert_eq!(
            pins.check_card("k", "tools", "aa").unwrap(),
            PinCheck::Unpinned
        );
    }

    #[test]
    fn the_file_store_behind_the_trait_pins_on_first_use_and_keeps_the_definition() {
        let store = PinStore::in_memory();
        let pins: &dyn Pins = &store;
        assert_eq!(
            pins.check_card("k", "writer", "aa").unwrap(),
            PinCheck::PinnedNow
        );
        assert_eq!(store.card_pin("k").unwrap().source, PinSource::FirstUse);
        assert_eq!(
            pins.check_tool("m", "tools", "search", tool_pin("t1"))
                .unwrap(),
            PinCheck::PinnedNow
        );
        assert_eq!(
            pins.stored_tool("m", "search").map(|p| p.digest),
            Some("t1".to_owned())
        );
        assert_eq!(pins.describe(), "an in-memory pin store");
    }
}
