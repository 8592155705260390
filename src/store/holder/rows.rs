//! How the holder's rows keep an address, a range and a history row's subject:
//! sixteen bytes for an address (IPv4 mapped into IPv6, so both families sort in
//! one order and a lookup is one probe of the primary key), and the SQL of an
//! entry's liveness.

use std::net::Ipv4Addr;

use crate::domain::holder::allow_range::AllowRange;
use crate::domain::holder::entry::Subject;
use crate::domain::net::address::Listed;
use crate::store::sql::{SqlError, Value};

/// `Entry::is_live` for the rows of a query, on the expiry column named: `?1` is the time.
pub(super) fn live(column: &str) -> String {
    format!("({column} IS NULL OR {column} > ?1)")
}

/// An IPv4 address as the rows keep it: 16 bytes, mapped into IPv6.
pub(super) fn address_value(addr: u32) -> Value {
    Value::Blob(Ipv4Addr::from(addr).to_ipv6_mapped().octets().to_vec())
}

pub(super) fn ip_value(ip: Listed) -> Value {
    Value::Blob(ip.key().as_bytes().to_vec())
}

/// An address or /64 read back; `None` when it is not public (the rules changed
/// since, or it is a key of a kind this code does not serve).
pub(super) fn ip_of(bytes: &[u8]) -> Option<Listed> {
    Listed::from_key(bytes)
}

/// The byte that ends a history row's subject when it is an allow-list range:
/// sixteen bytes of the first address, one of the prefix, then this (an entry's
/// key is sixteen or seventeen bytes, so the two never read alike).
const RANGE_TAG: u8 = b'a';

pub(super) fn address(value: u128) -> Value {
    Value::Blob(value.to_be_bytes().to_vec())
}

pub(super) fn address_of(bytes: &[u8]) -> Result<u128, SqlError> {
    let bytes: [u8; 16] = bytes
        .try_into()
        .map_err(|_| SqlError(format!("an address of {} bytes", bytes.len())))?;
    Ok(u128::from_be_bytes(bytes))
}

/// A history row's subject as stored: an entry's key, or a range as above.
pub(super) fn subject_value(subject: Subject) -> Value {
    match subject {
        Subject::Entry(ip) => Value::Blob(ip.key().as_bytes().to_vec()),
        Subject::Allow(range) => {
            let mut bytes = range.span().0.to_be_bytes().to_vec();
            bytes.extend([range.prefix128(), RANGE_TAG]);
            Value::Blob(bytes)
        }
    }
}

/// A history row's subject read back; `None` for what is no longer public or
/// this code never writes.
pub(super) fn subject_of(bytes: &[u8]) -> Option<Subject> {
    match bytes {
        [first @ .., prefix, RANGE_TAG] if first.len() == 16 => {
            let first = u128::from_be_bytes(first.try_into().ok()?);
            AllowRange::from_stored(first, *prefix).map(Subject::Allow)
        }
        key => ip_of(key).map(Subject::Entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::address::Ipv6;

    fn range(text: &str) -> AllowRange {
        AllowRange::parse(text, Ipv6::On).unwrap().range
    }

    #[test]
    fn a_subject_is_stored_and_read_back_whichever_list_it_is_of() {
        for subject in [
            Subject::Allow(range("45.67.89.0/24")),
            Subject::Allow(range("2a00:1450::/64")),
            Subject::Entry("2a00:1450::/64".parse().unwrap()),
            Subject::Entry("8.8.8.8".parse().unwrap()),
        ] {
            let Value::Blob(bytes) = subject_value(subject) else {
                panic!("a blob");
            };
            assert_eq!(subject_of(&bytes), Some(subject));
        }
    }
}
