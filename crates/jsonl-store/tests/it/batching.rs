//! How the asynchronous writer gathers lines: many small lines make few writes, in order, on the
//! writer's own thread; a writer dropped without `close` still writes its queue.

use std::io;
use std::sync::{Arc, Mutex};

use calltape_jsonl_store::{JsonlWriter, Options, Sink};

use crate::wait_for;

/// What a [`Recording`] sink saw.
#[derive(Default)]
struct Seen {
    bytes: Vec<u8>,
    writes: usize,
    syncs: usize,
    threads: Vec<Option<String>>,
}

/// An in-memory sink that counts its `write_lines` and `sync` calls and notes the thread of each.
#[derive(Clone, Default)]
struct Recording(Arc<Mutex<Seen>>);

impl Sink for Recording {
    fn size(&mut self) -> io::Result<u64> {
        Ok(self.0.lock().unwrap().bytes.len() as u64)
    }
    fn write_lines(&mut self, lines: &[u8]) -> io::Result<()> {
        let mut seen = self.0.lock().unwrap();
        seen.bytes.extend_from_slice(lines);
        seen.writes += 1;
        let thread = std::thread::current().name().map(str::to_owned);
        if !seen.threads.contains(&thread) {
            seen.threads.push(thread);
        }
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        self.0.lock().unwrap().syncs += 1;
        Ok(())
    }
}

fn lines(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{{\"seq\":{i}}}")).collect()
}

fn joined(lines: &[String]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| [l.as_bytes(), b"\n"].concat())
        .collect()
}

#[tokio::test]
async fn a_stream_of_small_lines_is_written_in_few_batches_in_order() {
    const LINES: usize = 10_000;
    let sink = Recording::default();
    let writer = JsonlWriter::with_sink("batches.jsonl", sink.clone(), Options::default()).await;
    let lines = lines(LINES);
    for line in &lines {
        writer.append_line(line.clone());
        // Let the runtime run other tasks between lines, as a program serving traffic does.
        tokio::task::yield_now().await;
    }
    let report = writer.close().await;
    assert!(report.is_complete(), "{report}");
    assert_eq!(report.lines_written, LINES as u64);
    let seen = sink.0.lock().unwrap();
    assert_eq!(seen.bytes, joined(&lines), "every line, in order");
    assert!(
        seen.writes < LINES / 10,
        "{} write calls for {LINES} lines: lines are not gathered",
        seen.writes
    );
    assert_eq!(seen.threads, [Some("calltape-writer".to_owned())]);
    assert_eq!(seen.syncs, 1, "close syncs once under the default policy");
}

#[tokio::test]
async fn flush_in_the_middle_of_a_stream_writes_everything_before_it() {
    let sink = Recording::default();
    let writer = JsonlWriter::with_sink("flushes.jsonl", sink.clone(), Options::default()).await;
    let lines = lines(3000);
    for (i, line) in lines.iter().enumerate() {
        writer.append_line(line.clone());
        if i % 1000 == 999 {
            let report = writer.flush().await;
            assert_eq!(report.lines_written, i as u64 + 1);
            assert_eq!(sink.0.lock().unwrap().bytes, joined(&lines[..=i]));
            assert_eq!(writer.queued_bytes(), 0);
        }
    }
    writer.close().await;
}

#[test]
fn a_writer_dropped_without_close_still_writes_and_syncs_its_queue() {
    let sink = Recording::default();
    let lines = lines(500);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let writer =
            JsonlWriter::with_sink("dropped.jsonl", sink.clone(), Options::default()).await;
        for line in &lines {
            writer.append_line(line.clone());
        }
    });
    // The runtime is gone too: the writer's own thread finishes the queue.
    drop(rt);
    wait_for("the dropped writer to sync", || {
        sink.0.lock().unwrap().syncs == 1
    });
    assert_eq!(sink.0.lock().unwrap().bytes, joined(&lines));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_appending_at_once_each_get_every_line_whole_and_in_their_order() {
    use crate::Rec;
    const THREADS: usize = 4;
    const LINES: usize = 5000;
    let sink = Recording::default();
    let writer =
        Arc::new(JsonlWriter::with_sink("threads.jsonl", sink.clone(), Options::default()).await);
    std::thread::scope(|scope| {
        for id in 0..THREADS {
            let writer = &writer;
            scope.spawn(move || {
                for seq in 0..LINES {
                    // Lengths vary, so a line cut or spliced into another cannot go unseen.
                    writer.append(&Rec::new(id, seq, (seq * 7 + id) % 300));
                }
            });
        }
    });
    let writer = Arc::into_inner(writer).expect("the threads are done");
    let report = writer.close().await;
    assert!(report.is_complete(), "{report}");
    assert_eq!(report.lines_written, (THREADS * LINES) as u64);
    let seen = sink.0.lock().unwrap();
    let mut next = [0usize; THREADS];
    for line in seen.bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let rec: Rec = serde_json::from_slice(line).expect("every line whole");
        assert_eq!(rec.seq, next[rec.id], "thread {}'s lines in order", rec.id);
        assert_eq!(rec.pad.len(), (rec.seq * 7 + rec.id) % 300);
        next[rec.id] += 1;
    }
    assert_eq!(next, [LINES; THREADS]);
}
