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
use ratchetdb::{Metric, OpenError, Options, Store, VersionKind};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    /// Index folders of Markdown and text files, or apply a JSONL file of operations.
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
}

/// The database file, shared by every subcommand.
#[derive(Args, Debug, Clone)]
pub struct DbArg {
    /// The database file.
    #[arg(long, value_name = "PATH")]
    pub db: PathBuf,
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

/// Opens a store that must already exist (every command but `ingest`): a missing file is an
/// error, never an empty new store.
pub fn open_existing(path: &Path) -> Result<Store, OpenError> {
    Store::open(path, Options::default().must_exist())
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
    };
    match result {
        Ok(code) => code,
        Err(Failure(message)) => {
            eprintln!("error: {message}");
            exit::error()
        }
    }
}
