//! The licenses the directory files: each with its label, note and times,
//! searched by a label's prefix a bounded page at a time, and their count.

use crate::domain::access::license::LicenseId;
use crate::domain::access::operator::folded;
use crate::domain::time::UnixTime;
use serde::{Deserialize, Serialize};

use crate::store::directory::Directory;
use crate::store::sql::{Row, Sql, SqlError, Value, MAX_EXACT_INTEGER};

/// Licenses a search passes over at most in one call: a prefix that few labels
/// have answers a short page and a cursor to go on from, never a scan of every license.
pub const SEARCHED_ROWS: u64 = 10_000;
/// A license as the operator sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LicenseRow {
    pub license: String,
    pub label: String,
    pub note: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// Where a page of licenses goes on from: the last license passed over, newest
/// first (by the second it was created in, then the order it was filed in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LicenseCursor {
    pub created_at: u64,
    pub seq: u64,
}

impl LicenseCursor {
    pub fn encode(&self) -> String {
        format!("{}.{}", self.created_at, self.seq)
    }

    pub fn decode(text: &str) -> Option<Self> {
        let (at, seq) = text.split_once('.')?;
        let exact = |n: u64| (n <= MAX_EXACT_INTEGER as u64).then_some(n);
        Some(Self {
            created_at: exact(at.parse().ok()?)?,
            seq: exact(seq.parse().ok()?)?,
        })
    }
}

const LICENSE_COLUMNS: &str = "id, label, note, created_at, revoked_at, seq";

fn license_of(row: &Row) -> Result<LicenseRow, SqlError> {
    Ok(LicenseRow {
        license: row.text(0)?,
        label: row.text(1)?,
        note: row.text(2)?,
        created_at: UnixTime(row.int(3)?).to_rfc3339(),
        revoked_at: row.opt_int(4)?.map(|at| UnixTime(at).to_rfc3339()),
    })
}

impl<S: Sql> Directory<S> {
    /// Files a license; one already filed (taken over twice) is left as it is.
    pub fn add_license(
        &self,
        id: &str,
        (label, note): (&str, &str),
        created_at: UnixTime,
        revoked_at: Option<UnixTime>,
    ) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT OR IGNORE INTO licenses (id, label, folded, note, created_at, revoked_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &[
                Value::text(id),
                Value::text(label),
                Value::text(folded(label)),
                Value::text(note),
                Value::int(created_at.0),
                Value::opt_int(revoked_at.map(|at| at.0)),
            ],
        )?;
        Ok(())
    }
    pub fn license(&self, id: &str) -> Result<Option<LicenseRow>, SqlError> {
        let rows = self.sql.query(
            &format!("SELECT {LICENSE_COLUMNS} FROM licenses WHERE id = ?1"),
            &[Value::text(id)],
        )?;
        rows.first().map(license_of).transpose()
    }
    /// The labels of the licenses named that are filed, as `(license, label)`:
    /// one lookup by the licenses' unique index each.
    pub fn labels(&self, ids: &[LicenseId]) -> Result<Vec<(LicenseId, String)>, SqlError> {
        let mut labels = Vec::with_capacity(ids.len());
        for id in ids {
            let rows = self.sql.query(
                "SELECT label FROM licenses WHERE id = ?1",
                &[Value::text(id.as_str())],
            )?;
            if let Some(row) = rows.first() {
                labels.push((id.clone(), row.text(0)?));
            }
        }
        Ok(labels)
    }
    /// Sets what is given of a license's label and note; `None` when there is no such license.
    pub fn relabel(
        &self,
        id: &str,
        label: Option<&str>,
        note: Option<&str>,
    ) -> Result<Option<LicenseRow>, SqlError> {
        self.sql.execute(
            "UPDATE licenses SET label = coalesce(?2, label), folded = coalesce(?3, folded),
             note = coalesce(?4, note) WHERE id = ?1",
            &[
                Value::text(id),
                Value::opt_text(label),
                Value::opt_text(label.map(folded).as_deref()),
                Value::opt_text(note),
            ],
        )?;
        self.license(id)
    }
    /// Marks a license revoked; the first time counts.
    pub fn mark_revoked(&self, id: &str, at: UnixTime) -> Result<(), SqlError> {
        self.sql.execute(
            "UPDATE licenses SET revoked_at = coalesce(revoked_at, ?2) WHERE id = ?1",
            &[Value::text(id), Value::int(at.0)],
        )?;
        Ok(())
    }
    /// Up to `limit` licenses newest first after `after`, those whose label starts
    /// with `prefix` (case-insensitive) when one is given, and where the next page
    /// begins. A search passes over at most `SEARCHED_ROWS` licenses: when it
    /// stops short, the cursor goes on from the last it passed over.
    pub fn licenses(
        &self,
        prefix: Option<&str>,
        after: Option<&LicenseCursor>,
        limit: u32,
    ) -> Result<(Vec<LicenseRow>, Option<LicenseCursor>), SqlError> {
        let (at, seq) = after.map_or((MAX_EXACT_INTEGER as u64, 0), |c| (c.created_at, c.seq));
        let before = "(created_at < ?1 OR (created_at = ?1 AND seq < ?2))";
        let newest = "ORDER BY created_at DESC, seq DESC";
        let prefix = prefix.map(folded).filter(|p| !p.is_empty());
        let Some(prefix) = prefix else {
            let rows = self.sql.query(
                &format!("SELECT {LICENSE_COLUMNS} FROM licenses WHERE {before} {newest} LIMIT ?3"),
                &[
                    Value::int(at),
                    Value::int(seq),
                    Value::int(u64::from(limit) + 1),
                ],
            )?;
            return page_of(rows, limit);
        };
        let rows = self.sql.query(
            &format!(
                "SELECT {LICENSE_COLUMNS} FROM (
                    SELECT * FROM licenses WHERE {before} {newest} LIMIT ?5
                 ) WHERE substr(folded, 1, ?3) = ?4 {newest} LIMIT ?6"
            ),
            &[
                Value::int(at),
                Value::int(seq),
                Value::int(prefix.chars().count() as u64),
                Value::text(prefix),
                Value::int(SEARCHED_ROWS),
                Value::int(u64::from(limit) + 1),
            ],
        )?;
        let (found, next) = page_of(rows, limit)?;
        if next.is_some() {
            return Ok((found, next));
        }
        // The page is not full: it goes on from the last license passed over, if
        // the search stopped before the oldest.
        let last = self.sql.query(
            &format!(
                "SELECT created_at, seq FROM licenses WHERE {before} {newest} LIMIT 1 OFFSET ?3"
            ),
            &[
                Value::int(at),
                Value::int(seq),
                Value::int(SEARCHED_ROWS - 1),
            ],
        )?;
        let next = match last.first() {
            Some(row) if self.any_before(row)? => Some(LicenseCursor {
                created_at: row.int(0)?,
                seq: row.int(1)?,
            }),
            _ => None,
        };
        Ok((found, next))
    }
    fn any_before(&self, row: &Row) -> Result<bool, SqlError> {
        Ok(!self
            .sql
            .query(
                "SELECT 1 FROM licenses WHERE created_at < ?1 OR (created_at = ?1 AND seq < ?2) LIMIT 1",
                &[Value::int(row.int(0)?), Value::int(row.int(1)?)],
            )?
            .is_empty())
    }
    /// How many licenses were made: one row read, whatever their number.
    pub fn count(&self) -> Result<u64, SqlError> {
        let rows = self
            .sql
            .query("SELECT licenses FROM license_count WHERE id = 0", &[])?;
        rows.first().map_or(Ok(0), |row| row.int(0))
    }
    /// Where taking over the licenses kept before this object stands: `None` when
    /// done, else the cursor of the next page (`Some(None)` at the start).
    pub fn takeover(&self) -> Result<Option<Option<String>>, SqlError> {
        let rows = self
            .sql
            .query("SELECT cursor, done FROM takeover WHERE id = 0", &[])?;
        Ok(match rows.first() {
            None => Some(None),
            Some(row) if row.int(1)? == 1 => None,
            Some(row) => Some(row.opt_text(0)?),
        })
    }
    /// Records how far the takeover went: the next page's cursor, or done.
    pub fn took_over(&self, next: Option<&str>) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO takeover (id, cursor, done) VALUES (0, ?1, ?2)
             ON CONFLICT (id) DO UPDATE SET cursor = excluded.cursor, done = excluded.done",
            &[Value::opt_text(next), Value::int(u64::from(next.is_none()))],
        )?;
        Ok(())
    }
    /// Takes over from the first page again.
    pub fn restart_takeover(&self) -> Result<(), SqlError> {
        self.sql.execute("DELETE FROM takeover", &[])?;
        Ok(())
    }
}

fn page_of(
    rows: Vec<Row>,
    limit: u32,
) -> Result<(Vec<LicenseRow>, Option<LicenseCursor>), SqlError> {
    let more = rows.len() > limit as usize;
    let mut next = None;
    let mut licenses = Vec::with_capacity(rows.len().min(limit as usize));
    for row in rows.iter().take(limit as usize) {
        licenses.push(license_of(row)?);
        next = Some(LicenseCursor {
            created_at: row.int(3)?,
            seq: row.int(5)?,
        });
    }
    Ok((licenses, next.filter(|_| more)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::UnixTime;

    use crate::store::directory::test_directory::*;

    #[test]
    fn a_label_prefix_finds_licenses_case_insensitively_newest_first_a_page_at_a_time() {
        let directory = directory();
        for (n, label) in ["Acme GmbH", "acme corp", "Beta", "ACME Labs", "Äcme", ""]
            .iter()
            .enumerate()
        {
            directory
                .add_license(
                    &id(n as u64),
                    (label, ""),
                    UnixTime(100 + n as u64 / 2),
                    None,
                )
                .unwrap();
        }
        let (page, next) = directory.licenses(Some("aCmE"), None, 2).unwrap();
        assert_eq!(
            labels(&page),
            ["ACME Labs", "acme corp"],
            "a label prefix is found in any case, newest first"
        );
        let (rest, end) = directory.licenses(Some("acme"), next.as_ref(), 2).unwrap();
        assert_eq!((labels(&rest), end), (vec!["Acme GmbH"], None));
        assert_eq!(
            labels(&directory.licenses(Some("äC"), None, 10).unwrap().0),
            ["Äcme"]
        );
        let (all, _) = directory.licenses(None, None, 10).unwrap();
        assert_eq!(all.len(), 6);
        assert_eq!(
            all[0].license,
            id(5),
            "newest first, the later id first within a second"
        );
        assert_eq!(directory.count().unwrap(), 6);
        let cursor = LicenseCursor::decode(&next.unwrap().encode()).unwrap();
        assert_eq!(
            directory
                .licenses(Some("acme"), Some(&cursor), 2)
                .unwrap()
                .0,
            rest
        );
        assert_eq!(LicenseCursor::decode("1.lic_../x"), None);
        assert_eq!(LicenseCursor::decode("1"), None);
        assert_eq!(
            LicenseCursor::decode("9007199254740992.1"),
            None,
            "past what storage holds exactly"
        );
    }

    #[test]
    fn a_search_passes_over_a_bounded_number_of_licenses_and_goes_on_from_there() {
        let directory = directory();
        let total = SEARCHED_ROWS + 5;
        for n in 0..total {
            let label = if n == 0 { "rare" } else { "common" };
            directory
                .add_license(&id(n), (label, ""), UnixTime(n), None)
                .unwrap();
        }
        let (found, next) = directory.licenses(Some("rare"), None, 10).unwrap();
        assert!(
            found.is_empty(),
            "the one match is past the first searched rows"
        );
        let next = next.expect("a search past its bounded rows goes on from a cursor");
        assert_eq!(next.created_at, total - SEARCHED_ROWS);
        let (found, end) = directory.licenses(Some("rare"), Some(&next), 10).unwrap();
        assert_eq!((labels(&found), end), (vec!["rare"], None));
    }

    #[test]
    fn labels_and_notes_change_as_given_and_a_revocation_keeps_its_first_time() {
        let directory = directory();
        directory
            .add_license(&id(1), ("Old", "n"), UnixTime(5), None)
            .unwrap();
        let row = directory
            .relabel(&id(1), Some("New"), None)
            .unwrap()
            .unwrap();
        assert_eq!((row.label.as_str(), row.note.as_str()), ("New", "n"));
        assert_eq!(
            labels(&directory.licenses(Some("new"), None, 5).unwrap().0),
            ["New"]
        );
        assert_eq!(directory.relabel(&id(2), Some("x"), None).unwrap(), None);
        directory.mark_revoked(&id(1), UnixTime(7)).unwrap();
        directory.mark_revoked(&id(1), UnixTime(9)).unwrap();
        assert_eq!(
            directory.license(&id(1)).unwrap().unwrap().revoked_at,
            Some(UnixTime(7).to_rfc3339())
        );
        directory
            .add_license(&id(1), ("again", ""), UnixTime(8), None)
            .unwrap();
        assert_eq!(
            directory.license(&id(1)).unwrap().unwrap().label,
            "New",
            "taken over once"
        );
    }
}
