//! Hooks for the end-to-end tests, compiled only with the `test-hooks` feature
//! (`build-test/`): set the service's clock, and run a Durable Object's alarm now
//! rather than when the runtime would. The deployable build has none of this,
//! and `make deploy-check` fails if its bundle names any of these paths.

use serde::Deserialize;
use worker::{Env, Method, Request, Response};

use crate::clock;
use crate::domain::license::LicenseId;
use crate::store::{holders, lists};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SetClock {
    offset_ms: i64,
}

pub async fn handle(mut req: Request, env: &Env) -> worker::Result<Response> {
    let path = req.path();
    let answer = match (req.method(), path.as_str()) {
        (Method::Post, "/__test/clock") => {
            clock::set_offset(req.json::<SetClock>().await?.offset_ms);
            Response::from_json(
                &serde_json::json!({ "now": clock::now().0, "offsetMs": clock::offset_ms() }),
            )
        }
        (Method::Post, "/__test/lists/alarm") => {
            let mut answer = lists::call(env, Method::Post, "__test/alarm", None, &[], None)
                .await
                .map_err(|e| e.to_string())?;
            Response::ok(answer.text().await?)
        }
        (Method::Post, path) => match path
            .strip_prefix("/__test/holders/")
            .and_then(|rest| rest.strip_suffix("/alarm"))
        {
            Some(id) => {
                let license = LicenseId::parse(id).ok_or("no such license")?;
                holders::run_alarm(env, &license)
                    .await
                    .map_err(|e| e.to_string())?;
                Response::ok("ran")
            }
            None => Response::error("no such test hook", 404),
        },
        _ => Response::error("no such test hook", 404),
    };
    answer
}
