//! Enums whose variants each have one text code: the only encoding they have, in
//! storage, between the Worker and its objects, and in answers.

/// `ALL` lists every variant; `code` names each.
pub trait Coded: Sized + Copy + 'static {
    const ALL: &'static [Self];

    fn code(self) -> &'static str;

    fn from_code(code: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|variant| variant.code() == code)
    }
}

/// Serde through `Coded`: a variant is its code, and any other text is refused.
macro_rules! serde_by_code {
    ($type:ty) => {
        impl serde::Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($crate::domain::code::Coded::code(*self))
            }
        }

        impl<'de> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let code = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                <$type as $crate::domain::code::Coded>::from_code(&code).ok_or_else(|| {
                    serde::de::Error::custom(format!("unknown {} {code:?}", stringify!($type)))
                })
            }
        }
    };
}

pub(crate) use serde_by_code;
