//! An A2A registry entry as a run uses it: card URL and pin, skills, effect, the origins RPC
//! targets and the bearer token may go to, limits, and the key its card pin is kept under.

use super::signature::SignaturePolicy;
use crate::net::{EndpointAccess, Origin};
use crate::secrets::{SecretResolver, SecretValue};
use orrery_crds::registry::{A2aEntry, Effect};
use reqwest::Url;
use std::time::Duration;

/// Time for one message (the remote's, not a person's) when the entry sets none.
pub const DEFAULT_MESSAGE_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest reply read when the entry sets none.
pub const DEFAULT_MAX_REPLY_BYTES: u64 = 1024 * 1024;
/// Largest card read when the entry sets none.
pub const DEFAULT_MAX_CARD_BYTES: u64 = 256 * 1024;

/// Why an A2A entry cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// A URL does not parse, or the guard refuses how it is written.
    #[error("A2A entry '{entry}': {what} {url:?} cannot be used ({reason})")]
    Url {
        /// The entry.
        entry: String,
        /// `cardUrl` or `serviceOrigins`.
        what: &'static str,
        /// The URL as written.
        url: String,
        /// The parser's message.
        reason: String,
    },
    /// `cardSignature.jwks` is not a key set that can vouch for a card.
    #[error("A2A entry '{entry}': spec.a2a.cardSignature.jwks: {source}")]
    KeySet {
        /// The entry.
        entry: String,
        /// Why.
        source: orrery_crds::jwks::JwksError,
    },
    /// The bearer token could not be read.
    #[error("A2A entry '{entry}': its bearer token: {source}")]
    Secret {
        /// The entry.
        entry: String,
        /// Why.
        source: Box<crate::secrets::SecretError>,
    },
}

/// One A2A entry, resolved for a run.
#[derive(Clone, Debug)]
pub struct A2aEndpoint {
    /// The registry entry's name.
    pub entry: String,
    /// Where the card is served.
    pub card_url: Url,
    /// The pin from the entry's `cardSHA256`, lowercase.
    pub card_sha256: Option<String>,
    /// The skills the entry allows.
    pub skills: Vec<String>,
    /// ReadOnly or Acting.
    pub effect: Effect,
    /// The card URL's origin followed by the entry's `serviceOrigins`: RPC targets must be on
    /// one of them, and the bearer token goes nowhere else.
    pub origins: Vec<Origin>,
    /// Whether the entry is `privateNetwork`.
    pub private_network: bool,
    /// The bearer token.
    pub bearer: Option<SecretValue>,
    /// Time for one message.
    pub message_timeout: Duration,
    /// Largest reply read (a JSON body or a whole event stream).
    pub max_reply_bytes: u64,
    /// Largest card read.
    pub max_card_bytes: u64,
    /// What the card's signatures must be (`cardSignature`); `None`: they are not read.
    pub card_signature: Option<SignaturePolicy>,
}

impl A2aEndpoint {
    /// Resolves the entry `name`, reading its bearer token with `secrets`.
    pub fn from_entry(
        name: &str,
        spec: &A2aEntry,
        secrets: &dyn SecretResolver,
    ) -> Result<Self, EndpointError> {
        let url_error = |what, url: &str, reason: String| EndpointError::Url {
            entry: name.to_owned(),
            what,
            url: url.to_owned(),
            reason,
        };
        let card_url = crate::net::parse_url(&spec.card_url)
            .map_err(|e| url_error("cardUrl", &spec.card_url, e.to_string()))?;
        if let Some(why) = orrery_crds::registry::card_path_problem(&spec.card_url) {
            return Err(url_error("cardUrl", &spec.card_url, why));
        }
        let card_signature = match &spec.card_signature {
            None => None,
            Some(signature) => Some(SignaturePolicy {
                keys: match (&signature.jwks, &signature.jwks_config_map_ref) {
                    (Some(jwks), _) => {
                        orrery_crds::jwks::parse_jwks(jwks.as_bytes()).map_err(|source| {
                            EndpointError::KeySet {
                                entry: name.to_owned(),
                                source,
                            }
                        })?
                    }
                    // The operator puts the ConfigMap's key set in `jwks` for the run; a
                    // reference still here was not read, so no key is trusted.
                    (None, Some(reference)) => {
                        return Err(EndpointError::KeySet {
                            entry: name.to_owned(),
                            source: orrery_crds::jwks::JwksError::Document(format!(
                                "the key set of ConfigMap {:?} (key {:?}) was not handed to this run; check that the ConfigMap exists and the entry is Ready",
                                reference.name, reference.key
                            )),
                        });
                    }
                    (None, None) => orrery_crds::jwks::Jwks::default(),
                },
                allow_jku: signature.allow_jku,
            }),
        };
        let mut origins = vec![
            Origin::of(&card_url)
                .map_err(|e| url_error("cardUrl", &spec.card_url, e.to_string()))?,
        ];
        for text in &spec.service_origins {
            let origin = Origin::parse(text)
                .map_err(|e| url_error("serviceOrigins", text, e.to_string()))?;
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        let access = EndpointAccess::resolve(
            spec.auth.as_ref(),
            spec.limits.as_ref(),
            secrets,
            DEFAULT_MESSAGE_TIMEOUT,
            DEFAULT_MAX_REPLY_BYTES,
        )
        .map_err(|e| EndpointError::Secret {
            entry: name.to_owned(),
            source: Box::new(e),
        })?;
        Ok(A2aEndpoint {
            entry: name.to_owned(),
            card_url,
            card_sha256: spec.card_sha256.as_ref().map(|d| d.to_ascii_lowercase()),
            skills: spec.skills.clone(),
            effect: spec.effect,
            origins,
            private_network: spec.private_network,
            bearer: access.bearer,
            message_timeout: access.timeout,
            max_reply_bytes: access.max_reply_bytes,
            max_card_bytes: access
                .limits
                .max_card_bytes
                .unwrap_or(DEFAULT_MAX_CARD_BYTES),
            card_signature,
        })
    }

    /// Whether calls change things (each is confirmed by the run's owner).
    pub fn acting(&self) -> bool {
        self.effect == Effect::Acting
    }

    /// The key the card pin is kept under (rule 5.19): card URL, `cardSHA256`, skills, origins
    /// and network flag. Any of them changing pins the card afresh.
    pub fn pin_key(&self) -> String {
        let origins: Vec<String> = self.origins.iter().map(ToString::to_string).collect();
        let mut skills = self.skills.clone();
        skills.sort();
        format!(
            "a2a {} cardSHA256={} skills={} origins={} privateNetwork={}",
            self.card_url,
            self.card_sha256.as_deref().unwrap_or("-"),
            skills.join(","),
            origins.join(","),
            self.private_network
        )
    }
}
