//! Redaction throughput: `calltape-redact` against a one-pass `regex` baseline
//! of the same text rules (`support/mod.rs`, which a test checks gives the same
//! output on these inputs), `redact_value` against a plain serde_json round
//! trip, and the final gate's check of stored lines against the redaction each
//! writer runs before it.

use std::hint::black_box;

use calltape_redact::{Gate, KnownSecrets, Redactor};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

mod support;

use support::{
    ADVERSARIAL, RegexRedactor, adversarial, credential_dense, log_prose, recording_body,
    recording_jsonl,
};

const MB: usize = 1 << 20;

fn text(c: &mut Criterion) {
    let redactor = Redactor::new();
    let baseline = RegexRedactor::new();
    let inputs = [
        ("recording_jsonl", recording_jsonl(MB)),
        ("log_prose", log_prose(MB)),
        ("credential_dense", credential_dense(MB)),
    ];
    let mut group = c.benchmark_group("redact_text");
    for (name, input) in &inputs {
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(format!("{name}/calltape"), |b| {
            b.iter(|| redactor.redact_text(black_box(input)).len())
        });
        group.bench_function(format!("{name}/regex_baseline"), |b| {
            b.iter(|| baseline.redact(black_box(input)).len())
        });
    }
    group.finish();
}

fn adversarial_families(c: &mut Criterion) {
    let redactor = Redactor::new();
    let baseline = RegexRedactor::new();
    let mut group = c.benchmark_group("redact_text_adversarial");
    for (name, unit) in ADVERSARIAL {
        let input = adversarial(unit, 256 * 1024);
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(format!("{name}/calltape"), |b| {
            b.iter(|| redactor.redact_text(black_box(&input)).len())
        });
        group.bench_function(format!("{name}/regex_baseline"), |b| {
            b.iter(|| baseline.redact(black_box(&input)).len())
        });
    }
    group.finish();
}

fn value(c: &mut Criterion) {
    let redactor = Redactor::new();
    let body = recording_body(MB);
    let parsed: serde_json::Value = serde_json::from_str(&body).expect("valid body");
    let mut group = c.benchmark_group("redact_value");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("json_body/parse_serialize_baseline", |b| {
        b.iter(|| {
            let v: serde_json::Value = serde_json::from_str(black_box(&body)).expect("valid");
            serde_json::to_string(&v).expect("serializable").len()
        })
    });
    group.bench_function("json_body/parse_redact_value_serialize", |b| {
        b.iter(|| {
            let mut v: serde_json::Value = serde_json::from_str(black_box(&body)).expect("valid");
            redactor.redact_value(&mut v);
            serde_json::to_string(&v).expect("serializable").len()
        })
    });
    group.bench_function("json_body/redact_value", |b| {
        b.iter_batched(
            || parsed.clone(),
            |mut v| redactor.redact_value(&mut v),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("json_body/redacted_value", |b| {
        b.iter(|| redactor.redacted_value(black_box(&parsed)))
    });
    group.bench_function("json_body/redact_json_text", |b| {
        b.iter(|| redactor.redact_json_text(black_box(&body)).len())
    });
    group.finish();
}

/// The final gate over a recording's lines, with no known value and with eight
/// (a run's fills, header keys and echoed values), against `redact_json_text`
/// over the same lines, which every recorded line already costs.
fn gate(c: &mut Criterion) {
    let redactor = Redactor::new();
    let input = recording_jsonl(MB);
    let lines: Vec<&str> = input.lines().collect();
    let known = KnownSecrets::new();
    for i in 0..8 {
        known.add(
            &format!("SECRET_{i}"),
            &format!("known-secret-value-{i:04}"),
        );
    }
    let plain = Gate::new();
    let watching = Gate::new().watch(&known);
    let mut group = c.benchmark_group("gate");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("recording_jsonl/redact_json_text_baseline", |b| {
        b.iter(|| {
            lines
                .iter()
                .map(|l| redactor.redact_json_text(black_box(l)).len())
                .sum::<usize>()
        })
    });
    for (name, gate) in [("tokens", &plain), ("tokens_and_8_known", &watching)] {
        group.bench_function(format!("recording_jsonl/check/{name}"), |b| {
            b.iter(|| {
                lines
                    .iter()
                    .filter(|l| gate.check(black_box(l.as_bytes())).is_some())
                    .count()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, text, adversarial_families, value, gate);
criterion_main!(benches);
