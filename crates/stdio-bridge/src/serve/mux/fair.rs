//! The link's writer: what the multiplexer sends goes to the upstream one session at a time, in turn,
//! so that a session that sends thousands of requests at once (a batch) does not put every other
//! session's requests behind them all.
//!
//! Each session's frames keep their order; the multiplexer's own frames (a replayed handshake, the
//! set-up after a restart, cancellations, answers no session gives) go before any session's. The
//! writer hands the upstream a frame only when its channel has room, so what waits, waits here in
//! the queues, where the turns are decided, rather than in the channels behind it.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::SessionNo;

/// What the multiplexer hands the writer.
pub(super) enum Up {
    /// A frame for the upstream: a session's, or the multiplexer's own (`None`).
    Frame(Option<SessionNo>, Bytes),
    /// A session ended: what it sent that is not gone yet never goes.
    Forget(SessionNo),
}

/// The frames waiting for the upstream, by session.
#[derive(Default)]
struct Turns {
    own: VecDeque<Bytes>,
    sessions: BTreeMap<SessionNo, VecDeque<Bytes>>,
    /// The session whose frame went last.
    last: SessionNo,
}

impl Turns {
    fn take(&mut self, up: Up) {
        match up {
            Up::Frame(None, frame) => self.own.push_back(frame),
            Up::Frame(Some(session), frame) => {
                self.sessions.entry(session).or_default().push_back(frame);
            }
            Up::Forget(session) => {
                self.sessions.remove(&session);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.own.is_empty() && self.sessions.is_empty()
    }

    /// The next frame: the multiplexer's own first, then the next session's after the last one's.
    fn next(&mut self) -> Option<Bytes> {
        if let Some(frame) = self.own.pop_front() {
            return Some(frame);
        }
        let session = self
            .sessions
            .range(self.last + 1..)
            .next()
            .or_else(|| self.sessions.iter().next())
            .map(|(session, _)| *session)?;
        self.last = session;
        let queue = self.sessions.get_mut(&session)?;
        let frame = queue.pop_front();
        if queue.is_empty() {
            self.sessions.remove(&session);
        }
        frame
    }
}

/// Writes what `rx` brings to `outgoing` in turns, until the multiplexer drops the link; then sends
/// what still waits and returns.
pub(super) async fn write(mut rx: mpsc::UnboundedReceiver<Up>, outgoing: &mpsc::Sender<Bytes>) {
    let mut turns = Turns::default();
    loop {
        tokio::select! {
            // Everything the multiplexer sent first, so that the turns see every session waiting.
            biased;
            up = rx.recv() => match up {
                Some(up) => turns.take(up),
                None => break,
            },
            permit = outgoing.reserve(), if !turns.is_empty() => match permit {
                Ok(permit) => {
                    if let Some(frame) = turns.next() {
                        permit.send(frame);
                    }
                }
                Err(_) => return,
            },
        }
    }
    while let Some(frame) = turns.next() {
        if outgoing.send(frame).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(text: &str) -> Bytes {
        Bytes::from(text.to_owned())
    }

    fn order(turns: &mut Turns) -> Vec<String> {
        std::iter::from_fn(|| turns.next())
            .map(|f| String::from_utf8_lossy(&f).into_owned())
            .collect()
    }

    #[test]
    fn sessions_take_turns_behind_the_multiplexers_own_frames() {
        let mut turns = Turns::default();
        for n in 1..=3 {
            turns.take(Up::Frame(Some(1), frame(&format!("a{n}"))));
        }
        turns.take(Up::Frame(Some(2), frame("b1")));
        turns.take(Up::Frame(None, frame("own")));
        turns.take(Up::Frame(Some(3), frame("c1")));
        turns.take(Up::Frame(Some(2), frame("b2")));
        assert_eq!(
            order(&mut turns),
            ["own", "a1", "b1", "c1", "a2", "b2", "a3"]
        );
        assert!(turns.is_empty());
    }

    #[test]
    fn a_forgotten_session_sends_nothing_more() {
        let mut turns = Turns::default();
        turns.take(Up::Frame(Some(1), frame("a1")));
        turns.take(Up::Frame(Some(2), frame("b1")));
        turns.take(Up::Frame(Some(1), frame("a2")));
        turns.take(Up::Forget(1));
        turns.take(Up::Frame(Some(1), frame("a3")));
        assert_eq!(order(&mut turns), ["a3", "b1"]);
    }
}
