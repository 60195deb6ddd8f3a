//! JSON-RPC 2.0 envelopes and the A2A 1.0 error codes (spec §5.4, §9.5). Error `data` is an
//! array of `google.rpc` details: an `ErrorInfo` with the A2A reason, plus `BadRequest` field
//! violations for validation errors, as the official SDKs send them.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::PROTOCOL_VERSION;

/// The only accepted `jsonrpc` value.
pub const JSONRPC_VERSION: &str = "2.0";
/// `@type` of the `ErrorInfo` detail.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
/// `@type` of the `BadRequest` detail.
pub const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";
/// `domain` of A2A `ErrorInfo` details.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// A request id: a string or an integer (booleans, floats and objects are invalid).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

/// A JSON-RPC request with its params left as JSON (or typed, for a client).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest<P = Value> {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The id (null or absent ids are answered with a null id).
    #[serde(default)]
    pub id: Option<RequestId>,
    /// The method name.
    pub method: String,
    /// The params (a missing `Option` field reads as `None`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<P> JsonRpcRequest<P> {
    /// A request with these params.
    pub fn new(id: RequestId, method: super::A2aMethod, params: P) -> Self {
        JsonRpcRequest {
            jsonrpc: JSONRPC_VERSION.to_owned(),
            id: Some(id),
            method: method.as_str().to_owned(),
            params: Some(params),
        }
    }
}

/// A JSON-RPC response: exactly one of `result` and `error`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResponse<R = Value> {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The request's id (null when it could not be read).
    #[serde(default)]
    pub id: Option<RequestId>,
    /// The result on success (a missing `Option` field reads as `None`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<R>,
    /// The error on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<JsonRpcError>,
}

impl<R> JsonRpcResponse<R> {
    /// A successful response.
    pub fn success(id: Option<RequestId>, result: R) -> Self {
        JsonRpcResponse {
            jsonrpc: JSONRPC_VERSION.to_owned(),
            id,
            result: Some(result),
            error: None,
        }
    }

    /// An error response.
    pub fn failure(id: Option<RequestId>, error: JsonRpcError) -> Self {
        JsonRpcResponse {
            jsonrpc: JSONRPC_VERSION.to_owned(),
            id,
            result: None,
            error: Some(error),
        }
    }

    /// The result, or the error (also when the response carries neither or both).
    pub fn into_result(self) -> Result<R, JsonRpcError> {
        match (self.result, self.error) {
            (Some(result), None) => Ok(result),
            (None, Some(error)) => Err(error),
            (Some(_), Some(_)) => Err(JsonRpcError::new(
                A2aErrorCode::InvalidAgentResponse,
                "the response carries both a result and an error",
            )),
            (None, None) => Err(JsonRpcError::new(
                A2aErrorCode::InvalidAgentResponse,
                "the response carries neither a result nor an error",
            )),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("A2A error {code}: {message}")]
pub struct JsonRpcError {
    /// The code (see [`A2aErrorCode`]).
    pub code: i64,
    /// A message for people.
    pub message: String,
    /// `google.rpc` details (an array).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl JsonRpcError {
    /// An error with the code's `ErrorInfo` detail.
    pub fn new(code: A2aErrorCode, message: impl Into<String>) -> Self {
        let data = code.reason().map(|reason| {
            json!([{
                "@type": ERROR_INFO_TYPE,
                "reason": reason,
                "domain": ERROR_DOMAIN,
                "metadata": {},
            }])
        });
        JsonRpcError {
            code: code.code(),
            message: message.into(),
            data,
        }
    }

    /// The 1.0 answer to a request whose `A2A-Version` is not served (missing means `0.3`).
    pub fn version_not_supported(requested: &str) -> Self {
        Self::new(
            A2aErrorCode::VersionNotSupported,
            format!(
                "A2A version '{requested}' is not supported by this handler. \
                 Expected version '{PROTOCOL_VERSION}'."
            ),
        )
    }

    /// Adds a `google.rpc.BadRequest` field violation to the details.
    pub fn with_field_violation(
        mut self,
        field: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        let violation = json!({"field": field.into(), "description": description.into()});
        let mut details = match self.data.take() {
            Some(Value::Array(items)) => items,
            Some(other) => vec![other],
            None => Vec::new(),
        };
        let existing = details.iter_mut().find(|d| d["@type"] == BAD_REQUEST_TYPE);
        match existing.and_then(|d| d["fieldViolations"].as_array_mut()) {
            Some(list) => list.push(violation),
            None => {
                details.push(json!({"@type": BAD_REQUEST_TYPE, "fieldViolations": [violation]}))
            }
        }
        self.data = Some(Value::Array(details));
        self
    }

    /// The known A2A code, if it is one.
    pub fn a2a_code(&self) -> Option<A2aErrorCode> {
        A2aErrorCode::from_code(self.code)
    }

    /// The `reason` of the first `ErrorInfo` detail.
    pub fn reason(&self) -> Option<&str> {
        self.data
            .as_ref()?
            .as_array()?
            .iter()
            .find(|d| d["@type"] == ERROR_INFO_TYPE)?
            .get("reason")?
            .as_str()
    }
}

/// The error codes of A2A 1.0's JSON-RPC binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum A2aErrorCode {
    /// -32700: the body is not JSON.
    ParseError,
    /// -32600: not a valid JSON-RPC request.
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32602: bad params.
    InvalidParams,
    /// -32603: the server failed.
    InternalError,
    /// -32001: no such task.
    TaskNotFound,
    /// -32002: the task cannot be cancelled.
    TaskNotCancelable,
    /// -32003: push notifications are not served.
    PushNotificationNotSupported,
    /// -32004: the operation is not supported.
    UnsupportedOperation,
    /// -32005: no acceptable media type.
    ContentTypeNotSupported,
    /// -32006: the agent's answer was invalid.
    InvalidAgentResponse,
    /// -32007: no extended card is configured.
    ExtendedAgentCardNotConfigured,
    /// -32008: a required extension is missing.
    ExtensionSupportRequired,
    /// -32009: the `A2A-Version` is not served.
    VersionNotSupported,
}

impl A2aErrorCode {
    const ALL: [A2aErrorCode; 14] = [
        A2aErrorCode::ParseError,
        A2aErrorCode::InvalidRequest,
        A2aErrorCode::MethodNotFound,
        A2aErrorCode::InvalidParams,
        A2aErrorCode::InternalError,
        A2aErrorCode::TaskNotFound,
        A2aErrorCode::TaskNotCancelable,
        A2aErrorCode::PushNotificationNotSupported,
        A2aErrorCode::UnsupportedOperation,
        A2aErrorCode::ContentTypeNotSupported,
        A2aErrorCode::InvalidAgentResponse,
        A2aErrorCode::ExtendedAgentCardNotConfigured,
        A2aErrorCode::ExtensionSupportRequired,
        A2aErrorCode::VersionNotSupported,
    ];

    /// The numeric code.
    pub fn code(self) -> i64 {
        match self {
            A2aErrorCode::ParseError => -32700,
            A2aErrorCode::InvalidRequest => -32600,
            A2aErrorCode::MethodNotFound => -32601,
            A2aErrorCode::InvalidParams => -32602,
            A2aErrorCode::InternalError => -32603,
            A2aErrorCode::TaskNotFound => -32001,
            A2aErrorCode::TaskNotCancelable => -32002,
            A2aErrorCode::PushNotificationNotSupported => -32003,
            A2aErrorCode::UnsupportedOperation => -32004,
            A2aErrorCode::ContentTypeNotSupported => -32005,
            A2aErrorCode::InvalidAgentResponse => -32006,
            A2aErrorCode::ExtendedAgentCardNotConfigured => -32007,
            A2aErrorCode::ExtensionSupportRequired => -32008,
            A2aErrorCode::VersionNotSupported => -32009,
        }
    }

    /// The code for this number, if it is an A2A one.
    pub fn from_code(code: i64) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.code() == code)
    }

    /// The `ErrorInfo` reason (none for parse errors).
    pub fn reason(self) -> Option<&'static str> {
        Some(match self {
            A2aErrorCode::ParseError => return None,
            A2aErrorCode::InvalidRequest => "INVALID_REQUEST",
            A2aErrorCode::MethodNotFound => "METHOD_NOT_FOUND",
            A2aErrorCode::InvalidParams => "INVALID_PARAMS",
            A2aErrorCode::InternalError => "INTERNAL_ERROR",
            A2aErrorCode::TaskNotFound => "TASK_NOT_FOUND",
            A2aErrorCode::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            A2aErrorCode::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            A2aErrorCode::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            A2aErrorCode::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            A2aErrorCode::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            A2aErrorCode::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            A2aErrorCode::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            A2aErrorCode::VersionNotSupported => "VERSION_NOT_SUPPORTED",
        })
    }
}
