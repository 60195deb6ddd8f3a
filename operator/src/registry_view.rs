//! The registry as the validator sees it: what the Composition controller validates against,
//! what a run's plan is compiled against, and what the sidecar's dry-run endpoint checks. Its
//! own module so that controllers and sidecar share it without importing each other.

use orrery_crds::registry::RegistryEntry;
use orrery_crds::validate::{EntryView, RegistryView};
use std::collections::BTreeSet;

/// The registry as the validator sees it, from the namespace's RegistryEntries. An MCP entry
/// whose tools are pinned keeps as read-only only the tools whose pin says `readOnlyHint: true`
/// (the server's word, not just the entry's), so a composition using one that lost it is
/// refused.
pub fn registry_view(entries: &[RegistryEntry]) -> RegistryView {
    let mut view = RegistryView::from_entries(entries);
    for entry in entries {
        let Some(status) = entry.status.as_ref().filter(|s| !s.tools.is_empty()) else {
            continue;
        };
        let name = entry.metadata.name.clone().unwrap_or_default();
        if let Some(EntryView::Mcp { read_only, .. }) = view.entries.get_mut(&name) {
            let hinted: BTreeSet<&str> = status
                .tools
                .iter()
                .filter(|t| t.read_only_hint == Some(true))
                .map(|t| t.name.as_str())
                .collect();
            read_only.retain(|tool| hinted.contains(tool.as_str()));
        }
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use orrery_crds::registry::{McpEntry, McpTransport, PinnedTool, RegistryEntryStatus};

    #[test]
    fn a_pinned_tool_without_the_read_only_hint_is_not_read_only_in_the_view() {
        let mut entry = RegistryEntry::from_mcp(
            "tools",
            McpEntry::new(
                "https://t.example/mcp",
                McpTransport::StreamableHttp,
                &["search", "fetch"],
                &["search", "fetch"],
            ),
        );
        let unpinned = registry_view(std::slice::from_ref(&entry));
        let pin = |name: &str, hint: Option<bool>| PinnedTool {
            name: name.into(),
            read_only_hint: hint,
            ..PinnedTool::default()
        };
        entry.status = Some(RegistryEntryStatus {
            tools: vec![pin("search", Some(true)), pin("fetch", Some(false))],
            ..RegistryEntryStatus::default()
        });
        let pinned = registry_view(&[entry]);
        let read_only = |view: &RegistryView| match view.entries.get("tools") {
            Some(EntryView::Mcp { read_only, .. }) => read_only.iter().cloned().collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        assert_eq!(read_only(&unpinned), ["fetch", "search"]);
        assert_eq!(read_only(&pinned), ["search"]);
    }
}
