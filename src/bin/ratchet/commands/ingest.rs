//! `ratchet ingest`: folders of documents (see `ingest/folder.rs`), or a JSONL stream of
//! operations.
//!
//! JSONL: the input is streamed line by line (never held whole); parsed operations are
//! applied through `Store::write_batch`, one transaction per batch, or with `--workers`
//! through the concurrent writer (see `ingest/workers.rs`). A bad line is rejected alone: the
//! lines around it, in its batch or not, are still applied. Reports go out in input order
//! after each operation commits, so a report line always describes a committed outcome.

mod file_meta;
mod folder;
mod html;
mod workers;

use crate::output::{plural, Output};
use crate::{exit, DbArg, Failure, MetricArg, VersionKindArg};
use clap::{ArgGroup, Args};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use ratchetdb::jsonl::{self, Header, LineError, LineReader, ReadLine};
use ratchetdb::{
    ChunkerOptions, Op, OpOutcome, Options, Outcome, RetainOutcome, Store, VersionKind, WriteError,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// `ratchet ingest --help`: the line format is the contract, so the help shows it whole.
pub const LONG_ABOUT: &str = r#"Index folders of Markdown, text and HTML files, or apply a JSONL file of operations.

Folders (ratchet ingest --db PATH DIR…):
  Every .md, .markdown, .mdown, .txt, .text, .html and .htm file under each DIR is one
  document: its id is its path relative to DIR, its source is DIR's name (or --source), its
  version is its modification time in microseconds. An HTML page is read for its text and
  headings (scripts and styles dropped). Other files are skipped and counted; hidden files
  and folders (names starting with '.') are ignored. Folder links are not followed; a file
  link whose target is outside DIR is skipped with a warning and counted (--follow-links
  indexes it). A file that cannot be read, or that the store
  refuses, is skipped and counted, and the run goes on (exit code 3). A file that is not UTF-8,
  whose name is not UTF-8, that was modified before 1970, or that is not a regular file (a
  FIFO, socket or device: never opened) is skipped with a warning (exit code 3 only with
  --strict). A UTF-8 byte order mark is dropped. Every file's outcome, refusals and unchanged
  files included, is counted by the store (`ratchet stats`). Each file is chunked
  (paragraph-aware, --chunk-size, --overlap), planned before any embedding (an unchanged
  file is not embedded at all; a changed one only for its changed chunks) and written
  through the version guard, so a file is never set back to older text.
  --sync also removes the documents of files that are gone, with a listing of the files
  present. A listing deletes every id it does not list up to its version, unseen ids too, so
  its version is the newest time among the documents that are gone (never later than the
  run's start; newer documents are kept): a file that turns up later with a modification time
  older than that is refused as deleted until you `touch` it.
  Embedder: a new store gets all-MiniLM-L6-v2 from --model DIR (or RATCHET_MODEL; needs a
  build with --features minilm), else the built-in lexical hashing embedder. A store keeps the
  embedder it was built with: later runs use it without --model (MiniLM's folder is found as
  `search` finds it: --model, RATCHET_MODEL, then the installed model).

JSONL (ratchet ingest --db PATH --jsonl FILE):
  {"op":"upsert","source":"s","id":"d","version":7,"chunks":[{"text":"…","vector":[0.1,…],"meta":{…}}],"meta":{…}}
  {"op":"delete","source":"s","id":"d","version":8}
  {"op":"retain","source":"s","ids":["d1","d2"],"version":9}
Any line may add "version_kind": "number" | "timestamp_micros" | "ticket" (default:
--version-kind). A chunk's "vector" may be omitted or null to reuse the stored vector of
identical text. Unknown fields are rejected.

A bad line is rejected alone (stderr: `line N: FIELD: problem`) and every other line is still
applied; the exit code is then 3. Limits are checked while a line is parsed: a key given twice
(at any depth of "meta" too), more chunks, ids or dimensions than the store takes, metadata
nested or sized past the store's limits, or a line whose parsed values would take more than 4
times its length (plus 1 MiB) in memory, is rejected without being built whole. A UTF-8 byte
order mark is accepted at the start of the input. A "ticket" version must have been issued by
the store (Store::ticket). Blank lines are ignored. Lines are applied in batches, one
transaction each (with --workers, through the concurrent writer: same outcomes, same report);
a storage failure stops the run with exit code 1.

With --report, stdout has one JSON object per input line, in input order:
  {"line":N,"op":"upsert","source":…,"id":…,"outcome":"written"|"unchanged"|"deleted"|"skipped",…}
  {"line":N,"op":"retain","source":…,"outcome":"retained"|"skipped",…}
  {"line":N,"outcome":"blank"}
  {"line":N,"error":"…","field":"…"|null}
A skip carries its "reason": older, duplicate, conflict or tombstoned.

Creates the database if it does not exist."#;

/// Bytes of input lines held for one batch before it is applied, whatever the op count.
const BATCH_BYTES: usize = 64 << 20;

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("input").required(true).args(["dirs", "jsonl"])))]
pub struct IngestArgs {
    #[command(flatten)]
    db: DbArg,
    /// Folders of Markdown, text and HTML files to index.
    #[arg(value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// A JSONL file of operations carrying their own vectors; `-` reads standard input.
    #[arg(long, value_name = "FILE", conflicts_with = "dirs")]
    jsonl: Option<PathBuf>,
    /// Folders: the source name of the documents (default: the folder's name). One DIR only.
    #[arg(long, value_name = "NAME", conflicts_with = "jsonl")]
    source: Option<String>,
    /// Folders: also remove the documents of files that no longer exist.
    #[arg(long, conflicts_with = "jsonl")]
    sync: bool,
    /// Folders: exit with code 3 also when files were skipped for what they are (not UTF-8,
    /// a name that is not UTF-8, modified before 1970, not a regular file, a link to a file
    /// outside the folder); without it those are warnings.
    #[arg(long, conflicts_with = "jsonl")]
    strict: bool,
    /// Folders: also index links to files outside the folder (by default such a link is
    /// skipped with a warning: a shared folder must not pull in files from elsewhere).
    #[arg(long, conflicts_with = "jsonl")]
    follow_links: bool,
    /// Folders: the longest chunk, in characters.
    #[arg(long, value_name = "CHARS", default_value_t = ChunkerOptions::default().max_chars as u32, conflicts_with = "jsonl",
          value_parser = clap::value_parser!(u32).range(1..))]
    chunk_size: u32,
    /// Folders: characters repeated from the end of one chunk at the start of the next
    /// (at most a quarter of --chunk-size).
    #[arg(long, value_name = "CHARS", default_value_t = ChunkerOptions::default().overlap_chars, conflicts_with = "jsonl")]
    overlap: usize,
    /// Folders: the all-MiniLM-L6-v2 model folder (default: $RATCHET_MODEL; without either,
    /// the built-in lexical hashing embedder). JSONL: the name of the model that made the
    /// vectors, recorded in a new store; an existing store must match.
    #[arg(long, value_name = "DIR|NAME")]
    model: Option<PathBuf>,
    /// Feed the writes through the concurrent writer from N threads (group commit).
    /// Outcomes and reports are the same as without it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    workers: Option<u32>,
    /// JSONL: the version kind of lines that carry no "version_kind".
    #[arg(long, value_enum, default_value_t = VersionKindArg::Number, conflicts_with = "dirs")]
    version_kind: VersionKindArg,
    /// JSONL: the vector dimension of a new store (default: fixed by the first vector written).
    #[arg(long, value_name = "N", conflicts_with = "dirs")]
    dim: Option<usize>,
    /// JSONL: the metric of a new store (default cosine). An existing store must match.
    #[arg(long, value_enum, conflicts_with = "dirs")]
    metric: Option<MetricArg>,
    /// JSONL: print one JSON object per input line on stdout, in input order.
    #[arg(long, conflicts_with = "dirs")]
    report: bool,
    /// Operations (JSONL lines, or files) per write transaction.
    #[arg(long, value_name = "N", default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    batch_size: u32,
    /// JSONL: the longest accepted line, in bytes; a longer line is rejected without being
    /// held in memory.
    #[arg(long, value_name = "BYTES", default_value_t = jsonl::DEFAULT_MAX_LINE_BYTES,
          conflicts_with = "dirs")]
    max_line_bytes: usize,
}

pub fn run(args: IngestArgs) -> Result<ExitCode, Failure> {
    match args.jsonl.clone() {
        Some(jsonl) => run_jsonl(args, jsonl),
        None => folder::run(folder::FolderArgs {
            options: args.db.options(Options::default()),
            db: args.db.db,
            dirs: args.dirs,
            source: args.source,
            sync: args.sync,
            strict: args.strict,
            follow_links: args.follow_links,
            chunker: ChunkerOptions {
                max_chars: args.chunk_size as usize,
                overlap_chars: args.overlap,
            },
            model: args.model,
            workers: args.workers.map(|n| n as usize),
            batch_files: args.batch_size as usize,
        }),
    }
}

/// The longest first line read ahead for a `store` line (an export's is far shorter).
const STORE_LINE_PEEK_BYTES: usize = 64 * 1024;

/// Reads `input`'s first line whole (at most [`STORE_LINE_PEEK_BYTES`], and no more than
/// `max_line_bytes`), and returns the input with that line put back in front, and the
/// `store` line it is, if it is one.
fn first_line(
    mut input: Box<dyn BufRead + Send>,
    max_line_bytes: usize,
) -> io::Result<(Box<dyn BufRead + Send>, Option<jsonl::StoreLine>)> {
    let limit = STORE_LINE_PEEK_BYTES.min(max_line_bytes.saturating_add(1)) as u64;
    let mut first = Vec::new();
    io::Read::take(&mut input, limit).read_until(b'\n', &mut first)?;
    // Complete: it ends with its line feed, or the input ended before the limit.
    let complete = first.ends_with(b"\n") || (first.len() as u64) < limit;
    let exported = complete.then(|| jsonl::StoreLine::peek(&first)).flatten();
    Ok((
        Box::new(io::Read::chain(io::Cursor::new(first), input)),
        exported,
    ))
}

/// A `store` line that names another metric or model than `--metric` or `--model` ends the
/// run before the store is opened: the export would go into a store it was not made for.
fn refuse_disagreeing_flags(
    exported: &jsonl::StoreLine,
    metric: Option<ratchetdb::Metric>,
    model: Option<&std::ffi::OsStr>,
) -> Result<(), Failure> {
    if let (Some(line), Some(flag)) = (exported.metric, metric) {
        if line != flag {
            return Err(Failure(format!(
                "line 1: metric: is {line}, but --metric is {flag}: ingest the export with \
                 --metric {line} (or without --metric); nothing was written"
            )));
        }
    }
    if let (Some(line), Some(flag)) = (&exported.model, model) {
        if flag != std::ffi::OsStr::new(line) {
            return Err(Failure(format!(
                "line 1: model: is {line:?}, but --model is {:?}: ingest the export with \
                 --model {line:?} (or without --model); nothing was written",
                flag.to_string_lossy()
            )));
        }
    }
    Ok(())
}

fn run_jsonl(args: IngestArgs, jsonl_path: PathBuf) -> Result<ExitCode, Failure> {
    let started = Instant::now();
    // The input first: a missing input file must not leave a new empty database behind.
    // (Standard input unlocked: the --workers reader runs in its own thread.)
    let (input, input_name): (Box<dyn BufRead + Send>, String) = if jsonl_path.as_os_str() == "-" {
        (
            Box::new(BufReader::with_capacity(1 << 20, io::stdin())),
            "standard input".to_string(),
        )
    } else {
        let file = File::open(&jsonl_path)
            .map_err(|e| Failure(format!("cannot read {}: {e}", jsonl_path.display())))?;
        (
            Box::new(BufReader::with_capacity(1 << 20, file)),
            jsonl_path.display().to_string(),
        )
    };
    // An export's `store` line (its first) gives a new store the exported store's metric
    // and model; the line itself is checked against the store when it is read. The whole
    // first line is read (a pipe may deliver it in pieces), then put back before the rest.
    let (input, exported) = first_line(input, args.max_line_bytes)
        .map_err(|e| Failure(format!("cannot read {input_name}: {e}")))?;
    if let Some(exported) = &exported {
        let model = args.model.as_deref().map(std::path::Path::as_os_str);
        refuse_disagreeing_flags(exported, args.metric.map(Into::into), model)?;
    }
    let mut options = Options::default();
    if let Some(exported) = exported {
        if let Some(metric) = exported.metric {
            options = options.metric(metric);
        }
        if let Some(model) = exported.model {
            options = options.model(model);
        }
    }
    if let Some(dim) = args.dim {
        options = options.dimension(dim);
    }
    if let Some(metric) = args.metric {
        options = options.metric(metric.into());
    }
    if let Some(model) = &args.model {
        let name = model.to_str().ok_or_else(|| {
            Failure("--model with --jsonl is the model's name, and must be UTF-8".into())
        })?;
        options = options.model(name);
    }
    let store = Store::open(&args.db.db, args.db.options(options)).map_err(crate::open_failure)?;

    let progress = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    progress.set_style(
        ProgressStyle::with_template("{spinner} {pos} lines ({per_sec}) {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let mut ingest = Ingest {
        store,
        report: args.report.then(Output::stdout),
        progress,
        batch_size: args.batch_size as usize,
        pending: Vec::new(),
        ops: Vec::new(),
        pending_bytes: 0,
        tally: Tally::default(),
    };
    let default_kind = VersionKind::from(args.version_kind);
    let mut reader = LineReader::new(input, args.max_line_bytes);
    let (line, mut fatal) = match args.workers {
        Some(workers) => workers::run(
            &mut ingest,
            reader,
            &input_name,
            default_kind,
            args.max_line_bytes,
            workers as usize,
        ),
        None => {
            let (line, fatal) = read_in_batches(
                &mut ingest,
                &mut reader,
                &input_name,
                default_kind,
                args.max_line_bytes,
            );
            (line, fatal)
        }
    };
    ingest.progress.finish_and_clear();
    if let Some(report) = ingest.report.take() {
        if let Err(Failure(message)) = report.finish() {
            fatal.get_or_insert(message);
        }
    }
    ingest.tally.lines = line;
    eprintln!("{}", ingest.tally.summary(started.elapsed().as_secs_f64()));
    if let Some(message) = fatal {
        return Err(Failure(message));
    }
    Ok(if ingest.tally.rejected > 0 {
        exit::lines_rejected()
    } else {
        exit::ok()
    })
}

/// The single-threaded path: reads every line, applying them a batch at a time. Returns the
/// number of lines read and the error that stopped the run, if one did.
fn read_in_batches(
    ingest: &mut Ingest,
    reader: &mut LineReader<Box<dyn BufRead + Send>>,
    input_name: &str,
    default_kind: VersionKind,
    max_line_bytes: usize,
) -> (u64, Option<String>) {
    let mut buf = Vec::new();
    let mut line: u64 = 0;
    let mut fatal = None;
    loop {
        let read = match reader.read_line(&mut buf) {
            Ok(Some(read)) => read,
            Ok(None) => break,
            Err(e) => {
                fatal = Some(read_error(input_name, line, &e));
                break;
            }
        };
        line += 1;
        ingest.progress.inc(1);
        match read {
            ReadLine::TooLong { bytes } => ingest.reject(line, too_long(bytes, max_line_bytes)),
            ReadLine::Complete if jsonl::is_blank(&buf) => ingest.blank(line),
            ReadLine::Complete => match jsonl::parse_line(&buf, default_kind) {
                Ok(parsed) => match parsed.op {
                    jsonl::Line::Op(op) => {
                        // A batch is bounded by what its operations take in memory, not only
                        // by their lines' length.
                        let bytes = buf.len().max(parsed.cost);
                        ingest.push_op(line, parsed.header, op, bytes)
                    }
                    jsonl::Line::Store(wanted) => {
                        if let Err(Failure(message)) =
                            ingest.store_line(line, parsed.header, &wanted)
                        {
                            fatal = Some(message);
                            break;
                        }
                    }
                },
                Err(error) => ingest.reject(line, error),
            },
        }
        if ingest.batch_is_full() {
            if let Err(Failure(message)) = ingest.flush() {
                fatal = Some(message);
                break;
            }
        }
    }
    // After a failed batch nothing is pending; after a failed read, the lines before it are
    // complete operations and are applied.
    if let Err(Failure(message)) = ingest.flush() {
        fatal.get_or_insert(message);
    }
    (line, fatal)
}

/// The error for a line longer than `--max-line-bytes`.
fn too_long(bytes: u64, max_line_bytes: usize) -> LineError {
    LineError::whole(format!(
        "is {bytes} bytes long; the limit is {max_line_bytes} (--max-line-bytes)"
    ))
}

/// The error that stops a run whose input could not be read.
fn read_error(input_name: &str, line: u64, error: &io::Error) -> String {
    format!("reading {input_name} after line {line}: {error}; the lines before were applied")
}

/// One input line waiting for its batch to commit, so that reports keep input order.
enum Entry {
    Blank,
    Rejected(LineError),
    Op(Header),
}

struct Ingest {
    store: Store,
    report: Option<Output>,
    progress: ProgressBar,
    batch_size: usize,
    pending: Vec<(u64, Entry)>,
    ops: Vec<Op>,
    pending_bytes: usize,
    tally: Tally,
}

impl Ingest {
    fn blank(&mut self, line: u64) {
        self.pending.push((line, Entry::Blank));
    }

    fn reject(&mut self, line: u64, error: LineError) {
        self.pending.push((line, Entry::Rejected(error)));
    }

    fn push_op(&mut self, line: u64, header: Header, op: Op, bytes: usize) {
        self.pending.push((line, Entry::Op(header)));
        self.ops.push(op);
        self.pending_bytes += bytes;
    }

    /// A `store` line: the lines before it are applied first, then the store is checked
    /// against it and counts its tickets as issued.
    fn store_line(
        &mut self,
        line: u64,
        header: Header,
        wanted: &jsonl::StoreLine,
    ) -> Result<(), Failure> {
        self.flush()?;
        let result = apply_store_line(&self.store, wanted);
        self.report_store_line(line, &header, wanted.tickets_issued, result)?;
        self.flush_report()
    }

    fn report_store_line(
        &mut self,
        line: u64,
        header: &Header,
        issued: u64,
        result: Result<(), StoreLineError>,
    ) -> Result<(), Failure> {
        match result {
            Ok(()) => {
                self.tally.other += 1;
                self.emit(&StoreLineReport {
                    line,
                    op: header.kind.as_str(),
                    outcome: "agrees",
                    tickets_issued: issued,
                })
            }
            // The lines after it were made for another store: none is applied.
            Err(StoreLineError::Disagrees(error)) => {
                self.report_rejected(line, Some(header), &error)?;
                Err(Failure(format!(
                    "line {line}: {error}; line {line} and the lines after it were not applied"
                )))
            }
            Err(StoreLineError::Write(error)) if !workers::is_fatal(&error) => {
                self.report_rejected(line, Some(header), &op_error(&error))
            }
            Err(StoreLineError::Write(error)) => {
                self.report_not_applied(line, header, &error)?;
                Err(Failure(format!(
                    "{error}; line {line} and the lines after it were not applied"
                )))
            }
        }
    }

    fn batch_is_full(&self) -> bool {
        self.ops.len() >= self.batch_size
            || self.pending_bytes >= BATCH_BYTES
            || self.pending.len() >= self.batch_size.saturating_mul(4)
    }

    /// Applies the pending operations in one transaction and reports every pending line.
    fn flush(&mut self) -> Result<(), Failure> {
        let pending = std::mem::take(&mut self.pending);
        let ops = std::mem::take(&mut self.ops);
        self.pending_bytes = 0;
        if pending.is_empty() {
            return Ok(());
        }
        let mut results = if ops.is_empty() {
            Vec::new().into_iter()
        } else {
            match self.store.write_batch(ops) {
                Ok(results) => results.into_iter(),
                Err(error) => return self.batch_failed(pending, &error),
            }
        };
        for (line, entry) in pending {
            match entry {
                Entry::Blank => self.report_blank(line)?,
                Entry::Rejected(error) => self.report_rejected(line, None, &error)?,
                Entry::Op(header) => match results.next() {
                    Some(Ok(outcome)) => self.report_outcome(line, &header, &outcome)?,
                    Some(Err(error)) => {
                        self.report_rejected(line, Some(&header), &op_error(&error))?
                    }
                    None => {
                        return Err(Failure(format!(
                            "the store returned no result for line {line}; stopping"
                        )))
                    }
                },
            }
        }
        // The batch is committed and reported: its lines go out now, so that a consumer can
        // acknowledge them upstream while the run goes on.
        self.flush_report()
    }

    /// Writes out the report lines so far (each describes a committed outcome).
    fn flush_report(&mut self) -> Result<(), Failure> {
        match &mut self.report {
            Some(report) => report.flush(),
            None => Ok(()),
        }
    }

    /// A storage failure: nothing of the batch was written, and the store refuses further
    /// writes. Report every line of the batch, then stop.
    fn batch_failed(
        &mut self,
        pending: Vec<(u64, Entry)>,
        error: &WriteError,
    ) -> Result<(), Failure> {
        let first = pending.first().map(|(line, _)| *line).unwrap_or(0);
        let last = pending.last().map(|(line, _)| *line).unwrap_or(0);
        for (line, entry) in pending {
            match entry {
                Entry::Blank => self.report_blank(line)?,
                Entry::Rejected(error) => self.report_rejected(line, None, &error)?,
                Entry::Op(header) => self.report_not_applied(line, &header, error)?,
            }
        }
        Err(Failure(format!(
            "{error}; nothing of lines {first}..={last} was written, and no later line was read"
        )))
    }

    /// An operation whose batch failed to commit.
    fn report_not_applied(
        &mut self,
        line: u64,
        header: &Header,
        error: &WriteError,
    ) -> Result<(), Failure> {
        self.tally.not_applied += 1;
        let not_applied = LineError::whole(format!(
            "not applied: the batch's transaction failed: {error}"
        ));
        self.emit(&ErrorLine::new(line, Some(header), &not_applied))
    }

    fn report_blank(&mut self, line: u64) -> Result<(), Failure> {
        self.tally.blank += 1;
        self.emit(&BlankLine {
            line,
            outcome: "blank",
        })
    }

    fn report_rejected(
        &mut self,
        line: u64,
        header: Option<&Header>,
        error: &LineError,
    ) -> Result<(), Failure> {
        self.tally.rejected += 1;
        self.progress.suspend(|| eprintln!("line {line}: {error}"));
        self.emit(&ErrorLine::new(line, header, error))
    }

    fn report_outcome(
        &mut self,
        line: u64,
        header: &Header,
        outcome: &OpOutcome,
    ) -> Result<(), Failure> {
        let op = header.kind.as_str();
        let source = header.source.as_str();
        let id = header.id.as_deref();
        match outcome {
            OpOutcome::Document(outcome) => {
                self.tally.document(outcome);
                self.emit(&OutcomeLine {
                    line,
                    op,
                    source,
                    id,
                    outcome,
                })
            }
            OpOutcome::Retain(result) => {
                self.tally.retain(result);
                self.emit(&RetainLine {
                    line,
                    op,
                    source,
                    outcome: if result.skipped.is_some() {
                        "skipped"
                    } else {
                        "retained"
                    },
                    reason: result.skipped.map(|reason| reason.as_str()),
                    result,
                })
            }
            other => {
                self.tally.other += 1;
                self.emit(&OtherLine {
                    line,
                    op,
                    source,
                    id,
                    outcome: "other",
                    result: other,
                })
            }
        }
    }

    fn emit(&mut self, value: &impl Serialize) -> Result<(), Failure> {
        match &mut self.report {
            Some(report) => report.json_line(value),
            None => Ok(()),
        }
    }
}

/// An operation the store refused for its input, as a line error naming the field.
fn op_error(error: &WriteError) -> LineError {
    match error {
        WriteError::Input(input) => LineError::at(&input.field, &input.problem),
        WriteError::DimensionMismatch {
            position,
            expected,
            found,
        } => LineError::at(
            format!("chunks[{position}].vector"),
            format!("has {found} dimensions; this store holds {expected}-dimensional vectors"),
        ),
        WriteError::VersionKindMismatch {
            stored, incoming, ..
        } => LineError::at(
            "version_kind",
            format!("is {incoming}, but the document is versioned by {stored}; versions of different kinds cannot be compared"),
        ),
        WriteError::MissingVector { position } => LineError::at(
            format!("chunks[{position}].vector"),
            "is missing and the store holds no vector for this text; embed it and send the vector",
        ),
        WriteError::MissingSpaceVector { space, position } => LineError::at(
            format!("chunks[{position}].spaces.{space}"),
            format!(
                "is missing: the store's vector space {space:?} is complete, so every new \
                 chunk needs a vector there (JSONL lines carry the default space's only: \
                 ingest this store's folders, or drop the space)"
            ),
        ),
        other => LineError::whole(other.to_string()),
    }
}

#[derive(Serialize)]
struct OutcomeLine<'a> {
    line: u64,
    op: &'static str,
    source: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(flatten)]
    outcome: &'a Outcome,
}

#[derive(Serialize)]
struct RetainLine<'a> {
    line: u64,
    op: &'static str,
    source: &'a str,
    outcome: &'static str,
    /// As for a skipped upsert or delete, so every skip has a `reason`.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
    #[serde(flatten)]
    result: &'a RetainOutcome,
}

/// The report of a `store` line.
#[derive(Serialize)]
struct StoreLineReport {
    line: u64,
    op: &'static str,
    outcome: &'static str,
    tickets_issued: u64,
}

/// Why a `store` line was not applied.
pub(super) enum StoreLineError {
    /// The store is not what the line says the exported one was (a line error).
    Disagrees(LineError),
    /// Counting the tickets as issued failed.
    Write(WriteError),
}

/// Checks the store against a `store` line (metric, model) and counts the line's tickets as
/// issued.
pub(super) fn apply_store_line(
    store: &Store,
    wanted: &jsonl::StoreLine,
) -> Result<(), StoreLineError> {
    if let Some(metric) = wanted.metric {
        if metric != store.metric() {
            return Err(StoreLineError::Disagrees(LineError::at(
                "metric",
                format!(
                    "is {metric}, but this store's metric is {}: ingest the export into a new \
                     store (which takes the line's metric) or one of metric {metric}",
                    store.metric()
                ),
            )));
        }
    }
    if let Some(model) = &wanted.model {
        if store.model() != Some(model.as_str()) {
            return Err(StoreLineError::Disagrees(LineError::at(
                "model",
                format!(
                    "is {model:?}, but this store's model is {}: ingest the export into a new \
                     store (which takes the line's model) or one of that model",
                    store
                        .model()
                        .map_or("none".to_string(), |m| format!("{m:?}"))
                ),
            )));
        }
    }
    store
        .adopt_tickets(wanted.tickets_issued)
        .map_err(StoreLineError::Write)
}

#[derive(Serialize)]
struct OtherLine<'a> {
    line: u64,
    op: &'static str,
    source: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    outcome: &'static str,
    result: &'a OpOutcome,
}

#[derive(Serialize)]
struct ErrorLine<'a> {
    line: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    op: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    error: &'a str,
    field: Option<&'a str>,
}

impl<'a> ErrorLine<'a> {
    fn new(line: u64, header: Option<&'a Header>, error: &'a LineError) -> ErrorLine<'a> {
        ErrorLine {
            line,
            op: header.map(|h| h.kind.as_str()),
            source: header.map(|h| h.source.as_str()),
            id: header.and_then(|h| h.id.as_deref()),
            error: &error.message,
            field: error.field.as_deref(),
        }
    }
}

#[derive(Serialize)]
struct BlankLine {
    line: u64,
    outcome: &'static str,
}

/// What the run did, for the summary on stderr.
#[derive(Default)]
struct Tally {
    lines: u64,
    written: u64,
    unchanged: u64,
    deleted: u64,
    listings: u64,
    listing_documents_removed: u64,
    skipped: BTreeMap<&'static str, u64>,
    rejected: u64,
    blank: u64,
    not_applied: u64,
    other: u64,
}

impl Tally {
    fn document(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Written { .. } => self.written += 1,
            Outcome::Unchanged { .. } => self.unchanged += 1,
            Outcome::Deleted { .. } => self.deleted += 1,
            Outcome::Skipped { reason, .. } => {
                *self.skipped.entry(reason.as_str()).or_default() += 1
            }
            _ => self.other += 1,
        }
    }

    fn retain(&mut self, result: &RetainOutcome) {
        match result.skipped {
            Some(reason) => *self.skipped.entry(reason.as_str()).or_default() += 1,
            None => {
                self.listings += 1;
                self.listing_documents_removed += result.documents_removed;
            }
        }
    }

    fn summary(&self, elapsed_s: f64) -> String {
        let skipped: u64 = self.skipped.values().sum();
        let mut out = format!(
            "ingest: {} in {elapsed_s:.2}s: {} written, {} unchanged, {} deleted, {} retained ({} removed), {skipped} skipped",
            plural(self.lines, "line", "lines"),
            self.written,
            self.unchanged,
            self.deleted,
            self.listings,
            plural(self.listing_documents_removed, "document", "documents"),
        );
        if skipped > 0 {
            let reasons: Vec<String> = self
                .skipped
                .iter()
                .map(|(reason, n)| format!("{reason} {n}"))
                .collect();
            out.push_str(&format!(" ({})", reasons.join(", ")));
        }
        out.push_str(&format!(
            ", {} rejected, {} blank",
            self.rejected, self.blank
        ));
        if self.not_applied > 0 {
            out.push_str(&format!(", {} not applied", self.not_applied));
        }
        if self.other > 0 {
            out.push_str(&format!(", {} other", self.other));
        }
        out
    }
}
