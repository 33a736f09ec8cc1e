//! Issue 46's "done when", with the built-in embedder at two widths: a store built with
//! `hash-lexical-v1-64` is moved to `hash-lexical-v1-128` by `ratchet reembed --hashing 128
//! --activate` while another process searches it the whole time (`ratchet search`, one
//! process after another, vector mode): no search fails, and every hit is a live chunk with
//! the text it was stored with. The re-embed prints progress from the first batch and a
//! summary; afterwards `ratchet stats` shows both spaces, the new one active and complete,
//! searches embed questions for it, `verify` is clean, and `ratchet ingest` embeds new
//! files for both spaces.

use ratchetdb::{Chunk, Document, Embedder, HashingEmbedder, Metric, Options, Store, Version};
use std::collections::HashSet;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

fn ratchet() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ratchet"));
    command.env_remove("RATCHET_MODEL");
    command
}

const WORDS: [&str; 12] = [
    "ratchet", "pawl", "gear", "spring", "lever", "tooth", "wheel", "shaft", "bolt", "cam",
    "latch", "crank",
];

#[test]
fn cli_reembed_moves_a_store_to_another_embedder_while_it_is_searched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("index.redb");
    let narrow = HashingEmbedder::new(64).expect("embedder");
    let mut live = HashSet::new();
    {
        let store = Store::open(
            &db,
            Options::default()
                .model(narrow.name())
                .dimension(64)
                .metric(Metric::Cosine),
        )
        .expect("create");
        for d in 0..150 {
            let mut doc = Document::new("notes", format!("doc{d}"), Version::number(1));
            for c in 0..4 {
                let text = format!(
                    "{} {} {} note {d} part {c}",
                    WORDS[d % 12],
                    WORDS[(d + c) % 12],
                    WORDS[(d * 3 + c) % 12]
                );
                let vector = narrow.embed(&text).expect("embed");
                live.insert(text.clone());
                doc = doc.with_chunk(Chunk::new(text, vector));
            }
            store.upsert(doc).expect("write");
        }
    }
    let live = Arc::new(live);

    // The searching process, one search after another, until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let searches = Arc::new(AtomicU64::new(0));
    let searcher = {
        let (db, stop, searches, live) = (db.clone(), stop.clone(), searches.clone(), live.clone());
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                i += 1;
                let question = format!("{} {}", WORDS[i % 12], WORDS[(i * 5) % 12]);
                let out = ratchet()
                    .args(["search", "--db"])
                    .arg(&db)
                    .args(["--mode", "vector", "--json", "-k", "3", &question])
                    .output()
                    .expect("run search");
                assert!(
                    out.status.success(),
                    "search {i} failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let stdout = String::from_utf8(out.stdout).expect("utf-8");
                let hits: Vec<serde_json::Value> = stdout
                    .lines()
                    .map(|l| serde_json::from_str(l).expect("a JSON hit"))
                    .collect();
                assert_eq!(hits.len(), 3, "search {i}: {stdout}");
                for hit in hits {
                    let text = hit["text"].as_str().expect("text");
                    assert!(
                        live.contains(text),
                        "search {i}: a chunk never stored: {text:?}"
                    );
                }
                searches.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    while searches.load(Ordering::SeqCst) < 2 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let before = searches.load(Ordering::SeqCst);
    let reembed = ratchet()
        .args(["reembed", "--db"])
        .arg(&db)
        .args([
            "--hashing",
            "128",
            "--batch",
            "8",
            "--activate",
            "--wait",
            "30",
        ])
        .output()
        .expect("run reembed");
    let stderr = String::from_utf8_lossy(&reembed.stderr).into_owned();
    assert!(reembed.status.success(), "{stderr}");
    assert!(
        stderr.contains("first batch written: 8 chunks embedded"),
        "{stderr}"
    );
    assert!(stderr.contains("600 chunks embedded"), "{stderr}");
    assert!(stderr.contains("covers 600/600 chunks"), "{stderr}");
    assert!(stderr.contains("is active"), "{stderr}");
    let during = searches.load(Ordering::SeqCst) - before;
    // A few more searches on the new space, then stop.
    let after = searches.load(Ordering::SeqCst);
    while searches.load(Ordering::SeqCst) < after + 3 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    searcher.join().expect("no search failed");
    println!("{during} searches ran during the re-embed");

    let stats = ratchet()
        .args(["stats", "--db"])
        .arg(&db)
        .output()
        .expect("stats");
    let table = String::from_utf8_lossy(&stats.stdout).into_owned();
    assert!(table.contains("space default"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("space hash-lexical-v1-128 (active)")
                && l.contains("128 dims, 600/600 chunks")),
        "{table}"
    );
    let verify = ratchet()
        .args(["verify", "--db"])
        .arg(&db)
        .output()
        .expect("verify");
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );

    // Ingest embeds a new file for both spaces (the new one is complete: it must).
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("mkdir");
    std::fs::write(
        docs.join("new.md"),
        "# Crank\n\nA crank latch turns the ratchet wheel.\n",
    )
    .expect("write");
    let ingest = ratchet()
        .args(["ingest", "--db"])
        .arg(&db)
        .arg(&docs)
        .output()
        .expect("ingest");
    assert!(
        ingest.status.success(),
        "{}",
        String::from_utf8_lossy(&ingest.stderr)
    );
    let store = Store::open_read_only(&db).expect("open");
    let spaces = store.spaces().expect("spaces");
    assert!(spaces.iter().all(|s| s.is_complete()), "{spaces:?}");
    assert!(spaces[0].live_chunks > 600, "{spaces:?}");
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}
