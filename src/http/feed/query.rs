//! What a feed request asks for, from its query string and `If-None-Match`: the
//! scope, the format, the cursor it holds, and the `ETag` of each answer.

use crate::domain::code::Coded;
use crate::domain::feed::aggregate::Merging;
use crate::domain::feed::cap::{max_items, CursorCut};
use crate::domain::feed::feed_token::Scope;
use crate::domain::feed::item::FeedVersion;
use crate::http::feed::appliance::{Appliance, ListName};

/// How a feed is written (`format=`): the plain text list, JSON, or one of the
/// files appliances load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Appliance(Appliance),
}

impl Coded for Format {
    const ALL: &'static [Self] = &[
        Self::Text,
        Self::Json,
        Self::Appliance(Appliance::Mikrotik),
        Self::Appliance(Appliance::Nftables),
        Self::Appliance(Appliance::Ipset),
    ];

    fn code(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Json => "json",
            Self::Appliance(Appliance::Mikrotik) => "mikrotik",
            Self::Appliance(Appliance::Nftables) => "nftables",
            Self::Appliance(Appliance::Ipset) => "ipset",
        }
    }
}

impl Format {
    /// The appliance file this format is, if it is one.
    pub fn appliance(self) -> Option<Appliance> {
        match self {
            Self::Text | Self::Json => None,
            Self::Appliance(kind) => Some(kind),
        }
    }
}

/// What the caller asked for, from the query string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedQuery {
    pub scope: Scope,
    pub format: Format,
    /// The list an appliance file fills.
    pub list: ListName,
    /// The changes since this cursor (JSON only), instead of the whole feed.
    pub since: Option<FeedVersion>,
    /// What the cursor says of the cut its feed was (`maxItems`).
    pub since_cut: CursorCut,
    /// The items merged into the fewest CIDR blocks (`aggregate=1`): a whole feed only.
    pub aggregate: bool,
    /// The most items the feed carries (`maxItems`), the most relevant ones
    /// (`cap::Rank`): a whole feed only.
    pub max_items: Option<u64>,
}

impl FeedQuery {
    pub fn parse(query: &str) -> Result<Self, String> {
        let mut parsed = Self {
            scope: Scope::Personal,
            format: Format::Text,
            list: ListName::default(),
            since: None,
            since_cut: CursorCut::Whole,
            aggregate: false,
            max_items: None,
        };
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            match key.as_ref() {
                "scope" => {
                    parsed.scope = Scope::from_code(&value)
                        .ok_or_else(|| format!("scope is personal or all, not {value:?}"))?
                }
                "format" => {
                    parsed.format = Format::from_code(&value).ok_or_else(|| {
                        format!("format is text, json, mikrotik, nftables or ipset, not {value:?}")
                    })?
                }
                "list" => {
                    parsed.list = ListName::parse(&value)
                        .ok_or_else(|| format!("list is {}, not {value:?}", ListName::RULE))?
                }
                "since" => {
                    let (version, cut) = CursorCut::parse(&value).ok_or_else(|| {
                        format!("since must be a cursor from an earlier answer, not {value:?}")
                    })?;
                    parsed.since = Some(version);
                    parsed.since_cut = cut;
                }
                "aggregate" => {
                    parsed.aggregate = match value.as_ref() {
                        "1" | "true" => true,
                        "0" | "false" => false,
                        _ => {
                            return Err(format!("aggregate is 1, true, 0 or false, not {value:?}"))
                        }
                    }
                }
                "maxItems" => parsed.max_items = Some(max_items(&value)?),
                _ => {}
            }
        }
        if parsed.since.is_some() && parsed.format != Format::Json {
            return Err("since needs format=json".to_owned());
        }
        if parsed.since.is_some() && parsed.aggregate {
            return Err("aggregate merges a whole feed: pull it without since".to_owned());
        }
        Ok(parsed)
    }

    /// The version the caller's firewall would have after this answer: the global
    /// list's counts only when it is part of the feed.
    pub fn version(&self, changes: u64, global: u64, allow: u64) -> FeedVersion {
        FeedVersion {
            changes,
            global: if self.scope == Scope::All { global } else { 0 },
            allow,
        }
    }

    /// The query as a feed token that cuts its feeds (`max_items`) reads it:
    /// its setting wins, since a bouncer's or an appliance's URL cannot say
    /// otherwise.
    pub fn cut_by_token(mut self, max_items: Option<u64>) -> Self {
        if max_items.is_some() {
            self.max_items = max_items;
        }
        self
    }

    /// The query as a feed token that merges its feeds (`merges`) reads it: its
    /// setting wins, since its appliance's URL cannot say otherwise, and like
    /// `aggregate` it takes no `since`.
    pub fn merged_by_token(mut self, merges: bool) -> Result<Self, String> {
        if merges {
            if self.since.is_some() {
                return Err(
                    "this feed token merges its feed (aggregate): pull it whole, without since"
                        .to_owned(),
                );
            }
            self.aggregate = true;
        }
        Ok(self)
    }

    /// Which items merge, when the feed is asked merged: in JSON, which says
    /// whose each item is and until when, only those that share both.
    pub fn merging(&self) -> Option<Merging> {
        self.aggregate.then_some(match self.format {
            Format::Json => Merging::SameOriginAndExpiry,
            Format::Text | Format::Appliance(_) => Merging::Anything,
        })
    }

    /// Whether the cursor is one this query's answers give: a cut feed's
    /// cursor, which says how far its cut reached, for a cut feed, a whole
    /// feed's for a whole one. Any other is answered with the whole feed.
    pub fn cursor_fits(&self) -> bool {
        matches!(
            (self.max_items, self.since_cut),
            (None, CursorCut::Whole) | (Some(_), CursorCut::Bound(_))
        )
    }

    /// The `ETag` of the answer this query gets at `version`.
    pub fn etag(&self, version: FeedVersion) -> String {
        let scope = self.scope.code();
        // A merged or cut feed is another answer at the same version; `+` is in
        // no format's code nor any list's name, so no other answer's tag is this.
        let mut format = self.format.code().to_owned();
        let max = self.max_items.map(|max| format!("+max{max}"));
        if self.aggregate {
            format.push_str("+merged");
        }
        if let Some(max) = &max {
            format.push_str(max);
        }
        match (self.since, self.format.appliance()) {
            (Some(since), _) => {
                let cut = self.since_cut;
                format!("\"{scope}-delta-{since}{cut}-{version}\"")
            }
            (None, None) => format!("\"{scope}-{format}-{version}\""),
            // The file names its list, and its timeouts count down from the answer's
            // moment: a file is current only as long as its version and list are.
            (None, Some(_)) => format!("\"{scope}-{format}-{}-{version}\"", self.list.as_str()),
        }
    }

    /// The personal history number to ask the changes after, when a delta can be
    /// given at all: when what changed in the operator's lists since the cursor is
    /// `known`. Whether the holder's history still reaches back to it, the
    /// holder's object decides.
    pub fn delta_from(&self, known: bool) -> Option<u64> {
        self.since
            .filter(|_| known && self.cursor_fits())
            .map(|since| since.changes)
    }

    /// The global list's version the cursor holds, when it is not the current one
    /// and the feed includes the global list: a delta then carries its changes.
    pub fn global_since(&self, global: u64) -> Option<u64> {
        self.since
            .filter(|since| self.scope == Scope::All && since.global != global)
            .map(|since| since.global)
    }

    /// The allow list's version the cursor holds, when it is not the current one:
    /// a delta then carries what its changes hide and show.
    pub fn allow_since(&self, allow: u64) -> Option<u64> {
        self.since
            .filter(|since| since.allow != allow)
            .map(|since| since.allow)
    }

    /// The personal history number the caller holds, when `If-None-Match` names
    /// the answer this query would get with it at the operator lists' `global`
    /// and `allow` versions.
    pub fn known_changes(&self, if_none_match: &str, global: u64, allow: u64) -> Option<u64> {
        crate::http::wire::etag::tags(if_none_match).find_map(|tag| {
            let version = FeedVersion::parse(tag.trim_matches('"').rsplit('-').next()?)?;
            (self.etag(self.version(version.changes, global, allow)) == tag)
                .then_some(version.changes)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::feed::cap::Bound;

    #[test]
    fn queries_parse_with_defaults_and_refuse_the_unknown() {
        let default = FeedQuery::parse("").unwrap();
        assert_eq!(
            (default.scope, default.format, default.since),
            (Scope::Personal, Format::Text, None)
        );
        let delta = FeedQuery::parse("scope=all&format=json&since=7.3.2").unwrap();
        assert_eq!(
            delta.since,
            Some(FeedVersion {
                changes: 7,
                global: 3,
                allow: 2
            })
        );
        assert!(FeedQuery::parse("since=7.3.2")
            .unwrap_err()
            .contains("format=json"));
        assert!(FeedQuery::parse("scope=everything").is_err());
        assert!(FeedQuery::parse("format=xml").is_err());
        let file = FeedQuery::parse("format=mikrotik&list=edge-1").unwrap();
        assert_eq!(
            (file.format, file.list.as_str()),
            (Format::Appliance(Appliance::Mikrotik), "edge-1")
        );
        assert_eq!(
            FeedQuery::parse("format=ipset").unwrap().list.as_str(),
            "greylist"
        );
        assert!(FeedQuery::parse("format=nftables&list=a;b").is_err());
        assert!(FeedQuery::parse("format=nftables&since=1.2.3").is_err());
        for bad in ["7.3", "7.3.2.1", "a.b.c", "+1.2.3", "-1.2.3", ""] {
            assert!(
                FeedQuery::parse(&format!("format=json&since={bad}")).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn aggregate_merges_a_whole_feed_by_what_its_format_says_and_is_its_own_answer() {
        assert_eq!(FeedQuery::parse("").unwrap().merging(), None);
        assert_eq!(FeedQuery::parse("aggregate=0").unwrap().merging(), None);
        for (query, merging) in [
            ("aggregate=1", Merging::Anything),
            ("aggregate=true&format=ipset", Merging::Anything),
            ("aggregate=1&format=json", Merging::SameOriginAndExpiry),
        ] {
            assert_eq!(
                FeedQuery::parse(query).unwrap().merging(),
                Some(merging),
                "{query}"
            );
        }
        assert!(FeedQuery::parse("aggregate=yes")
            .unwrap_err()
            .contains("aggregate"));
        assert!(FeedQuery::parse("format=json&since=1.0.0&aggregate=1")
            .unwrap_err()
            .contains("without since"));
        let version = FeedVersion {
            changes: 3,
            global: 0,
            allow: 0,
        };
        let merged = FeedQuery::parse("aggregate=1").unwrap();
        assert_ne!(
            merged.etag(version),
            FeedQuery::parse("").unwrap().etag(version)
        );
        let tag = merged.etag(version);
        assert_eq!(merged.known_changes(&tag, 0, 0), Some(3));
        assert_ne!(
            FeedQuery::parse("format=nftables&list=greylist&aggregate=1")
                .unwrap()
                .etag(version),
            FeedQuery::parse("format=nftables&list=merged-greylist")
                .unwrap()
                .etag(version),
            "a list's name may carry `-`: a merged file's tag is never another file's"
        );
        assert_eq!(
            FeedQuery::parse("").unwrap().known_changes(&tag, 0, 0),
            None
        );
    }

    #[test]
    fn max_items_cuts_a_whole_feed_within_its_bounds_and_is_its_own_answer() {
        assert_eq!(FeedQuery::parse("").unwrap().max_items, None);
        for (query, max) in [
            ("maxItems=1", 1),
            ("maxItems=10000000&format=ipset", 10_000_000),
        ] {
            assert_eq!(
                FeedQuery::parse(query).unwrap().max_items,
                Some(max),
                "{query}"
            );
        }
        for bad in ["0", "10000001", "-1", "1.5", "ten", ""] {
            let refused = FeedQuery::parse(&format!("maxItems={bad}")).unwrap_err();
            assert_eq!(
                refused,
                format!("maxItems is a whole number from 1 to 10000000, not {bad:?}")
            );
        }
        let bound = "o1765000000xffff1f0d4601x80";
        let delta =
            FeedQuery::parse(&format!("format=json&since=1.0.0.{bound}&maxItems=5")).unwrap();
        assert_eq!(
            (delta.since_cut, delta.cursor_fits()),
            (CursorCut::Bound(Bound::parse(bound).unwrap()), true)
        );
        for (query, fits) in [
            ("format=json&since=1.0.0&maxItems=5", false),
            ("format=json&since=1.0.0.u&maxItems=5", false),
            (&format!("format=json&since=1.0.0.{bound}"), false),
            ("format=json&since=1.0.0", true),
        ] {
            let query = FeedQuery::parse(query).unwrap();
            assert_eq!(query.cursor_fits(), fits, "{query:?}");
            assert_eq!(query.delta_from(true).is_some(), fits, "{query:?}");
        }
        assert!(FeedQuery::parse("format=json&since=1.0.0.b1&maxItems=5").is_err());
        let version = FeedVersion {
            changes: 3,
            global: 0,
            allow: 0,
        };
        let tags: Vec<String> = ["", "maxItems=5", "maxItems=6", "maxItems=5&aggregate=1"]
            .iter()
            .map(|query| FeedQuery::parse(query).unwrap().etag(version))
            .collect();
        for (i, tag) in tags.iter().enumerate() {
            assert!(
                !tags[..i].contains(tag),
                "two answers share the tag {tag}: a cut feed's tag names its cut"
            );
        }
        let from = |cursor: &str| {
            FeedQuery::parse(&format!("format=json&maxItems=5&since={cursor}"))
                .unwrap()
                .etag(version)
        };
        assert_ne!(
            from(&format!("1.0.0.{bound}")),
            from("1.0.0.a"),
            "a cut delta's tag names the bound it is from"
        );
        let cut = FeedQuery::parse("maxItems=5").unwrap();
        assert_eq!(cut.known_changes(&tags[1], 0, 0), Some(3));
        assert_eq!(cut.known_changes(&tags[2], 0, 0), None);
    }

    #[test]
    fn a_merging_tokens_setting_wins_and_takes_no_since() {
        for asked in ["", "aggregate=0", "format=ipset"] {
            let query = FeedQuery::parse(asked)
                .unwrap()
                .merged_by_token(true)
                .unwrap();
            assert!(query.aggregate, "{asked:?}: the token's setting wins");
        }
        let plain = FeedQuery::parse("aggregate=0")
            .unwrap()
            .merged_by_token(false)
            .unwrap();
        assert!(!plain.aggregate);
        assert!(FeedQuery::parse("format=json&since=1.0.0")
            .unwrap()
            .merged_by_token(true)
            .unwrap_err()
            .contains("pull it whole, without since"));
    }

    #[test]
    fn versions_round_trip_and_name_the_answer() {
        let version = FeedVersion {
            changes: 12,
            global: 4,
            allow: 1,
        };
        assert_eq!(FeedVersion::parse(&version.to_string()), Some(version));
        let personal = FeedQuery::parse("").unwrap();
        assert_eq!(
            personal.version(12, 4, 1),
            FeedVersion {
                changes: 12,
                global: 0,
                allow: 1
            },
            "the global list is not part of it"
        );
        assert_ne!(
            personal.etag(version),
            FeedQuery::parse("format=json").unwrap().etag(version)
        );
        let delta = FeedQuery::parse("scope=all&format=json&since=3.4.1").unwrap();
        assert_eq!(delta.global_since(4), None, "the global list is current");
        assert_eq!(delta.global_since(5), Some(4));
        assert_eq!(delta.allow_since(1), None, "the allow list is current");
        assert_eq!(delta.allow_since(2), Some(1));
        assert_eq!(delta.delta_from(true), Some(3));
        assert_eq!(
            delta.delta_from(false),
            None,
            "what changed in the operator's lists is not known"
        );
        let personal = FeedQuery::parse("format=json&since=3.0.1").unwrap();
        assert_eq!(
            personal.global_since(9),
            None,
            "no global list in a personal feed"
        );
        assert_eq!(personal.allow_since(2), Some(1), "but the allow list is");
        assert_eq!(
            FeedQuery::parse("format=json").unwrap().delta_from(true),
            None,
            "no cursor, no delta"
        );
    }

    #[test]
    fn if_none_match_names_the_history_number_only_for_the_same_answer() {
        let query = FeedQuery::parse("scope=all").unwrap();
        let tag = query.etag(query.version(12, 4, 1));
        assert_eq!(query.known_changes(&tag, 4, 1), Some(12));
        assert_eq!(
            query.known_changes(&format!("\"x\", {tag}"), 4, 1),
            Some(12)
        );
        assert_eq!(
            query.known_changes(&tag, 5, 1),
            None,
            "the global list changed"
        );
        assert_eq!(
            FeedQuery::parse("format=json")
                .unwrap()
                .known_changes(&tag, 4, 1),
            None,
            "another answer"
        );
        assert_eq!(query.known_changes("*", 4, 1), None);
    }
}
