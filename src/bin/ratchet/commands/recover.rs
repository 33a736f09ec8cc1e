//! `ratchet recover`: recovers a file a crashed or killed writer left (redb's repair, what a
//! writer's open does), writing nothing else. The read commands do it themselves when the
//! file is writable; this is the explicit step.

use crate::output::Output;
use crate::{exit, open_failure, DbArg, Failure};
use clap::Args;
use ratchetdb::Store;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct RecoverArgs {
    #[command(flatten)]
    db: DbArg,
}

pub fn run(args: RecoverArgs) -> Result<ExitCode, Failure> {
    if crate::is_postgres_url(&args.db.db) {
        return Err(Failure(
            "ratchet recover is for a redb file; a PostgreSQL server recovers itself".to_string(),
        ));
    }
    let recovered = Store::recover(&args.db.db).map_err(open_failure)?;
    let mut out = Output::stdout();
    if recovered {
        out.text_line(&crate::recovered_notice(&args.db.db))?;
    } else {
        out.text_line(&format!(
            "{} needed no recovery (it was closed cleanly, or its writer has it open)",
            args.db.db.display()
        ))?;
    }
    out.finish()?;
    Ok(exit::ok())
}
