//! Tool references (seed rules 1.8–1.9, 1.20, 1.57–1.60, 1.64–1.67, 1.77): each reference is
//! well formed, names a registry entry of the right kind that allows the tool (MCP: listed and
//! read-only) or skill (A2A: registered; acting only where the deployment allows), and the names
//! the node's model sees (tools, and a supervisor's children `n_<id>`) are distinct and at most 64
//! characters. Two nodes may use the same tool.

use super::analysis::Analysis;
use super::report::{Report, node_item, plain_list};
use crate::codes::{self, limits};
use crate::composition::{NodeKind, TOOL_REF_PATTERN};
use crate::registry::{Effect, EntryKind};
use crate::tool_names::{PlannedTool, ToolKind, child_tool_name, model_tool_name};
use crate::validate::{DeploymentLimits, EntryView, RegistryView};
use regex::Regex;
use std::collections::HashMap;
use std::sync::LazyLock;

static TOOL_REF_RE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(TOOL_REF_PATTERN).ok());

/// A reference split into its parts.
pub(crate) struct ToolRefParts<'s> {
    /// mcp or a2a.
    pub kind: ToolKind,
    /// The registry entry.
    pub entry: &'s str,
    /// The tool or skill.
    pub name: &'s str,
}

/// Splits `mcp:<entry>.<tool>` / `a2a:<entry>.<skill>`; `None` when malformed.
pub(crate) fn parse_tool_ref(reference: &str) -> Option<ToolRefParts<'_>> {
    if !TOOL_REF_RE
        .as_ref()
        .is_some_and(|re| re.is_match(reference))
    {
        return None;
    }
    let (prefix, rest) = reference.split_once(':')?;
    let (entry, name) = rest.split_once('.')?;
    let kind = match prefix {
        "mcp" => ToolKind::Mcp,
        "a2a" => ToolKind::A2a,
        _ => return None,
    };
    Some(ToolRefParts { kind, entry, name })
}

/// A problem resolving one tool reference: its code and message.
pub(crate) type ToolProblem = (&'static str, String);

/// Resolves a reference against the registry and the deployment.
pub(crate) fn resolve_tool(
    reference: &str,
    registry: &RegistryView,
    limits: &DeploymentLimits,
) -> Result<PlannedTool, ToolProblem> {
    let Some(parts) = parse_tool_ref(reference) else {
        return Err((
            codes::MALFORMED_TOOL_REF,
            format!(
                "tool '{reference}' is not a tool reference; write mcp:<entry>.<tool> or a2a:<entry>.<skill>, e.g. mcp:tirraflow.search_articles"
            ),
        ));
    };
    let entry = parts.entry;
    let name = parts.name;
    let planned = |acting: bool| PlannedTool {
        reference: reference.to_owned(),
        kind: parts.kind,
        entry: entry.to_owned(),
        remote_name: name.to_owned(),
        model_name: model_tool_name(parts.kind, entry, name),
        acting,
    };
    let unknown = |message: String| Err((codes::UNKNOWN_TOOL, message));
    match (parts.kind, registry.entries.get(entry)) {
        (_, None) => {
            let want = match parts.kind {
                ToolKind::Mcp => EntryKind::Mcp,
                ToolKind::A2a => EntryKind::A2a,
            };
            let known = entries_of(registry, want);
            let what = if want == EntryKind::Mcp {
                "MCP servers"
            } else {
                "remote agents"
            };
            unknown(format!(
                "tool '{reference}' names no registry entry '{entry}'; {what} in the registry: {known}"
            ))
        }
        (ToolKind::Mcp, Some(EntryView::Mcp { tools, read_only })) => {
            if !tools.contains(name) {
                unknown(format!(
                    "MCP server '{entry}' does not allow tool '{name}'; its tools: {}",
                    plain_list(tools)
                ))
            } else if !read_only.contains(name) {
                Err((
                    codes::TOOL_NOT_READ_ONLY,
                    format!(
                        "MCP tool '{name}' of '{entry}' is not listed read-only; only read-only MCP tools can be used (list it in the entry's readOnly if it only reads); read-only tools: {}",
                        plain_list(read_only)
                    ),
                ))
            } else {
                Ok(planned(false))
            }
        }
        (ToolKind::A2a, Some(EntryView::A2a { skills, effect })) => {
            if !skills.contains(name) {
                unknown(format!(
                    "remote agent '{entry}' is not registered for skill '{name}'"
                ))
            } else if *effect == Effect::Acting && !limits.acting_remotes {
                Err((
                    codes::ACTING_NOT_ALLOWED,
                    format!(
                        "remote agent '{entry}' acts (effect: Acting), and this deployment does not allow acting remotes; use a read-only agent, or ask the platform team to allow acting remotes"
                    ),
                ))
            } else {
                Ok(planned(*effect == Effect::Acting))
            }
        }
        (_, Some(EntryView::Model { .. })) => unknown(format!(
            "'{entry}' is a model entry, not a tool; name it in the node's model, and keep tools for mcp: and a2a: entries"
        )),
        (ToolKind::Mcp, Some(EntryView::A2a { .. })) => unknown(format!(
            "'{entry}' is a remote agent, not an MCP server; write a2a:{entry}.<skill>"
        )),
        (ToolKind::A2a, Some(EntryView::Mcp { .. })) => unknown(format!(
            "'{entry}' is an MCP server, not a remote agent; write mcp:{entry}.<tool>"
        )),
    }
}

fn entries_of(registry: &RegistryView, kind: EntryKind) -> String {
    plain_list(
        registry
            .entries
            .iter()
            .filter(|(_, e)| e.kind() == kind)
            .map(|(name, _)| name.as_str()),
    )
}

/// Reports tool rules.
pub(crate) fn check(
    a: &Analysis,
    registry: &RegistryView,
    limits: &DeploymentLimits,
    r: &mut Report,
) {
    for (i, node) in a.spec.nodes.iter().enumerate() {
        if !matches!(node.kind, NodeKind::LlmAgent | NodeKind::Supervisor) {
            continue;
        }
        // Model-facing name → what took it first.
        let mut names: HashMap<String, String> = HashMap::new();
        for (k, reference) in node.tools.iter().enumerate() {
            let loc = node_item(i, "tools", k);
            if let Err((code, message)) = resolve_tool(reference, registry, limits) {
                r.error(code, loc.clone(), message);
            }
            let Some(parts) = parse_tool_ref(reference) else {
                continue;
            };
            let name = model_tool_name(parts.kind, parts.entry, parts.name);
            check_name(r, &mut names, name, format!("tool '{reference}'"), loc);
        }
        if node.kind == NodeKind::Supervisor {
            for (k, child) in node.children.iter().enumerate() {
                let name = child_tool_name(child);
                check_name(
                    r,
                    &mut names,
                    name,
                    format!("child '{child}'"),
                    node_item(i, "children", k),
                );
            }
        }
    }
}

fn check_name(
    r: &mut Report,
    names: &mut HashMap<String, String>,
    name: String,
    what: String,
    loc: crate::common::Loc,
) {
    if name.len() > limits::MAX_TOOL_NAME_LENGTH {
        r.error(
            codes::TOOL_NAME_TOO_LONG,
            loc.clone(),
            format!(
                "{what} reaches the model as '{name}', {} characters; model tool names are at most {}: use a shorter entry or tool name",
                name.len(),
                limits::MAX_TOOL_NAME_LENGTH
            ),
        );
    }
    if let Some(first) = names.get(&name) {
        let message = if *first == what {
            format!("{what} is listed twice; remove one")
        } else {
            format!(
                "{what} and {first} both reach the model as '{name}' ('-' and '.' become '_'); keep one, or rename one"
            )
        };
        r.error(codes::TOOL_NAME_COLLISION, loc, message);
    } else {
        names.insert(name, what);
    }
}
