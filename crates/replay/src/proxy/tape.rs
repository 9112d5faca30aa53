//! One cassette in memory: FIFO queues per key for replay, new recordings, and saving.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use calltape_recorder::{
    Body, Cassette, Interaction, Meta, Normalizer, Request, SaveOutcome, Scrubber,
};
use serde_json::Value;

use super::options::{Exhaustion, Mode};

/// What a lookup found.
pub(crate) enum Lookup {
    /// A recording to serve.
    Hit(Box<Interaction>),
    /// Recordings exist for the key, but all have been served.
    Exhausted(usize),
    /// Nothing recorded for the key.
    Miss,
}

pub(crate) struct Tape {
    pub(crate) path: PathBuf,
    meta: Meta,
    /// Interactions loaded from the file, re-keyed with the current normaliser.
    loaded: Vec<Interaction>,
    queues: HashMap<String, VecDeque<usize>>,
    all: HashMap<String, Vec<usize>>,
    served: HashMap<String, usize>,
    used: Vec<bool>,
    recorded: Vec<Interaction>,
    next_seq: HashMap<String, u32>,
    dirty: bool,
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
        let mut loaded = Vec::new();
        if !matches!(mode, Mode::Record | Mode::Live) {
            match Cassette::load(path) {
                Ok(c) => {
                    let rekey = c.meta.normalizer != meta.normalizer;
                    loaded = c.interactions;
                    if rekey {
                        tracing::info!(
                            cassette = %path.display(),
                            "the request normaliser changed since this cassette was recorded; re-keying its requests"
                        );
                        let mut seqs: HashMap<String, u32> = HashMap::new();
                        for i in &mut loaded {
                            i.request.key = normalizer.key(&i.request);
                            let seq = seqs.entry(i.request.key.clone()).or_default();
                            i.request.seq = *seq;
                            *seq += 1;
                        }
                    }
                }
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        // FIFO per key, in recorded (sequence) order.
        let mut order: Vec<usize> = (0..loaded.len()).collect();
        order.sort_by_key(|&i| loaded[i].request.seq);
        let mut queues: HashMap<String, VecDeque<usize>> = HashMap::new();
        let mut all: HashMap<String, Vec<usize>> = HashMap::new();
        for i in order {
            let k = loaded[i].request.key.clone();
            queues.entry(k.clone()).or_default().push_back(i);
            all.entry(k).or_default().push(i);
        }
        let next_seq = all
            .iter()
            .map(|(k, v)| (k.clone(), u32::try_from(v.len()).unwrap_or(u32::MAX)))
            .collect();
        Ok(Self {
            path: path.to_path_buf(),
            meta,
            used: vec![false; loaded.len()],
            loaded,
            queues,
            all,
            served: HashMap::new(),
            recorded: Vec::new(),
            next_seq,
            dirty: false,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.loaded.len()
    }

    /// The next recording for `key`, first in first out.
    pub(crate) fn lookup(&mut self, key: &str, exhaustion: Exhaustion) -> Lookup {
        if let Some(q) = self.queues.get_mut(key) {
            while let Some(i) = q.pop_front() {
                if self.used[i] {
                    continue;
                }
                self.used[i] = true;
                *self.served.entry(key.to_owned()).or_default() += 1;
                return Lookup::Hit(Box::new(self.loaded[i].clone()));
            }
        }
        let Some(all) = self.all.get(key) else {
            return Lookup::Miss;
        };
        match exhaustion {
            Exhaustion::Error => Lookup::Exhausted(all.len()),
            Exhaustion::RepeatLast => match all.last() {
                Some(&i) => Lookup::Hit(Box::new(self.loaded[i].clone())),
                None => Lookup::Miss,
            },
            Exhaustion::Cycle => {
                let n = self.served.entry(key.to_owned()).or_default();
                let i = all[*n % all.len()];
                *n += 1;
                Lookup::Hit(Box::new(self.loaded[i].clone()))
            }
        }
    }

    /// The recordings ranked by similarity to `text` (the request's diff text), best first, with their
    /// similarity; unused ones only when `unused_only`.
    pub(crate) fn ranked(
        &self,
        request: &Request,
        normalizer: &Normalizer,
        unused_only: bool,
    ) -> Vec<(usize, f32)> {
        let text = diff_text(normalizer, request);
        let mut scored: Vec<(usize, f32, bool)> = self
            .loaded
            .iter()
            .enumerate()
            .filter(|(i, _)| !unused_only || !self.used[*i])
            .map(|(i, rec)| {
                let other = diff_text(normalizer, &rec.request);
                let ratio = similar::TextDiff::from_lines(&other, &text).ratio();
                let same_route =
                    rec.request.upstream == request.upstream && rec.request.path == request.path;
                (i, ratio, same_route)
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

    pub(crate) fn get(&self, index: usize) -> &Interaction {
        &self.loaded[index]
    }

    /// Marks a recording served by a fuzzy match, so it is not served again.
    pub(crate) fn take(&mut self, index: usize) -> Interaction {
        self.used[index] = true;
        self.loaded[index].clone()
    }

    /// The sequence number for a new recording with `key`.
    pub(crate) fn next_seq(&mut self, key: &str) -> u32 {
        let n = self.next_seq.entry(key.to_owned()).or_default();
        let seq = *n;
        *n += 1;
        seq
    }

    pub(crate) fn record(&mut self, interaction: Interaction) {
        self.recorded.push(interaction);
        self.dirty = true;
    }

    pub(crate) fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Writes the cassette (kept recordings and new ones) if anything was recorded.
    pub(crate) fn save(&mut self, scrubber: &Scrubber) -> calltape_recorder::Result<SaveOutcome> {
        if !self.dirty {
            return Ok(SaveOutcome::Unchanged);
        }
        let mut interactions = self.loaded.clone();
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
        let outcome = cassette.save(&self.path, scrubber)?;
        self.dirty = false;
        Ok(outcome)
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
