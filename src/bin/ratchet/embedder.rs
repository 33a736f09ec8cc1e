//! Which embedder a command uses, and the one-line errors when a store disagrees.
//!
//! A new store (folder `ingest`, `demo`) gets all-MiniLM-L6-v2 when a model folder is
//! configured (`--model DIR`, else `RATCHET_MODEL`), and the built-in lexical hashing embedder
//! otherwise: which embedder fills a store is the user's choice, made once, and ratchet never
//! goes looking for a model for a new store. An existing store is followed, by `ingest` and
//! `search` alike: the model name it recorded says which embedder made its vectors, and for
//! MiniLM the model folder is found the same way (`--model`, `RATCHET_MODEL`, then the
//! installed model). An explicit `--model` that does not exist, or that a hashing store
//! cannot use, is an error rather than ignored. A hashing store with a MiniLM space (after
//! `ratchet reembed --model DIR`) takes `--model` for that space: its default space keeps
//! the hashing embedder, and the space's vectors come from the model in DIR.

use crate::Failure;
pub use ratchetdb::MINILM_NAME;
use ratchetdb::{Embedder, HashingEmbedder, Metric, OpenError, Options, Store};
use std::path::{Path, PathBuf};

/// The prefix of the hashing embedder's names (`hash-lexical-v1-<dimension>`).
const HASHING_PREFIX: &str = "hash-lexical-v1-";

/// How to build ratchet with MiniLM.
const BUILD_HINT: &str = "rebuild ratchet with `cargo build --release --features minilm`";

/// The model folder from `--model`, else from `RATCHET_MODEL` (unset or empty: none).
pub fn configured_model_dir(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf).or_else(|| {
        std::env::var_os("RATCHET_MODEL")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    })
}

/// The embedder for new vectors: MiniLM from `model_dir`, or the hashing embedder.
pub fn for_ingest(model_dir: Option<&Path>) -> Result<Box<dyn Embedder>, Failure> {
    match model_dir {
        Some(dir) => {
            check_model_dir(dir)?;
            load_minilm(dir)
        }
        None => Ok(Box::new(HashingEmbedder::default())),
    }
}

/// A model folder that is not there is named as such (before a loader reports a file in it
/// missing).
fn check_model_dir(dir: &Path) -> Result<(), Failure> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Failure(format!(
            "the model folder {} (--model or RATCHET_MODEL) is a file; give the folder that \
             holds config.json, tokenizer.json and model.safetensors",
            dir.display()
        ))),
        Err(e) => Err(Failure(format!(
            "no model folder at {} (--model or RATCHET_MODEL): {e}; check the path ({})",
            dir.display(),
            ratchetdb::MODEL_INSTALL_HINT
        ))),
    }
}

/// Folder `ingest`: the store at `db` (created if missing) and the embedder for it. An
/// existing store that records its embedder is followed (see the module documentation); a
/// new or still empty one gets the configured embedder.
pub fn for_folder_ingest(
    db: &Path,
    model_flag: Option<&Path>,
    base: &Options,
) -> Result<(Store, Box<dyn Embedder>), Failure> {
    if crate::store_exists(db) {
        let existing = Store::open(db, base.clone()).map_err(crate::open_failure)?;
        let runnable = existing
            .model()
            .filter(|name| is_lexical(name) || *name == MINILM_NAME)
            .map(str::to_string);
        if let Some(recorded) = runnable {
            // `--model` on a hashing store is for its MiniLM space, when it has one
            // (`for_spaces` loads it); the default space keeps the hashing embedder.
            let flag = if is_lexical(&recorded) && has_minilm_space(&existing) {
                None
            } else {
                model_flag
            };
            let embedder = for_store(db, Some(&recorded), flag)?;
            if let Some(stored) = existing.dimension().filter(|d| *d != embedder.dimension()) {
                return Err(open_failure(
                    db,
                    embedder.name(),
                    OpenError::Mismatch {
                        field: "dimension",
                        stored: stored.to_string(),
                        requested: embedder.dimension().to_string(),
                    },
                ));
            }
            drop(existing);
            let store = open_store(db, embedder.as_ref(), base)?;
            return Ok((store, embedder));
        }
        drop(existing);
    }
    let embedder = for_ingest(configured_model_dir(model_flag).as_deref())?;
    let store = open_store(db, embedder.as_ref(), base)?;
    Ok((store, embedder))
}

/// Whether `store` has a vector space of MiniLM vectors besides its default one.
fn has_minilm_space(store: &Store) -> bool {
    store
        .spaces()
        .is_ok_and(|spaces| spaces.iter().skip(1).any(|s| s.model == MINILM_NAME))
}

#[cfg(feature = "minilm")]
fn load_minilm(dir: &Path) -> Result<Box<dyn Embedder>, Failure> {
    match ratchetdb::MiniLmEmbedder::load(dir) {
        Ok(embedder) => Ok(Box::new(embedder)),
        Err(e) => Err(Failure(format!("{e} (--model DIR or RATCHET_MODEL)"))),
    }
}

#[cfg(not(feature = "minilm"))]
fn load_minilm(dir: &Path) -> Result<Box<dyn Embedder>, Failure> {
    Err(Failure(format!(
        "a MiniLM model folder was given ({}, from --model or RATCHET_MODEL), but this ratchet \
         was built without MiniLM support: {BUILD_HINT}, or unset RATCHET_MODEL and drop --model \
         to use the built-in lexical hashing embedder",
        dir.display()
    )))
}

/// Whether `name` is one of the built-in hashing embedders.
pub fn is_lexical(name: &str) -> bool {
    name.starts_with(HASHING_PREFIX)
}

/// The embedder's name with what kind of search it gives, for output.
pub fn describe(name: &str) -> String {
    if is_lexical(name) {
        format!("{name} (built-in, lexical: it matches words and spellings, not meaning; --model DIR for MiniLM)")
    } else if name == MINILM_NAME {
        format!("{name} (semantic)")
    } else {
        name.to_string()
    }
}

/// The embedder that made a store's vectors, to embed a query the same way.
pub fn for_store(
    db: &Path,
    recorded: Option<&str>,
    model_flag: Option<&Path>,
) -> Result<Box<dyn Embedder>, Failure> {
    let db = ratchetdb::redact_address(db);
    let Some(name) = recorded else {
        return Err(Failure(format!(
            "{db} records no embedding model (its vectors came from --jsonl), so a text query \
             cannot be embedded; pass the query's vector with --vector '[…]'"
        )));
    };
    if let Some(dimension) = name.strip_prefix(HASHING_PREFIX) {
        if let Some(flag) = model_flag {
            return Err(Failure(format!(
                "{db} was built with the built-in hashing embedder {name}, so --model {} does \
                 not apply (a store keeps the embedder it was built with); drop --model",
                flag.display()
            )));
        }
        let dimension = dimension.parse().map_err(|_| {
            Failure(format!(
                "{db} records the model {name:?}, which this ratchet does not know"
            ))
        })?;
        return HashingEmbedder::new(dimension)
            .map(|e| Box::new(e) as Box<dyn Embedder>)
            .map_err(Failure::from);
    }
    if name == MINILM_NAME {
        if !cfg!(feature = "minilm") {
            return Err(Failure(format!(
                "{db} was built with {MINILM_NAME}, but this ratchet was built without MiniLM \
                 support: {BUILD_HINT}"
            )));
        }
        return match minilm_dir_for_search(model_flag) {
            Some(dir) => {
                check_model_dir(&dir)?;
                load_minilm(&dir)
            }
            None => Err(Failure(format!(
                "{db} was built with {MINILM_NAME}; pass --model DIR (or set RATCHET_MODEL) ({})",
                ratchetdb::MODEL_INSTALL_HINT
            ))),
        };
    }
    Err(Failure(format!(
        "{db}'s vectors come from the model {name:?}, which ratchet cannot run; pass the \
         query's vector with --vector '[…]'"
    )))
}

/// For a store that says it holds MiniLM vectors, looking for the model is no guess.
#[cfg(feature = "minilm")]
fn minilm_dir_for_search(flag: Option<&Path>) -> Option<PathBuf> {
    configured_model_dir(flag).or_else(|| ratchetdb::locate_model(None))
}

#[cfg(not(feature = "minilm"))]
fn minilm_dir_for_search(flag: Option<&Path>) -> Option<PathBuf> {
    configured_model_dir(flag)
}

/// Opens (or creates) the store at `db` for vectors from `embedder`: a new store records the
/// embedder's name, dimension and the cosine metric; an existing one must agree, else one
/// line saying what to do. `base`: the options of `--wait` and `--memory-budget`.
pub fn open_store(db: &Path, embedder: &dyn Embedder, base: &Options) -> Result<Store, Failure> {
    let name = embedder.name();
    if crate::store_exists(db) {
        // A store written through --jsonl without --model holds vectors of unknown origin;
        // recording this embedder's name on it would mix two embedding spaces silently.
        let existing = Store::open(db, base.clone()).map_err(|e| open_failure(db, name, e))?;
        if existing.model().is_none() && existing.dimension().is_some() {
            return Err(Failure(format!(
                "{} holds vectors from an unrecorded model (written with --jsonl), so {name} \
                 cannot be added to it; use another --db",
                ratchetdb::redact_address(db)
            )));
        }
        // The model first: it says more than the dimension that follows from it.
        if let Some(stored) = existing.model().filter(|stored| *stored != name) {
            return Err(open_failure(
                db,
                name,
                OpenError::Mismatch {
                    field: "model",
                    stored: stored.to_string(),
                    requested: name.to_string(),
                },
            ));
        }
        if existing.model() == Some(name) && existing.dimension() == Some(embedder.dimension()) {
            return Ok(existing);
        }
    }
    let options = base
        .clone()
        .model(name)
        .dimension(embedder.dimension())
        .metric(Metric::Cosine);
    Store::open(db, options).map_err(|e| open_failure(db, name, e))
}

/// One line for a store that cannot take this embedder's vectors.
fn open_failure(db: &Path, name: &str, error: OpenError) -> Failure {
    let db = ratchetdb::redact_address(db);
    match error {
        OpenError::Mismatch {
            field: "model",
            stored,
            ..
        } => {
            let what_to_do = if stored == MINILM_NAME {
                format!("pass --model DIR (or set RATCHET_MODEL) to use {MINILM_NAME}")
            } else if is_lexical(&stored) {
                "drop --model and unset RATCHET_MODEL to use the built-in hashing embedder"
                    .to_string()
            } else {
                "ratchet cannot compute its vectors; ingest with --jsonl and your own vectors"
                    .to_string()
            };
            Failure(format!(
                "{db} was built with the embedder {stored}, not {name}: {what_to_do}, or use another --db"
            ))
        }
        OpenError::Mismatch {
            field: "dimension",
            stored,
            requested,
        } => Failure(format!(
            "{db} holds {stored}-dimensional vectors, but {name} makes {requested}-dimensional ones; \
             use another --db (one store holds one embedding space)"
        )),
        OpenError::Mismatch {
            field: "metric",
            stored,
            ..
        } => Failure(format!(
            "{db} compares vectors by {stored}, but embedders need cosine; use another --db"
        )),
        other => crate::open_failure(other),
    }
}

/// A vector space's name and the embedder of its model.
pub type SpaceEmbedder = (String, Box<dyn Embedder>);

/// The embedders of `store`'s vector spaces beside the default one that ratchet can run (the
/// hashing embedder of any width; MiniLM, found as for a search), by space name, for
/// `ingest` to embed new chunks for them too. A space whose model cannot be loaded is left
/// out with a warning: a new revision needs its vectors only once it is complete (then the
/// write is refused and reported), and `ratchet reembed` fills it in otherwise. An explicit
/// `--model` (`model_flag`) is for the MiniLM spaces: one it cannot load for them is an
/// error, as it is for a MiniLM store, not a warning.
pub fn for_spaces(
    store: &Store,
    db: &Path,
    model_flag: Option<&Path>,
    progress: &crate::progress::Progress,
) -> Result<Vec<SpaceEmbedder>, Failure> {
    let Ok(spaces) = store.spaces() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for space in spaces.into_iter().skip(1) {
        let flag = if is_lexical(&space.model) {
            None
        } else {
            model_flag
        };
        match for_store(db, Some(&space.model), flag) {
            Ok(embedder) if Some(embedder.dimension()) == space.dimension => {
                out.push((space.name, embedder))
            }
            Err(Failure(why)) if flag.is_some() && space.model == MINILM_NAME => {
                let why = if cfg!(feature = "minilm") {
                    why
                } else {
                    format!("this ratchet was built without MiniLM support: {BUILD_HINT}")
                };
                return Err(Failure(format!(
                    "--model is for the space {:?} ({MINILM_NAME}) of {}, but {why}",
                    space.name,
                    ratchetdb::redact_address(db)
                )));
            }
            Ok(_) | Err(_) => progress.println(&format!(
                "warning: the space {:?} ({}) cannot be embedded by this ratchet: new chunks get no \
                 vector there (`{} reembed` fills them in)",
                space.name,
                space.model,
                crate::program_name()
            )),
        }
    }
    Ok(out)
}
