//! When the operator lists' object publishes a list: an explicit state machine over the list's
//! counters, so that every saved change is published (an alarm stands for every
//! change not yet published), KV's one write a second to a key is kept, and a
//! version number is never handed out twice. The object's async loop only does
//! what `next` says and reports back.

/// KV takes one write a second to a key: a list's catalog is written at most that often.
pub const PUBLISH_INTERVAL_MS: u64 = 1_000;
/// After a failed publication, the alarm tries again this much later.
pub const RETRY_MS: u64 = 5_000;

/// One list's publication, as stored with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Publication {
    /// The version isolates read; 0 before the first publication.
    pub version: u64,
    /// The highest version number handed out, published or not: a publication
    /// that failed half way may have written shards under it.
    pub reserved: u64,
    /// Changes saved so far, counted.
    pub saved: u64,
    /// The count of changes the published version includes.
    pub published: u64,
    /// When the last catalog was written, in ms.
    pub published_at_ms: u64,
}

/// What to do about a list now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Everything saved is published.
    Idle,
    /// Publish now (`begin`, then `succeeded` or `failed`).
    Publish,
    /// A publication is due then (KV's write rate), not before.
    WaitUntil(u64),
}

/// A publication under way: the version it writes and the changes it includes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    pub version: u64,
    pub upto: u64,
}

impl Publication {
    /// A change was saved; returns its number.
    pub fn saved_one(&mut self) -> u64 {
        self.saved += 1;
        self.saved
    }

    /// Whether the published version includes change number `change`.
    pub fn includes(&self, change: u64) -> bool {
        self.version > 0 && self.published >= change
    }

    pub fn next(&self, now_ms: u64) -> Next {
        // A list never published is published, even empty, so that isolates find a catalog.
        if self.version > 0 && self.published >= self.saved {
            return Next::Idle;
        }
        let due = self.published_at_ms + PUBLISH_INTERVAL_MS;
        if self.published_at_ms > 0 && now_ms < due {
            Next::WaitUntil(due)
        } else {
            Next::Publish
        }
    }

    /// When the alarm must run so that what is saved gets published, if anything waits.
    pub fn alarm_at(&self, now_ms: u64) -> Option<u64> {
        match self.next(now_ms) {
            Next::Idle => None,
            Next::Publish => Some(now_ms),
            Next::WaitUntil(at) => Some(at),
        }
    }

    /// Starts a publication of everything saved so far, under a new number; the
    /// caller stores the publication before it writes anything under that number.
    pub fn begin(&mut self) -> Attempt {
        self.reserved = self.reserved.max(self.version) + 1;
        Attempt {
            version: self.reserved,
            upto: self.saved,
        }
    }

    /// The catalog of `attempt` was written at `at_ms`.
    pub fn succeeded(&mut self, attempt: Attempt, at_ms: u64) {
        self.version = attempt.version;
        self.published = self.published.max(attempt.upto);
        self.published_at_ms = at_ms;
    }

    /// The attempt failed at `now_ms`: nothing changes but that the number is used;
    /// returns when to try again.
    pub fn failed(&self, now_ms: u64) -> u64 {
        now_ms + RETRY_MS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_list_is_published_at_once_even_empty() {
        let publication = Publication::default();
        assert_eq!(publication.next(5), Next::Publish);
        assert_eq!(publication.alarm_at(5), Some(5));
    }

    #[test]
    fn every_saved_change_is_published_then_the_list_is_idle() {
        let mut publication = Publication::default();
        let attempt = publication.begin();
        publication.succeeded(attempt, 1_000);
        assert_eq!(
            (publication.version, publication.next(1_500)),
            (1, Next::Idle)
        );
        assert_eq!(
            publication.alarm_at(1_500),
            None,
            "no alarm when nothing waits"
        );
        let change = publication.saved_one();
        assert!(!publication.includes(change));
        assert_eq!(
            publication.next(1_500),
            Next::WaitUntil(2_000),
            "one catalog write a second"
        );
        assert_eq!(
            publication.alarm_at(1_500),
            Some(2_000),
            "the alarm stands for the change"
        );
        assert_eq!(publication.next(2_000), Next::Publish);
        let attempt = publication.begin();
        assert_eq!(
            attempt,
            Attempt {
                version: 2,
                upto: 1
            }
        );
        // A change saved while the publication is written is not in it.
        let later = publication.saved_one();
        publication.succeeded(attempt, 2_100);
        assert!(publication.includes(change) && !publication.includes(later));
        assert_eq!(publication.next(3_100), Next::Publish);
    }

    #[test]
    fn a_failed_publication_keeps_the_change_waiting_and_never_reuses_its_number() {
        let mut publication = Publication::default();
        let first = publication.begin();
        publication.succeeded(first, 1_000);
        publication.saved_one();
        let failed = publication.begin();
        assert_eq!(publication.failed(3_000), 8_000);
        assert_eq!(
            publication.version, 1,
            "the published version is still the old one"
        );
        assert_eq!(
            publication.next(3_000),
            Next::Publish,
            "the change still waits"
        );
        let retry = publication.begin();
        assert!(
            retry.version > failed.version,
            "shards written under {} may exist",
            failed.version
        );
        publication.succeeded(retry, 8_000);
        assert_eq!(publication.next(9_000), Next::Idle);
    }

    #[test]
    fn a_restart_between_save_and_publish_finds_the_change_waiting() {
        // As stored after a save, before any publication of it: what a restart reads back.
        let stored = Publication {
            version: 4,
            reserved: 4,
            saved: 9,
            published: 8,
            published_at_ms: 1_000,
        };
        assert_eq!(stored.alarm_at(60_000), Some(60_000));
    }
}
