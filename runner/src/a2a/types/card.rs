//! The A2A 1.0 agent card (`lf.a2a.v1.AgentCard` in ProtoJSON: camelCase fields).
//!
//! Repeated and plain string fields default when absent, because ProtoJSON writers (the official
//! SDKs) omit empty values; [`AgentCard::missing_required_fields`] reports what the spec requires.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::Metadata;

/// The self-describing manifest of an agent, served at [`super::AGENT_CARD_PATH`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// Human-readable name (required).
    #[serde(default)]
    pub name: String,
    /// What the agent does (required).
    #[serde(default)]
    pub description: String,
    /// Interfaces in order of preference; the first one a client supports wins (required).
    #[serde(default)]
    pub supported_interfaces: Vec<AgentInterface>,
    /// The organisation behind the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version (required).
    #[serde(default)]
    pub version: String,
    /// Further documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// Optional protocol features the agent supports (required, may be empty).
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// Security schemes by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Which schemes a caller must satisfy (any one entry of the list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Media types accepted by default (required).
    #[serde(default)]
    pub default_input_modes: Vec<String>,
    /// Media types produced by default (required).
    #[serde(default)]
    pub default_output_modes: Vec<String>,
    /// What the agent can do (required).
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
    /// JWS signatures over the card.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
    /// An icon for the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

impl AgentCard {
    /// The first interface (in the card's order of preference) with the given binding whose
    /// protocol major version is 1.
    pub fn preferred_interface(&self, binding: &str) -> Option<&AgentInterface> {
        self.supported_interfaces.iter().find(|i| {
            i.protocol_binding == binding && super::version_is_supported(&i.protocol_version)
        })
    }

    /// The skill with this id.
    pub fn skill(&self, id: &str) -> Option<&AgentSkill> {
        self.skills.iter().find(|s| s.id == id)
    }

    /// Required fields (as the 1.0 proto marks them) that are missing or empty, as JSON paths.
    pub fn missing_required_fields(&self) -> Vec<String> {
        let mut missing = Vec::new();
        let mut need = |ok: bool, path: String| {
            if !ok {
                missing.push(path);
            }
        };
        need(!self.name.is_empty(), "name".into());
        need(!self.description.is_empty(), "description".into());
        need(!self.version.is_empty(), "version".into());
        need(
            !self.supported_interfaces.is_empty(),
            "supportedInterfaces".into(),
        );
        for (i, iface) in self.supported_interfaces.iter().enumerate() {
            need(
                !iface.url.is_empty(),
                format!("supportedInterfaces[{i}].url"),
            );
            need(
                !iface.protocol_binding.is_empty(),
                format!("supportedInterfaces[{i}].protocolBinding"),
            );
            need(
                !iface.protocol_version.is_empty(),
                format!("supportedInterfaces[{i}].protocolVersion"),
            );
        }
        need(
            !self.default_input_modes.is_empty(),
            "defaultInputModes".into(),
        );
        need(
            !self.default_output_modes.is_empty(),
            "defaultOutputModes".into(),
        );
        need(!self.skills.is_empty(), "skills".into());
        for (i, skill) in self.skills.iter().enumerate() {
            need(!skill.id.is_empty(), format!("skills[{i}].id"));
            need(!skill.name.is_empty(), format!("skills[{i}].name"));
            need(
                !skill.description.is_empty(),
                format!("skills[{i}].description"),
            );
            need(!skill.tags.is_empty(), format!("skills[{i}].tags"));
        }
        missing
    }
}

/// One way to reach the agent: a URL, a binding and a protocol version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// Where the interface is served (for JSON-RPC: the URL every request is POSTed to).
    #[serde(default)]
    pub url: String,
    /// `JSONRPC`, `HTTP+JSON` or `GRPC` (see the `BINDING_*` constants).
    #[serde(default)]
    pub protocol_binding: String,
    /// Tenant to copy into every request, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The A2A version this interface speaks, e.g. `1.0`.
    #[serde(default)]
    pub protocol_version: String,
}

/// The organisation that provides the agent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    /// The provider's website.
    #[serde(default)]
    pub url: String,
    /// The provider's name.
    #[serde(default)]
    pub organization: String,
}

/// Optional protocol features.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `SendStreamingMessage` and `SubscribeToTask` are served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Push notifications are served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// Protocol extensions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    /// An extended card is served to authenticated callers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

/// A protocol extension the agent supports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    /// The extension's URI.
    #[serde(default)]
    pub uri: String,
    /// How the agent uses it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Whether clients must understand it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// Extension parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Metadata>,
}

/// One skill of the agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Skill id (what `a2a:<entry>.<skill>` names).
    #[serde(default)]
    pub id: String,
    /// Human-readable name.
    #[serde(default)]
    pub name: String,
    /// What the skill does.
    #[serde(default)]
    pub description: String,
    /// Keywords.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Input media types, overriding the card's defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    /// Output media types, overriding the card's defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    /// Security requirements for this skill.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
}

/// A detached JWS over the card (spec §8.4).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentCardSignature {
    /// Base64url of the protected header.
    #[serde(default)]
    pub protected: String,
    /// Base64url of the signature.
    #[serde(default)]
    pub signature: String,
    /// Unprotected header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Metadata>,
}

/// Scheme name → the scopes required of it; a caller satisfies a requirement by meeting all.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecurityRequirement {
    /// Scheme name → scopes.
    #[serde(default)]
    pub schemes: BTreeMap<String, StringList>,
}

/// A list of strings (`lf.a2a.v1.StringList`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StringList {
    /// The strings.
    #[serde(default)]
    pub list: Vec<String>,
}

/// A security scheme: a ProtoJSON oneof, so exactly one key is present.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SecurityScheme {
    /// An API key in a header, query parameter or cookie.
    #[serde(rename = "apiKeySecurityScheme")]
    ApiKey(ApiKeySecurityScheme),
    /// HTTP authentication (`Bearer`, `Basic` …).
    #[serde(rename = "httpAuthSecurityScheme")]
    HttpAuth(HttpAuthSecurityScheme),
    /// OAuth 2.0.
    #[serde(rename = "oauth2SecurityScheme")]
    OAuth2(OAuth2SecurityScheme),
    /// OpenID Connect.
    #[serde(rename = "openIdConnectSecurityScheme")]
    OpenIdConnect(OpenIdConnectSecurityScheme),
    /// Mutual TLS.
    #[serde(rename = "mtlsSecurityScheme")]
    MutualTls(MutualTlsSecurityScheme),
}

/// An API key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeySecurityScheme {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `header`, `query` or `cookie`.
    #[serde(default)]
    pub location: String,
    /// The header, parameter or cookie name.
    #[serde(default)]
    pub name: String,
}

/// HTTP authentication.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The `Authorization` scheme, e.g. `Bearer`.
    #[serde(default)]
    pub scheme: String,
    /// A hint at the bearer token's format, e.g. `JWT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_format: Option<String>,
}

/// OAuth 2.0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2SecurityScheme {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The flow (a oneof).
    pub flows: OAuthFlows,
    /// RFC 8414 metadata URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth2_metadata_url: Option<String>,
}

/// The OAuth flow (a ProtoJSON oneof: exactly one key).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OAuthFlows {
    /// Authorization code (with PKCE).
    AuthorizationCode(OAuthFlow),
    /// Client credentials.
    ClientCredentials(OAuthFlow),
    /// Implicit (deprecated in 1.0).
    Implicit(OAuthFlow),
    /// Resource owner password (deprecated in 1.0).
    Password(OAuthFlow),
    /// Device code (RFC 8628).
    DeviceCode(OAuthFlow),
}

/// The endpoints and scopes of one OAuth flow (the union of the 1.0 flow messages' fields).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthFlow {
    /// Authorization endpoint (authorization code, implicit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_url: Option<String>,
    /// Device authorization endpoint (device code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_authorization_url: Option<String>,
    /// Token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// Refresh endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope name → description.
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
    /// PKCE is required (authorization code).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pkce_required: bool,
}

/// OpenID Connect.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectSecurityScheme {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The discovery URL.
    #[serde(default)]
    pub open_id_connect_url: String,
}

/// Mutual TLS.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MutualTlsSecurityScheme {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}
