//! Feed tokens: read-only credentials an appliance uses to pull a holder's feed,
//! where the license-key login cannot run. Shown once, kept only as digests.

use serde::{Deserialize, Serialize};

use super::code::Coded;
use super::license::{hex, key_digest, random, LicenseId};

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
}

/// A token as the holder sees it in the list: never the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedTokenInfo {
    pub id: String,
    pub scope: Scope,
    pub created_at: String,
    pub last_used: Option<String>,
}

/// Whose a token is, as its digest's record says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedTokenOwner {
    pub license: String,
    pub id: String,
    #[serde(default = "made_before_scopes")]
    pub scope: Scope,
}

impl FeedTokenOwner {
    pub fn license(&self) -> Option<LicenseId> {
        LicenseId::parse(&self.license)
    }
}

pub fn is_id(text: &str) -> bool {
    text.strip_prefix(ID_PREFIX).is_some_and(|hex| {
        hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// Whether `text` has the shape of a feed token (and so is not another kind of credential).
pub fn is_token(text: &str) -> bool {
    text.starts_with(TOKEN_PREFIX)
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
        assert_eq!(before.scope, Scope::All);
        let personal: FeedTokenOwner =
            serde_json::from_str(r#"{"license":"lic_0","id":"ft_0","scope":"personal"}"#).unwrap();
        assert_eq!(personal.scope, Scope::Personal);
        assert!(Scope::All.allows(Scope::All) && Scope::All.allows(Scope::Personal));
        assert!(Scope::Personal.allows(Scope::Personal));
        assert!(!Scope::Personal.allows(Scope::All));
        assert_eq!(Scope::from_code("all"), Some(Scope::All));
        assert_eq!(Scope::from_code("everything"), None);
    }
}
