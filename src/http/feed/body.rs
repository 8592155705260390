//! A feed's body, written a part at a time as the holder's object sends its pages
//! and the global list's blocks come: what the Worker holds at once is a page of
//! each and the part being written, whatever the lists' sizes.

use std::collections::VecDeque;

use futures_util::stream::{self, Stream};
use worker::console_error;

use crate::domain::code::Coded;
use crate::domain::feed::cap::{CursorCut, Cut, Key, Shift};
use crate::domain::feed::decision::{Decision, DecisionType, Filter};
use crate::domain::feed::item::{
    global_item, gone_item, personal_block, FeedBlock, FeedItem, FeedRecord, Source,
};
use crate::domain::net::address::Listed;
use crate::domain::operator_lists::list::EntrySource;
use crate::domain::precedence::Governor;
use crate::domain::time::UnixTime;
use crate::http::feed::appliance::ApplianceFile;
use crate::http::feed::items::{Items, ReadWhole};
use crate::store::StoreError;

/// What a feed's body holds: every item, or the changes after a cursor, or
/// (a CrowdSec pull's renewal) the deletions after one and every item.
pub enum Content {
    /// `merged`: the items are merged into the fewest blocks, as `aggregate=1`
    /// asks; `cut`: the items kept of a feed cut to `maxItems`.
    Whole {
        reset: bool,
        merged: bool,
        cut: Option<Cut>,
    },
    /// `cut`: how a cut feed's cut moved since the cursor.
    Delta { cut: Option<Box<DeltaCut>> },
    /// Deleted: what changed and then every item; new: every item, read again
    /// by the reader it carries. A cut token's: the items its bouncer held
    /// deleted, those the cut holds now new (`Shift`).
    Renewal(ReadWhole, Option<Shift>),
}

/// How a cut feed's delta moves its cut: the whole feed's items (`whole`),
/// read once more where the cut moved, for what it pushed out or let in.
pub struct DeltaCut {
    pub shift: Shift,
    pub whole: Items,
}

/// The global blocks a delta names, beside the holder's own entries.
#[derive(Debug, Default)]
pub struct DeltaBlocks {
    pub deleted: Vec<FeedBlock>,
    pub added: Vec<FeedBlock>,
    /// Blocks that stayed while their label (promoted or the operator's) may
    /// have changed: each is named again as it is labelled now (new, or
    /// deleted where a cut or a scenario filter leaves it out now), so that an
    /// agent holds what a whole pull gives (`Writer::relabeled`).
    pub relabeled: Vec<FeedBlock>,
}

/// How a feed's items are written. The JSON feed and CrowdSec's decisions say
/// which global blocks the holders' reports promoted (where the items read the
/// promoted parts); text and the appliance files carry no such label.
pub enum Render {
    Text,
    Json,
    /// CrowdSec's decisions, as a token's bouncer takes them.
    Decisions {
        kind: DecisionType,
        now: UnixTime,
        filter: Filter,
    },
    Appliance(ApplianceFile),
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
    /// A cut delta: what the cut pushed out, or what room let in.
    DeletedMoved,
    New,
    NewGlobal,
    NewMoved,
    Tail,
    Done,
}

struct Writer {
    items: Items,
    /// The delta's global blocks to drop and to add, not written yet.
    global_deleted: VecDeque<FeedBlock>,
    global_added: VecDeque<FeedBlock>,
    /// The delta's blocks to name again (`DeltaBlocks::relabeled`), and how
    /// many of them the stage being written has.
    relabeled: Vec<FeedBlock>,
    relabeled_done: usize,
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
    items: Items,
    blocks: DeltaBlocks,
    render: Render,
    content: Content,
    version: String,
    part_items: usize,
) -> impl Stream<Item = worker::Result<Vec<u8>>> {
    let writer = Writer {
        items,
        global_deleted: blocks.deleted.into(),
        global_added: blocks.added.into(),
        relabeled: blocks.relabeled,
        relabeled_done: 0,
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
                    Content::Delta { .. } | Content::Renewal(..) => {
                        self.deleting = true;
                        Stage::Deleted
                    }
                };
            }
            Stage::Items => {
                for _ in 0..self.part_items {
                    // A cut ranks a deletion by its label too.
                    let label = !self.deleting || self.is_cut();
                    match self.items.next_item(label).await? {
                        Some(item) => {
                            if !self.keeps(&item) {
                                continue;
                            }
                            let item = if self.deleting {
                                unlabelled(item)
                            } else {
                                item
                            };
                            self.write(&mut text, &item)
                        }
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
                    match self.items.next_record().await? {
                        Some(FeedRecord::Gone(ip)) => {
                            if self.drops(ip).await? {
                                self.write(&mut text, &gone_item(ip));
                                count += 1;
                            }
                        }
                        listed => {
                            // The first entry to add belongs to the next array.
                            if let Some(record) = listed {
                                self.items.put_back(record);
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
                if self.global_deleted.is_empty() && self.relabeled(&mut text).await? {
                    self.relabeled_done = 0;
                    self.stage = match &self.content {
                        // Then every item, deleted too, so that it is taken anew.
                        Content::Renewal(..) => Stage::Items,
                        Content::Delta { cut: Some(cut) } if cut.shift.to < cut.shift.from => {
                            Stage::DeletedMoved
                        }
                        _ => self.open_new(&mut text),
                    };
                }
            }
            Stage::DeletedMoved | Stage::NewMoved => {
                let Content::Delta { cut } = &mut self.content else {
                    return Err(StoreError::Corrupt(
                        "only a cut delta moves its cut".to_owned(),
                    ));
                };
                // Held apart while its items are written.
                let Some(mut moved) = cut.take() else {
                    return Err(StoreError::Corrupt(
                        "only a cut delta moves its cut".to_owned(),
                    ));
                };
                let ended = self.moved(&mut moved, &mut text).await;
                self.content = Content::Delta { cut: Some(moved) };
                if ended? {
                    self.stage = match self.stage {
                        Stage::DeletedMoved => self.open_new(&mut text),
                        _ => Stage::Tail,
                    };
                }
            }
            Stage::NewGlobal => {
                for _ in 0..self.part_items {
                    match self.global_added.pop_front() {
                        Some(block) => {
                            let item = self.items.labelled(global_item(block)).await?;
                            if self.sends_new(&item) {
                                self.write(&mut text, &item)
                            }
                        }
                        None => break,
                    }
                }
                if self.global_added.is_empty() && self.relabeled(&mut text).await? {
                    self.stage = match &self.content {
                        Content::Delta { cut: Some(cut) } if cut.shift.from < cut.shift.to => {
                            Stage::NewMoved
                        }
                        _ => Stage::Tail,
                    };
                }
            }
            Stage::New => {
                let mut count = 0;
                while count < self.part_items {
                    match self.items.next_record().await? {
                        Some(FeedRecord::Listed(entry)) => {
                            let governor = self.items.lists().governor_of_entry(entry.ip);
                            let mut item = FeedItem::personal(entry);
                            if governor.challenges() && self.sends_new(&item) {
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

    /// A part of the blocks a delta names again (`DeltaBlocks::relabeled`),
    /// deleted or new as the stage is; whether they have ended. Each is new
    /// where the delta sends what changed (a cut: where it holds it now and
    /// held it; those room lets in come with `lets_in`), which an agent takes
    /// in place of what it held, so it is deleted first only where it is not
    /// taken so: a cut that no longer holds it (and did not push it out
    /// already), or a bouncer's filter that leaves out its new scenario.
    async fn relabeled(&mut self, text: &mut String) -> Result<bool, StoreError> {
        // A renewal deletes every item and announces each anew: naming these
        // too would delete one twice.
        if matches!(self.content, Content::Renewal(..)) {
            return Ok(true);
        }
        let end = self
            .relabeled
            .len()
            .min(self.relabeled_done + self.part_items);
        for at in self.relabeled_done..end {
            let item = self.items.labelled(global_item(self.relabeled[at])).await?;
            let key = Key::of(&item);
            let (held, pushed_out) = match &self.content {
                Content::Delta { cut: Some(cut) } => {
                    (cut.shift.to.holds(key), cut.shift.pushes_out(key))
                }
                _ => (true, false),
            };
            if self.deleting {
                let taken = held && self.takes(&item);
                if !(pushed_out || taken) {
                    self.write(text, &unlabelled(item));
                }
            } else if self.sends_new(&item) {
                self.write(text, &item);
            }
        }
        self.relabeled_done = end;
        Ok(end == self.relabeled.len())
    }

    /// Whether the agent takes a new item: every one, but a CrowdSec bouncer's
    /// filter may leave its decision out.
    fn takes(&self, item: &FeedItem) -> bool {
        match &self.render {
            Render::Decisions { kind, now, filter } => {
                filter.admits(&Decision::of(item, *kind, *now, false))
            }
            _ => true,
        }
    }

    /// A renewal's second pass: every item once more, in `new`, from a second
    /// read of the holder's list and the global blocks from the start.
    async fn announce_again(&mut self, text: &mut String) -> Result<(), StoreError> {
        let Content::Renewal(read_whole, _) = &self.content else {
            return Err(StoreError::Corrupt(
                "only a renewal announces every item again".to_owned(),
            ));
        };
        let whole = read_whole();
        self.items.restart(whole.await?);
        self.written = 0;
        self.deleting = false;
        text.push_str("],\"new\":[");
        Ok(())
    }

    /// A part of what a cut delta's cut pushed out (while deleting) or let in;
    /// whether the whole feed's items have ended.
    async fn moved(&mut self, moved: &mut DeltaCut, text: &mut String) -> Result<bool, StoreError> {
        for _ in 0..self.part_items {
            let Some(item) = moved.whole.next_item(true).await? else {
                return Ok(true);
            };
            let key = Key::of(&item);
            if self.deleting && moved.shift.pushes_out(key) {
                let gone = FeedItem {
                    expires_at: None,
                    comment: None,
                    ..unlabelled(item)
                };
                self.write(text, &gone);
            } else if !self.deleting && moved.shift.lets_in(key) {
                self.write(text, &item);
            }
        }
        Ok(false)
    }

    /// Whether a delta drops a personal address that changed. A block of the
    /// global list's own stays in the feed as that; but a cut ranks it as the
    /// global block now, no longer as the holder's entry: it is dropped when
    /// the cut no longer holds it so (and where the cut holds it, the agent
    /// held it as the entry, or the cut moved past every own entry and lets
    /// it in now).
    async fn drops(&self, ip: Listed) -> Result<bool, StoreError> {
        if self.items.lists().governor_of_entry(ip) != Governor::GlobalChallenge {
            return Ok(true);
        }
        let Content::Delta { cut: Some(cut) } = &self.content else {
            return Ok(false);
        };
        let block = global_item(personal_block(ip).as_global());
        let block = self.items.labelled(block).await?;
        Ok(!cut.shift.to.holds(Key::of(&block)))
    }

    /// Opens a delta's array of items to add: the first belongs to it.
    fn open_new(&mut self, text: &mut String) -> Stage {
        self.written = 0;
        self.deleting = false;
        text.push_str("],\"new\":[");
        Stage::New
    }

    /// Whether a delta adds an item that changed: every one, unless the feed
    /// is cut.
    fn sends_new(&self, item: &FeedItem) -> bool {
        match &self.content {
            Content::Delta { cut: Some(cut) } => cut.shift.sends_new(Key::of(item)),
            _ => true,
        }
    }

    /// Whether the feed is cut.
    fn is_cut(&self) -> bool {
        matches!(
            self.content,
            Content::Whole { cut: Some(_), .. }
                | Content::Delta { cut: Some(_) }
                | Content::Renewal(_, Some(_))
        )
    }

    /// Whether a whole feed keeps the item: every item, unless it is cut.
    fn keeps(&mut self, item: &FeedItem) -> bool {
        match &mut self.content {
            Content::Whole { cut: Some(cut), .. } if !self.deleting => cut.keeps(Key::of(item)),
            // A cut renewal deletes every item, whatever the bouncer held (an
            // item whose rank changed unseen goes too), and adds what the cut
            // holds now.
            Content::Renewal(_, Some(shift)) if !self.deleting => shift.to.holds(Key::of(item)),
            _ => true,
        }
    }

    fn head(&self) -> String {
        let version = &self.version;
        let cut = match &self.content {
            Content::Whole { cut, .. } => cut.as_ref(),
            Content::Delta { .. } | Content::Renewal(..) => None,
        };
        // Text and the files say what a cut left out in a comment after their first line.
        let commented = |mut head: String| {
            if let Some(cut) = cut {
                let at = head.find('\n').map_or(head.len(), |at| at + 1);
                let line = format!(
                    "# cut to maxItems {}: {} entries left out\n",
                    cut.keep(),
                    cut.left_out()
                );
                head.insert_str(at, &line);
            }
            head
        };
        match (&self.render, &self.content) {
            (Render::Text, _) => commented(format!("# greylist feed, version {version}\n")),
            (Render::Appliance(file), _) => commented(file.head(version)),
            (Render::Json, &Content::Whole { reset, merged, .. }) => {
                let reset = if reset { "\"reset\":true," } else { "" };
                let mut head = format!("{{{reset}\"version\":\"{version}\"");
                if merged {
                    head.push_str(",\"merged\":true");
                }
                match cut {
                    Some(cut) => head.push_str(&format!(",\"leftOut\":{}", cut.left_out())),
                    // A merged feed has no cursor: a delta names addresses, which
                    // a merged block holds without the firewall knowing them
                    // apart. A cut feed's comes last (`tail`).
                    None if !merged => head.push_str(&format!(",\"cursor\":\"{version}\"")),
                    None => {}
                }
                head.push_str(",\"entries\":[");
                head
            }
            // Keys in this order: the ipset agent reads the arrays by their neighbours.
            (Render::Json, _) => format!("{{\"cursor\":\"{version}\",\"deleted\":["),
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
            // A cut feed's cursor says how far its cut reached, known once
            // every item is weighed; a merged feed has none.
            Render::Json => match &self.content {
                Content::Whole {
                    cut: Some(cut),
                    merged: false,
                    ..
                } => {
                    let cut = CursorCut::of(cut.bound());
                    format!("],\"cursor\":\"{}{cut}\"}}", self.version)
                }
                _ => "]}".to_owned(),
            },
            Render::Decisions { .. } => "]}".to_owned(),
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
            Render::Json => {
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

/// An item as a deletion names it: the global list's whoever listed it.
fn unlabelled(item: FeedItem) -> FeedItem {
    let source = match item.source {
        Source::Personal => Source::Personal,
        Source::Promoted | Source::Operator => Source::Operator,
    };
    FeedItem { source, ..item }
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
            added_at: None,
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
            added_at: None,
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
