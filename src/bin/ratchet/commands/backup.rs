//! `ratchet backup`: a consistent copy of the store in a new file, taken beside running
//! writers (one read snapshot); never overwrites a file.

use crate::output::Output;
use crate::{exit, open_existing, DbArg, Failure};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct BackupArgs {
    #[command(flatten)]
    db: DbArg,
    /// The new file to write (an error if anything is there already).
    #[arg(value_name = "OUT")]
    out: PathBuf,
}

pub fn run(args: BackupArgs) -> Result<ExitCode, Failure> {
    if crate::is_postgres_url(&args.db.db) {
        return Err(Failure(
            "ratchet backup copies a redb file; back a PostgreSQL store up with the server's \
             own tools (pg_dump), or copy it into a file with `ratchet copy`"
                .to_string(),
        ));
    }
    let store = open_existing(&args.db)?;
    let backup = store.backup(&args.out)?;
    let mut out = Output::stdout();
    out.text_line(&format!(
        "backed up {} to {} at commit {} ({} tables, {} rows)",
        args.db.db.display(),
        backup.path.display(),
        backup.commit,
        backup.tables,
        backup.rows
    ))?;
    out.finish()?;
    Ok(exit::ok())
}
