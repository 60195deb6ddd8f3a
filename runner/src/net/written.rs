//! URLs as they are written: the guard's one way to turn text (an entry's URL, a card's RPC
//! URL, a server's `endpoint` event) into a [`Url`]. The URL parser reads `0x7f000001`,
//! `017700000001`, `2130706433`, `127.1`, `127.0.0.1.` and `LOCALHOST` as loopback, and the
//! parsed [`Url`] no longer shows how it was spelled; so the spelling is checked here, on the
//! text, before the policy's checks on the parsed URL: loopback is reached only through a host
//! written exactly `localhost`, `127.0.0.1` or `[::1]`, whoever calls (rule 5.24, issue 29).
//! The check and its words are `orrery validate`'s ([`orrery_crds::host`]).

use super::error::{GuardError, Rule};
use orrery_crds::host::{loopback_spelling_problem, scheme_and_host};
use reqwest::Url;

/// Refuses the URL `text` when its host reaches loopback but is not written exactly as a
/// loopback host. Text that is not an absolute URL (a relative reference) passes: it takes the
/// host of the URL it is joined to.
pub fn check_written(text: &str) -> Result<(), GuardError> {
    match loopback_spelling_problem(text) {
        None => Ok(()),
        Some(why) => Err(GuardError::refused(
            scheme_and_host(text).map_or_else(|| text.to_owned(), |(_, host)| host),
            None,
            Rule::LoopbackNotWrittenExactly(why),
        )),
    }
}

/// Parses the URL `text`, refusing a loopback host not written exactly ([`check_written`]).
pub fn parse_url(text: &str) -> Result<Url, GuardError> {
    let url = Url::parse(text).map_err(|e| GuardError::InvalidUrl {
        url: text.to_owned(),
        reason: e.to_string(),
    })?;
    check_written(text)?;
    Ok(url)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_spelling_is_refused_with_its_written_host_and_exact_ones_parse() {
        for text in [
            "http://0x7f000001/mcp",
            "https://127.1:8443/",
            "http://LOCALHOST/",
        ] {
            match parse_url(text) {
                Err(GuardError::Refused { host, rule, .. }) => {
                    assert!(matches!(rule, Rule::LoopbackNotWrittenExactly(_)), "{text}");
                    assert!(text.contains(&host), "{text}: the written host, not {host}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        for text in [
            "http://127.0.0.1:9/",
            "http://localhost/",
            "https://tools.example/x",
        ] {
            assert!(parse_url(text).is_ok(), "{text}");
        }
        assert!(check_written("/messages?session=1").is_ok());
    }
}
