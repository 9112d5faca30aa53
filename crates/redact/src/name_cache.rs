//! The decisions already taken for the field names of one text.
//!
//! Recordings and logs repeat the same few names on every line, and deciding a
//! name (splitting it into words, looking each up) costs far more than
//! recognising it again. An entry holds facts about the name, each learnt when
//! first asked for: whether it is a credential name, and, for an object key,
//! whether the text rules change it. The cache is small, two-way set associative and
//! lives on the stack for one scan. An entry keeps a name's length and its
//! first and last eight bytes, which is the whole name up to 16 bytes; a
//! longer name is also compared byte for byte against the text, where the
//! entry points. Recognising a name is linear in its length.

use crate::step;

/// Sets of two entries.
const SETS: usize = 32;

/// The fact that a name is a credential name.
pub(crate) const NAME: u8 = 1;
/// The fact that the text rules change a key.
pub(crate) const SECRET: u8 = 2;

#[derive(Clone, Copy)]
struct Entry {
    head: u64,
    tail: u64,
    /// Where a name longer than 16 bytes starts in the text.
    start: u32,
    /// The name's length, or `u32::MAX` for an empty entry.
    len: u32,
    /// The facts learnt ([`NAME`], [`SECRET`]), and which hold.
    known: u8,
    facts: u8,
}

const EMPTY: Entry = Entry {
    head: 0,
    tail: 0,
    start: 0,
    len: u32::MAX,
    known: 0,
    facts: 0,
};

/// The name decisions of one scan of one text.
pub(crate) struct NameCache {
    entries: [[Entry; 2]; SETS],
    /// Which way of each set was filled last.
    last: u32,
}

impl NameCache {
    /// A cache for a new scan: nothing decided yet.
    pub(crate) fn new() -> NameCache {
        NameCache {
            entries: [[EMPTY; 2]; SETS],
            last: 0,
        }
    }

    /// The decision for the name `text[start..end]`: the cached one when the
    /// same bytes were decided before in this scan, else `decide()`'s.
    #[inline(always)]
    pub(crate) fn decide(
        &mut self,
        text: &[u8],
        start: usize,
        end: usize,
        decide: impl FnOnce() -> bool,
    ) -> bool {
        let facts = self.facts(text, start, end, NAME, |_| if decide() { NAME } else { 0 });
        facts & NAME != 0
    }

    /// The facts in `want` about the name `text[start..end]`: those learnt
    /// before in this scan, and the rest from `learn`, given the ones
    /// missing (it returns those of them that hold).
    #[inline(always)]
    pub(crate) fn facts(
        &mut self,
        text: &[u8],
        start: usize,
        end: usize,
        want: u8,
        learn: impl FnOnce(u8) -> u8,
    ) -> u8 {
        let name = &text[start..end];
        let len = name.len();
        step!(len + 1);
        let Ok(start32) = u32::try_from(start) else {
            return learn(want);
        };
        let (head, tail) = match text.get(start..start + 8) {
            // A short name read as one word from the text around it, masked to its length.
            Some(word) if len < 8 => (le_u64(word) & ((1u64 << (8 * len)) - 1), 0),
            _ => head_tail(name),
        };
        self.lookup(name, head, tail, Some((text, start32)), want, learn)
    }

    /// [`facts`](NameCache::facts) for a name that is not part of one text
    /// (an object key in a value walk): only a name of up to 16 bytes, which
    /// its entry holds whole, is cached.
    #[inline]
    pub(crate) fn facts_of(&mut self, name: &[u8], want: u8, learn: impl FnOnce(u8) -> u8) -> u8 {
        step!(name.len() + 1);
        if name.len() > 16 {
            return learn(want);
        }
        let (head, tail) = head_tail(name);
        self.lookup(name, head, tail, None, want, learn)
    }

    /// The entry of `name` (whose first and last eight bytes are `head` and
    /// `tail`; a longer name is compared with `text` where its entry
    /// starts): its facts in `want`, learnt now when missing.
    #[inline(always)]
    fn lookup(
        &mut self,
        name: &[u8],
        head: u64,
        tail: u64,
        text: Option<(&[u8], u32)>,
        want: u8,
        learn: impl FnOnce(u8) -> u8,
    ) -> u8 {
        let len = name.len();
        let Ok(len32) = u32::try_from(len) else {
            return learn(want);
        };
        if len32 == u32::MAX {
            return learn(want);
        }
        let set = (((head ^ len as u64).wrapping_mul(K) ^ tail).wrapping_mul(K)
            >> (64 - SETS.trailing_zeros())) as usize;
        for entry in &mut self.entries[set] {
            if entry.len == len32
                && entry.head == head
                && entry.tail == tail
                && (len <= 16 || {
                    step!(len);
                    let from = entry.start as usize;
                    text.and_then(|(text, _)| text.get(from..from + len)) == Some(name)
                })
            {
                let missing = want & !entry.known;
                if missing != 0 {
                    entry.facts |= learn(missing) & missing;
                    entry.known |= missing;
                }
                return entry.facts & want;
            }
        }
        let facts = learn(want) & want;
        // Fill an empty way, else the one not filled last.
        let way = if self.entries[set][0].len == u32::MAX {
            0
        } else if self.entries[set][1].len == u32::MAX {
            1
        } else {
            usize::from(self.last & (1 << set) == 0)
        };
        self.last = (self.last & !(1 << set)) | ((way as u32) << set);
        self.entries[set][way] = Entry {
            head,
            tail,
            start: text.map_or(0, |(_, start)| start),
            len: len32,
            known: want,
            facts,
        };
        facts
    }
}

const K: u64 = 0x517c_c1b7_2722_0a95;

/// A name's first and last eight bytes (the first up to seven bytes, and 0,
/// for a shorter name).
#[inline]
fn head_tail(bytes: &[u8]) -> (u64, u64) {
    let len = bytes.len();
    if len >= 8 {
        (le_u64(&bytes[..8]), le_u64(&bytes[len - 8..]))
    } else {
        // Byte by byte: a copy of a variable length would call `memcpy`.
        let mut word = 0u64;
        for (k, &c) in bytes.iter().enumerate() {
            word |= u64::from(c) << (8 * k);
        }
        (word, 0)
    }
}

#[inline]
fn le_u64(bytes: &[u8]) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_decided_once_per_text() {
        let text = b"apiKey name apiKey apiKeys";
        let mut cache = NameCache::new();
        let mut calls = 0;
        let mut decide = |start, end| {
            cache.decide(text, start, end, || {
                calls += 1;
                &text[start..end] == b"apiKey"
            })
        };
        assert!(decide(0, 6));
        assert!(!decide(7, 11));
        assert!(decide(12, 18));
        assert!(!decide(19, 26));
        assert_eq!(calls, 3);
    }

    #[test]
    fn facts_are_learnt_when_first_asked_for() {
        let text = b"apiKey apiKey apiKey";
        let mut cache = NameCache::new();
        let mut asked = Vec::new();
        let mut facts = |start, want| {
            cache.facts(text, start, start + 6, want, |missing| {
                asked.push(missing);
                NAME
            })
        };
        assert_eq!(facts(0, NAME), NAME);
        assert_eq!(facts(7, NAME | SECRET), NAME);
        assert_eq!(facts(14, NAME | SECRET), NAME);
        assert_eq!(facts(14, SECRET), 0);
        assert_eq!(asked, [NAME, SECRET]);
    }

    #[test]
    fn long_names_are_compared_whole() {
        // Same length, same first and last eight bytes, another middle.
        let text = b"aaaaaaaaXbbbbbbbb aaaaaaaaYbbbbbbbb";
        let mut cache = NameCache::new();
        assert!(cache.decide(text, 0, 17, || true));
        assert!(!cache.decide(text, 18, 35, || false));
        assert!(cache.decide(text, 0, 17, || false));
    }

    #[test]
    fn colliding_names_are_told_apart() {
        // More names than slots: some share a slot, and each keeps its own
        // decision.
        let text: String = (0..500).map(|i| format!("n{i} ")).collect();
        let b = text.as_bytes();
        let mut cache = NameCache::new();
        let mut at = 0;
        for round in 0..2 {
            at = 0;
            for i in 0..500 {
                let len = format!("n{i}").len();
                let decided = cache.decide(b, at, at + len, || i % 3 == 0);
                assert_eq!(decided, i % 3 == 0, "name n{i}, round {round}");
                at += len + 1;
            }
        }
        assert_eq!(at, b.len());
    }
}
