//! Method names and request/response parameters of the A2A 1.0 JSON-RPC binding (spec §9).

use serde::{Deserialize, Serialize};
use std::fmt;

use super::{Message, Metadata, Task, TaskState};

/// The JSON-RPC method names of A2A 1.0 (the v0.3 names such as `message/send` are gone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum A2aMethod {
    /// `SendMessage`: params [`SendMessageRequest`], result [`super::SendMessageResponse`].
    SendMessage,
    /// `SendStreamingMessage`: params [`SendMessageRequest`], an SSE stream of
    /// [`super::StreamResponse`].
    SendStreamingMessage,
    /// `GetTask`: params [`GetTaskRequest`], result [`Task`].
    GetTask,
    /// `ListTasks`: params [`ListTasksRequest`], result [`ListTasksResponse`].
    ListTasks,
    /// `CancelTask`: params [`CancelTaskRequest`], result [`Task`].
    CancelTask,
    /// `SubscribeToTask`: params [`SubscribeToTaskRequest`], an SSE stream.
    SubscribeToTask,
    /// `CreateTaskPushNotificationConfig`.
    CreateTaskPushNotificationConfig,
    /// `GetTaskPushNotificationConfig`.
    GetTaskPushNotificationConfig,
    /// `ListTaskPushNotificationConfigs`.
    ListTaskPushNotificationConfigs,
    /// `DeleteTaskPushNotificationConfig`.
    DeleteTaskPushNotificationConfig,
    /// `GetExtendedAgentCard`: result [`super::AgentCard`].
    GetExtendedAgentCard,
}

impl A2aMethod {
    /// Every method, in the spec's order.
    pub const ALL: [A2aMethod; 11] = [
        A2aMethod::SendMessage,
        A2aMethod::SendStreamingMessage,
        A2aMethod::GetTask,
        A2aMethod::ListTasks,
        A2aMethod::CancelTask,
        A2aMethod::SubscribeToTask,
        A2aMethod::CreateTaskPushNotificationConfig,
        A2aMethod::GetTaskPushNotificationConfig,
        A2aMethod::ListTaskPushNotificationConfigs,
        A2aMethod::DeleteTaskPushNotificationConfig,
        A2aMethod::GetExtendedAgentCard,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            A2aMethod::SendMessage => "SendMessage",
            A2aMethod::SendStreamingMessage => "SendStreamingMessage",
            A2aMethod::GetTask => "GetTask",
            A2aMethod::ListTasks => "ListTasks",
            A2aMethod::CancelTask => "CancelTask",
            A2aMethod::SubscribeToTask => "SubscribeToTask",
            A2aMethod::CreateTaskPushNotificationConfig => "CreateTaskPushNotificationConfig",
            A2aMethod::GetTaskPushNotificationConfig => "GetTaskPushNotificationConfig",
            A2aMethod::ListTaskPushNotificationConfigs => "ListTaskPushNotificationConfigs",
            A2aMethod::DeleteTaskPushNotificationConfig => "DeleteTaskPushNotificationConfig",
            A2aMethod::GetExtendedAgentCard => "GetExtendedAgentCard",
        }
    }

    /// The method with this exact wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// Whether the method answers with an SSE stream.
    pub fn is_streaming(self) -> bool {
        matches!(
            self,
            A2aMethod::SendStreamingMessage | A2aMethod::SubscribeToTask
        )
    }
}

impl fmt::Display for A2aMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Params of `SendMessage` and `SendStreamingMessage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// Tenant from the chosen interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The message (required).
    pub message: Message,
    /// Options for this send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Request metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// Options of a send. There is no `blocking` in 1.0: blocking is the default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Media types the client accepts in reply parts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    /// Where to push task updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// At most this many recent history messages in the returned task (0: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Return as soon as the task exists instead of waiting for a terminal or interrupted state.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub return_immediately: bool,
}

/// A push notification target for a task.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Config id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Where notifications are POSTed.
    #[serde(default)]
    pub url: String,
    /// A token echoed in notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// How the agent authenticates to the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// Credentials for push notifications.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// HTTP auth scheme, e.g. `Bearer`.
    #[serde(default)]
    pub scheme: String,
    /// The credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// Params of `GetTask`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task id (required).
    pub id: String,
    /// At most this many recent history messages (0: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
}

/// Params of `ListTasks`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Only tasks of this context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Only tasks in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// Page size (default 50, 1..=100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    /// Token from the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    /// At most this many history messages per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Only tasks whose status timestamp is at or after this RFC 3339 time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<String>,
    /// Include artifacts (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
}

/// Result of `ListTasks`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// The page of tasks.
    #[serde(default)]
    pub tasks: Vec<Task>,
    /// Token of the next page; empty on the last page.
    #[serde(default)]
    pub next_page_token: String,
    /// The page size used.
    #[serde(default)]
    pub page_size: i32,
    /// Matching tasks before paging.
    #[serde(default)]
    pub total_size: i32,
}

/// Params of `CancelTask`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task id (required).
    pub id: String,
    /// Request metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// Params of `SubscribeToTask`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task id (required).
    pub id: String,
}
