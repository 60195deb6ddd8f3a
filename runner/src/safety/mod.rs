//! The safety screen and redaction applied to every remote reply before a model sees it
//! (rules 8.1–8.8) and to captured content.
//!
//! - [`redact`] / [`redact_with`]: credentials, JWTs, PEM blocks, cloud keys and email addresses
//!   become placeholders (`[REDACTED_API_KEY]`, `[REDACTED_EMAIL]` …); IPs only on request.
//! - [`screen`] / [`screen_with`]: removes hidden characters, flags injection attempts, prefixes
//!   flagged text with a marker, and redacts.
//! - [`cut_to`]: text cut to a byte cap on a character boundary, marked `…` (rule 8.5).
//! - [`output`]: what a remote reply (MCP or A2A) becomes before a model sees it: screened,
//!   then held to the output cap; remote JSON decoded without quoting remote values.

mod cut;
pub mod output;
mod redact;
mod screen;

pub use cut::cut_to;
pub use redact::{
    REDACTED_API_KEY, REDACTED_AWS_KEY, REDACTED_AWS_SECRET, REDACTED_CREDENTIALS, REDACTED_EMAIL,
    REDACTED_IP, REDACTED_JWT, REDACTED_PEM, REDACTED_SECRET, REDACTED_TOKEN, RedactOptions,
    redact, redact_with,
};
pub use screen::{ScreenFlag, Screened, marker, screen, screen_with};
