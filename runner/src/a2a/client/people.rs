//! The people a remote call may involve (rules 4.27–4.50): the run's owner confirms each call
//! of an acting remote against the exact request, and a remote's question goes to a person,
//! never the model.

use super::limits::{MAX_INPUT_ROUNDS, MAX_REQUEST_CHARS};
use super::reply::question;
use crate::a2a::types::Task;
use crate::approval::{AskError, Settled};
use crate::tools::{ToolContext, ToolError, ToolOutput};
use orrery_crds::budget::BudgetKey;
use orrery_crds::run::ApprovalKind;

/// Asks the owner to confirm a call to acting remote `entry` (rules 4.44–4.49). `Some(output)`:
/// blocked, nothing is sent.
pub(super) async fn confirm(
    entry: &str,
    skill: &str,
    request: &str,
    ctx: &ToolContext,
) -> Result<Option<ToolOutput>, ToolError> {
    let prompt = format!(
        "Remote agent '{entry}' (skill '{skill}') changes things. Confirm this exact request before it is sent; refuse it and nothing is sent."
    );
    let why = match ctx
        .people
        .ask(
            ApprovalKind::Action,
            &ctx.node_id,
            &prompt,
            request,
            &ctx.cancel,
        )
        .await
    {
        Ok(Settled::Approved { .. }) => {
            // Rule 4.49: the run is checked again once the owner decides. A run cancelled or
            // ended by a failing node (its token fires) sends nothing, nor does a spent budget.
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            if let Some(hit) = ctx.ledger.first_hit() {
                return Err(ToolError::BudgetExhausted {
                    budget: hit.budget.as_str().to_owned(),
                });
            }
            return Ok(None);
        }
        Ok(Settled::Cancelled) => return Err(ToolError::Cancelled),
        Ok(Settled::Rejected { .. }) => "the owner refused it".to_owned(),
        Ok(Settled::Expired) => "nobody confirmed it in time".to_owned(),
        Err(AskError::LimitReached(n)) => {
            format!("the run already asked for {n} approvals, the most a run may ask for")
        }
    };
    let message = format!(
        "BLOCKED: the call to acting remote agent '{entry}' (skill '{skill}') was not confirmed ({why}); nothing was sent. Do not retry it."
    );
    Ok(Some(ToolOutput {
        content: message,
        is_error: true,
    }))
}

/// Why a remote's question got no answer to send: the call ends `input_required`, saying so.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unanswered {
    /// More questions than one call may ask.
    #[error("the remote asked more than {max} questions in one call")]
    TooManyQuestions {
        /// The limit.
        max: u32,
    },
    /// The question is empty.
    #[error("the remote asked for input with an empty question")]
    EmptyQuestion,
    /// The person declined.
    #[error("the person asked declined to answer")]
    Declined,
    /// Nobody answered before the request expired.
    #[error("nobody answered in time")]
    Expired,
    /// The run asked for all the approvals it may.
    #[error("the run already asked for {max} approvals, the most a run may ask for")]
    ApprovalLimit {
        /// The limit.
        max: u32,
    },
    /// The answer is empty.
    #[error("the person gave no answer")]
    EmptyAnswer,
    /// The answer is too long.
    #[error("the answer is over the {max} characters a remote agent takes")]
    AnswerTooLong {
        /// The limit.
        max: usize,
    },
}

/// Takes a remote's question to a person (rules 4.27–4.36). `Ok(Ok(answer))` to send on
/// the same task; `Ok(Err(why))` ends the call `input_required`; `Err` ends the call (a
/// budget spent, the run cancelled).
pub(super) async fn ask_person(
    entry: &str,
    skill: &str,
    task: &Task,
    answered: u32,
    ctx: &ToolContext,
) -> Result<Result<String, Unanswered>, ToolError> {
    if answered >= MAX_INPUT_ROUNDS {
        return Ok(Err(Unanswered::TooManyQuestions {
            max: MAX_INPUT_ROUNDS,
        }));
    }
    let question = question(task);
    if question.trim().is_empty() {
        return Ok(Err(Unanswered::EmptyQuestion));
    }
    if ctx.ledger.used(BudgetKey::RemoteCalls) >= ctx.ledger.limit(BudgetKey::RemoteCalls) {
        let budget = ctx
            .ledger
            .reserve(BudgetKey::RemoteCalls)
            .err()
            .map_or(BudgetKey::RemoteCalls, |h| h.budget);
        return Err(ToolError::BudgetExhausted {
            budget: budget.as_str().to_owned(),
        });
    }
    let prompt = format!(
        "Remote agent '{entry}' (skill '{skill}') asks a question before it can answer. It was written by an external agent: never answer with secrets. Your answer is sent to it on the same task."
    );
    let answer = match ctx
        .people
        .ask(
            ApprovalKind::Input,
            &ctx.node_id,
            &prompt,
            &question,
            &ctx.cancel,
        )
        .await
    {
        Ok(Settled::Approved { answer }) => answer.unwrap_or_default(),
        Ok(Settled::Cancelled) => return Err(ToolError::Cancelled),
        Ok(Settled::Rejected { .. }) => return Ok(Err(Unanswered::Declined)),
        Ok(Settled::Expired) => return Ok(Err(Unanswered::Expired)),
        Err(AskError::LimitReached(max)) => return Ok(Err(Unanswered::ApprovalLimit { max })),
    };
    if answer.trim().is_empty() {
        return Ok(Err(Unanswered::EmptyAnswer));
    }
    if answer.chars().count() > MAX_REQUEST_CHARS {
        return Ok(Err(Unanswered::AnswerTooLong {
            max: MAX_REQUEST_CHARS,
        }));
    }
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    if let Err(hit) = ctx.ledger.reserve(BudgetKey::RemoteCalls) {
        return Err(ToolError::BudgetExhausted {
            budget: hit.budget.as_str().to_owned(),
        });
    }
    Ok(Ok(answer))
}
