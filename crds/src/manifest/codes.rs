//! Codes of findings about manifests themselves (reading them, and what the apiserver's schema
//! and CEL rules would refuse), beside the validator's codes in [`crate::codes`]. Two are
//! shared with the validator: `missing_field` and `acting_not_allowed`.

use crate::codes::CodeInfo;
use crate::common::Severity;

pub use crate::codes::{ACTING_NOT_ALLOWED, MISSING_FIELD};

/// A document that is not a mapping.
pub const NOT_A_RESOURCE: &str = "not_a_resource";
/// A field the resource does not have (fields are never ignored).
pub const UNKNOWN_FIELD: &str = "unknown_field";
/// An enum field with a value it does not take (e.g. `pattern: Pipelin`).
pub const UNKNOWN_VALUE: &str = "unknown_value";
/// A field of the wrong type (e.g. a string for a number).
pub const INVALID_TYPE: &str = "invalid_type";
/// A field whose value does not fit it (e.g. a negative number for an unsigned one).
pub const INVALID_VALUE: &str = "invalid_value";
/// A kind our group does not have.
pub const UNKNOWN_KIND: &str = "unknown_kind";
/// A version of our group that is not served.
pub const UNKNOWN_VERSION: &str = "unknown_version";
/// The same kind/namespace/name defined twice.
pub const DUPLICATE_RESOURCE: &str = "duplicate_resource";
/// Not exactly one of a one-of (RegistryEntry mcp/a2a/model; StudioRun compositionRef/composition).
pub const EXACTLY_ONE_OF: &str = "exactly_one_of";
/// A RegistryEntry name that cannot become part of a tool name.
pub const INVALID_NAME: &str = "invalid_name";
/// An entry URL that is plain http to a non-loopback host.
pub const INSECURE_URL: &str = "insecure_url";
/// An entry URL whose host is an address the network guard never connects to.
pub const UNREACHABLE_ADDRESS: &str = "unreachable_address";
/// An MCP tool listed read-only but not in the entry's tools.
pub const READ_ONLY_NOT_LISTED: &str = "read_only_not_listed";
/// A Scripted model entry without a script.
pub const MISSING_SCRIPT: &str = "missing_script";
/// A real model provider without an API key or a base URL.
pub const MISSING_API_KEY: &str = "missing_api_key";
/// An A2A card URL that is not the agent's well-known card.
pub const CARD_NOT_WELL_KNOWN: &str = "card_not_well_known";
/// A card-signature key set that cannot vouch for a card (not a JWKS, a private key, no kid…).
pub const INVALID_KEY_SET: &str = "invalid_key_set";
/// A value the CRD's OpenAPI schema refuses (too long, out of range, too many items, a
/// required field missing…).
pub const SCHEMA_VIOLATION: &str = "schema_violation";
/// A StudioRun's compositionRef names a Composition not among the files (warning).
pub const COMPOSITION_NOT_FOUND: &str = "composition_not_found";

/// Every manifest code: (code, severity, meaning, where the rule comes from).
pub const MANIFEST_CODES: &[CodeInfo] = &[
    (
        NOT_A_RESOURCE,
        Severity::Error,
        "a document is not a mapping with apiVersion and kind",
        "manifests",
    ),
    (
        MISSING_FIELD,
        Severity::Error,
        "apiVersion, kind, metadata.name, spec or a required field is missing",
        "CRD schema",
    ),
    (
        UNKNOWN_FIELD,
        Severity::Error,
        "a field the resource does not have",
        "1.62",
    ),
    (
        UNKNOWN_VALUE,
        Severity::Error,
        "an enum value the field does not take",
        "CRD schema",
    ),
    (
        INVALID_TYPE,
        Severity::Error,
        "a field of the wrong type",
        "CRD schema",
    ),
    (
        INVALID_VALUE,
        Severity::Error,
        "a value that does not fit its field",
        "CRD schema",
    ),
    (
        UNKNOWN_KIND,
        Severity::Error,
        "a kind studio.orrery.dev does not have",
        "manifests",
    ),
    (
        UNKNOWN_VERSION,
        Severity::Error,
        "a version of studio.orrery.dev that is not served",
        "manifests",
    ),
    (
        DUPLICATE_RESOURCE,
        Severity::Error,
        "the same resource defined twice",
        "manifests",
    ),
    (
        EXACTLY_ONE_OF,
        Severity::Error,
        "not exactly one of mcp/a2a/model, or of compositionRef/composition",
        "CRD CEL",
    ),
    (
        INVALID_NAME,
        Severity::Error,
        "a RegistryEntry name that cannot become part of a tool name",
        "CRD CEL, 1.9",
    ),
    (
        INSECURE_URL,
        Severity::Error,
        "plain http to a host other than loopback",
        "5.6, 6.18",
    ),
    (
        UNREACHABLE_ADDRESS,
        Severity::Error,
        "an entry URL whose host is an address the network guard never connects to (link-local, cloud metadata, unspecified, multicast, documentation, reserved, a tunnel, an IPv6 form embedding a non-public IPv4, or a private address on an entry without privateNetwork)",
        "5.22, 5.27",
    ),
    (
        READ_ONLY_NOT_LISTED,
        Severity::Error,
        "a read-only MCP tool not in the entry's tools",
        "1.59",
    ),
    (
        ACTING_NOT_ALLOWED,
        Severity::Error,
        "an Acting entry where the deployment does not allow acting remotes",
        "1.77",
    ),
    (
        MISSING_SCRIPT,
        Severity::Error,
        "a Scripted model without a script",
        "CRD CEL",
    ),
    (
        MISSING_API_KEY,
        Severity::Error,
        "a real provider without apiKey or baseUrl",
        "CRD CEL",
    ),
    (
        CARD_NOT_WELL_KNOWN,
        Severity::Error,
        "an A2A cardUrl whose path does not end in /.well-known/agent-card.json",
        "A2A §8.2, anchor 25",
    ),
    (
        INVALID_KEY_SET,
        Severity::Error,
        "a cardSignature.jwks that is not a public JWKS of ES256, RS256 or EdDSA keys, each with a unique kid",
        "A2A §8.4, anchor 25",
    ),
    (
        SCHEMA_VIOLATION,
        Severity::Error,
        "a value the CRD's OpenAPI schema refuses: a length, range, item count, pattern or required field",
        "CRD schema",
    ),
    (
        COMPOSITION_NOT_FOUND,
        Severity::Warning,
        "a run's Composition is not among the files checked",
        "manifests",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn manifest_codes_are_distinct_and_share_only_two_codes_with_the_validator() {
        let ours: BTreeSet<&str> = MANIFEST_CODES.iter().map(|c| c.0).collect();
        assert_eq!(ours.len(), MANIFEST_CODES.len());
        let shared: Vec<&str> = crate::codes::ALL_CODES
            .iter()
            .map(|c| c.0)
            .filter(|c| ours.contains(c))
            .collect();
        assert_eq!(shared.len(), 2, "{shared:?}");
        assert!(shared.contains(&MISSING_FIELD) && shared.contains(&ACTING_NOT_ALLOWED));
    }
}
