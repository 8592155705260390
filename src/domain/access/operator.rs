//! The operator's side: who acts (`ADMIN_TOKEN` or a named operator key), what
//! each may do, and the names a license carries. A key, like a license key, is a
//! bearer secret that exists at rest only as its digest and is shown once.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::domain::access::license::{hex, is_lower_hex, random};
use crate::domain::code::Coded;

/// What a named operator key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// See everything, change nothing.
    Read,
    /// Everything but creating and revoking operator keys.
    Admin,
}

impl Coded for Role {
    const ALL: &'static [Self] = &[Role::Read, Role::Admin];

    /// As stored, and as serde's `lowercase` names it in a request.
    fn code(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Admin => "admin",
        }
    }
}

/// What an operator route needs of the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Access {
    /// It only reads: every operator key opens it.
    Read,
    /// It changes something: an `admin` key or `ADMIN_TOKEN`.
    Change,
    /// It creates or revokes operator keys: `ADMIN_TOKEN` alone.
    Root,
}

/// Who acts on the operator API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Actor {
    /// `ADMIN_TOKEN` (or `ADMIN_TOKEN_NEXT` while it is rotated).
    AdminToken,
    /// A named operator key.
    Key {
        id: String,
        name: String,
        role: Role,
    },
}

/// The name the audit log gives the holder of `ADMIN_TOKEN`.
pub const ADMIN_TOKEN_NAME: &str = "ADMIN_TOKEN";

impl Actor {
    /// The name the audit log records.
    pub fn name(&self) -> &str {
        match self {
            Actor::AdminToken => ADMIN_TOKEN_NAME,
            Actor::Key { name, .. } => name,
        }
    }

    /// Whether this caller may call a route that needs `access`; the refusal says why.
    pub fn may(&self, access: Access) -> Result<(), Denied> {
        match (self, access) {
            (Actor::AdminToken, _) | (Actor::Key { .. }, Access::Read) => Ok(()),
            (
                Actor::Key {
                    role: Role::Admin, ..
                },
                Access::Change,
            ) => Ok(()),
            (Actor::Key { name, .. }, Access::Root) => Err(Denied::RootOnly(name.clone())),
            (Actor::Key { name, .. }, Access::Change) => Err(Denied::ReadOnly(name.clone())),
        }
    }
}

/// Why a valid operator key may not call a route: a 403.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Denied {
    /// A `read` key asked for a change; the key's name.
    ReadOnly(String),
    /// A key asked to create or revoke keys; the key's name.
    RootOnly(String),
}

impl Denied {
    pub fn message(&self) -> String {
        match self {
            Denied::ReadOnly(name) => {
                format!("the operator key {name:?} has the role read: it can see everything and change nothing")
            }
            Denied::RootOnly(name) => format!(
                "only ADMIN_TOKEN creates and revokes operator keys, not the operator key {name:?}"
            ),
        }
    }
}

const KEY_PREFIX: &str = "gok_";
const KEY_ID_PREFIX: &str = "key_";

/// A freshly issued operator key (256 random bits), with its id.
pub struct NewOperatorKey {
    pub id: String,
    secret: String,
}

impl NewOperatorKey {
    pub fn generate() -> Result<Self, getrandom::Error> {
        Ok(Self {
            id: format!("{KEY_ID_PREFIX}{}", hex(&random::<8>()?)),
            secret: format!("{KEY_PREFIX}{}", hex(&random::<32>()?)),
        })
    }

    pub fn reveal(&self) -> &str {
        &self.secret
    }
}

/// An operator key as every isolate checks it: what the directory publishes of
/// each key in KV, by the key's digest, at every change of a key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownKey {
    pub id: String,
    pub name: String,
    pub role: Role,
    /// A revoked key is published too (the latest `MAX_REVOKED_KNOWN`), so that
    /// its refusals are recorded under its name.
    #[serde(default)]
    pub revoked: bool,
}

/// Revoked keys the published record keeps, the most recent first.
pub const MAX_REVOKED_KNOWN: u64 = 100;

/// The operator keys, by digest, as the directory publishes them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownKeys {
    pub keys: BTreeMap<String, KnownKey>,
}

impl KnownKeys {
    /// The caller a key's digest names while the key stands; else `Err` with the
    /// key when it was revoked, and `Err(None)` when no key has that digest.
    pub fn caller(&self, digest: &str) -> Result<Actor, Option<&KnownKey>> {
        match self.keys.get(digest) {
            Some(key) if !key.revoked => Ok(Actor::Key {
                id: key.id.clone(),
                name: key.name.clone(),
                role: key.role,
            }),
            revoked => Err(revoked),
        }
    }

    /// Marks the standing key `id` revoked; whether there was one.
    pub fn revoke(&mut self, id: &str) -> bool {
        match self
            .keys
            .values_mut()
            .find(|key| key.id == id && !key.revoked)
        {
            Some(key) => {
                key.revoked = true;
                true
            }
            None => false,
        }
    }
}

/// Whether a bearer token has exactly the shape `NewOperatorKey::generate`
/// gives a key (lowercase hex): anything else is refused without a lookup.
pub fn is_operator_key(token: &str) -> bool {
    token
        .strip_prefix(KEY_PREFIX)
        .is_some_and(|rest| is_lower_hex(rest, 64))
}

/// Whether `id` has the shape of an operator key's id.
pub fn is_key_id(id: &str) -> bool {
    id.strip_prefix(KEY_ID_PREFIX)
        .is_some_and(|rest| is_lower_hex(rest, 16))
}

/// A license's label, a key's name: at most this many characters.
pub const MAX_LABEL_CHARS: usize = 100;
/// A license's note: at most this many characters.
pub const MAX_NOTE_CHARS: usize = 500;

/// A label or note as given, trimmed; refused when too long or when it holds
/// control characters (a note may hold line breaks).
pub fn text_field(what: &str, text: &str, max_chars: usize, lines: bool) -> Result<String, String> {
    let text = text.trim();
    let chars = text.chars().count();
    if chars > max_chars {
        return Err(format!(
            "{what} may be at most {max_chars} characters, not {chars}"
        ));
    }
    if text
        .chars()
        .any(|c| c.is_control() && !(lines && (c == '\n' || c == '\t')))
    {
        return Err(format!("{what} may not hold control characters"));
    }
    Ok(text.to_owned())
}

/// A label as its prefix search compares it: case folded.
pub fn folded(label: &str) -> String {
    label.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(role: Role) -> Actor {
        Actor::Key {
            id: "key_0123456789abcdef".into(),
            name: "alice".into(),
            role,
        }
    }

    #[test]
    fn each_caller_may_what_its_role_allows_and_nothing_more() {
        for access in [Access::Read, Access::Change, Access::Root] {
            assert_eq!(Actor::AdminToken.may(access), Ok(()));
        }
        assert_eq!(key(Role::Read).may(Access::Read), Ok(()));
        assert_eq!(
            key(Role::Read).may(Access::Change),
            Err(Denied::ReadOnly("alice".into())),
            "a read key may change nothing"
        );
        assert_eq!(key(Role::Admin).may(Access::Change), Ok(()));
        for role in [Role::Read, Role::Admin] {
            assert_eq!(
                key(role).may(Access::Root),
                Err(Denied::RootOnly("alice".into()))
            );
        }
        assert_eq!(
            Denied::ReadOnly("alice".into()).message(),
            "the operator key \"alice\" has the role read: it can see everything and change nothing"
        );
    }

    #[test]
    fn a_published_key_names_its_caller_while_it_stands_and_its_refusals_once_revoked() {
        let mut known = KnownKeys::default();
        let key = |id: &str, revoked| KnownKey {
            id: id.into(),
            name: "alice".into(),
            role: Role::Read,
            revoked,
        };
        known.keys.insert("d1".into(), key("key_1", false));
        known.keys.insert("d0".into(), key("key_0", true));
        assert_eq!(
            known.caller("d1"),
            Ok(Actor::Key {
                id: "key_1".into(),
                name: "alice".into(),
                role: Role::Read
            })
        );
        assert_eq!(
            known.caller("d0"),
            Err(Some(&key("key_0", true))),
            "a revoked key names no caller, only its refusal"
        );
        assert_eq!(known.caller("made-up"), Err(None));
        assert!(!known.revoke("key_0"), "revoked already");
        assert!(known.revoke("key_1"));
        assert_eq!(
            known.caller("d1"),
            Err(Some(&key("key_1", true))),
            "a revoked key names no caller, only its refusal"
        );
        let json = serde_json::to_string(&known).unwrap();
        assert_eq!(serde_json::from_str::<KnownKeys>(&json).unwrap(), known);
    }

    #[test]
    fn keys_are_random_shaped_and_recognised() {
        let (a, b) = (
            NewOperatorKey::generate().unwrap(),
            NewOperatorKey::generate().unwrap(),
        );
        assert_ne!(a.reveal(), b.reveal());
        assert!(is_operator_key(a.reveal()) && is_key_id(&a.id));
        let upper = format!("{KEY_PREFIX}{}", a.reveal()[4..].to_uppercase());
        for other in [
            "",
            "gok_",
            "glk_00",
            &a.reveal()[..67],
            "gok_../x",
            &upper[..],
        ] {
            assert!(!is_operator_key(other), "{other:?}");
        }
        assert!(!is_key_id("key_x") && !is_key_id("lic_0123456789abcdef"));
    }

    #[test]
    fn labels_and_notes_are_trimmed_and_bounded_in_characters() {
        assert_eq!(
            text_field("label", "  ACME  ", 100, false),
            Ok("ACME".into())
        );
        let hundred = "é".repeat(100);
        assert_eq!(
            text_field("label", &hundred, 100, false),
            Ok(hundred.clone())
        );
        assert_eq!(
            text_field("label", &format!("{hundred}x"), 100, false),
            Err("label may be at most 100 characters, not 101".into())
        );
        assert!(text_field("label", "a\nb", 100, false).is_err());
        assert_eq!(text_field("note", "a\nb", 500, true), Ok("a\nb".into()));
        assert!(text_field("note", "a\u{0}b", 500, true).is_err());
        assert_eq!(folded("ÉCOLE Acme"), "école acme");
    }
}
