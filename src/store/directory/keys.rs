//! The named operator keys, kept as digests, and what the isolates are told
//! of them (`KnownKeys`): the standing ones and the last revoked.

use crate::domain::access::operator::Actor;
use crate::domain::access::operator::KnownKey;
use crate::domain::access::operator::KnownKeys;
use crate::domain::access::operator::Role;
use crate::domain::access::operator::MAX_REVOKED_KNOWN;
use crate::domain::code::Coded;
use crate::domain::time::UnixTime;
use serde::{Deserialize, Serialize};

use crate::store::directory::Directory;
use crate::store::sql::{Row, Sql, SqlError, Value};

/// Operator keys that may stand at once.
pub const MAX_KEYS: u64 = 100;

/// A named operator key, never the key itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRow {
    pub id: String,
    pub name: String,
    pub role: Role,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

fn key_of(row: &Row) -> Result<KeyRow, SqlError> {
    let role = row.text(2)?;
    Ok(KeyRow {
        id: row.text(0)?,
        name: row.text(1)?,
        role: Role::from_code(&role)
            .ok_or_else(|| SqlError(format!("an operator key of role {role:?}")))?,
        created_at: UnixTime(row.int(3)?).to_rfc3339(),
        revoked_at: row.opt_int(4)?.map(|at| UnixTime(at).to_rfc3339()),
    })
}

impl<S: Sql> Directory<S> {
    pub fn active_keys(&self) -> Result<u64, SqlError> {
        let rows = self.sql.query(
            "SELECT count(*) FROM operator_keys WHERE revoked_at IS NULL",
            &[],
        )?;
        rows.first().map_or(Ok(0), |row| row.int(0))
    }
    pub fn add_key(
        &self,
        (id, name, role): (&str, &str, Role),
        digest: &str,
        at: UnixTime,
    ) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO operator_keys (id, name, role, digest, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            &[
                Value::text(id),
                Value::text(name),
                Value::text(role.code()),
                Value::text(digest),
                Value::int(at.0),
            ],
        )?;
        Ok(())
    }
    /// The caller a key's digest names, while its key stands.
    pub fn actor(&self, digest: &str) -> Result<Option<Actor>, SqlError> {
        let rows = self.sql.query(
            "SELECT id, name, role, created_at, revoked_at FROM operator_keys
             WHERE digest = ?1 AND revoked_at IS NULL",
            &[Value::text(digest)],
        )?;
        rows.first()
            .map(|row| {
                let key = key_of(row)?;
                Ok(Actor::Key {
                    id: key.id,
                    name: key.name,
                    role: key.role,
                })
            })
            .transpose()
    }
    /// The key a digest names, standing or revoked: who a refused call was.
    pub fn named(&self, digest: &str) -> Result<Option<KeyRow>, SqlError> {
        let rows = self.sql.query(
            "SELECT id, name, role, created_at, revoked_at FROM operator_keys WHERE digest = ?1",
            &[Value::text(digest)],
        )?;
        rows.first().map(key_of).transpose()
    }
    /// The operator keys: every standing one (at most `MAX_KEYS`), then the most
    /// recently created revoked ones, up to `MAX_KEYS` of them.
    pub fn keys(&self) -> Result<Vec<KeyRow>, SqlError> {
        let rows = self.sql.query(
            "SELECT id, name, role, created_at, revoked_at FROM operator_keys
             ORDER BY revoked_at IS NOT NULL, created_at DESC, id DESC LIMIT ?1",
            &[Value::int(2 * MAX_KEYS)],
        )?;
        rows.iter().map(key_of).collect()
    }
    /// The keys every isolate checks (`KnownKeys`, published in KV): each
    /// standing key, and the `MAX_REVOKED_KNOWN` revoked last, so that their
    /// refusals are recorded under their names.
    pub fn known_keys(&self) -> Result<KnownKeys, SqlError> {
        let rows = self.sql.query(
            "SELECT digest, id, name, role, revoked_at IS NOT NULL FROM operator_keys
             WHERE revoked_at IS NULL OR id IN (
                SELECT id FROM operator_keys WHERE revoked_at IS NOT NULL
                ORDER BY revoked_at DESC LIMIT ?1
             )",
            &[Value::int(MAX_REVOKED_KNOWN)],
        )?;
        let mut known = KnownKeys::default();
        for row in &rows {
            let role = row.text(3)?;
            let key = KnownKey {
                id: row.text(1)?,
                name: row.text(2)?,
                role: Role::from_code(&role)
                    .ok_or_else(|| SqlError(format!("an operator key of role {role:?}")))?,
                revoked: row.int(4)? == 1,
            };
            known.keys.insert(row.text(0)?, key);
        }
        Ok(known)
    }
    /// Revokes a key; its name, or `None` when no standing key has this id.
    pub fn revoke_key(&self, id: &str, at: UnixTime) -> Result<Option<String>, SqlError> {
        let rows = self.sql.query(
            "UPDATE operator_keys SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL
             RETURNING name",
            &[Value::text(id), Value::int(at.0)],
        )?;
        rows.first().map(|row| row.text(0)).transpose()
    }
}

#[cfg(test)]
mod tests {

    use crate::domain::access::operator::Role;
    use crate::domain::access::operator::MAX_REVOKED_KNOWN;
    use crate::domain::time::UnixTime;
    use crate::store::directory::test_directory::*;

    #[test]
    fn a_revoked_key_names_no_one_from_the_next_call() {
        let directory = directory();
        directory
            .add_key(("key_1", "alice", Role::Read), "d1", UnixTime(1))
            .unwrap();
        let alice = directory.actor("d1").unwrap().unwrap();
        assert_eq!(alice.name(), "alice");
        assert_eq!(directory.active_keys().unwrap(), 1);
        assert_eq!(
            directory.revoke_key("key_1", UnixTime(2)).unwrap(),
            Some("alice".into())
        );
        assert_eq!(directory.actor("d1").unwrap(), None);
        assert_eq!(directory.revoke_key("key_1", UnixTime(3)).unwrap(), None);
        assert_eq!(directory.active_keys().unwrap(), 0);
        assert_eq!(
            directory.keys().unwrap()[0].revoked_at,
            Some(UnixTime(2).to_rfc3339())
        );
    }

    #[test]
    fn the_keys_published_are_the_standing_ones_and_the_last_revoked() {
        let directory = directory();
        let most = MAX_REVOKED_KNOWN;
        for n in 0..most + 2 {
            let id = format!("key_{n}");
            let digest = format!("d{n}");
            directory
                .add_key((id.as_str(), "k", Role::Admin), &digest, UnixTime(n))
                .unwrap();
        }
        for n in 0..most + 1 {
            let id = format!("key_{n}");
            directory.revoke_key(&id, UnixTime(1_000 + n)).unwrap();
        }
        let known = directory.known_keys().unwrap();
        assert_eq!(
            known.keys.len() as u64,
            most + 1,
            "one standing, {most} revoked"
        );
        let standing = format!("d{}", most + 1);
        assert!(known.caller(&standing).is_ok());
        assert_eq!(
            known.caller("d0"),
            Err(None),
            "revoked first, and forgotten"
        );
        assert!(matches!(known.caller("d1"), Err(Some(key)) if key.revoked));
    }
}
