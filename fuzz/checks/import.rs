//! The operator's import format, fed in two chunks split anywhere: the result is
//! the same as fed whole, sorted and without duplicates, or a bad line named by a
//! number within the text.

use greylist::domain::net::address::Ipv6;
use greylist::domain::operator_lists::list::{Import, ListKind};

/// Panics when `data` breaks what this target promises.
pub fn check(data: &[u8]) {
    let Some((&split, text)) = data.split_first() else {
        return;
    };
    let at = usize::from(split).min(text.len());
    for (kind, ipv6) in [(ListKind::Global, Ipv6::On), (ListKind::Allow, Ipv6::Off)] {
        let whole = {
            let mut import = Import::new(kind, ipv6);
            import.push(text).and_then(|()| import.finish())
        };
        let mut parts = Import::new(kind, ipv6);
        let chunked = parts
            .push(&text[..at])
            .and_then(|()| parts.push(&text[at..]))
            .and_then(|()| parts.finish());
        match (&whole, &chunked) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b);
                assert!(
                    a.v4.as_slice().windows(2).all(|w| w[0] < w[1]),
                    "sorted, no duplicates"
                );
                assert!(
                    a.v6.as_slice().windows(2).all(|w| w[0] < w[1]),
                    "sorted, no duplicates"
                );
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.line, b.line);
                assert!(a.line >= 1 && a.line <= text.iter().filter(|&&b| b == b'\n').count() + 1);
            }
            _ => panic!("split at {at}: {whole:?} but {chunked:?}"),
        }
    }
}
