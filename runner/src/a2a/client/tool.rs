//! A remote agent's skill as a node's model sees it: `a2a_<entry>_<skill>(request)`.

use super::agent::A2aAgent;
use super::limits::MAX_REQUEST_CHARS;
use crate::model::ToolSpec;
use crate::safety::output::screened;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use orrery_crds::plan::PlannedTool;
use serde_json::{Value, json};
use std::sync::Arc;

/// The longest part of a card's skill description passed to a model, in characters.
const MAX_SKILL_DESCRIPTION_CHARS: usize = 512;

/// One planned A2A skill of a run.
#[derive(Debug)]
pub struct A2aSkillTool {
    planned: PlannedTool,
    agent: Arc<A2aAgent>,
}

impl A2aSkillTool {
    /// The skill `planned` of `agent`.
    pub fn new(planned: PlannedTool, agent: Arc<A2aAgent>) -> Self {
        A2aSkillTool { planned, agent }
    }

    /// The skill's description from the card, if it was fetched and the screen finds nothing in
    /// it (it is remote text).
    fn card_description(&self) -> Option<String> {
        let card = self.agent.card_now()?;
        let skill = card.card.skill(&self.planned.remote_name)?;
        let s = screened(&skill.description);
        if !s.flags.is_empty() || s.text.trim().is_empty() {
            return None;
        }
        Some(
            match s.text.char_indices().nth(MAX_SKILL_DESCRIPTION_CHARS) {
                Some((i, _)) => format!("{}…", &s.text[..i]),
                None => s.text,
            },
        )
    }
}

#[async_trait]
impl Tool for A2aSkillTool {
    fn spec(&self) -> ToolSpec {
        let (entry, skill) = (&self.planned.entry, &self.planned.remote_name);
        let mut description =
            format!("Sends a request to skill '{skill}' of the remote agent '{entry}'");
        if let Some(about) = self.card_description() {
            description.push_str(&format!(" ({about})"));
        }
        description.push_str(
            " and returns its reply as JSON {status, reply, taskState, taskId, contextId, parts}. Only the request text is sent: the agent sees nothing else, so include everything it needs.",
        );
        if let Some(why) = self.agent.disabled() {
            description = format!("Unavailable in this run: {}", why.model_message());
        } else if self.planned.acting {
            description.push_str(
                " This agent changes things: the run's owner confirms each call before it is sent.",
            );
        }
        ToolSpec {
            name: self.planned.model_name.clone(),
            description,
            input_schema: json!({
                "type": "object",
                "properties": {"request": {
                    "type": "string",
                    "description": "The whole request for the remote agent, as plain text.",
                    "maxLength": MAX_REQUEST_CHARS
                }},
                "required": ["request"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, arguments: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.agent
            .call(&self.planned.remote_name, &arguments, ctx)
            .await
    }

    async fn close(&self) {
        self.agent.close().await;
    }
}
