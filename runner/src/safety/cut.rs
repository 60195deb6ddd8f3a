//! Cutting text to a byte cap, on a character boundary and marked with `…` when cut: captured
//! content (rule 8.5), quoted names and errors in events, a remote's message in a note.

/// Cuts `text` to at most `max` bytes on a character boundary, ending with `…` when cut.
pub fn cut_to(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    const MARK: &str = "…";
    let mut end = max.saturating_sub(MARK.len());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = String::with_capacity(end + MARK.len());
    out.push_str(&text[..end]);
    out.push_str(MARK);
    out
}

#[cfg(test)]
mod tests {
    use super::cut_to;

    #[test]
    fn a_cut_text_ends_on_a_character_boundary_with_a_mark_within_the_cap() {
        assert_eq!(cut_to("short", 10), "short");
        assert_eq!(cut_to("abcdefghij", 10), "abcdefghij");
        let cut = cut_to("ééééé", 6); // two bytes each; `…` is three
        assert_eq!(cut, "é…");
        assert!(cut.len() <= 6);
    }
}
