//! Strict JSON from tolerant writers.
//!
//! Campaign code written in Python emits `NaN`, `Infinity` and `-Infinity` for a
//! correlation over an empty pool and the like. Those are not JSON, and a view must
//! convert to strict JSON for the browser, so they read as `null`. The
//! fast path is plain `serde_json`; only bytes that fail it are rewritten.

use serde::de::DeserializeOwned;

/// For `#[serde(skip_serializing_if)]`: a count left out of a record while
/// it is 0 (older readers never saw it; serde's default reads it back).
pub fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Parses `bytes` as `T`, reading `NaN`/`Infinity`/`-Infinity` outside strings as
/// `null`. The error is `serde_json`'s, for the original text where it is the same.
pub fn from_slice_lenient<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    match serde_json::from_slice(bytes) {
        Ok(v) => Ok(v),
        Err(first) => match replace_non_finite(bytes) {
            Some(fixed) => serde_json::from_slice(&fixed),
            None => Err(first),
        },
    }
}

/// Rewrites non-finite number tokens outside strings to `null`; `None` when there
/// were none (so the caller keeps the original error).
pub fn replace_non_finite(bytes: &[u8]) -> Option<Vec<u8>> {
    const TOKENS: [&[u8]; 4] = [b"-Infinity", b"Infinity", b"+Infinity", b"NaN"];
    let mut out: Option<Vec<u8>> = None;
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    let mut copied_to = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        if matches!(b, b'N' | b'I' | b'-' | b'+') {
            if let Some(tok) = TOKENS.iter().find(|t| bytes[i..].starts_with(t)) {
                let buf = out.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
                buf.extend_from_slice(&bytes[copied_to..i]);
                buf.extend_from_slice(b"null");
                i += tok.len();
                copied_to = i;
                continue;
            }
        }
        i += 1;
    }
    let mut buf = out?;
    buf.extend_from_slice(&bytes[copied_to..]);
    Some(buf)
}

/// A short, single-line description of a parse error for a page: `line 3 column 5:
/// expected `,` or `}``.
/// The strings of a JSON array, in order; other items, and a value that is not an
/// array, give none. Lists of names (parents, picks) read this way everywhere.
pub fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

pub fn describe_error(err: &serde_json::Error) -> String {
    let what = err.to_string();
    // serde_json appends " at line L column C"; put the place first for scanning eyes.
    match what.rfind(" at line ") {
        Some(at) if err.line() > 0 => format!("line {} column {}: {}", err.line(), err.column(), &what[..at]),
        _ => what,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn non_finite_numbers_read_as_null() {
        let cases: [(&str, Value); 5] = [
            (r#"{"corr": NaN}"#, json!({"corr": null})),
            (r#"[Infinity, -Infinity, 1.5]"#, json!([null, null, 1.5])),
            (r#"{"s": "NaN stays text", "v": NaN}"#, json!({"s": "NaN stays text", "v": null})),
            (r#"{"q": "say \"NaN\"", "v": -Infinity}"#, json!({"q": "say \"NaN\"", "v": null})),
            (r#"{"v": 2}"#, json!({"v": 2})),
        ];
        for (text, want) in cases {
            let got: Value = from_slice_lenient(text.as_bytes()).unwrap();
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn broken_json_keeps_its_own_error() {
        let err = from_slice_lenient::<Value>(b"{\"a\": 1,\n  \"b\" 2}").unwrap_err();
        let text = describe_error(&err);
        assert!(text.starts_with("line 2 column"), "{text}");
        assert!(text.contains("expected `:`"), "{text}");
    }

    #[test]
    fn nothing_to_replace_is_none() {
        assert_eq!(replace_non_finite(br#"{"a": "NaN"}"#), None);
    }
}

/// A request body as JSON: `T` from the bytes, or every reason not, naming
/// each field (`body: cells[0].factors: invalid type: …`). The body must be
/// one JSON object (never an array read by position); a key `T` does not know
/// is refused, beside every other problem. An empty body is `T`'s default (a
/// control that takes no arguments may be posted without one).
pub fn from_body<T: serde::de::DeserializeOwned + Default>(bytes: &[u8]) -> Result<T, Vec<String>> {
    from_body_with(bytes, Vec::new())
}

/// [`from_body`] with more fields, given beside the body (a REST path's
/// parameters, as strings): each joins the body's object, and a body that
/// gives one of them too is refused. An empty body with such fields is an
/// object of those fields alone.
pub fn from_body_with<T: serde::de::DeserializeOwned + Default>(
    bytes: &[u8],
    fields: Vec<(String, String)>,
) -> Result<T, Vec<String>> {
    let blank = bytes.iter().all(u8::is_ascii_whitespace);
    if blank && fields.is_empty() {
        return Ok(T::default());
    }
    let mut value = if blank {
        serde_json::Value::Object(serde_json::Map::new())
    } else {
        from_slice_lenient(bytes).map_err(|e| vec![format!("body: not JSON ({})", describe_error(&e))])?
    };
    if let serde_json::Value::Object(object) = &mut value {
        for (key, v) in fields {
            if object.insert(key.clone(), serde_json::Value::String(v)).is_some() {
                return Err(vec![format!("body: {key} is given by the path; leave it out")]);
            }
        }
    }
    from_object(&value, "body")
}

/// `T` from a JSON value that must be an object with known keys only, or
/// every reason not (see [`object_lenient`]).
pub fn from_object<T: DeserializeOwned>(value: &serde_json::Value, what: &str) -> Result<T, Vec<String>> {
    match object_lenient(value, what) {
        (Some(t), reasons) if reasons.is_empty() => Ok(t),
        (_, reasons) => Err(reasons),
    }
}

/// Reads `T` from an object, collecting every problem rather than the first:
/// a value that is not an object; each key `T` does not know (at any depth);
/// each field of the wrong shape — that field is set aside and the rest read
/// again, so one bad key never hides another. Returns `T` as read without the
/// bad fields (when `T` can do without them) and the reasons, each prefixed
/// with `what` and the field's path.
pub fn object_lenient<T: DeserializeOwned>(value: &serde_json::Value, what: &str) -> (Option<T>, Vec<String>) {
    let kind = match value {
        serde_json::Value::Object(_) => None,
        serde_json::Value::Array(_) => Some("an array"),
        serde_json::Value::String(_) => Some("a string"),
        serde_json::Value::Number(_) => Some("a number"),
        serde_json::Value::Bool(_) => Some("a boolean"),
        serde_json::Value::Null => Some("null"),
    };
    if let Some(kind) = kind {
        return (None, vec![format!("{what}: must be one JSON object with named fields, not {kind}")]);
    }
    let at = |path: &str| if path == "." || path.is_empty() { String::new() } else { format!("{path}: ") };
    let mut obj = value.clone();
    let mut reasons = Vec::new();
    for _ in 0..64 {
        let mut unknown = Vec::new();
        let mut note = |p: serde_ignored::Path<'_>| unknown.push(p.to_string());
        let de = serde_ignored::Deserializer::new(&obj, &mut note);
        let result: Result<T, _> = serde_path_to_error::deserialize(de);
        let mut unknown_reasons: Vec<String> = unknown.iter().map(|p| format!("{what}: {p}: unknown field")).collect();
        unknown_reasons.retain(|r| !reasons.contains(r));
        reasons.extend(unknown_reasons);
        match result {
            Ok(t) => return (Some(t), reasons),
            Err(e) => {
                let path = e.path().to_string();
                reasons.push(format!("{what}: {}{}", at(&path), e.into_inner()));
                // Set the field aside (its top-level key) and read the rest.
                let top = path.split(['.', '[']).next().unwrap_or("").to_owned();
                let removed = obj.as_object_mut().and_then(|m| m.remove(&top)).is_some();
                if top.is_empty() || !removed {
                    return (None, reasons);
                }
            }
        }
    }
    (None, reasons)
}

#[cfg(test)]
mod body_tests {
    use super::*;

    #[derive(Debug, Default, serde::Deserialize, PartialEq)]
    struct B {
        #[serde(default)]
        path: String,
        #[serde(default)]
        skip: bool,
    }

    #[test]
    fn fields_beside_the_body_join_it_and_may_not_be_given_twice() {
        let path = || vec![("path".to_owned(), "specs/a.json".to_owned())];
        assert_eq!(from_body_with::<B>(b"", path()).unwrap(), B { path: "specs/a.json".into(), skip: false });
        assert_eq!(
            from_body_with::<B>(br#"{"skip": true}"#, path()).unwrap(),
            B { path: "specs/a.json".into(), skip: true }
        );
        assert_eq!(
            from_body_with::<B>(br#"{"path": "x"}"#, path()).unwrap_err(),
            vec!["body: path is given by the path; leave it out".to_owned()]
        );
        assert!(from_body_with::<B>(b"[1]", path()).unwrap_err()[0].contains("must be one JSON object"));
    }

    #[test]
    fn a_body_is_read_or_refused_naming_the_field() {
        assert_eq!(from_body::<B>(b" ").unwrap(), B::default());
        assert_eq!(from_body::<B>(br#"{"path": "specs/a.json"}"#).unwrap().path, "specs/a.json");
        let e = from_body::<B>(br#"{"skip": "yes"}"#).unwrap_err();
        assert!(e[0].starts_with("body: skip: invalid type"), "{e:?}");
        let e = from_body::<B>(b"{} trailing").unwrap_err();
        assert!(e[0].starts_with("body: not JSON") && e[0].contains("trailing"), "{e:?}");
        assert!(from_body::<B>(br#""text""#).unwrap_err()[0].contains("not a string"));
    }

    #[test]
    fn only_one_object_with_known_fields_is_a_body_and_every_problem_is_named() {
        // An array is never read by position.
        let e = from_body::<B>(br#"["specs/a.json", true]"#).unwrap_err();
        assert_eq!(e, ["body: must be one JSON object with named fields, not an array"]);
        // An unknown key is named beside the wrong-typed field, not instead of it.
        let e = from_body::<B>(br#"{"paht": "x", "skip": "yes", "path": 3}"#).unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e.iter().any(|r| r == "body: paht: unknown field"), "{e:?}");
        assert!(e.iter().any(|r| r.starts_with("body: skip: invalid type")), "{e:?}");
        assert!(e.iter().any(|r| r.starts_with("body: path: invalid type")), "{e:?}");
        // What can be read without the bad fields is returned with the reasons.
        let (b, r) = object_lenient::<B>(&serde_json::json!({"path": "p", "skip": 1}), "settings");
        assert_eq!((b.unwrap().path.as_str(), r.len()), ("p", 1));
    }
}
