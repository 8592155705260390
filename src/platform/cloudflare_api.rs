//! Cloudflare's API as a holder's object calls it: the IP lists, their items,
//! the bulk operations that change them, and a zone's custom rules. Every
//! answer is Cloudflare's envelope (`success`, `errors`, `result`); a refusal
//! comes back in Cloudflare's own words, with its HTTP status and
//! `Retry-After`. The token goes in the `Authorization` header only: no message
//! here ever carries it.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys::{Headers, RequestInit, Response, WorkerGlobalScope};

use crate::domain::cloudflare::connection::{AccountId, ApiToken, ZoneId};

/// Cloudflare's base URL unless `CLOUDFLARE_API` says another (a stand-in).
pub const DEFAULT_BASE: &str = "https://api.cloudflare.com/client/v4";

/// Why a call did not give its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiFailure {
    /// The HTTP status; 0 when no answer came.
    pub status: u16,
    /// Cloudflare's first error code, if it gave one.
    pub code: Option<i64>,
    /// Cloudflare's own message, or what went wrong on the way.
    pub message: String,
    pub retry_after: Option<u64>,
}

impl ApiFailure {
    /// A token Cloudflare refuses, or one without the permission.
    pub fn is_credentials(&self) -> bool {
        matches!(self.status, 401 | 403)
    }

    /// A fault on the way, as the runtime said it (never with the request's headers).
    fn transport(error: JsValue) -> Self {
        Self {
            status: 0,
            code: None,
            message: format!(
                "Cloudflare's API did not answer: {}",
                worker::Error::from(error)
            ),
            retry_after: None,
        }
    }
}

#[derive(Deserialize)]
struct Message {
    code: Option<i64>,
    message: String,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    success: bool,
    #[serde(default)]
    errors: Vec<Message>,
    #[serde(default)]
    result: Value,
    #[serde(default)]
    result_info: Option<ResultInfo>,
}

#[derive(Deserialize, Default)]
struct ResultInfo {
    #[serde(default)]
    cursors: Option<Cursors>,
}

#[derive(Deserialize, Default)]
struct Cursors {
    after: Option<String>,
}

/// A list of the account's, as far as the sync needs it.
#[derive(Debug, Clone, Deserialize)]
pub struct ListInfo {
    pub id: String,
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub num_items: u64,
    /// When its items last changed, by anyone: a reading is needed only when it moved.
    #[serde(default)]
    pub modified_on: Option<String>,
}

/// An item of a list, with Cloudflare's id for it.
#[derive(Debug, Clone, Deserialize)]
pub struct ListItemInfo {
    pub id: String,
    #[serde(default)]
    pub ip: Option<String>,
}

/// A bulk operation's state: `pending`, `running`, `completed` or `failed`.
#[derive(Debug, Clone, Deserialize)]
pub struct Operation {
    pub status: String,
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Deserialize)]
struct OperationId {
    operation_id: String,
}

/// A zone's entry-point ruleset of a phase, with its rules.
#[derive(Debug, Clone, Deserialize)]
pub struct Ruleset {
    pub id: String,
    #[serde(default)]
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Rule {
    pub id: String,
    #[serde(default)]
    pub expression: String,
    #[serde(default)]
    pub action: String,
}

/// The phase a zone's custom rules run in.
const CUSTOM_PHASE: &str = "http_request_firewall_custom";

pub struct CloudflareApi<'a> {
    base: &'a str,
    token: &'a ApiToken,
}

type Answer<T> = Result<T, ApiFailure>;

impl<'a> CloudflareApi<'a> {
    pub fn new(base: &'a str, token: &'a ApiToken) -> Self {
        Self { base, token }
    }

    /// One call: its result and the cursor of the page after it, or its failure.
    /// Through the runtime's own `fetch`: `worker::Request` and `Fetch` bring a
    /// URL parser and option conversions that weigh more than this whole client.
    async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Answer<(Value, Option<String>)> {
        let headers = Headers::new().map_err(ApiFailure::transport)?;
        let bearer = format!("Bearer {}", self.token.expose());
        headers
            .set("Authorization", &bearer)
            .map_err(ApiFailure::transport)?;
        let init = RequestInit::new();
        init.set_method(method);
        if let Some(body) = body {
            headers
                .set("Content-Type", "application/json")
                .map_err(ApiFailure::transport)?;
            init.set_body(&JsValue::from_str(&body.to_string()));
        }
        init.set_headers(&headers);
        let url = format!("{}/{path}", self.base.trim_end_matches('/'));
        let scope: WorkerGlobalScope = worker::js_sys::global().unchecked_into();
        let response: Response = JsFuture::from(scope.fetch_with_str_and_init(&url, &init))
            .await
            .map_err(ApiFailure::transport)?
            .unchecked_into();
        let status = response.status();
        let retry_after = response
            .headers()
            .get("Retry-After")
            .ok()
            .flatten()
            .and_then(|seconds| seconds.trim().parse().ok());
        let text = JsFuture::from(response.text().map_err(ApiFailure::transport)?)
            .await
            .map_err(ApiFailure::transport)?
            .as_string()
            .unwrap_or_default();
        let envelope: Option<Envelope> = serde_json::from_str(&text).ok();
        match envelope {
            Some(envelope) if envelope.success && (200..300).contains(&status) => Ok((
                envelope.result,
                envelope
                    .result_info
                    .and_then(|info| info.cursors)
                    .and_then(|c| c.after),
            )),
            Some(envelope) => {
                let first = envelope.errors.into_iter().next();
                Err(ApiFailure {
                    status,
                    code: first.as_ref().and_then(|m| m.code),
                    message: first
                        .map_or_else(|| format!("Cloudflare answered {status}"), |m| m.message),
                    retry_after,
                })
            }
            None => Err(ApiFailure {
                status,
                code: None,
                message: format!("Cloudflare answered {status} without its envelope"),
                retry_after,
            }),
        }
    }

    async fn result<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Answer<T> {
        let (result, _) = self.call(method, path, body).await?;
        serde_json::from_value(result).map_err(|e| ApiFailure {
            status: 200,
            code: None,
            message: format!("Cloudflare's answer to {path} is not of its documented shape: {e}"),
            retry_after: None,
        })
    }

    /// The account's lists: also how a token is checked against the account.
    pub async fn lists(&self, account: &AccountId) -> Answer<Vec<ListInfo>> {
        self.result(
            "GET",
            &format!("accounts/{}/rules/lists", account.as_str()),
            None,
        )
        .await
    }

    pub async fn create_list(&self, account: &AccountId, name: &str) -> Answer<ListInfo> {
        let body = json!({
            "name": name, "kind": "ip",
            "description": "Kept by the greylist service: the addresses this account's sites challenge",
        });
        self.result(
            "POST",
            &format!("accounts/{}/rules/lists", account.as_str()),
            Some(body),
        )
        .await
    }

    pub async fn list(&self, account: &AccountId, list: &str) -> Answer<ListInfo> {
        let path = format!("accounts/{}/rules/lists/{list}", account.as_str());
        self.result("GET", &path, None).await
    }

    pub async fn delete_list(&self, account: &AccountId, list: &str) -> Answer<Value> {
        let path = format!("accounts/{}/rules/lists/{list}", account.as_str());
        self.result("DELETE", &path, Some(json!({}))).await
    }

    /// Appends items: a bulk operation, whose id comes back.
    pub async fn add_items(
        &self,
        account: &AccountId,
        list: &str,
        items: &[String],
    ) -> Answer<String> {
        let body: Vec<Value> = items
            .iter()
            .map(|ip| json!({"ip": ip, "comment": "greylist"}))
            .collect();
        let path = format!("accounts/{}/rules/lists/{list}/items", account.as_str());
        let id: OperationId = self.result("POST", &path, Some(Value::Array(body))).await?;
        Ok(id.operation_id)
    }

    /// Deletes items by their ids: a bulk operation, whose id comes back.
    pub async fn delete_items(
        &self,
        account: &AccountId,
        list: &str,
        ids: &[String],
    ) -> Answer<String> {
        let items: Vec<Value> = ids.iter().map(|id| json!({ "id": id })).collect();
        let path = format!("accounts/{}/rules/lists/{list}/items", account.as_str());
        let id: OperationId = self
            .result("DELETE", &path, Some(json!({ "items": items })))
            .await?;
        Ok(id.operation_id)
    }

    pub async fn operation(&self, account: &AccountId, operation: &str) -> Answer<Operation> {
        let path = format!(
            "accounts/{}/rules/lists/bulk_operations/{operation}",
            account.as_str()
        );
        self.result("GET", &path, None).await
    }

    /// A page of the list's items, and the cursor of the next, if any.
    pub async fn items_page(
        &self,
        account: &AccountId,
        list: &str,
        cursor: Option<&str>,
        per_page: usize,
    ) -> Answer<(Vec<ListItemInfo>, Option<String>)> {
        let mut path = format!(
            "accounts/{}/rules/lists/{list}/items?per_page={per_page}",
            account.as_str()
        );
        if let Some(cursor) = cursor {
            path.push_str("&cursor=");
            path.extend(form_urlencoded::byte_serialize(cursor.as_bytes()));
        }
        let (result, after) = self.call("GET", &path, None).await?;
        let items = serde_json::from_value(result).map_err(|e| ApiFailure {
            status: 200,
            code: None,
            message: format!("Cloudflare's page of items is not of its documented shape: {e}"),
            retry_after: None,
        })?;
        Ok((items, after.filter(|after| !after.is_empty())))
    }

    /// The zone's custom rules' entry point; `None` while the zone has none.
    pub async fn entrypoint(&self, zone: &ZoneId) -> Answer<Option<Ruleset>> {
        let path = format!(
            "zones/{}/rulesets/phases/{CUSTOM_PHASE}/entrypoint",
            zone.as_str()
        );
        match self.result("GET", &path, None).await {
            Ok(ruleset) => Ok(Some(ruleset)),
            Err(failure) if failure.status == 404 => Ok(None),
            Err(failure) => Err(failure),
        }
    }

    /// Makes the entry point with one rule.
    pub async fn create_entrypoint(&self, zone: &ZoneId, rule: Value) -> Answer<Ruleset> {
        let path = format!(
            "zones/{}/rulesets/phases/{CUSTOM_PHASE}/entrypoint",
            zone.as_str()
        );
        self.result("PUT", &path, Some(json!({ "rules": [rule] })))
            .await
    }

    /// Adds a rule to the entry point: the whole ruleset comes back.
    pub async fn add_rule(&self, zone: &ZoneId, ruleset: &str, rule: Value) -> Answer<Ruleset> {
        let path = format!("zones/{}/rulesets/{ruleset}/rules", zone.as_str());
        self.result("POST", &path, Some(rule)).await
    }
}

/// The custom rule that challenges the list's addresses.
pub fn challenge_rule(expression: &str) -> Value {
    json!({
        "expression": expression,
        "action": "managed_challenge",
        "description": "greylist: challenge the addresses of the holder's list",
        "enabled": true,
    })
}
