//! A page of the audit log as one statement: the most selective filter given is
//! the range of its index, the others are looked for within it, a bounded
//! number of rows passed over a page.

use crate::domain::access::audit::AuditFilter;
use crate::domain::access::audit::AuditKind;
use crate::domain::access::audit::AuditRow;
use crate::domain::access::audit::KeyFilter;
use crate::domain::access::operator::ADMIN_TOKEN_NAME;
use crate::domain::code::Coded;
use crate::domain::time::Millis;
use crate::store::sql::{Row, SqlError, Value, MAX_EXACT_INTEGER};

/// Audit rows a page of the log passes over at most when two filters are given
/// (one is the range of its index, the other is looked for within it): a page
/// that comes short goes on from the last row passed over.
pub const AUDIT_SCANNED_ROWS: u64 = 10_000;

/// Where a page of the audit log goes on from: the last row passed over,
/// newest first (by the time of what it records, then the order it was written
/// in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditCursor {
    /// Milliseconds since the epoch.
    pub at: u64,
    pub id: u64,
}

impl AuditCursor {
    pub fn encode(&self) -> String {
        format!("{}.{}", self.at, self.id)
    }

    pub fn decode(text: &str) -> Option<Self> {
        let (at, id) = text.split_once('.')?;
        let exact = |n: u64| (n <= MAX_EXACT_INTEGER as u64).then_some(n);
        Some(Self {
            at: exact(at.parse().ok()?)?,
            id: exact(id.parse().ok()?)?,
        })
    }
}

/// A page of the log as one statement: the index whose range it reads, the
/// condition that makes that range, the conditions looked for within it, and
/// their arguments.
pub(super) struct AuditQuery {
    index: &'static str,
    range: Vec<String>,
    pub(super) within: Vec<String>,
    pub(super) args: Vec<Value>,
}

impl AuditQuery {
    /// `filter`'s page after `after`: the most selective filter given (a
    /// license, a key, an action, every change) is the range of its index,
    /// with the time and the cursor; the others are looked for within it.
    pub(super) fn of(filter: &AuditFilter, after: Option<&AuditCursor>) -> Self {
        let mut query = Self {
            index: "audit_by_when",
            range: Vec::new(),
            within: Vec::new(),
            args: Vec::new(),
        };
        let mut equal = Vec::new();
        if let Some(license) = &filter.license {
            equal.push(("audit_by_target", "target", Value::text(license)));
        }
        if let Some(KeyFilter::Key(id)) = &filter.key {
            equal.push(("audit_by_key", "actor_key", Value::text(id)));
        }
        match filter.kind {
            Some(AuditKind::Action(action)) => {
                equal.push(("audit_by_action", "action", Value::text(action.code())));
            }
            Some(AuditKind::Changes) => {
                equal.push(("audit_by_refusal", "refusal", Value::int(0)));
            }
            None => {}
        }
        if let Some(KeyFilter::AdminToken) = &filter.key {
            // The admin token's rows are changes (its calls are never refused)
            // without a key's id: looked for among the changes.
            equal.push(("audit_by_refusal", "refusal", Value::int(0)));
            query.within.push("actor_key IS NULL".to_owned());
            let name = query.bind(Value::text(ADMIN_TOKEN_NAME));
            query.within.push(format!("actor = {name}"));
        }
        for (n, (index, column, value)) in equal.into_iter().enumerate() {
            let place = query.bind(value);
            let condition = format!("{column} = {place}");
            if n == 0 {
                query.index = index;
                query.range.push(condition);
            } else {
                query.within.push(condition);
            }
        }
        if let Some(from) = filter.from {
            let place = query.bind(Value::int(from));
            query.range.push(format!("at >= {place}"));
        }
        // One end to the range: the cursor, a row before `to` itself, ends it
        // more closely than `to` does.
        match (after, filter.to) {
            (Some(after), _) => {
                let at = query.bind(Value::int(after.at));
                let id = query.bind(Value::int(after.id));
                query.range.push(format!("(at, id) < ({at}, {id})"));
            }
            (None, Some(to)) => {
                let place = query.bind(Value::int(to));
                query.range.push(format!("at < {place}"));
            }
            (None, None) => {}
        }
        query
    }

    fn bind(&mut self, value: Value) -> String {
        self.args.push(value);
        format!("?{}", self.args.len())
    }

    fn conditions(conditions: &[String]) -> String {
        match conditions {
            [] => "1".to_owned(),
            _ => conditions.join(" AND "),
        }
    }

    /// The rows of the page, newest first: at most `limit` and one more, to
    /// know whether the page goes on. Filters looked for within the range
    /// pass over at most `AUDIT_SCANNED_ROWS` of it.
    pub(super) fn rows(&mut self, limit: u32) -> String {
        let (index, range) = (self.index, Self::conditions(&self.range));
        let newest = "ORDER BY at DESC, id DESC";
        let limit = self.bind(Value::int(u64::from(limit) + 1));
        if self.within.is_empty() {
            return format!(
                "SELECT {AUDIT_COLUMNS} FROM audit INDEXED BY {index} WHERE {range} {newest}
                 LIMIT {limit}"
            );
        }
        let scanned = self.bind(Value::int(AUDIT_SCANNED_ROWS));
        let within = Self::conditions(&self.within);
        format!(
            "SELECT {AUDIT_COLUMNS} FROM (
                SELECT * FROM audit INDEXED BY {index} WHERE {range} {newest} LIMIT {scanned}
             ) WHERE {within} {newest} LIMIT {limit}"
        )
    }

    /// The last row a page that came short passed over, and the one after it:
    /// where the next page goes on, if there is one.
    pub(super) fn passed_over(&mut self) -> String {
        let (index, range) = (self.index, Self::conditions(&self.range));
        let last = self.bind(Value::int(AUDIT_SCANNED_ROWS - 1));
        format!(
            "SELECT at, id FROM audit INDEXED BY {index} WHERE {range}
             ORDER BY at DESC, id DESC LIMIT 2 OFFSET {last}"
        )
    }
}

const AUDIT_COLUMNS: &str = "id, at, action, actor, client, target, detail, count, actor_key";

pub(super) fn audit_row_of(row: &Row) -> Result<AuditRow, SqlError> {
    Ok(AuditRow {
        id: row.int(0)?,
        at: Millis(row.int(1)?).unix().to_rfc3339(),
        action: row.text(2)?,
        actor: row.opt_text(3)?,
        client: row.opt_text(4)?,
        target: row.text(5)?,
        detail: row.text(6)?,
        count: row.int(7)?,
        key: row.opt_text(8)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::access::audit::Action;
    use crate::domain::access::audit::AuditFilter;
    use crate::domain::time::Millis;

    use crate::store::directory::test_directory::*;

    #[test]
    fn the_log_is_filtered_by_kind_key_license_and_time_newest_first_a_page_at_a_time() {
        let directory = directory();
        filed_log(&directory);
        let shown = |filter: AuditFilter| page(&directory, &filter, None, 10).0;
        assert_eq!(
            shown(filter(Some("changes"), None, None)),
            ["6000", "5000", "4000", "2000", "1000"]
        );
        assert_eq!(shown(filter(Some("refused"), None, None)), ["3000"]);
        assert_eq!(shown(filter(Some("license.revoked"), None, None)), ["5000"]);
        assert_eq!(
            shown(filter(None, Some(ALICE), None)),
            ["6000", "5000", "3000", "2000"]
        );
        assert_eq!(
            shown(filter(None, Some("ADMIN_TOKEN"), None)),
            ["4000", "1000"],
            "the admin token's changes alone, none of a key's"
        );
        assert_eq!(shown(filter(None, None, Some(L1))), ["2000", "1000"]);
        let between = AuditFilter {
            from: Some(2_000),
            to: Some(5_000),
            ..EVERYTHING
        };
        assert_eq!(shown(between), ["4000", "3000", "2000"]);
        assert_eq!(
            shown(filter(Some("changes"), Some(ALICE), None)),
            ["6000", "5000", "2000"],
            "two filters at once"
        );
        // A page at a time, each going on from the last.
        let changes = filter(Some("changes"), None, None);
        let (first, next) = page(&directory, &changes, None, 2);
        assert_eq!(first, ["6000", "5000"]);
        let next = AuditCursor::decode(&next.unwrap().encode()).unwrap();
        let (second, next) = page(&directory, &changes, Some(&next), 2);
        assert_eq!(second, ["4000", "2000"]);
        let (third, end) = page(&directory, &changes, next.as_ref(), 2);
        assert_eq!((third, end), (vec!["1000".to_owned()], None));
        assert_eq!(AuditCursor::decode("1.x"), None);
        assert_eq!(AuditCursor::decode("9007199254740992.1"), None);
    }

    #[test]
    fn each_filter_reads_a_range_of_its_own_index_newest_first() {
        let directory = directory();
        filed_log(&directory);
        let after = AuditCursor { at: 5_500, id: 9 };
        let timed = AuditFilter {
            from: Some(1_500),
            to: Some(5_500),
            ..EVERYTHING
        };
        for (filter, index) in [
            (EVERYTHING, "audit_by_when"),
            (timed, "audit_by_when"),
            (filter(Some("changes"), None, None), "audit_by_refusal"),
            (filter(Some("refused"), None, None), "audit_by_action"),
            (filter(None, Some(ALICE), None), "audit_by_key"),
            (filter(None, Some("ADMIN_TOKEN"), None), "audit_by_refusal"),
            (filter(None, None, Some(L1)), "audit_by_target"),
            (
                filter(Some("changes"), Some(ALICE), Some(L1)),
                "audit_by_target",
            ),
        ] {
            for cursor in [None, Some(&after)] {
                let mut query = AuditQuery::of(&filter, cursor);
                let plan = directory.sql.plan(&query.rows(10), &query.args);
                assert!(
                    plan.contains(index),
                    "{filter:?}: not read by its own index: {plan}"
                );
                if query.within.is_empty() {
                    assert!(!plan.contains("TEMP B-TREE"), "{filter:?}: {plan}");
                }
                if filter != EVERYTHING {
                    assert!(
                        plan.contains("SEARCH"),
                        "a range, not a scan: {filter:?}: {plan}"
                    );
                }
                // And it answers: every row it shows is one the filter lets through.
                assert!(directory.audit(&filter, cursor, 10, Millis(10_000)).is_ok());
            }
        }
    }

    #[test]
    fn a_page_of_two_filters_passes_over_a_bounded_number_of_rows_and_goes_on_from_there() {
        let directory = directory();
        let (change, at) = change_at(Action::ListEdited, "global list", Some(ALICE), 1);
        directory.record(&change, at).unwrap();
        for n in 0..AUDIT_SCANNED_ROWS + 5 {
            let mut refused = change.clone();
            refused.action = Action::Refused;
            refused.target = format!("GET /admin/x{n}");
            directory.record(&refused, Millis(2 + n)).unwrap();
        }
        let mine = filter(Some("changes"), Some(ALICE), None);
        let (found, next) = page(&directory, &mine, None, 10);
        assert!(
            found.is_empty(),
            "the one change is past the rows passed over"
        );
        let next = next.expect("the page goes on");
        assert_eq!(next.at, 2 + 5, "from the last row passed over");
        let (found, end) = page(&directory, &mine, Some(&next), 10);
        assert_eq!((found, end), (vec!["1".to_owned()], None));
    }
}
