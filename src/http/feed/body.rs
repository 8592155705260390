//! A feed's body, written a part at a time as the holder's object sends its pages
//! and the global list's blocks come: what the Worker holds at once is a page of
//! each and the part being written, whatever the lists' sizes.

use std::collections::VecDeque;

use futures_util::future::LocalBoxFuture;
use futures_util::stream::{self, Stream};
use worker::console_error;

use crate::domain::code::Coded;
use crate::domain::feed::aggregate::{Aggregate, Merging};
use crate::domain::feed::decision::{Decision, DecisionType, Filter};
use crate::domain::feed::item::{
    global_item, gone_item, FeedBlock, FeedItem, FeedRecord, Merge, Next, Source,
};
use crate::domain::operator_lists::list::EntrySource;
use crate::domain::precedence::{GlobalBlocks, Governor, PublishedLists};
use crate::domain::time::UnixTime;
use crate::http::feed::appliance::ApplianceFile;
use crate::objects::operator_lists::client::published::Promoted;
use crate::objects::protocol::Pages;
use crate::store::StoreError;

/// What a feed's body holds: every item, or the changes after a cursor, or
/// (a CrowdSec pull's renewal) the deletions after one and every item.
pub enum Content {
    /// `merged`: the items merged into the fewest blocks, as `aggregate=1` asks.
    Whole {
        reset: bool,
        merged: Option<Merging>,
    },
    Delta,
    /// Deleted: what changed and then every item; new: every item, read again
    /// by the reader it carries.
    Renewal(ReadWhole),
}

/// Reads the holder's whole list anew: a renewal's second pass.
pub type ReadWhole =
    Box<dyn Fn() -> LocalBoxFuture<'static, Result<Pages<FeedRecord>, StoreError>>>;

/// How a feed's items are written. The JSON feed and CrowdSec's decisions say
/// which global blocks the holders' reports promoted, from the promoted parts of
/// the global list's version the feed reads (`promoted`, `None` when it reads
/// the personal list only); text and the appliance files carry no such label.
pub enum Render {
    Text,
    Json {
        promoted: Option<Promoted>,
    },
    /// CrowdSec's decisions, as a token's bouncer takes them.
    Decisions {
        kind: DecisionType,
        now: UnixTime,
        filter: Filter,
        promoted: Option<Promoted>,
    },
    Appliance(ApplianceFile),
}

impl Render {
    fn promoted(&self) -> Option<&Promoted> {
        match self {
            Self::Json { promoted } | Self::Decisions { promoted, .. } => promoted.as_ref(),
            Self::Text | Self::Appliance(_) => None,
        }
    }
}

/// Where the writing is.
enum Stage {
    Head,
    /// Whole: items in address order, merged.
    Items,
    /// Delta: the addresses to drop (the holder's, then the global blocks'), then
    /// the entries to add (likewise).
    Deleted,
    DeletedGlobal,
    New,
    NewGlobal,
    Tail,
    Done,
}

struct Writer {
    records: Pages<FeedRecord>,
    lists: PublishedLists,
    blocks: GlobalBlocks,
    merge: Merge,
    /// A whole feed's runs being merged, when it is asked merged.
    aggregate: Option<Aggregate>,
    /// The delta's records of the page read, not written yet.
    read: VecDeque<FeedRecord>,
    /// The delta's global blocks to drop and to add, not written yet.
    global_deleted: VecDeque<FeedBlock>,
    global_added: VecDeque<FeedBlock>,
    render: Render,
    content: Content,
    version: String,
    part_items: usize,
    /// Items written so far; the JSON array's first needs no comma.
    written: u64,
    /// Whether the items being written are deletions.
    deleting: bool,
    stage: Stage,
}

/// The body of a feed answer, as a stream of parts of at most `part_items` items.
pub fn body(
    records: Pages<FeedRecord>,
    lists: PublishedLists,
    (deleted, added): (Vec<FeedBlock>, Vec<FeedBlock>),
    render: Render,
    content: Content,
    version: String,
    part_items: usize,
) -> impl Stream<Item = worker::Result<Vec<u8>>> {
    let blocks = lists.challenged_blocks();
    let aggregate = match content {
        Content::Whole { merged, .. } => merged.map(Aggregate::new),
        Content::Delta | Content::Renewal(_) => None,
    };
    let writer = Writer {
        aggregate,
        global_deleted: deleted.into(),
        global_added: added.into(),
        records,
        lists,
        blocks,
        merge: Merge::default(),
        read: VecDeque::new(),
        render,
        content,
        version,
        part_items: part_items.max(1),
        written: 0,
        deleting: false,
        stage: Stage::Head,
    };
    stream::unfold(writer, |mut writer| async move {
        match writer.part().await {
            Ok(Some(text)) => Some((Ok(text.into_bytes()), writer)),
            Ok(None) => None,
            // The body breaks off: the client sees a cut transfer, never a short feed.
            Err(fault) => {
                console_error!("feed broke off: {fault}");
                writer.stage = Stage::Done;
                Some((Err(worker::Error::RustError(fault.to_string())), writer))
            }
        }
    })
}

impl Writer {
    /// The next part of the body, `None` after the last.
    async fn part(&mut self) -> Result<Option<String>, StoreError> {
        let mut text = String::new();
        match self.stage {
            Stage::Head => {
                text = self.head();
                self.stage = match self.content {
                    Content::Whole { .. } => Stage::Items,
                    Content::Delta | Content::Renewal(_) => {
                        self.deleting = true;
                        Stage::Deleted
                    }
                };
            }
            Stage::Items => {
                for _ in 0..self.part_items {
                    match self.next_item().await? {
                        Some(item) => self.write(&mut text, &item),
                        // A renewal's deletions end: every item again, as new.
                        None if self.deleting => {
                            self.announce_again(&mut text).await?;
                            break;
                        }
                        None => {
                            self.stage = Stage::Tail;
                            break;
                        }
                    }
                }
            }
            Stage::Deleted => {
                let mut count = 0;
                while count < self.part_items {
                    match self.next_record().await? {
                        Some(FeedRecord::Gone(ip)) => {
                            // A block of the global list's own stays in the feed as that.
                            if self.lists.governor_of_entry(ip) != Governor::GlobalChallenge {
                                self.write(&mut text, &gone_item(ip));
                                count += 1;
                            }
                        }
                        listed => {
                            // The first entry to add belongs to the next array.
                            if let Some(record) = listed {
                                self.read.push_front(record);
                            }
                            self.stage = Stage::DeletedGlobal;
                            break;
                        }
                    }
                }
            }
            Stage::DeletedGlobal => {
                for _ in 0..self.part_items {
                    match self.global_deleted.pop_front() {
                        Some(block) => self.write(&mut text, &global_item(block)),
                        None => break,
                    }
                }
                if self.global_deleted.is_empty() {
                    if matches!(self.content, Content::Renewal(_)) {
                        // Then every item, deleted too, so that it is taken anew.
                        self.stage = Stage::Items;
                    } else {
                        // The first entry to add belongs to the next array.
                        self.written = 0;
                        self.deleting = false;
                        text.push_str("],\"new\":[");
                        self.stage = Stage::New;
                    }
                }
            }
            Stage::NewGlobal => {
                for _ in 0..self.part_items {
                    match self.global_added.pop_front() {
                        Some(block) => {
                            let item = self.labelled(global_item(block)).await?;
                            self.write(&mut text, &item)
                        }
                        None => break,
                    }
                }
                if self.global_added.is_empty() {
                    self.stage = Stage::Tail;
                }
            }
            Stage::New => {
                let mut count = 0;
                while count < self.part_items {
                    match self.next_record().await? {
                        Some(FeedRecord::Listed(entry)) => {
                            let governor = self.lists.governor_of_entry(entry.ip);
                            if governor.challenges() {
                                let mut item = FeedItem::personal(entry);
                                // The global list holds it too: it stands as long as that does.
                                if governor == Governor::GlobalChallenge {
                                    item.expires_at = None;
                                }
                                self.write(&mut text, &item);
                                count += 1;
                            }
                        }
                        Some(FeedRecord::Gone(ip)) => {
                            return Err(StoreError::Corrupt(format!(
                                "a feed's delta dropped {ip} after its listed entries"
                            )))
                        }
                        None => {
                            self.stage = Stage::NewGlobal;
                            break;
                        }
                    }
                }
            }
            Stage::Tail => {
                text = self.tail();
                self.stage = Stage::Done;
            }
            Stage::Done => return Ok(None),
        }
        Ok(Some(text))
    }

    async fn next_record(&mut self) -> Result<Option<FeedRecord>, StoreError> {
        loop {
            if let Some(record) = self.read.pop_front() {
                return Ok(Some(record));
            }
            match self.records.next().await? {
                Some(page) => self.read.extend(page),
                None => return Ok(None),
            }
        }
    }

    /// A renewal's second pass: every item once more, in `new`, from a second
    /// read of the holder's list and the global blocks from the start.
    async fn announce_again(&mut self, text: &mut String) -> Result<(), StoreError> {
        let Content::Renewal(read_whole) = &self.content else {
            return Err(StoreError::Corrupt(
                "only a renewal announces every item again".to_owned(),
            ));
        };
        let whole = read_whole();
        self.records = whole.await?;
        self.read.clear();
        self.merge = Merge::default();
        self.blocks = self.lists.challenged_blocks();
        self.written = 0;
        self.deleting = false;
        text.push_str("],\"new\":[");
        Ok(())
    }

    /// The next page of records: first what a delta's last stage read ahead.
    async fn next_page(&mut self) -> Result<Option<Vec<FeedRecord>>, StoreError> {
        if self.read.is_empty() {
            self.records.next().await
        } else {
            Ok(Some(self.read.drain(..).collect()))
        }
    }

    /// An item as the feed writes it: a global block to add says whose it is,
    /// where the render says so (`Render::promoted`). A deletion names the
    /// value alone, and is the global list's whoever listed it.
    async fn labelled(&self, mut item: FeedItem) -> Result<FeedItem, StoreError> {
        if let (Some(promoted), false) = (self.render.promoted(), self.deleting) {
            promoted.label(&mut item).await?;
        }
        Ok(item)
    }

    /// The whole feed's next item, merged where it is asked merged.
    async fn next_item(&mut self) -> Result<Option<FeedItem>, StoreError> {
        let Some(mut aggregate) = self.aggregate.take() else {
            return self.next_whole().await;
        };
        let next = loop {
            if let Some(item) = aggregate.pop() {
                break Ok(Some(item));
            }
            match self.next_whole().await {
                Ok(Some(item)) => aggregate.push(item),
                Ok(None) => {
                    aggregate.finish();
                    break Ok(aggregate.pop());
                }
                Err(fault) => break Err(fault),
            }
        };
        self.aggregate = Some(aggregate);
        next
    }

    /// The whole feed's next item in address order.
    async fn next_whole(&mut self) -> Result<Option<FeedItem>, StoreError> {
        loop {
            match self.merge.step() {
                Next::Item(item) => return self.labelled(item).await.map(Some),
                Next::Done => return Ok(None),
                Next::NeedPersonal => match self.next_page().await? {
                    Some(page) => {
                        let mut entries = Vec::with_capacity(page.len());
                        for record in page {
                            match record {
                                // Whatever else holds it, the merge writes it once.
                                FeedRecord::Listed(entry)
                                    if self.lists.challenges_entry(entry.ip) =>
                                {
                                    entries.push(entry)
                                }
                                FeedRecord::Listed(_) => {}
                                FeedRecord::Gone(ip) => {
                                    return Err(StoreError::Corrupt(format!(
                                        "a whole feed dropped {ip}"
                                    )))
                                }
                            }
                        }
                        self.merge.push_personal(entries);
                    }
                    None => self.merge.finish_personal(),
                },
                Next::NeedGlobal => {
                    let part: Vec<FeedBlock> = self.blocks.by_ref().take(self.part_items).collect();
                    if part.is_empty() {
                        self.merge.finish_global();
                    }
                    self.merge.push_global(part);
                }
            }
        }
    }

    fn head(&self) -> String {
        let version = &self.version;
        match (&self.render, &self.content) {
            (Render::Text, _) => format!("# greylist feed, version {version}\n"),
            (Render::Appliance(file), _) => file.head(version),
            // A merged feed has no cursor: a delta names addresses, which a
            // merged block holds without the firewall knowing them apart.
            (
                Render::Json { .. },
                &Content::Whole {
                    merged: Some(_), ..
                },
            ) => {
                format!("{{\"version\":\"{version}\",\"merged\":true,\"entries\":[")
            }
            (
                Render::Json { .. },
                &Content::Whole {
                    reset,
                    merged: None,
                },
            ) => {
                let reset = if reset { "\"reset\":true," } else { "" };
                format!("{{{reset}\"version\":\"{version}\",\"cursor\":\"{version}\",\"entries\":[")
            }
            // Keys in this order: the ipset agent reads the arrays by their neighbours.
            (Render::Json { .. }, _) => format!("{{\"cursor\":\"{version}\",\"deleted\":["),
            (Render::Decisions { .. }, Content::Whole { .. }) => {
                "{\"deleted\":[],\"new\":[".to_owned()
            }
            (Render::Decisions { .. }, _) => "{\"deleted\":[".to_owned(),
        }
    }

    fn tail(&mut self) -> String {
        match &mut self.render {
            // The count closes the feed, so a cut transfer is told from a short list.
            Render::Text => format!("# end of feed, {} entries\n", self.written),
            Render::Appliance(file) => file.tail(),
            Render::Json { .. } | Render::Decisions { .. } => "]}".to_owned(),
        }
    }

    fn write(&mut self, text: &mut String, item: &FeedItem) {
        match &mut self.render {
            Render::Text => {
                text.push_str(&item.text());
                text.push('\n');
            }
            Render::Appliance(file) => {
                file.item(item, text);
                return;
            }
            Render::Json { .. } => {
                if self.written > 0 {
                    text.push(',');
                }
                text.push_str(&item_json(item).to_string());
            }
            Render::Decisions {
                kind, now, filter, ..
            } => {
                let decision = Decision::of(item, *kind, *now, self.deleting);
                let admitted = if self.deleting {
                    filter.admits_deletion(&decision)
                } else {
                    filter.admits(&decision)
                };
                if !admitted {
                    return;
                }
                if self.written > 0 {
                    text.push(',');
                }
                text.push_str(&serde_json::to_string(&decision).unwrap_or_default());
            }
        }
        self.written += 1;
    }
}

/// An item as the JSON feed shows it. A global block the holders' reports
/// promoted says so in `source`, as the operator's lookup does; every other item
/// is as it always was, without the field.
pub fn item_json(item: &FeedItem) -> serde_json::Value {
    let mut json = serde_json::json!({
        "value": item.block.to_string(),
        "scope": if item.source.is_global() { "global" } else { "personal" },
        "expiresAt": item.expires_at.map(UnixTime::to_rfc3339),
        "comment": item.comment,
    });
    if item.source == Source::Promoted {
        json["source"] = EntrySource::Promoted.code().into();
    }
    json
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::range::Ipv4Range;
    use serde_json::json;

    #[test]
    fn json_items_carry_scope_expiry_and_comment() {
        let block = Ipv4Range::parse("8.8.8.8").unwrap();
        let listed = FeedItem {
            block: FeedBlock::V4(block),
            source: Source::Personal,
            expires_at: Some(UnixTime(1_795_262_400)),
            comment: Some("scanner".into()),
        };
        assert_eq!(
            item_json(&listed),
            json!({ "value": "8.8.8.8", "scope": "personal", "expiresAt": "2026-11-21T12:00:00Z", "comment": "scanner" })
        );
        let global = FeedItem {
            block: FeedBlock::V4(Ipv4Range::parse("45.0.0.0/8").unwrap()),
            source: Source::Operator,
            expires_at: None,
            comment: None,
        };
        assert_eq!(
            serde_json::to_string(&item_json(&global)).unwrap(),
            r#"{"comment":null,"expiresAt":null,"scope":"global","value":"45.0.0.0/8"}"#,
            "the operator's block as it always was"
        );
        let promoted = FeedItem {
            source: Source::Promoted,
            ..global
        };
        assert_eq!(
            serde_json::to_string(&item_json(&promoted)).unwrap(),
            r#"{"comment":null,"expiresAt":null,"scope":"global","source":"promoted","value":"45.0.0.0/8"}"#
        );
    }
}
