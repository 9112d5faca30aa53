//! The last stage of a [`RedactingWriter`](crate::RedactingWriter), after the text rules: known
//! values hidden ([`KnownSecrets`]), then each line through the final [`Gate`].

use std::io::{self, Write};

use crate::gate::RefusedLines;
use crate::known::Hider;
use crate::{Gate, KnownSecrets};

/// Bytes of a line without its line break held for the gate, past which what is held is checked
/// and written as it is (a line longer than that is checked in pieces).
const HOLD: usize = 64 * 1024;

/// What the redacted text passes before it is written; by default, nothing.
#[derive(Default)]
pub(crate) struct Stage {
    hider: Option<Hider>,
    gate: Option<LineGate>,
    /// What the hider let through, on its way to the gate.
    scratch: Vec<u8>,
}

struct LineGate {
    gate: Gate,
    refused: RefusedLines,
    held: Vec<u8>,
}

impl Stage {
    pub(crate) fn hide(&mut self, known: KnownSecrets) {
        self.hider = Some(Hider::new(known));
    }

    pub(crate) fn gate(&mut self, gate: Gate, refused: RefusedLines) {
        self.gate = Some(LineGate {
            gate,
            refused,
            held: Vec::new(),
        });
    }

    /// Takes redacted `data` and writes to `out` what is settled.
    pub(crate) fn write(&mut self, data: &[u8], out: &mut impl Write) -> io::Result<()> {
        let data = match &mut self.hider {
            None => data,
            Some(hider) => {
                self.scratch.clear();
                hider.write(data, &mut self.scratch)?;
                &self.scratch
            }
        };
        match &mut self.gate {
            None => out.write_all(data),
            Some(gate) => gate.write(data, out),
        }
    }

    /// Writes everything held.
    pub(crate) fn flush(&mut self, out: &mut impl Write) -> io::Result<()> {
        let data = match &mut self.hider {
            None => &[][..],
            Some(hider) => {
                self.scratch.clear();
                hider.flush(&mut self.scratch)?;
                &self.scratch
            }
        };
        match &mut self.gate {
            None => out.write_all(data),
            Some(gate) => {
                gate.write(data, out)?;
                let rest = std::mem::take(&mut gate.held);
                gate.pass(&rest, out)
            }
        }
    }
}

impl LineGate {
    fn write(&mut self, data: &[u8], out: &mut impl Write) -> io::Result<()> {
        self.held.extend_from_slice(data);
        let Some(last) = memchr::memrchr(b'\n', &self.held) else {
            if self.held.len() > HOLD {
                let held = std::mem::take(&mut self.held);
                return self.pass(&held, out);
            }
            return Ok(());
        };
        let held = std::mem::take(&mut self.held);
        let (lines, rest) = held.split_at(last + 1);
        for line in lines.split_inclusive(|b| *b == b'\n') {
            self.pass(line, out)?;
        }
        self.held = rest.to_vec();
        Ok(())
    }

    /// Writes `line` when the gate lets it through, else a notice in its place.
    fn pass(&self, line: &[u8], out: &mut impl Write) -> io::Result<()> {
        if line.is_empty() {
            return Ok(());
        }
        match self.gate.check(line) {
            None => out.write_all(line),
            Some(hit) => {
                self.refused.add();
                writeln!(out, "[a line that held {hit} was not written]")
            }
        }
    }
}
