//! Reading one field from a form body, `multipart/form-data` (what `curl --form`
//! sends) or `application/x-www-form-urlencoded` (what `curl --data` sends).
//! Both are parsed here rather than by the runtime so that the body can be
//! size-checked first and every malformed input has one defined answer.

/// RFC 2046 §5.1.1: a boundary is 1 to 70 characters. A longer one is refused, so
/// the delimiter searched for stays short.
pub const MAX_BOUNDARY_CHARS: usize = 70;

/// The first value of field `name`, decoded lossily as UTF-8; `None` when the body
/// does not carry the field: another content type, broken multipart, or no such field.
pub fn first_field(content_type: &str, body: &[u8], name: &str) -> Option<String> {
    all_fields(content_type, body, name).into_iter().next()
}

/// Every value of field `name`, in order; a multipart part counts only when it is
/// whole, so a body broken off keeps the fields before the break.
pub fn all_fields(content_type: &str, body: &[u8], name: &str) -> Vec<String> {
    let media_type = media_type(content_type);
    if media_type.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
        form_urlencoded::parse(body)
            .filter(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
            .collect()
    } else if media_type.eq_ignore_ascii_case("multipart/form-data") {
        match parameter(content_type, "boundary").filter(|b| b.len() <= MAX_BOUNDARY_CHARS) {
            Some(boundary) => multipart_fields(body, boundary.as_bytes(), name),
            None => Vec::new(),
        }
    } else {
        Vec::new()
    }
}

/// The query string of a URL, without the fragment. Read by hand: the `url` crate
/// would more than double the Worker's module for this one question.
pub fn query_of(url: &str) -> &str {
    url.split('#')
        .next()
        .unwrap_or("")
        .split_once('?')
        .map_or("", |(_, query)| query)
}

/// The media type of a `Content-Type` value, without its parameters.
pub fn media_type(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or("").trim()
}

/// A `key=value` parameter of a header value, unquoted.
fn parameter<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    header.split(';').skip(1).find_map(|param| {
        let (k, v) = param.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case(key)
            .then(|| v.trim().trim_matches('"'))
            .filter(|v| !v.is_empty())
    })
}

/// Every search starts where the previous one ended and runs in linear time, so
/// one body costs time in proportion to its length.
fn multipart_fields(body: &[u8], boundary: &[u8], name: &str) -> Vec<String> {
    let delimiter = [b"--", boundary].concat();
    let part_end = [b"\r\n", delimiter.as_slice()].concat();
    let mut values = Vec::new();
    let Some(start) = find(body, &delimiter) else {
        return values;
    };
    let mut rest = &body[start + delimiter.len()..];
    while let Some(after) = rest.strip_prefix(b"\r\n") {
        let Some(headers_end) = find(after, b"\r\n\r\n") else {
            break;
        };
        let headers = String::from_utf8_lossy(&after[..headers_end]);
        let content = &after[headers_end + 4..];
        let Some(next) = find(content, &part_end) else {
            break;
        };
        if part_name(&headers).as_deref() == Some(name) {
            values.push(String::from_utf8_lossy(&content[..next]).into_owned());
        }
        rest = &content[next + part_end.len()..];
    }
    values
}

/// The `name` of a part's `Content-Disposition: form-data; name="..."` header.
fn part_name(headers: &str) -> Option<String> {
    headers.split("\r\n").find_map(|line| {
        let (key, value) = line.split_once(':')?;
        if !key.trim().eq_ignore_ascii_case("content-disposition") {
            return None;
        }
        value.split(';').skip(1).find_map(|param| {
            let (k, v) = param.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case("name")
                .then(|| v.trim().trim_matches('"').to_owned())
        })
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const URLENCODED: &str = "application/x-www-form-urlencoded";
    const MULTIPART: &str = "multipart/form-data; boundary=------------------------abc123";

    fn multipart(parts: &[(&str, &str)]) -> Vec<u8> {
        let mut body = Vec::new();
        for (name, value) in parts {
            body.extend_from_slice(
                format!("--------------------------abc123\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes(),
            );
        }
        body.extend_from_slice(b"--------------------------abc123--\r\n");
        body
    }

    #[test]
    fn urlencoded_fields_decode() {
        assert_eq!(
            first_field(URLENCODED, b"ip=1.2.3.4", "ip").as_deref(),
            Some("1.2.3.4")
        );
        assert_eq!(
            first_field(URLENCODED, b"a=b&ip=+1.2.3.4%20", "ip").as_deref(),
            Some(" 1.2.3.4 ")
        );
        assert_eq!(
            first_field(
                "Application/X-WWW-Form-Urlencoded; charset=utf-8",
                b"ip=8.8.8.8",
                "ip"
            )
            .as_deref(),
            Some("8.8.8.8")
        );
        assert_eq!(first_field(URLENCODED, b"ipx=1.2.3.4", "ip"), None);
        assert_eq!(first_field(URLENCODED, b"ip=", "ip").as_deref(), Some(""));
    }

    #[test]
    fn multipart_fields_decode() {
        let body = multipart(&[("other", "x"), ("ip", "1.2.3.4")]);
        assert_eq!(
            first_field(MULTIPART, &body, "ip").as_deref(),
            Some("1.2.3.4")
        );
        assert_eq!(first_field(MULTIPART, &body, "missing"), None);
        let quoted = "multipart/form-data; boundary=\"------------------------abc123\"";
        assert_eq!(first_field(quoted, &body, "other").as_deref(), Some("x"));
    }

    #[test]
    fn every_value_of_a_repeated_field_is_read_in_order() {
        assert_eq!(
            all_fields(URLENCODED, b"ip=1.1.1.1&x=y&ip=2.2.2.2&ip=", "ip"),
            ["1.1.1.1", "2.2.2.2", ""]
        );
        let body = multipart(&[("ip", "1.1.1.1"), ("comment", "c"), ("ip", "2.2.2.2")]);
        assert_eq!(all_fields(MULTIPART, &body, "ip"), ["1.1.1.1", "2.2.2.2"]);
        assert_eq!(
            all_fields(MULTIPART, &body[..body.len() - 30], "ip"),
            ["1.1.1.1"],
            "a part broken off does not count"
        );
        assert!(all_fields("text/plain", b"ip=1.1.1.1", "ip").is_empty());
    }

    #[test]
    fn the_first_of_repeated_fields_wins() {
        assert_eq!(
            first_field(URLENCODED, b"ip=1.1.1.1&ip=2.2.2.2", "ip").as_deref(),
            Some("1.1.1.1")
        );
        let body = multipart(&[("ip", "1.1.1.1"), ("ip", "2.2.2.2")]);
        assert_eq!(
            first_field(MULTIPART, &body, "ip").as_deref(),
            Some("1.1.1.1")
        );
    }

    #[test]
    fn non_utf8_bytes_become_replacement_characters() {
        assert_eq!(
            first_field(URLENCODED, b"ip=1.2.3.%FF", "ip").as_deref(),
            Some("1.2.3.\u{fffd}")
        );
        let body = [
            b"--b\r\nContent-Disposition: form-data; name=\"ip\"\r\n\r\n\xff\xfe\r\n--b--"
                .as_slice(),
        ]
        .concat();
        assert_eq!(
            first_field("multipart/form-data; boundary=b", &body, "ip").as_deref(),
            Some("\u{fffd}\u{fffd}")
        );
    }

    #[test]
    fn boundaries_over_70_characters_are_refused() {
        let body_with = |boundary: &str| {
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"ip\"\r\n\r\n8.8.8.8\r\n--{boundary}--\r\n")
        };
        let longest = "b".repeat(MAX_BOUNDARY_CHARS);
        let content_type = format!("multipart/form-data; boundary={longest}");
        assert_eq!(
            first_field(&content_type, body_with(&longest).as_bytes(), "ip").as_deref(),
            Some("8.8.8.8")
        );
        let too_long = "b".repeat(MAX_BOUNDARY_CHARS + 1);
        let content_type = format!("multipart/form-data; boundary={too_long}");
        assert_eq!(
            first_field(&content_type, body_with(&too_long).as_bytes(), "ip"),
            None
        );
    }

    #[test]
    fn broken_or_foreign_bodies_carry_no_field() {
        let good = multipart(&[("ip", "1.2.3.4")]);
        let cases: [(&str, &[u8]); 8] = [
            ("application/json", br#"{"ip":"1.2.3.4"}"#),
            ("text/plain", b"ip=1.2.3.4"),
            ("", b"ip=1.2.3.4"),
            ("multipart/form-data", &good),
            ("multipart/form-data; boundary=other", &good),
            (MULTIPART, &good[..good.len() / 2]),
            (MULTIPART, b"--------------------------abc123\r\nContent-Disposition: form-data; name=\"ip\"\r\n1.2.3.4"),
            (MULTIPART, b""),
        ];
        for (content_type, body) in cases {
            assert_eq!(
                first_field(content_type, body, "ip"),
                None,
                "{content_type:?} {:?}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
