//! The holder's allow list in its object's database: a row per range, keyed by
//! its first address (sixteen bytes, as the personal list's rows) and prefix,
//! and the history rows of its changes, whose subject is the range.

use crate::domain::code::Coded;
use crate::domain::holder::allow::{AllowEntry, AllowSet, AllowStore};
use crate::domain::holder::allow_range::AllowRange;
use crate::domain::holder::entry::{HistoryKind, Subject};
use crate::domain::net::address::Listed;
use crate::domain::net::intervals::{combine, Op};
use crate::domain::net::ipv6::IPV4_MAPPED;
use crate::domain::operator_lists::delta::VersionChange;
use crate::domain::page::{AllowCursor, Page, PageQuery};
use crate::domain::time::UnixTime;
use crate::store::holder::list::HolderTables;
use crate::store::holder::rows::{address, address_of, ip_of, live, subject_of};
use crate::store::sql::{Row, Sql, SqlError, Value};

fn range_of(row: &Row) -> Result<Option<AllowRange>, SqlError> {
    let prefix = u8::try_from(row.int(1)?).map_err(|_| SqlError("a prefix past 255".into()))?;
    Ok(AllowRange::from_stored(address_of(row.blob(0)?)?, prefix))
}

const ALLOW_COLUMNS: &str = "first, prefix, added_at, comment";

/// Allow-list changes of the history read at once while a delta works out what
/// the window changed.
const CHANGE_PAGE: usize = 1000;

fn allow_entry_of(row: &Row) -> Result<Option<AllowEntry>, SqlError> {
    Ok(range_of(row)?.map(|range| AllowEntry {
        range,
        added_at: UnixTime(row.int(2).unwrap_or_default()),
        comment: row.opt_text(3).unwrap_or_default(),
    }))
}

impl<S: Sql> HolderTables<S> {
    /// Every range of the allow list, for the object to hold in memory: at most
    /// its bound of rows, read once per instance.
    pub fn allow_set(&self) -> Result<AllowSet, SqlError> {
        let rows = self.sql().query("SELECT first, prefix FROM allow", &[])?;
        let ranges = rows.iter().map(range_of).collect::<Result<Vec<_>, _>>()?;
        Ok(AllowSet::new(ranges.into_iter().flatten().collect()))
    }

    /// The entry of exactly `range`, if there is one.
    pub fn allow_entry(&self, range: AllowRange) -> Result<Option<AllowEntry>, SqlError> {
        let rows = self.sql().query(
            &format!("SELECT {ALLOW_COLUMNS} FROM allow WHERE first = ?1 AND prefix = ?2"),
            &[
                address(range.span().0),
                Value::int(u64::from(range.prefix128())),
            ],
        )?;
        rows.first()
            .map(allow_entry_of)
            .transpose()
            .map(Option::flatten)
    }

    /// A page of the allow list, newest first.
    pub fn allow_page(
        &self,
        query: &PageQuery<AllowCursor>,
    ) -> Result<Page<AllowEntry, AllowCursor>, SqlError> {
        let total = self
            .sql()
            .query("SELECT count(*) FROM allow", &[])?
            .first()
            .map_or(Ok(0), |row| row.int(0))?;
        let (after_time, after_first, after_prefix) = match query.after {
            Some(cursor) => (cursor.added_at, cursor.first, u64::from(cursor.prefix)),
            None => ((1 << 53) - 1, 0, 0),
        };
        let rows = self.sql().query(
            &format!(
                "SELECT {ALLOW_COLUMNS} FROM allow
                 WHERE added_at < ?1 OR (added_at = ?1 AND (first < ?2 OR (first = ?2 AND prefix < ?3)))
                 ORDER BY added_at DESC, first DESC, prefix DESC LIMIT ?4"
            ),
            &[
                Value::int(after_time),
                address(after_first),
                Value::int(after_prefix),
                Value::int(u64::from(query.limit) + 1),
            ],
        )?;
        let entries = rows
            .iter()
            .map(allow_entry_of)
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        Ok(Page::of(
            entries,
            query.limit,
            total,
            |entry: &AllowEntry| AllowCursor {
                added_at: entry.added_at.0,
                first: entry.range.span().0,
                prefix: entry.range.prefix128(),
            },
        ))
    }

    /// Whether the license's record says the holder has allow-list entries, as
    /// this object last told it (`false` before it ever did).
    pub fn published_allow_flag(&self) -> Result<bool, SqlError> {
        let rows = self
            .sql()
            .query("SELECT published FROM allow_flag WHERE id = 0", &[])?;
        Ok(rows.first().map(|row| row.int(0)).transpose()?.unwrap_or(0) == 1)
    }

    /// The number of the next telling, taken before it is sent: two tellings in
    /// flight at once never share one, so the record keeps the later.
    pub fn next_allow_flag_version(&self) -> Result<u64, SqlError> {
        let rows = self.sql().query(
            "INSERT INTO allow_flag (id, published, version) VALUES (0, 0, 1)
             ON CONFLICT (id) DO UPDATE SET version = version + 1 RETURNING version",
            &[],
        )?;
        rows.first().map_or(
            Err(SqlError("no version of the allow-list flag".into())),
            |row| row.int(0),
        )
    }

    /// Notes what the record was told, once it took it.
    pub fn allow_flag_published(&self, allow_list: bool) -> Result<(), SqlError> {
        self.sql().execute(
            "UPDATE allow_flag SET published = ?1 WHERE id = 0",
            &[Value::int(u64::from(allow_list))],
        )?;
        Ok(())
    }

    /// The addresses whose membership in the allow list changed over the history
    /// numbers `(since, until]`, `set` being the list at `until`: the window's
    /// changes undone newest first give the list at `since`, a page of them at
    /// a time, so that no more than two versions of the list are held.
    pub fn allow_change(
        &self,
        (since, until): (u64, u64),
        set: &AllowSet,
    ) -> Result<VersionChange, SqlError> {
        let mut before = set.clone();
        let mut below = until.saturating_add(1);
        loop {
            let rows = self.sql().query(
                "SELECT id, change, ip FROM history WHERE id > ?1 AND id < ?2
                 AND change IN ('allow_added', 'allow_removed') ORDER BY id DESC LIMIT ?3",
                &[
                    Value::int(since),
                    Value::int(below),
                    Value::int(CHANGE_PAGE as u64),
                ],
            )?;
            for row in &rows {
                let Some(Subject::Allow(range)) = subject_of(row.blob(2)?) else {
                    continue;
                };
                match HistoryKind::from_code(&row.text(1)?) {
                    Some(HistoryKind::AllowAdded) => before.remove(range),
                    Some(HistoryKind::AllowRemoved) => before.insert(range),
                    _ => {}
                }
            }
            match rows.last() {
                Some(last) if rows.len() == CHANGE_PAGE => below = last.int(0)?,
                _ => break,
            }
        }
        let ((now4, now6), (then4, then6)) = (set.intervals(), before.intervals());
        Ok(VersionChange {
            v4: combine(&now4, &then4, Op::Xor),
            v6: combine(&now6, &then6, Op::Xor),
            ..VersionChange::default()
        })
    }

    /// At most `limit` of the live single-address and /64 entries inside
    /// `change`, in key order: a delta holds a global block that is one of them
    /// apart, as it does for the blocks it probes.
    pub fn live_inside(
        &self,
        change: &VersionChange,
        now: UnixTime,
        limit: usize,
    ) -> Result<Vec<Listed>, SqlError> {
        let spans = change
            .v4
            .iter()
            .map(|&(first, last)| {
                (
                    IPV4_MAPPED.0 | u128::from(first),
                    IPV4_MAPPED.0 | u128::from(last),
                )
            })
            .chain(change.v6.iter().copied());
        let mut found = Vec::new();
        for (first, last) in spans {
            if found.len() >= limit {
                break;
            }
            let rows = self.sql().query(
                &format!(
                    "SELECT ip FROM entries WHERE ip BETWEEN ?2 AND ?3 AND {} ORDER BY ip LIMIT ?4",
                    live("expires_at")
                ),
                &[
                    Value::int(now.0),
                    address(first),
                    address(last),
                    Value::int((limit - found.len()) as u64),
                ],
            )?;
            for row in &rows {
                found.extend(ip_of(row.blob(0)?));
            }
        }
        Ok(found)
    }

    /// The live personal entries inside `range`, by the rows' key order: a /64's
    /// key sorts right after its first address, so it lies between the range's
    /// first and last address exactly when the range holds all of it.
    fn inside(range: AllowRange) -> (String, Vec<Value>) {
        let (first, last) = range.span();
        (
            format!("ip BETWEEN ?2 AND ?3 AND {}", live("expires_at")),
            vec![address(first), address(last)],
        )
    }
}

impl<S: Sql> AllowStore for HolderTables<S> {
    fn insert_allow(&mut self, entry: &AllowEntry) -> Result<(), SqlError> {
        let (first, _) = entry.range.span();
        self.sql().execute(
            "INSERT OR REPLACE INTO allow (first, prefix, added_at, comment) VALUES (?1, ?2, ?3, ?4)",
            &[
                address(first),
                Value::int(u64::from(entry.range.prefix128())),
                Value::int(entry.added_at.0),
                Value::opt_text(entry.comment.as_deref()),
            ],
        )?;
        Ok(())
    }

    fn delete_allow(&mut self, range: AllowRange) -> Result<(), SqlError> {
        self.sql().execute(
            "DELETE FROM allow WHERE first = ?1 AND prefix = ?2",
            &[
                address(range.span().0),
                Value::int(u64::from(range.prefix128())),
            ],
        )?;
        Ok(())
    }

    fn covered(&self, range: AllowRange, now: UnixTime, at_most: u64) -> Result<u64, SqlError> {
        let (within, bounds) = Self::inside(range);
        let mut args = vec![Value::int(now.0)];
        args.extend(bounds);
        args.push(Value::int(at_most));
        self.sql()
            .query(
                &format!("SELECT count(*) FROM (SELECT 1 FROM entries WHERE {within} LIMIT ?4)"),
                &args,
            )?
            .first()
            .map_or(Ok(0), |row| row.int(0))
    }

    fn remove_covered(
        &mut self,
        range: AllowRange,
        now: UnixTime,
        client: Option<&str>,
    ) -> Result<(), SqlError> {
        let (within, bounds) = Self::inside(range);
        let mut args = vec![Value::int(now.0)];
        args.extend(bounds);
        let removed = self.sql().execute(
            &format!(
                "INSERT INTO history (at, change, ip, client)
                 SELECT ?1, 'removed', ip, ?4 FROM entries WHERE {within} ORDER BY ip"
            ),
            &[args.clone(), vec![Value::opt_text(client)]].concat(),
        )?;
        if removed > 0 {
            self.sql()
                .execute(&format!("DELETE FROM entries WHERE {within}"), &args)?;
            self.trim_history()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::holder::allow::{perform_allow, AllowCall, AllowOutcome};
    use crate::domain::holder::entry::HistoryKind;
    use crate::domain::holder::list::{Limits, ListStore, Operation};
    use crate::domain::net::address::{Ipv6, Listed};
    use crate::store::holder::rule_tests::{apply, sql_store, Inspected, NOON};

    fn range(text: &str) -> AllowRange {
        AllowRange::parse(text, Ipv6::On).unwrap().range
    }

    #[test]
    fn an_allow_range_takes_away_the_live_entries_it_covers_and_records_each() {
        let mut store = sql_store();
        for ip in ["45.67.89.1", "45.67.89.255", "45.67.90.1", "2a00:1450:1::5"] {
            apply(&mut store, Operation::Add, ip, None, NOON);
        }
        store
            .insert(&crate::domain::holder::entry::Entry {
                ip: "2a00:1450:1::/64".parse::<Listed>().unwrap(),
                added_at: NOON,
                expires_at: None,
                comment: None,
            })
            .unwrap();
        let mut set = store.allow_set().unwrap();
        let mut add = |store: &mut HolderTables<_>, text| {
            perform_allow(
                store,
                &mut set,
                &AllowCall {
                    operation: Operation::Add,
                    range: range(text),
                    comment: Some("office".into()),
                    client: Some("192.0.2.1".into()),
                },
                NOON,
                Limits::default(),
            )
            .unwrap()
        };
        let added = add(&mut store, "45.67.89.0/24");
        assert_eq!(added.outcome, AllowOutcome::Added);
        assert_eq!(added.usage.unwrap().removed, 2);
        assert!(
            store
                .entry("45.67.89.1".parse().unwrap())
                .unwrap()
                .is_none(),
            "a covered live entry is gone once the allow range is added"
        );
        assert!(store
            .entry("45.67.90.1".parse().unwrap())
            .unwrap()
            .is_some());
        // A /128 inside a listed /64 leaves the /64; a /64 range takes it, and its addresses.
        add(&mut store, "2a00:1450:1::9");
        assert!(store
            .entry("2a00:1450:1::/64".parse().unwrap())
            .unwrap()
            .is_some());
        assert_eq!(
            add(&mut store, "2a00:1450:1::/64").usage.unwrap().removed,
            4
        );
        assert!(store
            .entry("2a00:1450:1::/64".parse().unwrap())
            .unwrap()
            .is_none());
        assert!(store
            .entry("2a00:1450:1::5".parse().unwrap())
            .unwrap()
            .is_none());
        // The set read back is the set kept.
        assert_eq!(store.allow_set().unwrap(), set);
        let history = store.all_history();
        let subjects: Vec<(HistoryKind, String)> = history
            .iter()
            .skip(4)
            .map(|e| (e.change, e.ip.to_string()))
            .collect();
        assert_eq!(
            subjects,
            [
                (HistoryKind::Removed, "45.67.89.1".into()),
                (HistoryKind::Removed, "45.67.89.255".into()),
                (HistoryKind::AllowAdded, "45.67.89.0/24".into()),
                (HistoryKind::AllowAdded, "2a00:1450:1::9".into()),
                (HistoryKind::Removed, "2a00:1450:1::/64".into()),
                (HistoryKind::Removed, "2a00:1450:1::5".into()),
                (HistoryKind::AllowAdded, "2a00:1450:1::/64".into()),
            ]
        );
        let page = store
            .allow_page(&PageQuery {
                after: None,
                limit: 2,
                prefix: None,
            })
            .unwrap();
        assert_eq!(page.total, 3);
        assert_eq!(page.rows.len(), 2);
        let rest = store
            .allow_page(&PageQuery {
                after: page.next,
                limit: 2,
                prefix: None,
            })
            .unwrap();
        assert_eq!(rest.rows.len(), 1);
        assert_eq!(rest.next, None);
        let comments: Vec<_> = page
            .rows
            .iter()
            .chain(&rest.rows)
            .map(|e| e.comment.clone())
            .collect();
        assert_eq!(comments, vec![Some("office".to_owned()); 3]);
    }
}
