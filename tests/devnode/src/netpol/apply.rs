//! Loading a pod's ruleset into its network namespace, and proving a ruleset's syntax in a
//! throwaway one. Never the host's own tables.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::Ruleset;
use crate::net::{NetError, run};

/// The table of every pod's rules, as `nft list table` names it.
pub const TABLE: &str = "inet orrery";

const APPLY_FIX: &str = "check the ruleset with `nft -c -f -` (netpol::check_syntax) and that the \
                         namespace exists (`ip netns list`)";

/// Loads `ruleset` into namespace `netns` in one transaction (`ip netns exec <netns> nft -f
/// -`): the table is replaced as a whole.
pub fn apply(netns: &str, ruleset: &Ruleset) -> Result<(), NetError> {
    run(
        "ip",
        &["netns", "exec", netns, "nft", "-f", "-"],
        Some(&ruleset.text),
        APPLY_FIX,
    )
    .map(drop)
}

/// Removes the table from namespace `netns` (the pod is no longer selected by anything), if it
/// is there.
pub fn remove(netns: &str) -> Result<(), NetError> {
    let text = format!("table {TABLE}\ndelete table {TABLE}\n");
    run(
        "ip",
        &["netns", "exec", netns, "nft", "-f", "-"],
        Some(&text),
        APPLY_FIX,
    )
    .map(drop)
}

/// Checks `text` with `nft -c -f -` in a throwaway network namespace (`unshare --net`, or
/// `unshare --net --map-root-user` when not root): the kernel's own parser proves the syntax
/// without loading anything anywhere.
pub fn check_syntax(text: &str) -> Result<(), NetError> {
    let fix = "the ruleset is not valid nftables; see the line nft names";
    match run(
        "unshare",
        &["--net", "nft", "-c", "-f", "-"],
        Some(text),
        fix,
    ) {
        Err(NetError::Command { stderr, .. })
            if stderr.starts_with("unshare:") && stderr.contains("Operation not permitted") =>
        {
            run(
                "unshare",
                &["--net", "--map-root-user", "nft", "-c", "-f", "-"],
                Some(text),
                fix,
            )
            .map(drop)
        }
        other => other.map(drop),
    }
}

/// Keeps every pod's applied ruleset and loads a new one only when its text changes (the set
/// of policies selecting the pod, or their peers' addresses, changed).
#[derive(Debug, Default)]
pub struct Enforcer {
    applied: Mutex<BTreeMap<String, String>>,
}

impl Enforcer {
    pub fn new() -> Enforcer {
        Enforcer::default()
    }

    /// Applies `ruleset` to `netns` unless that very text is already there; whether it loaded.
    pub fn sync(&self, netns: &str, ruleset: &Ruleset) -> Result<bool, NetError> {
        let mut applied = self.applied.lock().unwrap_or_else(|p| p.into_inner());
        if applied.get(netns) == Some(&ruleset.text) {
            return Ok(false);
        }
        apply(netns, ruleset)?;
        applied.insert(netns.to_owned(), ruleset.text.clone());
        Ok(true)
    }

    /// Forgets `netns` (its namespace is gone, or its table was removed).
    pub fn forget(&self, netns: &str) {
        self.applied
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(netns);
    }
}
