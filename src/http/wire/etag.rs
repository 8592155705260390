//! `ETag` and `If-None-Match` (RFC 9110 §13.1.2): whether a client already holds
//! the answer it would get.

/// Whether `if_none_match` names `etag` (strong comparison; `*` is not an answer's tag).
pub fn held(if_none_match: &str, etag: &str) -> bool {
    if_none_match.split(',').any(|tag| tag.trim() == etag)
}

/// The quoted tags of an `If-None-Match` header, weak ones too.
pub fn tags(if_none_match: &str) -> impl Iterator<Item = &str> {
    if_none_match
        .split(',')
        .map(str::trim)
        .filter(|tag| !tag.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_held_when_the_header_names_it_among_others() {
        assert!(held("\"7\"", "\"7\""));
        assert!(held("\"1\", \"7\"", "\"7\""));
        assert!(!held("\"17\"", "\"7\""));
        assert!(!held("*", "\"7\""));
        assert!(!held("", "\"7\""));
        assert_eq!(
            tags(" \"a\",, W/\"b\" ").collect::<Vec<_>>(),
            ["\"a\"", "W/\"b\""]
        );
    }
}
