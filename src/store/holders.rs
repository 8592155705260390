//! Calls into a license holder's Durable Object.

use worker::Env;

use crate::domain::holder::Operation;
use crate::domain::ipv4::PublicIpv4;
use crate::domain::license::LicenseId;
use crate::domain::outcome::PersonalOutcome;
use crate::http::error::ApiError;

pub const BINDING: &str = "HOLDERS";

/// One request to the holder's object: `/<operation>/<address>`, answered with a `PersonalOutcome` code.
pub async fn call(env: &Env, license: &LicenseId, operation: Operation, ip: PublicIpv4) -> Result<PersonalOutcome, ApiError> {
    let stub = env.durable_object(BINDING)?.id_from_name(license.as_str())?.get_stub()?;
    let mut response = stub.fetch_with_str(&format!("https://holder/{}/{ip}", operation.name())).await?;
    let body = response.text().await?;
    match (response.status_code(), PersonalOutcome::from_code(&body)) {
        (200, Some(outcome)) => Ok(outcome),
        (status, _) => Err(ApiError::Internal(format!("holder object answered {status}: {body}"))),
    }
}
