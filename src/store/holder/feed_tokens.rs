//! A holder's feed tokens in its object's database: each kept as its digest,
//! with its scope, the decisions it hands CrowdSec's bouncers, where its pulls
//! stand, and who pulled last.

use crate::domain::code::Coded;
use crate::domain::feed::cap::CursorCut;
use crate::domain::feed::decision::{DecisionType, Position};
use crate::domain::feed::feed_token::{
    keeping_up, FeedTokenInfo, LastPull, NewFeedTokenRecord, PullClient, Scope,
    MAX_PER_HOLDER as MAX_FEED_TOKENS,
};
use crate::domain::time::UnixTime;
use crate::store::holder::list::HolderTables;
use crate::store::holder::usage_metrics::{bouncer_usage, BOUNCER_COLUMNS};
use crate::store::sql::{Row, Sql, SqlError, Value};

/// A token as a pull finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenState {
    pub decision: DecisionType,
    pub position: Option<Position>,
    pub last: LastPull,
    /// How many items its last cut pull left out.
    pub left_out: Option<u64>,
}

fn coded<T: Coded>(row: &Row, column: usize, what: &str) -> Result<T, SqlError> {
    let code = row.text(column)?;
    T::from_code(&code).ok_or_else(|| SqlError(format!("a feed token of {what} {code:?}")))
}

impl<S: Sql> HolderTables<S> {
    /// Records a new token, unless the holder has the most it may.
    pub fn create_feed_token(
        &self,
        token: &NewFeedTokenRecord,
        now: UnixTime,
    ) -> Result<bool, SqlError> {
        let count = self.sql().query("SELECT count(*) FROM feed_tokens", &[])?;
        if count.first().map_or(Ok(0), |row| row.int(0))? >= MAX_FEED_TOKENS as u64 {
            return Ok(false);
        }
        self.sql().execute(
            "INSERT INTO feed_tokens (id, digest, created_at, scope, decision, aggregate, max_items)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            &[
                Value::text(&token.id),
                Value::text(&token.digest),
                Value::int(now.0),
                Value::text(token.scope.code()),
                Value::text(token.decision.code()),
                Value::int(u64::from(token.aggregate)),
                token.max_items.map_or(Value::Null, Value::int),
            ],
        )?;
        Ok(true)
    }

    /// Every token as the holder sees it at `now`, oldest first, with what its
    /// bouncer last reported of itself and dropped a day.
    pub fn feed_tokens(&self, now: UnixTime) -> Result<Vec<FeedTokenInfo>, SqlError> {
        let rows = self.sql().query(
            &format!(
                "SELECT id, created_at, last_used, scope, decision, user_agent, pulled, pull_interval,
                     aggregate, max_items, left_out, {BOUNCER_COLUMNS}
                 FROM feed_tokens ORDER BY created_at, id"
            ),
            &[],
        )?;
        let today = now.utc_day();
        let days = self.usage_days_by_token(today)?;
        rows.iter()
            .map(|row| {
                let last_used = row.opt_int(2)?.map(UnixTime);
                let interval = row.opt_int(7)?;
                let id = row.text(0)?;
                let reported = days.get(&id).map_or(&[][..], Vec::as_slice);
                Ok(FeedTokenInfo {
                    id,
                    scope: coded::<Scope>(row, 3, "scope")?,
                    decision_type: coded::<DecisionType>(row, 4, "decision")?,
                    aggregate: row.int(8)? != 0,
                    max_items: row.opt_int(9)?,
                    left_out: row.opt_int(10)?,
                    created_at: UnixTime(row.int(1)?).to_rfc3339(),
                    last_used: last_used.map(UnixTime::to_rfc3339),
                    user_agent: row.opt_text(5)?,
                    pulled: row.opt_text(6)?,
                    keeping_up: last_used
                        .zip(interval)
                        .map(|(last, interval)| keeping_up(last, interval, now)),
                    usage: bouncer_usage(row, 11, reported, today)?,
                })
            })
            .collect()
    }

    /// The token as a pull finds it, or `None` when it no longer exists.
    pub fn token_state(&self, id: &str) -> Result<Option<TokenState>, SqlError> {
        let rows = self.sql().query(
            "SELECT decision, position, renewed_at, last_used, user_agent, pulled, left_out
             FROM feed_tokens WHERE id = ?1",
            &[Value::text(id)],
        )?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let position = match (row.opt_text(1)?, row.opt_int(2)?) {
            (Some(text), Some(renewed_at)) => {
                // A position kept before cuts is its version alone: no cut.
                let (cursor, cut) = CursorCut::parse(&text)
                    .ok_or_else(|| SqlError(format!("a feed token's position {text:?}")))?;
                Some(Position {
                    cursor,
                    renewed_at: UnixTime(renewed_at),
                    cut,
                })
            }
            _ => None,
        };
        let client = row.opt_text(5)?.map(|pulled| PullClient {
            user_agent: row.opt_text(4).ok().flatten(),
            pulled,
        });
        Ok(Some(TokenState {
            decision: coded::<DecisionType>(row, 0, "decision")?,
            position,
            last: LastPull {
                at: row.opt_int(3)?.map(UnixTime),
                client,
            },
            left_out: row.opt_int(6)?,
        }))
    }

    /// Records a pull of the token found as `state`: its new position, if it
    /// moved, and who pulled; nothing at all when neither is worth a row written.
    pub fn record_pull(
        &self,
        id: &str,
        state: &TokenState,
        client: &PullClient,
        position: Option<Position>,
        now: UnixTime,
    ) -> Result<(), SqlError> {
        let moved = position.is_some_and(|p| Some(p) != state.position);
        if !moved && !state.last.worth_recording(client, now) {
            return Ok(());
        }
        let position = position.or(state.position);
        self.sql().execute(
            "UPDATE feed_tokens SET last_used = ?2, user_agent = ?3, pulled = ?4,
                 pull_interval = coalesce(?5, pull_interval), position = ?6, renewed_at = ?7
             WHERE id = ?1",
            &[
                Value::text(id),
                Value::int(now.0),
                client
                    .user_agent
                    .as_deref()
                    .map_or(Value::Null, Value::text),
                Value::text(&client.pulled),
                state
                    .last
                    .at
                    .map_or(Value::Null, |at| Value::int(now.0.saturating_sub(at.0))),
                position.map_or(Value::Null, |p| {
                    Value::text(format!("{}{}", p.cursor, p.cut))
                }),
                position.map_or(Value::Null, |p| Value::int(p.renewed_at.0)),
            ],
        )?;
        Ok(())
    }

    /// Records how many items a cut pull of the token found as `state` left
    /// out, when that changed: what the holder's list of tokens shows.
    pub fn record_left_out(
        &self,
        id: &str,
        state: &TokenState,
        left_out: u64,
    ) -> Result<(), SqlError> {
        if state.left_out == Some(left_out) {
            return Ok(());
        }
        self.sql().execute(
            "UPDATE feed_tokens SET left_out = ?2 WHERE id = ?1",
            &[Value::text(id), Value::int(left_out)],
        )?;
        Ok(())
    }

    /// Deletes a token; its digest, so that its record can go too, or `None` when there was none.
    pub fn revoke_feed_token(&self, id: &str) -> Result<Option<String>, SqlError> {
        let found = self.sql().query(
            "SELECT digest FROM feed_tokens WHERE id = ?1",
            &[Value::text(id)],
        )?;
        self.sql()
            .execute("DELETE FROM feed_tokens WHERE id = ?1", &[Value::text(id)])?;
        self.sql().execute(
            "DELETE FROM usage_days WHERE token = ?1",
            &[Value::text(id)],
        )?;
        found.first().map(|row| row.text(0)).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::feed::item::FeedVersion;
    use crate::store::holder::rule_tests::{sql_store, NOON};
    use crate::store::holder::schema::{migrate, MIGRATIONS};
    use crate::store::sql::native::NativeSql;

    fn record(n: usize, scope: Scope) -> NewFeedTokenRecord {
        NewFeedTokenRecord {
            id: format!("ft_{n:016x}"),
            digest: format!("d{n}"),
            scope,
            decision: if n == 1 {
                DecisionType::Captcha
            } else {
                DecisionType::Ban
            },
            aggregate: n == 2,
            max_items: (n == 3).then_some(5),
        }
    }

    fn written<S: Sql>(store: &HolderTables<S>) -> u64 {
        store
            .sql()
            .query(
                "SELECT last_used FROM feed_tokens WHERE id = 'ft_0000000000000001'",
                &[],
            )
            .unwrap()[0]
            .opt_int(0)
            .unwrap()
            .unwrap_or(0)
    }

    #[test]
    fn feed_tokens_are_capped_recorded_and_revoked() {
        let store = sql_store();
        for n in 0..MAX_FEED_TOKENS {
            let scope = if n % 2 == 0 {
                Scope::Personal
            } else {
                Scope::All
            };
            assert!(store.create_feed_token(&record(n, scope), NOON).unwrap());
        }
        assert!(!store
            .create_feed_token(&record(99, Scope::All), NOON)
            .unwrap());
        let id = "ft_0000000000000001";
        let state = store.token_state(id).unwrap().unwrap();
        assert_eq!(
            (state.decision, state.position, state.last.clone()),
            (DecisionType::Captcha, None, LastPull::default())
        );
        let bouncer = PullClient::new(Some("crowdsec-custom-bouncer/v0.0.15"), "decisions");
        store
            .record_pull(id, &state, &bouncer, None, NOON.plus(5))
            .unwrap();
        let listed = store.feed_tokens(NOON.plus(5)).unwrap();
        assert_eq!(listed[1].last_used.as_deref(), Some("2026-11-21T12:00:05Z"));
        assert_eq!(
            listed[1].user_agent.as_deref(),
            Some("crowdsec-custom-bouncer/v0.0.15")
        );
        assert_eq!(
            (listed[1].pulled.as_deref(), listed[1].keeping_up),
            (Some("decisions"), None)
        );
        assert_eq!(
            (listed[0].scope, listed[1].scope),
            (Scope::Personal, Scope::All)
        );
        assert_eq!(listed[1].decision_type, DecisionType::Captcha);
        assert_eq!(
            listed
                .iter()
                .map(|token| token.aggregate)
                .collect::<Vec<_>>()[..3],
            [false, false, true],
            "each token's own setting"
        );
        assert_eq!(store.revoke_feed_token(id).unwrap().as_deref(), Some("d1"));
        assert_eq!(store.token_state(id).unwrap(), None);
        assert_eq!(store.revoke_feed_token(id).unwrap(), None);
    }

    #[test]
    fn a_pull_writes_a_row_only_when_its_position_moves_or_a_minute_passed() {
        let store = sql_store();
        store
            .create_feed_token(&record(1, Scope::All), NOON)
            .unwrap();
        let id = "ft_0000000000000001";
        let bouncer = PullClient::new(Some("crowdsec-firewall-bouncer/v0.0.25"), "decisions");
        let at = |changes| Position {
            cursor: FeedVersion {
                changes,
                global: 2,
                allow: 1,
            },
            renewed_at: NOON,
            cut: CursorCut::Whole,
        };
        let pull = |position, seconds| {
            let state = store.token_state(id).unwrap().unwrap();
            store
                .record_pull(id, &state, &bouncer, position, NOON.plus(seconds))
                .unwrap();
            store.token_state(id).unwrap().unwrap()
        };
        assert_eq!(pull(Some(at(3)), 0).position, Some(at(3)));
        assert_eq!(written(&store), NOON.0);
        // Nothing new, within the minute: no row written.
        assert_eq!(pull(None, 10).position, Some(at(3)));
        assert_eq!(pull(Some(at(3)), 20).position, Some(at(3)));
        assert_eq!(
            written(&store),
            NOON.0,
            "a pull that moved nothing, within the minute, writes no row"
        );
        // The position moved: written at once, and it stays through a touch.
        assert_eq!(pull(Some(at(5)), 30).position, Some(at(5)));
        assert_eq!(written(&store), NOON.0 + 30);
        assert_eq!(pull(None, 95).position, Some(at(5)));
        assert_eq!(written(&store), NOON.0 + 95);
        let listed = store.feed_tokens(NOON.plus(95)).unwrap();
        assert_eq!(listed[0].keeping_up, Some(true), "pulled 65 s apart");
        let later = store.feed_tokens(NOON.plus(95 + 200)).unwrap();
        assert_eq!(later[0].keeping_up, Some(false));
    }

    #[test]
    fn tokens_and_positions_kept_before_cuts_serve_the_whole_feed() {
        let sql = NativeSql::new();
        // The shape the last version kept: every column but `max_items` and
        // `left_out`, and a position that is a version alone.
        crate::store::sql::migrate(&sql, &MIGRATIONS[..16]).unwrap();
        sql.execute(
            "INSERT INTO feed_tokens (id, digest, created_at, scope, decision, position, renewed_at)
             VALUES ('ft_0', 'd', 5, 'all', 'ban', '7.3.2', 5)",
            &[],
        )
        .unwrap();
        migrate(&sql).unwrap();
        let store = HolderTables::new(sql);
        assert!(store
            .create_feed_token(&record(3, Scope::All), NOON)
            .unwrap());
        let listed = store.feed_tokens(NOON).unwrap();
        assert_eq!(
            listed
                .iter()
                .map(|token| (token.id.as_str(), token.max_items, token.left_out))
                .collect::<Vec<_>>(),
            [("ft_0", None, None), ("ft_0000000000000003", Some(5), None)],
            "a token kept before cuts does not list as whole; one made now keeps its setting"
        );
        let state = store.token_state("ft_0").unwrap().unwrap();
        let kept = state.position.expect("its position");
        assert_eq!(
            (kept.cursor.to_string(), kept.cut),
            ("7.3.2".to_owned(), CursorCut::Whole),
            "a position kept before cuts does not read as a whole feed's"
        );
        // A cut position is kept with how far the cut reached, and read back so.
        let cut = CursorCut::parse("8.3.2.o5x1x80").unwrap().1;
        let bouncer = PullClient::new(None, "decisions");
        let moved = Position { cut, ..kept };
        store
            .record_pull("ft_0", &state, &bouncer, Some(moved), NOON)
            .unwrap();
        assert_eq!(
            store.token_state("ft_0").unwrap().unwrap().position,
            Some(moved),
            "a cut position is not kept with how far its cut reached"
        );
    }

    #[test]
    fn tokens_kept_before_the_merge_setting_list_as_unmerged() {
        let sql = NativeSql::new();
        // The shape the last version kept: every column but `aggregate`.
        crate::store::sql::migrate(&sql, &MIGRATIONS[..15]).unwrap();
        sql.execute(
            "INSERT INTO feed_tokens (id, digest, created_at, scope, decision)
             VALUES ('ft_0', 'd', 5, 'personal', 'captcha')",
            &[],
        )
        .unwrap();
        migrate(&sql).unwrap();
        let store = HolderTables::new(sql);
        assert!(store
            .create_feed_token(&record(2, Scope::All), NOON)
            .unwrap());
        let listed = store.feed_tokens(NOON).unwrap();
        assert_eq!(
            listed
                .iter()
                .map(|token| (token.id.as_str(), token.scope, token.aggregate))
                .collect::<Vec<_>>(),
            [
                ("ft_0", Scope::Personal, false),
                ("ft_0000000000000002", Scope::All, true)
            ],
            "a token kept before lists as unmerged; one made now keeps its setting"
        );
    }

    #[test]
    fn a_feed_token_made_before_scopes_reads_everything_and_bans() {
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..5]).unwrap();
        sql.execute(
            "INSERT INTO feed_tokens (id, digest, created_at) VALUES ('ft_0', 'd', 5)",
            &[],
        )
        .unwrap();
        migrate(&sql).unwrap();
        let store = HolderTables::new(sql);
        let listed = store.feed_tokens(NOON).unwrap();
        assert_eq!(
            (listed[0].scope, listed[0].decision_type),
            (Scope::All, DecisionType::Ban)
        );
        assert!(
            !listed[0].aggregate,
            "a token made before its settings serves the whole feed"
        );
        assert_eq!(store.token_state("ft_0").unwrap().unwrap().position, None);
    }
}
