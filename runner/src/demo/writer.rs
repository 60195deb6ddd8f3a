//! `demo-writer`: the demo fleet's A2A agent. Deterministic, no model: its one skill, `draft`,
//! turns notes into a short release-notes draft and revises a draft sent back with a
//! reviewer's `Feedback:` (the rules are in [`super::draft`]). It completes a task at once
//! with the draft as an artifact named `draft` (`text/markdown`), and rejects requests without
//! text or longer than [`MAX_REQUEST_CHARS`]. Notes whose first line is [`UNKNOWN_VERSION`]
//! (`# Version ?`) make it ask which version they are for (the task waits, `input-required`,
//! which a run hands to a person); the answer completes the task with the version filled in.

use async_trait::async_trait;
use std::collections::BTreeMap;

pub use super::draft::draft;
use crate::a2a::server::{AgentHandler, AgentReply, AgentRequest};
use crate::a2a::types::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, BINDING_JSONRPC,
    HttpAuthSecurityScheme, Message, PROTOCOL_VERSION, Part, Role, SecurityRequirement,
    SecurityScheme, StringList,
};

/// The writer's only skill.
pub const SKILL_ID: &str = "draft";
/// The longest request text the writer takes, in characters.
pub const MAX_REQUEST_CHARS: usize = 16_384;
/// A first line that leaves the version open: the writer asks for it.
pub const UNKNOWN_VERSION: &str = "# Version ?";
/// What the writer asks when the version is open.
pub const VERSION_QUESTION: &str =
    "Which version are these release notes for? Answer with the version alone, e.g. 2.5.";
/// The longest version the writer takes as an answer, in characters.
pub const MAX_VERSION_CHARS: usize = 32;
/// The security scheme name on the card when a bearer token is required.
pub const BEARER_SCHEME: &str = "bearer";

/// The `demo-writer` agent.
#[derive(Clone, Debug)]
pub struct DemoWriter {
    card: AgentCard,
}

impl DemoWriter {
    /// A writer whose card points at `rpc_url`, declaring a bearer scheme when
    /// `bearer_required` (the server must then be configured with the token).
    pub fn new(rpc_url: &str, bearer_required: bool) -> Self {
        DemoWriter {
            card: writer_card(rpc_url, bearer_required),
        }
    }
}

/// The writer's agent card: one JSON-RPC 1.0 interface, streaming, the `draft` skill.
pub fn writer_card(rpc_url: &str, bearer_required: bool) -> AgentCard {
    let (security_schemes, security_requirements) = if bearer_required {
        let scheme = SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
            description: Some("The token the fleet was started with".to_owned()),
            scheme: "Bearer".to_owned(),
            bearer_format: None,
        });
        let requirement = SecurityRequirement {
            schemes: BTreeMap::from([(BEARER_SCHEME.to_owned(), StringList::default())]),
        };
        (
            BTreeMap::from([(BEARER_SCHEME.to_owned(), scheme)]),
            vec![requirement],
        )
    } else {
        (BTreeMap::new(), Vec::new())
    };
    AgentCard {
        name: "demo-writer".to_owned(),
        description: "Deterministic release-notes writer of the Orrery Studio demo fleet (no \
                      model): drafts release notes from notes and revises them from a \
                      reviewer's feedback."
            .to_owned(),
        supported_interfaces: vec![AgentInterface {
            url: rpc_url.to_owned(),
            protocol_binding: BINDING_JSONRPC.to_owned(),
            tenant: None,
            protocol_version: PROTOCOL_VERSION.to_owned(),
        }],
        version: env!("CARGO_PKG_VERSION").to_owned(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            ..AgentCapabilities::default()
        },
        security_schemes,
        security_requirements,
        default_input_modes: vec!["text/plain".to_owned()],
        default_output_modes: vec!["text/markdown".to_owned(), "text/plain".to_owned()],
        skills: vec![AgentSkill {
            id: SKILL_ID.to_owned(),
            name: "Draft release notes".to_owned(),
            description: "Turns notes into a short release-notes draft: a title, one bullet per \
                          note, the source links and keywords. Add a line starting with \
                          'Feedback:' to revise a draft."
                .to_owned(),
            tags: vec![
                "writing".to_owned(),
                "release-notes".to_owned(),
                "demo".to_owned(),
            ],
            examples: vec![
                "Kafka consumer lag".to_owned(),
                "# Release notes: Kafka consumer lag\n- Lag is measured per partition.\n\
                 Feedback: cite a source for every claim."
                    .to_owned(),
            ],
            ..AgentSkill::default()
        }],
        ..AgentCard::default()
    }
}

#[async_trait]
impl AgentHandler for DemoWriter {
    fn card(&self) -> &AgentCard {
        &self.card
    }

    async fn handle(&self, request: AgentRequest) -> AgentReply {
        // An answer to the version question: the notes are the task's first message.
        let asked = request
            .history
            .iter()
            .find(|m| m.role == Role::User)
            .map(Message::joined_text)
            .filter(|notes| first_line_is_open(notes));
        let text = match asked {
            Some(notes) => match version_answer(&request.message.joined_text()) {
                Ok(version) => with_version(&notes, &version),
                Err(not_a_version) => return AgentReply::rejected(not_a_version.to_string()),
            },
            None => request.message.joined_text(),
        };
        if first_line_is_open(&text) {
            return AgentReply::input_required(VERSION_QUESTION);
        }
        if text.trim().is_empty() {
            return AgentReply::rejected(
                "demo-writer reads text parts only and this request has no text; send the notes \
                 to draft from as a text part",
            );
        }
        let chars = text.chars().count();
        if chars > MAX_REQUEST_CHARS {
            return AgentReply::rejected(format!(
                "the request has {chars} characters; demo-writer takes at most {MAX_REQUEST_CHARS}"
            ));
        }
        let markdown_ok = request.accepted_output_modes.is_empty()
            || request
                .accepted_output_modes
                .iter()
                .any(|m| m.starts_with("text/markdown") || m == "text/*" || m == "*/*");
        let media_type = if markdown_ok {
            "text/markdown"
        } else {
            "text/plain"
        };
        AgentReply::completed(
            SKILL_ID,
            vec![Part::text(draft(&text)).with_media_type(media_type)],
        )
    }
}

/// Whether the notes' first line leaves the version open.
fn first_line_is_open(notes: &str) -> bool {
    notes.lines().next().map(str::trim) == Some(UNKNOWN_VERSION)
}

/// An answer to the version question that is not a version; its message is the rejection.
#[derive(Debug, thiserror::Error)]
#[error(
    "the answer is not a version: demo-writer takes one line of at most {MAX_VERSION_CHARS} letters, digits, '.', '-' or '+', e.g. 2.5"
)]
struct NotAVersion;

/// A version as answered: one short line of letters, digits, `.`, `-` and `+`.
fn version_answer(answer: &str) -> Result<String, NotAVersion> {
    let version = answer.trim().trim_start_matches(['v', 'V']);
    let fine = !version.is_empty()
        && version.chars().count() <= MAX_VERSION_CHARS
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    if fine {
        Ok(version.to_owned())
    } else {
        Err(NotAVersion)
    }
}

/// The notes with their open first line replaced by `# Version <version>`.
fn with_version(notes: &str, version: &str) -> String {
    let rest = notes.split_once('\n').map_or("", |(_, rest)| rest);
    format!("# Version {version}\n{rest}")
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
