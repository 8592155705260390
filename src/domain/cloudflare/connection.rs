//! What a holder gives to connect their Cloudflare account, checked before
//! anything is asked of Cloudflare: each malformed field refused by its name.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::access::license::is_lower_hex;
use crate::domain::feed::feed_token::Scope;

/// The list's name unless the holder gives one.
pub const DEFAULT_LIST_NAME: &str = "greylist";
/// Items of a list unless the holder says: what free, pro and business accounts hold.
pub const DEFAULT_MAX_ITEMS: u32 = 10_000;
/// What an enterprise account holds across its lists.
pub const MAX_ITEMS: u32 = 500_000;
/// Cloudflare's tokens are 40 characters; room for other shapes, never for a body.
const MAX_TOKEN_CHARS: usize = 200;

/// A Cloudflare account's id: 32 lowercase hexadecimal digits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountId(String);

/// A zone's id, of the same shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZoneId(String);

/// Cloudflare's rule for a list's name: `^[a-z0-9_]{1,50}$`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListName(String);

/// An API token: sent to Cloudflare in a header, kept sealed, never shown.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiToken(String);

macro_rules! text_value {
    ($($name:ident),*) => {$(
        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
    )*};
}
text_value!(AccountId, ZoneId, ListName);

fn cloudflare_id(text: &str) -> Option<String> {
    let lower = text.trim().to_ascii_lowercase();
    is_lower_hex(&lower, 32).then_some(lower)
}

impl AccountId {
    pub fn parse(text: &str) -> Option<Self> {
        cloudflare_id(text).map(Self)
    }
}

impl ZoneId {
    pub fn parse(text: &str) -> Option<Self> {
        cloudflare_id(text).map(Self)
    }
}

impl ListName {
    pub fn parse(text: &str) -> Option<Self> {
        let fits = (1..=50).contains(&text.len())
            && text
                .bytes()
                .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'));
        fits.then(|| Self(text.to_owned()))
    }
}

impl ApiToken {
    /// Visible ASCII only, so that it goes into a header as it came.
    pub fn parse(text: &str) -> Option<Self> {
        let fits = (1..=MAX_TOKEN_CHARS).contains(&text.len())
            && text.bytes().all(|b| b.is_ascii_graphic());
        fits.then(|| Self(text.to_owned()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// What the holder is shown of it: its last four characters, never more.
    pub fn last_four(&self) -> String {
        let start = self.0.len().saturating_sub(4);
        self.0[start..].to_owned()
    }
}

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiToken(…)")
    }
}

/// A connection as the holder asked for it, every field checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connect {
    pub account: AccountId,
    pub token: ApiToken,
    pub list_name: ListName,
    pub zone: Option<ZoneId>,
    pub scope: Scope,
    pub max_items: u32,
    /// Whether a list of that name that holds items the holder did not put there is theirs to take.
    pub take_over: bool,
}

/// The body of `PUT /api/cloudflare`, as JSON gives it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectFields {
    pub account_id: Option<Value>,
    pub api_token: Option<Value>,
    pub list_name: Option<Value>,
    pub zone_id: Option<Value>,
    pub scope: Option<Value>,
    pub max_items: Option<Value>,
    pub take_over: Option<Value>,
}

fn text<'a>(value: &'a Option<Value>, field: &str) -> Result<Option<&'a str>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(format!("{field} must be text")),
    }
}

impl Connect {
    /// Each field checked, the first that is wrong named in the message.
    pub fn parse(fields: &ConnectFields) -> Result<Self, String> {
        let account = text(&fields.account_id, "accountId")?.ok_or(
            "accountId is required: the 32 hexadecimal digits of your Cloudflare account's id",
        )?;
        let account = AccountId::parse(account)
            .ok_or("accountId must be the 32 hexadecimal digits of your Cloudflare account's id")?;
        let token = text(&fields.api_token, "apiToken")?.ok_or(
            "apiToken is required: a Cloudflare API token that may edit the account's lists",
        )?;
        let token = ApiToken::parse(token)
            .ok_or("apiToken must be 1 to 200 visible ASCII characters, as Cloudflare issues it")?;
        let list_name = match text(&fields.list_name, "listName")? {
            None => ListName(DEFAULT_LIST_NAME.to_owned()),
            Some(name) => ListName::parse(name).ok_or(
                "listName must be 1 to 50 lowercase letters, digits or underscores, as Cloudflare names lists",
            )?,
        };
        let zone = match text(&fields.zone_id, "zoneId")? {
            None => None,
            Some(zone) => Some(
                ZoneId::parse(zone)
                    .ok_or("zoneId must be the 32 hexadecimal digits of a Cloudflare zone's id")?,
            ),
        };
        let scope = match text(&fields.scope, "scope")? {
            None | Some("personal") => Scope::Personal,
            Some("all") => Scope::All,
            Some(_) => return Err("scope must be personal or all".to_owned()),
        };
        let max_items = match &fields.max_items {
            None | Some(Value::Null) => DEFAULT_MAX_ITEMS,
            Some(value) => value
                .as_u64()
                .or_else(|| value.as_str().and_then(|text| text.trim().parse().ok()))
                .filter(|n| (1..=u64::from(MAX_ITEMS)).contains(n))
                .map(|n| n as u32)
                .ok_or(format!(
                    "maxItems must be a whole number from 1 to {MAX_ITEMS}"
                ))?,
        };
        let take_over = match &fields.take_over {
            None | Some(Value::Null) => false,
            Some(Value::Bool(flag)) => *flag,
            Some(_) => return Err("takeOver must be true or false".to_owned()),
        };
        Ok(Self {
            account,
            token,
            list_name,
            zone,
            scope,
            max_items,
            take_over,
        })
    }

    /// The custom rule that makes the zone challenge the list.
    pub fn rule_expression(&self) -> String {
        format!("ip.src in ${}", self.list_name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: Value) -> Result<Connect, String> {
        Connect::parse(&serde_json::from_value(body).map_err(|e| e.to_string())?)
    }

    const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn defaults_are_the_greylist_list_personal_and_ten_thousand_items() {
        let connect = parse(json!({"accountId": ACCOUNT, "apiToken": "t0ken"})).unwrap();
        assert_eq!(connect.list_name.as_str(), "greylist");
        assert_eq!(connect.scope, Scope::Personal);
        assert_eq!(connect.max_items, 10_000);
        assert_eq!(connect.zone, None);
        assert!(!connect.take_over);
        assert_eq!(connect.rule_expression(), "ip.src in $greylist");
    }

    #[test]
    fn each_malformed_field_is_refused_by_its_name() {
        for (body, field) in [
            (json!({"apiToken": "t"}), "accountId"),
            (json!({"accountId": "12", "apiToken": "t"}), "accountId"),
            (json!({"accountId": ACCOUNT}), "apiToken"),
            (json!({"accountId": ACCOUNT, "apiToken": "a b"}), "apiToken"),
            (
                json!({"accountId": ACCOUNT, "apiToken": "t", "listName": "Grey-List"}),
                "listName",
            ),
            (
                json!({"accountId": ACCOUNT, "apiToken": "t", "listName": "x".repeat(51)}),
                "listName",
            ),
            (
                json!({"accountId": ACCOUNT, "apiToken": "t", "zoneId": "zone"}),
                "zoneId",
            ),
            (
                json!({"accountId": ACCOUNT, "apiToken": "t", "scope": "global"}),
                "scope",
            ),
            (
                json!({"accountId": ACCOUNT, "apiToken": "t", "maxItems": 0}),
                "maxItems",
            ),
            (
                json!({"accountId": ACCOUNT, "apiToken": "t", "maxItems": 500_001}),
                "maxItems",
            ),
            (
                json!({"accountId": ACCOUNT, "apiToken": "t", "maxItems": 1.5}),
                "maxItems",
            ),
            (
                json!({"accountId": ACCOUNT, "apiToken": "t", "takeOver": "yes"}),
                "takeOver",
            ),
        ] {
            let error = parse(body.clone()).unwrap_err();
            assert!(error.starts_with(field), "{body}: {error}");
        }
    }

    #[test]
    fn ids_are_taken_in_either_case_and_kept_lowercase() {
        let connect = parse(json!({
            "accountId": ACCOUNT.to_uppercase(), "apiToken": "t", "zoneId": ACCOUNT.to_uppercase(),
            "listName": "edge_1", "scope": "all", "maxItems": "500000", "takeOver": true
        }))
        .unwrap();
        assert_eq!(connect.account.as_str(), ACCOUNT);
        assert_eq!(connect.zone.unwrap().as_str(), ACCOUNT);
        assert_eq!(
            (connect.scope, connect.max_items, connect.take_over),
            (Scope::All, 500_000, true)
        );
    }

    #[test]
    fn a_token_shows_its_last_four_characters_and_never_prints() {
        let token = ApiToken::parse("abcdefghij1234").unwrap();
        assert_eq!(token.last_four(), "1234");
        assert_eq!(format!("{token:?}"), "ApiToken(…)");
        assert_eq!(ApiToken::parse("ab").unwrap().last_four(), "ab");
    }
}
