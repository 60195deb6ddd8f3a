//! A cheap look at how deeply a text nests, before a parser sees it: a YAML parser given 200 KB
//! of `[` takes most of a minute, and no manifest nests more than a few dozen levels.

use super::{Format, MAX_DEPTH};

/// The line (from 1) where the text's nesting first passes [`MAX_DEPTH`], if it does. For
/// YAML the count is an over-estimate (each column of indentation and each `- ` counts as a
/// level, plus the open flow brackets), so a text under the limit is surely under it.
pub(super) fn too_deep_at(text: &str, format: Format) -> Option<usize> {
    match format {
        Format::Json => json_too_deep_at(text),
        Format::Yaml => yaml_too_deep_at(text),
    }
}

fn json_too_deep_at(text: &str) -> Option<usize> {
    let (mut depth, mut line, mut in_string, mut escaped) = (0usize, 1usize, false, false);
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '[' | '{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(line);
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// Where a YAML scan is: plain text, or inside a quoted scalar (which may span lines).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Single,
    Double,
}

fn yaml_too_deep_at(text: &str) -> Option<usize> {
    let mut flow = 0usize;
    let mut quote = Quote::None;
    // The indentation of a block scalar's header line while its content lines are skipped.
    let mut block_scalar: Option<usize> = None;
    for (index, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        if let Some(header) = block_scalar {
            if rest.is_empty() || indent > header {
                continue;
            }
            block_scalar = None;
        }
        let mut block = indent + 1;
        let mut body = rest;
        if quote == Quote::None && flow == 0 {
            while let Some(after) = body.strip_prefix("- ").or_else(|| body.strip_prefix("? ")) {
                block += 1;
                let trimmed = after.trim_start_matches(' ');
                block += after.len() - trimmed.len();
                body = trimmed;
            }
        }
        let mut prev = ' ';
        let mut escaped = false;
        // In block context a flow collection or a quoted scalar starts only where a key or a
        // value does: at the start of the line's body, after `: `, or after an anchor or a tag
        // there. Anywhere else a bracket or a quote is text of a plain scalar (`note: see [1]`),
        // which the parser reads without nesting.
        let mut value_start = true;
        let mut in_property = false;
        // A single-quoted scalar just closed: a `'` right after it is the second quote of an
        // escaped `''`, and the scalar goes on.
        let mut closed_single = false;
        for c in body.chars() {
            if std::mem::take(&mut closed_single) && c == '\'' {
                quote = Quote::Single;
                prev = c;
                continue;
            }
            match quote {
                Quote::Double => {
                    match (escaped, c) {
                        (true, _) => escaped = false,
                        (false, '\\') => escaped = true,
                        (false, '"') => quote = Quote::None,
                        _ => {}
                    }
                    prev = c;
                    continue;
                }
                Quote::Single => {
                    // `''` inside a single-quoted scalar closes and reopens (above).
                    if c == '\'' {
                        quote = Quote::None;
                        closed_single = true;
                    }
                    prev = c;
                    continue;
                }
                Quote::None => {}
            }
            let opens = if flow > 0 {
                prev.is_whitespace() || matches!(prev, '[' | '{' | ',' | ':')
            } else {
                let at_value = value_start && !in_property;
                if c == ' ' || c == '\t' {
                    if prev == ':' || in_property {
                        value_start = true;
                    }
                    in_property = false;
                } else if at_value && (c == '&' || c == '!') {
                    in_property = true;
                } else if !in_property {
                    value_start = false;
                }
                at_value && c != ' ' && c != '\t'
            };
            match c {
                '#' if prev.is_whitespace() => break,
                '"' if opens => quote = Quote::Double,
                '\'' if opens => quote = Quote::Single,
                '[' | '{' if opens || flow > 0 => {
                    flow += 1;
                    if block + flow > MAX_DEPTH {
                        return Some(index + 1);
                    }
                }
                ']' | '}' if flow > 0 => flow -= 1,
                _ => {}
            }
            prev = c;
        }
        if block > MAX_DEPTH {
            return Some(index + 1);
        }
        if quote == Quote::None && flow == 0 && is_block_scalar_header(body) {
            block_scalar = Some(indent);
        }
    }
    None
}

/// Whether a line ends with a block scalar header (`key: |`, `- >-`, `|2+`…).
fn is_block_scalar_header(body: &str) -> bool {
    let body = match body.find(" #") {
        Some(at) => &body[..at],
        None => body,
    }
    .trim_end();
    let Some(at) = body.rfind(['|', '>']) else {
        return false;
    };
    let (before, header) = body.split_at(at);
    let indicators_only = header[1..]
        .chars()
        .all(|c| c == '-' || c == '+' || c.is_ascii_digit());
    indicators_only && (before.is_empty() || before.ends_with(' '))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn brackets_past_the_limit_are_too_deep_in_yaml_and_json() {
        let deep = format!(
            "a: {}{}\n",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        assert_eq!(too_deep_at(&deep, Format::Yaml), Some(1));
        let json = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(too_deep_at(&json, Format::Json), Some(1));
        let fine = format!("{}{}", "[".repeat(MAX_DEPTH - 2), "]".repeat(MAX_DEPTH - 2));
        assert_eq!(too_deep_at(&fine, Format::Json), None);
        assert_eq!(too_deep_at(&format!("a: {fine}"), Format::Yaml), None);
    }

    #[test]
    fn an_escaped_quote_inside_a_single_quoted_scalar_does_not_end_it() {
        let many = "[".repeat(MAX_DEPTH + 5);
        // After `''` the scalar goes on: `: [[[…` inside it is text, not a flow collection.
        for text in [
            format!("a: 'it''s : {many}'\n"),
            format!("a: 'x'''' : {many}'\n"),
            format!("- 'x'' - : {many}'\n"),
            format!("a: ['x'' : {many}']\n"),
        ] {
            assert_eq!(too_deep_at(&text, Format::Yaml), None, "{text}");
        }
        // Closed for good, what follows is read again.
        let deep = format!("a: 'x'\nb: {many}\n");
        assert_eq!(too_deep_at(&deep, Format::Yaml), Some(2));
    }

    #[test]
    fn brackets_in_quotes_comments_and_block_scalars_do_not_count() {
        let many = "[".repeat(MAX_DEPTH + 5);
        for text in [
            format!("a: \"{many}\"\n"),
            format!("a: '{many}'\n"),
            format!("a: b # {many}\n"),
            format!("a: |\n  {many}\n  more\nb: c\n"),
            format!("{{\"a\": \"{many}\"}}"),
        ] {
            let format = if text.starts_with('{') {
                Format::Json
            } else {
                Format::Yaml
            };
            assert_eq!(too_deep_at(&text, format), None, "{text}");
        }
    }

    /// Found by `scripts/fuzz.sh import`: an instruction with `[[[[` in its text was refused
    /// as too deep (its manifest, written by `orrery import`, did not read back).
    #[test]
    fn brackets_and_quotes_inside_a_plain_scalar_do_not_count_but_flow_after_a_tag_does() {
        let many = "[".repeat(MAX_DEPTH + 5);
        for text in [
            format!("a: see {many} here\n"),
            format!("- note {many}\n"),
            format!("a: it's \"{many}\n"),
            format!("a: b\n  continued {many}\n"),
        ] {
            assert_eq!(too_deep_at(&text, Format::Yaml), None, "{text}");
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        for text in [
            format!("a: {deep}\n"),
            format!("a: &x {deep}\n"),
            format!("a: !!seq {deep}\n"),
            format!("a: &x !!seq {deep}\n"),
            format!("- {deep}\n"),
            format!("{deep}: v\n"),
            format!("a: [b, {deep}]\n"),
        ] {
            assert_eq!(too_deep_at(&text, Format::Yaml), Some(1), "{text}");
        }
    }

    #[test]
    fn block_nesting_counts_indentation_and_dashes() {
        let dashes = format!("{}x\n", "- ".repeat(MAX_DEPTH + 1));
        assert_eq!(too_deep_at(&dashes, Format::Yaml), Some(1));
        let mut nested = String::new();
        for level in 0..=MAX_DEPTH {
            nested.push_str(&format!("{}k{level}:\n", " ".repeat(level)));
        }
        assert!(too_deep_at(&nested, Format::Yaml).is_some());
    }

    #[test]
    fn every_example_manifest_is_far_under_the_limit() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        let mut pending = vec![root];
        let mut files = 0;
        while let Some(path) = pending.pop() {
            if path.is_dir() {
                pending.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(too_deep_at(&text, Format::Yaml), None, "{}", path.display());
            files += 1;
        }
        assert!(files > 10, "the examples were found ({files} files)");
    }
}
