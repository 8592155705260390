//! A machine's credentials and settings. A holder makes a machine; the service
//! makes its login name (`MachineId`) and password, shows the password once and
//! keeps only its digest. The holder's object keeps the machine (its settings,
//! when it last logged in and alerted, its counts); KV keeps the login record a
//! login reads, under the machine's name, since a login names no license.

use serde::{Deserialize, Serialize};

use crate::domain::access::license::{hex, key_digest, random, secrets_match, LicenseId};
use crate::domain::holder::entry::{MAX_TTL_SECONDS, MIN_TTL_SECONDS};
use crate::domain::usage_metrics::EngineUsage;

/// At most this many machines per holder.
pub const MAX_PER_HOLDER: usize = 20;
/// How long an alert's entry stands unless the holder says otherwise: the four
/// hours of CrowdSec's default profile.
pub const DEFAULT_TTL_SECONDS: u64 = 14_400;
/// A machine's token lives an hour, as the Local API's own do; the engine logs
/// in again a minute before it ends.
pub const TOKEN_SECONDS: u64 = 3600;
/// A machine's label, at most this many characters.
pub const MAX_NAME_CHARS: usize = 100;
/// The scenarios a login names, kept at most (a hub installed whole has about
/// 150), each cut to this many characters.
pub const MAX_SCENARIOS: usize = 200;
pub const MAX_SCENARIO_CHARS: usize = 100;

const MACHINE_ID_PREFIX: &str = "glm_";
const ID_PREFIX: &str = "mc_";
const PASSWORD_CHARS: usize = 32;
const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The name a machine logs in with (`login` in the engine's credentials file):
/// 128 random bits, so that no two holders' machines ever share one without a
/// registry to ask. Read back only in the shape `generate` makes, so that a
/// login with any other name is refused before anything is read.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct MachineId(String);

impl TryFrom<String> for MachineId {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text).ok_or_else(|| format!("not a machine id: {text:?}"))
    }
}

impl From<MachineId> for String {
    fn from(id: MachineId) -> String {
        id.0
    }
}

impl MachineId {
    pub fn generate() -> Result<Self, getrandom::Error> {
        let bits = hex(&random::<16>()?);
        Ok(Self(format!("{MACHINE_ID_PREFIX}{bits}")))
    }

    pub fn parse(text: &str) -> Option<Self> {
        let hex_part = text.strip_prefix(MACHINE_ID_PREFIX)?;
        let well_formed = hex_part.len() == 32
            && hex_part
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        well_formed.then(|| Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether `text` is a machine's id as its holder names it (`/api/machines/<id>`).
pub fn is_id(text: &str) -> bool {
    text.strip_prefix(ID_PREFIX).is_some_and(|hex| {
        hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// A new machine: the id its holder names it by, its login name and its
/// password, shown this once.
pub struct NewMachine {
    pub id: String,
    pub machine_id: MachineId,
    pub password: String,
}

impl NewMachine {
    pub fn generate() -> Result<Self, getrandom::Error> {
        Ok(Self {
            id: format!("{ID_PREFIX}{}", hex(&random::<8>()?)),
            machine_id: MachineId::generate()?,
            password: password()?,
        })
    }
}

/// 32 characters of `[0-9A-Za-z]`, about 190 random bits: letters and digits
/// only, so that it needs no quoting in the engine's YAML file.
fn password() -> Result<String, getrandom::Error> {
    let mut password = String::with_capacity(PASSWORD_CHARS);
    while password.len() < PASSWORD_CHARS {
        for byte in random::<64>()? {
            // 248 is 4 × 62: the bytes above it are dropped, so every character is as likely.
            if byte < 248 && password.len() < PASSWORD_CHARS {
                password.push(char::from(ALPHABET[usize::from(byte % 62)]));
            }
        }
    }
    Ok(password)
}

/// The digest a password is kept as. SHA-256, fast on purpose: the password is
/// about 190 random bits the service made, so there is no dictionary for a slow
/// hash to slow down, and a slow one would only cost every login its CPU.
pub fn password_digest(password: &str) -> String {
    key_digest(password)
}

/// Whether `password` is the one `digest` was made of, in constant time.
pub fn password_matches(password: &str, digest: &str) -> bool {
    secrets_match(&password_digest(password), digest)
}

/// A machine's label, as given: trimmed, at most `MAX_NAME_CHARS`; none when empty.
pub fn name(text: Option<&str>) -> Result<Option<String>, String> {
    let name = text.map(str::trim).filter(|name| !name.is_empty());
    match name {
        Some(name) if name.chars().count() > MAX_NAME_CHARS => {
            Err(format!("name must be at most {MAX_NAME_CHARS} characters"))
        }
        name => Ok(name.map(str::to_owned)),
    }
}

/// What a machine's alerts do: how long an alert's entry stands (seconds), and
/// whether alerts add to the holder's greylist at all (reports they make either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineSettings {
    pub ttl: u64,
    pub adds: bool,
}

impl Default for MachineSettings {
    fn default() -> Self {
        Self {
            ttl: DEFAULT_TTL_SECONDS,
            adds: true,
        }
    }
}

/// A new machine as the holder's object records it: its password's digest is
/// the login record's alone (`MachineLogin`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewMachineRecord {
    pub id: String,
    pub machine_id: MachineId,
    pub name: Option<String>,
}

/// A change of a machine: each field given replaces the machine's, the others
/// stay. A name given empty takes the label away (`Some("")`), which a JSON
/// `null` could not say once it crossed a wire.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineChange {
    pub name: Option<String>,
    pub ttl: Option<u64>,
    pub adds: Option<bool>,
}

impl MachineChange {
    /// The fields as given: `name`, `ttl` in whole seconds (a minute to a year,
    /// as an add's), `adds` `true` or `false`.
    pub fn parse(
        name: Option<&str>,
        ttl: Option<&str>,
        adds: Option<&str>,
    ) -> Result<Self, String> {
        let ttl = ttl.map(self::ttl).transpose()?;
        let adds = match adds.map(str::trim) {
            None => None,
            Some("true") => Some(true),
            Some("false") => Some(false),
            Some(_) => return Err("adds is true or false".to_owned()),
        };
        let name = match name {
            None => None,
            given => Some(self::name(given)?.unwrap_or_default()),
        };
        Ok(Self { name, ttl, adds })
    }

    /// The settings once this change is made.
    pub fn applied(&self, settings: MachineSettings) -> MachineSettings {
        MachineSettings {
            ttl: self.ttl.unwrap_or(settings.ttl),
            adds: self.adds.unwrap_or(settings.adds),
        }
    }
}

/// A ttl as given: whole seconds, a minute to a year, as an add's.
fn ttl(text: &str) -> Result<u64, String> {
    let bounds = MIN_TTL_SECONDS..=MAX_TTL_SECONDS;
    match text.trim().parse::<u64>() {
        Ok(seconds) if bounds.contains(&seconds) => Ok(seconds),
        _ => Err(format!(
            "ttl must be whole seconds from {MIN_TTL_SECONDS} to {MAX_TTL_SECONDS}"
        )),
    }
}

/// What a machine's alerts came to: every alert it sent, those that made a
/// report, the adds they made (an entry added, or its expiry moved later), and
/// the alerts that changed nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertCounts {
    pub alerts: u64,
    pub reported: u64,
    pub added: u64,
    pub ignored: u64,
}

impl AlertCounts {
    pub fn plus(self, other: Self) -> Self {
        Self {
            alerts: self.alerts + other.alerts,
            reported: self.reported + other.reported,
            added: self.added + other.added,
            ignored: self.ignored + other.ignored,
        }
    }
}

/// A machine as its holder sees it: never its password.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineInfo {
    pub id: String,
    pub machine_id: String,
    pub name: Option<String>,
    pub created_at: String,
    pub last_login_at: Option<String>,
    pub last_alert_at: Option<String>,
    /// The scenarios its last login named.
    pub scenarios: Vec<String>,
    pub counts: AlertCounts,
    pub ttl: u64,
    pub adds: bool,
    /// What its engine last reported of itself (CrowdSec's usage metrics);
    /// `None` before a report, and from an object of the version before them.
    #[serde(default)]
    pub usage: Option<EngineUsage>,
}

/// What KV keeps under a machine's login name: the license it acts for, its
/// id at its holder's, and its password's digest. The license an alert acts
/// for comes from here, never from what the engine sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineLogin {
    pub license: LicenseId,
    pub id: String,
    pub digest: String,
}

/// The scenarios a login names, as the machine's row keeps them: the first
/// `MAX_SCENARIOS`, each cut to `MAX_SCENARIO_CHARS` characters, empty ones left out.
pub fn kept_scenarios(given: &[String]) -> Vec<String> {
    given
        .iter()
        .map(|scenario| scenario.trim())
        .filter(|scenario| !scenario.is_empty())
        .take(MAX_SCENARIOS)
        .map(|scenario| scenario.chars().take(MAX_SCENARIO_CHARS).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_id_carries_128_random_bits_and_parses_only_in_its_shape() {
        let (a, b) = (
            MachineId::generate().unwrap(),
            MachineId::generate().unwrap(),
        );
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), MACHINE_ID_PREFIX.len() + 32);
        assert_eq!(MachineId::parse(a.as_str()), Some(a.clone()));
        for bad in [
            "",
            "glm_",
            "glm_0123456789abcdef0123456789abcde",
            "glm_0123456789abcdef0123456789abcdef0",
            "glm_0123456789ABCDEF0123456789abcdef",
            "GLM_0123456789abcdef0123456789abcdef",
            "glm_../../456789abcdef0123456789abcd",
            "lic_0123456789abcdef01234567",
        ] {
            assert_eq!(MachineId::parse(bad), None, "{bad:?}");
        }
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<MachineId>(&json).unwrap(), a);
        assert!(serde_json::from_str::<MachineId>("\"glm_x\"").is_err());
    }

    #[test]
    fn a_new_machine_has_an_id_a_name_and_an_alphanumeric_password_of_190_bits() {
        let (a, b) = (
            NewMachine::generate().unwrap(),
            NewMachine::generate().unwrap(),
        );
        assert!(is_id(&a.id) && is_id(&b.id) && a.id != b.id);
        assert_ne!(a.machine_id, b.machine_id);
        assert_eq!(a.password.len(), PASSWORD_CHARS);
        assert!(a.password.bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a.password, b.password);
        // 32 characters of 62: log2(62) × 32 ≈ 190.5 bits, past the 128 asked.
        assert!((PASSWORD_CHARS as f64) * 62f64.log2() >= 128.0);
        for bad in [
            "",
            "mc_",
            "mc_0123456789abcde",
            "mc_0123456789ABCDEF",
            "ft_0123456789abcdef",
        ] {
            assert!(!is_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn every_password_character_is_drawn_from_the_whole_alphabet() {
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            seen.extend(password().unwrap().bytes());
        }
        assert_eq!(seen.len(), 62, "200 passwords use every letter and digit");
    }

    #[test]
    fn a_password_is_kept_as_its_digest_and_matched_against_it() {
        let digest = password_digest("s3cret");
        assert_eq!(digest.len(), 64);
        assert_ne!(digest, "s3cret");
        assert!(password_matches("s3cret", &digest));
        assert!(!password_matches("s3creT", &digest));
        assert!(!password_matches("", &digest));
    }

    #[test]
    fn a_change_takes_the_fields_given_and_leaves_the_others() {
        let change = MachineChange::parse(None, Some(" 3600 "), Some("false")).unwrap();
        assert_eq!(
            change.applied(MachineSettings::default()),
            MachineSettings {
                ttl: 3600,
                adds: false
            }
        );
        assert_eq!(change.name, None);
        let renamed = MachineChange::parse(Some(" web-1 "), None, None).unwrap();
        assert_eq!(renamed.name.as_deref(), Some("web-1"));
        assert_eq!(
            renamed.applied(MachineSettings::default()),
            MachineSettings::default()
        );
        assert_eq!(
            MachineChange::parse(Some(""), None, None)
                .unwrap()
                .name
                .as_deref(),
            Some(""),
            "an empty name takes the label away"
        );
        for bad in ["59", "31536001", "4h", "-1"] {
            assert!(
                MachineChange::parse(None, Some(bad), None)
                    .unwrap_err()
                    .contains("ttl"),
                "{bad}"
            );
        }
        assert_eq!(
            MachineChange::parse(None, None, Some("yes")).unwrap_err(),
            "adds is true or false"
        );
        let long = "x".repeat(101);
        assert!(MachineChange::parse(Some(&long), None, None).is_err());
    }

    #[test]
    fn a_machine_adds_for_crowdsecs_four_hours_unless_told_otherwise() {
        assert_eq!(
            MachineSettings::default(),
            MachineSettings {
                ttl: 14_400,
                adds: true
            }
        );
    }

    #[test]
    fn a_logins_scenarios_are_kept_bounded() {
        let many: Vec<String> = (0..300).map(|n| format!("crowdsecurity/s{n}")).collect();
        let kept = kept_scenarios(&many);
        assert_eq!(kept.len(), MAX_SCENARIOS);
        assert_eq!(kept[0], "crowdsecurity/s0");
        let long = kept_scenarios(&["x".repeat(500), " ".to_owned()]);
        assert_eq!(long, ["x".repeat(MAX_SCENARIO_CHARS)]);
    }
}
