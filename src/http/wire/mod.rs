//! The wire formats the handlers share: request bodies read within a bound, form
//! fields, bulk bodies, the mode the client asked its answers in, answers, entity tags and
//! the quota's RateLimit headers.

pub mod body;
pub mod bulk;
pub mod etag;
pub mod form;
pub mod gzip;
pub mod mode;
pub mod rate_limit;
pub mod reply;
