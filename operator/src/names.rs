//! Names of the objects the operator creates.

use sha2::{Digest, Sha256};

/// Object names (DNS subdomains) hold at most this many characters.
pub const MAX_NAME: usize = 253;

/// `<base><suffix>`, with `base` shortened and tagged with 8 hex characters of its SHA-256
/// when the whole would be longer than an object name may be, so two long bases sharing a
/// prefix still give distinct names.
pub fn suffixed(base: &str, suffix: &str) -> String {
    if base.len() + suffix.len() <= MAX_NAME {
        return format!("{base}{suffix}");
    }
    let hash = hex::encode(Sha256::digest(base.as_bytes()));
    let tag = hash.get(..8).unwrap_or(&hash);
    let room = MAX_NAME.saturating_sub(suffix.len() + tag.len() + 1);
    let mut prefix: String = base.chars().take(room).collect();
    while prefix.ends_with(['-', '.']) {
        prefix.pop();
    }
    format!("{prefix}-{tag}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_name_is_kept_and_a_long_one_is_cut_tagged_and_distinct() {
        assert_eq!(suffixed("notes", "-r3"), "notes-r3");
        let a = suffixed(&"a".repeat(253), "-runner");
        let b = suffixed(&format!("{}b", "a".repeat(252)), "-runner");
        assert!(
            a.len() <= MAX_NAME && b.len() <= MAX_NAME,
            "{} {}",
            a.len(),
            b.len()
        );
        assert!(a.ends_with("-runner"));
        assert_ne!(a, b);
        let dotted = suffixed(&format!("{}.{}", "a".repeat(230), "b".repeat(30)), "-plan");
        assert!(!dotted.contains(".-"), "{dotted}");
    }
}
