//! What can go wrong in the event store, and keeping a database URL's password out of every
//! message: [`redact_url`] for the URL shown, [`Scrub`] for text that came back from the driver or
//! the server.

/// The largest part of a driver's or server's message an error carries.
const MAX_REASON_CHARS: usize = 400;

/// What went wrong in the event store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened (or connected to).
    #[error(
        "cannot open the event store {target}: {reason}; check the store URL in the sidecar's \
         config, that the database is reachable and that the sidecar may write to it"
    )]
    Open {
        /// The store URL with any password replaced by `***`.
        target: String,
        /// What failed.
        reason: String,
    },
    /// An embedded schema migration failed (its transaction was rolled back).
    #[error(
        "event store schema migration {version} failed: {reason}; the database was left at the \
         version before it: fix the cause and restart the sidecar"
    )]
    Migrate {
        /// The migration's version (1 is the first).
        version: u32,
        /// What failed.
        reason: String,
    },
    /// A statement failed.
    #[error(
        "event store {operation} failed: {reason}; the call can be retried: check that the \
         database is reachable and its disk is not full"
    )]
    Query {
        /// The store operation (`append`, `events_after`, `listen`…).
        operation: &'static str,
        /// The driver's or server's message.
        reason: String,
    },
    /// An append whose first event is past the last stored one plus one: events are missing
    /// before it. Nothing was stored.
    #[error(
        "the batch starts past a gap in the run's stored events: resend from seq {expected}, \
         the next one the store expects"
    )]
    Gap {
        /// The `seq` the store expects next (its last stored `seq` + 1).
        expected: u64,
    },
    /// An append past the run's `run.end`: a trace ends there. Nothing was stored.
    #[error(
        "the run's trace ended with run.end at seq {last}: nothing is stored after it (a \
         runner never emits past its run.end)"
    )]
    Ended {
        /// The `seq` of the stored `run.end`.
        last: u64,
    },
    /// A `seq` the store cannot hold: events are numbered from 1 and must fit a signed 64-bit
    /// integer (the column is a `BIGINT`).
    #[error(
        "seq {seq} is out of range: a run's events are numbered from 1 up to {}",
        i64::MAX
    )]
    Seq {
        /// The offending `seq`.
        seq: u64,
    },
    /// A stored row holds a value no type names (a kind or an outcome written by something
    /// else than this sidecar).
    #[error(
        "the event store's {table}.{column} holds '{value}', which this sidecar does not know; \
         the row was written by another version or by hand: remove it or upgrade the sidecar"
    )]
    Row {
        /// The table.
        table: &'static str,
        /// The column.
        column: &'static str,
        /// The value found (at most 64 characters).
        value: String,
    },
    /// Not a store URL.
    #[error("{reason}")]
    Url {
        /// What is wrong with it and the URLs that work.
        reason: String,
    },
}

/// `url` with the password of its user info and any `password=` query parameter replaced by
/// `***`. A URL that does not parse keeps only its scheme and host part.
pub(crate) fn redact_url(url: &str) -> String {
    if let Ok(mut parsed) = url::Url::parse(url) {
        if !parsed.cannot_be_a_base() {
            if parsed.password().is_some() {
                // Cannot fail on a URL that has a base.
                let _ = parsed.set_password(Some("***"));
            }
            if parsed.query().is_some() {
                let pairs: Vec<(String, String)> = parsed
                    .query_pairs()
                    .map(|(k, v)| {
                        let v = if is_secret_key(&k) {
                            "***".to_string()
                        } else {
                            v.into_owned()
                        };
                        (k.into_owned(), v)
                    })
                    .collect();
                parsed.query_pairs_mut().clear().extend_pairs(pairs);
            }
        }
        return parsed.to_string();
    }
    // Unparsable: keep the scheme and what follows the last '@' up to the path, hide the user
    // info and the query.
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (scheme, rest),
        None => return "<a URL that does not parse>".to_string(),
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    match rest.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}")
        }
        None => format!("{scheme}://{rest}"),
    }
}

fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.contains("password") || key == "sslkey" || key.contains("secret")
}

/// Removes secrets (a URL's password, raw and percent-decoded) from driver and server text, and
/// cuts it to [`MAX_REASON_CHARS`] of printable characters.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scrub {
    secrets: Vec<String>,
}

impl Scrub {
    /// The secrets of `url`: its password and `password=` query values, as written and decoded.
    pub(crate) fn for_url(url: &str) -> Scrub {
        let mut secrets = Vec::new();
        let mut push = |s: &str| {
            if !s.is_empty() && !secrets.iter().any(|x: &String| x == s) {
                secrets.push(s.to_string());
            }
        };
        if let Ok(parsed) = url::Url::parse(url) {
            if let Some(password) = parsed.password() {
                push(password);
                if let Ok(decoded) = percent_decode(password) {
                    push(&decoded);
                }
            }
            for (k, v) in parsed.query_pairs() {
                if is_secret_key(&k) {
                    push(&v);
                }
            }
        } else if let Some((_, rest)) = url.split_once("://")
            && let Some((user_info, _)) = rest.rsplit_once('@')
            && let Some((_, password)) = user_info.split_once(':')
        {
            push(password);
        }
        // Longest first, so a secret containing another is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Scrub { secrets }
    }

    /// `text` without the secrets, control characters, or more than [`MAX_REASON_CHARS`].
    pub(crate) fn text(&self, text: &str) -> String {
        let mut text = text.to_string();
        for secret in &self.secrets {
            text = text.replace(secret.as_str(), "***");
        }
        let mut out: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(MAX_REASON_CHARS)
            .collect();
        if text.chars().count() > MAX_REASON_CHARS {
            out.push('…');
        }
        out
    }

    /// A [`StoreError::Query`] for a failed `operation`.
    pub(crate) fn query(&self, operation: &'static str, error: &sqlx::Error) -> StoreError {
        StoreError::Query {
            operation,
            reason: self.text(&error.to_string()),
        }
    }
}

/// Decodes `%XX` escapes (a password in a URL is percent-encoded).
fn percent_decode(s: &str) -> Result<String, std::string::FromUtf8Error> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out)
}
