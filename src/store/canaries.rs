//! The canaries: kept in the directory's database, one row per entry, with the
//! number of the last edit; published at every edit as one record in KV
//! (`canaries` in `LICENSES`, in the import format), which every isolate that weighs a report reads
//! through KV's edge cache and its own memory, as it reads the operator keys: a
//! report is weighed against them without a call into the directory, and an edit
//! shows everywhere within `CACHE_SECONDS`.

use std::rc::Rc;

use serde::{Deserialize, Serialize};
use worker::Env;

use super::kv::{put_text, Binding, KvRead, Remembered};
use super::sql::{Sql, SqlError, Value};
use super::StoreError;
use crate::domain::net::address::Ipv6;
use crate::domain::network::canary::{Canaries, MAX_CANARIES};
use crate::domain::operator_lists::list::ListEntry;
use crate::domain::settings::Freshness;
use crate::domain::time::{Millis, UnixTime};
use crate::platform::meter::{self, Billable};

const BINDING: &str = "LICENSES";
const KEY: &str = "canaries";

/// The directory's schema step that keeps them: each entry by its first address
/// (sixteen bytes, IPv4 mapped) and prefix, so that they read in address order,
/// and the number of the last edit.
pub(super) const SCHEMA: &str = "
CREATE TABLE canaries (
    first BLOB NOT NULL, prefix INTEGER NOT NULL, entry TEXT NOT NULL, added_at INTEGER NOT NULL,
    PRIMARY KEY (first, prefix)
) WITHOUT ROWID;
CREATE TABLE canary_version (id INTEGER PRIMARY KEY CHECK (id = 0), version INTEGER NOT NULL);
";

thread_local! {
    /// The record as this isolate last read it.
    static KNOWN: Rc<Remembered<Rc<Canaries>>> = Rc::new(Remembered::new(1));
}

/// The canaries as published: the number of the edit that made them, and every entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Published {
    pub version: u64,
    pub entries: Vec<ListEntry>,
}

impl Published {
    /// The import format, as the operator exports it and KV keeps it:
    /// `# canaries, version <v>, <n> entries`, then one entry a line.
    pub fn text(&self) -> String {
        let mut text = format!(
            "# canaries, version {}, {} entries\n",
            self.version,
            self.entries.len()
        );
        for entry in &self.entries {
            text.push_str(&entry.to_string());
            text.push('\n');
        }
        text
    }

    /// The set `text` (as `text` writes it) holds; a line that is no entry is left out.
    fn read(text: &str) -> Canaries {
        let entries: Vec<ListEntry> = text
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| ListEntry::parse(line, Ipv6::On).ok())
            .collect();
        Canaries::new(&entries)
    }
}

/// The canaries as KV says within the edge cache's period, remembered by the
/// isolate for its own; none before the first edit.
pub async fn known(
    env: &Env,
    freshness: Freshness,
    now: Millis,
) -> Result<Rc<Canaries>, StoreError> {
    let remembered = KNOWN.with(Rc::clone);
    known_of(&Binding { env, name: BINDING }, &remembered, freshness, now).await
}

async fn known_of(
    kv: &impl KvRead,
    remembered: &Remembered<Rc<Canaries>>,
    freshness: Freshness,
    now: Millis,
) -> Result<Rc<Canaries>, StoreError> {
    if let Some(known) = remembered.get(KEY, now, freshness) {
        return Ok(known);
    }
    let text = kv.read(KEY).await?.unwrap_or_default();
    let known = Rc::new(Published::read(&String::from_utf8_lossy(&text)));
    remembered.put(KEY, known.clone(), now);
    Ok(known)
}

/// Writes the record: the directory's, at every edit.
pub async fn publish(env: &Env, published: &Published) -> Result<(), StoreError> {
    meter::count(Billable::KvWrite);
    put_text(&env.kv(BINDING)?, KEY, &published.text())?
        .execute()
        .await?;
    Ok(())
}

/// What an edit changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edited {
    pub added: usize,
    pub removed: usize,
}

/// The canaries' rows in the directory's database.
pub struct CanaryTable<S: Sql> {
    sql: S,
}

fn row_key(entry: &ListEntry) -> (Value, Value) {
    let (first, prefix) = match entry {
        ListEntry::V4(range) => (
            std::net::Ipv4Addr::from(range.first())
                .to_ipv6_mapped()
                .octets(),
            u64::from(range.prefix()) + 96,
        ),
        ListEntry::V6(range) => (
            std::net::Ipv6Addr::from(range.first()).octets(),
            u64::from(range.prefix()),
        ),
    };
    (Value::Blob(first.to_vec()), Value::int(prefix))
}

impl<S: Sql> CanaryTable<S> {
    pub fn new(sql: S) -> Self {
        Self { sql }
    }

    /// Every entry in address order, and the number of the last edit.
    pub fn published(&self) -> Result<Published, SqlError> {
        let version = self
            .sql
            .query("SELECT version FROM canary_version WHERE id = 0", &[])?
            .first()
            .map(|row| row.int(0))
            .transpose()?
            .unwrap_or(0);
        let entries = self
            .sql
            .query("SELECT entry FROM canaries ORDER BY first, prefix", &[])?
            .iter()
            .map(|row| {
                let text = row.text(0)?;
                ListEntry::parse(&text, Ipv6::On)
                    .map_err(|why| SqlError(format!("canary {text:?}: {why}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Published { version, entries })
    }

    /// Removes, then adds, every entry given or none: an entry that does not parse
    /// refuses the edit naming it, and so does a list that would hold more than
    /// `MAX_CANARIES`. Every write comes after every check, with no wait between.
    pub fn edit(
        &self,
        (add, remove): (&[String], &[String]),
        ipv6: Ipv6,
        now: UnixTime,
    ) -> Result<Result<Edited, String>, SqlError> {
        if add.len() + remove.len() > MAX_CANARIES {
            return Ok(Err(format!("at most {MAX_CANARIES} entries per request")));
        }
        let parse = |texts: &[String]| -> Result<Vec<ListEntry>, String> {
            texts
                .iter()
                .map(|text| {
                    ListEntry::parse(text.trim(), ipv6).map_err(|why| format!("{text:?}: {why}"))
                })
                .collect()
        };
        let (add, remove) = match (parse(add), parse(remove)) {
            (Ok(add), Ok(remove)) => (add, remove),
            (Err(why), _) | (_, Err(why)) => return Ok(Err(why)),
        };
        let held = |entry: &ListEntry| -> Result<bool, SqlError> {
            let (first, prefix) = row_key(entry);
            Ok(!self
                .sql
                .query(
                    "SELECT 1 FROM canaries WHERE first = ?1 AND prefix = ?2",
                    &[first, prefix],
                )?
                .is_empty())
        };
        let mut removed = std::collections::BTreeSet::new();
        for entry in &remove {
            if held(entry)? {
                removed.insert(entry.to_string());
            }
        }
        let mut added = std::collections::BTreeSet::new();
        for entry in &add {
            if !held(entry)? || removed.contains(&entry.to_string()) {
                added.insert(entry.to_string());
            }
        }
        let size = self
            .sql
            .query("SELECT count(*) FROM canaries", &[])?
            .first()
            .map(|row| row.int(0))
            .transpose()?
            .unwrap_or(0) as usize;
        if size - removed.len() + added.len() > MAX_CANARIES {
            return Ok(Err(format!(
                "the canaries would hold {} entries, past the {MAX_CANARIES} they hold at most",
                size - removed.len() + added.len()
            )));
        }
        for entry in &remove {
            let (first, prefix) = row_key(entry);
            self.sql.execute(
                "DELETE FROM canaries WHERE first = ?1 AND prefix = ?2",
                &[first, prefix],
            )?;
        }
        for entry in &add {
            let (first, prefix) = row_key(entry);
            self.sql.execute(
                "INSERT OR IGNORE INTO canaries (first, prefix, entry, added_at) VALUES (?1, ?2, ?3, ?4)",
                &[first, prefix, Value::text(entry.to_string()), Value::int(now.0)],
            )?;
        }
        let edited = Edited {
            added: added.len(),
            removed: removed.len(),
        };
        if edited != Edited::default() {
            self.sql.execute(
                "INSERT INTO canary_version (id, version) VALUES (0, 1)
                 ON CONFLICT (id) DO UPDATE SET version = version + 1",
                &[],
            )?;
        }
        Ok(Ok(edited))
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;
    use crate::store::kv::fake::FakeKv;
    use crate::store::sql::native::NativeSql;

    const NOW: UnixTime = UnixTime(1_795_262_400);

    fn table() -> CanaryTable<NativeSql> {
        let sql = NativeSql::new();
        sql.script(SCHEMA).unwrap();
        CanaryTable::new(sql)
    }

    fn texts(list: &[&str]) -> Vec<String> {
        list.iter().map(|text| text.to_string()).collect()
    }

    #[test]
    fn an_edit_removes_then_adds_and_counts_what_changed() {
        let table = table();
        let edit = |add: &[&str], remove: &[&str]| {
            table
                .edit((&texts(add), &texts(remove)), Ipv6::On, NOW)
                .unwrap()
        };
        assert_eq!(
            edit(
                &["45.67.89.0/24", " 46.1.2.9 ", "2a00:1450:4001:81b::/64"],
                &[]
            ),
            Ok(Edited {
                added: 3,
                removed: 0
            })
        );
        assert_eq!(
            edit(&["46.1.2.9"], &["9.9.9.9"]),
            Ok(Edited::default()),
            "nothing changed"
        );
        assert_eq!(
            edit(&[], &["46.1.2.9"]),
            Ok(Edited {
                added: 0,
                removed: 1
            })
        );
        let published = table.published().unwrap();
        let entries: Vec<String> = published.entries.iter().map(ToString::to_string).collect();
        assert_eq!(entries, ["45.67.89.0/24", "2a00:1450:4001:81b::/64"]);
        assert_eq!(published.version, 2);
        assert_eq!(
            edit(&["46.1.2.9", "not:an:address"], &[]),
            Err("\"not:an:address\": not an IP address or CIDR range without host bits".to_owned())
        );
        assert_eq!(
            table.published().unwrap(),
            published,
            "a refused edit changes nothing"
        );
    }

    #[test]
    fn the_list_holds_at_most_ten_thousand_entries() {
        let table = table();
        let many: Vec<String> = (0..MAX_CANARIES as u32)
            .map(|n| std::net::Ipv4Addr::from(0x2d00_0000 + n).to_string())
            .collect();
        assert_eq!(
            table.edit((&many, &[]), Ipv6::Off, NOW).unwrap(),
            Ok(Edited {
                added: MAX_CANARIES,
                removed: 0
            })
        );
        let one = texts(&["46.1.2.9"]);
        let refused = table
            .edit((&one, &[]), Ipv6::Off, NOW)
            .unwrap()
            .expect_err("an edit past the ten thousand canaries is refused whole");
        assert!(refused.contains("10001"), "{refused}");
        assert_eq!(table.published().unwrap().entries.len(), MAX_CANARIES);
        // One out, one in: still at the bound.
        let out = texts(&[many[0].as_str()]);
        assert_eq!(
            table.edit((&one, &out), Ipv6::Off, NOW).unwrap(),
            Ok(Edited {
                added: 1,
                removed: 1
            })
        );
    }

    #[test]
    fn an_isolate_reads_the_published_canaries_once_a_period() {
        let kv = FakeKv::default();
        let published = Published {
            version: 1,
            entries: vec![ListEntry::parse("45.67.89.0/24", Ipv6::Off).unwrap()],
        };
        kv.write(KEY, published.text().as_bytes());
        let remembered = Remembered::new(1);
        let freshness = Freshness::new(60).unwrap();
        let read = |at| {
            known_of(kv.at(Millis(at)), &remembered, freshness, Millis(at))
                .now_or_never()
                .unwrap()
                .unwrap()
        };
        assert!(read(1_000).holds("45.67.89.7".parse().unwrap()));
        kv.write(KEY, Published::default().text().as_bytes());
        assert!(
            read(2_000).holds("45.67.89.7".parse().unwrap()),
            "within the isolate's period"
        );
        assert!(read(40_000).is_empty(), "read again after it");
        assert_eq!(kv.reads.get(), 2);
    }
}
