//! The feed as the files appliances load: a RouterOS script, an `nft -f` file,
//! an `ipset restore` file. Each replaces the named list with the feed's items,
//! whole; nothing a holder wrote can break out of its line, since comments go
//! only into the RouterOS script, escaped there.

use crate::domain::decision::go_duration;
use crate::domain::feed::FeedItem;
use crate::domain::time::UnixTime;

/// The kind of file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appliance {
    Mikrotik,
    Nftables,
    Ipset,
}

/// The name of the list a file fills: what a firewall rule refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListName(String);

impl ListName {
    pub const DEFAULT: &'static str = "greylist";

    /// `[A-Za-z0-9_-]{1,31}`: safe unquoted in every format, and within ipset's limit.
    pub fn parse(text: &str) -> Option<Self> {
        (1..=31)
            .contains(&text.len())
            .then_some(())
            .filter(|_| {
                text.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            })
            .map(|_| Self(text.to_owned()))
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
    /// The last address of the global block written last: an entry inside it is
    /// already enforced, and an nft interval set refuses overlapping elements.
    covered_to: Option<u32>,
    written: u64,
}

impl ApplianceFile {
    pub fn new(kind: Appliance, list: ListName, now: UnixTime) -> Self {
        Self {
            kind,
            list,
            now,
            covered_to: None,
            written: 0,
        }
    }

    pub fn head(&self, version: &str) -> String {
        let name = self.list.as_str();
        match self.kind {
            Appliance::Mikrotik => format!(
                "# greylist feed, version {version}\n\
                 /ip firewall address-list remove [find where list=\"{name}\"]\n"
            ),
            Appliance::Nftables => format!(
                "# greylist feed, version {version}\n\
                 table inet {NFT_TABLE} {{\n\
                 \tset {name} {{\n\t\ttype ipv4_addr\n\t\tflags interval, timeout\n\t}}\n}}\n\
                 flush set inet {NFT_TABLE} {name}\n"
            ),
            Appliance::Ipset => format!(
                "# greylist feed, version {version}\n\
                 create {name} hash:net family inet maxelem {IPSET_MAXELEM} timeout 0 -exist\n\
                 flush {name}\n"
            ),
        }
    }

    /// The item's line, or nothing when a block written before covers it. Items
    /// come in the feed's address order, a block before the entries inside it.
    pub fn item(&mut self, item: &FeedItem, out: &mut String) {
        let (first, last) = (item.block.first(), item.block.last());
        if self.covered_to.is_some_and(|to| first <= to) {
            return;
        }
        if item.global {
            self.covered_to = Some(last);
        }
        let timeout = item.expires_at.map(|at| {
            at.0.saturating_sub(self.now.0)
                .clamp(1, MAX_TIMEOUT_SECONDS)
        });
        let name = self.list.as_str();
        let value = item.block.to_string();
        match self.kind {
            Appliance::Mikrotik => {
                out.push_str(&format!(
                    "/ip firewall address-list add list=\"{name}\" address={value}"
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
                if self.written.is_multiple_of(NFT_ELEMENTS_PER_STATEMENT) {
                    if self.written > 0 {
                        out.push_str(" }\n");
                    }
                    out.push_str(&format!("add element inet {NFT_TABLE} {name} {{ "));
                } else {
                    out.push_str(", ");
                }
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

    pub fn tail(&self) -> String {
        let close = match (self.kind, self.written) {
            (Appliance::Nftables, 1..) => " }\n",
            _ => "",
        };
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
    use crate::domain::range::Ipv4Range;

    const NOW: UnixTime = UnixTime(1_000_000);

    fn item(block: &str, global: bool, expires_in: Option<u64>, comment: Option<&str>) -> FeedItem {
        FeedItem {
            block: Ipv4Range::parse(block).unwrap(),
            global,
            expires_at: expires_in.map(|s| NOW.plus(s)),
            comment: comment.map(str::to_owned),
        }
    }

    fn render(kind: Appliance, items: &[FeedItem]) -> String {
        let mut file = ApplianceFile::new(kind, ListName::parse("edge_1").unwrap(), NOW);
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
        for bad in [
            "",
            "a b",
            "a;b",
            "a\"b",
            "é",
            &"a".repeat(32),
            "a\nb",
            "a/b",
        ] {
            assert_eq!(ListName::parse(bad), None, "{bad:?}");
        }
        assert_eq!(ListName::parse(&"a".repeat(31)).unwrap().as_str().len(), 31);
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
}
