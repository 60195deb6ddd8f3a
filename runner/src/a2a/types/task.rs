//! Messages, parts, tasks and stream events of A2A 1.0 (ProtoJSON: camelCase fields,
//! SCREAMING_SNAKE enum values, oneofs as a single key with no `kind` discriminator).

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::Metadata;

/// Who wrote a message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    /// Not set (invalid in a request).
    #[default]
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// From the client.
    #[serde(rename = "ROLE_USER")]
    User,
    /// From the agent.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// The content of a [`Part`]: exactly one of these.
#[derive(Clone, Debug, PartialEq)]
pub enum PartContent {
    /// Text.
    Text(String),
    /// File bytes, base64-encoded as ProtoJSON writes `bytes`.
    Raw(String),
    /// A URL pointing at the content.
    Url(String),
    /// Any JSON value.
    Data(Value),
}

impl PartContent {
    fn key(&self) -> &'static str {
        match self {
            PartContent::Text(_) => "text",
            PartContent::Raw(_) => "raw",
            PartContent::Url(_) => "url",
            PartContent::Data(_) => "data",
        }
    }
}

/// One piece of a message or artifact (`lf.a2a.v1.Part`). In 1.0 files are `raw` bytes or a
/// `url`; there is no `kind` field and no `file` wrapper.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// The content.
    pub content: PartContent,
    /// Media type of the content, e.g. `text/plain`.
    pub media_type: Option<String>,
    /// File name, for file content.
    pub filename: Option<String>,
    /// Part metadata.
    pub metadata: Option<Metadata>,
}

impl Part {
    /// A text part without a media type.
    pub fn text(text: impl Into<String>) -> Self {
        Part {
            content: PartContent::Text(text.into()),
            media_type: None,
            filename: None,
            metadata: None,
        }
    }

    /// A structured data part.
    pub fn data(value: Value) -> Self {
        Part {
            content: PartContent::Data(value),
            media_type: None,
            filename: None,
            metadata: None,
        }
    }

    /// The same part with a media type.
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = Some(media_type.into());
        self
    }

    /// The text, if this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }

    /// `text`, `raw`, `url` or `data`.
    pub fn kind(&self) -> &'static str {
        self.content.key()
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match &self.content {
            PartContent::Text(s) | PartContent::Raw(s) | PartContent::Url(s) => {
                map.serialize_entry(self.content.key(), s)?
            }
            PartContent::Data(v) => map.serialize_entry("data", v)?,
        }
        if let Some(m) = &self.media_type {
            map.serialize_entry("mediaType", m)?;
        }
        if let Some(f) = &self.filename {
            map.serialize_entry("filename", f)?;
        }
        if let Some(m) = &self.metadata {
            map.serialize_entry("metadata", m)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = Metadata::deserialize(deserializer)?;
        let mut found = Vec::new();
        for key in ["text", "raw", "url", "data"] {
            if let Some(value) = map.remove(key) {
                found.push((key, value));
            }
        }
        let (key, value) = match found.len() {
            1 => found.remove(0),
            n => {
                return Err(D::Error::custom(format!(
                    "a part must have exactly one of text, raw, url or data (found {n})"
                )));
            }
        };
        let string = |value: Value| match value {
            Value::String(s) => Ok(s),
            other => Err(D::Error::custom(format!(
                "part field `{key}` must be a string, not {other}"
            ))),
        };
        let content = match key {
            "text" => PartContent::Text(string(value)?),
            "raw" => PartContent::Raw(string(value)?),
            "url" => PartContent::Url(string(value)?),
            _ => PartContent::Data(value),
        };
        let opt_string = |map: &mut Metadata, key: &str| -> Result<Option<String>, D::Error> {
            match map.remove(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(other) => Err(D::Error::custom(format!(
                    "part field `{key}` must be a string, not {other}"
                ))),
            }
        };
        let media_type = opt_string(&mut map, "mediaType")?;
        let filename = opt_string(&mut map, "filename")?;
        let metadata = match map.remove("metadata") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err(D::Error::custom("part field `metadata` must be an object")),
        };
        Ok(Part {
            content,
            media_type,
            filename,
            metadata,
        })
    }
}

/// One unit of communication (`lf.a2a.v1.Message`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Id chosen by the message's author (required).
    #[serde(default)]
    pub message_id: String,
    /// The conversation this belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task this continues or belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The author (required).
    #[serde(default)]
    pub role: Role,
    /// The content (required, non-empty).
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Message metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Extension URIs used by this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Other tasks this message refers to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message with one text part.
    pub fn text(role: Role, message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Message {
            message_id: message_id.into(),
            role,
            parts: vec![Part::text(text)],
            ..Message::default()
        }
    }

    /// The text parts joined by newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self.parts.iter().filter_map(Part::as_text).collect();
        texts.join("\n")
    }
}

/// A task's lifecycle state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskState {
    /// Unknown.
    #[default]
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    /// Accepted, not started.
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    /// In progress.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// Finished successfully (terminal).
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// Finished with an error (terminal).
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// Cancelled (terminal).
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// Waiting for the user's answer (interrupted).
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    /// The agent declined the task (terminal).
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    /// Waiting for authentication (interrupted).
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl TaskState {
    /// The wire name, e.g. `TASK_STATE_COMPLETED`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Unspecified => "TASK_STATE_UNSPECIFIED",
            TaskState::Submitted => "TASK_STATE_SUBMITTED",
            TaskState::Working => "TASK_STATE_WORKING",
            TaskState::Completed => "TASK_STATE_COMPLETED",
            TaskState::Failed => "TASK_STATE_FAILED",
            TaskState::Canceled => "TASK_STATE_CANCELED",
            TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            TaskState::Rejected => "TASK_STATE_REJECTED",
            TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        }
    }

    /// Completed, failed, canceled or rejected: nothing more will happen.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Input or authentication required: the task waits for the client.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }
}

/// A task's state with an optional message and an RFC 3339 timestamp.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    #[serde(default)]
    pub state: TaskState,
    /// A message about the state (e.g. the question when input is required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the status was recorded (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// An output of a task.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task (required).
    #[serde(default)]
    pub artifact_id: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content (at least one part).
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Artifact metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Extension URIs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// The unit of work (`lf.a2a.v1.Task`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Server-chosen id.
    #[serde(default)]
    pub id: String,
    /// The conversation it belongs to.
    #[serde(default)]
    pub context_id: String,
    /// Current status.
    #[serde(default)]
    pub status: TaskStatus,
    /// Outputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Messages exchanged so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Task metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// A task's status changed (stream event).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    #[serde(default)]
    pub task_id: String,
    /// Its context.
    #[serde(default)]
    pub context_id: String,
    /// The new status.
    #[serde(default)]
    pub status: TaskStatus,
    /// Event metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// An artifact was produced or extended (stream event).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    #[serde(default)]
    pub task_id: String,
    /// Its context.
    #[serde(default)]
    pub context_id: String,
    /// The artifact (or the chunk of it).
    #[serde(default)]
    pub artifact: Artifact,
    /// Append to the artifact with the same id sent before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    /// This is the artifact's last chunk.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub last_chunk: bool,
    /// Event metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// One event of `SendStreamingMessage` / `SubscribeToTask` (a oneof: exactly one key).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// The task as it stands.
    Task(Task),
    /// A direct reply with no task.
    Message(Message),
    /// A status change.
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// The result of `SendMessage` (a oneof: `{"task": …}` or `{"message": …}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// The task the message created or continued.
    Task(Task),
    /// A direct reply with no task.
    Message(Message),
}
