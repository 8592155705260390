//! The edit log: each change of the operator's lists numbered, with where it
//! came from (`Source`), the list's size after it, and which change added an
//! entry (`Provenance`), as the lookup shows it.

use crate::domain::code::Coded;
use crate::domain::net::range::Cidr;
use crate::domain::operator_lists::chunk::{ChunkInfo, PROMOTED};
use crate::domain::operator_lists::list::Changes;
use crate::domain::operator_lists::list::ListKind;
use crate::store::operator_lists::chunks::Column;
use crate::store::operator_lists::tables::OperatorListTables;
use crate::store::sql::{Sql, SqlError, Value};

/// Where an edit or import came from, as the `edits` table records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Edit,
    Import,
    /// Entries an earlier version of the operator lists' object kept, taken over as they were.
    TakenOver,
    /// A batch of promotions and their decays from the holders' report shards.
    Promoted,
}

impl Source {
    fn code(self) -> &'static str {
        match self {
            Source::Edit => "edit",
            Source::Import => "import",
            Source::TakenOver => "taken-over",
            Source::Promoted => "promoted",
        }
    }
}

/// Which change added an entry, as the `edits` table keeps it; a promoted entry
/// says only that it is (`promoted`), with no change of the operator's, 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    pub edit: u64,
    /// When, in milliseconds.
    pub at_ms: Option<u64>,
    /// `edit`, `import`, `taken-over` or `promoted`.
    pub source: Option<String>,
    /// The acting operator key's name.
    pub by: Option<String>,
}

impl<S: Sql> OperatorListTables<S> {
    /// Records edit or import `id`: when, of which list, from where and by whom,
    /// what it changed, and the list's size after it.
    pub fn record_edit(
        &self,
        id: u64,
        kind: ListKind,
        (at_ms, by): (u64, Option<&str>),
        (source, changes): (Source, Changes),
        entries: usize,
    ) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO edits (id, kind, at, source, added, removed, entries, by_actor)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            &[
                Value::int(id),
                Value::text(kind.code()),
                Value::int(at_ms),
                Value::text(source.code()),
                Value::int(changes.added as u64),
                Value::int(changes.removed as u64),
                Value::int(entries as u64),
                Value::opt_text(by),
            ],
        )?;
        Ok(())
    }
    /// The entries of the live chunks `index` names that cover `address`, each with
    /// the edit or import that added it: at most the chunks whose span reaches the
    /// address are read, never the list.
    pub fn covering<A: Column>(
        &self,
        kind: ListKind,
        index: &[ChunkInfo<A>],
        address: A,
    ) -> Result<Vec<(Cidr<A>, Provenance)>, SqlError> {
        let before = index.partition_point(|info| info.start <= address);
        let mut found = Vec::new();
        for info in index[..before]
            .iter()
            .filter(|info| info.reach.is_some_and(|reach| reach >= address))
        {
            for kept in self.chunk(kind, info)? {
                if kept.range.first() <= address && address <= kept.range.last() {
                    found.push((kept.range, self.provenance(kept.edit)?));
                }
            }
        }
        Ok(found)
    }
    /// What the `edits` table says of edit `id`; a row dropped or never written
    /// (entries kept before edits were recorded) says only its number. A promoted
    /// entry has no row: the report shards' batches are no change of the operator's.
    fn provenance(&self, id: u64) -> Result<Provenance, SqlError> {
        if id == PROMOTED {
            return Ok(Provenance {
                source: Some(Source::Promoted.code().to_owned()),
                ..Provenance::default()
            });
        }
        let rows = self.sql.query(
            "SELECT at, source, by_actor FROM edits WHERE id = ?1",
            &[Value::int(id)],
        )?;
        let Some(row) = rows.first() else {
            return Ok(Provenance {
                edit: id,
                ..Provenance::default()
            });
        };
        Ok(Provenance {
            edit: id,
            at_ms: Some(row.int(0)?),
            source: Some(row.text(1)?),
            by: row.opt_text(2)?,
        })
    }
    /// The list's size after each of its last `count` changes, oldest first, with
    /// when each was made (milliseconds); changes recorded before sizes were are left out.
    pub fn sizes(&self, kind: ListKind, count: usize) -> Result<Vec<(u64, u64)>, SqlError> {
        let rows = self.sql.query(
            "SELECT at, entries FROM edits WHERE kind = ?1 AND entries IS NOT NULL
             ORDER BY id DESC LIMIT ?2",
            &[Value::text(kind.code()), Value::int(count as u64)],
        )?;
        let mut sizes = rows
            .iter()
            .map(|row| Ok((row.int(0)?, row.int(1)?)))
            .collect::<Result<Vec<_>, SqlError>>()?;
        sizes.reverse();
        Ok(sizes)
    }
    /// The highest number an edit or import was given, as far as anything kept
    /// says (a publication keeps the last it counted, which may have left no row):
    /// numbers are never given twice.
    pub fn last_edit(&self) -> Result<u64, SqlError> {
        let rows = self.sql.query(
            "SELECT max(m) FROM (
                SELECT max(id) AS m FROM edits UNION ALL SELECT max(rev) FROM chunks
                UNION ALL SELECT max(rev) FROM lists
            )",
            &[],
        )?;
        Ok(rows
            .first()
            .map(|row| row.opt_int(0))
            .transpose()?
            .flatten()
            .unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::range::Ipv4Range;

    use crate::domain::operator_lists::list::Changes;
    use crate::domain::operator_lists::list::FamilyEntries;
    use crate::store::operator_lists::tables::PublicationState;
    use crate::store::operator_lists::test_tables::*;

    #[test]
    fn the_lists_size_after_each_change_reads_back_oldest_first() {
        let tables = tables();
        for (id, entries) in [(1, 10), (2, 15), (3, 12)] {
            let changes = Changes {
                added: 5,
                removed: 0,
            };
            tables
                .record_edit(
                    id,
                    KIND,
                    (id * 1000, None),
                    (Source::Edit, changes),
                    entries,
                )
                .unwrap();
        }
        tables
            .record_edit(
                4,
                ListKind::Allow,
                (4000, None),
                (Source::Edit, Changes::default()),
                1,
            )
            .unwrap();
        assert_eq!(
            tables.sizes(KIND, 30).unwrap(),
            [(1000, 10), (2000, 15), (3000, 12)],
            "the list's sizes after each change, oldest first"
        );
        assert_eq!(
            tables.sizes(KIND, 2).unwrap(),
            [(2000, 15), (3000, 12)],
            "the last ones"
        );
    }

    #[test]
    fn the_entries_covering_an_address_come_with_the_change_that_added_them() {
        let tables = tables();
        let list = spread(150_000, 4, 0);
        let index = tables.install(KIND, &list, 1).unwrap();
        let wide = Ipv4Range::from_parts(0x0800_0000, 8).unwrap();
        let add = FamilyEntries::new(vec![wide]);
        let (_, index) = tables
            .edit(KIND, &index, (&add, &FamilyEntries::default()), 2)
            .unwrap();
        let changes = Changes {
            added: 1,
            removed: 0,
        };
        tables
            .record_edit(2, KIND, (5000, Some("alice")), (Source::Edit, changes), 1)
            .unwrap();
        // An address far into the list: the /8 starts in the first chunk, its /32 in a later one.
        let address = 0x0800_0000 + 4 * 100_000;
        let covering = tables.covering(KIND, &index, address).unwrap();
        let by_alice = Provenance {
            edit: 2,
            at_ms: Some(5000),
            source: Some("edit".into()),
            by: Some("alice".into()),
        };
        let installed = Provenance {
            edit: 1,
            ..Provenance::default()
        };
        assert_eq!(
            covering,
            [
                (wide, by_alice.clone()),
                (Ipv4Range::from_parts(address, 32).unwrap(), installed)
            ],
            "every entry covering the address, wherever its chunk starts, comes with the change that added it and who made it"
        );
        assert_eq!(
            tables.covering(KIND, &index, address + 1).unwrap(),
            [(wide, by_alice)],
            "between two addresses only the /8"
        );
        assert!(tables
            .covering(KIND, &index, 0x0900_0000)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn numbers_are_never_given_twice_even_those_only_a_publication_counted() {
        let tables = tables();
        assert_eq!(tables.last_edit().unwrap(), 0);
        tables.install(KIND, &spread(3, 4, 0), 5).unwrap();
        assert_eq!(tables.last_edit().unwrap(), 5);
        tables
            .record_edit(7, KIND, (0, None), (Source::Edit, Changes::default()), 0)
            .unwrap();
        assert_eq!(tables.last_edit().unwrap(), 7);
        let counted = PublicationState {
            rev: 9,
            ..PublicationState::default()
        };
        tables.save_publication(KIND, &counted).unwrap();
        assert_eq!(tables.last_edit().unwrap(), 9);
    }

    #[test]
    fn a_promoted_entry_is_looked_up_as_promoted_without_a_change() {
        let tables = tables();
        let index = tables.install(KIND, &spread(10, 4, 0), 1).unwrap();
        let wide = Ipv4Range::from_parts(0x0800_0000, 24).unwrap();
        let (_, index) = tables
            .promote(
                KIND,
                &index,
                (&FamilyEntries::new(vec![wide]), &FamilyEntries::default()),
                2,
            )
            .unwrap();
        let promoted = Provenance {
            edit: 0,
            at_ms: None,
            source: Some("promoted".into()),
            by: None,
        };
        let installed = Provenance {
            edit: 1,
            ..Provenance::default()
        };
        assert_eq!(
            tables.covering(KIND, &index, 0x0800_0004).unwrap(),
            [
                (wide, promoted.clone()),
                (Ipv4Range::from_parts(0x0800_0004, 32).unwrap(), installed)
            ]
        );
        assert_eq!(
            tables.covering(KIND, &index, 0x0800_0005).unwrap(),
            [(wide, promoted)]
        );
    }
}
