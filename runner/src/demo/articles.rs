//! The demo's bundled articles (`articles.json`, compiled in) and a small keyword search over
//! them, for the `search_articles` and `get_article` tools of `demo-tools`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

const ARTICLES_JSON: &str = include_str!("articles.json");
/// Results returned when the caller gives no limit.
pub const DEFAULT_LIMIT: u32 = 5;
/// The most results one search returns.
pub const MAX_LIMIT: u32 = 20;

const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "in", "is", "it", "of",
    "on", "or", "the", "to", "what", "when", "why", "with", "about", "into", "does", "do",
];

/// One article.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Article {
    /// Stable id (what `get_article` takes).
    pub id: String,
    /// Title.
    pub title: String,
    /// Publication date (YYYY-MM-DD).
    pub published: String,
    /// Topic tags.
    pub tags: Vec<String>,
    /// One-sentence summary.
    pub summary: String,
    /// The article text.
    pub body: String,
    /// Where the article lives (cite this).
    pub source: String,
}

/// A search result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchHit {
    /// Article id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Publication date.
    pub published: String,
    /// Relevance (higher is better): title matches weigh 3, tags 2, text 1.
    pub score: u32,
    /// The article's summary.
    pub snippet: String,
    /// Where the article lives.
    pub source: String,
}

/// Why the bundled articles could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ArticlesError {
    /// The bundled JSON does not parse (a build defect).
    #[error("the bundled demo articles do not parse: {0}")]
    Parse(#[from] serde_json::Error),
    /// Two articles share an id.
    #[error("the bundled demo articles repeat the id '{0}'")]
    DuplicateId(String),
}

/// Why a search was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// Nothing to search for after dropping stop words.
    #[error("the query has no words to search for; try a topic such as 'Kafka consumer lag'")]
    EmptyQuery,
    /// The limit is out of range.
    #[error("limit must be between 1 and {MAX_LIMIT}, not {0}")]
    BadLimit(u32),
}

/// The bundled articles.
#[derive(Clone, Debug)]
pub struct Corpus {
    articles: Vec<Article>,
}

/// Lower-cased words with a trailing plural `s` removed (`consumers` → `consumer`).
fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let w = w.to_lowercase();
            if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
                w[..w.len() - 1].to_owned()
            } else {
                w
            }
        })
}

fn count(haystack: &[String], term: &str) -> u32 {
    u32::try_from(haystack.iter().filter(|w| *w == term).count()).unwrap_or(u32::MAX)
}

impl Corpus {
    /// The articles compiled into the binary.
    pub fn bundled() -> Result<Self, ArticlesError> {
        Self::from_json(ARTICLES_JSON)
    }

    /// Articles from a JSON array.
    pub fn from_json(json: &str) -> Result<Self, ArticlesError> {
        let articles: Vec<Article> = serde_json::from_str(json)?;
        let mut seen = HashSet::new();
        for article in &articles {
            if !seen.insert(article.id.as_str()) {
                return Err(ArticlesError::DuplicateId(article.id.clone()));
            }
        }
        Ok(Corpus { articles })
    }

    /// All articles, in file order.
    pub fn articles(&self) -> &[Article] {
        &self.articles
    }

    /// The article with this id.
    pub fn get(&self, id: &str) -> Option<&Article> {
        self.articles.iter().find(|a| a.id == id.trim())
    }

    /// Articles matching the query's words, best first (ties: newest first, then by id).
    pub fn search(&self, query: &str, limit: Option<u32>) -> Result<Vec<SearchHit>, SearchError> {
        let limit = limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(SearchError::BadLimit(limit));
        }
        let mut terms: Vec<String> = Vec::new();
        for term in tokens(query) {
            if !STOPWORDS.contains(&term.as_str()) && !terms.contains(&term) {
                terms.push(term);
            }
        }
        if terms.is_empty() {
            return Err(SearchError::EmptyQuery);
        }
        let mut hits: Vec<SearchHit> = self
            .articles
            .iter()
            .filter_map(|article| {
                let title: Vec<String> = tokens(&article.title).collect();
                let tags: Vec<String> = article.tags.iter().flat_map(|t| tokens(t)).collect();
                let text: Vec<String> = tokens(&article.summary)
                    .chain(tokens(&article.body))
                    .collect();
                let score: u32 = terms
                    .iter()
                    .map(|t| 3 * count(&title, t) + 2 * count(&tags, t) + count(&text, t))
                    .sum();
                (score > 0).then(|| SearchHit {
                    id: article.id.clone(),
                    title: article.title.clone(),
                    published: article.published.clone(),
                    score,
                    snippet: article.summary.clone(),
                    source: article.source.clone(),
                })
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .cmp(&a.score)
                .then_with(|| b.published.cmp(&a.published))
                .then_with(|| a.id.cmp(&b.id))
        });
        hits.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn the_bundled_articles_parse_and_number_between_10_and_20() {
        let corpus = Corpus::bundled().unwrap();
        assert!((10..=20).contains(&corpus.articles().len()));
        for a in corpus.articles() {
            assert!(a.source.starts_with("https://"), "{}", a.id);
            assert!(
                jiff::civil::Date::strptime("%Y-%m-%d", &a.published).is_ok(),
                "{}",
                a.id
            );
        }
    }

    #[test]
    fn the_demo_input_finds_the_consumer_lag_articles_first() {
        let corpus = Corpus::bundled().unwrap();
        let hits = corpus.search("Kafka consumer lag", None).unwrap();
        assert_eq!(hits.len(), 5);
        assert_eq!(hits[0].id, "kafka-consumer-lag-explained");
        assert!(hits.iter().all(|h| corpus.get(&h.id).is_some()));
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(hits.iter().all(|h| !h.id.starts_with("redis")));
    }

    #[test]
    fn plurals_and_case_do_not_matter() {
        let corpus = Corpus::bundled().unwrap();
        let a = corpus.search("CONSUMERS", Some(3)).unwrap();
        let b = corpus.search("consumer", Some(3)).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn a_query_of_stop_words_and_a_bad_limit_are_refused() {
        let corpus = Corpus::bundled().unwrap();
        assert_eq!(
            corpus.search("the of and", None),
            Err(SearchError::EmptyQuery)
        );
        assert_eq!(corpus.search("  ", None), Err(SearchError::EmptyQuery));
        assert_eq!(
            corpus.search("kafka", Some(0)),
            Err(SearchError::BadLimit(0))
        );
        assert_eq!(
            corpus.search("kafka", Some(21)),
            Err(SearchError::BadLimit(21))
        );
    }

    #[test]
    fn an_unmatched_query_finds_nothing() {
        let corpus = Corpus::bundled().unwrap();
        assert!(corpus.search("zebra migration", None).unwrap().is_empty());
    }

    #[test]
    fn duplicate_ids_are_refused() {
        let one = r#"{"id":"x","title":"t","published":"2026-01-01","tags":[],"summary":"s","body":"b","source":"https://a"}"#;
        let json = format!("[{one},{one}]");
        assert!(
            matches!(Corpus::from_json(&json), Err(ArticlesError::DuplicateId(id)) if id == "x")
        );
    }
}
