//! The floor worker: what the runtime costs before the service does anything.
//! `…/bare` answers at once, `…/do` calls an empty Durable Object, `…/read` calls
//! one that looks up a row that is not there, the least an unlisted check can
//! cost, and `…/write` calls one that writes a single row, the least an add can cost.

use worker::{durable_object, event, Context, DurableObject, Env, Request, Response, Result, SqlStorage, State};

#[durable_object]
pub struct Empty {
    sql: SqlStorage,
}

impl DurableObject for Empty {
    fn new(state: State, _env: Env) -> Self {
        let sql = state.storage().sql();
        // Ignored on failure: only /read and /write need the table, and it then answers an error.
        let _ = sql.exec("CREATE TABLE IF NOT EXISTS rows (n INTEGER PRIMARY KEY)", None);
        Self { sql }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        match req.path().as_str() {
            "/write" => {
                self.sql.exec("INSERT INTO rows (n) VALUES (NULL)", None)?;
            }
            // A point lookup by key, its rows read as the service reads them.
            "/read" => {
                for row in self.sql.exec("SELECT n FROM rows WHERE n = ?1", Some(vec![(-1).into()]))?.raw() {
                    row?;
                }
            }
            _ => {}
        }
        Response::ok("ok")
    }
}

/// Reads the body as the service does: workerd closes a keep-alive connection
/// whose request body was left unread, which would make the floor slower, not faster.
/// Answers on any path ending so (`/api/do` too), so that the bench can put the
/// floors under the service's own asset routing.
#[event(fetch)]
async fn fetch(mut req: Request, env: Env, _ctx: Context) -> Result<Response> {
    req.bytes().await?;
    let path = req.path();
    match path.rsplit('/').next() {
        Some(name @ ("do" | "read" | "write")) => env.durable_object("EMPTY")?.get_by_name("floor")?.fetch_with_str(&format!("https://empty/{name}")).await,
        _ => Response::ok("ok"),
    }
}
