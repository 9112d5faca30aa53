//! Unit tests of the JSON scan's pieces: escapes, numbers, strings and values.

use super::*;

#[test]
fn escapes_follow_json_rules() {
    assert_eq!(escape(br"\u00e9", 0), Some((6, 'é')));
    assert_eq!(escape(br"\ud83d\ude00", 0), Some((12, '😀')));
    assert_eq!(escape(br"\ud83d", 0), None);
    assert_eq!(escape(br"\ude00", 0), None);
    assert_eq!(escape(br"\x", 0), None);
}

#[test]
fn decoded_offsets_point_into_the_raw_string() {
    let mut map = Vec::new();
    let s = decode(br#"a\nb\u00e9c"#, Some(&mut map));
    assert_eq!(s, "a\nbéc");
    assert_eq!(map, [0, 1, 3, 4, 4, 10, 11]);
}

#[test]
fn special_bytes_marks_the_first_quote_backslash_or_control() {
    let first = |w: &[u8; 8]| match special_bytes(w) {
        0 => None,
        m => Some(m.trailing_zeros() / 8),
    };
    assert_eq!(first(b"abcdefgh"), None);
    assert_eq!(first(b"abc\"efgh"), Some(3));
    assert_eq!(first(b"\\bcdefgh"), Some(0));
    assert_eq!(first(b"abcdefg\n"), Some(7));
    assert_eq!(first(b"ab\x1fde\"gh"), Some(2));
    assert_eq!(first(b"\xff\xfe !#[]~"), None);
    for c in 0..=255u8 {
        let mut w = *b"xxxxxxxx";
        w[5] = c;
        let expected = (c < 0x20 || c == b'"' || c == b'\\').then_some(5);
        assert_eq!(first(&w), expected, "byte {c:#x}");
    }
}

#[test]
fn json_texts_are_accepted_exactly_when_serde_json_accepts_them() {
    let redactor = crate::Redactor::new();
    let inner = redactor.inner();
    let texts = [
        "{}",
        "[]",
        "[ ]",
        "{ }",
        "\"s\"",
        r#"{"a":1}"#,
        r#" {"a" : [1, {"b":null}] , "c":"x"} "#,
        "[[],[{}],[[1]]]",
        "{\"a\":true}\n{\"b\":false}\n",
        "[1,2.5e-3,-0,1E+2]",
        r#"{"k\u0041":"v\n","token":{"x":[1,2]}}"#,
        "{",
        "}",
        "",
        "   ",
        "[1,]",
        r#"{"a":1,}"#,
        r#"{"a" 1}"#,
        r#"{"a":}"#,
        "{,}",
        "[,1]",
        r#"{"a":1 "b":2}"#,
        "[1 2]",
        "{1:2}",
        r#"{"a":1]"#,
        "[1}",
        r#"{"a":[}"#,
        "[tru]",
        "[01]",
        r#"{"a":1}}"#,
        r#"{"a",1}"#,
        r#"{"a":1,"b"}"#,
        r#"["a" "b"]"#,
        "[\"a\nb\"]",
    ];
    for text in texts {
        let serde = {
            let mut values =
                serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
            let mut ok = true;
            let mut any = false;
            for value in values.by_ref() {
                ok &= value.is_ok();
                any = true;
                if !ok {
                    break;
                }
            }
            ok && any
        };
        let mut spans = Vec::new();
        assert_eq!(scan_json(inner, text, 0, &mut spans), serde, "{text:?}");
    }
}

/// Whether serde_json reads `text` as a stream of one or more JSON values.
fn serde_reads(text: &str) -> bool {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    let mut any = false;
    for value in values.by_ref() {
        if value.is_err() {
            return false;
        }
        any = true;
    }
    any
}

#[test]
fn random_texts_are_accepted_exactly_when_serde_json_accepts_them() {
    let redactor = crate::Redactor::new();
    let inner = redactor.inner();
    let pieces: [&str; 22] = [
        "{", "}", "[", "]", ",", ":", "\"", "\"a\"", "\"k\":", "1", "0", "-", ".", "e", " ",
        "true", "nul", "null", "\\", "\\n", "x", "\n",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 33) as usize
    };
    let mut accepted = 0;
    for _ in 0..50_000 {
        let len = next() % 9;
        let text: String = (0..len).map(|_| pieces[next() % pieces.len()]).collect();
        let mut spans = Vec::new();
        let ours = scan_json(inner, &text, 0, &mut spans);
        assert_eq!(ours, serde_reads(&text), "{text:?}");
        accepted += usize::from(ours);
    }
    assert!(accepted > 500, "too few valid texts were tried: {accepted}");
}

#[test]
fn numbers_follow_json_grammar() {
    assert_eq!(number(b"-0.5e+3,", 0), Some(7));
    assert_eq!(number(b"01", 0), Some(1));
    assert_eq!(number(b"1.", 0), None);
    assert_eq!(number(b"-", 0), None);
}
