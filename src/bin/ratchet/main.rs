//! `ratchet`: the command-line face of ratchetdb.
//!
//! Every command uses only the library's public API. Exit codes are part of the contract:
//! see [`exit`]. Subcommands live in `commands/`, one file each; the JSONL line format of
//! `ingest` lives in `jsonl.rs`.

mod commands;
mod embedder;
mod exit;
mod jsonl;
mod output;
mod progress;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ratchetdb::{Metric, OpenError, Options, Store, StoredDocument, VersionKind};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// An embedded, single-file chunk-and-vector store for RAG whose index never moves backwards.
///
/// Start with `ratchet demo`. Then `ratchet ingest --db index.redb DIR` and
/// `ratchet search --db index.redb "question"`.
///
/// Exit codes: 0 success; 1 error (the database could not be opened or written, the input
/// could not be read, `verify` or `demo` found violations); 2 the command line was invalid;
/// 3 `ingest` rejected some lines or files (every other one was applied).
#[derive(Parser, Debug)]
#[command(name = "ratchet", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// See the guarantee at work: a bundled handbook delivered out of order, twice, late,
    /// concurrently, and checked.
    #[command(long_about = commands::demo::LONG_ABOUT)]
    Demo(commands::demo::DemoArgs),
    /// Index folders of Markdown, text and HTML files, or apply a JSONL file of operations.
    #[command(long_about = commands::ingest::LONG_ABOUT)]
    Ingest(commands::ingest::IngestArgs),
    /// The chunks nearest a question (embedded with the store's embedder) or a raw vector.
    Search(commands::search::SearchArgs),
    /// Write every document as JSONL to stdout, sorted by (source, id), tombstones included.
    Export(commands::export::ExportArgs),
    /// Check every invariant the rows can show; exit 0 iff all hold, 1 otherwise.
    Verify(commands::verify::VerifyArgs),
    /// Counters, totals and the most recent refused writes.
    Stats(commands::stats::StatsArgs),
    /// Copy every document between a redb file and a PostgreSQL store (`postgres://...`),
    /// either way, and verify both ends.
    #[cfg(feature = "postgres")]
    Copy(commands::copy::CopyArgs),
}

/// The database, shared by every subcommand.
#[derive(Args, Debug, Clone)]
pub struct DbArg {
    /// The database file, or a PostgreSQL store's URL
    /// (`postgres://user@host:port/database`, `?schema=NAME` to pick its schema; a build
    /// with the `postgres` feature).
    #[arg(long, value_name = "PATH|URL")]
    pub db: PathBuf,
    /// How long to wait for another process's lock on the database before giving up: for
    /// `ingest`, another writer (one process writes at a time); for the read commands, a
    /// writer that holds the file exclusively, or a file a crashed writer left until a new
    /// writer recovers it. Default 0: fail at once, saying why.
    #[arg(long, value_name = "SECONDS", default_value = "0", value_parser = parse_wait)]
    pub wait: Duration,
}

/// `--wait SECONDS`: a non-negative number of seconds (fractions allowed).
fn parse_wait(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("{text:?}: expected a non-negative, finite number of seconds"))
}

/// `--metric` on the command line.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum MetricArg {
    /// Cosine similarity (vectors are stored normalised to unit length).
    Cosine,
    /// Euclidean distance.
    L2,
    /// Dot product (vectors stored as given).
    Dot,
}

impl From<MetricArg> for Metric {
    fn from(metric: MetricArg) -> Metric {
        match metric {
            MetricArg::Cosine => Metric::Cosine,
            MetricArg::L2 => Metric::L2,
            MetricArg::Dot => Metric::Dot,
        }
    }
}

/// `--version-kind` on the command line.
#[derive(ValueEnum, Clone, Copy, Debug, Default)]
pub enum VersionKindArg {
    /// A revision number issued by the source.
    #[default]
    Number,
    /// The source's modification time in microseconds since the Unix epoch.
    #[value(name = "timestamp_micros", alias = "timestamp-micros")]
    TimestampMicros,
    /// A ticket issued by the store.
    Ticket,
}

impl From<VersionKindArg> for VersionKind {
    fn from(kind: VersionKindArg) -> VersionKind {
        match kind {
            VersionKindArg::Number => VersionKind::Number,
            VersionKindArg::TimestampMicros => VersionKind::TimestampMicros,
            VersionKindArg::Ticket => VersionKind::Ticket,
        }
    }
}

/// A failure that ends the command: printed as one `error: …` line.
#[derive(Debug)]
pub struct Failure(pub String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(error: E) -> Failure {
        Failure(error.to_string())
    }
}

/// Opens a store that must already exist, read-only (`search`, `stats`, `export`,
/// `verify`): nothing is written to the file, so these work beside a running `ingest`, on a
/// read-only file or mount, and leave the file's bytes and modification time as they were.
/// A missing, empty or older-schema file is an error saying what to do, never a new store.
pub fn open_existing(db: &DbArg) -> Result<Store, Failure> {
    Store::open_read_only_with(&db.db, Options::default().wait_for_lock(db.wait))
        .map_err(open_failure)
}

/// Whether `db` is a PostgreSQL store's URL (`postgres://` or `postgresql://`) rather
/// than a file; the library opens either through `Store::open`.
pub fn is_postgres_url(db: &Path) -> bool {
    db.to_str()
        .is_some_and(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
}

/// Whether a store is already there: the file exists, or the server holds the store the
/// URL names (a read-only open, which creates nothing, succeeds).
pub fn store_exists(db: &Path) -> bool {
    if is_postgres_url(db) {
        Store::open_read_only(db).is_ok()
    } else {
        db.exists()
    }
}

/// Every document of `store` in `(source, id)` order, handed to `each` until it returns
/// `false`: streamed from one snapshot of an embedded store; on PostgreSQL (which has no
/// `Store::snapshot`) read in one snapshot by `Store::documents`.
pub fn each_document(
    store: &Store,
    with_vectors: bool,
    mut each: impl FnMut(StoredDocument) -> Result<bool, Failure>,
) -> Result<(), Failure> {
    if store.is_postgres() {
        for document in store.documents(with_vectors)? {
            if !each(document)? {
                break;
            }
        }
    } else {
        let snapshot = store.snapshot()?;
        for document in snapshot.documents(with_vectors)? {
            if !each(document?)? {
                break;
            }
        }
    }
    Ok(())
}

/// An open error in the command line's words (the library's advice names library calls).
pub fn open_failure(error: OpenError) -> Failure {
    match error {
        // The library names a PostgreSQL store by its redacted address already.
        OpenError::NotFound { path } => {
            let path = path.display();
            Failure(format!(
                "no database at {path}: check the path, or create one with `ratchet ingest --db \
                 {path} DIR` (or `--jsonl FILE`)"
            ))
        }
        other => Failure(other.to_string()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => commands::demo::run(args),
        Command::Ingest(args) => commands::ingest::run(args),
        Command::Search(args) => commands::search::run(args),
        Command::Export(args) => commands::export::run(args),
        Command::Verify(args) => commands::verify::run(args),
        Command::Stats(args) => commands::stats::run(args),
        #[cfg(feature = "postgres")]
        Command::Copy(args) => commands::copy::run(args),
    };
    match result {
        Ok(code) => code,
        Err(Failure(message)) => {
            eprintln!("error: {message}");
            exit::error()
        }
    }
}
