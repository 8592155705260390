//! The directory's object: a singleton that files every license with its label
//! and note, keeps the named operator keys and the audit log, and writes each
//! change's audit row in the same call as the change. A license's standing is
//! still published in KV, which the holders' paths read, and so are the operator
//! keys, which every isolate checks a key against without a call here; the
//! directory is where the operator finds, names and revokes licenses and keys.
//! On its first call it takes over the licenses issued before it, a KV page at a time.

use std::cell::Cell;

use futures_util::lock::Mutex;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use super::protocol::{
    Audit, AuditPage, Canaries, Count, CreateKey, CreateLicense, DirectoryCall, DirectoryProtocol,
    DirectoryRefusal, EditCanaries, FileRevocation, Keys, Labels, License, LicensePage, Licenses,
    NewKey, NewLicense, PublishKeys, RecordForwarded, RecordRefusals, Relabel, RevokeKey,
    MAX_LABELS,
};
use crate::domain::access::audit::{Action, Forwarded, Record, Refusals};
use crate::domain::access::license::key_digest;
use crate::domain::access::license::LicenseId;
use crate::domain::access::operator::{KnownKeys, NewOperatorKey};
use crate::domain::code::Coded;
use crate::domain::time::Millis;
use crate::objects::protocol::{receive, Ask, Failure, Received};
use crate::objects::startup::Started;
use crate::platform::clock;
use crate::store::canaries::{self, CanaryTable, Edited};
use crate::store::directory::audit_query::AuditCursor;
use crate::store::directory::keys::MAX_KEYS;
use crate::store::directory::licenses::{LicenseCursor, LicenseRow};
use crate::store::directory::Directory;
use crate::store::{licenses, operator_keys, StoreError};

/// What a call comes to: its answer, or the refusal or fault that stops it.
type Answered<T> = std::result::Result<T, Failure<DirectoryRefusal>>;

#[durable_object(fetch)]
pub struct OperatorDirectory {
    env: Env,
    sql: SqlStorage,
    /// Once this instance has brought its schema up to date and taken over the
    /// licenses before it: no call asks again.
    started: Started<()>,
    /// Held across each change of a key and the publication of the keys in KV,
    /// for the same reason: a key created while another is revoked must not
    /// publish the revoked one standing again.
    keys: Mutex<()>,
    /// Held across each edit of the canaries and their publication, so that an
    /// older list is never published over a newer one.
    canaries: Mutex<()>,
    /// Whether this instance published the keys: a Worker that finds none in KV
    /// asks, and KV takes one write a second to a key.
    published_keys: Cell<bool>,
}

impl DurableObject for OperatorDirectory {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        Self {
            env,
            sql,
            started: Started::default(),
            keys: Mutex::new(()),
            canaries: Mutex::new(()),
            published_keys: Cell::new(false),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        clock::adopt(&req)?;
        let call = match receive::<DirectoryProtocol>(&mut req).await? {
            Received::Call(call) => call,
            Received::OtherShape(answer) => return Ok(answer),
        };
        self.started.get_or_start(|| self.start()).await?;
        match call {
            DirectoryCall::PublishKeys(PublishKeys) => {
                PublishKeys::reply(self.publish_keys_once().await)
            }
            DirectoryCall::CreateLicense(call) => {
                CreateLicense::reply(self.create_license(call).await)
            }
            DirectoryCall::Relabel(call) => Relabel::reply(self.relabel(call).await),
            DirectoryCall::FileRevocation(call) => {
                FileRevocation::reply(self.file_revocation(call).await)
            }
            DirectoryCall::License(License(id)) => License::reply(self.filed(&id).await),
            DirectoryCall::Licenses(call) => Licenses::reply(self.licenses(call)),
            DirectoryCall::Count(Count) => {
                Count::reply(self.files().count().map_err(Failure::from))
            }
            DirectoryCall::CreateKey(call) => CreateKey::reply(self.create_key(call).await),
            DirectoryCall::Keys(Keys) => Keys::reply(self.files().keys().map_err(Failure::from)),
            DirectoryCall::RevokeKey(call) => RevokeKey::reply(self.revoke_key(call).await),
            DirectoryCall::Record(record) => Record::reply(self.record(&record)),
            DirectoryCall::RecordForwarded(RecordForwarded(rows)) => {
                RecordForwarded::reply(self.record_forwarded(&rows))
            }
            DirectoryCall::RecordRefusals(RecordRefusals(refusals)) => {
                RecordRefusals::reply(self.record_refusals(&refusals))
            }
            DirectoryCall::Audit(call) => Audit::reply(self.audit(call)),
            DirectoryCall::EditCanaries(call) => {
                EditCanaries::reply(self.edit_canaries(call).await)
            }
            DirectoryCall::Labels(Labels(ids)) => Labels::reply(
                self.files()
                    .labels(&ids[..ids.len().min(MAX_LABELS)])
                    .map_err(Failure::from),
            ),
            DirectoryCall::Canaries(Canaries) => Canaries::reply(
                CanaryTable::new(&self.sql)
                    .published()
                    .map_err(Failure::from),
            ),
        }
    }
}

impl OperatorDirectory {
    /// The schema brought up to date, and the licenses issued before the directory
    /// filed in it.
    async fn start(&self) -> Result<()> {
        self.files().migrate().map_err(StoreError::from)?;
        self.take_over().await?;
        Ok(())
    }

    fn files(&self) -> Directory<&SqlStorage> {
        Directory::new(&self.sql)
    }

    fn record(&self, record: &Record) -> Answered<()> {
        Ok(self.files().record(record, clock::now())?)
    }

    /// Refusals an isolate counted, each with its count, at the time of its first.
    fn record_refusals(&self, refusals: &[Refusals]) -> Answered<()> {
        let files = self.files();
        for refused in refusals {
            files.record_counted(&refused.record(), Millis(refused.at), refused.count)?;
        }
        Ok(())
    }

    /// The keys as published, published first if this instance has not.
    async fn publish_keys_once(&self) -> Answered<KnownKeys> {
        let _keys = self.keys.lock().await;
        let known = self.files().known_keys()?;
        if !self.published_keys.get() {
            operator_keys::publish(&self.env, &known).await?;
            self.published_keys.set(true);
        }
        Ok(known)
    }

    /// Rows the operator lists' object kept with its changes, each written once, at the
    /// time of its change, in the one stretch without an await this call is.
    fn record_forwarded(&self, rows: &[Forwarded]) -> Answered<()> {
        let files = self.files();
        for row in rows {
            files.record_forwarded(row)?;
        }
        Ok(())
    }

    /// Files the licenses KV held before this object, a page a call to KV, each
    /// page's place kept so that a takeover cut short goes on where it stopped.
    async fn take_over(&self) -> std::result::Result<(), StoreError> {
        while let Some(cursor) = self.files().takeover()? {
            let resumed = cursor.is_some();
            let (issued, next) = match licenses::issued_page(&self.env, cursor).await {
                Ok(page) => page,
                // A cursor KV no longer takes: the next call starts again from the
                // first page, which files nothing twice.
                Err(error) if resumed => {
                    self.files().restart_takeover()?;
                    return Err(error);
                }
                Err(error) => return Err(error),
            };
            for license in &issued {
                self.files().add_license(
                    license.id.as_str(),
                    ("", ""),
                    license.created_at,
                    license.revoked_at,
                )?;
            }
            self.files().took_over(next.as_deref())?;
        }
        Ok(())
    }

    /// A license's row; one KV holds but this object does not (issued by an older
    /// Worker while this one took over) is filed first, as it was issued.
    async fn filed(&self, id: &LicenseId) -> Answered<LicenseRow> {
        if let Some(row) = self.files().license(id.as_str())? {
            return Ok(row);
        }
        let issued = licenses::issued(&self.env, id)
            .await?
            .ok_or(Failure::Refused(DirectoryRefusal::NoSuchLicense))?;
        let files = self.files();
        files.add_license(id.as_str(), ("", ""), issued.created_at, issued.revoked_at)?;
        Ok(files
            .license(id.as_str())?
            .ok_or_else(|| StoreError::Corrupt("a license filed is not found".to_owned()))?)
    }

    async fn create_license(&self, call: CreateLicense) -> Answered<NewLicense> {
        let now = clock::now();
        let (license, key) = licenses::create(&self.env, now.unix()).await?;
        self.files().add_license(
            license.as_str(),
            (&call.label, &call.note),
            now.unix(),
            None,
        )?;
        self.record(&Record {
            action: Action::LicenseCreated,
            target: license.as_str().to_owned(),
            detail: labelled(&call.label),
            by: call.by,
        })?;
        let row = self
            .files()
            .license(license.as_str())?
            .ok_or_else(|| StoreError::Corrupt("a license filed is not found".to_owned()))?;
        Ok(NewLicense {
            license_key: key.reveal().to_owned(),
            row,
        })
    }

    async fn relabel(
        &self,
        call: Relabel,
    ) -> Answered<crate::store::directory::licenses::LicenseRow> {
        self.filed(&call.license).await?;
        let row = self
            .files()
            .relabel(
                call.license.as_str(),
                call.label.as_deref(),
                call.note.as_deref(),
            )?
            .ok_or(Failure::Refused(DirectoryRefusal::NoSuchLicense))?;
        let detail = match (&call.label, &call.note) {
            (Some(label), Some(_)) => format!("{}, note changed", labelled(label)),
            (Some(label), None) => labelled(label),
            (None, _) => "note changed".to_owned(),
        };
        self.record(&Record {
            action: Action::LicenseLabelled,
            target: call.license.as_str().to_owned(),
            detail,
            by: call.by,
        })?;
        Ok(row)
    }

    /// A revocation the revocations' object made: the row marked revoked and its
    /// audit row written, at the time it was made, the first time it is filed (a
    /// license taken over already revoked is filed now).
    async fn file_revocation(&self, call: FileRevocation) -> Answered<()> {
        let id = call.license.as_str();
        let before = self.files().license(id)?;
        self.filed(&call.license).await?;
        let first = before.is_none_or(|row| row.revoked_at.is_none());
        let files = self.files();
        files.mark_revoked(id, Millis(call.at).unix())?;
        if !first {
            return Ok(());
        }
        let record = Record {
            action: Action::LicenseRevoked,
            target: id.to_owned(),
            detail: String::new(),
            by: call.by,
        };
        Ok(files.record(&record, Millis(call.at))?)
    }

    fn licenses(&self, call: Licenses) -> Answered<LicensePage> {
        let after = match call.cursor.as_deref() {
            Some(text) => Some(
                LicenseCursor::decode(text)
                    .ok_or(Failure::Refused(DirectoryRefusal::UnknownCursor))?,
            ),
            None => None,
        };
        let (licenses, next) =
            self.files()
                .licenses(call.prefix.as_deref(), after.as_ref(), call.limit)?;
        Ok(LicensePage {
            licenses,
            cursor: next.map(|cursor| cursor.encode()),
        })
    }

    /// A page of the audit log, as `Licenses` answers one of licenses.
    fn audit(&self, call: Audit) -> Answered<AuditPage> {
        let after = match call.cursor.as_deref() {
            Some(text) => Some(
                AuditCursor::decode(text)
                    .ok_or(Failure::Refused(DirectoryRefusal::UnknownCursor))?,
            ),
            None => None,
        };
        let (entries, next) =
            self.files()
                .audit(&call.filter, after.as_ref(), call.limit, clock::now())?;
        Ok(AuditPage {
            entries,
            cursor: next.map(|cursor| cursor.encode()),
        })
    }

    /// A key, filed and then published: it opens nothing before every isolate
    /// can read it, and a key whose publication failed was never shown.
    async fn create_key(&self, call: CreateKey) -> Answered<NewKey> {
        let _keys = self.keys.lock().await;
        let files = self.files();
        if files.active_keys()? >= MAX_KEYS {
            return Err(Failure::Refused(DirectoryRefusal::TooManyKeys));
        }
        let key = NewOperatorKey::generate().map_err(StoreError::from)?;
        let now = clock::now().unix();
        files.add_key(
            (&key.id, &call.name, call.role),
            &key_digest(key.reveal()),
            now,
        )?;
        operator_keys::publish(&self.env, &files.known_keys()?).await?;
        self.published_keys.set(true);
        self.record(&Record {
            action: Action::KeyCreated,
            target: key.id.clone(),
            detail: format!("{:?}, role {}", call.name, call.role.code()),
            by: call.by,
        })?;
        let row = files
            .keys()?
            .into_iter()
            .find(|row| row.id == key.id)
            .ok_or_else(|| StoreError::Corrupt("a key filed is not found".to_owned()))?;
        Ok(NewKey {
            key: key.reveal().to_owned(),
            row,
        })
    }

    /// A key revoked: published revoked first, so that every isolate refuses it
    /// within `CACHE_SECONDS` whatever happens next, then filed so.
    async fn revoke_key(&self, call: RevokeKey) -> Answered<()> {
        let _keys = self.keys.lock().await;
        let mut known = self.files().known_keys()?;
        if !known.revoke(&call.id) {
            return Err(Failure::Refused(DirectoryRefusal::NoSuchKey));
        }
        operator_keys::publish(&self.env, &known).await?;
        self.published_keys.set(true);
        let name = self
            .files()
            .revoke_key(&call.id, clock::now().unix())?
            .ok_or(Failure::Refused(DirectoryRefusal::NoSuchKey))?;
        self.record(&Record {
            action: Action::KeyRevoked,
            target: call.id,
            detail: format!("{name:?}"),
            by: call.by,
        })
    }
}

impl OperatorDirectory {
    /// An edit of the canaries, written with its audit row in one stretch without
    /// an await, then published: every isolate weighs reports against it within
    /// `CACHE_SECONDS`. A publication that failed is made again by the next edit.
    async fn edit_canaries(&self, call: EditCanaries) -> Answered<Edited> {
        let _canaries = self.canaries.lock().await;
        let table = CanaryTable::new(&self.sql);
        let now = clock::now();
        let edited = table
            .edit((&call.add, &call.remove), call.ipv6, now.unix())?
            .map_err(|why| Failure::Refused(DirectoryRefusal::BadCanaries(why)))?;
        self.record(&Record {
            action: Action::CanariesEdited,
            target: "canaries".to_owned(),
            detail: format!("added {}, removed {}", edited.added, edited.removed),
            by: call.by,
        })?;
        canaries::publish(&self.env, &table.published()?).await?;
        Ok(edited)
    }
}

/// A label as an audit row shows it.
fn labelled(label: &str) -> String {
    if label.is_empty() {
        "no label".to_owned()
    } else {
        format!("label {label:?}")
    }
}
