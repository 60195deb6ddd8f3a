//! The approvals a run asked for: the exact text a person reviews (held here, never in etcd),
//! its digest and expiry, and how it was settled. Keyed `(run UID, approval id)`; asking again
//! with the same id and digest is a no-op (a runner's retry), another digest is refused.
//! Refused decisions (a digest that did not match) are kept per decision index, so a person
//! waiting on their decision through the API learns it was refused. Decisions made through the
//! API are kept by their digest, so the relay can tell them from decisions written by hand
//! (attack 46). The statements are
//! compiled for both backends by [`approval_ops!`], like the events'.

use super::StoreError;

use orrery_crds::approval::{ApprovalKind, ApprovalRequest, ApprovalState, DecisionKind};

/// An approval as stored: the request as the run asked it, and how it was settled. The store
/// keeps the kind and the outcome as their names ([`ApprovalKind::as_str`],
/// [`DecisionKind::as_str`]); a row naming neither is refused ([`StoreError::Row`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredApproval {
    /// The run's UID.
    pub run_uid: String,
    /// The request (its text empty once settled: the text is held only while the approval is
    /// open, rule 4.21).
    pub request: ApprovalRequest,
    /// How it was settled, once it was.
    pub settled: Option<DecisionKind>,
    /// The index in `status.decisions` of the decision taken, if one was.
    pub settled_index: Option<u64>,
}

impl StoredApproval {
    /// Whether it still waits for a person.
    pub fn is_pending(&self) -> bool {
        self.settled.is_none()
    }

    /// Where it stands.
    pub fn state(&self) -> ApprovalState {
        ApprovalState::from(self.settled)
    }
}

/// What storing an asked approval did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Put {
    /// Stored now.
    Created,
    /// Already stored with the same digest (a retry).
    Same,
    /// Already stored with another digest: refused.
    Conflict,
}

/// The columns read back, in order.
pub(crate) const COLUMNS: &str = "run_uid, approval_id, kind, node, prompt, text, digest, size, \
     complete, expires_at, settled, settled_index";

/// One row of [`COLUMNS`].
pub(crate) type Row = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    i64,
    i64,
    String,
    Option<String>,
    Option<i64>,
);

/// A row as a [`StoredApproval`]: its kind and outcome mapped through the typed enums.
pub(crate) fn from_row(row: Row) -> Result<StoredApproval, StoreError> {
    let (run_uid, id, kind, node, prompt, text, digest, size, complete, expires_at, settled, index) =
        row;
    let bad = |column: &'static str, value: &str| StoreError::Row {
        table: "approvals",
        column,
        value: value.chars().take(64).collect(),
    };
    let kind = ApprovalKind::parse(&kind).ok_or_else(|| bad("kind", &kind))?;
    let settled = match settled {
        None => None,
        Some(name) => Some(DecisionKind::parse(&name).ok_or_else(|| bad("settled", &name))?),
    };
    Ok(StoredApproval {
        run_uid,
        request: ApprovalRequest {
            id,
            kind,
            node,
            prompt,
            text,
            digest,
            size: u64::try_from(size).unwrap_or(0),
            complete: complete != 0,
            expires_at,
        },
        settled,
        settled_index: index.and_then(|i| u64::try_from(i).ok()),
    })
}

/// The approval statements of one backend (expanded inside `ops::sqlite` and
/// `ops::postgres`, beside the event statements).
macro_rules! approval_ops {
    ($db:ty, begin: $begin:expr) => {
        use crate::sidecar::store::approvals::{COLUMNS, Put, Row, StoredApproval, from_row};
        use orrery_crds::approval::{ApprovalRequest, DecisionKind};

        /// Stores an asked approval (and the run's record, if new).
        pub(crate) async fn put_approval(
            pool: &Pool,
            scrub: &Scrub,
            run: &RunRecord,
            ask: &ApprovalRequest,
        ) -> Result<Put, StoreError> {
            let failed = |e: sqlx::Error| scrub.query("put_approval", &e);
            let mut tx = pool.begin_with($begin).await.map_err(failed)?;
            sqlx::query(
                "INSERT INTO runs (run_uid, namespace, name, first_seen) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (run_uid) DO NOTHING",
            )
            .bind(run.uid.as_str())
            .bind(run.namespace.as_str())
            .bind(run.name.as_str())
            .bind(unix_now())
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
            let inserted = sqlx::query(
                "INSERT INTO approvals (run_uid, approval_id, kind, node, prompt, text, digest, \
                 size, complete, expires_at, asked_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
                 ON CONFLICT (run_uid, approval_id) DO NOTHING",
            )
            .bind(run.uid.as_str())
            .bind(ask.id.as_str())
            .bind(ask.kind.as_str())
            .bind(ask.node.as_str())
            .bind(ask.prompt.as_str())
            .bind(ask.text.as_str())
            .bind(ask.digest.as_str())
            .bind(i64::try_from(ask.size).unwrap_or(i64::MAX))
            .bind(i64::from(ask.complete))
            .bind(ask.expires_at.as_str())
            .bind(unix_now())
            .execute(&mut *tx)
            .await
            .map_err(failed)?
            .rows_affected();
            let put = if inserted == 1 {
                Put::Created
            } else {
                let digest: String = sqlx::query_scalar(
                    "SELECT digest FROM approvals WHERE run_uid = $1 AND approval_id = $2",
                )
                .bind(run.uid.as_str())
                .bind(ask.id.as_str())
                .fetch_one(&mut *tx)
                .await
                .map_err(failed)?;
                if digest == ask.digest {
                    Put::Same
                } else {
                    Put::Conflict
                }
            };
            tx.commit().await.map_err(failed)?;
            Ok(put)
        }

        /// A run's approvals, in the order they were asked.
        pub(crate) async fn approvals(
            pool: &Pool,
            scrub: &Scrub,
            run_uid: &str,
        ) -> Result<Vec<StoredApproval>, StoreError> {
            let sql = format!(
                "SELECT {COLUMNS} FROM approvals WHERE run_uid = $1 ORDER BY asked_at, approval_id"
            );
            let rows: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(run_uid)
                .fetch_all(pool)
                .await
                .map_err(|e| scrub.query("approvals", &e))?;
            rows.into_iter().map(from_row).collect()
        }

        /// Records how an approval was settled and drops its text (rule 4.21: held only
        /// while the approval is open); the first settlement wins (false: it was settled
        /// before, or is unknown).
        pub(crate) async fn settle(
            pool: &Pool,
            scrub: &Scrub,
            run_uid: &str,
            id: &str,
            outcome: DecisionKind,
            index: Option<i64>,
        ) -> Result<bool, StoreError> {
            let changed = sqlx::query(
                "UPDATE approvals SET settled = $3, settled_index = $4, text = '' \
                 WHERE run_uid = $1 AND approval_id = $2 AND settled IS NULL",
            )
            .bind(run_uid)
            .bind(id)
            .bind(outcome.as_str())
            .bind(index)
            .execute(pool)
            .await
            .map_err(|e| scrub.query("settle", &e))?
            .rows_affected();
            Ok(changed == 1)
        }

        /// Records that the decision at `index` was refused by the run, and why.
        pub(crate) async fn refuse(
            pool: &Pool,
            scrub: &Scrub,
            run_uid: &str,
            id: &str,
            index: i64,
            reason: &str,
        ) -> Result<(), StoreError> {
            sqlx::query(
                "INSERT INTO refused_decisions (run_uid, approval_id, decision_index, reason) \
                 VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (run_uid, approval_id, decision_index) DO NOTHING",
            )
            .bind(run_uid)
            .bind(id)
            .bind(index)
            .bind(reason)
            .execute(pool)
            .await
            .map_err(|e| scrub.query("refuse", &e))?;
            Ok(())
        }

        /// Why the decision at `index` was refused, if it was.
        pub(crate) async fn refusal(
            pool: &Pool,
            scrub: &Scrub,
            run_uid: &str,
            id: &str,
            index: i64,
        ) -> Result<Option<String>, StoreError> {
            sqlx::query_scalar(
                "SELECT reason FROM refused_decisions \
                 WHERE run_uid = $1 AND approval_id = $2 AND decision_index = $3",
            )
            .bind(run_uid)
            .bind(id)
            .bind(index)
            .fetch_optional(pool)
            .await
            .map_err(|e| scrub.query("refusal", &e))
        }

        /// Every refused decision of the run: `(approval id, index, reason)`, by approval and
        /// index.
        pub(crate) async fn refusals(
            pool: &Pool,
            scrub: &Scrub,
            run_uid: &str,
        ) -> Result<Vec<(String, i64, String)>, StoreError> {
            sqlx::query_as(
                "SELECT approval_id, decision_index, reason FROM refused_decisions \
                 WHERE run_uid = $1 ORDER BY approval_id, decision_index",
            )
            .bind(run_uid)
            .fetch_all(pool)
            .await
            .map_err(|e| scrub.query("refusals", &e))
        }

        /// Records that a decision with digest `digest` on approval `id` is being made through
        /// the API (before it is appended, so the relay never sees it unrecorded).
        pub(crate) async fn record_api_decision(
            pool: &Pool,
            scrub: &Scrub,
            run_uid: &str,
            id: &str,
            digest: &str,
        ) -> Result<(), StoreError> {
            sqlx::query(
                "INSERT INTO api_decisions (run_uid, approval_id, decision_digest) \
                 VALUES ($1, $2, $3) \
                 ON CONFLICT (run_uid, approval_id, decision_digest) DO NOTHING",
            )
            .bind(run_uid)
            .bind(id)
            .bind(digest)
            .execute(pool)
            .await
            .map_err(|e| scrub.query("record_api_decision", &e))?;
            Ok(())
        }

        /// Forgets a decision recorded by [`record_api_decision`] whose append failed.
        pub(crate) async fn forget_api_decision(
            pool: &Pool,
            scrub: &Scrub,
            run_uid: &str,
            id: &str,
            digest: &str,
        ) -> Result<(), StoreError> {
            sqlx::query(
                "DELETE FROM api_decisions \
                 WHERE run_uid = $1 AND approval_id = $2 AND decision_digest = $3",
            )
            .bind(run_uid)
            .bind(id)
            .bind(digest)
            .execute(pool)
            .await
            .map_err(|e| scrub.query("forget_api_decision", &e))?;
            Ok(())
        }

        /// Whether a decision with digest `digest` on approval `id` was made through the API.
        pub(crate) async fn is_api_decision(
            pool: &Pool,
            scrub: &Scrub,
            run_uid: &str,
            id: &str,
            digest: &str,
        ) -> Result<bool, StoreError> {
            // COUNT(*) is a BIGINT on both backends (a bare `1` is an INTEGER on PostgreSQL).
            let found: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM api_decisions \
                 WHERE run_uid = $1 AND approval_id = $2 AND decision_digest = $3",
            )
            .bind(run_uid)
            .bind(id)
            .bind(digest)
            .fetch_one(pool)
            .await
            .map_err(|e| scrub.query("is_api_decision", &e))?;
            Ok(found > 0)
        }
    };
}

pub(crate) use approval_ops;
