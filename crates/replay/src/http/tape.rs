//! One cassette in memory: FIFO queues per key for replay, new recordings, and saving.
//!
//! A cassette is indexed when it is opened (keys and positions only); an interaction is built, and its
//! answer serialised into the bytes replay sends, the first time it is needed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use calltape_recorder::http::{Body, Cassette, Interaction, Meta, Normalizer, Request, Scrubber};
use calltape_recorder::http::{CassetteIndex, Journal};
use serde_json::Value;

use super::options::Exhaustion;
use super::reply::Reply;
use crate::Mode;

/// A recording ready to serve: the interaction and its answer as bytes.
pub(crate) struct Recording {
    pub(crate) interaction: Interaction,
    pub(crate) reply: Reply,
}

impl Recording {
    pub(crate) fn new(interaction: Interaction) -> Self {
        let reply = Reply::new(&interaction.response);
        Self { interaction, reply }
    }
}

/// What a lookup found.
pub(crate) enum Lookup {
    /// A recording to serve.
    Hit(Arc<Recording>),
    /// Recordings exist for the key, but all have been served.
    Exhausted(usize),
    /// Nothing recorded for the key.
    Miss,
}

/// A loaded recording: its sequence number under the current normaliser, and the recording once
/// built (its key is the index's, or the built request's after re-keying).
struct Slot {
    seq: u32,
    built: Option<Arc<Recording>>,
}

/// Everything about one key.
#[derive(Default)]
struct KeyState {
    /// The loaded recordings with this key, in sequence order.
    all: Vec<usize>,
    /// How far the first-in-first-out replay has gone through `all`.
    cursor: usize,
    /// How many times the key was served (for cycling).
    served: usize,
    /// The sequence number of the next new recording.
    next_seq: u32,
}

pub(crate) struct Tape {
    pub(crate) path: PathBuf,
    meta: Meta,
    index: Option<CassetteIndex>,
    /// Interactions loaded from the file, re-keyed with the current normaliser.
    slots: Vec<Slot>,
    keys: HashMap<String, KeyState>,
    used: Vec<bool>,
    recorded: Vec<Interaction>,
    dirty: bool,
    /// Record mode: where the interactions of this run go as they complete.
    journal: Option<Journal>,
    /// Record mode: the cassette as it was before this run, whose recordings this run keeps as
    /// they were when it records them again.
    previous: Option<Previous>,
    /// No file was there to load (a zero-byte one is an empty cassette, not a missing one).
    missing: bool,
}

/// The cassette a record run replaces, and which of its recordings the run has recorded again.
struct Previous {
    index: CassetteIndex,
    kept: Vec<bool>,
}

impl Previous {
    /// The previous cassette at `path`, when it was recorded with the same normaliser and redaction
    /// (otherwise its keys and meta line change anyway). A missing or unreadable one is none.
    fn load(path: &Path, meta: &Meta) -> Option<Self> {
        let index = CassetteIndex::load(path)
            .inspect_err(|e| {
                if !e.is_not_found() {
                    tracing::debug!("re-recording over a cassette that does not load: {e}");
                }
            })
            .ok()
            .filter(|ix| ix.meta() == meta)?;
        let kept = vec![false; index.len()];
        Some(Self { index, kept })
    }

    /// The stored recording that `new` repeats apart from noise, as stored (delays and request ids
    /// included), with `new`'s sequence number; or `new` itself when nothing stored is the same.
    fn keep(&mut self, new: Interaction) -> Interaction {
        for i in 0..self.index.len() {
            if self.kept[i] || self.index.key(i) != new.request.key {
                continue;
            }
            match self.index.interaction(i) {
                Ok(mut old) if old.same_apart_from_noise(&new) => {
                    self.kept[i] = true;
                    old.request.seq = new.request.seq;
                    return old;
                }
                _ => {}
            }
        }
        new
    }
}

impl Tape {
    /// Opens the cassette at `path` for `mode`: record and live modes start empty; the others load the
    /// file when it exists.
    pub(crate) fn open(
        path: &Path,
        mode: Mode,
        normalizer: &Normalizer,
        scrubber: &Scrubber,
    ) -> calltape_recorder::Result<Self> {
        let meta = Meta {
            normalizer: normalizer.fingerprint().to_owned(),
            redaction: scrubber.fingerprint(),
        };
        let mut index = None;
        let mut missing = false;
        let previous = match mode {
            Mode::Record => Previous::load(path, &meta),
            _ => None,
        };
        if !matches!(mode, Mode::Record | Mode::Live) {
            match CassetteIndex::load(path) {
                Ok(i) => index = Some(i),
                Err(e) if e.is_not_found() => missing = true,
                // A zero-byte file (made by `touch`, or by a tool that creates files up front) is an
                // empty cassette: every request is a miss, not a broken cassette.
                Err(_) if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) => {}
                Err(e) => return Err(e),
            }
        }
        let mut slots: Vec<Slot> = match &index {
            Some(ix) => (0..ix.len())
                .map(|i| Slot {
                    seq: ix.seq(i),
                    built: None,
                })
                .collect(),
            None => Vec::new(),
        };
        let rekey = index
            .as_ref()
            .is_some_and(|ix| ix.meta().normalizer != meta.normalizer);
        if let Some(ix) = index.as_ref().filter(|_| rekey) {
            tracing::info!(
                cassette = %path.display(),
                "the request normaliser changed since this cassette was recorded; re-keying its requests"
            );
            let mut seqs: HashMap<String, u32> = HashMap::new();
            for (i, slot) in slots.iter_mut().enumerate() {
                let mut interaction = ix.interaction(i)?;
                let key = normalizer.key(&interaction.request);
                let seq = seqs.entry(key.clone()).or_default();
                slot.seq = *seq;
                *seq += 1;
                interaction.request.key = key;
                interaction.request.seq = slot.seq;
                slot.built = Some(Arc::new(Recording::new(interaction)));
            }
        }
        // First in first out per key, in recorded (sequence) order.
        let mut order: Vec<usize> = (0..slots.len()).collect();
        order.sort_by_key(|&i| slots[i].seq);
        let mut keys: HashMap<String, KeyState> = HashMap::with_capacity(slots.len());
        for i in order {
            let key = match (&slots[i].built, &index) {
                (Some(r), _) => r.interaction.request.key.as_str(),
                (None, Some(ix)) => ix.key(i),
                (None, None) => unreachable!("slots come from a loaded cassette"),
            };
            match keys.get_mut(key) {
                Some(k) => k.all.push(i),
                None => {
                    keys.insert(
                        key.to_owned(),
                        KeyState {
                            all: vec![i],
                            ..KeyState::default()
                        },
                    );
                }
            }
        }
        for k in keys.values_mut() {
            k.next_seq = u32::try_from(k.all.len()).unwrap_or(u32::MAX);
        }
        Ok(Self {
            path: path.to_path_buf(),
            meta,
            used: vec![false; slots.len()],
            index,
            slots,
            keys,
            recorded: Vec::new(),
            dirty: false,
            journal: None,
            previous,
            missing,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the mode loads the file and none was there: every lookup misses, and a miss should
    /// say that the cassette itself is missing.
    pub(crate) fn missing(&self) -> bool {
        self.missing
    }

    /// The recording in slot `i`, built on first use.
    fn build(&mut self, i: usize) -> calltape_recorder::Result<Arc<Recording>> {
        if let Some(r) = &self.slots[i].built {
            return Ok(Arc::clone(r));
        }
        let Some(index) = &self.index else {
            unreachable!("slots come from a loaded cassette")
        };
        let mut interaction = index.interaction(i)?;
        interaction.request.key = index.key(i).to_owned();
        interaction.request.seq = self.slots[i].seq;
        let r = Arc::new(Recording::new(interaction));
        self.slots[i].built = Some(Arc::clone(&r));
        Ok(r)
    }

    /// Builds every loaded recording.
    fn build_all(&mut self) -> calltape_recorder::Result<()> {
        for i in 0..self.slots.len() {
            self.build(i)?;
        }
        Ok(())
    }

    /// The next recording for `key`, first in first out.
    pub(crate) fn lookup(
        &mut self,
        key: &str,
        exhaustion: Exhaustion,
    ) -> calltape_recorder::Result<Lookup> {
        let Some(k) = self.keys.get_mut(key) else {
            return Ok(Lookup::Miss);
        };
        while let Some(&i) = k.all.get(k.cursor) {
            k.cursor += 1;
            if self.used[i] {
                continue;
            }
            self.used[i] = true;
            k.served += 1;
            return self.build(i).map(Lookup::Hit);
        }
        if k.all.is_empty() {
            return Ok(Lookup::Miss);
        }
        let pick = match exhaustion {
            Exhaustion::Error => return Ok(Lookup::Exhausted(k.all.len())),
            Exhaustion::RepeatLast => k.all[k.all.len() - 1],
            Exhaustion::Cycle => {
                let i = k.all[k.served % k.all.len()];
                k.served += 1;
                i
            }
        };
        self.build(pick).map(Lookup::Hit)
    }

    /// The recordings ranked by similarity to the request, best first, with their similarity; unused
    /// ones only when `unused_only`. Recordings that cannot be built are left out (and logged).
    pub(crate) fn ranked(
        &mut self,
        request: &Request,
        normalizer: &Normalizer,
        unused_only: bool,
    ) -> Vec<(usize, f32)> {
        if let Err(e) = self.build_all() {
            tracing::error!("{e}");
        }
        let text = diff_text(normalizer, request);
        let mut scored: Vec<(usize, f32, bool)> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(i, _)| !unused_only || !self.used[*i])
            .filter_map(|(i, slot)| {
                let rec = &slot.built.as_ref()?.interaction;
                let other = diff_text(normalizer, &rec.request);
                let ratio = similar::TextDiff::from_lines(&other, &text).ratio();
                let same_route =
                    rec.request.upstream == request.upstream && rec.request.path == request.path;
                Some((i, ratio, same_route))
            })
            .collect();
        // Same upstream and path first, then by similarity; ties by file order.
        scored.sort_by(|a, b| {
            b.2.cmp(&a.2)
                .then(b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal))
                .then(a.0.cmp(&b.0))
        });
        scored.into_iter().map(|(i, r, _)| (i, r)).collect()
    }

    /// A recording returned by [`ranked`](Self::ranked).
    pub(crate) fn get(&self, index: usize) -> &Interaction {
        match &self.slots[index].built {
            Some(r) => &r.interaction,
            None => unreachable!("ranked recordings are built"),
        }
    }

    /// Marks a recording served by a fuzzy match, so it is not served again.
    pub(crate) fn take(&mut self, index: usize) -> calltape_recorder::Result<Arc<Recording>> {
        self.used[index] = true;
        self.build(index)
    }

    /// The sequence number for a new recording with `key`.
    pub(crate) fn next_seq(&mut self, key: &str) -> u32 {
        let k = self.keys.entry(key.to_owned()).or_default();
        let seq = k.next_seq;
        k.next_seq += 1;
        seq
    }

    /// Adds a recording and makes it durable. Record mode appends it to the run's journal and leaves
    /// the cassette whole until [`finish`](Self::finish); the other modes rewrite the cassette
    /// atomically with it. An interaction the final gate refuses is an error and is not kept; a
    /// kept recording it refuses when the cassette is rewritten is left out and returned.
    ///
    /// A recording refused because a line or blob of it still holds a credential is dropped from
    /// the tape as well as from the file: kept, it would refuse every later save of the run, and the
    /// recordings after it would never be written.
    pub(crate) fn record(
        &mut self,
        interaction: Interaction,
        mode: Mode,
        scrubber: &Scrubber,
    ) -> calltape_recorder::Result<Vec<calltape_recorder::Error>> {
        // The same traffic recorded again leaves the cassette as it was, whatever its timing and
        // request ids.
        let interaction = match &mut self.previous {
            Some(previous) => previous.keep(interaction),
            None => interaction,
        };
        // Refused by the final gate before it is kept, lines and blobs: a later save must not
        // meet it again.
        scrubber.admit(&self.path, &interaction)?;
        let was_dirty = self.dirty;
        self.recorded.push(interaction);
        self.dirty = true;
        let stored = self.store_last(mode, scrubber);
        if stored
            .as_ref()
            .is_err_and(calltape_recorder::Error::is_refusal)
        {
            // Nothing of it was written: the file is as the tape was without it.
            self.recorded.pop();
            self.dirty = was_dirty;
        }
        stored
    }

    /// Makes the last recording durable: the whole cassette rewritten, or in record mode the
    /// recording appended to the run's journal.
    fn store_last(
        &mut self,
        mode: Mode,
        scrubber: &Scrubber,
    ) -> calltape_recorder::Result<Vec<calltape_recorder::Error>> {
        if mode != Mode::Record {
            return self.save(scrubber);
        }
        if self.journal.is_none() {
            let journal = Journal::create(&self.path, &self.meta)?;
            tracing::debug!(journal = %journal.path().display(), "recording into a journal");
            self.journal = Some(journal);
        }
        match (&mut self.journal, self.recorded.last()) {
            (Some(j), Some(i)) => j.append(i, scrubber).map(|()| Vec::new()),
            _ => Ok(Vec::new()),
        }
    }

    /// Ends the run: writes the cassette if anything was recorded, then deletes the journal (which is
    /// only needed by a run that does not get here). The interactions the final gate refused are
    /// left out and returned.
    pub(crate) fn finish(
        &mut self,
        scrubber: &Scrubber,
    ) -> calltape_recorder::Result<Vec<calltape_recorder::Error>> {
        let saved = self.save(scrubber);
        let removed = self.journal.take().map_or(Ok(()), Journal::remove);
        let outcome = saved?;
        removed?;
        Ok(outcome)
    }

    /// Whether [`finish`](Self::finish) has anything to do.
    pub(crate) fn is_dirty(&self) -> bool {
        self.dirty || self.journal.is_some()
    }

    /// Writes the cassette (kept recordings and new ones) if anything was recorded. A kept
    /// recording the final gate refuses (one an older calltape stored) is left out, and returned.
    pub(crate) fn save(
        &mut self,
        scrubber: &Scrubber,
    ) -> calltape_recorder::Result<Vec<calltape_recorder::Error>> {
        if !self.dirty {
            return Ok(Vec::new());
        }
        self.build_all()?;
        let mut interactions: Vec<Interaction> = self
            .slots
            .iter()
            .filter_map(|s| s.built.as_ref().map(|r| r.interaction.clone()))
            .collect();
        interactions.extend(self.recorded.iter().cloned());
        // Renumber per key so failed or abandoned requests leave no gaps.
        interactions
            .sort_by(|a, b| (&a.request.key, a.request.seq).cmp(&(&b.request.key, b.request.seq)));
        let mut last: Option<String> = None;
        let mut seq = 0;
        for i in &mut interactions {
            if last.as_deref() != Some(i.request.key.as_str()) {
                last = Some(i.request.key.clone());
                seq = 0;
            }
            i.request.seq = seq;
            seq += 1;
        }
        let cassette = Cassette {
            meta: self.meta.clone(),
            interactions,
        };
        let saved = cassette.save(&self.path, scrubber)?;
        self.dirty = false;
        Ok(saved.refused)
    }
}

/// The request as readable lines for similarity and diffs: the key text with a JSON body pretty-printed.
pub(crate) fn diff_text(normalizer: &Normalizer, request: &Request) -> String {
    let text = normalizer.key_text(request);
    if !matches!(request.body, Body::Json(_)) {
        return text;
    }
    let mut out = String::with_capacity(text.len() * 2);
    for line in text.lines() {
        match line.strip_prefix("json ") {
            Some(json) => {
                match serde_json::from_str::<Value>(json)
                    .ok()
                    .and_then(|v| serde_json::to_string_pretty(&sorted(v)).ok())
                {
                    Some(pretty) => out.push_str(&pretty),
                    None => out.push_str(line),
                }
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

fn sorted(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Locks a tape; a lock poisoned by a panicked holder is taken all the same.
pub(crate) fn lock(tape: &Mutex<Tape>) -> std::sync::MutexGuard<'_, Tape> {
    tape.lock().unwrap_or_else(|e| e.into_inner())
}
