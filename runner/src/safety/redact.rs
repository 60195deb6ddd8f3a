//! Credential and PII redaction (rules 8.3, 8.5, 8.8).
//!
//! The rules match *shapes*, not values: API-key prefixes (`sk-…`, `sk-ant-…`, `AIza…`, `ghp_…`,
//! `github_pat_…`, `xox?-…`, `AKIA…`), AWS secret keys named as such, JWTs, PEM blocks (which
//! also covers the `private_key` of Google service-account JSON), `Authorization:` lines and
//! bearer tokens, `key = value` secrets with a telling name, URL userinfo and email addresses.
//! IP addresses are redacted only when asked ([`RedactOptions::redact_ips`]).
//!
//! Every regex is compiled once. The `regex` crate matches in linear time, so hostile input
//! cannot make redaction slow.

use regex::{Captures, Regex};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

/// Placeholder for API keys and personal access tokens.
pub const REDACTED_API_KEY: &str = "[REDACTED_API_KEY]";
/// Placeholder for JSON Web Tokens.
pub const REDACTED_JWT: &str = "[REDACTED_JWT]";
/// Placeholder for PEM blocks (private keys, certificates).
pub const REDACTED_PEM: &str = "[REDACTED_PEM]";
/// Placeholder for email addresses.
pub const REDACTED_EMAIL: &str = "[REDACTED_EMAIL]";
/// Placeholder for AWS access key ids.
pub const REDACTED_AWS_KEY: &str = "[REDACTED_AWS_KEY]";
/// Placeholder for AWS secret access keys.
pub const REDACTED_AWS_SECRET: &str = "[REDACTED_AWS_SECRET]";
/// Placeholder for bearer/basic tokens in `Authorization` lines.
pub const REDACTED_TOKEN: &str = "[REDACTED_TOKEN]";
/// Placeholder for values of `password=`, `api_key:`, `secret=` … assignments.
pub const REDACTED_SECRET: &str = "[REDACTED_SECRET]";
/// Placeholder for `user:password@` in URLs.
pub const REDACTED_CREDENTIALS: &str = "[REDACTED_CREDENTIALS]";
/// Placeholder for IP addresses (only with [`RedactOptions::redact_ips`]).
pub const REDACTED_IP: &str = "[REDACTED_IP]";

/// Options for [`redact_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RedactOptions {
    /// Also replace IPv4 and IPv6 addresses with `[REDACTED_IP]` (`ORRERY_REDACT_IPS=true`).
    pub redact_ips: bool,
}

/// One redaction rule: a pattern and how a match is rewritten.
struct Rule {
    re: Regex,
    rewrite: fn(&Captures<'_>) -> String,
}

fn rule(pattern: &str, rewrite: fn(&Captures<'_>) -> String) -> Option<Rule> {
    match Regex::new(pattern) {
        Ok(re) => Some(Rule { re, rewrite }),
        Err(err) => {
            // The patterns are constants covered by tests; a failure here is a programming error
            // that the tests catch, so the rule is dropped rather than crashing a run.
            tracing::error!(%err, pattern, "redaction pattern failed to compile");
            None
        }
    }
}

/// Keeps the named prefix (group `pre`) and replaces the value with `placeholder`, unless the
/// value already is a placeholder (so redaction is idempotent).
fn keep_prefix(caps: &Captures<'_>, placeholder: &str) -> String {
    let pre = caps.name("pre").map_or("", |m| m.as_str());
    let value = caps.name("value").map_or("", |m| m.as_str());
    if value.starts_with("[REDACTED_") {
        return caps
            .get(0)
            .map_or_else(String::new, |m| m.as_str().to_owned());
    }
    format!("{pre}{placeholder}")
}

/// The rules in the order they run: most specific shapes first, so the placeholder names the
/// kind of secret; generic `name = value` and emails last.
static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    [
        // PEM blocks, including a truncated block with no END line, and JSON-escaped ones
        // (`"private_key": "-----BEGIN PRIVATE KEY-----\nMII…\n-----END PRIVATE KEY-----\n"`).
        rule(
            r"-----BEGIN [A-Z0-9 ]{1,64}-----(?s:.*?)(?:-----END [A-Z0-9 ]{1,64}-----|\z)",
            |_| REDACTED_PEM.to_owned(),
        ),
        // JSON Web Tokens (header and payload are base64url JSON, so both start with `ey`).
        rule(
            r"\bey[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
            |_| REDACTED_JWT.to_owned(),
        ),
        // `Authorization: Bearer x` / `Proxy-Authorization: Basic x` header lines.
        rule(
            r"(?i)(?P<pre>\b(?:proxy-)?authorization\s*[:=]\s*(?:(?:bearer|basic|token|digest|apikey)\s+)?)(?P<value>[^\s,;]+)",
            |c| keep_prefix(c, REDACTED_TOKEN),
        ),
        // A bare `Bearer <token>` anywhere else.
        rule(r"(?P<pre>\b[Bb]earer\s+)(?P<value>[A-Za-z0-9._~+/=-]{16,})", |c| {
            keep_prefix(c, REDACTED_TOKEN)
        }),
        // Anthropic, OpenAI (`sk-`, `sk-proj-`, `sk-live-` …) and Stripe-style keys.
        rule(
            r"\b(?:sk-ant-[A-Za-z0-9_-]{16,}|sk-[A-Za-z0-9_-]{16,}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})",
            |_| REDACTED_API_KEY.to_owned(),
        ),
        // Google API keys.
        rule(r"\bAIza[0-9A-Za-z_-]{35}", |_| REDACTED_API_KEY.to_owned()),
        // GitHub tokens.
        rule(
            r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
            |_| REDACTED_API_KEY.to_owned(),
        ),
        // Slack tokens.
        rule(r"\bxox[abposre]-[A-Za-z0-9-]{10,}", |_| {
            REDACTED_API_KEY.to_owned()
        }),
        // GitLab, npm, Hugging Face and PyPI tokens.
        rule(
            r"\b(?:glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{50,})",
            |_| REDACTED_API_KEY.to_owned(),
        ),
        // AWS access key ids.
        rule(r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b", |_| {
            REDACTED_AWS_KEY.to_owned()
        }),
        // AWS secret access keys, recognised by their name (40 base64 characters alone are too
        // common to redact blindly).
        rule(
            r#"(?i)(?P<pre>\baws_?(?:secret_?access_?key|secret_?key|secret)["']?\s*[:=]\s*["']?)(?P<value>[A-Za-z0-9/+=]{40})"#,
            |c| keep_prefix(c, REDACTED_AWS_SECRET),
        ),
        // `password=…`, `"api_key": "…"`, `client_secret: …`, `private_key_id` …
        rule(
            r#"(?i)(?P<pre>\b(?:password|passwd|pwd|secret|client_?secret|api_?key|apikey|access_?token|auth_?token|refresh_?token|private_?key_?id|private_?key)["']?\s*[:=]\s*["']?)(?P<value>[^\s"',;]{6,})"#,
            |c| keep_prefix(c, REDACTED_SECRET),
        ),
        // Userinfo in URLs: `scheme://user:pass@host`.
        rule(
            r"(?P<pre>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<value>[^\s/@:]+:[^\s/@]+)@",
            |c| {
                let pre = c.name("pre").map_or("", |m| m.as_str());
                format!("{pre}{REDACTED_CREDENTIALS}@")
            },
        ),
        // Email addresses.
        rule(
            r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}\b",
            |_| REDACTED_EMAIL.to_owned(),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
});

/// Candidate IPv4 literals; checked with `Ipv4Addr::from_str` before redaction.
static IPV4: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b").ok());

/// Candidate IPv6 literals (at least two colons); checked with `Ipv6Addr::from_str`.
static IPV6: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"[0-9A-Fa-f]{0,4}:[0-9A-Fa-f:.]*:[0-9A-Fa-f.]*").ok());

/// Redacts credentials and email addresses (not IP addresses). Same as
/// `redact_with(text, RedactOptions::default())`.
pub fn redact(text: &str) -> String {
    redact_with(text, RedactOptions::default())
}

/// Redacts credentials, email addresses and, with `options.redact_ips`, IP addresses.
/// Deterministic and idempotent: redacting a redacted text changes nothing.
pub fn redact_with(text: &str, options: RedactOptions) -> String {
    let mut out = text.to_owned();
    for rule in RULES.iter() {
        if rule.re.is_match(&out) {
            out = rule.re.replace_all(&out, rule.rewrite).into_owned();
        }
    }
    if options.redact_ips {
        out = redact_ips(&out);
    }
    out
}

fn redact_ips(text: &str) -> String {
    let mut out = text.to_owned();
    if let Some(re) = IPV4.as_ref() {
        out = re
            .replace_all(&out, |c: &Captures<'_>| {
                let m = c.get(0).map_or("", |m| m.as_str());
                if m.parse::<Ipv4Addr>().is_ok() {
                    REDACTED_IP.to_owned()
                } else {
                    m.to_owned()
                }
            })
            .into_owned();
    }
    if let Some(re) = IPV6.as_ref() {
        out = re
            .replace_all(&out, |c: &Captures<'_>| {
                let m = c.get(0).map_or("", |m| m.as_str());
                if m.parse::<Ipv6Addr>().is_ok() {
                    REDACTED_IP.to_owned()
                } else {
                    m.to_owned()
                }
            })
            .into_owned();
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkNhbmFyeSJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";

    #[test]
    fn every_rule_compiles() {
        assert_eq!(RULES.len(), 14);
        assert!(IPV4.is_some() && IPV6.is_some());
    }

    #[test]
    fn canary_secrets_are_replaced_by_their_placeholders() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "openai live canary",
                "key sk-live-CANARY0123456789abcdef end",
                REDACTED_API_KEY,
            ),
            (
                "openai project key",
                "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
                REDACTED_API_KEY,
            ),
            (
                "anthropic key",
                "sk-ant-api03-CANARYabcdefghijklmnopqrstuvwxyz0123",
                REDACTED_API_KEY,
            ),
            (
                "stripe key",
                "sk_live_CANARY0123456789abcdef",
                REDACTED_API_KEY,
            ),
            (
                "google key",
                "AIzaSyCANARY0123456789abcdefghijklmnopq",
                REDACTED_API_KEY,
            ),
            (
                "github classic",
                "ghp_CANARY0123456789abcdefghijklmnopqrstu",
                REDACTED_API_KEY,
            ),
            (
                "github fine-grained",
                "github_pat_11CANARY0123456789_abcdefghijklmnop",
                REDACTED_API_KEY,
            ),
            (
                "slack bot",
                "xoxb-123456789012-CANARYabcdef",
                REDACTED_API_KEY,
            ),
            ("gitlab", "glpat-CANARY0123456789abcd", REDACTED_API_KEY),
            (
                "aws access key id",
                "id AKIAIOSFODNN7CANARY0 x",
                REDACTED_AWS_KEY,
            ),
            (
                "aws session key id",
                "ASIAIOSFODNN7CANARY0",
                REDACTED_AWS_KEY,
            ),
            ("jwt", JWT, REDACTED_JWT),
            (
                "email",
                "write to jane.doe+canary@example.co.uk today",
                REDACTED_EMAIL,
            ),
        ];
        for (name, input, placeholder) in cases {
            let out = redact(input);
            assert!(out.contains(placeholder), "{name}: {out}");
            assert!(!out.contains("CANARY"), "{name} leaked: {out}");
            assert!(!out.contains("canary@"), "{name} leaked: {out}");
        }
    }

    #[test]
    fn a_pem_block_is_replaced_whole() {
        let text = "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEACANARY\nabc/def+==\n-----END RSA PRIVATE KEY-----\nafter";
        assert_eq!(redact(text), format!("before\n{REDACTED_PEM}\nafter"));
    }

    #[test]
    fn a_truncated_pem_block_is_redacted_to_the_end() {
        let text = "key: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqCANARY";
        assert_eq!(redact(text), format!("key: {REDACTED_PEM}"));
    }

    #[test]
    fn a_google_service_account_private_key_is_redacted() {
        let text = r#"{"type":"service_account","private_key_id":"0123456789abcdef0123456789abcdef01234567","private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvQCANARY\n-----END PRIVATE KEY-----\n","client_email":"bot@proj.iam.gserviceaccount.com"}"#;
        let out = redact(text);
        assert!(!out.contains("CANARY"), "{out}");
        assert!(!out.contains("0123456789abcdef0123"), "{out}");
        assert!(!out.contains("bot@proj"), "{out}");
        assert!(
            out.contains(REDACTED_PEM) && out.contains(REDACTED_EMAIL),
            "{out}"
        );
    }

    #[test]
    fn authorization_lines_keep_the_scheme_and_lose_the_token() {
        let cases = [
            (
                "Authorization: Bearer abc.def-CANARY",
                "Authorization: Bearer [REDACTED_TOKEN]",
            ),
            (
                "authorization:   basic dXNlcjpwYXNzQ0FOQVJZ",
                "authorization:   basic [REDACTED_TOKEN]",
            ),
            (
                "Proxy-Authorization: CANARYtoken",
                "Proxy-Authorization: [REDACTED_TOKEN]",
            ),
            (
                "use Bearer CANARY0123456789abcdef now",
                "use Bearer [REDACTED_TOKEN] now",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
    }

    #[test]
    fn named_secrets_keep_their_name() {
        let cases = [
            ("password=CANARYpw1", "password=[REDACTED_SECRET]"),
            (
                r#""api_key": "CANARY-123456""#,
                r#""api_key": "[REDACTED_SECRET]""#,
            ),
            (
                "client_secret: CANARYsecret",
                "client_secret: [REDACTED_SECRET]",
            ),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYCANARYKEYA",
                "aws_secret_access_key = [REDACTED_AWS_SECRET]",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
    }

    #[test]
    fn url_userinfo_is_redacted() {
        assert_eq!(
            redact("see https://admin:CANARYpw@db.example.com/x"),
            "see https://[REDACTED_CREDENTIALS]@db.example.com/x"
        );
    }

    #[test]
    fn ordinary_text_is_unchanged() {
        let text = "The release adds 3 features (see docs/notes.md), costs $12.50 at 10:30:45, \
                    and the task-sk-1 is done. Password policy is documented.";
        assert_eq!(redact(text), text);
    }

    #[test]
    fn redaction_is_idempotent() {
        let text =
            format!("Authorization: Bearer {JWT}\napi_key=sk-live-CANARY0123456789abcdef x@y.io");
        let once = redact(&text);
        assert_eq!(redact(&once), once);
    }

    #[test]
    fn ip_addresses_are_redacted_only_when_asked() {
        let text = "from 10.1.2.3 and [fe80::1] and 2001:db8::7, not 999.1.1.1 or 12:30:45";
        assert_eq!(redact(text), text);
        let out = redact_with(text, RedactOptions { redact_ips: true });
        assert_eq!(
            out,
            "from [REDACTED_IP] and [[REDACTED_IP]] and [REDACTED_IP], not 999.1.1.1 or 12:30:45"
        );
    }
}
