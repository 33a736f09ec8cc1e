//! `ratchet`: the command-line face of ratchetdb.
//!
//! Every command uses only the library's public API. Exit codes are part of the contract:
//! see [`exit`]. Subcommands live in `commands/`, one file each; the JSONL line format of
//! `ingest` and `export` is the library's `ratchetdb::jsonl`.

mod commands;
mod embedder;
mod exit;
mod masking;
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
    /// Recover a file a crashed or killed writer left (what a writer's open does), without
    /// writing anything else; the read commands do this themselves when they can.
    Recover(commands::recover::RecoverArgs),
    /// Copy the store into a new file while writers keep writing: one consistent snapshot.
    Backup(commands::backup::BackupArgs),
    /// Counters, totals and the most recent refused writes.
    Stats(commands::stats::StatsArgs),
    /// Embed every chunk again with another embedder, into a vector space of its own, while
    /// searches go on; `--activate` switches searches to it when it is complete.
    #[command(long_about = commands::reembed::LONG_ABOUT)]
    Reembed(commands::reembed::ReembedArgs),
    /// List the vector spaces, or drop one (`drop default` promotes the active space in
    /// the default one's place).
    #[command(long_about = commands::spaces::LONG_ABOUT)]
    Spaces(commands::spaces::SpacesArgs),
    /// Copy every document between a redb file and a PostgreSQL store (`postgres://...`),
    /// either way, and verify both ends.
    #[cfg(feature = "postgres")]
    Copy(commands::copy::CopyArgs),
    /// Copy every document between a redb file and a PostgreSQL store: needs a build with the
    /// `postgres` feature (`cargo install --path . --features postgres`).
    #[cfg(not(feature = "postgres"))]
    #[command(disable_help_flag = true)]
    Copy {
        /// Whatever was passed; this build cannot copy.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        rest: Vec<String>,
    },
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
    /// Resident memory, in MiB, the vector index and the page cache may use together
    /// (`Options::memory_budget`): the index keeps compact codes and scores its candidates
    /// on the vectors read from the file. Default: no budget (every vector in memory). A
    /// budget too small for the store is refused, naming the smallest that works.
    #[arg(long, value_name = "MiB", value_parser = parse_mib)]
    pub memory_budget: Option<u64>,
}

impl DbArg {
    /// `options` with this argument's lock wait and memory budget.
    pub fn options(&self, options: Options) -> Options {
        let options = options.wait_for_lock(self.wait);
        match self.memory_budget {
            Some(bytes) => options.memory_budget(bytes),
            None => options,
        }
    }
}

/// `--memory-budget MiB`: a whole number of MiB, as bytes.
fn parse_mib(text: &str) -> Result<u64, String> {
    let mib: u64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number of MiB"))?;
    mib.checked_mul(1 << 20)
        .ok_or_else(|| format!("{text:?} MiB is more bytes than fit in 64 bits"))
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
///
/// A file a crashed writer left is recovered first when it can be written (redb's repair, as
/// a writer's open does), with a notice on stderr; on read-only media it stays an error.
pub fn open_existing(db: &DbArg) -> Result<Store, Failure> {
    let store = Store::open_read_only_with(
        &db.db,
        db.options(Options::default()).recover_on_read_open(true),
    )
    .map_err(open_failure)?;
    if store.recovered_at_open() {
        eprintln!("{}", recovered_notice(&db.db));
    }
    Ok(store)
}

/// What the command line says on stderr after recovering a crashed writer's file.
pub fn recovered_notice(db: &Path) -> String {
    format!(
        "recovered {}: its last writer stopped without closing it (a crash or kill); every \
         committed write is kept",
        db.display()
    )
}

/// Whether `db` is a PostgreSQL store's URL (`postgres://` or `postgresql://`) rather
/// than a file; the library opens either through `Store::open`.
pub fn is_postgres_url(db: &Path) -> bool {
    db.to_str()
        .and_then(|s| s.split_once("://"))
        .is_some_and(|(scheme, _)| {
            scheme.eq_ignore_ascii_case("postgres") || scheme.eq_ignore_ascii_case("postgresql")
        })
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

/// How the user invoked this binary, for hints that print a command to run next: `ratchet`
/// when it was found on the `PATH`, else the path it was run by (`target/release/ratchet`
/// after `cargo run --release`), so a printed command works when pasted.
pub fn program_name() -> String {
    let argv0 = std::env::args_os().next().map(PathBuf::from);
    match argv0 {
        Some(path) if path.components().count() > 1 => {
            let shown = std::env::current_dir()
                .ok()
                .and_then(|dir| path.strip_prefix(&dir).ok().map(Path::to_path_buf))
                .unwrap_or(path);
            shown.display().to_string()
        }
        _ => "ratchet".to_string(),
    }
}

/// An open error in the command line's words: the library's advice names library calls
/// (`Options::wait_for_lock`); here it names the flags and commands that do the same.
pub fn open_failure(error: OpenError) -> Failure {
    let program = program_name();
    match error {
        OpenError::Locked { path } => Failure(format!(
            "the database {} is open in another process that writes it: one writer at a time; \
             wait for it (`--wait SECONDS`), or read it beside the writer (`{program} search`, \
             `stats`, `export` and `verify` do)",
            path.display()
        )),
        OpenError::HeldExclusively { path } => Failure(format!(
            "the database {} is open in another process that writes it exclusively, letting no \
             reader in (a writer with readers turned off, or an older ratchetdb); wait for it to \
             close (`--wait SECONDS`)",
            path.display()
        )),
        OpenError::Empty { path } => {
            let path = path.display();
            Failure(format!(
                "{path} is an empty file, not a ratchetdb store; check the path, or make a store \
                 there with `{program} ingest --db {path} DIR` (or `--jsonl FILE`), which writes \
                 into an empty file"
            ))
        }
        OpenError::NeedsConversion {
            path,
            found,
            supported,
        } => {
            let path = path.display();
            Failure(format!(
                "{path} has schema version {found}, written by an older ratchetdb; this build \
                 converts it to schema {supported} when it opens it for writing (any \
                 `{program} ingest --db {path}`, after a backup copy) but the read commands \
                 never write: convert it once, or read it with the build that wrote it"
            ))
        }
        OpenError::SchemaTooOld {
            path,
            found,
            supported,
        } => Failure(format!(
            "{} has schema version {found}, written by an older ratchetdb; this build reads \
             schema {supported}: export it with the build that wrote it (`ratchet export \
             --vectors`) and ingest the export into a new store (`{program} ingest --jsonl`)",
            path.display()
        )),
        OpenError::NotWritable { .. } => Failure(format!(
            "{error}; the read commands (`{program} search`, `stats`, `export` and `verify`) do"
        )),
        OpenError::BackendNotBuilt { feature, .. } => Failure(format!(
            "{error}: `cargo install --path . --features {feature}`"
        )),
        // The library names a PostgreSQL store by its redacted address already.
        OpenError::NotFound { path } => {
            let path = path.display();
            Failure(format!(
                "no database at {path}: check the path, or create one with `{program} ingest \
                 --db {path} DIR` (or `--jsonl FILE`)"
            ))
        }
        OpenError::NeedsRecovery { path } => Failure(format!(
            "{}; it cannot be written here (read-only media or no permission), so the read \
             commands cannot recover it: copy it to writable storage and run `{} recover \
             --db COPY` (or run it where the file is writable), then read the copy",
            OpenError::NeedsRecovery { path },
            program
        )),
        other => Failure(other.to_string()),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // `--help` and `--version` go to stdout as clap prints them: they quote no input.
            if !error.use_stderr() {
                error.exit();
            }
            let rendered = error.render().to_string();
            let masked = masking::mask_secrets(&rendered);
            if masked == rendered {
                error.exit();
            }
            eprint!("{masked}");
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
    };
    let result = match cli.command {
        Command::Demo(args) => commands::demo::run(args),
        Command::Ingest(args) => commands::ingest::run(args),
        Command::Search(args) => commands::search::run(args),
        Command::Export(args) => commands::export::run(args),
        Command::Verify(args) => commands::verify::run(args),
        Command::Recover(args) => commands::recover::run(args),
        Command::Backup(args) => commands::backup::run(args),
        Command::Stats(args) => commands::stats::run(args),
        Command::Reembed(args) => commands::reembed::run(args),
        Command::Spaces(args) => commands::spaces::run(args),
        #[cfg(feature = "postgres")]
        Command::Copy(args) => commands::copy::run(args),
        #[cfg(not(feature = "postgres"))]
        Command::Copy { .. } => Err(Failure(format!(
            "`copy` needs a ratchet built with the `postgres` feature: \
             `cargo install --path . --features postgres`, then `{} copy ...`",
            program_name()
        ))),
    };
    match result {
        Ok(code) => code,
        Err(Failure(message)) => {
            eprintln!("error: {message}");
            // The library's advice for a damaged file names its API; here, the command.
            if message.contains("the file is damaged") {
                eprintln!(
                    "hint: `{} verify --deep --db FILE` checks every page of it",
                    program_name()
                );
            }
            exit::error()
        }
    }
}
