//! Text shown to a person in a terminal, made safe to show: terminal escapes, control
//! characters, bidirectional overrides and zero-width characters are rendered visibly
//! (`\x1b`, `\r`, `\u{202e}`) instead of being written raw, and the caller learns how many there
//! were so it can say so (rules 4.7, 4.18, 4.26: what a person reads is what runs on, so nothing
//! in the text may rewrite the screen, reorder it or hide part of it). The text itself is never
//! changed: digests are of the exact text.

use std::borrow::Cow;
use std::fmt::Write as _;

/// A text rendered for a terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Visible<'a> {
    /// The text with every control or invisible character written as an escape.
    pub text: Cow<'a, str>,
    /// How many characters were escaped (0: the text is shown as it is).
    pub escaped: usize,
}

impl Visible<'_> {
    /// A note for the person when characters were escaped, else `None`.
    pub fn note(&self) -> Option<String> {
        (self.escaped > 0).then(|| {
            format!(
                "⚠ this text contains {} control or invisible character{} (terminal escapes, carriage returns, bidirectional or zero-width characters), shown as escapes like \\x1b or \\u{{202e}}",
                self.escaped,
                if self.escaped == 1 { "" } else { "s" }
            )
        })
    }
}

/// Whether `c` must not reach a terminal raw. Line feeds and tabs are kept unless `inline`.
fn needs_escape(c: char, inline: bool) -> bool {
    match c {
        '\n' | '\t' => inline,
        // C0 controls (ESC, CR, BEL, backspace…), DEL and the C1 controls (CSI U+009B…).
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // Soft hyphen, Arabic letter mark, Mongolian vowel separator, combining grapheme joiner.
        '\u{ad}' | '\u{61c}' | '\u{180e}' | '\u{34f}' => true,
        // Zero-width space/joiners, LRM/RLM, line and paragraph separators, bidi embeddings and
        // overrides, word joiner and invisible operators, bidi isolates.
        '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' => true,
        // Zero-width no-break space (BOM), interlinear annotations, and the tag characters
        // (invisible ASCII look-alikes).
        '\u{feff}' | '\u{fff9}'..='\u{fffb}' | '\u{e0000}'..='\u{e007f}' => true,
        _ => false,
    }
}

fn escape(c: char, out: &mut String) {
    match c {
        '\r' => out.push_str("\\r"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\u{0}'..='\u{7f}' => {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        }
        _ => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
}

fn render(text: &str, inline: bool) -> Visible<'_> {
    if !text.chars().any(|c| needs_escape(c, inline)) {
        return Visible {
            text: Cow::Borrowed(text),
            escaped: 0,
        };
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut escaped = 0;
    for c in text.chars() {
        if needs_escape(c, inline) {
            escape(c, &mut out);
            // Line breaks and tabs written as escapes on one line are layout, not a warning.
            if !matches!(c, '\n' | '\t') {
                escaped += 1;
            }
        } else {
            out.push(c);
        }
    }
    Visible {
        text: Cow::Owned(out),
        escaped,
    }
}

/// `text` for a terminal, keeping its line breaks and tabs.
pub fn visible(text: &str) -> Visible<'_> {
    render(text, false)
}

/// `text` for one line of a terminal: line breaks and tabs are escaped too.
pub fn visible_inline(text: &str) -> Visible<'_> {
    render(text, true)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn terminal_escapes_and_invisible_characters_are_shown_as_escapes_rules_4_7_4_26() {
        let cases = [
            (
                "plain text\nsecond line\tok",
                "plain text\nsecond line\tok",
                0,
            ),
            (
                "rm -rf /\x1b[2K\rRelease notes",
                "rm -rf /\\x1b[2K\\rRelease notes",
                2,
            ),
            (
                "bell\x07 del\x7f csi\u{9b}",
                "bell\\x07 del\\x7f csi\\u{9b}",
                3,
            ),
            ("abc\u{202e}fed", "abc\\u{202e}fed", 1),
            (
                "zero\u{200b}width\u{feff}",
                "zero\\u{200b}width\\u{feff}",
                2,
            ),
            ("iso\u{2066}late\u{2069}", "iso\\u{2066}late\\u{2069}", 2),
            ("tag\u{e0041}", "tag\\u{e0041}", 1),
            ("émoji ✓ 日本", "émoji ✓ 日本", 0),
        ];
        for (text, want, escaped) in cases {
            let v = visible(text);
            assert_eq!(v.text, want, "{text:?}");
            assert_eq!(v.escaped, escaped, "{text:?}");
            assert!(!v.text.contains('\x1b') && !v.text.contains('\r'));
        }
    }

    #[test]
    fn clean_text_is_borrowed_and_needs_no_note() {
        let v = visible("fine");
        assert!(matches!(v.text, Cow::Borrowed("fine")));
        assert_eq!(v.note(), None);
        let v = visible("a\x1bb");
        assert!(
            v.note()
                .unwrap()
                .contains("1 control or invisible character ")
        );
    }

    #[test]
    fn inline_text_keeps_to_one_line() {
        let v = visible_inline("a\nb\tc\x1b");
        assert_eq!(v.text, "a\\nb\\tc\\x1b");
        assert_eq!(
            v.escaped, 1,
            "line breaks are layout, the escape is the finding"
        );
    }
}
