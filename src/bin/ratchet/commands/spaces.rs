//! `ratchet spaces`: lists the store's vector spaces, and drops one (`drop NAME`); dropping
//! the default space promotes the active one in its place (`Store::drop_space`).

use crate::{exit, DbArg, Failure};
use clap::{Args, Subcommand};
use ratchetdb::{Options, Store};
use std::process::ExitCode;

pub const LONG_ABOUT: &str = "\
List the store's vector spaces (each embedder's vectors: model, dimension, coverage, the
active one marked), or drop one.

  ratchet spaces list --db index.redb
  ratchet spaces drop OLD --db index.redb        (a space that is not the active one)
  ratchet spaces drop default --db index.redb    (after `reembed --activate`: promotes)

Dropping a space other than the default one removes its vectors. Dropping the default space
(the store's own vectors) promotes the active space in its place, in one transaction: every
chunk's vector becomes its vector in that space, the store records that space's model and
dimension, and from then on `ingest` embeds with that model alone and `search` embeds
questions with it (the space's name still names it). Refused, changing nothing, while the
default space is the active one. `ratchet reembed ... --activate --drop-old` does both steps.";

#[derive(Args, Debug)]
pub struct SpacesArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand, Debug)]
enum Action {
    /// Each space: its name, model, dimension and coverage; the active one marked.
    List {
        #[command(flatten)]
        db: DbArg,
    },
    /// Drop space NAME (`default`: promote the active space in its place).
    Drop {
        /// The space to drop.
        #[arg(value_name = "NAME")]
        name: String,
        #[command(flatten)]
        db: DbArg,
    },
}

pub fn run(args: SpacesArgs) -> Result<ExitCode, Failure> {
    match args.action {
        Action::List { db } => {
            print_spaces(&crate::open_existing(&db)?)?;
        }
        Action::Drop { name, db } => {
            // An existing store only: a mistyped path is refused, not created empty.
            let store = Store::open(&db.db, db.options(Options::default().must_exist()))
                .map_err(crate::open_failure)?;
            drop_space(&store, &name)?;
            print_spaces(&store)?;
        }
    }
    Ok(exit::ok())
}

/// Drops space `name` of `store`, saying what went on stderr.
pub fn drop_space(store: &Store, name: &str) -> Result<(), Failure> {
    let active = store.spaces()?.into_iter().find(|s| s.active);
    let default = store.spaces()?.into_iter().next();
    let promotes =
        name == ratchetdb::DEFAULT_SPACE || default.as_ref().is_some_and(|d| d.name == name);
    let count = store.drop_space(name)?;
    match active.filter(|_| promotes) {
        Some(active) => eprintln!(
            "spaces: the default space's vectors were replaced by space {:?}'s ({count} vectors): \
             the store's model is now {} ({} dimensions)",
            active.name,
            active.model,
            active.dimension.unwrap_or(0)
        ),
        None => eprintln!("spaces: dropped space {name:?} ({count} vectors)"),
    }
    Ok(())
}

fn print_spaces(store: &Store) -> Result<(), Failure> {
    for space in store.spaces()? {
        println!(
            "{}{}\t{}\t{} dims\t{}/{} chunks",
            space.name,
            if space.active { " (active)" } else { "" },
            if space.model.is_empty() {
                "-"
            } else {
                &space.model
            },
            space.dimension.unwrap_or(0),
            space.vectors,
            space.live_chunks
        );
    }
    Ok(())
}
