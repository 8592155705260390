//! Which list governs an address for a holder, and what that list answers: the
//! one place the order "global allow list → the holder's allow list → global
//! challenge list → personal list" is written (`Governor::PRECEDENCE`). The single
//! operations, bulk, reports and alerts ask it through `verdict` in the Worker,
//! which asks the operator's lists (and `global_allow_holds_range` for the
//! holder's allow list's ranges), and `weigh_then_perform` in the holder's
//! object, which alone knows the holder's allow list; the feeds (whole and delta), the
//! appliance files and CrowdSec's stream and live mode ask it of each of the
//! holder's entries and of the global list's blocks through `PublishedLists`. A new
//! list (a holder's own allow list, entries promoted by the network) is a new
//! `Governor` in `PRECEDENCE` with what it answers and how it is held, not a new
//! place in each surface.

use std::rc::Rc;

use crate::domain::feed::item::{personal_block, Blocks, FeedBlock};
use crate::domain::holder::allow_range::AllowRange;
use crate::domain::holder::list::Operation;
use crate::domain::holder::list::PersonalOutcome;
use crate::domain::holder::outcome::HolderOutcome;
use crate::domain::net::address::{Listed, PublicIp, SubmittedIp};
use crate::domain::net::family::Addr;
use crate::domain::net::intervals::{without, Cuts, Intervals, Seek};
use crate::domain::net::range::Cidr;
use crate::domain::network::report::ReportOutcome;
use crate::domain::operator_lists::list::ListKind;
use crate::domain::operator_lists::snapshot::{covers, Shards};

/// A list that can govern an address for a holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Governor {
    /// The operator's allow list: an address on it is never challenged, nor acted on.
    GlobalAllow,
    /// The holder's own allow list, kept by the holder's object: what it holds is
    /// never challenged for that holder.
    HolderAllow,
    /// The operator's (global) challenge list.
    GlobalChallenge,
    /// The holder's own challenge list, kept by the holder's object.
    Personal,
}

impl Governor {
    /// Strongest first: the first list that holds an address governs it.
    pub const PRECEDENCE: [Self; 4] = [
        Self::GlobalAllow,
        Self::HolderAllow,
        Self::GlobalChallenge,
        Self::Personal,
    ];

    /// Whether an address this list governs is challenged: one an allow list
    /// governs never is.
    pub fn challenges(self) -> bool {
        !matches!(self, Self::GlobalAllow | Self::HolderAllow)
    }

    /// Whether this list comes before `other` in the precedence.
    fn is_stronger_than(self, other: Self) -> bool {
        let rank = |list| Self::PRECEDENCE.iter().position(|&l| l == list);
        rank(self) < rank(other)
    }

    /// The operator's list this is, which the isolates hold as published; `None`
    /// for the holder's own lists, which its object holds.
    pub fn operator_list(self) -> Option<ListKind> {
        match self {
            Self::GlobalAllow => Some(ListKind::Allow),
            Self::GlobalChallenge => Some(ListKind::Global),
            Self::HolderAllow | Self::Personal => None,
        }
    }

    /// Whether `weighing` asks this list at all. A removal changes the holder's
    /// own list only, so neither the global challenge list (the specification:
    /// the operations never change the global list) nor the holder's allow list,
    /// whose entries took away what they cover, has a say in it. A report is
    /// taken whatever the global challenge list holds (its reports keep a
    /// promoted entry from decaying), and refused where an allow list holds it.
    fn is_asked_by(self, weighing: Weighing) -> bool {
        use Weighing::{Operation as Op, Report};
        match (self, weighing) {
            (Self::GlobalAllow | Self::Personal, _) => true,
            (Self::HolderAllow, Op(operation)) => operation != Operation::Remove,
            (Self::HolderAllow, Report) => true,
            (Self::GlobalChallenge, Op(operation)) => operation != Operation::Remove,
            (Self::GlobalChallenge, Report) => false,
        }
    }

    /// What `weighing` comes to for an address this list governs, as the
    /// holder's object answers it (the lists it does not keep as the Worker told
    /// it); `None` for the lists the object does not answer for.
    pub fn object_outcome(self, weighing: Weighing) -> Option<PersonalOutcome> {
        match self {
            Self::HolderAllow => Some(PersonalOutcome::OwnAllowListed),
            Self::GlobalChallenge => Some(match weighing {
                Weighing::Operation(Operation::Add) => PersonalOutcome::AlreadyGlobal,
                _ => PersonalOutcome::ListedGlobal,
            }),
            Self::GlobalAllow | Self::Personal => None,
        }
    }

    /// What a report of an address this list governs comes to in the holder's
    /// object: the holder's allow list refuses it; the global challenge list is
    /// never asked of a report (its entries' reports keep them from decaying),
    /// and the global allow list answers in the Worker.
    pub fn report_outcome(self) -> Option<ReportOutcome> {
        match self {
            Self::HolderAllow => Some(ReportOutcome::OwnAllowListed),
            Self::GlobalAllow | Self::GlobalChallenge | Self::Personal => None,
        }
    }

    /// What `weighing` comes to for an address this list governs.
    fn verdict(self, weighing: Weighing, ip: SubmittedIp) -> Verdict {
        let outcome = match self {
            Self::GlobalAllow => HolderOutcome::AllowListed(ip),
            Self::GlobalChallenge => match weighing {
                Weighing::Operation(Operation::Add) => HolderOutcome::AlreadyGlobal(ip),
                _ => HolderOutcome::ListedGlobal(ip),
            },
            Self::HolderAllow | Self::Personal => {
                return Verdict::ForObject {
                    ip,
                    global_challenge: false,
                }
            }
        };
        Verdict::Answered(self, outcome)
    }
}

/// What an address is weighed for: one of the list operations, or a report of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weighing {
    Operation(Operation),
    Report,
}

impl From<Operation> for Weighing {
    fn from(operation: Operation) -> Self {
        Self::Operation(operation)
    }
}

/// An address's answer as far as the Worker can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Validation refused it: no list was asked.
    Refused(HolderOutcome),
    /// An operator's list governs it: which, and its answer.
    Answered(Governor, HolderOutcome),
    /// The holder's object answers, from the lists it keeps. `global_challenge`:
    /// the global challenge list holds the address, which governs it unless the
    /// holder's allow list does.
    ForObject {
        ip: SubmittedIp,
        global_challenge: bool,
    },
}

impl Verdict {
    /// The public address weighed: every one but those validation refused.
    pub fn public_ip(&self) -> Option<PublicIp> {
        match self {
            Self::ForObject { ip, .. } => Some(ip.ip),
            Self::Answered(_, outcome) => outcome.public_ip(),
            Self::Refused(_) => None,
        }
    }

    /// The operator's list that answered, if one did.
    pub fn governor(&self) -> Option<Governor> {
        match self {
            Self::Answered(list, _) => Some(*list),
            Self::Refused(_) | Self::ForObject { .. } => None,
        }
    }
}

/// Which of the lists stronger than the personal list hold an address, as the
/// holder's object sees it: the global challenge list as the Worker found it,
/// and the holder's own allow list, which the object keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Holding {
    pub global_challenge: bool,
    pub own_allow: bool,
}

/// Which list governs `ip` for `operation`, and its answer, as far as the
/// Worker can tell. The operator's lists are asked through `holds` in the order
/// of precedence, each only while no stronger one holds the address, so no
/// lookup is made that the answer does not need. `own_allow_list` says whether
/// the holder has allow-list entries (the license's flag): only then is an
/// address the global challenge list holds the object's to weigh.
pub async fn verdict<E>(
    weighing: impl Into<Weighing>,
    ip: SubmittedIp,
    own_allow_list: bool,
    mut holds: impl AsyncFnMut(ListKind, PublicIp) -> Result<bool, E>,
) -> Result<Verdict, E> {
    let weighing = weighing.into();
    let mut deferred = false;
    for list in Governor::PRECEDENCE {
        if !list.is_asked_by(weighing) {
            continue;
        }
        match list.operator_list() {
            Some(kind) => {
                // An allowed address is allowed in every form: an IPv6 one that
                // carries an IPv4 address is where that address is.
                let carried = match (list, ip.ip.carried_ipv4()) {
                    (Governor::GlobalAllow, Some(v4)) => Some(PublicIp::V4(v4)),
                    _ => None,
                };
                let held = holds(kind, ip.ip).await?
                    || match carried {
                        Some(v4) => holds(kind, v4).await?,
                        None => false,
                    };
                if held {
                    return Ok(if deferred {
                        Verdict::ForObject {
                            ip,
                            global_challenge: list == Governor::GlobalChallenge,
                        }
                    } else {
                        list.verdict(weighing, ip)
                    });
                }
            }
            // A list the object keeps: it weighs it, and what is weaker, itself.
            None if list == Governor::HolderAllow => deferred = own_allow_list,
            None => break,
        }
    }
    Ok(Verdict::ForObject {
        ip,
        global_challenge: false,
    })
}

/// Which list governs an address in the holder's object: the first in the
/// precedence that `weighing` asks and that holds it, of those the Worker left
/// the object (`holding`); the personal list when none stronger does. Never the
/// global allow list, which the Worker answered.
pub fn governor_in_object(weighing: impl Into<Weighing>, holding: Holding) -> Governor {
    let weighing = weighing.into();
    Governor::PRECEDENCE
        .into_iter()
        .filter(|list| list.is_asked_by(weighing))
        .find(|list| match list {
            Governor::GlobalAllow => false,
            Governor::HolderAllow => holding.own_allow,
            Governor::GlobalChallenge => holding.global_challenge,
            Governor::Personal => true,
        })
        .unwrap_or(Governor::Personal)
}

/// The holder's object's one way with an address: weighed by the lists above
/// the personal list (`governor_in_object`), answered by the one that governs it
/// (`answer`, which says what it answers for this call), and performed on the
/// personal list (`perform`) when none does.
pub fn weigh_then_perform<T, E>(
    weighing: impl Into<Weighing>,
    holding: Holding,
    answer: impl FnOnce(Governor) -> Option<T>,
    perform: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    match governor_in_object(weighing, holding) {
        Governor::Personal => perform(),
        list => answer(list).map_or_else(perform, Ok),
    }
}

/// Whether the global allow list holds every address of `range`: a holder's
/// allow-list operation on such a range is answered in the Worker, before the
/// object. Only the interval holding the range's first address is looked at
/// (the published intervals are merged, so one holds the whole range or none does).
pub fn global_allow_holds_range(
    (v4, v6): (&Intervals, &Intervals<u128>),
    range: AllowRange,
) -> bool {
    match range {
        AllowRange::V4(range) => v4
            .as_slice()
            .interval_of(range.first())
            .is_some_and(|(_, last)| last >= range.last()),
        AllowRange::V6(range) => v6
            .as_slice()
            .interval_of(range.first())
            .is_some_and(|(_, last)| last >= range.last()),
    }
}

/// The operator's lists as an isolate holds their published snapshots, each
/// family apart, and the holder's allow list as its object sent it: what a feed,
/// a CrowdSec pull or a live lookup weighs a holder's entries against. The
/// global list is empty for a personal feed.
pub struct PublishedLists {
    global: Shards,
    allow: Rc<Intervals>,
    global6: Shards<u128>,
    allow6: Rc<Intervals<u128>>,
    own: Rc<Intervals>,
    own6: Rc<Intervals<u128>>,
    /// What the global challenge list's blocks are cut by, each family: the
    /// lists stronger than it that challenge nothing, each as it is.
    cut: Cuts,
    cut6: Cuts<u128>,
}

impl PublishedLists {
    /// The operator's lists, each family apart, for a holder without allow-list entries.
    pub fn new(
        (global, global6): (Shards, Shards<u128>),
        (allow, allow6): (Rc<Intervals>, Rc<Intervals<u128>>),
    ) -> Self {
        Self::with_own_allow(
            (global, global6),
            (allow, allow6),
            (Rc::default(), Rc::default()),
        )
    }

    /// The operator's lists and the holder's allow list (`AllowSet::intervals`).
    pub fn with_own_allow(
        (global, global6): (Shards, Shards<u128>),
        (allow, allow6): (Rc<Intervals>, Rc<Intervals<u128>>),
        (own, own6): (Rc<Intervals>, Rc<Intervals<u128>>),
    ) -> Self {
        let stronger: Vec<Governor> = Governor::PRECEDENCE
            .into_iter()
            .filter(|list| list.is_stronger_than(Governor::GlobalChallenge) && !list.challenges())
            .collect();
        let cut_by = |list: &Governor| match list {
            Governor::GlobalAllow => (allow.clone(), allow6.clone()),
            Governor::HolderAllow => (own.clone(), own6.clone()),
            Governor::GlobalChallenge | Governor::Personal => (Rc::default(), Rc::default()),
        };
        let (v4, v6): (Vec<_>, Vec<_>) = stronger.iter().map(cut_by).unzip();
        let (cut, cut6) = (non_empty(v4), non_empty(v6));
        Self {
            global,
            allow,
            global6,
            allow6,
            own,
            own6,
            cut,
            cut6,
        }
    }

    /// The same lists, this holder's allow list beside them.
    pub fn and_own_allow(&self, own: (Rc<Intervals>, Rc<Intervals<u128>>)) -> Self {
        Self::with_own_allow(
            (self.global.clone(), self.global6.clone()),
            (self.allow.clone(), self.allow6.clone()),
            own,
        )
    }

    /// Which list governs one of the holder's entries in a feed: the strongest that
    /// holds it (`holds_entry`). An allow list's entry is left out; one the global
    /// challenge list governs stands as long as that list's block does.
    pub fn governor_of_entry(&self, ip: Listed) -> Governor {
        Governor::PRECEDENCE
            .into_iter()
            .find(|&list| self.holds_entry(list, ip))
            .unwrap_or(Governor::Personal)
    }

    /// Whether a feed challenges one of the holder's entries: `governor_of_entry`
    /// asked only as far as the answer can still change, so that a whole feed,
    /// whose merge writes an entry the global list holds too once, asks the allow
    /// list alone.
    pub fn challenges_entry(&self, ip: Listed) -> bool {
        for (at, &list) in Governor::PRECEDENCE.iter().enumerate() {
            if Governor::PRECEDENCE[at..].iter().all(|l| l.challenges()) {
                return true;
            }
            if self.holds_entry(list, ip) {
                return list.challenges();
            }
        }
        true
    }

    /// Whether `list` holds one of the holder's entries, as a feed weighs it: the
    /// allow list when it holds the entry's address or any address of its /64; the
    /// global challenge list when one of the blocks the feed writes for it is the
    /// entry itself; the holder's own list always.
    fn holds_entry(&self, list: Governor, ip: Listed) -> bool {
        match list {
            Governor::GlobalAllow => allow_holds((&self.allow, &self.allow6), ip),
            Governor::HolderAllow => allow_holds((&self.own, &self.own6), ip),
            Governor::GlobalChallenge => self.has_own_block(personal_block(ip)),
            Governor::Personal => true,
        }
    }

    fn cut(&self) -> (Cuts, Cuts<u128>) {
        (self.cut.clone(), self.cut6.clone())
    }

    /// The global challenge list's block that holds `ip`, as a whole feed writes it:
    /// the global list without what the allow list holds.
    pub fn block_holding(&self, ip: PublicIp) -> Option<FeedBlock> {
        let (cut, cut6) = self.cut();
        match ip {
            PublicIp::V4(v4) => block_holding(&self.global, &cut, v4.to_u32()).map(FeedBlock::V4),
            PublicIp::V6(v6) => {
                block_holding(&self.global6, &cut6, u128::from(v6.addr())).map(FeedBlock::V6Range)
            }
        }
    }

    /// The global challenge list's blocks of both families, without what the
    /// allow list holds, in the feed's order.
    pub fn challenged_blocks(&self) -> GlobalBlocks {
        let (cut, cut6) = self.cut();
        GlobalBlocks {
            v4: FamilyBlocks::new(
                Box::new(challenged_from(&self.global, &cut, 0)) as Box<dyn Iterator<Item = _>>
            )
            .peekable(),
            v6: FamilyBlocks::new(
                Box::new(challenged_from(&self.global6, &cut6, 0)) as Box<dyn Iterator<Item = _>>
            )
            .peekable(),
        }
    }

    /// Whether the challenged global list has `block` as one of its own blocks.
    fn has_own_block(&self, block: FeedBlock) -> bool {
        let (cut, cut6) = self.cut();
        match block.as_global() {
            FeedBlock::V4(range) => has_block(&self.global, &cut, range),
            FeedBlock::V6Range(range) => has_block(&self.global6, &cut6, range),
            FeedBlock::V6(_) | FeedBlock::V6Net64(_) => {
                unreachable!("the global list names IPv6 blocks as ranges")
            }
        }
    }
}

/// Whether an allow list holds an address or entry: the address, or any address
/// of the /64.
fn allow_holds((allow, allow6): (&Intervals, &Intervals<u128>), ip: Listed) -> bool {
    match ip {
        Listed::Ip(PublicIp::V4(v4)) => covers(allow, v4.to_u32()),
        Listed::Ip(PublicIp::V6(v6)) => covers(allow6, u128::from(v6.addr())),
        Listed::Net64(net) => {
            let first = u128::from(net.addr());
            let last = first | u128::from(u64::MAX);
            allow6
                .as_slice()
                .from(first)
                .next()
                .is_some_and(|(start, _)| start <= last)
        }
    }
}

/// The sets that cut anything, shared as they are.
fn non_empty<A: Addr>(sets: Vec<Rc<Intervals<A>>>) -> Cuts<A> {
    sets.into_iter().filter(|set| !set.is_empty()).collect()
}

/// One family's challenged global list: its intervals from the first that ends at
/// or after `low`, cut where the allow list holds addresses.
fn challenged_from<A: Addr>(
    global: &Shards<A>,
    allow: &Cuts<A>,
    low: A,
) -> impl Iterator<Item = (A, A)> + 'static {
    without(global.read_from(low), allow.clone())
}

/// One family's challenged block that holds `addr`, as a whole feed writes it.
fn block_holding<A: Addr>(global: &Shards<A>, allow: &Cuts<A>, addr: A) -> Option<Cidr<A>> {
    // The allow list may cut the interval that holds `addr` before it, too.
    let span = challenged_from(global, allow, addr)
        .find(|&(_, last)| last >= addr)
        .filter(|&(first, _)| first <= addr)?;
    Blocks::new(std::iter::once(span)).find(|block| block.last() >= addr)
}

/// Whether one family's challenged global list holds `block` as one of its own blocks.
fn has_block<A: Addr>(global: &Shards<A>, allow: &Cuts<A>, block: Cidr<A>) -> bool {
    block_holding(global, allow, block.first()) == Some(block)
}

/// The challenged global blocks of both families, merged in the feed's order
/// (`FeedBlock::place`): the IPv6 ones around `::ffff:0:0/96`, where IPv4
/// addresses stand, and the IPv4 ones.
pub struct GlobalBlocks {
    v4: std::iter::Peekable<FamilyBlocks<u32>>,
    v6: std::iter::Peekable<FamilyBlocks<u128>>,
}

/// One family's global blocks, read lazily from its shards.
type FamilyBlocks<A> = Blocks<Box<dyn Iterator<Item = (A, A)>>, A>;

impl Iterator for GlobalBlocks {
    type Item = FeedBlock;

    fn next(&mut self) -> Option<FeedBlock> {
        let v4 = self.v4.peek().map(|&block| FeedBlock::V4(block));
        let v6 = self.v6.peek().map(|&block| FeedBlock::V6Range(block));
        match (v4, v6) {
            (Some(v4), Some(v6)) if v6.place() < v4.place() => {
                self.v6.next();
                Some(v6)
            }
            (Some(v4), _) => {
                self.v4.next();
                Some(v4)
            }
            (None, v6) => {
                self.v6.next();
                v6
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::*;
    use crate::domain::holder::list::PersonalOutcome;
    use crate::domain::net::address::Ipv6;
    use crate::domain::operator_lists::snapshot::Shard;

    /// Runs a future that never waits: `verdict`'s lookups here answer at once.
    fn now<T>(future: impl Future<Output = T>) -> T {
        match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(value) => value,
            Poll::Pending => panic!("the verdict waited on nothing"),
        }
    }

    fn given(text: &str) -> SubmittedIp {
        PublicIp::parse(text, Ipv6::On).unwrap()
    }

    /// The verdict when the operator's lists in `holding` hold the address, and
    /// the lists it asked, in order.
    fn weigh(operation: Operation, holding: &[Governor]) -> (Verdict, Vec<Governor>) {
        weigh_for(operation, holding, false)
    }

    /// `weigh` for a holder with allow-list entries, or without.
    fn weigh_for(
        operation: Operation,
        holding: &[Governor],
        own_allow_list: bool,
    ) -> (Verdict, Vec<Governor>) {
        let asked = RefCell::new(Vec::new());
        let verdict = now(verdict(
            operation,
            given("203.0.114.9"),
            own_allow_list,
            async |kind, ip| {
                assert_eq!(ip, given("203.0.114.9").ip);
                let list = Governor::PRECEDENCE
                    .into_iter()
                    .find(|list| list.operator_list() == Some(kind))
                    .unwrap();
                asked.borrow_mut().push(list);
                Ok::<_, ()>(holding.contains(&list))
            },
        ))
        .unwrap();
        (verdict, asked.into_inner())
    }

    #[test]
    fn the_strongest_list_that_holds_an_address_governs_it_and_no_weaker_one_is_asked() {
        use Governor::*;
        use Operation::*;
        let ip = given("203.0.114.9");
        let answered = |list, outcome| Verdict::Answered(list, outcome);
        let personal = Verdict::ForObject {
            ip: ip.clone(),
            global_challenge: false,
        };
        // (operation, lists holding the address) → (verdict, lists asked in order)
        let table = [
            (
                Check,
                vec![],
                personal.clone(),
                vec![GlobalAllow, GlobalChallenge],
            ),
            (
                Add,
                vec![],
                personal.clone(),
                vec![GlobalAllow, GlobalChallenge],
            ),
            (Remove, vec![], personal.clone(), vec![GlobalAllow]),
            (
                Check,
                vec![GlobalAllow, GlobalChallenge],
                answered(GlobalAllow, HolderOutcome::AllowListed(ip.clone())),
                vec![GlobalAllow],
            ),
            (
                Add,
                vec![GlobalAllow],
                answered(GlobalAllow, HolderOutcome::AllowListed(ip.clone())),
                vec![GlobalAllow],
            ),
            (
                Remove,
                vec![GlobalAllow, GlobalChallenge],
                answered(GlobalAllow, HolderOutcome::AllowListed(ip.clone())),
                vec![GlobalAllow],
            ),
            (
                Check,
                vec![GlobalChallenge],
                answered(GlobalChallenge, HolderOutcome::ListedGlobal(ip.clone())),
                vec![GlobalAllow, GlobalChallenge],
            ),
            (
                Add,
                vec![GlobalChallenge],
                answered(GlobalChallenge, HolderOutcome::AlreadyGlobal(ip.clone())),
                vec![GlobalAllow, GlobalChallenge],
            ),
            // A removal is the personal list's whatever the global list holds.
            (
                Remove,
                vec![GlobalChallenge],
                personal.clone(),
                vec![GlobalAllow],
            ),
        ];
        for (operation, holding, expected, asked) in table {
            assert_eq!(
                weigh(operation, &holding),
                (expected, asked),
                "the first list of the precedence that holds it answers, and no later one is asked: {operation:?} of an address on {holding:?}"
            );
        }
    }

    #[test]
    fn a_holder_with_allow_list_entries_has_its_object_weigh_what_the_global_list_holds() {
        use Governor::*;
        use Operation::*;
        let ip = given("203.0.114.9");
        // The global allow list still answers in the Worker, before the holder's.
        assert_eq!(
            weigh_for(Add, &[GlobalAllow, GlobalChallenge], true),
            (
                Verdict::Answered(
                    Governor::GlobalAllow,
                    HolderOutcome::AllowListed(ip.clone())
                ),
                vec![GlobalAllow]
            )
        );
        // The global challenge list's hold goes to the object with the address.
        for operation in [Check, Add] {
            assert_eq!(
                weigh_for(operation, &[GlobalChallenge], true),
                (
                    Verdict::ForObject {
                        ip: ip.clone(),
                        global_challenge: true,
                    },
                    vec![GlobalAllow, GlobalChallenge]
                )
            );
        }
        // A removal asks neither the global list nor the holder's allow list.
        assert_eq!(
            weigh_for(Remove, &[GlobalChallenge], true),
            (
                Verdict::ForObject {
                    ip: ip.clone(),
                    global_challenge: false,
                },
                vec![GlobalAllow]
            )
        );
        // Without entries the flag keeps the global list's answer in the Worker.
        assert_eq!(
            weigh_for(Check, &[GlobalChallenge], false).0,
            Verdict::Answered(Governor::GlobalChallenge, HolderOutcome::ListedGlobal(ip))
        );
    }

    #[test]
    fn the_object_puts_the_holders_allow_list_above_the_global_list_and_below_nothing_else() {
        use Operation::*;
        use PersonalOutcome as P;
        // (operation, global holds, own allow list holds) → the object's answer
        let table = [
            (Check, false, false, None),
            (Check, true, false, Some(P::ListedGlobal)),
            (Add, true, false, Some(P::AlreadyGlobal)),
            (Check, false, true, Some(P::OwnAllowListed)),
            (Check, true, true, Some(P::OwnAllowListed)),
            (Add, true, true, Some(P::OwnAllowListed)),
            (Add, false, true, Some(P::OwnAllowListed)),
            // A removal is the personal list's: the allow list took its entries away.
            (Remove, false, true, None),
            (Remove, true, true, None),
        ];
        for (operation, global, own, expected) in table {
            let holding = Holding {
                global_challenge: global,
                own_allow: own,
            };
            assert_eq!(
                governor_in_object(operation, holding).object_outcome(operation.into()),
                expected,
                "in the object the holder's allow list answers over the global list: {operation:?}, global {global}, own allow list {own}"
            );
        }
    }

    #[test]
    fn the_holders_allow_list_cuts_the_global_list_and_hides_its_entries_in_a_feed() {
        let lists =
            lists(&[(v4("198.51.99.0"), v4("198.51.99.3"))], &[], &[], &[]).and_own_allow((
                Rc::new(vec![(v4("198.51.99.2"), v4("198.51.99.3"))]),
                Rc::default(),
            ));
        let blocks: Vec<String> = lists.challenged_blocks().map(|b| b.to_string()).collect();
        assert_eq!(blocks, ["198.51.99.0/31"]);
        assert_eq!(
            lists.governor_of_entry(entry("198.51.99.3")),
            Governor::HolderAllow
        );
        assert!(!lists.challenges_entry(entry("198.51.99.3")));
        assert!(lists.challenges_entry(entry("198.51.99.1")));
    }

    #[test]
    fn a_report_is_refused_by_either_allow_list_and_taken_whatever_the_global_list_holds() {
        use Governor::*;
        let ip = given("203.0.114.9");
        let report = |holding: &[Governor], own_allow_list| {
            let asked = RefCell::new(Vec::new());
            let verdict = now(verdict(
                Weighing::Report,
                ip.clone(),
                own_allow_list,
                async |kind, _| {
                    let list = Governor::PRECEDENCE
                        .into_iter()
                        .find(|list| list.operator_list() == Some(kind))
                        .unwrap();
                    asked.borrow_mut().push(list);
                    Ok::<_, ()>(holding.contains(&list))
                },
            ))
            .unwrap();
            (verdict, asked.into_inner())
        };
        assert_eq!(
            report(&[GlobalAllow], true),
            (
                Verdict::Answered(
                    Governor::GlobalAllow,
                    HolderOutcome::AllowListed(ip.clone())
                ),
                vec![GlobalAllow]
            )
        );
        assert_eq!(
            report(&[GlobalChallenge], true),
            (
                Verdict::ForObject {
                    ip: ip.clone(),
                    global_challenge: false,
                },
                vec![GlobalAllow]
            ),
            "the global list is not asked: a report of what it holds is taken"
        );
        let in_object = |global_challenge, own_allow| {
            governor_in_object(
                Weighing::Report,
                Holding {
                    global_challenge,
                    own_allow,
                },
            )
            .report_outcome()
        };
        assert_eq!(in_object(false, true), Some(ReportOutcome::OwnAllowListed));
        assert_eq!(
            in_object(true, false),
            None,
            "the global list never refuses one"
        );
        assert_eq!(in_object(false, false), None);
    }

    #[test]
    fn an_ipv6_form_that_carries_an_allowed_ipv4_address_is_allowed_for_every_weighing() {
        let carrying = SubmittedIp::from("64:ff9b::6810:101".parse::<PublicIp>().unwrap());
        let allowed: PublicIp = "104.16.1.1".parse().unwrap();
        for weighing in [
            Weighing::Operation(Operation::Check),
            Weighing::Operation(Operation::Add),
            Weighing::Operation(Operation::Remove),
            Weighing::Report,
        ] {
            let verdict = now(verdict(
                weighing,
                carrying.clone(),
                false,
                async |kind, ip| Ok::<_, ()>(kind == ListKind::Allow && ip == allowed),
            ))
            .unwrap();
            assert_eq!(
                verdict,
                Verdict::Answered(
                    Governor::GlobalAllow,
                    HolderOutcome::AllowListed(carrying.clone())
                ),
                "{weighing:?}: an IPv6 form carrying an allowed IPv4 address is allowed"
            );
        }
        // The global challenge list holds only what it holds: the form is itself there.
        let verdict = now(verdict(
            Operation::Check,
            carrying.clone(),
            false,
            async |kind, ip| Ok::<_, ()>(kind == ListKind::Global && ip == allowed),
        ))
        .unwrap();
        assert_eq!(
            verdict,
            Verdict::ForObject {
                ip: carrying,
                global_challenge: false,
            }
        );
    }

    #[test]
    fn the_answers_are_the_specified_texts() {
        let message = |operation, holding: &[Governor]| match weigh(operation, holding).0 {
            Verdict::Answered(_, outcome) | Verdict::Refused(outcome) => outcome.message(),
            Verdict::ForObject { ip, .. } => {
                HolderOutcome::Personal(ip, PersonalOutcome::Unlisted).message()
            }
        };
        assert_eq!(
            message(Operation::Add, &[Governor::GlobalAllow]),
            "[203.0.114.9] is on the global allow list, no action was taken"
        );
        assert_eq!(
            message(Operation::Check, &[Governor::GlobalChallenge]),
            "[203.0.114.9] is on global greylist"
        );
        assert_eq!(
            message(Operation::Add, &[Governor::GlobalChallenge]),
            "[203.0.114.9] is already on global greylist"
        );
    }

    #[test]
    fn a_failed_lookup_is_the_callers_fault_to_report() {
        let failed = now(verdict(
            Operation::Check,
            given("203.0.114.9"),
            false,
            async |_, _| Err::<bool, _>("storage"),
        ));
        assert_eq!(failed, Err("storage"));
    }

    fn v4(text: &str) -> u32 {
        u32::from(text.parse::<std::net::Ipv4Addr>().unwrap())
    }

    fn v6(text: &str) -> u128 {
        u128::from(text.parse::<std::net::Ipv6Addr>().unwrap())
    }

    /// The lists with these IPv4 and IPv6 intervals, each list one shard.
    fn lists(
        global: &[(u32, u32)],
        allow: &[(u32, u32)],
        global6: &[(u128, u128)],
        allow6: &[(u128, u128)],
    ) -> PublishedLists {
        PublishedLists::new(
            (one_shard(global), one_shard(global6)),
            (Rc::new(allow.to_vec()), Rc::new(allow6.to_vec())),
        )
    }

    fn one_shard<A: Addr>(intervals: &[(A, A)]) -> Shards<A> {
        Shards::new(
            vec![A::default()],
            vec![Rc::new(Shard::of_intervals(intervals.to_vec()))],
        )
    }

    fn entry(text: &str) -> Listed {
        text.parse().unwrap()
    }

    #[test]
    fn a_feed_weighs_each_entry_by_the_same_precedence() {
        let lists = lists(
            &[
                (v4("198.51.99.0"), v4("198.51.99.255")),
                (v4("203.0.114.5"), v4("203.0.114.5")),
            ],
            &[(v4("198.51.99.7"), v4("198.51.99.7"))],
            &[(v6("2a00:1450:9::"), v6("2a00:1450:9::ffff:ffff:ffff:ffff"))],
            &[(v6("2a00:1450:1::5"), v6("2a00:1450:1::5"))],
        );
        let of = |text| lists.governor_of_entry(entry(text));
        // The allow list governs what it holds, the global list too.
        assert_eq!(of("198.51.99.7"), Governor::GlobalAllow);
        // A /64 is left out when the allow list holds any address of it.
        assert_eq!(of("2a00:1450:1::/64"), Governor::GlobalAllow);
        assert_eq!(of("2a00:1450:1::9"), Governor::Personal);
        // The global list governs an entry that is one of its own blocks...
        assert_eq!(of("203.0.114.5"), Governor::GlobalChallenge);
        assert_eq!(of("2a00:1450:9::/64"), Governor::GlobalChallenge);
        // ...not one inside a larger block, which the feed writes beside it.
        assert_eq!(of("198.51.99.8"), Governor::Personal);
        assert_eq!(of("8.8.8.8"), Governor::Personal);
    }

    #[test]
    fn the_challenged_global_list_is_the_global_list_without_the_allow_list() {
        let lists = lists(
            &[(v4("198.51.99.0"), v4("198.51.99.3"))],
            &[(v4("198.51.99.1"), v4("198.51.99.1"))],
            &[],
            &[],
        );
        let blocks: Vec<String> = lists.challenged_blocks().map(|b| b.to_string()).collect();
        assert_eq!(blocks, ["198.51.99.0", "198.51.99.2/31"]);
        let holding = |text: &str| {
            let ip = given(text).ip;
            lists.block_holding(ip).map(|b| b.to_string())
        };
        assert_eq!(holding("198.51.99.3").as_deref(), Some("198.51.99.2/31"));
        assert_eq!(holding("198.51.99.1"), None);
        assert!(!lists.challenges_entry(entry("198.51.99.1")));
        assert!(lists.challenges_entry(entry("198.51.99.2")));
    }
}
