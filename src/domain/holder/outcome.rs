//! Every answer a list operation can give, and its specified text.

use crate::domain::code::Coded;
use crate::domain::holder::allow::AllowOutcome;
use crate::domain::holder::list::PersonalOutcome;
use crate::domain::net::address::{PublicIp, SubmittedIp};
use crate::domain::net::ipv4::IpRejection;
use crate::domain::network::report::ReportOutcome;

/// The specification's text for a change a limit refused.
const LIMIT: &str = "Sorry, but you have reached the maximum limit";

/// The answer for an address or range the operator's allow list holds.
fn global_allow_listed(ip: &dyn std::fmt::Display) -> String {
    format!("[{ip}] is on the global allow list, no action was taken")
}

/// The result of a list operation that got past authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HolderOutcome {
    Invalid(String),
    Private(String),
    AllowListed(SubmittedIp),
    ListedGlobal(SubmittedIp),
    AlreadyGlobal(SubmittedIp),
    Personal(SubmittedIp, PersonalOutcome),
    /// An operation of the holder's allow list, on the range as given.
    Allow(String, AllowOutcome),
    /// A report of an attacker.
    Report(SubmittedIp, ReportOutcome),
}

impl HolderOutcome {
    /// The `result` text, byte for byte as the specification and its settled decisions give it.
    pub fn message(&self) -> String {
        use PersonalOutcome as P;
        match self {
            Self::Invalid(ip) => format!("[{ip}] is invalid"),
            Self::Private(ip) => format!("[{ip}] is private"),
            Self::AllowListed(ip) => global_allow_listed(ip),
            Self::ListedGlobal(ip) => format!("[{ip}] is on global greylist"),
            Self::AlreadyGlobal(ip) => format!("[{ip}] is already on global greylist"),
            Self::Personal(ip, outcome) => match outcome {
                P::Unlisted => format!("[{ip}] is currently not on global greylist"),
                P::Listed => format!("[{ip}] is currently on your personal greylist"),
                P::Added => format!("[{ip}] has been added to greylist"),
                P::AlreadyListed => format!("[{ip}] is already on your greylist"),
                P::Removed => format!("[{ip}] has been removed from greylist"),
                P::NothingToRemove => format!("[{ip}] is not on greylist"),
                P::OwnAllowListed => {
                    format!("[{ip}] is on your allow list, no action was taken")
                }
                // The object found the global list stronger than the holder's allow list.
                P::ListedGlobal => Self::ListedGlobal(ip.clone()).message(),
                P::AlreadyGlobal => Self::AlreadyGlobal(ip.clone()).message(),
                P::LimitReached | P::ListFull => LIMIT.to_owned(),
            },
            Self::Allow(ip, outcome) => match outcome {
                AllowOutcome::Added => format!("[{ip}] has been added to your allow list"),
                AllowOutcome::AlreadyListed => format!("[{ip}] is already on your allow list"),
                AllowOutcome::Removed => format!("[{ip}] has been removed from your allow list"),
                AllowOutcome::Listed => format!("[{ip}] is on your allow list"),
                AllowOutcome::NotListed | AllowOutcome::Unlisted => {
                    format!("[{ip}] is not on your allow list")
                }
                AllowOutcome::LimitReached | AllowOutcome::ListFull => LIMIT.to_owned(),
                AllowOutcome::GlobalAllowListed => global_allow_listed(ip),
            },
            Self::Report(ip, outcome) => match outcome {
                ReportOutcome::Reported => format!("[{ip}] has been reported"),
                ReportOutcome::OwnAllowListed => {
                    Self::Personal(ip.clone(), P::OwnAllowListed).message()
                }
                ReportOutcome::LimitReached => LIMIT.to_owned(),
            },
        }
    }

    /// The address as the message shows it: the submitted text when it is not one.
    pub fn ip_text(&self) -> String {
        match self {
            Self::Invalid(text) | Self::Private(text) | Self::Allow(text, _) => text.clone(),
            Self::AllowListed(ip)
            | Self::ListedGlobal(ip)
            | Self::AlreadyGlobal(ip)
            | Self::Personal(ip, _)
            | Self::Report(ip, _) => ip.to_string(),
        }
    }

    /// The public address answered for; none for one validation refused, or a range.
    pub fn public_ip(&self) -> Option<PublicIp> {
        match self {
            Self::Invalid(_) | Self::Private(_) | Self::Allow(..) => None,
            Self::AllowListed(ip)
            | Self::ListedGlobal(ip)
            | Self::AlreadyGlobal(ip)
            | Self::Personal(ip, _)
            | Self::Report(ip, _) => Some(ip.ip),
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid",
            Self::Private(_) => "private",
            Self::AllowListed(_) => "allow_listed",
            Self::ListedGlobal(_) => "listed_global",
            Self::AlreadyGlobal(_) => "already_global",
            Self::Personal(_, outcome) => outcome.code(),
            Self::Allow(_, outcome) => outcome.code(),
            Self::Report(_, outcome) => outcome.code(),
        }
    }
}

impl From<IpRejection> for HolderOutcome {
    fn from(rejection: IpRejection) -> Self {
        match rejection {
            IpRejection::Invalid(text) => Self::Invalid(text),
            IpRejection::Private(addr) => Self::Private(addr),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::address::{Ipv6, PublicIp};
    use crate::domain::net::ipv4::PublicIpv4;
    use PersonalOutcome as P;

    fn ip() -> SubmittedIp {
        PublicIp::parse("8.8.8.8", Ipv6::Off).unwrap()
    }

    #[test]
    fn every_message_is_the_specified_text() {
        let table = [
            (
                HolderOutcome::from(PublicIpv4::parse("999.1.1.1").unwrap_err()),
                "[999.1.1.1] is invalid",
            ),
            (
                HolderOutcome::from(PublicIpv4::parse("").unwrap_err()),
                "[] is invalid",
            ),
            (
                HolderOutcome::from(PublicIpv4::parse("10.1.2.3").unwrap_err()),
                "[10.1.2.3] is private",
            ),
            (
                HolderOutcome::AllowListed(ip()),
                "[8.8.8.8] is on the global allow list, no action was taken",
            ),
            (
                HolderOutcome::ListedGlobal(ip()),
                "[8.8.8.8] is on global greylist",
            ),
            (
                HolderOutcome::AlreadyGlobal(ip()),
                "[8.8.8.8] is already on global greylist",
            ),
            (
                HolderOutcome::Personal(ip(), P::Unlisted),
                "[8.8.8.8] is currently not on global greylist",
            ),
            (
                HolderOutcome::Personal(ip(), P::Listed),
                "[8.8.8.8] is currently on your personal greylist",
            ),
            (
                HolderOutcome::Personal(ip(), P::Added),
                "[8.8.8.8] has been added to greylist",
            ),
            (
                HolderOutcome::Personal(ip(), P::AlreadyListed),
                "[8.8.8.8] is already on your greylist",
            ),
            (
                HolderOutcome::Personal(ip(), P::Removed),
                "[8.8.8.8] has been removed from greylist",
            ),
            (
                HolderOutcome::Personal(ip(), P::NothingToRemove),
                "[8.8.8.8] is not on greylist",
            ),
            (
                HolderOutcome::Personal(ip(), P::LimitReached),
                "Sorry, but you have reached the maximum limit",
            ),
            (
                HolderOutcome::Personal(ip(), P::OwnAllowListed),
                "[8.8.8.8] is on your allow list, no action was taken",
            ),
            (
                HolderOutcome::Personal(ip(), P::ListedGlobal),
                "[8.8.8.8] is on global greylist",
            ),
            (
                HolderOutcome::Personal(ip(), P::AlreadyGlobal),
                "[8.8.8.8] is already on global greylist",
            ),
        ];
        for (outcome, text) in table {
            assert_eq!(outcome.message(), text);
        }
    }

    #[test]
    fn every_report_message_is_the_issued_text() {
        assert_eq!(
            HolderOutcome::Report(ip(), ReportOutcome::Reported).message(),
            "[8.8.8.8] has been reported"
        );
        assert_eq!(
            HolderOutcome::Report(ip(), ReportOutcome::OwnAllowListed).message(),
            "[8.8.8.8] is on your allow list, no action was taken"
        );
        assert_eq!(
            HolderOutcome::Report(ip(), ReportOutcome::LimitReached).message(),
            "Sorry, but you have reached the maximum limit"
        );
    }

    #[test]
    fn every_allow_list_message_is_the_issued_text_with_the_value_as_given() {
        use AllowOutcome as A;
        let given = "45.67.89.0/24";
        let table = [
            (
                A::Added,
                "[45.67.89.0/24] has been added to your allow list",
            ),
            (
                A::AlreadyListed,
                "[45.67.89.0/24] is already on your allow list",
            ),
            (
                A::Removed,
                "[45.67.89.0/24] has been removed from your allow list",
            ),
            (A::NotListed, "[45.67.89.0/24] is not on your allow list"),
            (A::Listed, "[45.67.89.0/24] is on your allow list"),
            (A::Unlisted, "[45.67.89.0/24] is not on your allow list"),
            (
                A::LimitReached,
                "Sorry, but you have reached the maximum limit",
            ),
            (A::ListFull, "Sorry, but you have reached the maximum limit"),
            (
                A::GlobalAllowListed,
                "[45.67.89.0/24] is on the global allow list, no action was taken",
            ),
        ];
        for (outcome, text) in table {
            assert_eq!(
                HolderOutcome::Allow(given.to_owned(), outcome).message(),
                text
            );
        }
    }

    #[test]
    fn ipv6_messages_have_the_same_shapes_and_show_the_address_as_given() {
        let on = |text: &str| PublicIp::parse(text, Ipv6::On);
        let table = [
            (
                HolderOutcome::from(on("2001:db8::1").unwrap_err()),
                "[2001:db8::1] is private",
            ),
            (
                HolderOutcome::from(on("fe80::1%eth0").unwrap_err()),
                "[fe80::1%eth0] is invalid",
            ),
            (
                HolderOutcome::Personal(on("2a00:1450:4001:80b::200e").unwrap(), P::Added),
                "[2a00:1450:4001:80b::200e] has been added to greylist",
            ),
            (
                HolderOutcome::Personal(on("2A00:1450:4001:80B:0::200E").unwrap(), P::Listed),
                "[2A00:1450:4001:80B:0::200E] is currently on your personal greylist",
            ),
            (
                HolderOutcome::ListedGlobal(on("::ffff:8.8.8.8").unwrap()),
                "[::ffff:8.8.8.8] is on global greylist",
            ),
        ];
        for (outcome, text) in table {
            assert_eq!(outcome.message(), text);
            assert_eq!(
                format!("[{}]", outcome.ip_text()),
                text[..text.find(']').unwrap() + 1]
            );
        }
    }

    #[test]
    fn personal_codes_round_trip_and_are_distinct() {
        for &outcome in PersonalOutcome::ALL {
            assert_eq!(PersonalOutcome::from_code(outcome.code()), Some(outcome));
        }
        assert_eq!(PersonalOutcome::from_code("bogus"), None);
    }
}
