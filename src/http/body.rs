//! Request bodies: size-limited before they are read, parsed by the pure form reader.

use worker::Request;

use super::error::ApiError;
use crate::domain::form;

pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// The whole body, refused with 413 when it is over the limit: by its declared
/// length before reading, and by its actual length for bodies sent without one.
pub async fn read_limited(req: &mut Request) -> Result<Vec<u8>, ApiError> {
    let declared = req.headers().get("Content-Length")?.and_then(|len| len.trim().parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
        return Err(ApiError::PayloadTooLarge);
    }
    let body = req.bytes().await.map_err(|_| ApiError::BadRequest("the request body could not be read".to_owned()))?;
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::PayloadTooLarge);
    }
    Ok(body)
}

/// The first value of a form field, or `None` when the body does not carry it.
pub async fn form_field(req: &mut Request, name: &str) -> Result<Option<String>, ApiError> {
    let content_type = req.headers().get("Content-Type")?.unwrap_or_default();
    let body = read_limited(req).await?;
    Ok(form::first_field(&content_type, &body, name))
}
