//! `ratchet verify`: exit 0 iff every invariant holds; otherwise list every violation.

use crate::output::Output;
use crate::{exit, open_existing, DbArg, Failure};
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    db: DbArg,
    /// Print the report as one JSON object instead.
    #[arg(long)]
    json: bool,
}

pub fn run(args: VerifyArgs) -> Result<ExitCode, Failure> {
    let store = open_existing(&args.db)?;
    let report = store.verify()?;
    let mut out = Output::stdout();
    let checked = format!(
        "{} documents, {} tombstones, {} chunks, {} vectors",
        report.documents, report.tombstones, report.chunks, report.vectors
    );
    if args.json {
        out.json_line(&report)?;
    } else if report.is_ok() {
        out.text_line(&format!("ok: {checked}; every invariant holds"))?;
    } else {
        for violation in &report.violations {
            out.text_line(&format!("violation: {violation}"))?;
        }
        out.text_line(&format!(
            "FAILED: {} violations in {checked}",
            report.violations.len()
        ))?;
    }
    out.finish()?;
    Ok(if report.is_ok() {
        exit::ok()
    } else {
        exit::error()
    })
}
