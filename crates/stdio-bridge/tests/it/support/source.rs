//! Reading Rust source in the tests that check it (the vocabulary guard, the layer rule).

/// When `s[i..]` starts whitespace or a comment (`//` to the end of the line, or a nested `/* … */`),
/// the index just past it, with `line` advanced by the newlines it held; `None` when code starts at `i`.
pub(crate) fn skip_trivia(s: &[u8], mut i: usize, line: &mut usize) -> Option<usize> {
    if s[i].is_ascii_whitespace() {
        *line += usize::from(s[i] == b'\n');
        return Some(i + 1);
    }
    if s[i..].starts_with(b"//") {
        while i < s.len() && s[i] != b'\n' {
            i += 1;
        }
        return Some(i);
    }
    if !s[i..].starts_with(b"/*") {
        return None;
    }
    let mut depth = 0;
    while i < s.len() {
        if s[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if s[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            *line += usize::from(s[i] == b'\n');
            i += 1;
        }
    }
    Some(i)
}
