//! What an agent implements to be served by [`super::A2aServer`].

use async_trait::async_trait;

use crate::a2a::types::{AgentCard, Artifact, Message, Metadata, Part, TaskState};

/// One message for the agent to act on, with the task it belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentRequest {
    /// The task (new, or an interrupted one being continued).
    pub task_id: String,
    /// The task's context.
    pub context_id: String,
    /// The new message from the client (its `taskId`/`contextId` filled in).
    pub message: Message,
    /// The task's earlier messages, oldest first (empty for a new task).
    pub history: Vec<Message>,
    /// Media types the client accepts (empty: any).
    pub accepted_output_modes: Vec<String>,
    /// The request's metadata.
    pub metadata: Option<Metadata>,
}

/// How the agent answers: the state the task ends (or pauses) in, a status message and
/// artifacts.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentReply {
    /// A terminal (completed, failed, canceled, rejected) or interrupted (input or auth
    /// required) state.
    pub state: TaskState,
    /// Parts of the status message (empty: no message).
    pub status_parts: Vec<Part>,
    /// Outputs; an empty `artifactId` is filled in by the server.
    pub artifacts: Vec<Artifact>,
}

impl AgentReply {
    /// Completed, with one named artifact.
    pub fn completed(artifact_name: impl Into<String>, parts: Vec<Part>) -> Self {
        AgentReply {
            state: TaskState::Completed,
            status_parts: Vec::new(),
            artifacts: vec![Artifact {
                name: Some(artifact_name.into()),
                parts,
                ..Artifact::default()
            }],
        }
    }

    /// The agent declines the task, saying why.
    pub fn rejected(reason: impl Into<String>) -> Self {
        AgentReply {
            state: TaskState::Rejected,
            status_parts: vec![Part::text(reason)],
            artifacts: Vec::new(),
        }
    }

    /// The task failed, saying why.
    pub fn failed(reason: impl Into<String>) -> Self {
        AgentReply {
            state: TaskState::Failed,
            status_parts: vec![Part::text(reason)],
            artifacts: Vec::new(),
        }
    }

    /// The agent asks the client a question; the task waits for the answer.
    pub fn input_required(question: impl Into<String>) -> Self {
        AgentReply {
            state: TaskState::InputRequired,
            status_parts: vec![Part::text(question)],
            artifacts: Vec::new(),
        }
    }
}

/// An agent served over A2A 1.0.
#[async_trait]
pub trait AgentHandler: Send + Sync + 'static {
    /// The card served at `/.well-known/agent-card.json`; its output modes are what
    /// `acceptedOutputModes` is checked against.
    fn card(&self) -> &AgentCard;

    /// Act on one message. Failures are replies too ([`AgentReply::failed`]).
    async fn handle(&self, request: AgentRequest) -> AgentReply;
}
