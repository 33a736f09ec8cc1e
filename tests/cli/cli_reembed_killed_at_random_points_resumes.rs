//! `ratchet reembed` killed (SIGKILL) at random moments, at least 20 times mid-walk (each
//! kill after some of the space was written by that run, before all of it), then run to its
//! end: every run goes on from what the killed ones committed, and
//! the end is a space covering every live chunk exactly once (its count equals its rows and
//! the live chunks), `verify` clean, and the space's vector of each chunk is the new
//! embedder's for its text. `RATCHET_KILL_SEED` fixes the schedule (the seed is printed).

use ratchetdb::{
    Chunk, Document, Embedder, HashingEmbedder, Metric, Options, SearchOptions, Store, Version,
};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn reembed(db: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ratchet"));
    command.env_remove("RATCHET_MODEL");
    command
        .args(["reembed", "--db"])
        .arg(db)
        .args(["--hashing", "96", "--batch", "4", "--wait", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

#[test]
fn cli_reembed_killed_at_random_points_resumes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("index.redb");
    let narrow = HashingEmbedder::new(32).expect("embedder");
    {
        let store = Store::open(
            &db,
            Options::default()
                .model(narrow.name())
                .dimension(32)
                .metric(Metric::Cosine),
        )
        .expect("create");
        let mut ops = Vec::new();
        for d in 0..400 {
            let mut doc = Document::new("s", format!("d{d}"), Version::number(1));
            for c in 0..5 {
                let text = format!("document {d} chunk {c} of the kill test");
                let v = narrow.embed(&text).expect("embed");
                doc = doc.with_chunk(Chunk::new(text, v));
            }
            ops.push(ratchetdb::Op::Upsert(doc));
        }
        store.write_batch(ops).expect("write");
    }
    let seed = std::env::var("RATCHET_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64 | 1)
        });
    println!("RATCHET_KILL_SEED={seed}");
    let mut rng = seed;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut kills = 0;
    let mut runs = 0;
    // Start-up (opening, the first walk) takes part of each run: kills land from 5 ms on.
    let mut window = Duration::from_millis(300);
    let mut mid_walk = Vec::new();
    let mut last_covered = 0;
    while kills < 20 {
        runs += 1;
        assert!(runs < 400, "only {kills} kills landed in {runs} runs");
        let mut child = reembed(&db).spawn().expect("spawn");
        let after = Duration::from_millis(5 + next() % window.as_millis() as u64);
        let started = Instant::now();
        let mut finished = false;
        while started.elapsed() < after {
            if child.try_wait().expect("wait").is_some() {
                finished = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        if finished {
            // It ended on its own: the space is complete. Start over with a new space
            // state: drop it (nothing else holds the file now) and shorten the window.
            let store = Store::open(&db, Options::default()).expect("open");
            store.drop_space("hash-lexical-v1-96").expect("drop");
            last_covered = 0;
            window = window.mul_f64(0.7).max(Duration::from_millis(20));
            continue;
        }
        child.kill().expect("kill");
        child.wait().expect("reap");
        kills += 1;
        // After every kill: the file opens (a writer's open recovers it), and whatever was
        // committed is consistent.
        let store = Store::open(&db, Options::default()).expect("opens after a kill");
        let report = store.verify().expect("verify");
        assert!(
            report.is_ok(),
            "after kill {kills}: {:#?}",
            report.violations
        );
        // Only kills that landed mid-walk count: some of the space written, not all.
        let covered = store
            .spaces()
            .expect("spaces")
            .into_iter()
            .find(|s| s.name == "hash-lexical-v1-96")
            .map_or(0, |s| s.vectors);
        if covered > last_covered && covered < 2000 {
            mid_walk.push(covered);
        } else {
            kills -= 1;
            if covered == last_covered {
                window = window.mul_f64(1.3);
            }
        }
        last_covered = covered;
    }
    let status = reembed(&db).status().expect("final run");
    assert!(status.success());
    println!("{kills} kills mid-walk in {runs} runs, the space's coverage at each: {mid_walk:?}");

    let store = Store::open_read_only(&db).expect("open");
    let spaces = store.spaces().expect("spaces");
    let space = spaces
        .iter()
        .find(|s| s.name == "hash-lexical-v1-96")
        .expect("the space");
    assert_eq!(
        (space.vectors, space.live_chunks),
        (2000, 2000),
        "{space:?}"
    );
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    let wide = HashingEmbedder::new(96).expect("embedder");
    for text in [
        "document 0 chunk 0 of the kill test",
        "document 399 chunk 4 of the kill test",
    ] {
        let hits = store
            .search(
                &wide.embed(text).expect("embed"),
                1,
                &SearchOptions::default()
                    .space("hash-lexical-v1-96")
                    .exact(true),
            )
            .expect("search");
        assert_eq!(hits[0].text, text);
        assert!(hits[0].score > 0.999, "{:?}", hits[0]);
    }
}
