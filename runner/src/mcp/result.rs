//! A `tools/call` result as text for the model: the text content blocks, the structured
//! content when there is no text, and a note of what was dropped (images, audio, resources).

use rmcp::model::{CallToolResult, ContentBlock};

/// The text of a result, before the safety screen.
pub fn result_text(result: &CallToolResult) -> String {
    let mut texts = Vec::new();
    let mut dropped = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => texts.push(t.text.clone()),
            ContentBlock::Image(_) => dropped.push("image"),
            ContentBlock::Audio(_) => dropped.push("audio"),
            ContentBlock::Resource(_) => dropped.push("resource"),
            ContentBlock::ResourceLink(_) => dropped.push("resource_link"),
            _ => dropped.push("unknown"),
        }
    }
    if texts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        texts.push(structured.to_string());
    }
    let mut out = texts.join("\n");
    if !dropped.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!(
            "[orrery: {} non-text content block(s) dropped: {}]",
            dropped.len(),
            dropped.join(", ")
        ));
    }
    out
}

/// Whether the server marked the result as an error.
pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn results_become_text_as_a_table() {
        let cases = [
            (
                json!({"content": [{"type": "text", "text": "Echo: hi"}]}),
                "Echo: hi",
            ),
            (
                json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "structuredContent": {"n": 1}}),
                "a\nb",
            ),
            (
                json!({"content": [], "structuredContent": {"words": 2}}),
                "{\"words\":2}",
            ),
            (
                json!({"content": [{"type": "text", "text": "t"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
                "t\n[orrery: 1 non-text content block(s) dropped: image]",
            ),
        ];
        for (value, want) in cases {
            assert_eq!(result_text(&result(value.clone())), want, "{value}");
        }
    }

    #[test]
    fn is_error_is_read_from_the_result() {
        assert!(is_error(&result(json!({"content": [], "isError": true}))));
        assert!(!is_error(&result(json!({"content": [], "isError": false}))));
        assert!(!is_error(&result(json!({"content": []}))));
    }
}
