//! A2A 1.0 wire types, as the official SDKs (PyPI `a2a-sdk` 1.3, npm `@a2a-js/sdk` 1.3) speak
//! them: the proto package `lf.a2a.v1` in ProtoJSON (camelCase fields, SCREAMING_SNAKE enums,
//! oneofs as a single key), the shapes of the A2A specification's `a2a.proto` (A2A 1.0, the
//! JSON-RPC binding: `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, the agent card
//! at `/.well-known/agent-card.json`).

mod card;
mod jsonrpc;
mod requests;
mod task;
#[cfg(test)]
mod tests;

pub use card::{
    AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension, AgentInterface,
    AgentProvider, AgentSkill, ApiKeySecurityScheme, HttpAuthSecurityScheme,
    MutualTlsSecurityScheme, OAuth2SecurityScheme, OAuthFlow, OAuthFlows,
    OpenIdConnectSecurityScheme, SecurityRequirement, SecurityScheme, StringList,
};
pub use jsonrpc::{
    A2aErrorCode, BAD_REQUEST_TYPE, ERROR_DOMAIN, ERROR_INFO_TYPE, JSONRPC_VERSION, JsonRpcError,
    JsonRpcRequest, JsonRpcResponse, RequestId,
};
pub use requests::{
    A2aMethod, AuthenticationInfo, CancelTaskRequest, GetTaskRequest, ListTasksRequest,
    ListTasksResponse, SendMessageConfiguration, SendMessageRequest, SubscribeToTaskRequest,
    TaskPushNotificationConfig,
};
pub use task::{
    Artifact, Message, Part, PartContent, Role, SendMessageResponse, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

/// A ProtoJSON `google.protobuf.Struct`: a JSON object.
pub type Metadata = serde_json::Map<String, serde_json::Value>;

/// The protocol version this code speaks.
pub const PROTOCOL_VERSION: &str = "1.0";
/// The version a request without an `A2A-Version` header is read as (spec §3.6.2).
pub const IMPLIED_LEGACY_VERSION: &str = "0.3";
/// The header carrying the protocol version; send it on every request.
pub const VERSION_HEADER: &str = "A2A-Version";
/// The header carrying comma-separated extension URIs.
pub const EXTENSIONS_HEADER: &str = "A2A-Extensions";
/// Where the agent card is served.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
/// Content type of the HTTP+JSON binding.
pub const A2A_CONTENT_TYPE: &str = "application/a2a+json";
/// The JSON-RPC binding's `protocolBinding` value.
pub const BINDING_JSONRPC: &str = "JSONRPC";
/// The REST binding's `protocolBinding` value.
pub const BINDING_HTTP_JSON: &str = "HTTP+JSON";
/// The gRPC binding's `protocolBinding` value.
pub const BINDING_GRPC: &str = "GRPC";

/// Whether a protocol version string (`1.0`, `1.1`, `1`) is one this code serves: the major
/// version must be 1, as the official SDKs compare it.
pub fn version_is_supported(version: &str) -> bool {
    let major = version.trim().split('.').next().unwrap_or_default();
    major == "1"
}
