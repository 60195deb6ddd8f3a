//! The contract between the operator and a probe pod (`orrery probe`), both ways, as serde
//! types only: the [`ProbeRequest`] the operator hands the pod (the entry to probe) and the
//! [`ProbeReport`] the probe writes as its termination message and the operator reads back
//! ([`parse_report`]). One type on each side of the wire, so the two cannot drift.
//!
//! The kubelet keeps at most [`MAX_TERMINATION_MESSAGE_BYTES`] of a termination message, so the
//! report is serialized compactly ([`ProbeReport::to_message`]: short keys, each tool as an
//! array); a report whose pins would not fit becomes an error report saying so and what to do.

use crate::plan_document::EntryPins;
use crate::registry::{PinnedTool, RegistryEntrySpec};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The kubelet's cap on a termination message, in bytes.
pub const MAX_TERMINATION_MESSAGE_BYTES: usize = 4096;

/// An error message in a report is cut to this many bytes, so an error report always fits.
pub const MAX_REPORT_ERROR_BYTES: usize = 2048;

/// Version of the report's wire form.
pub const PROBE_REPORT_VERSION: u32 = 1;

/// What a probe pod probes: one RegistryEntry's name, the generation whose spec it is, and
/// the spec. `orrery probe --entry FILE` reads this as JSON (`{"name", "generation", "spec"}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProbeRequest {
    /// The RegistryEntry's name.
    pub name: String,
    /// The generation of the entry the spec is from (0 outside a cluster).
    #[serde(default)]
    pub generation: i64,
    /// The entry's spec.
    pub spec: RegistryEntrySpec,
}

/// How a probe ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The endpoint was reached and pinned.
    Ok,
    /// It could not be reached, or answered with something the entry refuses.
    Error {
        /// What happened and what to do, at most [`MAX_REPORT_ERROR_BYTES`].
        message: String,
    },
}

/// What a probe found: for the entry and generation it probed, the outcome and the pins
/// (empty on an error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeReport {
    /// The RegistryEntry's name.
    pub entry: String,
    /// The generation probed.
    pub generation: i64,
    /// How it ended.
    pub outcome: ProbeOutcome,
    /// The card digest and skills (A2A), the listed tools (MCP, only those the entry allows)
    /// and the addresses the hosts resolved to.
    pub pins: EntryPins,
}

/// Why a termination message is not a probe report.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProbeReportError {
    /// Nothing was written (the probe crashed before it wrote its report).
    #[error("the probe wrote no report (an empty termination message)")]
    Empty,
    /// The message is not a report of this version.
    #[error("the probe's termination message is not a probe report: {0}")]
    NotAReport(String),
}

/// One tool on the wire: `[name, descriptionSha256, schemaSha256, annotationsSha256,
/// readOnlyHint]`.
#[derive(Serialize, Deserialize)]
struct WireTool(String, String, String, String, Option<bool>);

/// The report on the wire: short keys, so a report with many tools still fits the cap.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireReport {
    /// [`PROBE_REPORT_VERSION`].
    v: u32,
    /// The entry.
    e: String,
    /// The generation.
    g: i64,
    /// `ok` or `error`.
    o: String,
    /// The error message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    m: Option<String>,
    /// The card digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    c: Option<String>,
    /// The skills.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    s: Vec<String>,
    /// The tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    t: Vec<WireTool>,
    /// The resolved addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    a: Vec<String>,
}

fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max.saturating_sub(3);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

impl ProbeReport {
    /// A successful probe's report.
    pub fn ok(entry: &str, generation: i64, pins: EntryPins) -> Self {
        ProbeReport {
            entry: entry.to_owned(),
            generation,
            outcome: ProbeOutcome::Ok,
            pins,
        }
    }

    /// A failed probe's report (the message is cut to [`MAX_REPORT_ERROR_BYTES`]).
    pub fn error(entry: &str, generation: i64, message: impl Into<String>) -> Self {
        ProbeReport {
            entry: entry.to_owned(),
            generation,
            outcome: ProbeOutcome::Error {
                message: cut(message.into(), MAX_REPORT_ERROR_BYTES),
            },
            pins: EntryPins::default(),
        }
    }

    /// Whether the probe succeeded.
    pub fn is_ok(&self) -> bool {
        self.outcome == ProbeOutcome::Ok
    }

    fn wire(&self) -> WireReport {
        let (o, m) = match &self.outcome {
            ProbeOutcome::Ok => ("ok", None),
            ProbeOutcome::Error { message } => ("error", Some(message.clone())),
        };
        WireReport {
            v: PROBE_REPORT_VERSION,
            e: self.entry.clone(),
            g: self.generation,
            o: o.to_owned(),
            m,
            c: self.pins.card_sha256.clone(),
            s: self.pins.skills.clone(),
            t: self
                .pins
                .tools
                .iter()
                .map(|t| {
                    WireTool(
                        t.name.clone(),
                        t.description_sha256.clone(),
                        t.schema_sha256.clone(),
                        t.annotations_sha256.clone(),
                        t.read_only_hint,
                    )
                })
                .collect(),
            a: self.pins.resolved_addresses.clone(),
        }
    }

    fn line(&self) -> String {
        // Plain strings, numbers and lists always serialize.
        serde_json::to_string(&self.wire()).unwrap_or_default()
    }

    /// The report as the probe writes it: one compact JSON line of at most
    /// [`MAX_TERMINATION_MESSAGE_BYTES`]. A report whose pins do not fit becomes an error
    /// report that says how large it was and what to do.
    pub fn to_message(&self) -> String {
        let line = self.line();
        if line.len() <= MAX_TERMINATION_MESSAGE_BYTES {
            return line;
        }
        let message = format!(
            "the pins of entry '{}' ({} tools, {} skills, {} addresses) take {} bytes, over the {} bytes a termination message holds; list fewer tools in spec.mcp.tools (about 15 fit), or split the server into several entries",
            self.entry,
            self.pins.tools.len(),
            self.pins.skills.len(),
            self.pins.resolved_addresses.len(),
            line.len(),
            MAX_TERMINATION_MESSAGE_BYTES
        );
        ProbeReport::error(&self.entry, self.generation, message).line()
    }
}

/// Reads a termination message: its last non-empty line must be a report of this version.
pub fn parse_report(message: &str) -> Result<ProbeReport, ProbeReportError> {
    let line = message
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .ok_or(ProbeReportError::Empty)?;
    let wire: WireReport =
        serde_json::from_str(line).map_err(|e| ProbeReportError::NotAReport(e.to_string()))?;
    if wire.v != PROBE_REPORT_VERSION {
        return Err(ProbeReportError::NotAReport(format!(
            "version {} (this operator reads version {PROBE_REPORT_VERSION}; run the runner image that matches the operator)",
            wire.v
        )));
    }
    let outcome = match (wire.o.as_str(), wire.m) {
        ("ok", None) => ProbeOutcome::Ok,
        ("error", Some(message)) => ProbeOutcome::Error { message },
        (other, _) => {
            return Err(ProbeReportError::NotAReport(format!(
                "outcome {other:?} (expected \"ok\" without a message or \"error\" with one)"
            )));
        }
    };
    Ok(ProbeReport {
        entry: wire.e,
        generation: wire.g,
        outcome,
        pins: EntryPins {
            card_sha256: wire.c,
            skills: wire.s,
            tools: wire
                .t
                .into_iter()
                .map(|WireTool(name, d, s, a, hint)| PinnedTool {
                    name,
                    description_sha256: d,
                    schema_sha256: s,
                    annotations_sha256: a,
                    read_only_hint: hint,
                })
                .collect(),
            resolved_addresses: wire.a,
        },
    })
}

/// The digest a person names to accept pins (`studio.orrery.dev/accept-pins`): lowercase hex
/// SHA-256 of the pinned card digest, skills and tools (not the addresses: a host moving to
/// another address is not a change of what it serves). The first 16 hex characters are
/// enough to name one probe's pins and short enough to type.
pub fn pins_digest(pins: &EntryPins) -> String {
    let trust = EntryPins {
        resolved_addresses: Vec::new(),
        ..pins.clone()
    };
    let bytes = serde_json::to_vec(&trust).unwrap_or_default();
    let hash = hex::encode(Sha256::digest(&bytes));
    hash.get(..16).unwrap_or(&hash).to_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;

    fn tool(name: &str) -> PinnedTool {
        PinnedTool {
            name: name.to_owned(),
            description_sha256: "d".repeat(64),
            schema_sha256: "s".repeat(64),
            annotations_sha256: "a".repeat(64),
            read_only_hint: Some(true),
        }
    }

    fn pins(tools: usize) -> EntryPins {
        EntryPins {
            card_sha256: Some("c".repeat(64)),
            skills: vec!["draft".into()],
            tools: (0..tools).map(|i| tool(&format!("tool_{i}"))).collect(),
            resolved_addresses: vec!["203.0.113.7".into(), "2001:db8::7".into()],
        }
    }

    #[test]
    fn a_report_written_as_a_message_reads_back_the_same() {
        for report in [
            ProbeReport::ok("writer", 3, pins(2)),
            ProbeReport::error("writer", 4, "the card could not be fetched: HTTP 503"),
        ] {
            let message = report.to_message();
            assert!(!message.contains('\n'), "one line: {message}");
            assert_eq!(parse_report(&message), Ok(report.clone()));
            // The kubelet may keep a trailing newline or an earlier log line.
            assert_eq!(
                parse_report(&format!("starting\n{message}\n\n")),
                Ok(report)
            );
        }
    }

    #[test]
    fn pins_too_large_for_the_termination_message_become_an_error_saying_what_to_do() {
        let fits = ProbeReport::ok("tools", 1, pins(12)).to_message();
        assert!(
            fits.len() <= MAX_TERMINATION_MESSAGE_BYTES,
            "{}",
            fits.len()
        );
        assert!(parse_report(&fits).expect("report").is_ok());
        let big = ProbeReport::ok("tools", 1, pins(128));
        let message = big.to_message();
        assert!(message.len() <= MAX_TERMINATION_MESSAGE_BYTES);
        let back = parse_report(&message).expect("report");
        match back.outcome {
            ProbeOutcome::Error { message } => {
                assert!(message.contains("128 tools"), "{message}");
                assert!(
                    message.contains("list fewer tools in spec.mcp.tools"),
                    "{message}"
                );
            }
            ProbeOutcome::Ok => panic!("a report over the cap must not read as ok"),
        }
        assert!(back.pins.tools.is_empty());
        let long_error = ProbeReport::error("tools", 1, "é".repeat(5000)).to_message();
        assert!(long_error.len() <= MAX_TERMINATION_MESSAGE_BYTES);
    }

    #[test]
    fn a_garbage_or_empty_message_is_refused() {
        assert_eq!(parse_report(""), Err(ProbeReportError::Empty));
        assert_eq!(parse_report("\n  \n"), Err(ProbeReportError::Empty));
        for garbage in [
            "panicked at src/main.rs:1",
            r#"{"v":1,"e":"x","g":1,"o":"maybe"}"#,
            r#"{"v":1,"e":"x","g":1,"o":"error"}"#,
            r#"{"v":2,"e":"x","g":1,"o":"ok"}"#,
            r#"{"v":1,"e":"x","g":1,"o":"ok","extra":1}"#,
            r#"{"v":1,"e":"x","g":1,"o":"ok","t":[["a","b"]]}"#,
        ] {
            assert!(
                matches!(parse_report(garbage), Err(ProbeReportError::NotAReport(_))),
                "{garbage}"
            );
        }
    }

    #[test]
    fn the_pins_digest_ignores_addresses_and_changes_with_any_pin() {
        let base = pins(2);
        let moved = EntryPins {
            resolved_addresses: vec!["198.51.100.1".into()],
            ..base.clone()
        };
        assert_eq!(pins_digest(&base), pins_digest(&moved));
        assert_eq!(pins_digest(&base).len(), 16);
        let mut changed = base.clone();
        changed.tools[1].schema_sha256 = "x".repeat(64);
        assert_ne!(pins_digest(&base), pins_digest(&changed));
        let mut card = base.clone();
        card.card_sha256 = Some("e".repeat(64));
        assert_ne!(pins_digest(&base), pins_digest(&card));
    }

    #[test]
    fn a_probe_request_reads_name_generation_and_spec() {
        let request: ProbeRequest = serde_json::from_str(
            r#"{"name":"w","generation":2,"spec":{"a2a":{"cardUrl":"https://w.example/card","skills":["draft"]}}}"#,
        )
        .expect("request");
        assert_eq!((request.name.as_str(), request.generation), ("w", 2));
        assert!(request.spec.a2a.is_some());
        assert!(serde_json::from_str::<ProbeRequest>(r#"{"name":"w","spec":{},"x":1}"#).is_err());
    }
}
