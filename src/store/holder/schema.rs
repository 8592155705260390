//! The holder's object's database schema: every table its files keep (the list,
//! its history and counters, the allow list, feed tokens, reports, machines,
//! usage and the network's standing), as the steps that brought it here.

use crate::store::sql::{Sql, SqlError};

/// Step `n` brings the schema from version `n` to `n + 1`. Objects created before the
/// version was recorded are at version 0, and the first step is idempotent for them.
/// A change to the schema is a new step at the end, never an edit of an old one.
pub(super) const MIGRATIONS: [&str; 17] = [
    "CREATE TABLE IF NOT EXISTS entries (
        ip INTEGER PRIMARY KEY, added_at INTEGER NOT NULL, expires_at INTEGER, comment TEXT
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS entries_by_age ON entries (added_at, ip);
    CREATE INDEX IF NOT EXISTS entries_by_expiry ON entries (expires_at)
        WHERE expires_at IS NOT NULL;
    CREATE TABLE IF NOT EXISTS usage (
        id INTEGER PRIMARY KEY CHECK (id = 0), day INTEGER NOT NULL,
        added INTEGER NOT NULL, removed INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS standing (
        id INTEGER PRIMARY KEY CHECK (id = 0), revoked_at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS history (
        id INTEGER PRIMARY KEY, at INTEGER NOT NULL, change TEXT NOT NULL,
        ip INTEGER NOT NULL, client TEXT
    );",
    "ALTER TABLE usage ADD COLUMN refused INTEGER NOT NULL DEFAULT 0;",
    "CREATE TABLE feed_tokens (
        id TEXT PRIMARY KEY, digest TEXT NOT NULL, created_at INTEGER NOT NULL, last_used INTEGER
    );",
    // A history number is a feed's cursor: it must never be handed out twice, even
    // after every row was trimmed.
    "CREATE TABLE history_numbered (
        id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, change TEXT NOT NULL,
        ip INTEGER NOT NULL, client TEXT
    );
    INSERT INTO history_numbered (id, at, change, ip, client)
        SELECT id, at, change, ip, client FROM history;
    DROP TABLE history;
    ALTER TABLE history_numbered RENAME TO history;",
    // Addresses as 16 bytes, IPv4 mapped into IPv6 (`::ffff:a.b.c.d`), so that the
    // rows take IPv6 without another migration and sort in address order. The list's
    // size, kept by the database itself, so that the bound on entries and a page's
    // total cost one row rather than a scan. The history by address, so that a delta
    // finds an address's last change by index. History numbers are kept as they were,
    // the sequence included: they are the feeds' cursors.
    "CREATE TABLE entries_wide (
        ip BLOB PRIMARY KEY, added_at INTEGER NOT NULL, expires_at INTEGER, comment TEXT
    ) WITHOUT ROWID;
    INSERT INTO entries_wide (ip, added_at, expires_at, comment)
        SELECT unhex(printf('00000000000000000000ffff%08x', ip)), added_at, expires_at, comment
        FROM entries;
    DROP TABLE entries;
    ALTER TABLE entries_wide RENAME TO entries;
    CREATE INDEX entries_by_age ON entries (added_at, ip);
    CREATE INDEX entries_by_expiry ON entries (expires_at) WHERE expires_at IS NOT NULL;
    CREATE TABLE history_wide (
        id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, change TEXT NOT NULL,
        ip BLOB NOT NULL, client TEXT
    );
    INSERT INTO history_wide (id, at, change, ip, client)
        SELECT id, at, change, unhex(printf('00000000000000000000ffff%08x', ip)), client
        FROM history;
    INSERT INTO sqlite_sequence (name, seq)
        SELECT 'history_wide', seq FROM sqlite_sequence WHERE name = 'history'
        AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'history_wide');
    UPDATE sqlite_sequence SET seq = max(seq, coalesce(
        (SELECT seq FROM sqlite_sequence WHERE name = 'history'), 0))
        WHERE name = 'history_wide';
    DROP TABLE history;
    ALTER TABLE history_wide RENAME TO history;
    CREATE INDEX history_by_ip ON history (ip, id);
    CREATE TABLE list_size (id INTEGER PRIMARY KEY CHECK (id = 0), entries INTEGER NOT NULL);
    INSERT INTO list_size (id, entries) SELECT 0, count(*) FROM entries;
    CREATE TRIGGER entries_counted_in AFTER INSERT ON entries
        BEGIN UPDATE list_size SET entries = entries + 1 WHERE id = 0; END;
    CREATE TRIGGER entries_counted_out AFTER DELETE ON entries
        BEGIN UPDATE list_size SET entries = entries - 1 WHERE id = 0; END;",
    // A feed token's scope: the personal list, or all it may read. Tokens made
    // before read everything, as they could then.
    "ALTER TABLE feed_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'all';",
    // What a token's CrowdSec decisions say, where its pulls stand (the cursor of
    // its previous answer and when one last announced everything), and who pulled
    // last, what, and how often, for the dashboard.
    "ALTER TABLE feed_tokens ADD COLUMN decision TEXT NOT NULL DEFAULT 'ban';
    ALTER TABLE feed_tokens ADD COLUMN position TEXT;
    ALTER TABLE feed_tokens ADD COLUMN renewed_at INTEGER;
    ALTER TABLE feed_tokens ADD COLUMN user_agent TEXT;
    ALTER TABLE feed_tokens ADD COLUMN pulled TEXT;
    ALTER TABLE feed_tokens ADD COLUMN pull_interval INTEGER;",
    // The day's usage becomes a row a day: the same one write per change, and the
    // last 30 days kept for the dashboard's chart, with the day's expiries.
    "CREATE TABLE activity (
        day INTEGER PRIMARY KEY, added INTEGER NOT NULL DEFAULT 0,
        removed INTEGER NOT NULL DEFAULT 0, refused INTEGER NOT NULL DEFAULT 0,
        expired INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID;
    INSERT INTO activity (day, added, removed, refused)
        SELECT day, added, removed, refused FROM usage;
    DROP TABLE usage;",
    // The holder's own allow list: a row per range, by its first address (as the
    // entries' keys) and prefix, newest first for its pages; the day's adds and
    // removes of it beside the other counts; and what the license's record was
    // last told of it (whether it has entries), with the number of that telling.
    "CREATE TABLE allow (
        first BLOB NOT NULL, prefix INTEGER NOT NULL, added_at INTEGER NOT NULL, comment TEXT,
        PRIMARY KEY (first, prefix)
    ) WITHOUT ROWID;
    CREATE INDEX allow_by_age ON allow (added_at, first, prefix);
    ALTER TABLE activity ADD COLUMN allow_changes INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE allow_flag (
        id INTEGER PRIMARY KEY CHECK (id = 0), published INTEGER NOT NULL, version INTEGER NOT NULL
    );",
    // Reports of attackers: the day's count beside the others, the reports kept
    // until the alarm sends them to their shards, and the license this object is
    // of, which the alarm names them by.
    "ALTER TABLE activity ADD COLUMN reported INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE reports_out (
        id INTEGER PRIMARY KEY, ip BLOB NOT NULL, categories INTEGER NOT NULL, at INTEGER NOT NULL
    );
    CREATE TABLE identity (id INTEGER PRIMARY KEY CHECK (id = 0), license TEXT NOT NULL);",
    // The holder's CrowdSec engines ("machines"): each by its id, its login name
    // (which KV's login record is kept under), its label, its password's digest,
    // what its alerts do, its last login and alert, the scenarios its last login
    // named (a JSON array) and what its alerts came to.
    "CREATE TABLE machines (
        id TEXT PRIMARY KEY, machine_id TEXT NOT NULL UNIQUE, name TEXT, digest TEXT NOT NULL,
        ttl INTEGER NOT NULL, adds INTEGER NOT NULL, created_at INTEGER NOT NULL,
        last_login_at INTEGER, last_alert_at INTEGER, scenarios TEXT NOT NULL DEFAULT '[]',
        alerts INTEGER NOT NULL DEFAULT 0, reported INTEGER NOT NULL DEFAULT 0,
        added INTEGER NOT NULL DEFAULT 0, ignored INTEGER NOT NULL DEFAULT 0
    );",
    // What the holder's CrowdSec components report of themselves (usage
    // metrics): a feed token's bouncer its last report on the token's row, and
    // what it dropped a day, by token and day so that a token's days are a range
    // of the key; a machine's engine its last report on the machine's row.
    "ALTER TABLE feed_tokens ADD COLUMN usage_type TEXT;
    ALTER TABLE feed_tokens ADD COLUMN usage_name TEXT;
    ALTER TABLE feed_tokens ADD COLUMN usage_version TEXT;
    ALTER TABLE feed_tokens ADD COLUMN usage_os TEXT;
    ALTER TABLE feed_tokens ADD COLUMN usage_started_at INTEGER;
    ALTER TABLE feed_tokens ADD COLUMN usage_at INTEGER;
    ALTER TABLE feed_tokens ADD COLUMN usage_window INTEGER;
    ALTER TABLE feed_tokens ADD COLUMN usage_packets INTEGER;
    ALTER TABLE feed_tokens ADD COLUMN usage_bytes INTEGER;
    CREATE TABLE usage_days (
        token TEXT NOT NULL, day INTEGER NOT NULL, packets INTEGER NOT NULL,
        bytes INTEGER NOT NULL, PRIMARY KEY (token, day)
    ) WITHOUT ROWID;
    ALTER TABLE machines ADD COLUMN usage_version TEXT;
    ALTER TABLE machines ADD COLUMN usage_os TEXT;
    ALTER TABLE machines ADD COLUMN usage_started_at INTEGER;
    ALTER TABLE machines ADD COLUMN usage_at INTEGER;
    ALTER TABLE machines ADD COLUMN usage_datasources INTEGER;",
    // A machine's password digest is kept where its login reads it, the login
    // record in KV; the copy here was written and never read, a credential kept
    // twice for nothing.
    "ALTER TABLE machines DROP COLUMN digest;",
    // Independent reporters: each report kept with the network it came from (none
    // for those kept before, each a network of its own at its shard) and whether it
    // names a canary, the license with when it was issued (0 until a call says:
    // past any probation), the license's standing in the network with the number
    // of its last change and of the last one every shard was told, and each
    // change's audit row, kept until the directory has it (`audit::Forwarded`).
    "ALTER TABLE reports_out ADD COLUMN network TEXT;
    ALTER TABLE reports_out ADD COLUMN canary INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE identity ADD COLUMN licensed_at INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE network_standing (
        id INTEGER PRIMARY KEY CHECK (id = 0), suspended INTEGER NOT NULL, since INTEGER,
        canary TEXT, version INTEGER NOT NULL, told INTEGER NOT NULL
    );
    CREATE TABLE network_audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, detail TEXT NOT NULL,
        actor TEXT, actor_key TEXT, client TEXT
    );",
    // The holder's own Cloudflare edge: the link with its sync's state (JSON, whose
    // fields default) and the sealed token apart, and the items put in its list.
    "CREATE TABLE cloudflare (
        id INTEGER PRIMARY KEY CHECK (id = 0), link TEXT NOT NULL, token BLOB
    );
    CREATE TABLE cloudflare_items (item TEXT PRIMARY KEY, id TEXT) WITHOUT ROWID;
    CREATE INDEX cloudflare_items_by_id ON cloudflare_items (id);",
    // A feed token's feeds merged into the fewest CIDR blocks (`aggregate`).
    // Tokens made before serve the whole feed, as they did.
    "ALTER TABLE feed_tokens ADD COLUMN aggregate INTEGER NOT NULL DEFAULT 0;",
    // A feed token's feeds cut to the most relevant so many items (`maxItems`),
    // and how many its last cut pull left out. Tokens made before serve the
    // whole feed, as they did.
    "ALTER TABLE feed_tokens ADD COLUMN max_items INTEGER;
    ALTER TABLE feed_tokens ADD COLUMN left_out INTEGER;",
];

/// Brings the holder's schema to the newest version.
pub fn migrate(sql: &impl Sql) -> Result<(), SqlError> {
    crate::store::sql::migrate(sql, &MIGRATIONS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::holder::entry::{Entry, HistoryEvent, HistoryKind};
    use crate::domain::holder::list::{DailyUsage, ListStore, Operation};
    use crate::domain::page::PageQuery;
    use crate::domain::time::UnixTime;
    use crate::store::holder::list::HolderTables;
    use crate::store::holder::rule_tests::{listed_ip as ip, NOON};
    use crate::store::sql::native::NativeSql;
    use crate::store::sql::Value;

    #[test]
    fn the_days_usage_row_becomes_its_activity_row() {
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..7]).unwrap();
        sql.execute(
            "INSERT INTO usage (id, day, added, removed, refused) VALUES (0, 20000, 4, 2, 1)",
            &[],
        )
        .unwrap();
        migrate(&sql).unwrap();
        let store = HolderTables::new(sql);
        assert_eq!(
            store.usage().unwrap(),
            DailyUsage {
                day: 20000,
                added: 4,
                removed: 2,
                refused: 1,
                ..DailyUsage::default()
            }
        );
        assert_eq!(store.activity(20000).unwrap()[0].expired, 0);
    }

    #[test]
    fn a_holder_from_before_the_allow_list_keeps_its_list_day_and_history_and_gains_it() {
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..8]).unwrap();
        // What the code before wrote for one add: its row, its history, its day.
        let key = Value::Blob(ip("8.8.8.8").key().as_bytes().to_vec());
        sql.execute(
            "INSERT INTO entries (ip, added_at) VALUES (?1, ?2)",
            &[key.clone(), Value::int(NOON.0)],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO history (at, change, ip) VALUES (?1, 'added', ?2)",
            &[Value::int(NOON.0), key],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO activity (day, added) VALUES (?1, 1)",
            &[Value::int(NOON.utc_day())],
        )
        .unwrap();
        migrate(&sql).unwrap();
        let mut store = HolderTables::new(&sql);
        assert!(store.entry(ip("8.8.8.8")).unwrap().is_some());
        let usage = store.usage().unwrap();
        assert_eq!((usage.added, usage.allow_changes), (1, 0));
        let everything = PageQuery {
            after: None,
            limit: 10,
            prefix: None,
        };
        assert_eq!(store.history(&everything).unwrap().total, 1);
        assert!(store.allow_set().unwrap().is_empty());
        assert!(!store.published_allow_flag().unwrap());
        // The new table takes entries, and a removal of the old entry counts as ever.
        let mut set = store.allow_set().unwrap();
        let call = crate::domain::holder::allow::AllowCall {
            operation: Operation::Add,
            range: crate::domain::holder::allow_range::AllowRange::parse(
                "8.8.8.0/24",
                crate::domain::net::address::Ipv6::Off,
            )
            .unwrap()
            .range,
            comment: None,
            client: None,
        };
        let answer = crate::domain::holder::allow::perform_allow(
            &mut store,
            &mut set,
            &call,
            NOON,
            crate::domain::holder::list::Limits::default(),
        )
        .unwrap();
        assert_eq!(answer.usage.unwrap().removed, 1);
        assert_eq!(store.allow_set().unwrap(), set);
    }

    #[test]
    fn a_holder_from_before_machines_keeps_its_list_reports_and_tokens_and_gains_them() {
        use crate::domain::machines::credentials::{MachineSettings, NewMachine, NewMachineRecord};
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..10]).unwrap();
        // What the code before wrote: an entry, a report kept, a feed token, the license.
        let key = Value::Blob(ip("8.8.8.8").key().as_bytes().to_vec());
        sql.execute(
            "INSERT INTO entries (ip, added_at, expires_at) VALUES (?1, ?2, ?3)",
            &[key.clone(), Value::int(NOON.0), Value::int(NOON.0 + 600)],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO reports_out (ip, categories, at) VALUES (?1, 1, ?2)",
            &[key, Value::int(NOON.0)],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO feed_tokens (id, digest, created_at) VALUES ('ft_1', 'd', 1)",
            &[],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO identity (id, license) VALUES (0, 'lic_0123456789abcdef01234567')",
            &[],
        )
        .unwrap();
        migrate(&sql).unwrap();
        let store = HolderTables::new(&sql);
        let entry = store.entry(ip("8.8.8.8")).unwrap().unwrap();
        assert_eq!(entry.expires_at, Some(NOON.plus(600)));
        assert_eq!(store.kept_reports(10).unwrap().len(), 1);
        assert_eq!(store.feed_tokens(NOON).unwrap().len(), 1);
        assert!(store.license().unwrap().is_some());
        assert!(store.machines().unwrap().is_empty());
        let new = NewMachine::generate().unwrap();
        let machine = NewMachineRecord {
            id: new.id,
            machine_id: new.machine_id,
            name: None,
        };
        let defaults = MachineSettings::default();
        assert!(store.create_machine(&machine, defaults, NOON).unwrap());
        assert_eq!(store.machines().unwrap().len(), 1);
    }

    #[test]
    fn a_holder_whose_machines_kept_their_digests_keeps_the_machines_without_them() {
        use crate::domain::machines::credentials::MachineChange;
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..12]).unwrap();
        // A machine as the code before wrote it, its password's digest beside it.
        sql.execute(
            "INSERT INTO machines (id, machine_id, name, digest, ttl, adds, created_at)
             VALUES ('m_1', 'engine-1', 'edge', ?1, 3600, 1, ?2)",
            &[Value::text("d".repeat(64)), Value::int(NOON.0)],
        )
        .unwrap();
        migrate(&sql).unwrap();
        let columns = sql.query("SELECT name FROM pragma_table_info('machines')", &[]);
        let columns: Vec<String> = columns
            .unwrap()
            .iter()
            .map(|row| row.text(0).unwrap())
            .collect();
        assert!(
            !columns.contains(&"digest".to_owned()),
            "the machines keep no password digest after the migration: {columns:?}"
        );
        let store = HolderTables::new(&sql);
        let machines = store.machines().unwrap();
        assert_eq!(machines.len(), 1);
        assert_eq!(machines[0].machine_id, "engine-1");
        assert_eq!(machines[0].name.as_deref(), Some("edge"));
        assert_eq!((machines[0].ttl, machines[0].adds), (3600, true));
        let renamed = MachineChange {
            name: Some("renamed".to_owned()),
            ..MachineChange::default()
        };
        assert!(store.change_machine("m_1", &renamed).unwrap().is_some());
    }

    #[test]
    fn a_database_from_before_versioned_schemas_is_migrated_with_its_data() {
        let sql = NativeSql::new();
        // The first schema, as objects created before the version table had it.
        sql.script(MIGRATIONS[0]).unwrap();
        sql.execute(
            "INSERT INTO entries (ip, added_at) VALUES (134744072, 5)",
            &[],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO history (id, at, change, ip) VALUES (7, 5, 'added', 134744072)",
            &[],
        )
        .unwrap();
        migrate(&sql).unwrap();
        migrate(&sql).unwrap();
        let mut store = HolderTables::new(sql);
        assert_eq!(
            store.entry(ip("8.8.8.8")).unwrap().map(|e| e.added_at),
            Some(UnixTime(5))
        );
        assert_eq!(
            store
                .history(&PageQuery {
                    after: None,
                    limit: 10,
                    prefix: None
                })
                .unwrap()
                .total,
            1
        );
        assert_eq!(
            store.usage().unwrap(),
            DailyUsage::default(),
            "the refused column came with its default"
        );
        assert_eq!(
            store.size().unwrap(),
            1,
            "the size counts the rows already there"
        );
        assert_eq!(
            store.changes().unwrap(),
            (7, 7),
            "history numbers, the feeds' cursors, are kept"
        );
        store
            .insert(&Entry {
                ip: ip("8.8.4.4"),
                added_at: UnixTime(6),
                expires_at: None,
                comment: None,
            })
            .unwrap();
        store
            .insert(&Entry {
                ip: ip("8.8.4.4"),
                added_at: UnixTime(7),
                expires_at: None,
                comment: Some("again".into()),
            })
            .unwrap();
        store.delete(ip("8.8.8.8")).unwrap();
        assert_eq!(
            store.size().unwrap(),
            1,
            "kept by the triggers; storing an address again is not a second entry"
        );
        // The holder made before IPv6 takes an IPv6 entry beside its IPv4 ones.
        let v6 = ip("2a00:1450:4001:80b::200e");
        store
            .insert(&Entry {
                ip: v6,
                added_at: UnixTime(8),
                expires_at: None,
                comment: None,
            })
            .unwrap();
        assert_eq!(store.entry(v6).unwrap().map(|e| e.ip), Some(v6));
        let page = store
            .list(
                &PageQuery {
                    after: None,
                    limit: 10,
                    prefix: None,
                },
                UnixTime(9),
            )
            .unwrap();
        assert_eq!(
            page.rows
                .iter()
                .map(|e| e.ip.to_string())
                .collect::<Vec<_>>(),
            ["2a00:1450:4001:80b::200e", "8.8.4.4"]
        );
        assert_eq!(page.total, 2);
        let version = store
            .sql()
            .query("SELECT version FROM schema_version", &[])
            .unwrap();
        assert_eq!(version[0].int(0).unwrap(), MIGRATIONS.len() as u64);
    }

    #[test]
    fn widening_the_addresses_keeps_the_history_numbers_even_of_trimmed_rows() {
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..4]).unwrap();
        for n in 1..=3 {
            sql.execute(
                "INSERT INTO history (at, change, ip) VALUES (?1, 'added', 134744072)",
                &[Value::int(n)],
            )
            .unwrap();
        }
        sql.execute("DELETE FROM history", &[]).unwrap();
        migrate(&sql).unwrap();
        let mut store = HolderTables::new(sql);
        assert_eq!(store.changes().unwrap(), (4, 3));
        store
            .record(&HistoryEvent {
                at: UnixTime(9),
                change: HistoryKind::Added,
                ip: ip("8.8.8.8").into(),
                client: None,
            })
            .unwrap();
        assert_eq!(
            store.changes().unwrap(),
            (4, 4),
            "number 4 is the next, never 1"
        );
    }
}
