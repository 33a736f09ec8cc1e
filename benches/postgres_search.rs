//! pgvector's HNSW search through `Store::open("postgres://...")` beside the embedded index,
//! on the same vectors and queries, in one run: recall@10 and single-thread QPS (one query
//! at a time, every hit resolved to its chunk's text and version on both sides) over the
//! same `ef` sweep (`ef` is pgvector's `hnsw.ef_search`, at most 1000), the widths compared
//! pass by pass, interleaved. Both indexes are built with M 16 and ef_construction 100
//! (ratchetdb's defaults; pgvector's index is created by the first write and filled by each
//! insert). By hand, against a server, after `bash benches/data/fetch.sh`:
//!
//! `RATCHETDB_PG_URL=... RATCHETDB_BENCH_DATA=benches/data/sets cargo bench --features postgres --bench postgres_search`
//!
//! `RATCHETDB_SEARCH_BENCH_SETS` picks the set (default `minilm`: 40,000 × 384-d, cosine).
//! Without the URL or the data it says so and measures nothing.

mod common;
#[allow(dead_code)]
mod search_real;

use ratchetdb::testkit;
use ratchetdb::{SearchOptions, Store};
use search_real::{Set, EF_SWEEP};

const SCHEMA: &str = "bench_postgres_search";

fn main() {
    let Ok(url) = std::env::var("RATCHETDB_PG_URL") else {
        eprintln!("postgres_search: RATCHETDB_PG_URL is not set; nothing measured");
        return;
    };
    let name = std::env::var(search_real::SETS_ENV).unwrap_or_else(|_| "minilm".into());
    let set = match Set::load(&name, true) {
        Ok(set) => set,
        Err(why) => {
            eprintln!("postgres_search: {why}; nothing measured");
            return;
        }
    };
    testkit::pg_execute(&url, &format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")).expect("drop");
    let separator = if url.contains('?') { '&' } else { '?' };
    let server = Store::open(
        format!("{url}{separator}schema={SCHEMA}"),
        search_real::options(),
    )
    .expect("open the PostgreSQL store");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = Store::open(dir.path().join("search.redb"), search_real::options()).expect("open");

    let file_ingest = search_real::ingest(&file, &set);
    search_real::wait(&file);
    let server_ingest = search_real::ingest(&server, &set);
    println!(
        "{name}: {} vectors × {}-d, {} queries; writes: embedded {file_ingest:.1} s (its graph \
         is built after, in the background), PostgreSQL {server_ingest:.1} s (each insert goes \
         into pgvector's HNSW index)",
        set.len(),
        set.dim,
        set.query_count()
    );
    println!("| ef | embedded recall@10 | embedded QPS | pgvector recall@10 | pgvector QPS | QPS pgvector ÷ embedded |");
    println!("|---|---|---|---|---|---|");
    let (mut file_sweep, mut server_sweep) = (Vec::new(), Vec::new());
    for ef in EF_SWEEP.into_iter().filter(|ef| *ef <= 1000) {
        let options = SearchOptions::default().ef(ef);
        let (fr, fq) = search_real::pass(&file, &set, &options);
        let (sr, sq) = search_real::pass(&server, &set, &options);
        println!(
            "| {ef} | {fr:.4} | {fq:.0} | {sr:.4} | {sq:.0} | {:.2}x |",
            sq / fq
        );
        // (The fourth field, distances per query, is the embedded graph's; not compared.)
        file_sweep.push((ef, fr, fq, 0.0));
        server_sweep.push((ef, sr, sq, 0.0));
        if fr >= 0.999 && sr >= 0.999 {
            break;
        }
    }
    for target in [0.95, 0.99] {
        let at = |sweep: &[(usize, f64, f64, f64)]| search_real::at_recall(sweep, target);
        match (at(&file_sweep), at(&server_sweep)) {
            (Some(f), Some(s)) => println!(
                "recall {target}: embedded ef {} {:.0} QPS, pgvector ef {} {:.0} QPS: {:.2}x",
                f.0,
                f.2,
                s.0,
                s.2,
                s.2 / f.2
            ),
            (f, s) => {
                println!("recall {target}: not reached by both (embedded {f:?}, pgvector {s:?})")
            }
        }
    }
}
