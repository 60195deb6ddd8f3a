//! Tests of the drafting rules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

#[test]
fn the_demo_input_gives_a_titled_draft() {
    assert_eq!(
        draft("Kafka consumer lag"),
        "# Release notes: Kafka consumer lag\n\n- Kafka consumer lag.\n\nKeywords: kafka, consumer, lag\n"
    );
}

#[test]
fn notes_become_one_bullet_per_sentence_with_their_sources() {
    let notes = "Kafka consumer lag\n\
                 - consumer lag is measured per partition (https://articles.example.org/kafka-consumer-lag-explained).\n\
                 - Alert on time behind, not record counts. See https://articles.example.org/kafka-lag-alerting";
    let expected = "# Release notes: Kafka consumer lag\n\n\
                    - Consumer lag is measured per partition (https://articles.example.org/kafka-consumer-lag-explained).\n\
                    - Alert on time behind, not record counts.\n\
                    - See https://articles.example.org/kafka-lag-alerting.\n\n\
                    ## Sources\n\
                    - https://articles.example.org/kafka-consumer-lag-explained\n\
                    - https://articles.example.org/kafka-lag-alerting\n\n\
                    Keywords: consumer, lag, measured, partition, alert\n";
    assert_eq!(draft(notes), expected);
}

#[test]
fn feedback_revises_the_draft_and_lists_what_was_addressed() {
    let first = draft(
        "Kafka consumer lag. Lag grows during rebalances. Static membership avoids rebalances. KEDA scales consumers on lag. Partitions cap parallelism.",
    );
    assert!(first.starts_with("# Release notes: Kafka consumer lag\n"));
    assert!(!first.contains("## Sources"));
    let request = format!("{first}\nFeedback: cite a source for every claim. Make it shorter.");
    let revised = draft(&request);
    let expected = "# Release notes: Kafka consumer lag (revised)\n\n\
                    - Lag grows during rebalances.\n\
                    - Static membership avoids rebalances.\n\
                    - KEDA scales consumers on lag.\n\
                    - …and 1 more note.\n\n\
                    ## Sources\n\
                    - No source links were given in the request; add them to the notes.\n\n\
                    ## Changes from review\n\
                    - Addressed: Cite a source for every claim.\n\
                    - Addressed: Make it shorter.\n\n\
                    Keywords: lag, rebalances, grows, during, static\n";
    assert_eq!(revised, expected);
}

#[test]
fn revising_a_revised_draft_keeps_one_marker_and_drops_old_review_notes() {
    let once =
        draft("Kafka consumer lag. Lag grows during rebalances.\nCritic: mention rebalances.");
    let twice = draft(&format!("{once}\nRejected: add the partition limit."));
    assert_eq!(twice.matches("(revised)").count(), 1, "{twice}");
    assert!(!twice.contains("mention rebalances"), "{twice}");
    assert!(
        twice.contains("- Addressed: Add the partition limit."),
        "{twice}"
    );
}

#[test]
fn a_marker_inside_a_sentence_is_not_feedback() {
    let text = "Kafka consumer lag. We acted on the feedback: faster rebalances.";
    assert!(!draft(text).contains("(revised)"));
    let (_, feedback) = split_feedback("Notes here.\n  - Feedback: x");
    assert_eq!(feedback, Some(" x"));
    let (_, feedback) = split_feedback("Notes here. Revise: y");
    assert_eq!(feedback, Some(" y"));
}

#[test]
fn long_sentences_are_cut_at_a_word_and_many_notes_are_capped() {
    let long = format!("Topic. {} end", "word ".repeat(60));
    let d = draft(&long);
    let line = d.lines().find(|l| l.starts_with("- Word")).unwrap();
    assert!(
        line.ends_with('…') && line.chars().count() <= MAX_BULLET_CHARS + 3,
        "{line}"
    );
    let many: String = (1..=12).map(|i| format!("Note number {i}. ")).collect();
    let d = draft(&format!("Topic.\n{many}"));
    assert_eq!(
        d.lines().filter(|l| l.starts_with("- Note")).count(),
        MAX_BULLETS
    );
    assert!(d.contains("- …and 4 more notes."));
}

#[test]
fn different_requests_give_different_drafts() {
    assert_ne!(draft("Kafka consumer lag"), draft("Redis eviction"));
    assert_eq!(draft("Redis eviction"), draft("Redis eviction"));
}
