//! Request bodies: size-limited before they are read, then read as a form or JSON.

use serde::de::DeserializeOwned;
use worker::Request;

use super::error::ApiError;
use crate::domain::form;

pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// A request body read whole, with the content type that says how to parse it.
pub struct Body {
    content_type: String,
    bytes: Vec<u8>,
}

impl Body {
    /// Refused with 413 when over the limit: by its declared length before reading,
    /// and by its actual length for bodies sent without one.
    pub async fn read(req: &mut Request) -> Result<Self, ApiError> {
        let headers = req.headers();
        let content_type = headers.get("Content-Type")?.unwrap_or_default();
        let declared = headers.get("Content-Length")?.and_then(|len| len.trim().parse::<u64>().ok());
        if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
            return Err(ApiError::PayloadTooLarge);
        }
        let bytes = req.bytes().await.map_err(|_| ApiError::BadRequest("the request body could not be read".to_owned()))?;
        if bytes.len() > MAX_BODY_BYTES {
            return Err(ApiError::PayloadTooLarge);
        }
        Ok(Self { content_type, bytes })
    }

    /// The first value of a form field, or `None` when the body does not carry it.
    pub fn field(&self, name: &str) -> Option<String> {
        form::first_field(&self.content_type, &self.bytes, name)
    }

    pub fn is_json(&self) -> bool {
        form::media_type(&self.content_type).eq_ignore_ascii_case("application/json")
    }

    pub fn json<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.bytes)
    }
}
