//! Feed tokens: read-only credentials an appliance uses to pull a holder's feed,
//! where the license-key login cannot run. Shown once, kept only as digests.

use serde::{Deserialize, Serialize};

use crate::domain::access::license::{hex, is_lower_hex, key_digest, random, LicenseId};
use crate::domain::code::Coded;
use crate::domain::feed::decision::DecisionType;
use crate::domain::time::UnixTime;
use crate::domain::usage_metrics::BouncerUsage;

/// What a feed reads, and what a feed token may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The holder's personal list.
    Personal,
    /// The personal list and the global list.
    All,
}

impl Coded for Scope {
    const ALL: &'static [Self] = &[Self::Personal, Self::All];

    fn code(self) -> &'static str {
        match self {
            Self::Personal => "personal",
            Self::All => "all",
        }
    }
}

impl Scope {
    /// Whether a token of this scope may read a feed of `asked`.
    pub fn allows(self, asked: Scope) -> bool {
        self == Scope::All || asked == Scope::Personal
    }
}

/// The scope of a token made before tokens had one: everything, as it could read then.
fn made_before_scopes() -> Scope {
    Scope::All
}

/// At most this many feed tokens per holder.
pub const MAX_PER_HOLDER: usize = 20;
const TOKEN_PREFIX: &str = "glf_";
const ID_PREFIX: &str = "ft_";

/// A new token: its id (to list and revoke it by) and the secret, shown once.
pub struct NewFeedToken {
    pub id: String,
    pub token: String,
}

impl NewFeedToken {
    pub fn generate() -> Result<Self, getrandom::Error> {
        Ok(Self {
            id: format!("{ID_PREFIX}{}", hex(&random::<8>()?)),
            token: format!("{TOKEN_PREFIX}{}", hex(&random::<32>()?)),
        })
    }
}

/// A new token as the holder's object records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewFeedTokenRecord {
    pub id: String,
    pub digest: String,
    pub scope: Scope,
    /// What its CrowdSec decisions tell a bouncer to do.
    pub decision: DecisionType,
    /// Its feeds merged into the fewest CIDR blocks, whatever a pull asks.
    pub aggregate: bool,
    /// Its feeds cut to the most relevant so many items, whatever a pull asks.
    #[serde(default)]
    pub max_items: Option<u64>,
}

/// A token as the holder sees it in the list: never the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedTokenInfo {
    pub id: String,
    pub scope: Scope,
    pub decision_type: DecisionType,
    /// Whether its feeds are merged into the fewest CIDR blocks.
    pub aggregate: bool,
    /// The most items its feeds carry, `None` for every item.
    #[serde(default)]
    pub max_items: Option<u64>,
    /// How many items its last cut pull left out; `None` before one.
    #[serde(default)]
    pub left_out: Option<u64>,
    pub created_at: String,
    pub last_used: Option<String>,
    /// The `User-Agent` of its last pull.
    pub user_agent: Option<String>,
    /// What its last pull read: `text`, `json`, `mikrotik`, `nftables`, `ipset`, `decisions`.
    pub pulled: Option<String>,
    /// Whether it pulled within its usual interval; `None` before two pulls.
    pub keeping_up: Option<bool>,
    /// What its bouncer last reported of itself (CrowdSec's usage metrics);
    /// `None` before a report, and from an object of the version before them.
    #[serde(default)]
    pub usage: Option<BouncerUsage>,
}

/// Who pulled, and what, as a token's record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullClient {
    pub user_agent: Option<String>,
    pub pulled: String,
}

/// Characters of a `User-Agent` kept: enough for any bouncer's name and version.
const USER_AGENT_CHARS: usize = 200;
/// A token's last pull is written at most once this often when nothing else
/// changed: a row written costs money, and a bouncer may pull every second.
pub const TOUCH_SECONDS: u64 = 60;

impl PullClient {
    pub fn new(user_agent: Option<&str>, pulled: &str) -> Self {
        Self {
            user_agent: user_agent
                .map(|agent| {
                    agent
                        .trim()
                        .chars()
                        .take(USER_AGENT_CHARS)
                        .collect::<String>()
                })
                .filter(|agent| !agent.is_empty()),
            pulled: pulled.to_owned(),
        }
    }
}

/// A token's last pull as recorded: when, by whom, what.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LastPull {
    pub at: Option<UnixTime>,
    pub client: Option<PullClient>,
}

impl LastPull {
    /// Whether a pull at `now` by `client` is worth a row written: another client
    /// or another kind of pull, or the last one recorded long enough ago.
    pub fn worth_recording(&self, client: &PullClient, now: UnixTime) -> bool {
        self.client.as_ref() != Some(client)
            || self
                .at
                .is_none_or(|at| now.0 >= at.0.saturating_add(TOUCH_SECONDS))
    }
}

/// Whether a token whose pulls came `interval` seconds apart, the last at `last`,
/// is keeping up at `now`: pulled within twice its interval (and a minute's slack,
/// the granularity pulls are recorded with).
pub fn keeping_up(last: UnixTime, interval: u64, now: UnixTime) -> bool {
    now.0 <= last.0 + 2 * interval.max(TOUCH_SECONDS) + TOUCH_SECONDS
}

/// Whose a token is, as its digest's record says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedTokenOwner {
    pub license: String,
    pub id: String,
    #[serde(default = "made_before_scopes")]
    pub scope: Scope,
    /// Its feeds merged into the fewest CIDR blocks; a token made before this
    /// setting serves the whole feed, as it did.
    #[serde(default)]
    pub aggregate: bool,
    /// Its feeds cut to so many items; a token made before this setting
    /// serves the whole feed, as it did.
    #[serde(default)]
    pub max_items: Option<u64>,
}

impl FeedTokenOwner {
    pub fn license(&self) -> Option<LicenseId> {
        LicenseId::parse(&self.license)
    }
}

pub fn is_id(text: &str) -> bool {
    text.strip_prefix(ID_PREFIX)
        .is_some_and(|hex| is_lower_hex(hex, 16))
}

/// Whether `text` is meant as a feed token (and so is not another kind of
/// credential): its prefix; `is_well_formed` says whether it could be one.
pub fn is_token(text: &str) -> bool {
    text.starts_with(TOKEN_PREFIX)
}

/// Whether `text` has exactly the shape `NewFeedToken::generate` gives a token:
/// any other was never issued, and is refused before its digest is looked up,
/// so that made-up tokens cost no KV read and take no room in an isolate's memory.
pub fn is_well_formed(text: &str) -> bool {
    text.strip_prefix(TOKEN_PREFIX)
        .is_some_and(|hex| is_lower_hex(hex, 64))
}

/// The digest a token is stored under.
pub fn digest(token: &str) -> String {
    key_digest(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_256_random_bits_and_ids_parse() {
        let (a, b) = (
            NewFeedToken::generate().unwrap(),
            NewFeedToken::generate().unwrap(),
        );
        assert_eq!(a.token.len(), TOKEN_PREFIX.len() + 64);
        assert_ne!(a.token, b.token);
        assert!(is_well_formed(&a.token) && is_token(&a.token));
        let upper = format!("{TOKEN_PREFIX}{}", a.token[4..].to_uppercase());
        let long = format!("{}0", a.token);
        for made_up in [
            "glf_",
            "glf_x",
            &a.token[..67],
            &long[..],
            &upper[..],
            "glf_../x",
        ] {
            assert!(!is_well_formed(made_up), "{made_up:?}");
        }
        assert!(is_id(&a.id) && is_id(&b.id) && a.id != b.id);
        for bad in [
            "",
            "ft_",
            "ft_0123456789abcde",
            "ft_0123456789ABCDEF",
            "lic_0123456789abcdef",
            "ft_../0123456789abcd",
        ] {
            assert!(!is_id(bad), "{bad:?}");
        }
        assert_eq!(digest(&a.token).len(), 64);
        assert_ne!(digest(&a.token), a.token);
    }

    #[test]
    fn a_token_reads_its_scope_and_one_made_before_scopes_reads_everything() {
        let before: FeedTokenOwner =
            serde_json::from_str(r#"{"license":"lic_0","id":"ft_0"}"#).unwrap();
        assert_eq!(
            before.scope,
            Scope::All,
            "a token stored without a scope reads everything, as it could then"
        );
        assert!(
            !before.aggregate,
            "a token stored before its settings serves the whole feed, not merged"
        );
        assert_eq!(
            before.max_items, None,
            "a token stored before its settings serves the whole feed, not cut"
        );
        let personal: FeedTokenOwner =
            serde_json::from_str(r#"{"license":"lic_0","id":"ft_0","scope":"personal"}"#).unwrap();
        assert_eq!(personal.scope, Scope::Personal);
        assert!(Scope::All.allows(Scope::All) && Scope::All.allows(Scope::Personal));
        assert!(Scope::Personal.allows(Scope::Personal));
        assert!(!Scope::Personal.allows(Scope::All));
        assert_eq!(Scope::from_code("all"), Some(Scope::All));
        assert_eq!(Scope::from_code("everything"), None);
    }

    #[test]
    fn a_pull_is_written_when_it_says_something_new_or_a_minute_on() {
        let bouncer = PullClient::new(Some(" crowdsec-firewall-bouncer/v0.0.25 "), "decisions");
        assert_eq!(
            bouncer.user_agent.as_deref(),
            Some("crowdsec-firewall-bouncer/v0.0.25")
        );
        assert_eq!(
            PullClient::new(Some(&"x".repeat(500)), "text")
                .user_agent
                .unwrap()
                .len(),
            200
        );
        assert_eq!(PullClient::new(Some("  "), "text").user_agent, None);
        let last = LastPull {
            at: Some(UnixTime(1000)),
            client: Some(bouncer.clone()),
        };
        assert!(LastPull::default().worth_recording(&bouncer, UnixTime(1000)));
        assert!(!last.worth_recording(&bouncer, UnixTime(1059)));
        assert!(last.worth_recording(&bouncer, UnixTime(1060)));
        assert!(last.worth_recording(
            &PullClient::new(Some("MikroTik"), "mikrotik"),
            UnixTime(1001)
        ));
        assert!(last.worth_recording(
            &PullClient::new(bouncer.user_agent.as_deref(), "text"),
            UnixTime(1001)
        ));
    }

    #[test]
    fn a_token_keeps_up_while_it_pulls_within_twice_its_interval() {
        assert!(keeping_up(UnixTime(1000), 60, UnixTime(1180)));
        assert!(!keeping_up(UnixTime(1000), 60, UnixTime(1181)));
        assert!(keeping_up(UnixTime(1000), 3600, UnixTime(1000 + 7260)));
        assert!(!keeping_up(UnixTime(1000), 3600, UnixTime(1000 + 7261)));
        assert!(
            keeping_up(UnixTime(1000), 5, UnixTime(1180)),
            "recorded a minute apart at best"
        );
    }
}
