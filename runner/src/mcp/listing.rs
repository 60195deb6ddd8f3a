//! `tools/list`, page by page within caps: a server that answers with cursor after cursor, or
//! with thousands of tools, is refused instead of being listed without end (rmcp's
//! `list_all_tools` follows cursors unbounded).

use rmcp::model::{ListToolsResult, PaginatedRequestParams, Tool};
use std::collections::HashSet;
use std::future::Future;

/// The most pages one listing reads.
pub const MAX_PAGES: usize = 20;
/// The most tools one listing accepts.
pub const MAX_TOOLS: usize = 512;
/// The most bytes (tools as JSON) one listing accepts.
pub const MAX_LIST_BYTES: usize = 4 * 1024 * 1024;

/// The caps of one listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListCaps {
    /// Pages.
    pub pages: usize,
    /// Tools.
    pub tools: usize,
    /// Bytes of the tools as JSON.
    pub bytes: usize,
}

impl Default for ListCaps {
    fn default() -> Self {
        ListCaps {
            pages: MAX_PAGES,
            tools: MAX_TOOLS,
            bytes: MAX_LIST_BYTES,
        }
    }
}

/// Why a listing failed or was refused. The refusals name no server text.
#[derive(Debug, thiserror::Error)]
pub enum ListError<E> {
    /// A `tools/list` request failed.
    #[error("{0}")]
    Fetch(E),
    /// Too many tools.
    #[error("it lists more than {max} tools; the server is refused")]
    TooManyTools {
        /// The cap.
        max: usize,
    },
    /// The tools are too large.
    #[error("its tool list is over {max} bytes; the server is refused")]
    TooManyBytes {
        /// The cap.
        max: usize,
    },
    /// A cursor came back.
    #[error("its tool list repeats a page cursor (page {page}); the server is refused")]
    RepeatedCursor {
        /// The page that repeated it.
        page: usize,
    },
    /// Too many pages.
    #[error("its tool list goes on past {max} pages; the server is refused")]
    TooManyPages {
        /// The cap.
        max: usize,
    },
}

/// Lists every tool with `fetch` (one `tools/list` request per call, given the cursor), within
/// `caps`.
pub async fn list_tools_capped<F, Fut, E>(
    mut fetch: F,
    caps: ListCaps,
) -> Result<Vec<Tool>, ListError<E>>
where
    F: FnMut(Option<PaginatedRequestParams>) -> Fut,
    Fut: Future<Output = Result<ListToolsResult, E>>,
{
    let mut tools = Vec::new();
    let mut bytes = 0usize;
    let mut seen_cursors = HashSet::new();
    let mut cursor: Option<String> = None;
    for page in 1..=caps.pages {
        let params = cursor
            .clone()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let result = fetch(params).await.map_err(ListError::Fetch)?;
        for tool in result.tools {
            bytes = bytes.saturating_add(serde_json::to_vec(&tool).map_or(0, |v| v.len()));
            tools.push(tool);
            if tools.len() > caps.tools {
                return Err(ListError::TooManyTools { max: caps.tools });
            }
            if bytes > caps.bytes {
                return Err(ListError::TooManyBytes { max: caps.bytes });
            }
        }
        match result.next_cursor {
            None => return Ok(tools),
            Some(next) => {
                if !seen_cursors.insert(next.clone()) {
                    return Err(ListError::RepeatedCursor { page });
                }
                cursor = Some(next);
            }
        }
    }
    Err(ListError::TooManyPages { max: caps.pages })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn tool(name: &str, description: &str) -> Tool {
        Tool::new(
            name.to_owned(),
            description.to_owned(),
            Arc::new(serde_json::Map::new()),
        )
    }

    fn page(tools: Vec<Tool>, next: Option<String>) -> ListToolsResult {
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next;
        result
    }

    /// A server with `pages` pages of `per_page` tools (`pages == None`: without end).
    async fn list(
        pages: Option<usize>,
        per_page: usize,
        description: &str,
    ) -> Result<Vec<Tool>, String> {
        let mut requests = 0usize;
        let listed = list_tools_capped(
            |params: Option<PaginatedRequestParams>| {
                requests += 1;
                let n = params
                    .and_then(|p| p.cursor)
                    .map_or(0, |c| c.parse::<usize>().unwrap());
                let tools = (0..per_page)
                    .map(|i| tool(&format!("t{n}_{i}"), description))
                    .collect();
                let next = match pages {
                    Some(p) if n + 1 >= p => None,
                    _ => Some((n + 1).to_string()),
                };
                assert!(requests <= MAX_PAGES, "no request past the page cap");
                std::future::ready(Ok::<_, String>(page(tools, next)))
            },
            ListCaps::default(),
        )
        .await;
        listed.map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn a_paged_list_within_the_caps_is_read_whole() {
        let tools = list(Some(3), 4, "d").await.unwrap();
        assert_eq!(tools.len(), 12);
        assert_eq!(tools[11].name, "t2_3");
    }

    #[tokio::test]
    async fn a_list_without_end_is_refused_at_the_page_cap() {
        let err = list(None, 1, "d").await.unwrap_err();
        assert!(err.contains("past 20 pages"), "{err}");
    }

    #[tokio::test]
    async fn too_many_tools_or_bytes_are_refused() {
        let err = list(Some(2), 300, "d").await.unwrap_err();
        assert!(err.contains("more than 512 tools"), "{err}");
        let err = list(Some(10), 10, &"x".repeat(64 * 1024))
            .await
            .unwrap_err();
        assert!(err.contains("over 4194304 bytes"), "{err}");
    }

    #[tokio::test]
    async fn a_repeated_cursor_is_refused() {
        let err = list_tools_capped(
            |_| {
                std::future::ready(Ok::<_, String>(page(
                    vec![tool("a", "d")],
                    Some("same".into()),
                )))
            },
            ListCaps::default(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, ListError::RepeatedCursor { page: 2 }),
            "{err}"
        );
    }
}
