//! Machines' login records in KV (`LICENSES`): `machine:<login name>` holds the
//! license a machine acts for, its id at its holder's and its password's
//! digest. A login names only the machine, so a login reads this first; the
//! holder's object, asked next, has the last word. Written when the holder makes
//! a machine, deleted when they revoke it.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;

use worker::Env;

use super::kv::{put_text, read_json, Binding, KvRead, Remembered};
use super::licenses::BINDING;
use super::StoreError;
use crate::domain::machines::credentials::{MachineId, MachineLogin};
use crate::domain::settings::Freshness;
use crate::domain::time::Millis;
use crate::platform::meter::{self, Billable};

/// How many machines one isolate remembers before it starts afresh.
const REMEMBERED: usize = 10_000;

thread_local! {
    /// Each machine's login record, or that it has none, as this isolate last
    /// read it: an engine that logs in or sends alerts often costs one KV read
    /// a period, as a feed token does.
    static LOGINS: Rc<Remembered<Option<MachineLogin>>> = Rc::new(Remembered::new(REMEMBERED));
    /// The machines this isolate saw refused as revoked. A revoked machine never
    /// comes back (its name was 128 random bits, never made again), so this
    /// forgets nothing: an engine that retries every second costs no read at all.
    static REVOKED: RefCell<HashSet<String>> = RefCell::new(HashSet::new());
}

fn record_key(machine: &MachineId) -> String {
    format!("machine:{}", machine.as_str())
}

/// Writes a new machine's login record.
pub async fn save(env: &Env, machine: &MachineId, login: &MachineLogin) -> Result<(), StoreError> {
    let record = serde_json::to_string(login)?;
    meter::count(Billable::KvWrite);
    put_text(&env.kv(BINDING)?, &record_key(machine), &record)?
        .execute()
        .await?;
    Ok(())
}

/// Deletes a revoked machine's login record; this isolate refuses it from now on.
pub async fn forget(env: &Env, machine: &MachineId) -> Result<(), StoreError> {
    remember_revoked(machine);
    meter::count(Billable::KvWrite);
    env.kv(BINDING)?.delete(&record_key(machine)).await?;
    Ok(())
}

/// The login record of `machine`, as KV said within the bound (`Freshness`),
/// or none: unknown, or revoked. The holder's object refuses a revoked
/// machine whose record an edge cache still shows.
pub async fn login(
    env: &Env,
    machine: &MachineId,
    freshness: Freshness,
    now: Millis,
) -> Result<Option<MachineLogin>, StoreError> {
    if is_revoked(machine) {
        return Ok(None);
    }
    let remembered = LOGINS.with(Rc::clone);
    login_of(
        &Binding { env, name: BINDING },
        &remembered,
        machine,
        freshness,
        now,
    )
    .await
}

async fn login_of(
    kv: &impl KvRead,
    remembered: &Remembered<Option<MachineLogin>>,
    machine: &MachineId,
    freshness: Freshness,
    now: Millis,
) -> Result<Option<MachineLogin>, StoreError> {
    if let Some(login) = remembered.get(machine.as_str(), now, freshness) {
        return Ok(login);
    }
    let login = read_json::<MachineLogin>(kv, &record_key(machine)).await?;
    remembered.put(machine.as_str(), login.clone(), now);
    Ok(login)
}

/// Notes that `machine` was refused as revoked, for the rest of this isolate's life.
pub fn remember_revoked(machine: &MachineId) {
    REVOKED.with_borrow_mut(|revoked| {
        if revoked.len() >= REMEMBERED {
            revoked.clear();
        }
        revoked.insert(machine.as_str().to_owned());
    });
}

fn is_revoked(machine: &MachineId) -> bool {
    REVOKED.with_borrow(|revoked| revoked.contains(machine.as_str()))
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;
    use crate::domain::access::license::LicenseId;
    use crate::store::kv::fake::FakeKv;

    #[test]
    fn an_unknown_machine_costs_one_kv_read_a_period_and_a_known_one_reads_its_record() {
        let kv = FakeKv::default();
        let remembered = Remembered::new(10);
        let freshness = Freshness::new(60).unwrap();
        let machine = MachineId::generate().unwrap();
        let login = |at: u64| {
            login_of(
                kv.at(Millis(at)),
                &remembered,
                &machine,
                freshness,
                Millis(at),
            )
            .now_or_never()
            .expect("the fake never waits")
            .unwrap()
        };
        assert_eq!(login(0), None);
        assert_eq!(login(29_999), None);
        assert_eq!(kv.reads.get(), 1, "the second login read nothing");
        let record = MachineLogin {
            license: LicenseId::parse("lic_0123456789abcdef01234567").unwrap(),
            id: "mc_0123456789abcdef".to_owned(),
            digest: "d".repeat(64),
        };
        kv.write(&record_key(&machine), &serde_json::to_vec(&record).unwrap());
        // Past the isolate's period and KV's edge cache, the record is read.
        assert_eq!(login(60_000), Some(record));
    }

    #[test]
    fn a_machine_refused_as_revoked_is_refused_without_a_read() {
        let machine = MachineId::generate().unwrap();
        assert!(!is_revoked(&machine));
        remember_revoked(&machine);
        assert!(is_revoked(&machine));
        assert!(!is_revoked(&MachineId::generate().unwrap()));
    }
}
