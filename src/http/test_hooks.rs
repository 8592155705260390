//! Hooks for the end-to-end tests, compiled only with the `test-hooks` feature
//! (`build-test/`): set the service's clock, run a Durable Object's alarm now
//! rather than when the runtime would, make the operator lists' object fail its next
//! save as a storage fault would, make the operator lists' object's sending of its audit rows
//! to the directory fail as an unreachable directory would, hand the operator lists' object a
//! batch of promotions as a report shard would, make the next notice of a
//! revocation to a holder's object fail as an unreachable object would, and its
//! filings in the directory as an unreachable directory would; make a holder's
//! object panic as a bug would, or answer a feed token's pull as though another
//! pull of the token came in between its two asks, or add an address as the
//! next pull reaches it (between a cut's count and its pull); and read what the
//! billable calls counted (`/__test/meter`, for `make bench`). The deployable
//! build has none of this, and `make deploy-check` fails if its bundle names any
//! of these paths.

use serde::Deserialize;
use worker::{Env, Method, Request, Response};

use crate::domain::access::license::LicenseId;
use crate::domain::net::address::PublicIp;
use crate::http::wire::form;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::{
    AddBeforePull, AlarmAt as HolderAlarmAt, Meter as HolderMeter, Panic, PulledElsewhere,
    RunAlarm as RunHolderAlarm, WasmMemory,
};
use crate::objects::operator_lists::client::operator_lists;
use crate::objects::operator_lists::protocol::{
    FailForwards, FailNextSave, FailPublications, Promote, RunAlarm as RunListsAlarm, WriterMemory,
    WriterMeter,
};
use crate::objects::protocol::Failure;
use crate::objects::revocations::client::revocations;
use crate::objects::revocations::protocol::{
    FailFilings, FailNextNotice, HoldMarks, RunAlarm as RunRevocationsAlarm,
};
use crate::platform::{clock, memory, meter};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SetClock {
    offset_ms: i64,
}

/// Whether the operator lists' object's audit rows, or the revocations' filings, fail to reach
/// the directory from now on.
#[derive(Deserialize)]
struct Failing {
    failing: bool,
}

/// Whether the revocations' object holds allow-list markings from now on.
#[derive(Deserialize)]
struct Holding {
    hold: bool,
}

pub async fn handle(mut req: Request, env: &Env) -> worker::Result<Response> {
    let path = req.path();
    let hook = |failure: Failure<_>| worker::Error::RustError(format!("{failure:?}"));
    match (req.method(), path.as_str()) {
        (Method::Post, "/__test/clock") => {
            clock::set_offset(req.json::<SetClock>().await?.offset_ms);
            Response::from_json(
                &serde_json::json!({ "now": clock::now().0, "offsetMs": clock::offset_ms() }),
            )
        }
        (Method::Post, "/__test/lists/alarm") => {
            let scheduled = operator_lists(env)
                .map_err(|e| e.to_string())?
                .ask(RunListsAlarm)
                .await
                .map_err(hook)?;
            Response::from_json(&serde_json::json!({ "wasScheduled": scheduled }))
        }
        (Method::Post, "/__test/lists/fail-publications") => {
            operator_lists(env)
                .map_err(|e| e.to_string())?
                .ask(FailPublications)
                .await
                .map_err(hook)?;
            Response::ok(
                "publications fail before their manifest until the operator lists' object restarts",
            )
        }
        (Method::Post, "/__test/lists/fail-next-save") => {
            operator_lists(env)
                .map_err(|e| e.to_string())?
                .ask(FailNextSave)
                .await
                .map_err(hook)?;
            Response::ok("the next save fails")
        }
        (Method::Post, "/__test/lists/fail-forwards") => {
            let Failing { failing } = req.json::<Failing>().await?;
            operator_lists(env)
                .map_err(|e| e.to_string())?
                .ask(FailForwards(failing))
                .await
                .map_err(hook)?;
            Response::ok("the operator lists' object's audit rows reach the directory only once this is false")
        }
        (Method::Post, "/__test/lists/promote") => {
            let promote = req.json::<Promote>().await?;
            let promoted = operator_lists(env)
                .map_err(|e| e.to_string())?
                .ask(promote)
                .await
                .map_err(hook)?;
            Response::from_json(&promoted)
        }
        (Method::Post, "/__test/revocations/fail-next-notice") => {
            revocations(env)
                .map_err(|e| e.to_string())?
                .ask(FailNextNotice)
                .await
                .map_err(|failure| worker::Error::RustError(format!("{failure:?}")))?;
            Response::ok("the next notice fails")
        }
        (Method::Post, "/__test/revocations/fail-filings") => {
            let Failing { failing } = req.json::<Failing>().await?;
            revocations(env)
                .map_err(|e| e.to_string())?
                .ask(FailFilings(failing))
                .await
                .map_err(|failure| worker::Error::RustError(format!("{failure:?}")))?;
            Response::ok("revocations are filed in the directory only once this is false")
        }
        (Method::Post, "/__test/revocations/hold-marks") => {
            let Holding { hold } = req.json::<Holding>().await?;
            let waiting = revocations(env)
                .map_err(|e| e.to_string())?
                .ask(HoldMarks(hold))
                .await
                .map_err(|failure| worker::Error::RustError(format!("{failure:?}")))?;
            Response::from_json(&waiting)
        }
        (Method::Post, "/__test/reports/alarm") => {
            // Every report shard's alarm: what decayed, and what waits, told to the operator lists' object.
            for index in 0..crate::domain::network::consensus::SHARDS {
                crate::objects::report_shard::client::report_shard(env, index)
                    .map_err(|e| e.to_string())?
                    .ask(crate::objects::report_shard::protocol::RunAlarm)
                    .await
                    .map_err(|e| format!("report shard {index}: {}", e.into_fault()))?;
            }
            Response::ok("told")
        }
        (Method::Post, "/__test/revocations/alarm") => {
            let pending = revocations(env)
                .map_err(|e| e.to_string())?
                .ask(RunRevocationsAlarm)
                .await
                .map_err(|failure| worker::Error::RustError(format!("{failure:?}")))?;
            Response::from_json(&serde_json::json!({ "pending": pending }))
        }
        (Method::Get, "/__test/memory") if form::query_of(&req.inner().url()) == "writer" => {
            let bytes = operator_lists(env)
                .map_err(|e| e.to_string())?
                .ask(WriterMemory)
                .await
                .map_err(|failure| worker::Error::RustError(format!("{failure:?}")))?;
            Response::from_json(&serde_json::json!({ "writer": bytes }))
        }
        (Method::Get, "/__test/meter") => {
            // The Worker's own counts, a holder's (`license=`) and the operator lists' object's
            // (`writer`, asked only when wanted: asking wakes it).
            let mut readings = vec![meter::reading().map_err(|e| e.to_string())?];
            let url = req.url()?;
            if url.query_pairs().any(|(name, _)| name == "writer") {
                readings.push(
                    operator_lists(env)
                        .map_err(|e| e.to_string())?
                        .ask(WriterMeter)
                        .await
                        .map_err(hook)?,
                );
            }
            let license = url
                .query_pairs()
                .find(|(name, _)| name == "license")
                .and_then(|(_, id)| LicenseId::parse(&id));
            if let Some(license) = license {
                readings.push(
                    holder(env, &license)
                        .map_err(|e| e.to_string())?
                        .ask(HolderMeter)
                        .await
                        .map_err(|failure| worker::Error::RustError(format!("{failure:?}")))?,
                );
            }
            // Isolates shared by the Worker and its objects are counted once.
            let mut counts = meter::Counts::default();
            let mut seen = Vec::new();
            for reading in readings {
                if !seen.contains(&reading.isolate) {
                    seen.push(reading.isolate);
                    counts += reading.counts;
                }
            }
            Response::from_json(&serde_json::json!({ "isolates": seen.len(), "counts": counts }))
        }
        (Method::Get, "/__test/memory") => {
            let holder_bytes = match form::query_of(&req.inner().url())
                .strip_prefix("license=")
                .and_then(LicenseId::parse)
            {
                Some(license) => Some(
                    holder(env, &license)
                        .map_err(|e| e.to_string())?
                        .ask(WasmMemory)
                        .await
                        .map_err(|failure| worker::Error::RustError(format!("{failure:?}")))?,
                ),
                None => None,
            };
            Response::from_json(&serde_json::json!({
                "worker": memory::wasm_bytes(),
                "holder": holder_bytes,
            }))
        }
        (method, path) => {
            let Some((id, name)) = holder_hook(path) else {
                return Response::error("no such test hook", 404);
            };
            let license = LicenseId::parse(id).ok_or("no such license")?;
            let object = holder(env, &license).map_err(|e| e.to_string())?;
            // The holder's refusals, where `hook` takes the operator lists' object's.
            let refused = |failure: Failure<_>| worker::Error::RustError(format!("{failure:?}"));
            match (method, name) {
                (Method::Post, "alarm") => {
                    object.ask(RunHolderAlarm).await.map_err(refused)?;
                    Response::ok("ran")
                }
                (Method::Get, "alarm") => {
                    let at = object.ask(HolderAlarmAt).await.map_err(refused)?;
                    Response::from_json(&serde_json::json!({ "at": at }))
                }
                (Method::Post, "panic") => {
                    object.ask(Panic).await.map_err(refused)?;
                    Response::ok("did not panic")
                }
                (Method::Post, "pulled-elsewhere") => {
                    object.ask(PulledElsewhere).await.map_err(refused)?;
                    Response::ok("armed")
                }
                (Method::Post, "add-before-pull") => {
                    let url = req.inner().url();
                    let ip = form::query_of(&url)
                        .strip_prefix("ip=")
                        .ok_or("?ip=<address>")?;
                    let ip: PublicIp = ip.parse().map_err(|e| format!("{e:?}"))?;
                    object.ask(AddBeforePull { ip }).await.map_err(refused)?;
                    Response::ok("armed")
                }
                _ => Response::error("no such test hook", 404),
            }
        }
    }
}

/// The license and the hook's name in `/__test/holders/<license>/<hook>`.
fn holder_hook(path: &str) -> Option<(&str, &str)> {
    path.strip_prefix("/__test/holders/")?.split_once('/')
}
