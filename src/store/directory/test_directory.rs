//! What the directory's tests share: a fresh directory, its licenses and
//! audit rows made up, and a page of the log read back.

use crate::domain::access::audit::Action;
use crate::domain::access::audit::AuditFilter;
use crate::domain::access::audit::Forwarded;
use crate::domain::access::audit::Record;
use crate::domain::access::audit::Stamp;
use crate::domain::access::operator::ADMIN_TOKEN_NAME;
use crate::domain::time::Millis;
use crate::store::directory::audit_query::AuditCursor;
use crate::store::directory::licenses::LicenseRow;
use crate::store::directory::Directory;
use crate::store::sql::native::NativeSql;

/// The log unfiltered.
pub const EVERYTHING: AuditFilter = AuditFilter {
    kind: None,
    key: None,
    license: None,
    from: None,
    to: None,
};

pub fn directory() -> Directory<NativeSql> {
    let directory = Directory::new(NativeSql::new());
    directory.migrate().unwrap();
    directory
}

pub fn id(n: u64) -> String {
    format!("lic_{n:024x}")
}

pub fn labels(page: &[LicenseRow]) -> Vec<&str> {
    page.iter().map(|row| row.label.as_str()).collect()
}

pub fn refusal(client: &str) -> Record {
    Record {
        action: Action::Refused,
        target: "GET /admin/status".into(),
        detail: "401".into(),
        by: Stamp {
            actor: None,
            key: None,
            client: Some(client.into()),
        },
    }
}

pub fn forwarded(seq: u64, detail: &str) -> Forwarded {
    let mut record = refusal("203.0.113.1");
    record.action = Action::ListEdited;
    record.target = "global list".into();
    record.detail = detail.into();
    Forwarded {
        from: "lists".into(),
        seq,
        at: 5_000 + seq,
        record,
    }
}

/// A change at `at` milliseconds, its detail the time, by a key or the admin token.
pub fn change_at(action: Action, target: &str, key: Option<&str>, at: u64) -> (Record, Millis) {
    let record = Record {
        action,
        target: target.into(),
        detail: at.to_string(),
        by: Stamp {
            actor: Some(key.map_or(ADMIN_TOKEN_NAME, |_| "alice").into()),
            key: key.map(str::to_owned),
            client: Some("203.0.113.1".into()),
        },
    };
    (record, Millis(at))
}

pub const ALICE: &str = "key_00000000000000a1";

pub const L1: &str = "lic_000000000000000000000001";

/// A log of each kind of row, by alice's key and the admin token, on two licenses.
pub fn filed_log(directory: &Directory<NativeSql>) {
    let refused = Record {
        action: Action::Refused,
        target: "GET /admin/status".into(),
        detail: "3000".into(),
        by: Stamp {
            actor: Some("alice".into()),
            key: Some(ALICE.into()),
            client: Some("203.0.113.1".into()),
        },
    };
    let rows = [
        change_at(Action::LicenseCreated, L1, None, 1_000),
        change_at(Action::LicenseLabelled, L1, Some(ALICE), 2_000),
        (refused, Millis(3_000)),
        change_at(Action::KeyCreated, "key_00000000000000b2", None, 4_000),
        change_at(
            Action::LicenseRevoked,
            "lic_000000000000000000000002",
            Some(ALICE),
            5_000,
        ),
        change_at(Action::ListEdited, "global list", Some(ALICE), 6_000),
    ];
    for (record, at) in &rows {
        directory.record(record, *at).unwrap();
    }
}

/// The details (each row's time) of a page, and where the next goes on.
pub fn page(
    directory: &Directory<NativeSql>,
    filter: &AuditFilter,
    after: Option<&AuditCursor>,
    limit: u32,
) -> (Vec<String>, Option<AuditCursor>) {
    let (rows, next) = directory
        .audit(filter, after, limit, Millis(10_000))
        .unwrap();
    (rows.into_iter().map(|row| row.detail).collect(), next)
}

pub fn filter(kind: Option<&str>, key: Option<&str>, license: Option<&str>) -> AuditFilter {
    AuditFilter::parse(kind, key, license, (None, None)).unwrap()
}
