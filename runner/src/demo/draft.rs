//! The writer's drafting rules: deterministic, no model. Notes become a title, one bullet per
//! sentence, the source links and keywords; a request carrying a reviewer's feedback (a line or
//! sentence starting with `Feedback:`, `Critic:`, `Reviewer:`, `Rejected:`, `Revise:` or
//! `Changes requested:`) is revised: the title is marked revised, feedback asking for sources
//! or brevity is applied, and each feedback sentence is listed as addressed. A previous draft
//! sent back with feedback keeps its title and drops its old review notes.

pub(crate) const MAX_BULLETS: usize = 8;
pub(crate) const MAX_BULLET_CHARS: usize = 200;
const SHORT_BULLETS: usize = 3;
const TITLE_PREFIX: &str = "release notes:";
const REVISED: &str = " (revised)";
const FEEDBACK_MARKERS: &[&str] = &[
    "feedback:",
    "critic:",
    "reviewer:",
    "rejected:",
    "revise:",
    "changes requested:",
];
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "are", "was", "were", "with", "that", "this", "from", "into", "its",
    "not", "but", "has", "have", "had", "can", "will", "when", "what", "which", "than", "then",
    "they", "their", "there", "been", "more", "most", "only", "also", "each", "every", "about",
    "after", "before", "over", "under", "while", "does", "should", "would", "could", "you", "your",
    "our", "all", "any", "one", "two", "use", "used", "per", "out", "off", "far", "too",
];

/// Where a line of the notes belongs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Notes,
    Sources,
    Skip,
}

#[derive(Default)]
struct Notes {
    topic: Option<String>,
    sentences: Vec<String>,
    sources: Vec<String>,
}

/// Splits the request at the first feedback marker that starts a line or a sentence.
fn split_feedback(request: &str) -> (&str, Option<&str>) {
    let lower = request.to_ascii_lowercase();
    let found = FEEDBACK_MARKERS
        .iter()
        .flat_map(|marker| {
            lower
                .match_indices(marker)
                .map(move |(i, _)| (i, marker.len()))
        })
        .filter(|(i, _)| {
            let before = lower[..*i].trim_end_matches([' ', '\t', '-', '*', '>']);
            before.is_empty() || before.ends_with(['\n', '.', '!', '?'])
        })
        .min_by_key(|(i, _)| *i);
    match found {
        Some((i, len)) => (&request[..i], Some(&request[i + len..])),
        None => (request, None),
    }
}

fn strip_list_marker(line: &str) -> &str {
    let line = line.trim_start_matches(['-', '*', '•', '>']).trim_start();
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && line[digits..].starts_with(['.', ')']) {
        line[digits + 1..].trim_start()
    } else {
        line
    }
}

/// Sentences of a line, split after `.`, `!` or `?` followed by a space.
fn sentences(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = line.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1) == Some(&b' ') {
            out.push(line[start..=i].trim().to_owned());
            start = i + 1;
        }
    }
    out.push(line[start..].trim().to_owned());
    out.retain(|s| !s.is_empty());
    out
}

fn urls(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split_whitespace()
        .filter(|w| w.contains("http://") || w.contains("https://"))
        .filter_map(|w| {
            let start = w.find("http")?;
            let url = w[start..].trim_end_matches(['.', ',', ';', ':', ')', ']', '>', '"', '\'']);
            Some(url.to_owned())
        })
}

fn parse_notes(notes: &str) -> Notes {
    let mut parsed = Notes::default();
    let mut section = Section::Notes;
    for line in notes.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with('#') {
            let level = line.bytes().take_while(|b| *b == b'#').count();
            let heading = line[level..].trim();
            let lower = heading.to_ascii_lowercase();
            if level == 1 && parsed.topic.is_none() {
                let topic = if lower.starts_with(TITLE_PREFIX) {
                    heading[TITLE_PREFIX.len()..].trim()
                } else {
                    heading
                };
                let topic = topic
                    .strip_suffix(REVISED.trim_start())
                    .unwrap_or(topic)
                    .trim();
                parsed.topic = (!topic.is_empty()).then(|| topic.to_owned());
                section = Section::Notes;
            } else {
                section = match lower.as_str() {
                    "sources" => Section::Sources,
                    "changes from review" => Section::Skip,
                    _ => Section::Notes,
                };
            }
            continue;
        }
        if section == Section::Skip || line.to_ascii_lowercase().starts_with("keywords:") {
            continue;
        }
        for url in urls(line) {
            if !parsed.sources.contains(&url) {
                parsed.sources.push(url);
            }
        }
        if section == Section::Notes {
            parsed.sentences.extend(sentences(strip_list_marker(line)));
        }
    }
    parsed
}

fn capitalize(sentence: &str) -> String {
    let mut chars = sentence.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn bullet(sentence: &str) -> String {
    let mut text = capitalize(sentence);
    if text.chars().count() > MAX_BULLET_CHARS {
        let cut: String = text.chars().take(MAX_BULLET_CHARS).collect();
        let at_word = cut.rfind(' ').map_or(cut.as_str(), |i| &cut[..i]);
        text = format!("{}…", at_word.trim_end_matches([',', ';', ':']));
    } else if !text.ends_with(['.', '!', '?', '…']) {
        text.push('.');
    }
    format!("- {text}")
}

fn keywords(sentences: &[String]) -> Vec<String> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for sentence in sentences {
        for word in sentence.split_whitespace().filter(|w| !w.contains("://")) {
            for token in word.split(|c: char| !c.is_alphanumeric()) {
                let token = token.to_lowercase();
                if token.chars().count() < 3
                    || STOPWORDS.contains(&token.as_str())
                    || token.chars().all(|c| c.is_ascii_digit())
                {
                    continue;
                }
                match counts.iter_mut().find(|(w, _)| *w == token) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((token, 1)),
                }
            }
        }
    }
    // A stable sort keeps first appearance among equal counts.
    counts.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    counts.into_iter().take(5).map(|(w, _)| w).collect()
}

fn short_topic(sentence: &str) -> (String, bool) {
    let words: Vec<&str> = sentence.split_whitespace().collect();
    let whole = words.len() <= 8;
    let taken = words[..words.len().min(8)].join(" ");
    let topic = taken
        .trim_end_matches(['.', '!', '?', ':', ';', ','])
        .to_owned();
    if whole {
        (topic, true)
    } else {
        (format!("{topic} …"), false)
    }
}

/// The draft for a request (deterministic: the same request always gives the same draft).
pub fn draft(request: &str) -> String {
    let (notes, feedback) = split_feedback(request);
    let mut parsed = parse_notes(notes);
    let mut sentences = std::mem::take(&mut parsed.sentences);
    let mut seen = Vec::new();
    sentences.retain(|s| {
        let key = s.to_lowercase();
        let fresh = !seen.contains(&key);
        seen.push(key);
        fresh
    });
    let topic = match parsed.topic.take() {
        Some(topic) => topic,
        None => match sentences.first().map(|s| short_topic(s)) {
            Some((topic, whole)) => {
                if whole && sentences.len() > 1 {
                    sentences.remove(0);
                }
                topic
            }
            None => "Untitled release".to_owned(),
        },
    };
    let feedback_sentences: Vec<String> = feedback
        .map(|f| f.lines().flat_map(sentences_of_feedback).collect())
        .unwrap_or_default();
    let revising = feedback.is_some();
    let asks = |words: &[&str]| {
        let lower = feedback.unwrap_or_default().to_lowercase();
        words.iter().any(|w| lower.contains(w))
    };
    let wants_sources = asks(&["source", "cite", "citation", "reference", "link"]);
    let wants_shorter = asks(&["shorter", "concise", "too long", "brief", "trim"]);

    let mut bullets: Vec<String> = sentences.iter().map(|s| bullet(s)).collect();
    let limit = if wants_shorter {
        SHORT_BULLETS
    } else {
        MAX_BULLETS
    };
    if bullets.len() > limit {
        let more = bullets.len() - limit;
        bullets.truncate(limit);
        bullets.push(format!(
            "- …and {more} more {}.",
            if more == 1 { "note" } else { "notes" }
        ));
    }
    if bullets.is_empty() {
        bullets.push("- No notes were given; send the notes to draft from.".to_owned());
    }

    let mut out = vec![
        format!(
            "# Release notes: {topic}{}",
            if revising { REVISED } else { "" }
        ),
        String::new(),
    ];
    out.extend(bullets);
    if !parsed.sources.is_empty() || (revising && wants_sources) {
        out.extend([String::new(), "## Sources".to_owned()]);
        if parsed.sources.is_empty() {
            out.push(
                "- No source links were given in the request; add them to the notes.".to_owned(),
            );
        }
        out.extend(parsed.sources.iter().map(|s| format!("- {s}")));
    }
    if revising {
        out.extend([String::new(), "## Changes from review".to_owned()]);
        if feedback_sentences.is_empty() {
            out.push("- Reviewed; no specific change was asked for.".to_owned());
        }
        out.extend(
            feedback_sentences
                .iter()
                .map(|s| format!("- Addressed: {s}")),
        );
    }
    let keywords = keywords(&sentences);
    if !keywords.is_empty() {
        out.extend([String::new(), format!("Keywords: {}", keywords.join(", "))]);
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

fn sentences_of_feedback(line: &str) -> Vec<String> {
    let line = line.trim();
    let lower = line.to_ascii_lowercase();
    let line = FEEDBACK_MARKERS
        .iter()
        .find(|m| lower.starts_with(*m))
        .map_or(line, |m| line[m.len()..].trim());
    sentences(strip_list_marker(line))
        .iter()
        .map(|s| {
            let mut sentence = capitalize(s);
            if !sentence.ends_with(['.', '!', '?']) {
                sentence.push('.');
            }
            sentence
        })
        .collect()
}

#[cfg(test)]
#[path = "draft_tests.rs"]
mod tests;
