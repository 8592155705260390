//! A holder's Cloudflare connection in its object's database: one row for the
//! link and how its sync stands (the sync's state as JSON, whose fields default,
//! so that older records read), and one row per item put in the list, with
//! Cloudflare's id for it once a page of the list told it.

use crate::domain::cloudflare::item::ItemText;
use crate::domain::cloudflare::link::{Link, SyncState};
use crate::domain::cloudflare::push::PutItem;
use crate::domain::net::address::Listed;
use crate::domain::time::UnixTime;
use crate::store::holder::list::HolderTables;
use crate::store::holder::rows::{ip_of, live};
use crate::store::sql::{Sql, SqlError, Value};

fn json<T: serde::Serialize>(value: &T) -> Result<String, SqlError> {
    serde_json::to_string(value).map_err(|e| SqlError(format!("a Cloudflare link: {e}")))
}

impl<S: Sql> HolderTables<S> {
    /// The holder's connection, if they have one.
    pub fn cloudflare_link(&self) -> Result<Option<Link>, SqlError> {
        let rows = self
            .sql()
            .query("SELECT link, token FROM cloudflare WHERE id = 0", &[])?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let mut link: Link = serde_json::from_str(&row.text(0)?)
            .map_err(|e| SqlError(format!("a Cloudflare link: {e}")))?;
        link.token = row.opt_blob(1)?.unwrap_or_default().to_vec();
        Ok(Some(link))
    }

    /// Keeps `link`, the token in a column of its own (never in the JSON).
    pub fn save_cloudflare_link(&self, link: &Link) -> Result<(), SqlError> {
        let mut shown = link.clone();
        shown.token = Vec::new();
        self.sql().execute(
            "INSERT INTO cloudflare (id, link, token) VALUES (0, ?1, ?2)
             ON CONFLICT (id) DO UPDATE SET link = excluded.link, token = excluded.token",
            &[Value::text(json(&shown)?), Value::Blob(link.token.clone())],
        )?;
        Ok(())
    }

    /// Only the sync's state changed.
    pub fn save_cloudflare_sync(&self, sync: &SyncState) -> Result<(), SqlError> {
        self.sql().execute(
            "UPDATE cloudflare SET link = json_set(link, '$.sync', json(?1)) WHERE id = 0",
            &[Value::text(json(sync)?)],
        )?;
        Ok(())
    }

    /// Forgets the connection, its token and what was put in its list.
    pub fn forget_cloudflare(&self) -> Result<(), SqlError> {
        self.sql().execute("DELETE FROM cloudflare", &[])?;
        self.sql().execute("DELETE FROM cloudflare_items", &[])?;
        Ok(())
    }

    /// How many items are put.
    pub fn cloudflare_count(&self) -> Result<u64, SqlError> {
        let rows = self
            .sql()
            .query("SELECT count(*) FROM cloudflare_items", &[])?;
        rows.first().map_or(Ok(0), |row| row.int(0))
    }

    /// Items Cloudflare added: their ids come with the next reading of the list.
    pub fn cloudflare_added(&self, items: &[String]) -> Result<(), SqlError> {
        for item in items {
            self.sql().execute(
                "INSERT INTO cloudflare_items (item, id) VALUES (?1, NULL) ON CONFLICT (item) DO NOTHING",
                &[Value::text(item.as_str())],
            )?;
        }
        Ok(())
    }

    /// Items Cloudflare removed, by their ids.
    pub fn cloudflare_removed(&self, ids: &[String]) -> Result<(), SqlError> {
        for id in ids {
            self.sql().execute(
                "DELETE FROM cloudflare_items WHERE id = ?1",
                &[Value::text(id.as_str())],
            )?;
        }
        Ok(())
    }

    /// Forgets what was put: another list's items are read before the first push.
    pub fn cloudflare_forget_items(&self) -> Result<(), SqlError> {
        self.sql().execute("DELETE FROM cloudflare_items", &[])?;
        Ok(())
    }

    /// A page a reading of the list found, compared with what is put: a row is
    /// written only for an item not put yet (added by hand) or of another id, so
    /// that an hourly reading of a list that did not change writes nothing.
    pub fn cloudflare_found(&self, found: &[PutItem]) -> Result<(), SqlError> {
        for item in found {
            let kept = self.sql().query(
                "SELECT id FROM cloudflare_items WHERE item = ?1",
                &[Value::text(item.item.0.as_str())],
            )?;
            let same = match kept.first() {
                Some(row) => row.opt_text(0)? == item.id,
                None => false,
            };
            if !same {
                self.sql().execute(
                    "INSERT INTO cloudflare_items (item, id) VALUES (?1, ?2)
                     ON CONFLICT (item) DO UPDATE SET id = excluded.id",
                    &[
                        Value::text(item.item.0.as_str()),
                        Value::opt_text(item.id.as_deref()),
                    ],
                )?;
            }
        }
        Ok(())
    }

    /// Every item put, in their text's order (bytewise, as `str`'s), a page of
    /// `limit` at a time given to `each`, which may forget items of its page.
    pub fn cloudflare_items_by_page(
        &self,
        limit: usize,
        mut each: impl FnMut(Vec<PutItem>) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        let mut after = String::new();
        loop {
            let page = self.cloudflare_items_after(&after, limit)?;
            let full = page.len() == limit;
            if let Some(last) = page.last() {
                after.clone_from(&last.item.0);
            }
            each(page)?;
            if !full {
                return Ok(());
            }
        }
    }

    /// A page of the items put, in their text's order, after `after`.
    fn cloudflare_items_after(&self, after: &str, limit: usize) -> Result<Vec<PutItem>, SqlError> {
        self.sql()
            .query(
                "SELECT item, id FROM cloudflare_items WHERE item > ?1 ORDER BY item LIMIT ?2",
                &[Value::text(after), Value::int(limit as u64)],
            )?
            .iter()
            .map(|row| {
                Ok(PutItem {
                    item: ItemText(row.text(0)?),
                    id: row.opt_text(1)?,
                })
            })
            .collect()
    }

    /// An item put that the list no longer holds (deleted by hand).
    pub fn cloudflare_gone(&self, item: &str) -> Result<(), SqlError> {
        self.sql().execute(
            "DELETE FROM cloudflare_items WHERE item = ?1",
            &[Value::text(item)],
        )?;
        Ok(())
    }

    /// A page of the live entries in address order, after `after` (a key).
    pub fn entries_by_address(
        &self,
        after: Option<&[u8]>,
        limit: usize,
        now: UnixTime,
    ) -> Result<Vec<(Listed, UnixTime, Vec<u8>)>, SqlError> {
        let rows = self.sql().query(
            &format!(
                "SELECT ip, added_at FROM entries WHERE {} AND ip > ?2 ORDER BY ip LIMIT ?3",
                live("expires_at")
            ),
            &[
                Value::int(now.0),
                Value::Blob(after.unwrap_or_default().to_vec()),
                Value::int(limit as u64),
            ],
        )?;
        let mut page = Vec::with_capacity(rows.len());
        for row in &rows {
            let key = row.blob(0)?.to_vec();
            if let Some(listed) = ip_of(&key) {
                page.push((listed, UnixTime(row.int(1)?), key));
            }
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::cloudflare::connection::{AccountId, ListName};
    use crate::domain::feed::feed_token::Scope;
    use crate::store::holder::schema::migrate;
    use crate::store::sql::native::NativeSql;

    fn link() -> Link {
        Link {
            account: AccountId::parse("0123456789abcdef0123456789abcdef").unwrap(),
            list_name: ListName::parse("greylist").unwrap(),
            list_id: "l".repeat(32),
            zone: None,
            rule_id: None,
            token: vec![1, 2, 3],
            token_last_four: "abcd".to_owned(),
            scope: Scope::Personal,
            max_items: 10,
            connected_at: UnixTime(5),
            sync: SyncState::default(),
        }
    }

    #[test]
    fn a_revocation_forgets_the_link_its_sealed_token_and_its_items() {
        let sql = NativeSql::new();
        migrate(&sql).unwrap();
        let store = HolderTables::new(&sql);
        store.save_cloudflare_link(&link()).unwrap();
        store.cloudflare_added(&["1.1.1.1".to_owned()]).unwrap();
        assert!(
            store.cloudflare_link().unwrap().is_some() && store.cloudflare_count().unwrap() == 1
        );
        store.revoke(UnixTime(9)).unwrap();
        assert!(
            store.cloudflare_link().unwrap().is_none() && store.cloudflare_count().unwrap() == 0,
            "a revoked license's Cloudflare link or its items were kept"
        );
    }

    #[test]
    fn a_link_is_kept_with_its_sealed_token_apart_and_forgotten_whole() {
        let sql = NativeSql::new();
        migrate(&sql).unwrap();
        let store = HolderTables::new(&sql);
        assert_eq!(store.cloudflare_link().unwrap(), None);
        store.save_cloudflare_link(&link()).unwrap();
        let kept = sql.query("SELECT link FROM cloudflare", &[]).unwrap();
        assert!(
            !kept[0].text(0).unwrap().contains("[1,2,3]"),
            "the token is not in the JSON"
        );
        let sync = SyncState {
            dirty: true,
            items: 3,
            ..SyncState::default()
        };
        store.save_cloudflare_sync(&sync).unwrap();
        assert_eq!(
            store.cloudflare_link().unwrap(),
            Some(Link { sync, ..link() })
        );
        store
            .cloudflare_added(&["1.1.1.1".to_owned(), "2.2.2.2".to_owned()])
            .unwrap();
        let before = sql
            .query("SELECT count(*) FROM cloudflare_items", &[])
            .unwrap();
        assert_eq!(before[0].int(0).unwrap(), 2);
        let found = [PutItem {
            item: ItemText("1.1.1.1".to_owned()),
            id: Some("i1".to_owned()),
        }];
        store.cloudflare_found(&found).unwrap();
        let items = |after: &str| -> Vec<(String, Option<String>)> {
            let page = store.cloudflare_items_after(after, 10).unwrap();
            page.into_iter().map(|put| (put.item.0, put.id)).collect()
        };
        assert_eq!(
            items(""),
            [
                ("1.1.1.1".to_owned(), Some("i1".to_owned())),
                ("2.2.2.2".to_owned(), None)
            ]
        );
        assert_eq!(
            items("1.1.1.1"),
            [("2.2.2.2".to_owned(), None)],
            "a page after an item"
        );
        // Paged one at a time, each page may forget its items: every one is still met once.
        let mut met = Vec::new();
        store
            .cloudflare_items_by_page(1, |page| {
                met.extend(page.iter().map(|put| put.item.0.clone()));
                page.iter()
                    .filter(|put| put.id.is_none())
                    .try_for_each(|put| store.cloudflare_gone(&put.item.0))
            })
            .unwrap();
        assert_eq!(met, ["1.1.1.1", "2.2.2.2"]);
        assert_eq!(items("").len(), 1, "the item without an id forgotten");
        let changes = || {
            sql.query("SELECT total_changes()", &[]).unwrap()[0]
                .int(0)
                .unwrap()
        };
        let before = changes();
        store.cloudflare_found(&found).unwrap();
        assert_eq!(changes(), before, "a page as put writes nothing");
        store.cloudflare_removed(&["i1".to_owned()]).unwrap();
        assert!(items("").is_empty());
        store.forget_cloudflare().unwrap();
        assert_eq!(store.cloudflare_link().unwrap(), None);
    }

    #[test]
    fn a_sync_state_of_an_older_shape_reads_with_defaults() {
        let sync: SyncState = serde_json::from_str(r#"{"dirty":true}"#).unwrap();
        assert!(sync.dirty && !sync.stopped && sync.pending.is_none());
        assert_eq!(
            sync.weighed, None,
            "no versions weighed yet: the next look makes the list dirty and weighs them"
        );
    }
}
