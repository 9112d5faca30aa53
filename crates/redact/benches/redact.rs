//! Redaction throughput: `calltape-redact` against a one-pass `regex` baseline
//! of the same text rules (`support/mod.rs`, which a test checks gives the same
//! output on these inputs), and `redact_value` against a plain serde_json round
//! trip.

use std::hint::black_box;

use calltape_redact::Redactor;
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

criterion_group!(benches, text, adversarial_families, value);
criterion_main!(benches);
