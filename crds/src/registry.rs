//! The `RegistryEntry` resource: one remote endpoint a composition may reach.

use crate::common::{BearerAuth, Condition, SecretKeyRef};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One remote endpoint: exactly one of `mcp` (an MCP server), `a2a` (a remote A2A agent) or
/// `model` (a model endpoint). A composition can reach only what the registry lists, by the
/// entry's name. Secrets are references to Secrets in the same namespace, never values.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "studio.orrery.dev",
    version = "v1alpha1",
    kind = "RegistryEntry",
    plural = "registryentries",
    singular = "registryentry",
    shortname = "reg",
    shortname = "regentry",
    category = "orrery",
    namespaced,
    doc = "A RegistryEntry: one remote endpoint (an MCP server, an A2A agent or a model) that Compositions in this namespace may reach, by name. Its status shows whether it is Ready and Pinned.",
    status = "RegistryEntryStatus",
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".status.kind"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Pinned","type":"string","jsonPath":".status.conditions[?(@.type==\"Pinned\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    validation = kube::core::Rule::new("self.metadata.name.matches('^[a-z][a-z0-9-]{0,62}$')").message("a RegistryEntry name must be at most 63 characters of lowercase letters, digits and '-', starting with a letter (it becomes part of tool names)")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "[has(self.mcp), has(self.a2a), has(self.model)].filter(x, x).size() == 1",
     "message": "set exactly one of spec.mcp, spec.a2a or spec.model"}
]))]
pub struct RegistryEntrySpec {
    /// What this endpoint is, for people reading the registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub description: Option<String>,
    /// An MCP server reached over streamable HTTP or legacy SSE (never stdio). Its tools reach
    /// the model as `mcp_<entry>_<tool>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpEntry>,
    /// A remote A2A agent whose skills are tools `a2a_<entry>_<skill>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a2a: Option<A2aEntry>,
    /// A model endpoint a node can name in `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelEntry>,
}

/// The kind of a registry entry.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum EntryKind {
    /// An MCP server.
    Mcp,
    /// A remote A2A agent.
    A2a,
    /// A model endpoint.
    Model,
}

impl RegistryEntrySpec {
    /// The kind of the entry, or `None` when not exactly one of mcp/a2a/model is set.
    pub fn kind(&self) -> Option<EntryKind> {
        match (&self.mcp, &self.a2a, &self.model) {
            (Some(_), None, None) => Some(EntryKind::Mcp),
            (None, Some(_), None) => Some(EntryKind::A2a),
            (None, None, Some(_)) => Some(EntryKind::Model),
            _ => None,
        }
    }
}

impl RegistryEntry {
    /// An entry named `name` for an MCP server.
    pub fn from_mcp(name: &str, mcp: McpEntry) -> Self {
        RegistryEntry::new(
            name,
            RegistryEntrySpec {
                description: None,
                mcp: Some(mcp),
                a2a: None,
                model: None,
            },
        )
    }

    /// An entry named `name` for a remote A2A agent.
    pub fn from_a2a(name: &str, a2a: A2aEntry) -> Self {
        RegistryEntry::new(
            name,
            RegistryEntrySpec {
                description: None,
                mcp: None,
                a2a: Some(a2a),
                model: None,
            },
        )
    }

    /// An entry named `name` for a model endpoint.
    pub fn from_model(name: &str, model: ModelEntry) -> Self {
        RegistryEntry::new(
            name,
            RegistryEntrySpec {
                description: None,
                mcp: None,
                a2a: None,
                model: Some(model),
            },
        )
    }
}

impl McpEntry {
    /// A public server (no private network, no auth, default limits) allowing `tools`, of which
    /// `read_only` may be used.
    pub fn new(url: &str, transport: McpTransport, tools: &[&str], read_only: &[&str]) -> Self {
        McpEntry {
            url: url.to_owned(),
            transport,
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            read_only: read_only.iter().map(|t| (*t).to_owned()).collect(),
            private_network: false,
            auth: None,
            limits: None,
        }
    }
}

impl A2aEntry {
    /// A public, read-only agent (no pin, no extra origins, no auth, default limits) whose
    /// `skills` may be used.
    pub fn new(card_url: &str, skills: &[&str]) -> Self {
        A2aEntry {
            card_url: card_url.to_owned(),
            card_sha256: None,
            skills: skills.iter().map(|s| (*s).to_owned()).collect(),
            effect: Effect::ReadOnly,
            service_origins: Vec::new(),
            private_network: false,
            auth: None,
            limits: None,
            card_signature: None,
        }
    }
}

impl ModelEntry {
    /// A public endpoint of `provider` serving `model`: the provider's default base URL, no API
    /// key, no limits, no script.
    pub fn new(provider: ModelProvider, model: &str) -> Self {
        ModelEntry {
            provider,
            model: model.to_owned(),
            base_url: None,
            api_key: None,
            private_network: false,
            limits: None,
            script: None,
        }
    }

    /// A Scripted model named `model` answering from `script`.
    pub fn scripted(model: &str, script: ModelScript) -> Self {
        ModelEntry {
            script: Some(script),
            ..ModelEntry::new(ModelProvider::Scripted, model)
        }
    }
}

/// The path an agent card is served at, below the agent's origin or a path prefix (A2A §8.2;
/// security case 25: a card from anywhere else is refused).
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// Why `card_url` is not an agent's well-known card (`None`: it is): its path must end in
/// [`AGENT_CARD_PATH`]. A URL that does not parse is left to the
/// URL checks.
pub fn card_path_problem(card_url: &str) -> Option<String> {
    let url = url::Url::parse(card_url).ok()?;
    if !url.path().ends_with(AGENT_CARD_PATH) {
        return Some(format!(
            "{card_url:?} is not an agent's well-known card: its path must end in {AGENT_CARD_PATH} (A2A §8.2); a card served anywhere else is refused"
        ));
    }
    None
}

/// One URL of an entry, at its field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryUrl {
    /// The field, e.g. `spec.a2a.serviceOrigins[1]`.
    pub field: String,
    /// The URL as written.
    pub url: String,
}

/// The public endpoint a model provider uses when its entry sets no `baseUrl`.
pub fn default_base_url(provider: ModelProvider) -> Option<&'static str> {
    match provider {
        ModelProvider::OpenAi => Some("https://api.openai.com/v1"),
        ModelProvider::Anthropic => Some("https://api.anthropic.com"),
        ModelProvider::Gemini => Some("https://generativelanguage.googleapis.com"),
        ModelProvider::Scripted => None,
    }
}

/// Every URL the entry reaches: an MCP server's `url`; an agent's `cardUrl` and
/// `serviceOrigins`; a model's `baseUrl` or its provider's default. A Scripted model reaches
/// none. The operator's static checks and NetworkPolicies and the probe read entries through
/// this one list.
pub fn entry_urls(spec: &RegistryEntrySpec) -> Vec<EntryUrl> {
    let at = |field: String, url: &str| EntryUrl {
        field,
        url: url.to_owned(),
    };
    let mut out = Vec::new();
    if let Some(mcp) = &spec.mcp {
        out.push(at("spec.mcp.url".into(), &mcp.url));
    }
    if let Some(a2a) = &spec.a2a {
        out.push(at("spec.a2a.cardUrl".into(), &a2a.card_url));
        for (i, origin) in a2a.service_origins.iter().enumerate() {
            out.push(at(format!("spec.a2a.serviceOrigins[{i}]"), origin));
        }
    }
    if let Some(model) = &spec.model {
        match (&model.base_url, default_base_url(model.provider)) {
            (Some(url), _) => out.push(at("spec.model.baseUrl".into(), url)),
            (None, Some(url)) if model.provider != ModelProvider::Scripted => {
                out.push(at("spec.model.provider".into(), url));
            }
            _ => {}
        }
    }
    out
}

/// MCP transport.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum McpTransport {
    /// Streamable HTTP (MCP 2025-11-25 session model and 2026-07-28).
    #[default]
    StreamableHttp,
    /// Legacy HTTP+SSE.
    Sse,
}

/// An MCP server entry.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpEntry {
    /// The server's URL (https; plain http only to loopback).
    #[schemars(length(min = 1, max = 2048))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"rule": "isURL(self) && url(self).getHostname() != '' && (url(self).getScheme() == 'https' || (url(self).getScheme() == 'http' && url(self).getHostname() in ['localhost', '127.0.0.1', '::1']))",
         "message": "spec.mcp.url must be an https URL (plain http is allowed only to localhost, 127.0.0.1 or [::1])"}
    ]))]
    pub url: String,
    /// StreamableHttp (default) or Sse.
    #[serde(default)]
    pub transport: McpTransport,
    /// The server's tools a composition may reference (the allowlist).
    #[schemars(length(min = 1, max = 128))]
    pub tools: Vec<String>,
    /// Tools that only read. Only these can be used; each must also carry
    /// `readOnlyHint: true` on the server, or it is refused loudly.
    #[serde(default)]
    #[schemars(length(max = 128))]
    pub read_only: Vec<String>,
    /// The server is on a private network; its host must also be on the deployment's allowlist.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub private_network: bool,
    /// Bearer token sent only to this server's origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<BearerAuth>,
    /// Per-call limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<EndpointLimits>,
}

/// Whether a remote agent changes things.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Effect {
    /// The agent only reads (default).
    #[default]
    ReadOnly,
    /// The agent acts: each call is confirmed by the run's owner against the digest of the
    /// exact request. Allowed only when the deployment allows acting remotes.
    Acting,
}

/// A remote A2A agent entry.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.serviceOrigins) || self.serviceOrigins.all(o, isURL(o) && url(o).getHostname() != '' && (url(o).getScheme() == 'https' || (url(o).getScheme() == 'http' && url(o).getHostname() in ['localhost', '127.0.0.1', '::1'])))",
     "fieldPath": ".serviceOrigins",
     "message": "each of spec.a2a.serviceOrigins must be an https URL (plain http is allowed only to localhost, 127.0.0.1 or [::1])"}
]))]
pub struct A2aEntry {
    /// URL of the agent's well-known card (https; plain http only to loopback): its path ends
    /// in `/.well-known/agent-card.json`, e.g.
    /// `https://agent.example.com/.well-known/agent-card.json`.
    #[schemars(length(min = 1, max = 2048))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"rule": "isURL(self) && url(self).getHostname() != '' && (url(self).getScheme() == 'https' || (url(self).getScheme() == 'http' && url(self).getHostname() in ['localhost', '127.0.0.1', '::1']))",
         "message": "spec.a2a.cardUrl must be an https URL (plain http is allowed only to localhost, 127.0.0.1 or [::1])"},
        {"rule": "!isURL(self) || url(self).getEscapedPath().endsWith('/.well-known/agent-card.json')",
         "message": "spec.a2a.cardUrl must be the agent's well-known card, ending in /.well-known/agent-card.json (A2A §8.2)"}
    ]))]
    pub card_url: String,
    /// Optional pin: SHA-256 (hex) of the RFC 8785 canonical JSON of the card's trust fields.
    /// Without it the card is pinned on first use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^[0-9a-f]{64}$"))]
    #[serde(rename = "cardSHA256")]
    pub card_sha256: Option<String>,
    /// The card's skills a composition may use.
    #[schemars(length(min = 1, max = 64))]
    pub skills: Vec<String>,
    /// ReadOnly (default) or Acting.
    #[serde(default)]
    pub effect: Effect,
    /// Origins (scheme://host:port) RPC targets may use besides the card's own; each https
    /// (plain http only to loopback).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8), inner(length(min = 1, max = 2048)))]
    pub service_origins: Vec<String>,
    /// The agent is on a private network; its host must also be on the deployment's allowlist.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub private_network: bool,
    /// Bearer token sent only to this agent's origins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<BearerAuth>,
    /// Per-call limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<EndpointLimits>,
    /// Require the card to be signed (A2A §8.4) by a trusted key. Without it, a card's
    /// `signatures` are not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_signature: Option<CardSignature>,
}

/// How an agent card must be signed: at least one JWS in the card's `signatures` whose
/// protected header names (`kid`) a trusted, unexpired key, whose algorithm is ES256 (EC P-256),
/// RS256 (RSA, 2048+ bits) or EdDSA (Ed25519), and whose signature covers the card as served
/// without `signatures` (empty values dropped, RFC 8785 canonical JSON). A card without such a
/// signature, or with a signature by a trusted key over other bytes, is refused: the entry is
/// `Ready=False` and no run calls the agent. The card's pin (`cardSHA256`) binds it as well.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "has(self.jwks) || has(self.jwksConfigMapRef) || (has(self.allowJku) && self.allowJku)",
     "message": "spec.a2a.cardSignature needs trusted keys: set jwks to the agent's public key set (or jwksConfigMapRef to a ConfigMap holding it), or allowJku: true to take the key set a signature names on the card's own origin"},
    {"rule": "!(has(self.jwks) && has(self.jwksConfigMapRef))",
     "message": "spec.a2a.cardSignature sets both jwks and jwksConfigMapRef; keep one"}
]))]
pub struct CardSignature {
    /// The trusted public keys, as a JWKS document in JSON (`{"keys": [{"kty": "EC", "crv":
    /// "P-256", "kid": "…", "x": "…", "y": "…"}]}`). Each key needs a unique `kid`; private
    /// members are refused. A key's `exp` (seconds since the epoch) ends its trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 65536))]
    pub jwks: Option<String>,
    /// The trusted public keys, as a JWKS document in a key of a ConfigMap in this namespace
    /// (one key set shared by several entries, rotated in one place). The operator reads it
    /// when it checks the entry and when it starts each run; a run started after the ConfigMap
    /// changed uses the new keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_config_map_ref: Option<crate::common::ConfigMapKeyRef>,
    /// Also trust the key set a signature's `jku` names, only when it is on the card's own
    /// origin (same scheme, host and port); it is fetched through the network guard, within
    /// the card's size limit. Off by default: a key set on the agent's own origin proves only
    /// that the card came from there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_jku: bool,
}

/// Per-call limits of a remote endpoint.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointLimits {
    /// Total time for one call, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3600))]
    pub timeout_seconds: Option<u32>,
    /// Largest reply read, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024, max = 16777216))]
    pub max_reply_bytes: Option<u64>,
    /// Largest agent card read, in bytes (A2A).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024, max = 4194304))]
    pub max_card_bytes: Option<u64>,
}

/// A model provider.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum ModelProvider {
    /// OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, LiteLLM…), any base URL.
    #[serde(rename = "OpenAI")]
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini generateContent.
    Gemini,
    /// Deterministic replies and tool calls from `script`, for dry runs, demos and tests.
    Scripted,
}

/// A model endpoint entry.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "self.provider != 'Scripted' || has(self.script)",
     "fieldPath": ".script",
     "message": "a Scripted model needs spec.model.script"},
    {"rule": "self.provider == 'Scripted' || has(self.apiKey) || has(self.baseUrl)",
     "fieldPath": ".apiKey",
     "message": "a real provider needs spec.model.apiKey (a secretKeyRef), or a baseUrl for a keyless local server"}
]))]
pub struct ModelEntry {
    /// OpenAI, Anthropic, Gemini or Scripted.
    pub provider: ModelProvider,
    /// The provider's model name, e.g. `gpt-5-mini`, `claude-sonnet-4-5`, `gemini-2.5-flash`.
    #[schemars(length(min = 1, max = 253))]
    pub model: String,
    /// Base URL of the API (defaults to the provider's public endpoint): https, or plain http
    /// only to loopback (localhost, 127.0.0.1, [::1]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 2048))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"rule": "isURL(self) && url(self).getHostname() != '' && (url(self).getScheme() == 'https' || (url(self).getScheme() == 'http' && url(self).getHostname() in ['localhost', '127.0.0.1', '::1']))",
         "message": "spec.model.baseUrl must be an https URL (plain http is allowed only to localhost, 127.0.0.1 or [::1])"}
    ]))]
    pub base_url: Option<String>,
    /// The API key, as a reference to a Secret key in the same namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<ApiKeySource>,
    /// The endpoint is on a private network (e.g. vLLM in the cluster behind
    /// `https://vllm.ml.svc:8443/v1`); its host must be on the deployment's allowlist. A private
    /// endpoint still needs https unless it is loopback.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub private_network: bool,
    /// Per-call limits (timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<EndpointLimits>,
    /// For provider Scripted: the replies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<ModelScript>,
}

/// Where an API key comes from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiKeySource {
    /// The Secret key holding the API key (mounted into the runner pod; locally read from
    /// `$ORRERY_SECRETS_DIR/<name>/<key>`).
    pub secret_key_ref: SecretKeyRef,
}

/// A deterministic script for the Scripted provider. Each node's turns are used in order, one
/// per model turn of that node (a tool loop uses one turn per round); the last turn repeats.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelScript {
    /// Turns per node id.
    #[serde(default)]
    pub nodes: BTreeMap<String, Vec<ScriptedTurn>>,
    /// The turn used for a node the script does not name. Without it such a node echoes its
    /// input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<ScriptedTurn>,
}

/// One scripted model turn: tool calls, or a final reply (with a label for labelled nodes).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedTurn {
    /// Tool calls the model makes in this turn (model-facing names, e.g.
    /// `mcp_demo_tools_search_articles`); their results come back in the next turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// The reply text. `{{input}}` is replaced by the node's input, `{{tool_results}}` by the
    /// results of this node's tool calls so far, and `{{tool_results.<field>}}` by that field of
    /// each result that is a JSON object (e.g. `{{tool_results.reply}}` for an A2A reply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// The label for a labelled node or a router.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Tokens this turn reports as used (input, output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ScriptedUsage>,
    /// Milliseconds the turn takes, to make runs watchable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 600000))]
    pub delay_ms: Option<u64>,
}

/// A scripted tool call.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// The model-facing tool name.
    pub name: String,
    /// The call's arguments (a JSON object). String values may use `{{input}}` and
    /// `{{tool_results}}` like `reply`.
    #[serde(default)]
    #[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
    pub arguments: serde_json::Value,
}

/// Token usage a scripted turn reports.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedUsage {
    /// Input (prompt) tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output (completion) tokens.
    #[serde(default)]
    pub output_tokens: u64,
}

/// Observed state of a RegistryEntry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryEntryStatus {
    /// The generation the status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Mcp, A2a or Model (for `kubectl get`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<EntryKind>,
    /// `Ready` (reachable and usable) and `Pinned` (card or tools pinned and unchanged).
    #[serde(default)]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The pinned card digest (A2A).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "cardSHA256")]
    pub card_sha256: Option<String>,
    /// The pinned card's skills (A2A).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// The pinned tools (MCP).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<PinnedTool>,
    /// Addresses the endpoint's host resolved to when last checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved_addresses: Vec<String>,
    /// The last error reaching or pinning the endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The generation the last probe result is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probed_generation: Option<i64>,
    /// When the last probe result was recorded (RFC 3339); the next probe is due an interval
    /// later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<String>,
    /// Pins the last probe found that differ from the pinned ones (`Ready=False`, reason
    /// `PinChanged`): annotating the entry with `studio.orrery.dev/accept-pins` set to their
    /// `digest` adopts exactly these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_pins: Option<ProposedPins>,
    /// The value of the `studio.orrery.dev/reprobe` annotation last acted on. Setting that
    /// annotation to a new value (e.g. `kubectl annotate registryentry NAME
    /// studio.orrery.dev/reprobe="$(date +%s)" --overwrite`) probes the entry now instead of at
    /// the next interval; a probe already running finishes first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reprobe: Option<String>,
}

/// Pins a probe found that differ from the pinned ones, waiting for a person to accept them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProposedPins {
    /// What to name in the `studio.orrery.dev/accept-pins` annotation to accept them.
    pub digest: String,
    /// The card digest found (A2A).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "cardSHA256")]
    pub card_sha256: Option<String>,
    /// The card's skills found (A2A).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// The tools found (MCP).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<PinnedTool>,
}

/// One pinned MCP tool.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PinnedTool {
    /// The tool's name on the server.
    pub name: String,
    /// SHA-256 of the tool's description.
    pub description_sha256: String,
    /// SHA-256 of the canonical JSON of the tool's input schema.
    pub schema_sha256: String,
    /// SHA-256 of the canonical JSON of the tool's annotations.
    #[serde(default)]
    pub annotations_sha256: String,
    /// The server's `readOnlyHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_constructor_makes_an_entry_of_exactly_its_kind() {
        let mcp = RegistryEntry::from_mcp(
            "tools",
            McpEntry::new(
                "https://t.example/mcp",
                McpTransport::Sse,
                &["a", "b"],
                &["a"],
            ),
        );
        assert_eq!(mcp.spec.kind(), Some(EntryKind::Mcp));
        assert_eq!(mcp.metadata.name.as_deref(), Some("tools"));
        let a2a = RegistryEntry::from_a2a("w", A2aEntry::new("https://w.example/card", &["draft"]));
        assert_eq!(a2a.spec.kind(), Some(EntryKind::A2a));
        assert_eq!(a2a.spec.a2a.map(|a| a.effect), Some(Effect::ReadOnly));
        let model =
            RegistryEntry::from_model("m", ModelEntry::scripted("s", ModelScript::default()));
        assert_eq!(model.spec.kind(), Some(EntryKind::Model));
        assert!(matches!(
            model.spec.model,
            Some(ModelEntry {
                provider: ModelProvider::Scripted,
                script: Some(_),
                api_key: None,
                base_url: None,
                private_network: false,
                ..
            })
        ));
    }
}
