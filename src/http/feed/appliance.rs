//! The feed as the files appliances load: a RouterOS script, an `nft -f` file,
//! an `ipset restore` file. Each replaces the named list with the feed's items,
//! whole; nothing a holder wrote can break out of its line, since comments go
//! only into the RouterOS script, escaped there.

use crate::domain::feed::decision::go_duration;
use crate::domain::feed::item::{FeedBlock, FeedItem};
use crate::domain::net::address::Ipv6;
use crate::domain::net::family::Addr;
use crate::domain::time::UnixTime;

/// The kind of file: one of the feed's formats (`query::Format::Appliance`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appliance {
    Mikrotik,
    Nftables,
    Ipset,
}

/// The name of the list a file fills: what a firewall rule refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListName(String);

/// The words nft's scanner reads as keywords in any context, which it then
/// refuses where a set's name goes (`set timeout { ... }` does not load): the
/// rules outside any start condition in `src/scanner.l` of nftables v1.0.2
/// (Ubuntu 22.04), v1.0.6 (Debian 12, which the tests load files with) and
/// v1.1.6, together. nft reads them in this case only; they are refused in any.
const NFT_KEYWORDS: &str = "accept ackseq add addr ah all and arp auto-merge bridge cgroup \
chain chains checksum code comment comp constant continue counter counters cpi cpu create ct \
day dccp define delete describe destroy device devices dnat doff dport drop dscp dst dup \
dynamic ecn element elements eq esp ether exists expires export exthdr fib flags flow \
flowtable flush frag frag-off fully-random fwd gateway gc-interval ge geneve get goto gre \
gretap group gt handle hbh hdrlength hook hour ibriport ibrname icmp icmpv6 icmpx id igmp iif \
iifgroup iifname iiftype import include index inet insert interval ip ip6 ipsec jhash json \
jump last last-entry le length limit list ll log lshift lt map mark masquerade max-delay \
maxseg memory meta meter mh missing monitor more-fragments mrt mss mtu name ne netdev nexthdr \
nftrace nh not notrack numgen obriport obrname offload oif oifgroup oifname oiftype option \
options or osf param-problem performance persistent pkttype policy port position prefix \
priority protocol queue quota quotas random redefine redirect reject rename replace reserved \
reserved2 reset return rshift rt rt0 rt2 rtclassid rule rules ruleset sack-perm \
sack-permitted sctp secmark sequence set sets sid size skgid skuid snat socket spi sport srh \
symhash synproxy table tables tag tcp th time timeout timestamp to tproxy trace ttl tunnel \
type typeof udp udplite undefine update urgptr version vlan vm vmap vni vxlan window with \
wscale xml xor xt";

impl ListName {
    pub const DEFAULT: &'static str = "greylist";
    /// What a list's name may be, as `parse` says it to a caller it refuses.
    pub const RULE: &'static str =
        "a letter, then up to 30 letters, digits, _ or -, and no nft keyword";

    /// `[A-Za-z][A-Za-z0-9_-]{0,30}` and no nft keyword: safe unquoted in every
    /// format, within ipset's limit, never read as an option (`-exist`) by ipset
    /// nor as a number or a keyword by nft.
    pub fn parse(text: &str) -> Option<Self> {
        let shaped = text.len() <= 31
            && text.starts_with(|c: char| c.is_ascii_alphabetic())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        let keyword = NFT_KEYWORDS
            .split_ascii_whitespace()
            .any(|word| word.eq_ignore_ascii_case(text));
        (shaped && !keyword).then(|| Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for ListName {
    fn default() -> Self {
        Self(Self::DEFAULT.to_owned())
    }
}

/// The longest timeout a file gives an entry: `ipset restore` refuses more
/// (and stops after its flush), and RouterOS and nft take it. An appliance
/// reloads the file long before, and a later file carries the rest.
const MAX_TIMEOUT_SECONDS: u64 = 2_147_483;
/// Elements in one `add element` statement of an nft file: a statement is parsed
/// whole, so a large set goes in several.
const NFT_ELEMENTS_PER_STATEMENT: u64 = 1_000;
/// The table an nft file's set lives in.
const NFT_TABLE: &str = "greylist";
/// The most entries an ipset file's set may hold: room for a large global list
/// (a hash set allocates as it grows, not up front).
const IPSET_MAXELEM: u64 = 16_777_216;

/// A file being written: its kind, the list's name, and where the writing is.
pub struct ApplianceFile {
    kind: Appliance,
    list: ListName,
    now: UnixTime,
    /// The last address of the global block written last, of each family: an
    /// entry inside it is already enforced, and an nft interval set refuses
    /// overlapping elements.
    covered_to: Option<u32>,
    covered_to6: Option<u128>,
    /// Whether the IPv6 list is created and emptied yet: in the head when `IPV6`
    /// is on, else before the first IPv6 item (kept from when it was on).
    v6_ready: bool,
    /// The nft `add element` statement open, by family, and its elements so far.
    statement: Option<(Family, u64)>,
    written: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    V4,
    V6,
}

impl ApplianceFile {
    pub fn new(kind: Appliance, list: ListName, now: UnixTime, ipv6: Ipv6) -> Self {
        Self {
            kind,
            list,
            now,
            covered_to: None,
            covered_to6: None,
            v6_ready: ipv6 == Ipv6::On,
            statement: None,
            written: 0,
        }
    }

    pub fn head(&self, version: &str) -> String {
        let name = self.list.as_str();
        let v6 = if self.v6_ready {
            self.v6_head()
        } else {
            String::new()
        };
        match self.kind {
            Appliance::Mikrotik => format!(
                "# greylist feed, version {version}\n\
                 /ip firewall address-list remove [find where list=\"{name}\"]\n{v6}"
            ),
            Appliance::Nftables => format!(
                "# greylist feed, version {version}\n\
                 table inet {NFT_TABLE} {{\n\
                 \tset {name} {{\n\t\ttype ipv4_addr\n\t\tflags interval, timeout\n\t}}\n}}\n\
                 flush set inet {NFT_TABLE} {name}\n{v6}"
            ),
            Appliance::Ipset => format!(
                "# greylist feed, version {version}\n\
                 create {name} hash:net family inet maxelem {IPSET_MAXELEM} timeout 0 -exist\n\
                 flush {name}\n{v6}"
            ),
        }
    }

    /// The IPv6 list's set name: the list's with `6` after it (RouterOS keeps IPv6
    /// address lists apart, under the same name). Within ipset's 31 characters.
    fn v6_name(&self) -> String {
        let name = self.list.as_str();
        format!("{}6", &name[..name.len().min(30)])
    }

    /// Lines that create the IPv6 list and empty it.
    fn v6_head(&self) -> String {
        let name = self.list.as_str();
        let v6 = self.v6_name();
        match self.kind {
            // A router without IPv6 (its package disabled) goes on past this line,
            // so that the IPv4 list, emptied just before, is filled again.
            Appliance::Mikrotik => format!(
                ":do {{ /ipv6 firewall address-list remove [find where list=\"{name}\"] }} on-error={{}}\n"
            ),
            Appliance::Nftables => format!(
                "table inet {NFT_TABLE} {{\n\
                 \tset {v6} {{\n\t\ttype ipv6_addr\n\t\tflags interval, timeout\n\t}}\n}}\n\
                 flush set inet {NFT_TABLE} {v6}\n"
            ),
            Appliance::Ipset => format!(
                "create {v6} hash:net family inet6 maxelem {IPSET_MAXELEM} timeout 0 -exist\n\
                 flush {v6}\n"
            ),
        }
    }

    /// The item's line, or nothing when a block written before covers it (an
    /// nft interval set refuses the overlap, and the file with it). Items come
    /// in the feed's order (`FeedBlock::place`): a block before what it holds.
    pub fn item(&mut self, item: &FeedItem, out: &mut String) {
        let family = match item.block {
            FeedBlock::V4(range) => {
                if self.covered_to.is_some_and(|to| range.first() <= to) {
                    return;
                }
                if item.source.is_global() {
                    self.covered_to = Some(range.last());
                }
                Family::V4
            }
            FeedBlock::V6(_) | FeedBlock::V6Net64(_) | FeedBlock::V6Range(_) => {
                let (first, prefix) = item.block.place();
                if self.covered_to6.is_some_and(|to| first <= to) {
                    return;
                }
                // A block written holds what comes after it up to its end: a
                // global block, or the holder's /64.
                if item.source.is_global() || matches!(item.block, FeedBlock::V6Net64(_)) {
                    self.covered_to6 = Some(first | <u128 as Addr>::host_mask(prefix));
                }
                Family::V6
            }
        };
        if family == Family::V6 && !self.v6_ready {
            self.close_statement(out);
            out.push_str(&self.v6_head());
            self.v6_ready = true;
        }
        let timeout = item.expires_at.map(|at| {
            at.0.saturating_sub(self.now.0)
                .clamp(1, MAX_TIMEOUT_SECONDS)
        });
        let name = match family {
            Family::V4 => self.list.as_str().to_owned(),
            Family::V6 => self.v6_name(),
        };
        let value = item.block.to_string();
        match self.kind {
            Appliance::Mikrotik => {
                let ip = match family {
                    Family::V4 => "ip",
                    Family::V6 => "ipv6",
                };
                let name = self.list.as_str();
                out.push_str(&format!(
                    "/{ip} firewall address-list add list=\"{name}\" address={value}"
                ));
                if let Some(seconds) = timeout {
                    out.push_str(&format!(" timeout={}", go_duration(seconds as i64)));
                }
                if let Some(comment) = item.comment.as_deref().filter(|c| !c.is_empty()) {
                    out.push_str(&format!(" comment=\"{}\"", routeros_escape(comment)));
                }
                out.push('\n');
            }
            Appliance::Nftables => {
                match self.statement {
                    Some((open, count)) if open == family && count < NFT_ELEMENTS_PER_STATEMENT => {
                        out.push_str(", ");
                    }
                    _ => {
                        self.close_statement(out);
                        out.push_str(&format!("add element inet {NFT_TABLE} {name} {{ "));
                    }
                }
                let count = self.statement.map_or(0, |(_, count)| count);
                self.statement = Some((family, count + 1));
                out.push_str(&value);
                if let Some(seconds) = timeout {
                    out.push_str(&format!(" timeout {seconds}s"));
                }
            }
            Appliance::Ipset => {
                out.push_str(&format!("add {name} {value}"));
                if let Some(seconds) = timeout {
                    out.push_str(&format!(" timeout {seconds}"));
                }
                out.push_str(" -exist\n");
            }
        }
        self.written += 1;
    }

    /// Ends an open nft `add element` statement.
    fn close_statement(&mut self, out: &mut String) {
        if self.statement.take().is_some() {
            out.push_str(" }\n");
        }
    }

    pub fn tail(&mut self) -> String {
        let mut close = String::new();
        self.close_statement(&mut close);
        format!("{close}# end of feed, {} entries\n", self.written)
    }
}

/// A comment as a RouterOS string's contents: quotes, backslashes, `$` (which
/// would start a variable) and `?` escaped; control characters and anything
/// outside printable ASCII become `_`, so no line ever breaks.
fn routeros_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().take(200) {
        match c {
            '"' | '\\' | '$' | '?' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('_'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::feed::item::Source;
    use crate::domain::net::ipv6::PublicIpv6;
    use crate::domain::net::range::Ipv4Range;

    const NOW: UnixTime = UnixTime(1_000_000);

    fn item(block: &str, global: bool, expires_in: Option<u64>, comment: Option<&str>) -> FeedItem {
        FeedItem {
            added_at: None,
            block: FeedBlock::V4(Ipv4Range::parse(block).unwrap()),
            source: if global {
                Source::Operator
            } else {
                Source::Personal
            },
            expires_at: expires_in.map(|s| NOW.plus(s)),
            comment: comment.map(str::to_owned),
        }
    }

    fn render(kind: Appliance, items: &[FeedItem]) -> String {
        render_with(kind, items, Ipv6::Off)
    }

    fn render_with(kind: Appliance, items: &[FeedItem], ipv6: Ipv6) -> String {
        let mut file = ApplianceFile::new(kind, ListName::parse("edge_1").unwrap(), NOW, ipv6);
        let mut out = file.head("3.1.0");
        for i in items {
            file.item(i, &mut out);
        }
        out.push_str(&file.tail());
        out
    }

    fn items() -> Vec<FeedItem> {
        vec![
            item(
                "8.8.8.8",
                false,
                Some(3600),
                Some("say \"hi\" $x\\ [find]\nnext ?"),
            ),
            item("45.1.1.0/24", true, None, None),
            item("45.1.1.7", false, Some(60), Some("inside")),
            item("45.2.0.1", false, None, None),
        ]
    }

    #[test]
    fn list_names_are_safe_everywhere() {
        assert!(ListName::parse("greylist").is_some() && ListName::parse("a-B_9").is_some());
        for good in ["x", "edge_1", "Timeouts", "sets6", "blocklist-v4"] {
            assert!(ListName::parse(good).is_some(), "{good:?}");
        }
        for bad in [
            "",
            "a b",
            "a;b",
            "a\"b",
            "é",
            &"a".repeat(32),
            "a\nb",
            "a/b",
            "-exist",
            "_x",
            "1abc",
            "8021q",
            "timeout",
            "Timeout",
            "set",
            "flush",
            "interval",
            "ip6",
            "auto-merge",
            "xt",
        ] {
            assert_eq!(
                ListName::parse(bad),
                None,
                "{bad:?} is refused as a list name"
            );
        }
        assert_eq!(ListName::parse(&"a".repeat(31)).unwrap().as_str().len(), 31);
        let keywords: Vec<&str> = NFT_KEYWORDS.split_ascii_whitespace().collect();
        assert_eq!(
            keywords.len(),
            224,
            "the union of the three scanners' keywords"
        );
        assert!(
            keywords.windows(2).all(|pair| pair[0] < pair[1]),
            "sorted, each once"
        );
    }

    #[test]
    fn a_routeros_script_replaces_the_list_with_timeouts_and_escaped_comments() {
        assert_eq!(
            render(Appliance::Mikrotik, &items()),
            "# greylist feed, version 3.1.0\n\
             /ip firewall address-list remove [find where list=\"edge_1\"]\n\
             /ip firewall address-list add list=\"edge_1\" address=8.8.8.8 timeout=1h0m0s comment=\"say \\\"hi\\\" \\$x\\\\ [find]_next \\?\"\n\
             /ip firewall address-list add list=\"edge_1\" address=45.1.1.0/24\n\
             /ip firewall address-list add list=\"edge_1\" address=45.2.0.1\n\
             # end of feed, 3 entries\n"
        );
    }

    #[test]
    fn an_nft_file_declares_flushes_and_fills_the_set_without_overlaps() {
        assert_eq!(
            render(Appliance::Nftables, &items()),
            "# greylist feed, version 3.1.0\n\
             table inet greylist {\n\tset edge_1 {\n\t\ttype ipv4_addr\n\t\tflags interval, timeout\n\t}\n}\n\
             flush set inet greylist edge_1\n\
             add element inet greylist edge_1 { 8.8.8.8 timeout 3600s, 45.1.1.0/24, 45.2.0.1 }\n\
             # end of feed, 3 entries\n"
        );
        let empty = render(Appliance::Nftables, &[]);
        assert!(empty.ends_with("flush set inet greylist edge_1\n# end of feed, 0 entries\n"));
        let many: Vec<FeedItem> = (0..1001u32)
            .map(|n| {
                item(
                    &std::net::Ipv4Addr::from(0x0800_0000 + n).to_string(),
                    false,
                    None,
                    None,
                )
            })
            .collect();
        let file = render(Appliance::Nftables, &many);
        assert_eq!(file.matches("add element").count(), 2);
        assert_eq!(file.matches(" }\n").count(), 2);
    }

    #[test]
    fn no_timeout_is_longer_than_ipset_takes() {
        let year = item("8.8.8.8", false, Some(31_536_000), None);
        for kind in [Appliance::Ipset, Appliance::Nftables, Appliance::Mikrotik] {
            let file = render(kind, std::slice::from_ref(&year));
            assert!(
                file.contains("2147483") || file.contains(&go_duration(2_147_483)),
                "{file}"
            );
        }
    }

    #[test]
    fn an_ipset_file_creates_flushes_and_adds_with_exist() {
        assert_eq!(
            render(Appliance::Ipset, &items()),
            "# greylist feed, version 3.1.0\n\
             create edge_1 hash:net family inet maxelem 16777216 timeout 0 -exist\n\
             flush edge_1\n\
             add edge_1 8.8.8.8 timeout 3600 -exist\n\
             add edge_1 45.1.1.0/24 -exist\n\
             add edge_1 45.2.0.1 -exist\n\
             # end of feed, 3 entries\n"
        );
    }

    fn ipv6_items() -> Vec<FeedItem> {
        let v6 = |text: &str, expires_in: Option<u64>| FeedItem {
            added_at: None,
            block: FeedBlock::V6(PublicIpv6::from_addr(text.parse().unwrap()).unwrap()),
            source: Source::Personal,
            expires_at: expires_in.map(|s| NOW.plus(s)),
            comment: None,
        };
        let mut items = items();
        items.push(v6("2a00:1450:4001:80b::200e", Some(60)));
        items.push(v6("2606:4700::1111", None));
        items
    }

    #[test]
    fn ipv6_goes_into_a_list_of_its_own_declared_up_front_when_on_and_before_it_when_off() {
        let routeros = render_with(Appliance::Mikrotik, &ipv6_items(), Ipv6::On);
        assert!(routeros.starts_with(
            "# greylist feed, version 3.1.0\n\
             /ip firewall address-list remove [find where list=\"edge_1\"]\n\
             :do { /ipv6 firewall address-list remove [find where list=\"edge_1\"] } on-error={}\n"
        ));
        assert!(routeros.ends_with(
            "/ip firewall address-list add list=\"edge_1\" address=45.2.0.1\n\
             /ipv6 firewall address-list add list=\"edge_1\" address=2a00:1450:4001:80b::200e timeout=1m0s\n\
             /ipv6 firewall address-list add list=\"edge_1\" address=2606:4700::1111\n\
             # end of feed, 5 entries\n"
        ));
        let v6_set = "table inet greylist {\n\tset edge_16 {\n\t\ttype ipv6_addr\n\t\tflags interval, timeout\n\t}\n}\n\
                      flush set inet greylist edge_16\n";
        let nft = render_with(Appliance::Nftables, &ipv6_items(), Ipv6::On);
        assert!(
            nft.contains(&format!(
                "flush set inet greylist edge_1\n{v6_set}add element"
            )),
            "{nft}"
        );
        assert!(nft.ends_with(
            "add element inet greylist edge_1 { 8.8.8.8 timeout 3600s, 45.1.1.0/24, 45.2.0.1 }\n\
             add element inet greylist edge_16 { 2a00:1450:4001:80b::200e timeout 60s, 2606:4700::1111 }\n\
             # end of feed, 5 entries\n"
        ), "each family's entries go into a set of their own: {nft}");
        let kept = render_with(Appliance::Nftables, &ipv6_items(), Ipv6::Off);
        assert!(
            kept.contains(&format!(
                "45.2.0.1 }}\n{v6_set}add element inet greylist edge_16 {{ "
            )),
            "{kept}"
        );
        assert_eq!(kept.matches("flush set").count(), 2);
        let ipset = render_with(Appliance::Ipset, &ipv6_items(), Ipv6::On);
        assert!(
            ipset.contains(
                "flush edge_1\n\
             create edge_16 hash:net family inet6 maxelem 16777216 timeout 0 -exist\n\
             flush edge_16\n"
            ),
            "{ipset}"
        );
        assert!(
            ipset.contains("add edge_16 2a00:1450:4001:80b::200e timeout 60 -exist\n"),
            "each family's entries go into a set of their own: {ipset}"
        );
        assert!(!render(Appliance::Mikrotik, &items()).contains("ipv6"));
    }

    #[test]
    fn an_ipv6_64_takes_the_place_of_the_addresses_inside_it_so_nft_sees_no_overlap() {
        let v6 = |text: &str| PublicIpv6::from_addr(text.parse().unwrap()).unwrap();
        let host = |text: &str| FeedItem {
            added_at: None,
            block: FeedBlock::V6(v6(text)),
            source: Source::Personal,
            expires_at: None,
            comment: None,
        };
        let net = |text: &str| FeedItem {
            block: FeedBlock::V6Net64(v6(text)),
            ..host(text)
        };
        let items = [
            net("2a00:1450:4001:80b::"),
            host("2a00:1450:4001:80b::"),
            host("2a00:1450:4001:80b::5"),
            host("2a00:1450:4001:80c::"),
            host("2a00:1450:4001:80d::1"),
            host("2a00:1450:4001:80e::"),
        ];
        let nft = render_with(Appliance::Nftables, &items, Ipv6::On);
        assert!(nft.ends_with(
            "add element inet greylist edge_16 { 2a00:1450:4001:80b::/64, 2a00:1450:4001:80c::, \
             2a00:1450:4001:80d::1, 2a00:1450:4001:80e:: }\n# end of feed, 4 entries\n"
        ), "a /64 is written in place of the addresses inside it: {nft}");
    }

    #[test]
    fn a_global_ipv6_block_takes_the_place_of_the_entries_inside_it() {
        let v6 = |text: &str| PublicIpv6::from_addr(text.parse().unwrap()).unwrap();
        let host = |text: &str| FeedItem {
            added_at: None,
            block: FeedBlock::V6(v6(text)),
            source: Source::Personal,
            expires_at: None,
            comment: None,
        };
        let global = |text: &str| FeedItem {
            added_at: None,
            block: FeedBlock::V6Range(crate::domain::net::range::Ipv6Range::parse(text).unwrap()),
            source: Source::Operator,
            expires_at: None,
            comment: None,
        };
        let items = [
            global("2a00:1450::/32"),
            host("2a00:1450::"),
            FeedItem {
                block: FeedBlock::V6Net64(v6("2a00:1450:4001:80b::")),
                ..host("2a00:1450:4001:80b::")
            },
            host("2a00:1450:ffff::1"),
            host("2a00:1451::"),
            global("2a00:1452::1"),
        ];
        let nft = render_with(Appliance::Nftables, &items, Ipv6::On);
        assert!(
            nft.ends_with(
                "add element inet greylist edge_16 { 2a00:1450::/32, 2a00:1451::, 2a00:1452::1 }\n\
             # end of feed, 3 entries\n"
            ),
            "a global IPv6 block is written in place of the entries inside it: {nft}"
        );
        let routeros = render_with(Appliance::Mikrotik, &items, Ipv6::On);
        assert!(routeros
            .contains("/ipv6 firewall address-list add list=\"edge_1\" address=2a00:1450::/32\n"));
        // A global address inside the holder's /64, which the feed puts first.
        let inside = [
            FeedItem {
                block: FeedBlock::V6Net64(v6("2a00:1453::")),
                ..host("2a00:1453::")
            },
            global("2a00:1453::1"),
            global("2a00:1453:0:1::/64"),
        ];
        let nft = render_with(Appliance::Nftables, &inside, Ipv6::On);
        assert!(
            nft.ends_with(
                "add element inet greylist edge_16 { 2a00:1453::/64, 2a00:1453:0:1::/64 }\n\
                 # end of feed, 2 entries\n"
            ),
            "a holder's /64 is written in place of the global entries inside it: {nft}"
        );
    }
}
