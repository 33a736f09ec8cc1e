//! `ratchet ingest --db PATH DIR…`: folders of Markdown, text and HTML files in, guarded
//! writes out.
//!
//! Each file is one document: id = its path relative to the folder (with `/`), source = the
//! folder's name (or `--source`), version = its modification time in microseconds. The
//! modification time is read before the content: a file changed while it is read then gets
//! its new time (and the same content) on the next run, which raises the version without
//! re-embedding; read the other way round, the next run would see new content under an
//! unchanged version, which the guard refuses as a conflict.
//!
//! Files go in batches: read and chunk each, ask [`Store::plan`] what a write would do, embed
//! only the chunks the plan says need it (one `embed_batch` call per batch, spread over the
//! cores by the embedder), then write. Without `--workers` a batch is one transaction
//! (`Store::write_batch`); with `--workers N`, N threads each take batches and submit their
//! writes to the concurrent writer, which group-commits them.
//!
//! `--sync` sends one listing per folder (`Store::retain`) after the files: the ids present,
//! which deletes every other id of the source up to the listing's version. Which version:
//! - never later than the run's start (taken before the walk): a file created after the
//!   walk is absent from it, and must not be deleted for that; a document whose time is
//!   newer than the start is kept;
//! - and no later than needed: a listing also deletes the ids it has never seen, up to its
//!   version, so a file that appears later with an older modification time (moved in with
//!   `mv`, copied with `cp -p`, unpacked from an archive) would be refused as deleted. So
//!   the version is the newest version among the stored documents the walk no longer finds
//!   (ties go to the delete), and no listing is sent when nothing is gone.
//!
//! Links: folder links are never followed. A file link is indexed when its target (with
//! every link resolved) is inside the folder given; one that leads outside it (a shared
//! repository's `notes/leak.md -> ../secret/creds.txt`), or that cannot be resolved, is
//! skipped with a warning and counted, unless `--follow-links`. The file opened is checked
//! again (its real path must be inside the folder), so a folder on its path replaced by a
//! link after the walk leads nowhere outside. HTML pages are read as Markdown (`html.rs`).
use crate::embedder;
use crate::output::plural;
use crate::progress::Progress;
use crate::{exit, Failure};
use crossbeam_channel::bounded;
use ratchetdb::{
    chunk_text, Chunk, ChunkerOptions, Document, Embedder, Op, OpOutcome, Outcome, PlannedAction,
    ReadError, SkipReason, Store, Version, WriteError, Writer,
};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use walkdir::WalkDir;

/// File name extensions indexed as text (compared without case).
const TEXT_EXTENSIONS: &[&str] = &["md", "markdown", "mdown", "txt", "text", "html", "htm"];

/// File name extensions read as HTML pages (compared without case).
const HTML_EXTENSIONS: &[&str] = &["html", "htm"];

/// How many files a note names before it says "and N more".
const FILES_NAMED: usize = 5;

/// A batch is written once this many chunks wait for their vectors, whatever the file count.
const BATCH_CHUNKS_TO_EMBED: usize = 256;

/// What `ingest` passes in.
pub struct FolderArgs {
    pub db: PathBuf,
    /// `--wait` and `--memory-budget` as store options.
    pub options: ratchetdb::Options,
    pub dirs: Vec<PathBuf>,
    pub source: Option<String>,
    pub sync: bool,
    /// Files skipped for what they are (not UTF-8, a name that is not UTF-8, a time before
    /// 1970, not a regular file) make the exit code 3, as unreadable ones always do.
    pub strict: bool,
    pub chunker: ChunkerOptions,
    /// `--follow-links`: also index file links whose target is outside the folder.
    pub follow_links: bool,
    pub model: Option<PathBuf>,
    pub workers: Option<usize>,
    pub batch_files: usize,
}

/// One folder given on the command line.
struct Root {
    path: PathBuf,
    source: String,
}

/// One text file found by the walk.
struct FileJob {
    root: usize,
    id: String,
    path: PathBuf,
    /// The walk found a file, not a link: the read then refuses a link put in its place
    /// since (`O_NOFOLLOW`), which could lead out of the folder.
    not_a_link: bool,
    /// Without `--follow-links`: the root with every link resolved, which the file opened
    /// must be inside (a folder on its path may have been replaced by a link since the
    /// walk). `None` with `--follow-links`.
    confine_to: Option<Arc<Path>>,
}

/// What the walk found.
struct Walk {
    files: Vec<FileJob>,
    /// Per root: the ids of every text file present (readable or not), for `--sync`.
    present: Vec<Vec<String>>,
    /// Per root: a folder that could not be listed (a listing would then be incomplete).
    unlisted: Vec<Option<String>>,
}

/// What the run did, for the summary.
#[derive(Default)]
struct Tally {
    files_seen: u64,
    written: u64,
    unchanged: u64,
    touched: u64,
    skipped: BTreeMap<&'static str, u64>,
    /// By the guard's reason (`older`, `tombstoned`, `conflict`).
    refused: BTreeMap<&'static str, u64>,
    /// By the guard's reason: the first [`FILES_NAMED`] files refused for it.
    refused_files: BTreeMap<&'static str, Vec<String>>,
    /// Files already stored at their modification time (the store's `skipped_duplicate`).
    already_stored: u64,
    removed_by_sync: u64,
    kept_newer_than_listing: u64,
    chunks_embedded: u64,
    chunks_reused: u64,
    chunks_removed: u64,
}

/// Why a file was skipped, as the summary names it.
mod skip {
    pub const NOT_TEXT: &str = "not Markdown or text";
    pub const NAME_NOT_UTF8: &str = "name not UTF-8";
    pub const UNREADABLE: &str = "unreadable";
    pub const NOT_UTF8: &str = "not UTF-8";
    pub const REJECTED: &str = "refused by the store";
    /// A FIFO, socket or device (never opened: reading one can block forever).
    pub const NOT_REGULAR: &str = "not a regular file";
    /// A modification time before 1970 cannot be a version (versions count from 1970).
    pub const BEFORE_1970: &str = "modified before 1970";
    /// A file link whose target is outside the folder (without `--follow-links`).
    pub const LINK_OUTSIDE: &str = "link to a file outside the folder";
    /// An HTML page with a tag longer than `html::MAX_TAG_BYTES` (never tokenized).
    pub const HTML_TAG_TOO_LONG: &str = "HTML tag over 64 KiB";
}

impl Tally {
    fn skip(&mut self, reason: &'static str) {
        *self.skipped.entry(reason).or_default() += 1;
    }

    fn merge(&mut self, other: Tally) {
        self.files_seen += other.files_seen;
        self.written += other.written;
        self.unchanged += other.unchanged;
        self.touched += other.touched;
        for (reason, n) in other.skipped {
            *self.skipped.entry(reason).or_default() += n;
        }
        for (reason, n) in other.refused {
            *self.refused.entry(reason).or_default() += n;
        }
        for (reason, files) in other.refused_files {
            let named = self.refused_files.entry(reason).or_default();
            named.extend(files);
            named.truncate(FILES_NAMED);
        }
        self.already_stored += other.already_stored;
        self.removed_by_sync += other.removed_by_sync;
        self.kept_newer_than_listing += other.kept_newer_than_listing;
        self.chunks_embedded += other.chunks_embedded;
        self.chunks_reused += other.chunks_reused;
        self.chunks_removed += other.chunks_removed;
    }

    /// Files that could not be indexed for a problem of the file itself (exit code 3): ones
    /// that could not be read or that the store refused, always; with `strict`, also ones
    /// skipped for what they are (a warning otherwise, so that one such file in a folder
    /// does not fail every `--sync` run).
    fn unindexable(&self, strict: bool) -> u64 {
        let always = [skip::UNREADABLE, skip::REJECTED];
        let strict_only = [
            skip::NOT_UTF8,
            skip::NAME_NOT_UTF8,
            skip::NOT_REGULAR,
            skip::BEFORE_1970,
            skip::LINK_OUTSIDE,
            skip::HTML_TAG_TOO_LONG,
        ];
        let count = |reasons: &[&str]| -> u64 {
            reasons
                .iter()
                .filter_map(|reason| self.skipped.get(reason))
                .sum()
        };
        count(&always) + if strict { count(&strict_only) } else { 0 }
    }
}

/// Where writes go: one transaction per batch, or the concurrent writer.
enum Sink {
    Direct(Store),
    Writer(Writer),
}

impl Sink {
    /// Writes `ops`; the outer error is the whole batch's (nothing of it is acknowledged).
    fn write(&self, ops: Vec<Op>) -> Result<Vec<Result<OpOutcome, WriteError>>, WriteError> {
        match self {
            Sink::Direct(store) => store.write_batch(ops),
            Sink::Writer(writer) => {
                let pending: Vec<_> = ops.into_iter().map(|op| writer.submit(op)).collect();
                let results: Vec<_> = pending
                    .into_iter()
                    .map(|p| p.and_then(|pending| pending.wait()))
                    .collect();
                match results
                    .iter()
                    .find_map(|r| r.as_ref().err().filter(|e| is_fatal(e)))
                {
                    Some(error) => Err(WriteError::BatchFailed {
                        cause: error.to_string(),
                    }),
                    None => Ok(results),
                }
            }
        }
    }
}

/// Whether a write error ends the run (rather than refusing one file).
fn is_fatal(error: &WriteError) -> bool {
    !matches!(
        error,
        WriteError::Input(_)
            | WriteError::DimensionMismatch { .. }
            | WriteError::VersionKindMismatch { .. }
            | WriteError::MissingVector { .. }
            | WriteError::MissingSpaceVector { .. }
    )
}

/// Everything a batch needs.
struct Context<'a> {
    roots: &'a [Root],
    store: &'a Store,
    embedder: &'a dyn Embedder,
    /// The store's other vector spaces whose embedder can be loaded, by name: each new
    /// chunk is embedded for them too.
    spaces: &'a [(String, Box<dyn Embedder>)],
    chunker: ChunkerOptions,
    sink: &'a Sink,
    progress: &'a Progress,
    /// Running totals for the progress line.
    embedded_so_far: &'a AtomicU64,
}

pub fn run(args: FolderArgs) -> Result<ExitCode, Failure> {
    let started = Instant::now();
    // Taken before the walk: see the module documentation.
    let run_start = Version::timestamp_micros(micros_since_epoch(SystemTime::now()));
    let roots = roots(&args.dirs, args.source.as_deref())?;
    let (store, embedder) =
        embedder::for_folder_ingest(&args.db, args.model.as_deref(), &args.options)?;
    let counters_before = store.stats()?.counters;

    let mut tally = Tally::default();
    let walk = walk(&roots, args.follow_links, &mut tally, &|line| {
        eprintln!("{line}")
    });
    warn_of_empty_roots(&roots, &walk, args.sync);
    let progress = Progress::new("ingest", "files", walk.files.len() as u64);
    let sink = match args.workers {
        Some(_) => Sink::Writer(store.writer()),
        None => Sink::Direct(store.clone()),
    };
    let embedded_so_far = AtomicU64::new(0);
    let spaces = embedder::for_spaces(&store, &args.db, args.model.as_deref(), &progress)?;
    let context = Context {
        roots: &roots,
        store: &store,
        embedder: embedder.as_ref(),
        spaces: &spaces,
        chunker: args.chunker,
        sink: &sink,
        progress: &progress,
        embedded_so_far: &embedded_so_far,
    };
    // With workers, batches small enough that every worker gets some.
    let batch_files = match args.workers {
        Some(workers) => args
            .batch_files
            .min(walk.files.len().div_ceil(workers.max(1))),
        None => args.batch_files,
    };
    let batches = batches(&walk.files, batch_files.max(1));
    let processed = match args.workers {
        None => batches.iter().try_fold(Tally::default(), |mut sum, batch| {
            sum.merge(process_batch(batch, &context)?);
            Ok(sum)
        }),
        Some(workers) => process_concurrently(&batches, &context, workers),
    };
    let processed = match processed {
        Ok(processed) => processed,
        Err(failure) => {
            progress.finish();
            return Err(failure);
        }
    };
    tally.merge(processed);
    progress.finish();

    if args.sync {
        sync_roots(&store, &sink, &roots, &walk, run_start, &mut tally)?;
    }
    if let Sink::Writer(writer) = &sink {
        writer.shutdown();
    }
    let counters = store.stats()?.counters;
    let summary = Summary {
        db: &args.db,
        embedder: embedder.name(),
        tally: &tally,
        written_new: counters.written_new - counters_before.written_new,
        elapsed_s: started.elapsed().as_secs_f64(),
    };
    // Through `Output`: a reader that goes away (`| head`) is not an error.
    let mut out = crate::output::Output::stdout();
    for line in summary.lines() {
        out.text_line(&line)?;
    }
    out.finish()?;
    Ok(if tally.unindexable(args.strict) > 0 {
        exit::lines_rejected()
    } else {
        exit::ok()
    })
}

/// Warns of every root with no file to index (and, with `--sync`, what that will do).
fn warn_of_empty_roots(roots: &[Root], walk: &Walk, sync: bool) {
    for (index, root) in roots.iter().enumerate() {
        if walk.present[index].is_empty() && walk.unlisted[index].is_none() {
            eprintln!(
                "warning: no Markdown, text or HTML files (.{}) under {}{}",
                TEXT_EXTENSIONS.join(", ."),
                root.path.display(),
                if sync {
                    "; --sync removes every document of its source"
                } else {
                    ": nothing to index"
                }
            );
        }
    }
}

/// `--sync` for every root whose folders could all be listed (a warning for the others).
fn sync_roots(
    store: &Store,
    sink: &Sink,
    roots: &[Root],
    walk: &Walk,
    run_start: Version,
    tally: &mut Tally,
) -> Result<(), Failure> {
    for (index, root) in roots.iter().enumerate() {
        if let Some(folder) = &walk.unlisted[index] {
            eprintln!(
                "warning: --sync skipped for source {:?}: the folder {folder} could not be \
                     listed, so files in it would be taken for deleted; fix its permissions and \
                     run again",
                root.source
            );
            continue;
        }
        sync(store, sink, root, &walk.present[index], run_start, tally)?;
    }
    Ok(())
}

/// `--sync` for one folder: a listing of the files present, at the version of the newest
/// stored document that is gone (see the module documentation); nothing when none is.
fn sync(
    store: &Store,
    sink: &Sink,
    root: &Root,
    present: &[String],
    run_start: Version,
    tally: &mut Tally,
) -> Result<(), Failure> {
    let listed: HashSet<&str> = present.iter().map(String::as_str).collect();
    let mut listing_version: Option<Version> = None;
    crate::each_document(store, false, |document| {
        if document.source != root.source
            || document.deleted
            || listed.contains(document.id.as_str())
        {
            return Ok(true);
        }
        if document.version.kind != run_start.kind || document.version.value > run_start.value {
            tally.kept_newer_than_listing += 1;
            return Ok(true);
        }
        if listing_version.is_none_or(|v| v.value < document.version.value) {
            listing_version = Some(document.version);
        }
        Ok(true)
    })?;
    let Some(version) = listing_version else {
        return Ok(());
    };
    let op = Op::Retain {
        source: root.source.clone(),
        present: present.to_vec(),
        version,
    };
    match sink.write(vec![op])?.pop() {
        Some(Ok(OpOutcome::Retain(outcome))) => {
            tally.removed_by_sync += outcome.documents_removed;
            tally.chunks_removed += outcome.chunks_removed;
            Ok(())
        }
        Some(Ok(other)) => Err(Failure(format!(
            "the store answered a listing with {other:?}"
        ))),
        Some(Err(error)) => Err(Failure(format!(
            "--sync for source {:?} was refused: {error}",
            root.source
        ))),
        None => Err(Failure("the store returned no outcome for --sync".into())),
    }
}

/// Microseconds since the Unix epoch (0 for a time before it).
fn micros_since_epoch(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Checks the folders and names their sources.
fn roots(dirs: &[PathBuf], source: Option<&str>) -> Result<Vec<Root>, Failure> {
    if source.is_some() && dirs.len() > 1 {
        return Err(Failure(
            "--source names the documents of one folder; give one DIR with --source, or drop \
             it to name each source after its folder"
                .into(),
        ));
    }
    let mut roots: Vec<Root> = Vec::new();
    for dir in dirs {
        match std::fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(Failure(format!(
                    "{} is a file, not a folder: give the folder that holds your documents \
                     (a file of operations goes with --jsonl FILE)",
                    dir.display()
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Failure(format!(
                    "no folder at {}: check the path, or give the folder that holds your documents",
                    dir.display()
                )))
            }
            Err(e) => {
                return Err(Failure(format!(
                    "cannot open the folder {}: {e}",
                    dir.display()
                )))
            }
        }
        let name = match source {
            Some(source) => source.to_string(),
            None => std::fs::canonicalize(dir)
                .ok()
                .and_then(|path| path.file_name()?.to_str().map(str::to_string))
                .ok_or_else(|| {
                    Failure(format!(
                        "cannot name a source after {}; pass --source NAME",
                        dir.display()
                    ))
                })?,
        };
        if let Some(other) = roots.iter().find(|r| r.source == name) {
            return Err(Failure(format!(
                "{} and {} would both be source {name:?}; ingest them in separate runs with \
                 --source",
                other.path.display(),
                dir.display()
            )));
        }
        roots.push(Root {
            path: dir.clone(),
            source: name,
        });
    }
    Ok(roots)
}

/// Whether a walk entry is hidden (its name starts with '.'); the root itself never is.
fn is_hidden(entry: &walkdir::DirEntry) -> bool {
    entry.depth() > 0 && entry.file_name().to_string_lossy().starts_with('.')
}

fn is_text(path: &Path) -> bool {
    has_extension(path, TEXT_EXTENSIONS)
}

fn is_html(path: &Path) -> bool {
    has_extension(path, HTML_EXTENSIONS)
}

fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| extensions.iter().any(|t| t.eq_ignore_ascii_case(e)))
}

/// The document id of `path` under `root`: its relative path with `/` separators.
fn document_id(root: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = relative
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect();
    Some(parts?.join("/"))
}

/// Whether the link `path` leads to a file outside `root` (both with every link resolved).
/// A link that cannot be resolved (broken, or a loop) counts as outside: where it leads
/// cannot be checked, and a target made there later could be anywhere.
fn leads_outside(path: &Path, root: Option<&Path>) -> bool {
    match (std::fs::canonicalize(path), root) {
        (Ok(target), Some(root)) => !is_inside(&target, root),
        (Ok(_), None) | (Err(_), _) => true,
    }
}

/// Whether `real` (a path with every link resolved) is inside `real_root` (likewise).
fn is_inside(real: &Path, real_root: &Path) -> bool {
    real.starts_with(real_root)
}

/// Whether the file `file`, opened at `path`, is inside `real_root` (with every link
/// resolved): the path the open file really has (`/proc/self/fd`, on Linux), else `path`
/// resolved after the open and equal to `resolved_before` (resolved before it). A file
/// whose real path cannot be found counts as outside.
fn opened_inside(
    file: &std::fs::File,
    path: &Path,
    resolved_before: Option<&Path>,
    real_root: &Path,
) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            return is_inside(&real, real_root);
        }
    }
    let _ = file;
    match (resolved_before, std::fs::canonicalize(path)) {
        (Some(before), Ok(after)) => before == after && is_inside(&after, real_root),
        _ => false,
    }
}

/// Lists every file under the roots, in name order. A file link whose target is outside
/// its root is skipped unless `follow_links`.
fn walk(roots: &[Root], follow_links: bool, tally: &mut Tally, warn: &dyn Fn(String)) -> Walk {
    let mut files = Vec::new();
    let mut present = vec![Vec::new(); roots.len()];
    let mut unlisted = vec![None; roots.len()];
    for (index, root) in roots.iter().enumerate() {
        let real_root = std::fs::canonicalize(&root.path).ok();
        // A root that cannot be resolved confines to its path as given, which no real path
        // starts with unless it is real already: its files are then skipped as outside.
        let confine_to: Option<Arc<Path>> = (!follow_links).then(|| {
            Arc::from(
                real_root
                    .clone()
                    .unwrap_or_else(|| root.path.clone())
                    .as_path(),
            )
        });
        let entries = WalkDir::new(&root.path)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|entry| !is_hidden(entry));
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    let path = error
                        .path()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|| root.path.display().to_string());
                    warn(format!("warning: cannot list {path}: {error}; skipped"));
                    unlisted[index].get_or_insert(path);
                    tally.skip(skip::UNREADABLE);
                    continue;
                }
            };
            if entry.file_type().is_dir() {
                continue;
            }
            tally.files_seen += 1;
            if !is_text(entry.path()) {
                tally.skip(skip::NOT_TEXT);
                continue;
            }
            // Only regular files: a FIFO would block the open forever, with the database
            // locked. (A link is checked when it is read, on the open file: `read_file`.)
            if !entry.file_type().is_file() && !entry.path_is_symlink() {
                warn(format!(
                    "warning: skipped {}: not a regular file (a FIFO, socket or device)",
                    entry.path().display()
                ));
                tally.skip(skip::NOT_REGULAR);
                continue;
            }
            if entry.path_is_symlink()
                && !follow_links
                && leads_outside(entry.path(), real_root.as_deref())
            {
                warn(format!(
                    "warning: skipped {}: a link to a file outside {} (--follow-links to index \
                     such links)",
                    entry.path().display(),
                    root.path.display()
                ));
                tally.skip(skip::LINK_OUTSIDE);
                continue;
            }
            let Some(id) = document_id(&root.path, entry.path()) else {
                warn(format!(
                    "warning: skipped {}: its name is not UTF-8, so it cannot be a document id",
                    entry.path().display()
                ));
                tally.skip(skip::NAME_NOT_UTF8);
                continue;
            };
            // Present even if it turns out unreadable: a file that exists is never deleted
            // by --sync for a read error.
            present[index].push(id.clone());
            files.push(FileJob {
                root: index,
                id,
                not_a_link: !entry.path_is_symlink(),
                confine_to: confine_to.clone(),
                path: entry.into_path(),
            });
        }
    }
    Walk {
        files,
        present,
        unlisted,
    }
}

/// Splits the files into batches of at most `max_files` (a batch embeds in calls of about
/// [`BATCH_CHUNKS_TO_EMBED`] texts).
fn batches(files: &[FileJob], max_files: usize) -> Vec<&[FileJob]> {
    files.chunks(max_files).collect()
}

/// A file read, chunked and planned.
struct Planned {
    path: PathBuf,
    document: Document,
    action: PlannedAction,
    to_embed: Vec<usize>,
}

/// What reading and planning one file gave.
enum Loaded {
    Planned(Box<Planned>),
    Skipped(&'static str, String),
}

/// Opens a file without ever blocking: with `O_NONBLOCK`, an open of a FIFO returns at once
/// (the walk skips them, but one may replace a file between the walk and the read). With
/// `no_follow`, a link is refused (`O_NOFOLLOW`): the walk found a file there.
fn open_nonblocking(path: &Path, no_follow: bool) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let no_follow = if no_follow { libc::O_NOFOLLOW } else { 0 };
        options.custom_flags(libc::O_NONBLOCK | no_follow);
    }
    #[cfg(not(unix))]
    let _ = no_follow;
    options.open(path)
}

/// What reading one file found.
enum FileRead {
    Text(SystemTime, Vec<u8>),
    NotRegular,
    /// The file opened is outside the folder it was found in.
    Outside,
}

/// The file's modification time (first: see the module documentation) and bytes, from one
/// open file, never blocking on one that is not regular.
/// With `confine_to`, a file whose real path is outside it is not read (`Outside`).
fn read_file(path: &Path, no_follow: bool, confine_to: Option<&Path>) -> std::io::Result<FileRead> {
    use std::io::Read;
    let resolved_before = if cfg!(target_os = "linux") || confine_to.is_none() {
        None
    } else {
        std::fs::canonicalize(path).ok()
    };
    let mut file = open_nonblocking(path, no_follow)?;
    if let Some(real_root) = confine_to {
        if !opened_inside(&file, path, resolved_before.as_deref(), real_root) {
            return Ok(FileRead::Outside);
        }
    }
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(FileRead::NotRegular);
    }
    let modified = meta.modified()?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).min(1 << 26));
    file.read_to_end(&mut bytes)?;
    Ok(FileRead::Text(modified, bytes))
}

fn read_and_plan(job: &FileJob, context: &Context<'_>) -> Result<Loaded, Failure> {
    let path = job.path.display();
    let (modified, bytes) = match read_file(&job.path, job.not_a_link, job.confine_to.as_deref()) {
        Ok(FileRead::Text(modified, bytes)) => (modified, bytes),
        Ok(FileRead::Outside) => {
            return Ok(Loaded::Skipped(
                skip::LINK_OUTSIDE,
                format!(
                    "warning: skipped {path}: it leads to a file outside {} (--follow-links \
                     to index such links)",
                    context.roots[job.root].path.display()
                ),
            ))
        }
        Ok(FileRead::NotRegular) => {
            return Ok(Loaded::Skipped(
                skip::NOT_REGULAR,
                format!("warning: skipped {path}: not a regular file (a FIFO, socket or device)"),
            ))
        }
        Err(error) => {
            return Ok(Loaded::Skipped(
                skip::UNREADABLE,
                format!("warning: cannot read {path}: {error}; skipped (check that it exists and its permissions)"),
            ))
        }
    };
    let Ok(since_epoch) = modified.duration_since(UNIX_EPOCH) else {
        return Ok(Loaded::Skipped(
            skip::BEFORE_1970,
            format!(
                "warning: {path} was last modified before 1970, and its modification time is \
                 its version (microseconds since 1970); `touch` it to index it; skipped"
            ),
        ));
    };
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => {
            return Ok(Loaded::Skipped(
                skip::NOT_UTF8,
                format!(
                    "warning: {path} is not UTF-8 text (invalid byte at offset {}); skipped",
                    error.utf8_error().valid_up_to()
                ),
            ))
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let page;
    let text = if is_html(&job.path) {
        page = match super::html::to_markdown(text) {
            Ok(page) => page,
            Err(refused) => {
                return Ok(Loaded::Skipped(
                    skip::HTML_TAG_TOO_LONG,
                    format!("warning: skipped {path}: {refused}, more than any page needs"),
                ))
            }
        };
        page.as_str()
    } else {
        text
    };
    let mut document = Document::new(
        context.roots[job.root].source.clone(),
        job.id.clone(),
        Version::timestamp_micros(u64::try_from(since_epoch.as_micros()).unwrap_or(u64::MAX)),
    );
    let chunks = chunk_text(text, &context.chunker);
    let mtime_secs = micros_since_epoch(modified) / 1_000_000;
    let metas = super::file_meta::chunk_metas(&job.id, text, &chunks, mtime_secs);
    for (chunk, meta) in chunks.into_iter().zip(metas) {
        document
            .chunks
            .push(Chunk::without_vector(chunk).with_meta(meta));
    }
    match context.store.plan(&document) {
        Ok(plan) => Ok(Loaded::Planned(Box::new(Planned {
            path: job.path.clone(),
            document,
            action: plan.action,
            to_embed: plan.to_embed,
        }))),
        Err(ReadError::Input(error)) => Ok(Loaded::Skipped(
            skip::REJECTED,
            format!("warning: {path} cannot be stored: {error}; skipped"),
        )),
        Err(error) => Err(Failure::from(error)),
    }
}

/// Reads, plans, embeds and writes one batch of files.
fn process_batch(files: &[FileJob], context: &Context<'_>) -> Result<Tally, Failure> {
    let mut tally = Tally::default();
    let mut writes: Vec<Planned> = Vec::new();
    let mut waiting_texts = 0;
    let mut files_since_progress = 0;
    for job in files {
        files_since_progress += 1;
        match read_and_plan(job, context)? {
            Loaded::Skipped(reason, warning) => {
                context.progress.println(&warning);
                tally.skip(reason);
            }
            // Every planned file goes to the store, refusals too: the guard refuses them again
            // (a plan is no promise) and counts them, so the store's counters and skip log
            // say why, as they do for --jsonl. A refusal needs no vector.
            Loaded::Planned(planned) => {
                if matches!(planned.action, PlannedAction::Skip { .. }) {
                    let mut planned = planned;
                    planned.to_embed.clear();
                    writes.push(*planned);
                } else {
                    waiting_texts += planned.to_embed.len();
                    writes.push(*planned);
                }
            }
        }
        if waiting_texts >= BATCH_CHUNKS_TO_EMBED {
            embed_and_write(std::mem::take(&mut writes), context, &mut tally)?;
            waiting_texts = 0;
            context.advance(std::mem::take(&mut files_since_progress), 0);
        }
    }
    embed_and_write(writes, context, &mut tally)?;
    context.advance(files_since_progress, 0);
    Ok(tally)
}

impl Context<'_> {
    /// Moves the progress display on by `files` done and `embedded` more chunks embedded.
    /// Chunks are counted as the embedder reports them, during a batch's one `embed_batch`
    /// call (a batch of 256 chunks takes a minute on a loaded machine); files once the
    /// batch is written.
    fn advance(&self, files: u64, embedded: u64) {
        let total = self.embedded_so_far.fetch_add(embedded, Ordering::Relaxed) + embedded;
        self.progress
            .advance(files, || format!("{total} chunks embedded"));
    }

    /// Embeds `texts`, showing each part of them embedded as soon as it is.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ratchetdb::EmbedError> {
        self.embedder
            .embed_batch_with_progress(texts, &mut |done| self.advance(0, done as u64))
    }
}

/// Embeds, in one call, every chunk the plans say has no vector yet, then writes the files.
fn embed_and_write(
    mut writes: Vec<Planned>,
    context: &Context<'_>,
    tally: &mut Tally,
) -> Result<(), Failure> {
    if writes.is_empty() {
        return Ok(());
    }
    let texts: Vec<&str> = writes
        .iter()
        .flat_map(|p| {
            p.to_embed
                .iter()
                .map(|&i| p.document.chunks[i].text.as_str())
        })
        .collect();
    let vectors = if texts.is_empty() {
        Vec::new()
    } else {
        context.embed(&texts)?
    };
    tally.chunks_embedded += vectors.len() as u64;
    let mut in_spaces = Vec::with_capacity(context.spaces.len());
    for (name, space) in context.spaces {
        let vectors = if texts.is_empty() {
            Vec::new()
        } else {
            space.embed_batch(&texts)?
        };
        in_spaces.push((name, vectors.into_iter()));
    }
    let mut vectors = vectors.into_iter();
    let mut ops = Vec::with_capacity(writes.len());
    for planned in &mut writes {
        for &position in &planned.to_embed {
            let chunk = &mut planned.document.chunks[position];
            chunk.vector = vectors.next();
            for (name, vectors) in &mut in_spaces {
                if let Some(vector) = vectors.next() {
                    chunk.spaces.insert((*name).clone(), vector);
                }
            }
        }
        ops.push(Op::Upsert(planned.document.clone()));
    }
    let results = context
        .sink
        .write(ops)
        .map_err(|e| Failure(format!("{e}; the files of earlier batches were written")))?;
    for (planned, result) in writes.into_iter().zip(results) {
        let result = match result {
            // The stored revision changed since the plan (another writer): embed it all.
            Err(WriteError::MissingVector { .. }) => {
                let mut document = planned.document.clone();
                let texts: Vec<&str> = planned
                    .document
                    .chunks
                    .iter()
                    .map(|c| c.text.as_str())
                    .collect();
                let vectors = context.embed(&texts)?;
                tally.chunks_embedded += vectors.len() as u64;
                for (chunk, vector) in document.chunks.iter_mut().zip(vectors) {
                    chunk.vector = Some(vector);
                }
                for (name, space) in context.spaces {
                    let vectors = space.embed_batch(&texts)?;
                    for (chunk, vector) in document.chunks.iter_mut().zip(vectors) {
                        chunk.spaces.insert(name.clone(), vector);
                    }
                }
                context
                    .sink
                    .write(vec![Op::Upsert(document)])?
                    .pop()
                    .unwrap_or(Err(WriteError::Closed))
            }
            other => other,
        };
        match result {
            Ok(OpOutcome::Document(outcome)) => tally.document(&outcome, &planned.path),
            Ok(other) => {
                return Err(Failure(format!(
                    "the store answered an upsert with {other:?}"
                )))
            }
            Err(error) if is_fatal(&error) => return Err(Failure::from(error)),
            Err(error) => {
                context.progress.println(&format!(
                    "warning: {} cannot be stored: {error}; skipped",
                    planned.path.display()
                ));
                tally.skip(skip::REJECTED);
            }
        }
    }
    Ok(())
}

impl Tally {
    /// Counts the store's outcome for the file at `path`.
    fn document(&mut self, outcome: &Outcome, path: &Path) {
        match outcome {
            Outcome::Written {
                chunks_reused,
                chunks_removed,
                ..
            } => {
                self.written += 1;
                self.chunks_reused += chunks_reused;
                self.chunks_removed += chunks_removed;
            }
            Outcome::Unchanged { .. } => {
                self.unchanged += 1;
                self.touched += 1;
            }
            Outcome::Skipped {
                reason: SkipReason::Duplicate,
                ..
            } => self.already_stored += 1,
            Outcome::Skipped { reason, .. } => {
                *self.refused.entry(reason.as_str()).or_default() += 1;
                let named = self.refused_files.entry(reason.as_str()).or_default();
                if named.len() < FILES_NAMED {
                    named.push(path.display().to_string());
                }
            }
            // A delete, or an outcome this build does not know: no file to count.
            _ => {}
        }
    }
}

/// `--workers N`: N threads take batches and write through the concurrent writer.
fn process_concurrently(
    batches: &[&[FileJob]],
    context: &Context<'_>,
    workers: usize,
) -> Result<Tally, Failure> {
    let (queue, work) = bounded::<&[FileJob]>(workers);
    let total = Mutex::new(Tally::default());
    let failure: Mutex<Option<Failure>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let work = work.clone();
            let (total, failure, stop) = (&total, &failure, &stop);
            scope.spawn(move || {
                for batch in work {
                    if stop.load(Ordering::SeqCst) {
                        continue;
                    }
                    match process_batch(batch, context) {
                        Ok(tally) => total.lock().unwrap_or_else(|e| e.into_inner()).merge(tally),
                        Err(error) => {
                            stop.store(true, Ordering::SeqCst);
                            failure
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .get_or_insert(error);
                        }
                    }
                }
            });
        }
        drop(work);
        for batch in batches {
            if stop.load(Ordering::SeqCst) || queue.send(batch).is_err() {
                break;
            }
        }
        drop(queue);
    });
    if let Some(failure) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(failure);
    }
    Ok(total.into_inner().unwrap_or_else(|e| e.into_inner()))
}

/// The table printed at the end.
struct Summary<'a> {
    db: &'a Path,
    embedder: &'a str,
    tally: &'a Tally,
    written_new: u64,
    elapsed_s: f64,
}

impl Summary<'_> {
    fn lines(&self) -> Vec<String> {
        let t = self.tally;
        let mut lines = vec![format!(
            "ingest into {}, embedder {}",
            ratchetdb::redact_address(self.db),
            embedder::describe(self.embedder)
        )];
        let mut row = |name: &str, value: u64, detail: String| {
            let detail = if detail.is_empty() {
                String::new()
            } else {
                format!("  ({detail})")
            };
            lines.push(format!("  {name:<22}{value:>8}{detail}"));
        };
        let breakdown = |parts: Vec<(String, u64)>| -> String {
            parts
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|(name, n)| format!("{name} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        row("files seen", t.files_seen, String::new());
        let changed = t.written.saturating_sub(self.written_new.min(t.written));
        row(
            "written",
            t.written,
            breakdown(vec![
                ("new".into(), self.written_new.min(t.written)),
                ("changed".into(), changed),
            ]),
        );
        // The rows of the store's outcomes use the words `ratchet stats` uses for its
        // counters (`unchanged`, `skipped_duplicate`: "already stored").
        row(
            "unchanged",
            t.unchanged,
            if t.touched > 0 {
                "a newer time but the same text: nothing embedded; `unchanged` in stats".to_string()
            } else {
                String::new()
            },
        );
        row(
            "already stored",
            t.already_stored,
            if t.already_stored > 0 {
                "the same modification time as stored: nothing to do; `skipped_duplicate` in \
                 stats"
                    .to_string()
            } else {
                String::new()
            },
        );
        let skipped: u64 = t.skipped.values().sum();
        row(
            "skipped",
            skipped,
            breakdown(t.skipped.iter().map(|(r, n)| (r.to_string(), *n)).collect()),
        );
        let refused: u64 = t.refused.values().sum();
        row(
            "refused by the guard",
            refused,
            breakdown(t.refused.iter().map(|(r, n)| (r.to_string(), *n)).collect()),
        );
        row(
            "removed by --sync",
            t.removed_by_sync,
            if t.kept_newer_than_listing > 0 {
                format!("{} kept: newer than the listing", t.kept_newer_than_listing)
            } else {
                String::new()
            },
        );
        row("chunks embedded", t.chunks_embedded, String::new());
        row("chunks reused", t.chunks_reused, String::new());
        row("chunks removed", t.chunks_removed, String::new());
        lines.push(format!("  {:<22}{:>7.2}s", "elapsed", self.elapsed_s));
        for (reason, n) in &t.refused {
            let one = *n == 1;
            let (is, was, them, its) = if one {
                ("is", "was", "it", "its")
            } else {
                ("are", "were", "them", "their")
            };
            let hint = match *reason {
                "older" => format!("{is} older than what the store holds (a file restored from a backup keeps its old modification time); search serves the stored, newer version, not {its} text: `touch` {them} to index {them}"),
                "tombstoned" => format!("{was} deleted from the store at a time after {its} modification time (by an earlier --sync); search serves nothing of {them}: `touch` {them} to index {them} again"),
                "conflict" => format!("changed without a new modification time (did --chunk-size or --overlap change since the last run?); the store will not pick one of two contents with one version, and search serves the stored text: use the same settings, or `touch` {}", if one { "the file" } else { "the files" }),
                _ => continue,
            };
            let named = t
                .refused_files
                .get(reason)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let mut files = named.join(", ");
            let more = n.saturating_sub(named.len() as u64);
            if more > 0 {
                files.push_str(&format!(" and {more} more"));
            }
            lines.push(format!(
                "note: {} {hint}: {files}",
                plural(*n, "file", "files")
            ));
        }
        lines
    }
}

#[cfg(all(test, unix))]
mod tests {
    //! Regression: a file was read wherever its path led at
    //! the time of the read, so a folder replaced by a link to outside between the walk and
    //! the read (a race) was followed out of the folder. The open file's real path is now
    //! checked against the root; here the state after such a swap is set up directly.
    use super::{open_nonblocking, opened_inside};
    use std::os::unix::fs::symlink;

    #[test]
    fn a_file_opened_through_a_folder_swapped_for_a_link_is_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("docs");
        let secret = dir.path().join("secret");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&secret).unwrap();
        std::fs::write(root.join("sub/a.md"), "inside").unwrap();
        std::fs::write(secret.join("a.md"), "outside").unwrap();
        let real_root = std::fs::canonicalize(&root).unwrap();

        let path = root.join("sub/a.md");
        let before = std::fs::canonicalize(&path).ok();
        let file = open_nonblocking(&path, true).unwrap();
        assert!(opened_inside(&file, &path, before.as_deref(), &real_root));

        // `sub` swapped for a link to outside after the walk found `sub/a.md`: the last
        // component is a file, so `O_NOFOLLOW` does not stop the open.
        std::fs::remove_dir_all(root.join("sub")).unwrap();
        symlink(&secret, root.join("sub")).unwrap();
        let file = open_nonblocking(&path, true).unwrap();
        assert!(!opened_inside(&file, &path, before.as_deref(), &real_root));
    }
}

#[cfg(test)]
mod chunks_show_during_a_batch {
    //! Regression (issue 46): folder ingest with MiniLM printed no chunk count for the first
    //! 87 s, because the count moved only once a whole batch (256 chunks, one `embed_batch`
    //! call) was embedded and written. The count now moves each time the embedder reports
    //! texts done within the call; here an embedder that reports one text at a time reads
    //! the progress line from inside its call.
    use super::{Context, Sink};
    use crate::progress::Progress;
    use ratchetdb::{ChunkerOptions, EmbedError, Embedder, HashingEmbedder, Options, Store};
    use std::sync::atomic::AtomicU64;
    use std::sync::Mutex;

    /// Embeds one text at a time, recording the progress line after reporting each.
    struct OneAtATime<'a> {
        inner: HashingEmbedder,
        progress: &'a Progress,
        lines_seen: Mutex<Vec<String>>,
    }

    impl Embedder for OneAtATime<'_> {
        fn name(&self) -> &str {
            self.inner.name()
        }
        fn dimension(&self) -> usize {
            self.inner.dimension()
        }
        fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.inner.embed_batch(texts)
        }
        fn embed_batch_with_progress(
            &self,
            texts: &[&str],
            progress: &mut dyn FnMut(usize),
        ) -> Result<Vec<Vec<f32>>, EmbedError> {
            let mut vectors = Vec::new();
            for text in texts {
                vectors.extend(self.inner.embed_batch(&[text])?);
                progress(1);
                let line = self.progress.plain_line().unwrap_or_default();
                self.lines_seen
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(line);
            }
            Ok(vectors)
        }
    }

    #[test]
    fn the_chunk_count_moves_within_one_embed_call() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s.redb"), Options::default()).unwrap();
        let progress = Progress::silent("ingest", "files", 2);
        let embedder = OneAtATime {
            inner: HashingEmbedder::default(),
            progress: &progress,
            lines_seen: Mutex::new(Vec::new()),
        };
        let sink = Sink::Direct(store.clone());
        let embedded_so_far = AtomicU64::new(0);
        let context = Context {
            roots: &[],
            store: &store,
            embedder: &embedder,
            spaces: &[],
            chunker: ChunkerOptions::default(),
            sink: &sink,
            progress: &progress,
            embedded_so_far: &embedded_so_far,
        };
        let vectors = context.embed(&["one", "two", "three"]).unwrap();
        assert_eq!(vectors.len(), 3);
        let lines = embedder
            .lines_seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        assert_eq!(lines.len(), 3, "{lines:?}");
        for (done, line) in lines.iter().enumerate() {
            let expected = format!("ingest: 0/2 files (0%), {} chunks embedded,", done + 1);
            assert!(
                line.starts_with(&expected),
                "{line:?} should start {expected:?}"
            );
        }
    }
}
