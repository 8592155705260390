//! A feed as CrowdSec's bouncers read it: each item a decision, the stream's
//! filters, and where each feed token's pulls stand, so that a pull without
//! `startup` answers only what changed since that token's previous one.

use serde::{Deserialize, Serialize};

use crate::domain::code::Coded;
use crate::domain::feed::cap::CursorCut;
use crate::domain::feed::item::{FeedBlock, FeedItem, FeedVersion, Source};
use crate::domain::time::{UnixTime, SECONDS_PER_DAY};

/// What a bouncer does with an address: block it, or challenge it (the bouncers
/// that can show a captcha: nginx/OpenResty, Traefik, HAProxy, Cloudflare).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecisionType {
    Ban,
    Captcha,
}

impl Coded for DecisionType {
    const ALL: &'static [Self] = &[Self::Ban, Self::Captcha];

    fn code(self) -> &'static str {
        match self {
            Self::Ban => "ban",
            Self::Captcha => "captcha",
        }
    }
}

/// The origin of a decision from the holder's own list.
pub const ORIGIN_PERSONAL: &str = "greylist";
/// The origin of a decision from the global list, the operator's entries and
/// the promoted ones alike: a bouncer's `origins` filter takes or leaves both.
pub const ORIGIN_GLOBAL: &str = "greylist-global";
/// The scenario of an entry without a comment, and of the global list's blocks.
const SCENARIO_PERSONAL: &str = "greylist/personal";
const SCENARIO_GLOBAL: &str = "greylist/global";
/// The scenario of a global block the holders' reports promoted: it contains
/// `global`, as the operator's blocks' does, so that `scenarios_containing=global`
/// still takes every block of the global list, and `promoted`, so that
/// `scenarios_not_containing=promoted` leaves the promoted ones out.
const SCENARIO_PROMOTED: &str = "greylist/global-promoted";

/// How long a bouncer holds an entry that has no expiry, and at most one that
/// has: a week, well under the 2 147 483 s the firewall bouncer caps timeouts at.
pub const STANDING_SECONDS: u64 = 7 * SECONDS_PER_DAY;
/// A token's pull re-announces everything once this long has passed since it
/// last did, so that no standing entry runs out in a bouncer that keeps pulling.
pub const RENEW_AFTER_SECONDS: u64 = 3 * SECONDS_PER_DAY;
/// The duration a deleted decision carries: ended a second ago.
const DELETED_SECONDS: i64 = -1;

/// A duration as Go prints it (`time.Duration.String`) for whole seconds:
/// `"167h59m59s"`, `"1m0s"`, `"59s"`, `"-1s"`.
pub fn go_duration(seconds: i64) -> String {
    let sign = if seconds < 0 { "-" } else { "" };
    let total = seconds.unsigned_abs();
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    match (h, m) {
        (0, 0) => format!("{sign}{s}s"),
        (0, _) => format!("{sign}{m}m{s}s"),
        _ => format!("{sign}{h}h{m}m{s}s"),
    }
}

/// One decision, with all seven fields the bouncers read (they crash on a missing one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision<'a> {
    pub id: u64,
    pub origin: &'static str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub scope: &'static str,
    pub value: String,
    pub duration: String,
    pub scenario: &'a str,
}

impl<'a> Decision<'a> {
    /// The decision a feed item makes at `now`: in `new`, or (`deleted`) one that has ended.
    pub fn of(item: &'a FeedItem, kind: DecisionType, now: UnixTime, deleted: bool) -> Self {
        let seconds = if deleted {
            DELETED_SECONDS
        } else {
            let left = item
                .expires_at
                .map_or(STANDING_SECONDS, |at| at.0.saturating_sub(now.0));
            left.clamp(1, STANDING_SECONDS) as i64
        };
        let scenario = match (&item.comment, item.source) {
            (Some(comment), _) if !comment.is_empty() => comment.as_str(),
            (_, Source::Personal) => SCENARIO_PERSONAL,
            (_, Source::Operator) => SCENARIO_GLOBAL,
            (_, Source::Promoted) => SCENARIO_PROMOTED,
        };
        Self {
            id: decision_id(item),
            origin: if item.source.is_global() {
                ORIGIN_GLOBAL
            } else {
                ORIGIN_PERSONAL
            },
            kind: kind.code(),
            scope: match item.block {
                FeedBlock::V4(range) if range.prefix() < 32 => "Range",
                FeedBlock::V6Range(range) if range.prefix() < 128 => "Range",
                FeedBlock::V4(_) | FeedBlock::V6(_) | FeedBlock::V6Range(_) => "Ip",
                FeedBlock::V6Net64(_) => "Range",
            },
            value: item.block.to_string(),
            duration: go_duration(seconds),
            scenario,
        }
    }
}

/// A stable id per value sent and list: the same block of the same list has the
/// same id in every answer, whether it was promoted or not, and a global range
/// the allow list splits is several values, each with its own. Below 2^53, so JavaScript reads it exactly. An IPv4
/// block's id is below 2^39 and says what it is; an IPv6 value's has bit 52 set,
/// bit 51 for a personal /64, and 51 bits of a mix of its 128 (a global block's
/// with its prefix and the list mixed in; two values share an id with odds of
/// about one in 2^51 a pair).
pub fn decision_id(item: &FeedItem) -> u64 {
    match item.block {
        FeedBlock::V4(range) => {
            (u64::from(item.source.is_global()) << 38)
                | (u64::from(range.first()) << 6)
                | u64::from(range.prefix())
        }
        FeedBlock::V6(ip) => ipv6_id(u128::from(ip.addr()), false),
        FeedBlock::V6Net64(net) => ipv6_id(u128::from(net.addr()), true),
        FeedBlock::V6Range(range) => {
            let list = mix(GLOBAL_IPV6 | u64::from(range.prefix()));
            let mixed = mix((range.first() >> 64) as u64 ^ mix(range.first() as u64 ^ list));
            (1 << 52) | (mixed & ((1 << 51) - 1))
        }
    }
}

/// Mixed into a global IPv6 block's id, so that it is not the personal address's.
const GLOBAL_IPV6: u64 = 0x6106 << 8;

/// An IPv6 value's id: whether it is a /64, and its address mixed into 51 bits.
fn ipv6_id(value: u128, net64: bool) -> u64 {
    let mixed = mix((value >> 64) as u64 ^ mix(value as u64));
    (1 << 52) | (u64::from(net64) << 51) | (mixed & ((1 << 51) - 1))
}

/// SplitMix64's finalizer: every input bit moves about half the output bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The most words `scenarios_containing` and `scenarios_not_containing` take
/// each, and the most bytes a word may have: each word is looked for in the
/// scenario of every decision a pull writes, ten million of them for a global
/// list at its bound, so what one pull asks for is bounded too. CrowdSec's own
/// filters name a scenario or two.
pub const MAX_SCENARIO_WORDS: usize = 32;
pub const MAX_SCENARIO_WORD_BYTES: usize = 64;

/// A scenario filter's words (`parameter` names it), or why a pull may not ask for them.
pub fn scenario_words(parameter: &str, words: Vec<String>) -> Result<Vec<String>, String> {
    if words.len() > MAX_SCENARIO_WORDS {
        return Err(format!(
            "{parameter} takes at most {MAX_SCENARIO_WORDS} words, not {}",
            words.len()
        ));
    }
    match words
        .iter()
        .find(|word| word.len() > MAX_SCENARIO_WORD_BYTES)
    {
        Some(word) => Err(format!(
            "a word of {parameter} has at most {MAX_SCENARIO_WORD_BYTES} bytes, not {}",
            word.len()
        )),
        None => Ok(words),
    }
}

/// The stream's filters, as CrowdSec's Local API applies them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Scopes, lower case; `None` for the default (`ip` and `range`).
    pub scopes: Option<Vec<String>>,
    /// Origins, matched exactly.
    pub origins: Option<Vec<String>>,
    /// Words, their ASCII letters in lower case: a scenario must contain one of them...
    pub containing: Vec<String>,
    /// ... and none of these.
    pub not_containing: Vec<String>,
}

impl Filter {
    /// Whether a deletion goes out: by scope and origin only, since a deletion
    /// no longer carries the comment its addition had as its scenario.
    pub fn admits_deletion(&self, decision: &Decision) -> bool {
        self.scopes.as_ref().is_none_or(|scopes| {
            scopes
                .iter()
                .any(|s| s.eq_ignore_ascii_case(decision.scope))
        }) && self
            .origins
            .as_ref()
            .is_none_or(|origins| origins.iter().any(|o| o == decision.origin))
    }

    pub fn admits(&self, decision: &Decision) -> bool {
        self.admits_deletion(decision) && self.admits_scenario(decision.scenario)
    }

    /// Whether a scenario has one of the wanted words and none of the others;
    /// read in lower case only when a filter asks about it. ASCII letters fold,
    /// on both sides, and no others: CrowdSec's Local API on its default
    /// database folds the scenario's ASCII letters only (SQLite's `LOWER` and
    /// `LIKE`), but lowers the word's others too (Go's `strings.ToLower`), so
    /// that there a word with a capital non-ASCII letter never matches. Unicode's
    /// case tables would weigh about 10 KiB in the edge's module for that.
    fn admits_scenario(&self, scenario: &str) -> bool {
        if self.containing.is_empty() && self.not_containing.is_empty() {
            return true;
        }
        let scenario = scenario.to_ascii_lowercase();
        let has = |word: &String| scenario.contains(word.as_str());
        (self.containing.is_empty() || self.containing.iter().any(has))
            && !self.not_containing.iter().any(has)
    }
}

/// Where a token's pulls stand: the cursor of its previous answer, and when an
/// answer last announced everything; for a token that cuts its feed
/// (`maxItems`), how far the cut its bouncer holds reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub cursor: FeedVersion,
    pub renewed_at: UnixTime,
    pub cut: CursorCut,
}

/// What a pull asks, beside the token: the operator's lists' versions now (the
/// global one 0 for a token that does not read it), and, on a second call, the
/// position the caller worked out the operator's changes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pull {
    pub startup: bool,
    pub global: u64,
    pub allow: u64,
    pub from: Option<OperatorFrom>,
    /// The personal history number a cut token's cut was counted at: a pull
    /// at another is answered `Recount`, so that it sends nothing the count
    /// never weighed.
    pub counted_at: Option<u64>,
}

/// The operator's changes since a position, as the caller found them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorFrom {
    pub position: FeedVersion,
    /// Whether the published changes said what they were (else the whole feed answers).
    pub known: bool,
}

/// How the holder's object answers a pull.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullPlan {
    /// Nothing changed and nothing is due: `{"new": [], "deleted": []}`.
    Unchanged,
    /// The list changed since the caller counted its cut: nothing is read,
    /// the position stays, and the caller counts again.
    Recount,
    /// The operator's lists changed since the token's position: the caller
    /// works out what changed from it, and asks again.
    Moved(FeedVersion),
    /// Every entry in `new`; `reset` when changes were due but are not known.
    Whole { reset: bool },
    /// What changed since this personal history number.
    Delta { since: u64 },
    /// What was deleted since this history number, then every entry deleted
    /// and announced again: a bouncer that keeps what it has (the firewall
    /// bouncer's nftables mode) takes a new timeout only for a new element.
    Renewal { since: u64 },
}

impl PullPlan {
    /// How a pull is answered, from the token's stored position, the personal
    /// list's newest history number, and whether the history still reaches back
    /// to a number. When the operator's lists' changes since the position are not
    /// known, the pull renews: the holder's own deletions still go out, and every
    /// entry is announced again.
    /// A pull that cuts (`cut`, how far the cut reaches now) otherwise than
    /// its position held moves the cut, though nothing else changed.
    pub fn of(
        pull: &Pull,
        stored: Option<Position>,
        changes: u64,
        remembered: impl Fn(u64) -> bool,
        (now, cut): (UnixTime, CursorCut),
    ) -> Self {
        if pull.counted_at.is_some_and(|at| at != changes) {
            return Self::Recount;
        }
        let Some(position) = stored.filter(|_| !pull.startup) else {
            return Self::Whole { reset: false };
        };
        let cursor = position.cursor;
        if !remembered(cursor.changes) {
            return Self::Whole { reset: true };
        }
        let operator_same = cursor.global == pull.global && cursor.allow == pull.allow;
        let known = match pull.from {
            _ if operator_same => true,
            Some(from) if from.position == cursor => from.known,
            _ => return Self::Moved(cursor),
        };
        let since = cursor.changes;
        let due = now.0 >= position.renewed_at.0.saturating_add(RENEW_AFTER_SECONDS);
        if due || !known {
            Self::Renewal { since }
        } else if operator_same && since == changes && position.cut == cut {
            Self::Unchanged
        } else {
            Self::Delta { since }
        }
    }

    /// The position the token holds once the answer is read, or `None` when it stays.
    pub fn next(
        self,
        stored: Option<Position>,
        (current, cut): (FeedVersion, CursorCut),
        now: UnixTime,
    ) -> Option<Position> {
        match self {
            Self::Unchanged | Self::Recount | Self::Moved(_) => None,
            Self::Whole { .. } | Self::Renewal { .. } => Some(Position {
                cursor: current,
                renewed_at: now,
                cut,
            }),
            Self::Delta { .. } => Some(Position {
                cursor: current,
                renewed_at: stored.map_or(now, |p| p.renewed_at),
                cut,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::feed::cap::Bound;
    use crate::domain::net::range::Ipv4Range;

    fn item(block: &str, global: bool, expires_at: Option<u64>, comment: Option<&str>) -> FeedItem {
        FeedItem {
            added_at: None,
            block: FeedBlock::V4(Ipv4Range::parse(block).unwrap()),
            source: if global {
                Source::Operator
            } else {
                Source::Personal
            },
            expires_at: expires_at.map(UnixTime),
            comment: comment.map(str::to_owned),
        }
    }

    #[test]
    fn a_global_ipv6_block_is_a_range_decision_with_an_id_apart_from_personal_ones() {
        let global = |text: &str| FeedItem {
            added_at: None,
            block: FeedBlock::V6Range(crate::domain::net::range::Ipv6Range::parse(text).unwrap()),
            source: Source::Operator,
            expires_at: None,
            comment: None,
        };
        let wide = global("2a06:5280::/29");
        let block = Decision::of(&wide, DecisionType::Ban, UnixTime(0), false);
        assert_eq!(
            (block.scope, block.value.as_str(), block.origin),
            ("Range", "2a06:5280::/29", ORIGIN_GLOBAL)
        );
        let one = global("2a06:5280::1");
        let single = Decision::of(&one, DecisionType::Ban, UnixTime(0), false);
        assert_eq!(
            (single.scope, single.value.as_str()),
            ("Ip", "2a06:5280::1")
        );
        let personal = |text: &str| FeedItem {
            added_at: None,
            block: FeedBlock::V6(
                crate::domain::net::ipv6::PublicIpv6::from_addr(text.parse().unwrap()).unwrap(),
            ),
            source: Source::Personal,
            expires_at: None,
            comment: None,
        };
        let ids: std::collections::BTreeSet<u64> = [
            decision_id(&global("2a06:5280::/29")),
            decision_id(&global("2a06:5280::/32")),
            decision_id(&global("2a06:5280::/128")),
            decision_id(&personal("2a06:5280::")),
        ]
        .into();
        assert_eq!(
            ids.len(),
            4,
            "a prefix and the list make ids of their own: {ids:?}"
        );
        assert!(ids.iter().all(|&id| (1 << 52..1 << 53).contains(&id)));
        assert_eq!(
            decision_id(&global("2a06:5280::/29")),
            decision_id(&global("2A06:5280:0::/29"))
        );
    }

    #[test]
    fn an_ipv6_address_is_an_ip_decision_with_an_id_of_its_own_below_2_53() {
        let v6 = |text: &str| FeedItem {
            added_at: None,
            block: FeedBlock::V6(
                crate::domain::net::ipv6::PublicIpv6::from_addr(text.parse().unwrap()).unwrap(),
            ),
            source: Source::Personal,
            expires_at: None,
            comment: None,
        };
        let a = v6("2a00:1450:4001:80b::200e");
        let decision = Decision::of(&a, DecisionType::Ban, UnixTime(0), false);
        assert_eq!(
            (decision.scope, decision.value.as_str()),
            ("Ip", "2a00:1450:4001:80b::200e")
        );
        let ids: std::collections::BTreeSet<u64> = [
            "2a00:1450:4001:80b::200e",
            "2a00:1450:4001:80b::200f",
            "2a00:1450:4001:80c::200e",
            "2606:4700::1111",
        ]
        .map(|text| decision_id(&v6(text)))
        .into();
        assert_eq!(ids.len(), 4, "{ids:?}");
        assert!(ids.iter().all(|&id| (1 << 52..1 << 53).contains(&id)));
        assert!(decision_id(&item("255.255.255.255", true, None, None)) < 1 << 52);
        assert_eq!(
            decision_id(&a),
            decision_id(&v6("2a00:1450:4001:80b:0::200e"))
        );
        // A /64 and any address of it, its first included, have ids of their own.
        let first = v6("2a00:1450:4001:80b::");
        let FeedBlock::V6(network) = first.block else {
            unreachable!()
        };
        let net = FeedItem {
            block: FeedBlock::V6Net64(network),
            ..first.clone()
        };
        for inside in [
            "2a00:1450:4001:80b::",
            "2a00:1450:4001:80b::c0",
            "2a00:1450:4001:80b::40",
        ] {
            assert_ne!(
                decision_id(&net),
                decision_id(&v6(inside)),
                "a /64 and an address in it never share an id: {inside}"
            );
        }
    }

    #[test]
    fn durations_print_as_go_prints_them() {
        assert_eq!(go_duration(604_799), "167h59m59s");
        assert_eq!(go_duration(60), "1m0s");
        assert_eq!(go_duration(3600), "1h0m0s");
        assert_eq!(go_duration(59), "59s");
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(-1), "-1s");
        assert_eq!(go_duration(-3661), "-1h1m1s");
    }

    #[test]
    fn a_decision_carries_every_field_with_its_duration_capped_at_the_standing_one() {
        let now = UnixTime(1_000_000);
        let scanner = item("8.8.8.8", false, Some(1_000_000 + 604_799), Some("scanner"));
        let decision = Decision::of(&scanner, DecisionType::Ban, now, false);
        assert_eq!(
            serde_json::to_value(&decision).unwrap(),
            serde_json::json!({
                "id": decision_id(&scanner), "origin": "greylist", "type": "ban", "scope": "Ip",
                "value": "8.8.8.8", "duration": "167h59m59s", "scenario": "scanner"
            })
        );
        let far = item("8.8.8.8", false, Some(1_000_000 + 30 * 86_400), None);
        assert_eq!(
            Decision::of(&far, DecisionType::Ban, now, false).duration,
            "168h0m0s"
        );
        let standing = item("45.0.0.0/8", true, None, None);
        let decision = Decision::of(&standing, DecisionType::Captcha, now, false);
        assert_eq!(
            (
                decision.origin,
                decision.kind,
                decision.scope,
                decision.scenario,
                decision.duration.as_str()
            ),
            (
                "greylist-global",
                "captcha",
                "Range",
                "greylist/global",
                "168h0m0s"
            )
        );
        let gone = Decision::of(&scanner, DecisionType::Ban, now, true);
        assert_eq!((gone.duration.as_str(), gone.scenario), ("-1s", "scanner"));
        let plain = item("9.9.9.9", false, None, Some(""));
        assert_eq!(
            Decision::of(&plain, DecisionType::Ban, now, false).scenario,
            "greylist/personal"
        );
    }

    #[test]
    fn a_promoted_block_says_so_in_its_scenario_and_keeps_the_global_lists_origin_and_id() {
        let now = UnixTime(0);
        let operator = item("45.0.0.0/8", true, None, None);
        let promoted = FeedItem {
            source: Source::Promoted,
            ..item("81.6.0.1", true, None, None)
        };
        let (o, p) = (
            Decision::of(&operator, DecisionType::Ban, now, false),
            Decision::of(&promoted, DecisionType::Ban, now, false),
        );
        assert_eq!(
            (p.origin, p.scenario, p.scope),
            (ORIGIN_GLOBAL, "greylist/global-promoted", "Ip")
        );
        assert_eq!((o.origin, o.scenario), (ORIGIN_GLOBAL, "greylist/global"));
        assert_eq!(
            decision_id(&promoted),
            decision_id(&item("81.6.0.1", true, None, None)),
            "one value of one list, whoever listed it"
        );
        let words = |containing: &[&str], not: &[&str]| Filter {
            containing: containing.iter().map(|w| w.to_string()).collect(),
            not_containing: not.iter().map(|w| w.to_string()).collect(),
            ..Filter::default()
        };
        let global = words(&["global"], &[]);
        assert!(global.admits(&o) && global.admits(&p), "every global block");
        let only = words(&["promoted"], &[]);
        assert!(!only.admits(&o) && only.admits(&p));
        let without = words(&[], &["promoted"]);
        assert!(without.admits(&o) && !without.admits(&p));
        let origins = Filter {
            origins: Some(vec![ORIGIN_GLOBAL.into()]),
            ..Filter::default()
        };
        assert!(origins.admits(&o) && origins.admits(&p));
    }

    #[test]
    fn ids_are_stable_per_value_and_list_and_distinct_across_them() {
        let ids = [
            item("45.0.0.0/8", true, None, None),
            item("45.0.0.0/9", true, None, None),
            item("45.0.0.0/32", true, None, None),
            item("45.0.0.0", false, Some(5), Some("x")),
            item("45.0.0.1", false, None, None),
            item("255.255.255.255", true, None, None),
        ]
        .map(|i| decision_id(&i));
        let mut distinct = ids.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ids.len());
        assert!(ids.iter().all(|&id| id < 1 << 53));
        assert_eq!(ids[3], decision_id(&item("45.0.0.0", false, None, None)));
    }

    #[test]
    fn filters_match_as_the_local_api_does() {
        let now = UnixTime(0);
        let personal = item("8.8.8.8", false, None, Some("SSH brute force"));
        let global = item("45.0.0.0/8", true, None, None);
        let (p, g) = (
            Decision::of(&personal, DecisionType::Ban, now, false),
            Decision::of(&global, DecisionType::Ban, now, false),
        );
        let all = Filter::default();
        assert!(all.admits(&p) && all.admits(&g));
        let ips = Filter {
            scopes: Some(vec!["ip".into()]),
            ..Filter::default()
        };
        assert!(
            ips.admits(&p) && !ips.admits(&g),
            "scopes=ip admits the address and leaves out the range"
        );
        let global_only = Filter {
            origins: Some(vec!["greylist-global".into()]),
            ..Filter::default()
        };
        assert!(!global_only.admits(&p) && global_only.admits(&g));
        let ssh = Filter {
            containing: vec!["ssh".into(), "nothing".into()],
            ..Filter::default()
        };
        assert!(ssh.admits(&p) && !ssh.admits(&g));
        let not_ssh = Filter {
            not_containing: vec!["brute".into()],
            ..Filter::default()
        };
        assert!(!not_ssh.admits(&p) && not_ssh.admits(&g));
        // ASCII letters fold, others are compared as they are.
        let folded = |comment: &str, word: &str| {
            let entry = item("8.8.8.8", false, None, Some(comment));
            let filter = Filter {
                containing: vec![word.to_owned()],
                ..Filter::default()
            };
            filter.admits(&Decision::of(&entry, DecisionType::Ban, now, false))
        };
        assert!(
            folded("SSH-BF on Web-1", "ssh-bf on web"),
            "ASCII letters fold"
        );
        for same in ["Ärger", "ärger"] {
            assert!(
                folded(same, same),
                "every other character is compared as it is: {same}"
            );
        }
        assert!(!folded("Ärger", "ärger"), "no other letter folds");
        // A deletion carries no comment: only its scope and origin are filtered.
        let gone = Decision::of(&personal, DecisionType::Ban, now, true);
        let global_gone = Decision::of(&global, DecisionType::Ban, now, true);
        assert!(ssh.admits_deletion(&gone) && ips.admits_deletion(&gone));
        assert!(!global_only.admits_deletion(&gone) && !ips.admits_deletion(&global_gone));
    }

    fn version(changes: u64, global: u64, allow: u64) -> FeedVersion {
        FeedVersion {
            changes,
            global,
            allow,
        }
    }

    #[test]
    fn a_pull_answers_from_the_tokens_position() {
        let now = UnixTime(1_000_000);
        let pull = Pull {
            startup: false,
            global: 3,
            allow: 2,
            from: None,
            counted_at: None,
        };
        let at = |cursor, renewed_at| {
            Some(Position {
                cursor,
                renewed_at: UnixTime(renewed_at),
                cut: CursorCut::Whole,
            })
        };
        let all = |_: u64| true;
        let fresh = now.0 - 10;
        assert_eq!(
            PullPlan::of(&pull, None, 7, all, (now, CursorCut::Whole)),
            PullPlan::Whole { reset: false },
            "a first pull"
        );
        let startup = Pull {
            startup: true,
            ..pull
        };
        assert_eq!(
            PullPlan::of(
                &startup,
                at(version(7, 3, 2), fresh),
                7,
                all,
                (now, CursorCut::Whole)
            ),
            PullPlan::Whole { reset: false }
        );
        assert_eq!(
            PullPlan::of(
                &pull,
                at(version(7, 3, 2), fresh),
                7,
                all,
                (now, CursorCut::Whole)
            ),
            PullPlan::Unchanged
        );
        let cut = CursorCut::Bound(Bound::Upto(crate::domain::feed::cap::Key {
            rank: crate::domain::feed::cap::Rank::Promoted,
            place: (1, 32),
        }));
        assert_eq!(
            PullPlan::of(&pull, at(version(7, 3, 2), fresh), 7, all, (now, cut)),
            PullPlan::Delta { since: 7 },
            "a pull that cuts otherwise than its position held moves the cut"
        );
        assert_eq!(
            PullPlan::of(
                &pull,
                at(version(5, 3, 2), fresh),
                7,
                all,
                (now, CursorCut::Whole)
            ),
            PullPlan::Delta { since: 5 }
        );
        assert_eq!(
            PullPlan::of(
                &pull,
                at(version(5, 3, 2), fresh),
                7,
                |n| n > 5,
                (now, CursorCut::Whole)
            ),
            PullPlan::Whole { reset: true },
            "the history no longer reaches back"
        );
        let stale = now.0 - RENEW_AFTER_SECONDS;
        assert_eq!(
            PullPlan::of(
                &pull,
                at(version(7, 3, 2), stale),
                7,
                all,
                (now, CursorCut::Whole)
            ),
            PullPlan::Renewal { since: 7 }
        );
        // The global list moved: the caller works the change out, then asks again.
        let moved = at(version(7, 2, 2), fresh);
        assert_eq!(
            PullPlan::of(&pull, moved, 7, all, (now, CursorCut::Whole)),
            PullPlan::Moved(version(7, 2, 2))
        );
        let known = Pull {
            from: Some(OperatorFrom {
                position: version(7, 2, 2),
                known: true,
            }),
            ..pull
        };
        assert_eq!(
            PullPlan::of(&known, moved, 7, all, (now, CursorCut::Whole)),
            PullPlan::Delta { since: 7 }
        );
        let unknown = Pull {
            from: Some(OperatorFrom {
                position: version(7, 2, 2),
                known: false,
            }),
            ..pull
        };
        assert_eq!(
            PullPlan::of(&unknown, moved, 7, all, (now, CursorCut::Whole)),
            PullPlan::Renewal { since: 7 },
            "the holder's own deletions still go out"
        );
        assert_eq!(
            PullPlan::of(&pull, moved, 7, |n| n > 7, (now, CursorCut::Whole)),
            PullPlan::Whole { reset: true },
            "no second call when the history does not reach back anyway"
        );
        let other = Pull {
            from: Some(OperatorFrom {
                position: version(6, 2, 2),
                known: true,
            }),
            ..pull
        };
        assert_eq!(
            PullPlan::of(&other, moved, 7, all, (now, CursorCut::Whole)),
            PullPlan::Moved(version(7, 2, 2)),
            "another pull moved it"
        );
        // A cut counted at another history number than the list's now, for
        // every pull, a first one too; at the same, the pull as it would be.
        for (pull, stored) in [(pull, at(version(5, 3, 2), fresh)), (startup, None)] {
            let counted = |at| Pull {
                counted_at: Some(at),
                ..pull
            };
            let plan = |pull: &Pull| PullPlan::of(pull, stored, 7, all, (now, CursorCut::Whole));
            assert_eq!(plan(&counted(6)), PullPlan::Recount, "{pull:?}");
            assert_eq!(plan(&counted(7)), plan(&pull), "{pull:?}");
        }
    }

    #[test]
    fn a_position_moves_only_when_the_answer_says_something_and_renews_on_whole_answers() {
        let now = UnixTime(500);
        let stored = Some(Position {
            cursor: version(5, 3, 2),
            renewed_at: UnixTime(100),
            cut: CursorCut::Whole,
        });
        let current = version(7, 3, 2);
        let cut = CursorCut::Bound(Bound::Everything);
        assert_eq!(PullPlan::Unchanged.next(stored, (current, cut), now), None);
        assert_eq!(PullPlan::Recount.next(stored, (current, cut), now), None);
        assert_eq!(
            PullPlan::Moved(current).next(stored, (current, cut), now),
            None
        );
        assert_eq!(
            PullPlan::Delta { since: 5 }.next(stored, (current, cut), now),
            Some(Position {
                cursor: current,
                renewed_at: UnixTime(100),
                cut,
            }),
            "a position keeps how far the cut reached"
        );
        for plan in [
            PullPlan::Whole { reset: false },
            PullPlan::Renewal { since: 5 },
        ] {
            assert_eq!(
                plan.next(stored, (current, cut), now),
                Some(Position {
                    cursor: current,
                    renewed_at: now,
                    cut,
                })
            );
        }
    }
}
