//! A feed's items as it reads them: the holder's records a page at a time
//! beside the global list's blocks, merged in address order (into the fewest
//! blocks when asked), a global block labelled where the network promoted it.
//! What a feed's body writes, and what a feed cut to `maxItems` counts first.

use std::collections::VecDeque;

use futures_util::future::LocalBoxFuture;

use crate::domain::feed::aggregate::{Aggregate, Merging};
use crate::domain::feed::cap::{Bound, Counted, Cut, Key, Rank, Tally};
use crate::domain::feed::item::{FeedBlock, FeedItem, FeedRecord, Merge, Next};
use crate::domain::precedence::{GlobalBlocks, PublishedLists};
use crate::objects::holder::protocol::{Feed, FeedStart, HolderProtocol};
use crate::objects::operator_lists::client::published::Promoted;
use crate::objects::protocol::{Failure, Object, Pages};
use crate::store::StoreError;

/// Reads the holder's whole list anew: a renewal's second pass, and a cut
/// feed's reads after its count.
pub type ReadWhole =
    Box<dyn Fn() -> LocalBoxFuture<'static, Result<Pages<FeedRecord>, StoreError>>>;

/// The holder's whole list read again from its object, as of then: a change
/// between two reads is the next pull's.
pub fn read_again(object: Object<HolderProtocol>) -> ReadWhole {
    Box::new(move || {
        let object = object.clone();
        Box::pin(async move { Ok(read_whole(&object, Feed::default()).await?.1) })
    })
}

/// The holder's whole list read from its object as `feed` asks it (a token's
/// pull recorded with it, or none).
pub async fn read_whole(
    object: &Object<HolderProtocol>,
    feed: Feed,
) -> Result<(FeedStart, Pages<FeedRecord>), StoreError> {
    object
        .ask_stream(feed)
        .await
        .map_err(|failure| match failure {
            Failure::Fault(fault) => fault,
            Failure::Refused(refusal) => StoreError::Object(format!(
                "a second read of the holder's list was refused: {refusal:?}"
            )),
        })
}

pub struct Items {
    records: Pages<FeedRecord>,
    /// Records read and not taken yet.
    read: VecDeque<FeedRecord>,
    lists: PublishedLists,
    blocks: GlobalBlocks,
    merge: Merge,
    merging: Option<Merging>,
    /// A whole feed's runs being merged, when it is asked merged.
    aggregate: Option<Aggregate>,
    /// The promoted parts of the global list's version, where the feed says
    /// whose a global block is or ranks it; `None` where it does neither.
    promoted: Option<Promoted>,
    part_items: usize,
}

impl Items {
    pub fn new(
        records: Pages<FeedRecord>,
        lists: PublishedLists,
        merging: Option<Merging>,
        promoted: Option<Promoted>,
        part_items: usize,
    ) -> Self {
        Self {
            records,
            read: VecDeque::new(),
            blocks: lists.challenged_blocks(),
            lists,
            merge: Merge::default(),
            merging,
            aggregate: merging.map(Aggregate::new),
            promoted,
            part_items: part_items.max(1),
        }
    }

    /// The operator's lists and the holder's allow list the items are weighed by.
    pub fn lists(&self) -> &PublishedLists {
        &self.lists
    }

    /// Every item again from the start, the holder's from `records`.
    pub fn restart(&mut self, records: Pages<FeedRecord>) {
        self.records = records;
        self.read.clear();
        self.merge = Merge::default();
        self.blocks = self.lists.challenged_blocks();
        self.aggregate = self.merging.map(Aggregate::new);
    }

    /// The holder's next record.
    pub async fn next_record(&mut self) -> Result<Option<FeedRecord>, StoreError> {
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

    /// A record taken and not used: the next `next_record` answers it again.
    pub fn put_back(&mut self, record: FeedRecord) {
        self.read.push_front(record);
    }

    /// The next page of records: first what was read and not taken.
    async fn next_page(&mut self) -> Result<Option<Vec<FeedRecord>>, StoreError> {
        if self.read.is_empty() {
            self.records.next().await
        } else {
            Ok(Some(self.read.drain(..).collect()))
        }
    }

    /// A global block marked promoted where the network promoted it, when the
    /// feed reads the promoted parts.
    pub async fn labelled(&self, mut item: FeedItem) -> Result<FeedItem, StoreError> {
        if let Some(promoted) = &self.promoted {
            promoted.label(&mut item).await?;
        }
        Ok(item)
    }

    /// The whole feed's next item, merged where it is asked merged, labelled
    /// when `label` (a deletion names the value alone).
    pub async fn next_item(&mut self, label: bool) -> Result<Option<FeedItem>, StoreError> {
        let Some(mut aggregate) = self.aggregate.take() else {
            return self.next_whole(label).await;
        };
        let next = loop {
            if let Some(item) = aggregate.pop() {
                break Ok(Some(item));
            }
            match self.next_whole(label).await {
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
    async fn next_whole(&mut self, label: bool) -> Result<Option<FeedItem>, StoreError> {
        loop {
            match self.merge.step() {
                Next::Item(item) if label => return self.labelled(item).await.map(Some),
                Next::Item(item) => return Ok(Some(item)),
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

    /// Where the whole feed is cut to `keep` items: its items counted as they
    /// come, and counted again from `again` when the count asks. The items are
    /// read to their end: `restart` them to write them.
    pub async fn cut(&mut self, keep: u64, again: &ReadWhole) -> Result<Cut, StoreError> {
        let mut tally = Tally::new(keep);
        loop {
            while let Some(item) = self.next_item(true).await? {
                tally.add(Rank::of(&item));
            }
            match tally.finish() {
                Counted::Cut(cut) => return Ok(cut),
                Counted::Again(next) => {
                    tally = next;
                    self.restart(again().await?);
                }
            }
        }
    }

    /// How far the whole feed cut to `keep` reaches now, and how many items it
    /// leaves out: the cut counted, then the items read once more to find its
    /// last, by `last`, which is told how many the cut leaves out (a token's
    /// feed records it with that read). `None` when the list changed between
    /// the reads so that the cut is no bound.
    pub async fn bound<Last>(
        &mut self,
        keep: u64,
        again: &ReadWhole,
        last: impl FnOnce(u64) -> Last,
    ) -> Result<(Option<Bound>, u64), StoreError>
    where
        Last: std::future::Future<Output = Result<Pages<FeedRecord>, StoreError>>,
    {
        let mut cut = self.cut(keep, again).await?;
        self.restart(last(cut.left_out()).await?);
        while let Some(item) = self.next_item(true).await? {
            cut.keeps(Key::of(&item));
        }
        Ok((cut.bound(), cut.left_out()))
    }
}
