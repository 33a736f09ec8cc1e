//! `ratchet verify`: exit 0 iff every invariant holds; otherwise list every violation.
//! `--deep` runs redb's integrity check (every page checksum) before the row checks.

use crate::output::{plural, Output};
use crate::{exit, open_existing, open_failure, DbArg, Failure};
use clap::Args;
use ratchetdb::{Options, Store};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    db: DbArg,
    /// Also run redb's integrity check first: the checksum of every page is verified, so a
    /// byte changed on disk (in a vector, a version number) is found, which the rows alone
    /// cannot show. It reads the whole file and needs to open it for writing; a damaged file
    /// is reported as corrupted (exit 1).
    #[arg(long)]
    deep: bool,
    /// Print the report as one JSON object instead.
    #[arg(long)]
    json: bool,
}

pub fn run(args: VerifyArgs) -> Result<ExitCode, Failure> {
    if crate::is_postgres_url(&args.db.db) {
        // A PostgreSQL store: the same checks against the server's tables (`--deep` is
        // about the redb file's pages and does not apply).
        let report = open_existing(&args.db)?.verify()?;
        return print(&report, args.json, "", "");
    }
    let store = if args.deep {
        // redb's integrity check needs the file open for writing: `--deep` takes the writer's
        // lock (waiting up to `--wait`) and is refused beside a running ingest.
        Store::open(
            &args.db.db,
            args.db.options(
                Options::default()
                    .must_exist()
                    .check_integrity_on_open(true),
            ),
        )
        .map_err(open_failure)?
    } else {
        open_existing(&args.db)?
    };
    let report = store.verify()?;
    let pages = if args.deep {
        " and every page checksum"
    } else {
        ""
    };
    // The vector spaces beside the default one, whose rows `verify` checked too.
    let spaces: String = store
        .spaces()?
        .iter()
        .skip(1)
        .map(|s| {
            format!(
                ", space {} {}",
                s.name,
                plural(s.vectors, "vector", "vectors")
            )
        })
        .collect();
    print(&report, args.json, pages, &spaces)
}

/// Prints the report; exit 0 iff it holds no violation.
fn print(
    report: &ratchetdb::VerifyReport,
    json: bool,
    pages: &str,
    spaces: &str,
) -> Result<ExitCode, Failure> {
    let mut out = Output::stdout();
    let checked = format!(
        "{}, {}, {}, {}{spaces}",
        plural(report.documents, "document", "documents"),
        plural(report.tombstones, "tombstone", "tombstones"),
        plural(report.chunks, "chunk", "chunks"),
        plural(report.vectors, "vector", "vectors"),
    );
    if json {
        out.json_line(report)?;
    } else if report.is_ok() {
        out.text_line(&format!("ok: {checked}; every invariant holds{pages}"))?;
    } else {
        for violation in &report.violations {
            out.text_line(&format!("violation: {violation}"))?;
        }
        out.text_line(&format!(
            "FAILED: {} in {checked}",
            plural(report.violations.len() as u64, "violation", "violations")
        ))?;
    }
    out.finish()?;
    Ok(if report.is_ok() {
        exit::ok()
    } else {
        exit::error()
    })
}
