//! What a walk of the graph ends with ([`Flow`]), and the edge screen the text passes through
//! on its way along an edge with `screen: true`.

/// Where a walk ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// The branch ended with this answer.
    Answer(String),
    /// The run is stopping (the reason is recorded in the context, or it was cancelled).
    Stop,
}

/// Applies the edge screen when the edge asks for it.
pub(super) fn screen_edge(screen: bool, text: String) -> (String, Vec<String>) {
    if !screen {
        return (text, Vec::new());
    }
    let screened = crate::safety::screen(&text);
    let flags = screened
        .flags
        .iter()
        .map(|f| f.as_str().to_owned())
        .collect();
    (screened.text, flags)
}
