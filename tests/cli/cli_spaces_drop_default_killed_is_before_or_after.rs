//! `ratchet spaces drop default` (a promotion: one transaction rewriting every vectors row)
//! killed (SIGKILL) at random moments: each time the file reopens either exactly as before
//! (two spaces, the old model and dimension, `hash-lexical-v1-96` active) or exactly as
//! after (one space, the 96-wide model), never between, `verify` clean, and its searches
//! find chunks by the vectors of whichever model it records. Each attempt starts from a
//! copy of the same file. `RATCHET_KILL_SEED` fixes the schedule (the seed is printed).

use ratchetdb::{
    Chunk, Document, Embedder, HashingEmbedder, Metric, Options, SearchOptions, Store, Version,
};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WIDE: &str = "hash-lexical-v1-96";

fn drop_default(db: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ratchet"));
    command
        .args(["spaces", "drop", "default", "--db"])
        .arg(db)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Whether the store at `db` is as after the promotion (else as before: checked whole).
fn check(db: &std::path::Path, texts: &[String]) -> bool {
    let store = Store::open(db, Options::default()).expect("opens after a kill");
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    let spaces = store.spaces().expect("spaces");
    let after = match spaces.len() {
        1 => {
            assert_eq!(spaces[0].name, WIDE, "{spaces:?}");
            assert_eq!(store.dimension(), Some(96));
            assert_eq!(store.model(), Some(WIDE));
            true
        }
        2 => {
            assert_eq!(spaces[0].name, "default", "{spaces:?}");
            assert!(spaces[1].active && spaces[1].is_complete(), "{spaces:?}");
            assert_eq!(store.dimension(), Some(32));
            false
        }
        _ => panic!("{spaces:?}"),
    };
    let narrow = HashingEmbedder::new(32).expect("embedder");
    let wide = HashingEmbedder::new(96).expect("embedder");
    for text in [&texts[0], &texts[texts.len() - 1]] {
        let hits = store
            .search(
                &wide.embed(text).expect("embed"),
                1,
                &SearchOptions::default().exact(true),
            )
            .expect("search the active space");
        assert_eq!(&hits[0].text, text);
        if !after {
            let hits = store
                .search(
                    &narrow.embed(text).expect("embed"),
                    1,
                    &SearchOptions::default().space("default"),
                )
                .expect("search the old vectors");
            assert_eq!(&hits[0].text, text);
        }
    }
    after
}

#[test]
fn cli_spaces_drop_default_killed_is_before_or_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pristine = dir.path().join("pristine.redb");
    let narrow = HashingEmbedder::new(32).expect("embedder");
    let mut texts = Vec::new();
    {
        let store = Store::open(
            &pristine,
            Options::default()
                .model(narrow.name())
                .dimension(32)
                .metric(Metric::Cosine),
        )
        .expect("create");
        let mut ops = Vec::new();
        for d in 0..1500 {
            let mut doc = Document::new("s", format!("d{d}"), Version::number(1));
            for c in 0..5 {
                let text = format!("document {d} chunk {c} of the promotion kill test");
                let v = narrow.embed(&text).expect("embed");
                texts.push(text.clone());
                doc = doc.with_chunk(Chunk::new(text, v));
            }
            ops.push(ratchetdb::Op::Upsert(doc));
        }
        store.write_batch(ops).expect("write");
        let wide = HashingEmbedder::new(96).expect("embedder");
        store.add_space(WIDE, wide.name(), 96).expect("add");
        store
            .reembed(WIDE, &wide, 512, &mut |_| {})
            .expect("reembed");
        store.activate(WIDE).expect("activate");
    }
    let db = dir.path().join("index.redb");
    // One run to its end, timed, sets the window kills land in.
    std::fs::copy(&pristine, &db).expect("copy");
    let started = Instant::now();
    assert!(drop_default(&db).status().expect("run").success());
    let whole = started.elapsed();
    assert!(check(&db, &texts));

    let seed = std::env::var("RATCHET_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64 | 1)
        });
    println!("RATCHET_KILL_SEED={seed}; a whole run took {whole:?}");
    let mut rng = seed;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let window = whole.as_millis().max(10) as u64;
    let (mut before, mut after) = (0, 0);
    for _ in 0..12 {
        std::fs::copy(&pristine, &db).expect("copy");
        let mut child = drop_default(&db).spawn().expect("spawn");
        let wait = Duration::from_millis(next() % window);
        let started = Instant::now();
        while started.elapsed() < wait {
            if child.try_wait().expect("wait").is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = child.kill();
        child.wait().expect("reap");
        if check(&db, &texts) {
            after += 1;
        } else {
            before += 1;
        }
    }
    println!("after a kill: {before} as before, {after} as after");
}
