//! The tools a node may call and the names its model sees for them (`mcp_<entry>_<tool>`,
//! `a2a_<entry>_<skill>`, `n_<child>`): a leaf module, used by the validator (collisions and the
//! 64-character rule, rule 1.29) and by the plan.

use serde::{Deserialize, Serialize};

/// A tool a node may call, resolved against the registry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedTool {
    /// The reference as written, e.g. `mcp:demo-tools.search_articles`.
    pub reference: String,
    /// Mcp or A2a.
    pub kind: ToolKind,
    /// The RegistryEntry name.
    pub entry: String,
    /// The tool's (or skill's) name on the remote.
    pub remote_name: String,
    /// The name the model sees: `mcp_<entry>_<tool>` / `a2a_<entry>_<skill>`, `-` as `_`.
    pub model_name: String,
    /// Whether calling it changes things (an Acting A2A entry): confirmed per call.
    pub acting: bool,
}

/// The kind of a planned tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ToolKind {
    /// A tool on an MCP server.
    Mcp,
    /// A skill of a remote A2A agent.
    A2a,
}

/// The name a node's model sees for a tool: `mcp_<entry>_<tool>` or `a2a_<entry>_<skill>`, with
/// every character other than ASCII letters, digits and `_` (e.g. `-`, `.`) written as `_`.
pub fn model_tool_name(kind: ToolKind, entry: &str, name: &str) -> String {
    let prefix = match kind {
        ToolKind::Mcp => "mcp",
        ToolKind::A2a => "a2a",
    };
    sanitize(&format!("{prefix}_{entry}_{name}"))
}

/// The name a supervisor's model sees for its child node: `n_<id>`, `-` written as `_`.
pub fn child_tool_name(id: &str) -> String {
    sanitize(&format!("n_{id}"))
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_facing_names_write_dashes_and_dots_as_underscores() {
        assert_eq!(model_tool_name(ToolKind::Mcp, "my-x", "t"), "mcp_my_x_t");
        assert_eq!(model_tool_name(ToolKind::Mcp, "my_x", "t"), "mcp_my_x_t");
        assert_eq!(
            model_tool_name(ToolKind::A2a, "demo-writer", "draft.v2"),
            "a2a_demo_writer_draft_v2"
        );
        assert_eq!(child_tool_name("fact-checker"), "n_fact_checker");
    }
}
