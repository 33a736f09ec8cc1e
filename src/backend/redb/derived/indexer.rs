//! The lifecycle owner of the derived state (see [`super`]): loading the vector index in
//! the background after an open, applying each commit's vector changes, building,
//! absorbing into and persisting the graph, following another process's writer, and
//! bringing the vector index, the filter index and the text cache to a search's snapshot
//! (each through [`super::bring_to`]) before they answer for it.
//!
//! [`Indexer`] owns it all, with one explicit [`IndexState`]. It reaches the file only
//! through its [`Engine`]; background threads hold a [`Background`] (a weak reference and
//! the closing gate), never a `Store`.
//!
//! Invariant: background index threads never hold the file open: they reach the indexer
//! only inside [`Background::with`] sections, which end before the last `Store` handle's
//! drop returns.
//! Invariant: searches never depend on background work: each brings the index up to its own
//! snapshot first, and answers exactly while the index is loading.

use crate::backend::redb::derived::filter_index::FilterCache;
use crate::backend::redb::derived::live_index::{self, LiveIndex};
use crate::backend::redb::engine::{Engine, Finish};
use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{self, meta_key, META};
use crate::error::{ReadError, WriteError};
use crate::index::{Workers, EXACT_THRESHOLD};
use crate::options::Metric;
use crate::search::SearchOptions;
use crate::types::Hit;
use crate::types::IndexInfo;
use crate::types::VerifyReport;
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Closing: background threads use the indexer only inside sections of this gate, so when
/// the last user handle drops, it waits for a running section and then shuts the gate;
/// the file is closed (and its lock freed) by the time that drop returns.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    closed: RwLock<bool>,
}

impl Gate {
    /// Waits for running sections, then refuses every later one.
    pub(crate) fn close(&self) {
        *self.closed.write() = true;
    }
}

/// What a background thread holds: no strong reference, so it never keeps the file open.
#[derive(Clone)]
pub(crate) struct Background {
    indexer: Weak<Indexer>,
    gate: Arc<Gate>,
}

impl Background {
    /// Runs `f` on the indexer if the store is still open.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&Indexer) -> R) -> Option<R> {
        let closed = self.gate.closed.read();
        if *closed {
            return None;
        }
        let indexer = self.indexer.upgrade()?;
        let result = f(&indexer);
        drop(indexer);
        drop(closed);
        Some(result)
    }
}

/// Where the derived index is in its life.
pub(crate) enum IndexState {
    /// Nothing loaded, no loader running (the dimension may be unknown yet). Searches scan
    /// the file.
    Unloaded,
    /// A loader is reading the vectors (in the background, or a foreground `build_index`).
    Loading,
    /// The index holds the live vectors of some commit and follows the changelog.
    Loaded(Arc<LiveIndex>),
}

/// The lifecycle owner of one store's derived state: the vector index and the filter index
/// it holds, and the engine's text cache, each brought to a search's snapshot before it
/// answers.
pub(crate) struct Indexer {
    me: Weak<Indexer>,
    state: RwLock<IndexState>,
    /// The derived metadata index filtered searches evaluate their filter on, built by the
    /// first one.
    filters: FilterCache,
    /// The text index inverted in memory, which text searches score on, built by the first
    /// one.
    pub(crate) text_cache: crate::backend::redb::derived::text_cache::TextCache,
    /// The indexes of the vector spaces other than the default one, each loaded by the
    /// first search of its space.
    pub(crate) spaces: crate::backend::redb::derived::space_index::SpaceIndexes,
    /// Wakes the index applier after a commit that changed vectors (see
    /// [`Indexer::after_commit`]); started with the first such commit.
    applier: Mutex<Option<crossbeam_channel::Sender<()>>>,
    /// Passes asked of the applier, and the request count the last finished pass covered
    /// (equal: the applier is idle and holds no read snapshot).
    apply_requested: AtomicU64,
    apply_done: AtomicU64,
    /// Held by each applier or follower pass (see [`Indexer::apply_pass`]).
    passes: Mutex<()>,
    /// Held by a `build_index` under a memory budget (see [`Indexer::build_budgeted`]).
    budgeted_builds: Mutex<()>,
    /// The budgeted indexes this store held at once, at most (the crate's own tests).
    #[cfg(test)]
    pub(crate) budgeted: Arc<BudgetedGauge>,
    /// Told when a budgeted `build_index` begins (the crate's own tests).
    #[cfg(test)]
    pub(crate) build_entered: Mutex<Option<crossbeam_channel::Sender<()>>>,
    /// Where a budgeted `build_index` waits after its load, before it publishes and catches
    /// up (the crate's own tests: what it signals, and what it waits for).
    #[cfg(test)]
    #[allow(clippy::type_complexity)]
    pub(crate) build_pause: Mutex<
        Option<(
            crossbeam_channel::Sender<()>,
            crossbeam_channel::Receiver<()>,
        )>,
    >,
    gate: Arc<Gate>,
    /// Last, so it drops last: the store's last handle drops the indexer, whose engine is
    /// then the last reference, and the engine's drop compacts the file
    /// (`open::compact_on_close`). Declared first, the index, filters and text cache stayed
    /// resident through the compaction, which added its own memory to theirs.
    pub(crate) engine: Arc<Engine>,
}

impl Drop for Indexer {
    fn drop(&mut self) {
        self.stop_background();
    }
}

impl Indexer {
    /// The indexer of `engine`, installed as its change hook; starts loading the index (if
    /// the dimension is known) and, for a read-only engine, following the writer.
    pub(crate) fn start(engine: Arc<Engine>, gate: Arc<Gate>) -> Arc<Indexer> {
        let indexer = Arc::new_cyclic(|me| Indexer {
            engine: engine.clone(),
            me: me.clone(),
            state: RwLock::new(IndexState::Unloaded),
            filters: FilterCache::default(),
            text_cache: Default::default(),
            spaces: Default::default(),
            applier: Mutex::new(None),
            apply_requested: AtomicU64::new(0),
            apply_done: AtomicU64::new(0),
            passes: Mutex::new(()),
            budgeted_builds: Mutex::new(()),
            #[cfg(test)]
            budgeted: Default::default(),
            #[cfg(test)]
            build_entered: Mutex::new(None),
            #[cfg(test)]
            build_pause: Mutex::new(None),
            gate,
        });
        let hook = Arc::downgrade(&indexer);
        engine.set_change_hook(Box::new(move || {
            if let Some(indexer) = hook.upgrade() {
                indexer.after_commit();
            }
        }));
        indexer.start_index();
        if engine.is_read_only() {
            indexer.start_follower();
        }
        indexer
    }

    /// The store is closing: a background build or absorber (which holds the index itself,
    /// not the indexer) stops rather than finish a graph nobody will search.
    pub(crate) fn stop_background(&self) {
        if let IndexState::Loaded(live) = &*self.state.read() {
            live.index.close();
            if let Some(budget) = &live.budget {
                budget.close();
            }
        }
        self.spaces.close();
    }

    /// Unpublishes `live` if it is the index published (`Unloaded`: the next commit or
    /// search may start a load).
    fn unpublish(&self, live: &Arc<LiveIndex>) {
        let mut state = self.state.write();
        if matches!(&*state, IndexState::Loaded(now) if Arc::ptr_eq(now, live)) {
            *state = IndexState::Unloaded;
        }
    }

    /// A loader ended without publishing an index: the next commit or search may start one.
    fn loading_failed(&self) {
        let mut state = self.state.write();
        if matches!(*state, IndexState::Loading) {
            *state = IndexState::Unloaded;
        }
    }

    /// After a commit that changed the set of vectors: wakes the index applier, which
    /// brings the derived index up to the new commit off the writing thread (a committer
    /// goes straight on to its next batch). Wakes coalesce: one pass applies every commit
    /// made before it started. Searches never depend on it: each brings the index up to
    /// its own snapshot first.
    pub(crate) fn after_commit(&self) {
        if self.live().is_none() {
            self.start_index();
            return;
        }
        let mut applier = self.applier.lock();
        if applier.is_none() {
            let (wake, woken) = crossbeam_channel::bounded::<()>(1);
            let background = self.background();
            let spawned = std::thread::Builder::new()
                .name("ratchetdb-apply".into())
                .spawn(move || {
                    // Ends when the store closes: its sender drops with it.
                    for () in woken {
                        let pass = background.with(|ix| ix.apply_pass(false));
                        if pass.is_none() {
                            return;
                        }
                    }
                });
            match spawned {
                Ok(_) => *applier = Some(wake),
                // No thread: apply here, as the writer.
                Err(_) => {
                    drop(applier);
                    self.apply_committed();
                    return;
                }
            }
        }
        self.apply_requested.fetch_add(1, Ordering::SeqCst);
        if let Some(wake) = applier.as_ref() {
            // Full: a wake is already pending and will cover this commit.
            let _ = wake.try_send(());
        }
    }

    /// Brings the derived index up to the latest commit, and starts a graph rebuild (many
    /// dead points) or absorbs new vectors into the graph in the background.
    fn apply_committed(&self) {
        let Some(live) = self.live() else {
            self.start_index();
            return;
        };
        let caught_up = self.engine.snapshot().and_then(|snapshot| {
            // Best effort: a space index kept longer only costs memory.
            let _ = self.forget_dropped_spaces(&snapshot);
            live.catch_up(&snapshot)
        });
        if !matches!(caught_up, Ok(true)) {
            // The changelog could not bring it up to date: load it again from the vectors.
            // Only this index: a budgeted build may have unpublished it meanwhile, and its
            // `Loading` is its own (a second load beside it would hold two indexes).
            self.unpublish(&live);
            drop(live);
            self.start_index();
            return;
        }
        if maintenance_due(&live).is_some() && !live.building.swap(true, Ordering::SeqCst) {
            let background = self.background();
            let worker = live.clone();
            let spawned = std::thread::Builder::new()
                .name("ratchetdb-index".into())
                .spawn(move || maintain_index(&background, &worker));
            if spawned.is_err() {
                // No thread: searches stay correct (outside ids are scored exactly).
                live.building.store(false, Ordering::SeqCst);
            }
        }
    }

    fn background(&self) -> Background {
        Background {
            indexer: self.me.clone(),
            gate: self.gate.clone(),
        }
    }

    /// The loaded index, if it is loaded.
    pub(crate) fn live(&self) -> Option<Arc<LiveIndex>> {
        match &*self.state.read() {
            IndexState::Loaded(live) => Some(live.clone()),
            IndexState::Unloaded | IndexState::Loading => None,
        }
    }

    /// Starts loading the index in the background, once the dimension is known. Opening
    /// never waits for it: until it is loaded, searches scan the file (exact, slower).
    fn start_index(&self) {
        let Some(dimension) = self.engine.dimension() else {
            return;
        };
        {
            let mut state = self.state.write();
            if !matches!(*state, IndexState::Unloaded) {
                return;
            }
            *state = IndexState::Loading;
        }
        let background = self.background();
        let metric = self.engine.metric();
        let spawned = std::thread::Builder::new()
            .name("ratchetdb-index-load".into())
            .spawn(move || load_index(background, dimension, metric));
        if spawned.is_err() {
            self.loading_failed();
        }
    }

    /// A search over one snapshot the index covers exactly (see `Store::search`).
    pub(crate) fn search(
        &self,
        query: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        self.search_then(query, k, options, |_, hits| Ok(hits))
    }

    /// [`Indexer::search`], handing its hits and the snapshot they were resolved against to
    /// `then` (hybrid search runs its text search on that same snapshot).
    pub(crate) fn search_then<T>(
        &self,
        query: &[f32],
        k: usize,
        options: &SearchOptions,
        then: impl FnMut(&Snapshot, Vec<Hit>) -> Result<T, ReadError>,
    ) -> Result<T, ReadError> {
        crate::search::check_bounds(k, options, &self.engine.options().limits)?;
        self.search_then_unbounded(query, k, options, then)
    }

    /// [`Indexer::search_then`] without the check of `k` against `Limits::max_k` (hybrid
    /// search widens its rankings past it, per document; the caller checked its own `k`).
    fn search_then_unbounded<T>(
        &self,
        query: &[f32],
        k: usize,
        options: &SearchOptions,
        mut then: impl FnMut(&Snapshot, Vec<Hit>) -> Result<T, ReadError>,
    ) -> Result<T, ReadError> {
        if let Some(answer) = self.search_space_then(query, k, options, &mut then)? {
            return Ok(answer);
        }
        let metric = self.engine.metric();
        // The query is checked against each snapshot's own dimension (a promotion changes
        // it); prepared again only when a retry's snapshot records another.
        let prepare = |dimension: Option<usize>| {
            crate::search::prepare_query(query, metric, dimension, &self.engine.options().limits)
        };
        let mut prepared: Option<(Option<usize>, Vec<f32>)> = None;
        let mut query_at = |snapshot: &Snapshot| -> Result<Vec<f32>, ReadError> {
            match &prepared {
                Some((dimension, query)) if *dimension == snapshot.dimension => Ok(query.clone()),
                _ => {
                    let query = prepare(snapshot.dimension)?;
                    prepared = Some((snapshot.dimension, query.clone()));
                    Ok(query)
                }
            }
        };
        // The index must cover exactly the snapshot's commit for the whole search: an index
        // ahead of it (a commit applied meanwhile) has already dropped vectors the snapshot
        // still holds live, and the search would miss them (a document being rewritten
        // would come back partly, or not at all). Optimistic: check before and after, and
        // retry on a newer snapshot if a commit was applied in between.
        for _ in 0..SEARCH_ATTEMPTS {
            let snapshot = self.engine.search_snapshot()?;
            let query = query_at(&snapshot)?;
            let live = match self.live() {
                Some(live) if !live.catch_up(&snapshot)? => None,
                live => live,
            };
            let Some(live) = live else {
                // No index that can serve (loading, or loading again): the snapshot is
                // scanned, its filter evaluated on the shared filter index (one built for
                // each search was a whole index of the store's chunks per query, for as
                // long as the index loads, under a budget too).
                let Some(matching) = self.shared_matching(&snapshot, options)? else {
                    continue;
                };
                let hits = crate::backend::redb::derived::search::search(
                    &snapshot, None, None, &query, k, options, metric, matching, None,
                )?;
                return then(&snapshot, hits);
            };
            let seq = snapshot.commit()?;
            if live.applied() != seq {
                continue;
            }
            // The filter index, brought up to the snapshot too (a newer search may have
            // taken it past it: then retry on a newer snapshot, as for the vector index).
            let Some(matching) = self.shared_matching(&snapshot, options)? else {
                continue;
            };
            let hits = crate::backend::redb::derived::search::search(
                &snapshot,
                Some(&live.index),
                live.budget.as_ref(),
                &query,
                k,
                options,
                metric,
                matching,
                None,
            )?;
            if live.applied() == seq {
                return then(&snapshot, hits);
            }
        }
        // Commits keep landing faster than a search: scan the snapshot itself (exact).
        let snapshot = self.engine.snapshot()?;
        let query = query_at(&snapshot)?;
        let hits = crate::backend::redb::derived::search::search(
            &snapshot, None, None, &query, k, options, metric, None, None,
        )?;
        then(&snapshot, hits)
    }

    /// A search of a space other than the default one (`options.space`, or the active
    /// space of the search's snapshot), on that space's index brought up to the snapshot;
    /// `None` when the space is the default one (the caller searches it).
    fn search_space_then<T>(
        &self,
        query: &[f32],
        k: usize,
        options: &SearchOptions,
        then: &mut impl FnMut(&Snapshot, Vec<Hit>) -> Result<T, ReadError>,
    ) -> Result<Option<T>, ReadError> {
        use crate::backend::redb::spaces;
        let metric = self.engine.metric();
        let params = self.engine.options().index;
        for attempt in 0..=SEARCH_ATTEMPTS {
            // The last attempt reads a snapshot of its own: commits kept landing.
            let snapshot = if attempt == SEARCH_ATTEMPTS {
                Arc::new(self.engine.snapshot()?)
            } else {
                self.engine.search_snapshot()?
            };
            let (name, named) = match &options.space {
                Some(name) => (name.clone(), true),
                None => (spaces::active_space(&snapshot)?, false),
            };
            if spaces::is_default(&snapshot, &name)? {
                return Ok(None);
            }
            let Some(row) = spaces::space_row(&snapshot, &name)? else {
                if !named {
                    // The file's active space names no space: the caller gave no `space`,
                    // so this is the file's fault, not an input to correct.
                    return Err(crate::error::Corruption::new(
                        "meta table",
                        format!("the active space {name:?} names no vector space of this store"),
                    )
                    .into());
                }
                return Err(crate::error::InputError::new(
                    "space",
                    format!(
                        "{name:?} names no vector space of this store (Store::spaces lists them)"
                    ),
                )
                .into());
            };
            let dimension = row.dimension as usize;
            let query = crate::search::prepare_query(
                query,
                metric,
                Some(dimension),
                &self.engine.options().limits,
            )
            .map_err(|e| match e {
                ReadError::Input(e) => ReadError::Input(crate::error::InputError::new(
                    e.field,
                    e.problem
                        .replace("this store holds", &format!("space {name:?} holds")),
                )),
                other => other,
            })?;
            // The last attempt, too, scans: commits kept landing, and an index loaded for
            // its snapshot alone (a whole copy of the space, with a graph build behind it
            // that nothing stopped) was thrown away after one search.
            if self.engine.options().memory_budget.is_some() || attempt == SEARCH_ATTEMPTS {
                // Under a memory budget no space's vectors are held in memory: its rows are
                // scanned in this snapshot (exact), within the page cache's share. A filter
                // is evaluated on the shared filter index, as the unbudgeted search does:
                // one built for the search (what `search` does without one) was a whole
                // index of the store's chunks per query, outside the budget.
                let matching = match self.shared_matching(&snapshot, options)? {
                    Some(matching) => matching,
                    // Commits kept landing: this last snapshot's own.
                    None if attempt == SEARCH_ATTEMPTS => None,
                    None => continue,
                };
                let hits = crate::backend::redb::derived::search::search(
                    &snapshot,
                    None,
                    None,
                    &query,
                    k,
                    options,
                    metric,
                    matching,
                    Some(row.id),
                )?;
                return then(&snapshot, hits).map(Some);
            }
            let Some(index) = self
                .spaces
                .at(&snapshot, row.id, dimension, metric, params)?
            else {
                continue;
            };
            let seq = snapshot.commit()?;
            let matching = match self.shared_matching(&snapshot, options)? {
                Some(matching) => matching,
                None if attempt == SEARCH_ATTEMPTS => None,
                None => continue,
            };
            let hits = crate::backend::redb::derived::search::search(
                &snapshot,
                Some(&index.index),
                None,
                &query,
                k,
                options,
                metric,
                matching,
                None,
            )?;
            if index.applied() == seq {
                return then(&snapshot, hits).map(Some);
            }
        }
        Err(ReadError::Corrupted {
            what: "vector space index".into(),
            detail: "a space's index loaded for one snapshot covers another".into(),
        })
    }

    /// The chunks `options.filter` matches at `snapshot`'s commit, on the shared filter
    /// index: `Some(None)` without a filter, `None` when the index covers a newer commit
    /// (the caller retries on a newer snapshot).
    #[allow(clippy::type_complexity)]
    fn shared_matching<'s>(
        &'s self,
        snapshot: &Snapshot,
        options: &SearchOptions,
    ) -> Result<Option<Option<crate::backend::redb::derived::filter_index::Matching<'s>>>, ReadError>
    {
        match &options.filter {
            Some(filter) => Ok(self.filters.evaluate(snapshot, filter)?.map(Some)),
            None => Ok(Some(None)),
        }
    }

    /// The filter index's chunks matching `filter` at `snapshot`'s commit (`None`: it
    /// covers another commit).
    pub(crate) fn matching<'s>(
        &'s self,
        snapshot: &Snapshot,
        filter: &crate::policy::filter::Filter,
    ) -> Result<Option<crate::backend::redb::derived::filter_index::Matching<'s>>, ReadError> {
        self.filters.evaluate(snapshot, filter)
    }

    /// [`Indexer::search`] for every query, spread over the cores (rayon's pool); an error
    /// names the query (`queries[3]`).
    pub(crate) fn search_many<Q: AsRef<[f32]> + Sync>(
        &self,
        queries: &[Q],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Vec<Hit>>, ReadError> {
        use rayon::prelude::*;
        crate::search::check_bounds(k, options, &self.engine.options().limits)?;
        queries
            .par_iter()
            .enumerate()
            .map(|(i, query)| {
                crate::backend::redb::contain::contain(ReadError::contained, || {
                    self.search(query.as_ref(), k, options)
                })
                .map_err(|error| match error {
                    ReadError::Input(e) if e.field.starts_with("query") => {
                        ReadError::Input(crate::error::InputError::new(
                            e.field.replacen("query", &format!("queries[{i}]"), 1),
                            e.problem,
                        ))
                    }
                    other => other,
                })
            })
            .collect()
    }

    /// What the derived index is doing.
    pub(crate) fn index_info(&self) -> IndexInfo {
        let space_vectors = self
            .spaces
            .all()
            .iter()
            .map(|(_, space)| space.index.len_live() as u64)
            .sum();
        match self.live() {
            None => IndexInfo {
                space_vectors,
                ..IndexInfo::default()
            },
            Some(live) => IndexInfo {
                loaded: true,
                graph_ready: live.budget.is_some() || live.index.graph_ready(),
                building: live.building.load(Ordering::SeqCst),
                live_vectors: live.len_live() as u64,
                dead_fraction: live
                    .budget
                    .as_ref()
                    .map_or_else(|| live.index.dead_fraction(), |b| b.dead_fraction()),
                applied_commit: live.applied(),
                graph_points: live
                    .budget
                    .as_ref()
                    .map_or_else(|| live.index.graph_point_count(), |b| b.point_count())
                    as u64,
                outside_vectors: live.index.outside_count() as u64,
                persisted_points: live.persisted_points.load(Ordering::SeqCst) as u64,
                budgeted_bytes: live.budget.as_ref().map_or(0, |b| b.resident_bytes()),
                memory_budget: self.engine.options().memory_budget.unwrap_or(0),
                space_vectors,
                loaded_from_file: live.from_file.load(Ordering::SeqCst),
            },
        }
    }

    /// Waits until the index has loaded, covers the latest commit, and no applier pass,
    /// graph build or load is running; `false` on timeout. Searches never need this (they
    /// bring the index up to their own snapshot, and answer exactly meanwhile); tests and
    /// benchmarks do, and so does anything that needs the file's I/O to be deterministic
    /// (background passes hold read snapshots, which change the pages a commit reuses).
    pub(crate) fn wait_for_index(&self, timeout: Duration) -> bool {
        // A timeout too long for the clock (`Duration::MAX`) has no deadline.
        let deadline = Instant::now().checked_add(timeout);
        loop {
            // Idle first: a pass that starts a graph build marks it building before it
            // counts itself done, so `info` read after this sees the build. Under the
            // applier's lock, which a commit holds while it counts a request and wakes the
            // applier: a wake still queued means a pass is still to come.
            let idle = {
                let applier = self.applier.lock();
                let queued = applier.as_ref().is_some_and(|wake| !wake.is_empty());
                !queued
                    && self.apply_done.load(Ordering::SeqCst)
                        >= self.apply_requested.load(Ordering::SeqCst)
            };
            let info = self.index_info();
            if self.engine.dimension().is_none() {
                return true;
            }
            let latest = self
                .engine
                .snapshot()
                .and_then(|snapshot| snapshot.commit());
            // A snapshot that cannot be taken leaves nothing to wait for.
            let applied = latest.map_or(true, |seq| info.applied_commit >= seq);
            if info.loaded && !info.building && applied && idle {
                return true;
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Builds the ANN graph now (in this thread) from the live vectors, and persists it in
    /// the file so the next open loads it instead of building it again. A build that fails
    /// (inside the graph library, or as the store closes) is [`ReadError::IndexBuild`];
    /// nothing stored changes, and searches go on over the previous graph (or exactly). A
    /// graph built whose snapshot could not be written (the disk full) is
    /// [`ReadError::IndexPersist`]: the graph serves, the store stays writable, and the
    /// snapshot is written again later.
    pub(crate) fn build_index(&self) -> Result<(), ReadError> {
        let Some(dimension) = self.engine.dimension() else {
            return Ok(());
        };
        if let Some(budget) = self.engine.options().memory_budget {
            return self.build_budgeted(dimension, budget);
        }
        let live = match self.live() {
            Some(live) => live,
            None => {
                let snapshot = self.engine.snapshot()?;
                let live = Arc::new(LiveIndex::load(
                    &snapshot,
                    dimension,
                    self.engine.metric(),
                    self.engine.options().index,
                    self.engine.options().memory_budget,
                )?);
                // The background loader may have published one meanwhile: use that.
                let mut state = self.state.write();
                match &*state {
                    IndexState::Loaded(published) => published.clone(),
                    IndexState::Unloaded | IndexState::Loading => {
                        *state = IndexState::Loaded(live.clone());
                        live
                    }
                }
            }
        };
        // Every vector committed so far (a storage error here is reported as one), then
        // the graph, then (on every core) whatever was committed during the build: the
        // persisted graph holds them all.
        live.catch_up(&self.engine.snapshot()?)?;
        while live.building.swap(true, Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _clear = ClearBuildingOnUnwind(&live.building);
        let built = live.index.build_graph().and_then(|()| {
            while live
                .index
                .absorb_outside_with(ABSORB_CHUNK, Workers::Foreground)?
                > 0
            {}
            Ok(())
        });
        let persisted = match &built {
            Ok(()) => {
                live.failed_build_at.store(usize::MAX, Ordering::SeqCst);
                persist_graph(&self.background(), &live)
            }
            Err(_) => Ok(()),
        };
        live.building.store(false, Ordering::SeqCst);
        // Not `Corrupted`: the build works on vectors already read and checked; nothing in
        // the file is wrong when it fails.
        built.map_err(|e| ReadError::IndexBuild {
            detail: e.to_string(),
        })?;
        persisted.map_err(|e| ReadError::IndexPersist {
            detail: e.to_string(),
        })
    }

    /// [`Indexer::build_index`] under a memory budget, where building is loading: planned
    /// for today's vectors, codes trained on them, every vector streamed in, then saved
    /// whole. A budget the store has outgrown is refused here as it is at open (the index
    /// that serves is left as it is).
    ///
    /// The process never holds two budgeted indexes at once: a background load under way
    /// (the one an open starts) is waited for, and so is background work holding the index
    /// that serves (a save); then that index is unpublished and freed (once the searches
    /// still holding it end) before the new one loads. Until the new one is published,
    /// searches scan the file (exact), as they do while an index loads after open. Commits
    /// made during the load that it cannot catch up with (another space promoted, or its
    /// plan outgrown) unpublish it and load again, as the background loader does.
    fn build_budgeted(&self, dimension: usize, budget: u64) -> Result<(), ReadError> {
        #[cfg(test)]
        self.signal_build_entered();
        // One build at a time: each loads a whole index. While it is held, `Loading` is a
        // background loader's.
        let _one_build = self.budgeted_builds.lock();
        // Whether this build holds the state (`Loading`, no index published).
        let mut held = false;
        for _ in 0..BUILD_ATTEMPTS {
            let snapshot = if held {
                match self.build_snapshot(dimension) {
                    Ok(snapshot) => snapshot,
                    Err(e) => {
                        self.loading_failed();
                        self.start_index();
                        return Err(e);
                    }
                }
            } else {
                self.unpublish_for_build(dimension)?
            };
            #[cfg(test)]
            let ticket = self.budgeted.load_started();
            crate::sys::release_free_heap();
            let loaded = LiveIndex::load(
                &snapshot,
                dimension,
                self.engine.metric(),
                self.engine.options().index,
                Some(budget),
            );
            drop(snapshot);
            let live = match loaded {
                Ok(live) => Arc::new(live),
                Err(e) => {
                    // Nothing is published: the background loader brings one up again.
                    self.loading_failed();
                    self.start_index();
                    return Err(e);
                }
            };
            #[cfg(test)]
            ticket.loaded(&live);
            #[cfg(test)]
            self.pause_after_build_load();
            // What the load's pool threads freed goes back to the system now, not when
            // they next allocate.
            crate::sys::release_free_heap();
            // Published building, so that no background save of it starts before its own.
            live.building.store(true, Ordering::SeqCst);
            *self.state.write() = IndexState::Loaded(live.clone());
            match self.engine.snapshot().and_then(|s| live.catch_up(&s)) {
                Ok(true) => {
                    let persisted = persist_budget(&self.background(), &live);
                    live.building.store(false, Ordering::SeqCst);
                    return persisted.map_err(|e| ReadError::IndexPersist {
                        detail: e.to_string(),
                    });
                }
                Err(e) => {
                    live.building.store(false, Ordering::SeqCst);
                    return Err(e);
                }
                // It cannot serve (every search would scan the file until some commit
                // reloaded it): unpublished, and loaded again.
                Ok(false) => {}
            }
            held = {
                let mut state = self.state.write();
                let ours = matches!(&*state, IndexState::Loaded(now) if Arc::ptr_eq(now, &live));
                if ours {
                    *state = IndexState::Loading;
                }
                ours
            };
            // Otherwise an applier pass unpublished it first (and started a load, which
            // the next attempt waits for).
            wait_until_freed(live);
        }
        if held {
            self.loading_failed();
            self.start_index();
        }
        Err(ReadError::IndexBuild {
            detail: format!(
                "commits made while the index loaded outgrew it or replaced its vectors \
                 {BUILD_ATTEMPTS} times in a row; it loads again in the background"
            ),
        })
    }

    /// The snapshot a budgeted build loads from, read through the bulk handle as the
    /// background loader does (every vectors row read once must not fill the store's page
    /// cache); refused when the store has outgrown the budget.
    fn build_snapshot(&self, dimension: usize) -> Result<Snapshot, ReadError> {
        let snapshot = self.engine.bulk_snapshot()?;
        let live = usize::try_from(snapshot.live_vectors()?).unwrap_or(usize::MAX);
        let dimension = snapshot.dimension.unwrap_or(dimension);
        match crate::index::budget::refusal(self.engine.options(), live, dimension) {
            Some((field, why)) => Err(crate::error::InputError::new(field, why).into()),
            None => Ok(snapshot),
        }
    }

    /// Takes the index's place for a budgeted build (the caller holds `budgeted_builds`):
    /// waits until no background loader runs and no background work (a save, absorbing)
    /// holds the index that serves, then, unless the store has outgrown the budget,
    /// unpublishes it (`Loading`, this build's) and waits until it is freed. Returns the
    /// snapshot to load from.
    fn unpublish_for_build(&self, dimension: usize) -> Result<Snapshot, ReadError> {
        loop {
            // `building` taken on the index that serves: no background work starts on it.
            let serving = loop {
                match &*self.state.read() {
                    IndexState::Unloaded => break None,
                    IndexState::Loaded(live) if !live.building.swap(true, Ordering::SeqCst) => {
                        break Some(live.clone())
                    }
                    // A background loader, or background work on the index that serves.
                    IndexState::Loading | IndexState::Loaded(_) => {}
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            let release = |serving: &Option<Arc<LiveIndex>>| {
                if let Some(live) = serving {
                    live.building.store(false, Ordering::SeqCst);
                }
            };
            let snapshot = match self.build_snapshot(dimension) {
                Ok(snapshot) => snapshot,
                Err(e) => {
                    release(&serving);
                    return Err(e);
                }
            };
            {
                let mut state = self.state.write();
                let unchanged = match (&*state, &serving) {
                    (IndexState::Unloaded, None) => true,
                    (IndexState::Loaded(now), Some(old)) => Arc::ptr_eq(now, old),
                    _ => false,
                };
                if !unchanged {
                    // An applier pass unpublished it, or a commit started a load: again.
                    drop(state);
                    release(&serving);
                    continue;
                }
                *state = IndexState::Loading;
            }
            if let Some(old) = serving {
                wait_until_freed(old);
            }
            return Ok(snapshot);
        }
    }

    /// A read-only store: a thread that brings the index up to the writer's latest commit
    /// every [`FOLLOW_INTERVAL`] (searches do it themselves; this keeps the work they find
    /// small, and absorbs new vectors into the graph). It holds the store only inside
    /// [`Background::with`] sections, and ends once the store is closed.
    fn start_follower(&self) {
        let background = self.background();
        let _ = std::thread::Builder::new()
            .name("ratchetdb-follow".into())
            .spawn(move || loop {
                std::thread::sleep(FOLLOW_INTERVAL);
                if background.with(Indexer::follow_once).is_none() {
                    return;
                }
            });
    }

    /// One look for new commits (see [`Indexer::start_follower`]).
    fn follow_once(&self) {
        let Ok(snapshot) = self.engine.snapshot() else {
            return;
        };
        // Every look, not only a pass: searches keep the default index up to date, so a
        // space dropped by the writer may never be followed by a pass here.
        let _ = self.forget_dropped_spaces(&snapshot);
        let Some(live) = self.live() else { return };
        let latest = snapshot.commit();
        drop(snapshot);
        if !matches!(latest, Ok(seq) if seq > live.applied()) {
            return;
        }
        self.apply_pass(true);
    }

    /// One pass of the applier (woken by commits) or of a read-only store's follower
    /// (`request`: the pass counts itself as a request first), recording in `apply_done`
    /// the requests it covers. Passes run one at a time: a read-only store has both (its
    /// applier is woken when a snapshot learns a new recorded dimension, a promotion), and
    /// two overlapping passes could finish out of order, the later store of `apply_done`
    /// covering fewer requests than the earlier one's: `wait_for_index` then waited for a
    /// pass that had already run (issue 46's follower test, flaky in CI). Under the lock
    /// the requests counted only grow from pass to pass.
    fn apply_pass(&self, request: bool) {
        let _one_at_a_time = self.passes.lock();
        // Every request counted so far follows a commit this pass's snapshot will see.
        let covers = if request {
            self.apply_requested.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            self.apply_requested.load(Ordering::SeqCst)
        };
        // A panic (a bug) must not end the applier or the follower: searches would still be
        // right, but `wait_for_index` would wait forever.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.apply_committed()));
        self.apply_done.store(covers, Ordering::SeqCst);
    }

    /// The last handle of a writable store under a budget is closing: the budgeted index is
    /// brought up to the last commit and saved if the file's copy covers an earlier one (a
    /// reopen catches up from the changelog, which closing trims to its last rows). Best
    /// effort: a failure leaves the older copy, or none, and the next open rebuilds what it
    /// cannot catch up.
    pub(crate) fn save_on_close(&self) {
        let Some(live) = self.live() else { return };
        if live.budget.is_none() || self.engine.is_read_only() {
            return;
        }
        if !matches!(
            self.engine.snapshot().and_then(|s| live.catch_up(&s)),
            Ok(true)
        ) || live.persisted_commit.load(Ordering::SeqCst) >= live.applied()
        {
            return;
        }
        if live.building.swap(true, Ordering::SeqCst) {
            return;
        }
        let _ = persist_budget(&self.background(), &live);
        live.building.store(false, Ordering::SeqCst);
    }

    /// Forgets the loaded index of every space `snapshot` no longer has: dropped or
    /// promoted by a writer in another process (this process's own `drop_space` forgets
    /// its index at once). Called by every pass and, on a read-only store, every look of
    /// the follower. Without this a read-only store kept each promoted space's
    /// vectors in memory a second time, beside the default index that now holds them.
    fn forget_dropped_spaces(&self, snapshot: &Snapshot) -> Result<(), ReadError> {
        let loaded = self.spaces.all();
        if loaded.is_empty() {
            return Ok(());
        }
        let existing: Vec<u32> = match snapshot.txn.open_table(schema::SPACES) {
            Ok(table) => {
                use redb::ReadableTable;
                let mut ids = Vec::new();
                for entry in table.iter().map_err(ReadError::storage)? {
                    let (_, value) = entry.map_err(ReadError::storage)?;
                    // A row that does not decode is left to `verify`, which reports it; the
                    // spaces it does not name are still forgotten.
                    if let Ok(row) = schema::decode::<schema::SpaceRow>("space row", value.value())
                    {
                        ids.push(row.id);
                    }
                }
                ids
            }
            Err(redb::TableError::TableDoesNotExist(_)) => Vec::new(),
            Err(e) => return Err(ReadError::storage(e)),
        };
        let commit = snapshot.commit()?;
        for (id, index) in loaded {
            // An index past `snapshot` was loaded by a newer search: its space may be newer
            // than this snapshot too.
            if !existing.contains(&id) && index.applied() <= commit {
                self.spaces.forget(id);
            }
        }
        Ok(())
    }

    /// The violations of I5 (the index's vectors are exactly the live vectors of the file)
    /// added to `report`.
    pub(crate) fn verify_agreement(
        &self,
        mut report: VerifyReport,
    ) -> Result<VerifyReport, ReadError> {
        if let Some(live) = self.live() {
            for problem in live.agreement(|| self.engine.snapshot())? {
                report.violations.push(crate::types::Violation {
                    source: None,
                    id: None,
                    problem: format!("index: {problem}"),
                });
            }
        }
        let snapshot = self.engine.snapshot()?;
        self.forget_dropped_spaces(&snapshot)?;
        for (id, index) in self.spaces.all() {
            for problem in index.agreement(&snapshot)? {
                report.violations.push(crate::types::Violation {
                    source: None,
                    id: None,
                    problem: format!("space {id}'s index: {problem}"),
                });
            }
        }
        Ok(report)
    }
}

impl Indexer {
    /// See [`Store::search_text`](crate::Store::search_text).
    pub(crate) fn search_text(
        &self,
        query: &str,
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        crate::search::check_bounds(k, options, &self.engine.options().limits)?;
        crate::text::check_query(query, &self.engine.options().limits)?;
        let snapshot = self.engine.search_snapshot()?;
        let analyzer = crate::backend::redb::derived::text_search::analyzer_of(
            &snapshot,
            &self.engine.text_analyzer,
        )?;
        let matching = match &options.filter {
            // `None` when the filter index covers another commit: then every
            // candidate's metadata is checked as it is resolved.
            Some(filter) => self.matching(&snapshot, filter)?,
            None => None,
        };
        crate::backend::redb::derived::text_search::search_text(
            &snapshot,
            &self.text_cache,
            &analyzer,
            query,
            k,
            options,
            matching.as_ref(),
        )
    }

    /// See [`Store::search_hybrid`](crate::Store::search_hybrid).
    pub(crate) fn search_hybrid(
        &self,
        text: &str,
        vector: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        crate::search::check_bounds(k, options, &self.engine.options().limits)?;
        crate::text::check_query(text, &self.engine.options().limits)?;
        options.fusion.check()?;
        let mut depth = crate::text::fusion_depth(k, self.engine.options().limits.max_k);
        let higher = self.engine.metric().higher_is_closer();
        // Per document, the rankings are of chunks (each document's best fused chunk is
        // kept after the fusion), widened until they hold `k` documents or run out.
        let ranking = if options.per_document {
            std::borrow::Cow::Owned(options.clone().per_document(false))
        } else {
            std::borrow::Cow::Borrowed(options)
        };
        loop {
            let (hits, exhausted) =
                self.search_then_unbounded(vector, depth, &ranking, |snapshot, vector_hits| {
                    let analyzer = crate::backend::redb::derived::text_search::analyzer_of(
                        snapshot,
                        &self.engine.text_analyzer,
                    )?;
                    let text_hits = crate::backend::redb::derived::text_search::search_text(
                        snapshot,
                        &self.text_cache,
                        &analyzer,
                        text,
                        depth,
                        &ranking,
                        None,
                    )?;
                    if !options.per_document {
                        let fused =
                            crate::text::fuse(vector_hits, text_hits, k, options.fusion, higher);
                        return Ok((fused, true));
                    }
                    let exhausted = vector_hits.len() < depth && text_hits.len() < depth;
                    let fused = crate::text::fuse(
                        vector_hits,
                        text_hits,
                        usize::MAX,
                        options.fusion,
                        higher,
                    );
                    Ok((crate::search::best_per_document(fused, k), exhausted))
                })?;
            if hits.len() == k || exhausted {
                return Ok(hits);
            }
            depth = depth.saturating_mul(4);
        }
    }

    /// See [`Store::has_text_index`](crate::Store::has_text_index).
    pub(crate) fn has_text_index(&self) -> bool {
        self.engine
            .snapshot()
            .and_then(|s| {
                crate::backend::redb::derived::text_search::analyzer_of(
                    &s,
                    &self.engine.text_analyzer,
                )
            })
            .is_ok()
    }
}

/// How often a read-only store's follower looks for the writer's new commits.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(20);

/// Rebuild the graph in the background when more than this share of its points is dead.
const REBUILD_DEAD_FRACTION: f64 = 0.2;

/// New vectors moved into the graph per step of the background absorber.
const ABSORB_CHUNK: usize = 2048;

/// The persisted graph is rewritten once the graph holds this share more points than
/// the last snapshot (see [`absorb_and_refresh`]). A trade-off: each rewrite writes the
/// whole graph, so growth `g` writes about `1 + 1/g`
/// times the final graph in all; what a rewrite would have saved is only absorbing work
/// after an open (a snapshot's missing vectors are scored exactly until absorbed; they
/// never delay the first graph search).
const PERSIST_GROWTH: f64 = 0.5;

/// ... and at least this many more.
const PERSIST_MIN_POINTS: usize = 4096;

/// Searches retried on a newer snapshot when a commit was applied to the index during one,
/// before falling back to scanning the snapshot.
const SEARCH_ATTEMPTS: usize = 8;

/// Loads a budgeted `build_index` makes when commits made during one leave it unable to
/// serve (another space promoted, or its plan outgrown), before it leaves the load to the
/// background loader.
const BUILD_ATTEMPTS: usize = 3;

/// Waits until `live`, unpublished, is freed: the last holders are searches that took it
/// before it was unpublished (or the applier pass that unpublished it), each about to
/// drop it.
fn wait_until_freed(live: Arc<LiveIndex>) {
    let weak = Arc::downgrade(&live);
    drop(live);
    while weak.strong_count() > 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The background loader: every vector into memory and, at the same time on a second
/// thread, the persisted graph parsed; then the graph is installed (or, without a usable
/// one, built), vectors it lacks are absorbed, and the snapshot refreshed if they were many.
fn load_index(background: Background, dimension: usize, metric: Metric) {
    let _unwinding = LoaderUnwinding(&background);
    let started =
        background.with(
            |ix| match (ix.engine.bulk_snapshot(), ix.engine.bulk_snapshot()) {
                (Ok(vectors), Ok(graph)) => Some((
                    vectors,
                    graph,
                    ix.engine.options().index,
                    ix.engine.options().memory_budget,
                )),
                _ => {
                    ix.loading_failed();
                    None
                }
            },
        );
    let Some(Some((vectors, graph_snapshot, params, memory_budget))) = started else {
        return;
    };
    #[cfg(test)]
    let ticket = match memory_budget {
        Some(_) => background.with(|ix| ix.budgeted.load_started()),
        None => None,
    };
    // Outside the gate's section: a paused loader must not hold the store's close.
    #[cfg(test)]
    if let Some(Some(wait)) = background.with(Indexer::take_loader_pause) {
        let _ = wait.recv();
    }
    // The read snapshots do not keep the file open: if the store closes meanwhile, the
    // reads fail and this thread ends.
    let (loaded, parsed) = std::thread::scope(|scope| {
        let parser = std::thread::Builder::new()
            .name("ratchetdb-index-load".into())
            .spawn_scoped(scope, move || {
                let dimension = graph_snapshot.dimension.unwrap_or(dimension);
                // A budgeted index keeps no graph of the full index (nor its memory).
                let parts = match memory_budget {
                    Some(_) => Ok(Vec::new()),
                    None => live_index::read_graph_snapshot(&graph_snapshot),
                };
                drop(graph_snapshot);
                match parts {
                    Ok(parts) if !parts.is_empty() => {
                        Some(crate::index::parse_snapshot(&parts, metric, dimension))
                    }
                    _ => None,
                }
            });
        // Under a budget, the index the file holds whole (brought up to date from the
        // changelog) if it can serve; otherwise it is built from the vectors rows.
        let from_snapshot = match memory_budget {
            Some(bytes) => {
                live_index::load_budget_snapshot(&vectors, dimension, metric, params, bytes)
                    .ok()
                    .flatten()
            }
            None => None,
        };
        let loaded = match from_snapshot {
            Some(live) => Ok(live),
            None => LiveIndex::load(&vectors, dimension, metric, params, memory_budget),
        };
        drop(vectors);
        let parsed = match parser {
            Ok(handle) => handle.join().unwrap_or_else(|_| {
                Some(Err(crate::index::IndexError::Graph {
                    detail: "snapshot parser panicked".into(),
                }))
            }),
            Err(error) => Some(Err(crate::index::IndexError::Io(error))),
        };
        (loaded, parsed)
    });
    let installed = background.with(|ix| {
        let Ok(live) = loaded else {
            ix.loading_failed();
            return None;
        };
        let live = Arc::new(live);
        #[cfg(test)]
        if let Some(ticket) = ticket {
            ticket.loaded(&live);
        }
        {
            // `build_index` may have loaded and published its own meanwhile (with the graph
            // it built): keep that one.
            let mut state = ix.state.write();
            if matches!(*state, IndexState::Loaded(_)) {
                return None;
            }
            live.building.store(true, Ordering::SeqCst);
            *state = IndexState::Loaded(live.clone());
        }
        // Commits that landed while loading. One that found no index to wake the applier
        // for committed before the index was published, so this snapshot, taken after,
        // covers it (catching up before publishing could miss it for good).
        let cannot_serve = {
            let _clear = ClearBuildingOnUnwind(&live.building);
            ix.engine.snapshot().is_ok_and(|snapshot| {
                let _ = ix.forget_dropped_spaces(&snapshot);
                matches!(live.catch_up(&snapshot), Ok(false))
            })
        };
        if cannot_serve {
            // The changelog cannot bring it up to date (or, under a memory budget, the
            // commits made while it loaded outgrew its plan): load again, as an applier
            // pass would, or nothing would until the next commit. Dropped first, so that
            // (unless a search still holds it) it is freed before the next load starts.
            live.building.store(false, Ordering::SeqCst);
            ix.unpublish(&live);
            drop(live);
            ix.start_index();
            return None;
        }
        Some(live)
    });
    let Some(Some(live)) = installed else { return };
    let _clear = ClearBuildingOnUnwind(&live.building);
    if live.budget.is_some() {
        // Built from the vectors rows: saved, so the next open loads it instead.
        if !live.from_file.load(Ordering::SeqCst) {
            let _ = persist_budget(&background, &live);
        }
        maintain_index(&background, &live);
        return;
    }
    // A persisted graph that loads is used; one that does not (damaged, torn, from another
    // version) is ignored and rebuilt. Without one, small stores stay exact.
    let (had_snapshot, loaded) = match parsed {
        Some(parsed) => (
            true,
            parsed
                .and_then(|graph| {
                    let points = graph.point_count();
                    live.index.install_snapshot(graph)?;
                    live.persisted_points.store(points, Ordering::SeqCst);
                    live.from_file.store(true, Ordering::SeqCst);
                    Ok(())
                })
                .is_ok(),
        ),
        None => (false, false),
    };
    if loaded {
        absorb_and_refresh(&background, &live);
    } else if had_snapshot || live.index.len_live() >= EXACT_THRESHOLD {
        build_graph(&background, &live);
    }
    // Commits made while loading found it building and started nothing.
    maintain_index(&background, &live);
}

/// After a failed graph build, the share by which the number of live vectors must move
/// away from what it was at the failure before another build is tried. A build fails on a
/// panic inside the graph (or the store closing); on the same vectors it would most likely
/// fail again, and without this every commit would start one, each a full pass over the
/// vectors. Searches stay exact (correct, slower) meanwhile; a reopen tries at once.
const RETRY_BUILD_AFTER_CHANGE: f64 = 0.1;

/// Whether a graph build may start now (see [`RETRY_BUILD_AFTER_CHANGE`]).
fn build_retry_due(live: &LiveIndex) -> bool {
    let failed_at = live.failed_build_at.load(Ordering::SeqCst);
    if failed_at == usize::MAX {
        return true;
    }
    let moved = live.index.len_live().abs_diff(failed_at) as f64;
    moved >= (failed_at as f64 * RETRY_BUILD_AFTER_CHANGE).max(1.0)
}

/// Builds a fresh graph from the live vectors (on the background pool) and persists it;
/// records a failure for [`build_retry_due`]. Returns whether it was built.
fn build_graph(background: &Background, live: &LiveIndex) -> bool {
    let vectors = live.index.len_live();
    let built = live.index.build_graph_in_background().is_ok();
    if built {
        live.failed_build_at.store(usize::MAX, Ordering::SeqCst);
        // A failure is retried by the next absorbing pass (`persist_due`).
        let _ = persist_graph(background, live);
    } else {
        live.failed_build_at.store(vectors, Ordering::SeqCst);
    }
    built
}

/// Clears a live index's `building` flag if the thread holding it unwinds (a bug): later
/// commits then start the graph work again, and
/// [`Store::wait_for_index`](crate::Store::wait_for_index) does not wait for a thread that
/// is gone. (Normal exits manage the flag themselves.) Panics inside the graph do not get
/// this far: they come back as errors, see `Graph::insert_links`.
struct ClearBuildingOnUnwind<'a>(&'a AtomicBool);

impl Drop for ClearBuildingOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(false, Ordering::SeqCst);
        }
    }
}

/// A background loader unwinding (a bug) before it published its index gives up the
/// `Loading` state, as a failed load does: left set, no later commit would start a load,
/// and a budgeted `build_index`, which waits for the loader, would wait for ever.
struct LoaderUnwinding<'a>(&'a Background);

impl Drop for LoaderUnwinding<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.with(Indexer::loading_failed);
        }
    }
}

/// Graph work due on a live index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Maintenance {
    /// Too many dead points (or no graph yet at a size that wants one).
    Rebuild,
    /// Live vectors scored exactly that have no graph point yet.
    Absorb,
    /// The budgeted index has grown well past the one saved in the file.
    SaveBudgeted,
}

fn maintenance_due(live: &LiveIndex) -> Option<Maintenance> {
    if let Some(budget) = &live.budget {
        // The budgeted index is saved whole, on the full index's schedule: once it has
        // grown by PERSIST_GROWTH past the saved one (or the last save failed).
        let points = budget.point_count();
        let persisted = live.persisted_points.load(Ordering::SeqCst);
        let due = ((persisted as f64 * PERSIST_GROWTH) as usize).max(PERSIST_MIN_POINTS);
        let save = live.persist_due.load(Ordering::SeqCst)
            || (budget.is_trained() && points >= persisted.saturating_add(due));
        return save.then_some(Maintenance::SaveBudgeted);
    }
    let index = &live.index;
    let rebuild = index.dead_fraction() > REBUILD_DEAD_FRACTION
        || (!index.graph_ready() && index.needs_rebuild(REBUILD_DEAD_FRACTION));
    if rebuild && build_retry_due(live) {
        Some(Maintenance::Rebuild)
    } else if index.has_absorbable() {
        Some(Maintenance::Absorb)
    } else {
        None
    }
}

/// Does the graph work that is due until none is, then clears `live.building` (which the
/// caller set). Work that became due meanwhile is done here too: a commit whose applier
/// pass found `building` set started nothing, and without this its vectors would wait for
/// the next commit to be absorbed (scored exactly meanwhile: slower, never wrong). Stops
/// on a failed build or absorb, or when the store closes.
fn maintain_index(background: &Background, live: &LiveIndex) {
    let _clear = ClearBuildingOnUnwind(&live.building);
    loop {
        while let Some(work) = maintenance_due(live) {
            let done = !live.index.is_closed()
                && match work {
                    Maintenance::Rebuild => build_graph(background, live),
                    // A failure leaves `persist_due` set: tried again after the next commit.
                    Maintenance::SaveBudgeted => {
                        persist_budget(background, live).is_ok()
                            && live.persisted_points.load(Ordering::SeqCst) > 0
                    }
                    // Nothing moved while some was due: stop rather than spin. A failed
                    // insertion dropped the graph: go on to the rebuild that is then due
                    // (at `EXACT_THRESHOLD` live vectors or more; if it fails too, the
                    // loop stops there, and `build_retry_due` spaces out the next tries).
                    Maintenance::Absorb => match absorb_and_refresh(background, live) {
                        Some(moved) => moved > 0,
                        None => !live.index.graph_ready(),
                    },
                };
            if !done {
                live.building.store(false, Ordering::SeqCst);
                return;
            }
        }
        live.building.store(false, Ordering::SeqCst);
        // A pass between the last check and the store above saw `building` set: look again.
        if live.index.is_closed()
            || maintenance_due(live).is_none()
            || live.building.swap(true, Ordering::SeqCst)
        {
            return;
        }
    }
}

/// Moves every vector scored outside the graph into it, then refreshes the persisted
/// snapshot once the graph has grown by [`PERSIST_GROWTH`] of what the last snapshot
/// holds (at least [`PERSIST_MIN_POINTS`]), so that the work an open leaves to the
/// absorber stays a bounded share of the graph while the snapshot writes add up to a
/// constant factor of the vectors ingested.
///
/// Returns how many vectors it moved into the graph, `None` if absorbing failed.
fn absorb_and_refresh(background: &Background, live: &LiveIndex) -> Option<usize> {
    let mut moved = 0usize;
    let absorbed = loop {
        match live.index.absorb_outside(ABSORB_CHUNK) {
            Ok(0) => break Some(moved),
            Ok(n) => moved += n,
            Err(_) => break None,
        }
    };
    let points = live.index.graph_point_count();
    let persisted = live.persisted_points.load(Ordering::SeqCst);
    let due = (persisted as f64 * PERSIST_GROWTH) as usize;
    if live.persist_due.load(Ordering::SeqCst)
        || points >= persisted.saturating_add(due.max(PERSIST_MIN_POINTS))
    {
        // A failure is retried by the next pass (`persist_due`).
        let _ = persist_graph(background, live);
    }
    absorbed
}

/// Hands the memory the build freed back to the system before a snapshot is encoded and
/// written, and the snapshot's encoding once it is written. A build's temporaries are
/// allocated and freed on the index pool's threads, and glibc keeps what a thread's arena
/// freed for that thread's later allocations, unused again, while the snapshot's encoding
/// raises the peak. `malloc_trim` returns it (the free pages of every arena, not only the
/// heap's top) and frees nothing in use; it runs twice per snapshot. On other targets
/// nothing is done.
fn release_freed_memory() {
    crate::sys::release_free_heap();
}

/// Writes the current graph into the file, replacing the previous snapshot: the old one is
/// deleted in one transaction, the new one written whole in the next. A crash leaves the
/// old snapshot, none, or the new one, never a mix; with none, the next open builds the
/// graph from the vectors rows, as it does for a store that never had one.
///
/// Two transactions, not one, so the file does not hold both snapshots at once: redb's
/// copy-on-write keeps a transaction's freed pages until it commits, so writing the new
/// parts in the transaction that deletes the old ones grew the file by the old snapshot
/// (about an eighth of a GloVe-100k file, left as free pages). Deleted and committed
/// first, the old parts' pages are free for the new ones (unless a reader still holds an
/// older snapshot).
///
/// The snapshot is derived, so a failure to write it (the disk full) must not stop the
/// store: both transactions go through [`Engine::write_txn_derived`], which does not
/// poison the engine on a storage error (it opens the file again instead). The graph stays
/// in memory and serves; `persisted_points` says what the file holds (0 once the old
/// snapshot is deleted and the new one not written), `persist_due` has the next absorbing
/// pass write it again, and the error is returned (`build_index` reports it).
fn persist_graph(background: &Background, live: &LiveIndex) -> Result<(), WriteError> {
    // A read-only store keeps its graph in memory only.
    if background.with(|ix| ix.engine.is_read_only()) != Some(false) {
        return Ok(());
    }
    release_freed_memory();
    let points = live.index.graph_point_count();
    let Ok(Some(blobs)) = live.index.snapshot_blobs() else {
        return Ok(());
    };
    let written = background.with(|ix| {
        let applied = live.applied();
        ix.engine
            .write_txn_derived(redb::Durability::Immediate, |txn| {
                let mut table = txn
                    .open_table(schema::INDEX_SNAPSHOT)
                    .map_err(WriteError::storage)?;
                table.retain(|_, _| false).map_err(WriteError::storage)?;
                let mut meta = txn.open_table(META).map_err(WriteError::storage)?;
                meta.remove(meta_key::INDEX_SNAPSHOT_SEQ)
                    .map_err(WriteError::storage)?;
                Ok(Finish::Commit(()))
            })
            .inspect(|()| live.persisted_points.store(0, Ordering::SeqCst))?;
        ix.engine
            .write_txn_derived(redb::Durability::Immediate, |txn| {
                // A graph of vectors a promotion replaced since (`spaces::promote`) is not
                // written: the next load builds one of the vectors it finds.
                if vectors_replaced_since(txn, applied)? {
                    return Ok(Finish::Abort(()));
                }
                let mut table = txn
                    .open_table(schema::INDEX_SNAPSHOT)
                    .map_err(WriteError::storage)?;
                for (part, blob) in blobs.iter().enumerate() {
                    table
                        .insert(part as u32, blob.as_slice())
                        .map_err(WriteError::storage)?;
                }
                let mut meta = txn.open_table(META).map_err(WriteError::storage)?;
                meta.insert(
                    meta_key::INDEX_SNAPSHOT_SEQ,
                    applied.to_le_bytes().as_slice(),
                )
                .map_err(WriteError::storage)?;
                Ok(Finish::Commit(()))
            })
    });
    // The encoded snapshot (about the links' size) and the write's pages, freed, go back to
    // the system too: kept, they stayed resident beside the index for as long as it served.
    drop(blobs);
    release_freed_memory();
    // The store closed meanwhile: nothing to report.
    let Some(written) = written else {
        return Ok(());
    };
    match &written {
        Ok(()) => {
            live.persisted_points.store(points, Ordering::SeqCst);
            live.persist_due.store(false, Ordering::SeqCst);
        }
        Err(_) => live.persist_due.store(true, Ordering::SeqCst),
    }
    written
}

/// Whether a promotion (`spaces::promote`) replaced the default space's vectors after commit
/// `applied` (or the file's record of it is damaged): an index covering `applied` holds
/// vectors the file no longer has, and is not saved.
fn vectors_replaced_since(txn: &redb::WriteTransaction, applied: u64) -> Result<bool, WriteError> {
    let meta = txn.open_table(META).map_err(WriteError::storage)?;
    let replaced = crate::backend::redb::open::meta_u64(&meta, meta_key::VECTORS_REPLACED)
        .map_err(WriteError::storage)?;
    Ok(
        matches!(replaced, Some(Ok(commit)) if commit > applied)
            || matches!(replaced, Some(Err(_))),
    )
}

/// Writes the budgeted index whole into the file (`budget_snapshot`), replacing the one
/// saved before, on the same terms as [`persist_graph`]: the old one deleted in one
/// transaction, the new one written in the next (which clears the table again, so two
/// writers interleaving still leave one whole snapshot), through
/// [`Engine::write_txn_derived`]; a failure sets `persist_due` and is returned. The index
/// is written part by part from its own arrays (no copy of it is made, so the budget holds
/// while saving); inserts wait meanwhile. Stamped with the commit the index covered before
/// it was read (see `BudgetIndex::save`). An index with untrained codes (few vectors) is not
/// saved.
fn persist_budget(background: &Background, live: &LiveIndex) -> Result<(), WriteError> {
    let Some(budget) = &live.budget else {
        return Ok(());
    };
    if background.with(|ix| ix.engine.is_read_only()) != Some(false) || !budget.is_trained() {
        return Ok(());
    }
    let written = background.with(|ix| {
        ix.engine
            .write_txn_derived(redb::Durability::Immediate, |txn| {
                txn.open_table(schema::BUDGET_SNAPSHOT)
                    .map_err(WriteError::storage)?
                    .retain(|_, _| false)
                    .map_err(WriteError::storage)?;
                Ok(Finish::Commit(()))
            })
            .inspect(|()| live.persisted_points.store(0, Ordering::SeqCst))?;
        ix.engine
            .write_txn_derived(redb::Durability::Immediate, |txn| {
                let stamp = live.applied();
                if vectors_replaced_since(txn, stamp)? {
                    return Ok(Finish::Abort(None));
                }
                let mut table = txn
                    .open_table(schema::BUDGET_SNAPSHOT)
                    .map_err(WriteError::storage)?;
                table.retain(|_, _| false).map_err(WriteError::storage)?;
                let saved = budget.save(stamp, |part, bytes| {
                    table
                        .insert(part, bytes)
                        .map(|_| ())
                        .map_err(WriteError::storage)
                })?;
                Ok(match saved {
                    Some(points) => Finish::Commit(Some((points, stamp))),
                    None => Finish::Abort(None),
                })
            })
    });
    let Some(written) = written else {
        return Ok(());
    };
    match written {
        Ok(saved) => {
            let (points, stamp) = saved.unwrap_or((0, 0));
            live.persisted_points.store(points, Ordering::SeqCst);
            live.persisted_commit.store(stamp, Ordering::SeqCst);
            live.persist_due.store(false, Ordering::SeqCst);
            Ok(())
        }
        Err(error) => {
            live.persist_due.store(true, Ordering::SeqCst);
            Err(error)
        }
    }
}

/// How many budgeted indexes a store held at once, at most: loads under way (each an index
/// filling) and indexes loaded and not freed yet, counted as each load starts and ends (the
/// crate's own tests).
#[cfg(test)]
#[derive(Default)]
pub(crate) struct BudgetedGauge {
    /// Loads under way, and every index loaded (alive while resident).
    held: Mutex<(usize, Vec<Weak<LiveIndex>>)>,
    most: AtomicU64,
    loads: AtomicU64,
}

#[cfg(test)]
impl BudgetedGauge {
    /// The most held at once so far.
    pub(crate) fn most(&self) -> u64 {
        self.most.load(Ordering::SeqCst)
    }

    /// Budgeted loads started so far.
    pub(crate) fn loads(&self) -> u64 {
        self.loads.load(Ordering::SeqCst)
    }

    fn count(&self, held: &(usize, Vec<Weak<LiveIndex>>)) {
        let resident = held.1.iter().filter(|w| w.strong_count() > 0).count();
        self.most
            .fetch_max((held.0 + resident) as u64, Ordering::SeqCst);
    }

    /// A load starts: counted until its ticket is dropped or loaded.
    pub(crate) fn load_started(self: &Arc<Self>) -> LoadTicket {
        self.loads.fetch_add(1, Ordering::SeqCst);
        let mut held = self.held.lock();
        held.0 += 1;
        self.count(&held);
        LoadTicket(Some(self.clone()))
    }
}

/// A budgeted load under way (see [`BudgetedGauge`]).
#[cfg(test)]
pub(crate) struct LoadTicket(Option<Arc<BudgetedGauge>>);

#[cfg(test)]
impl LoadTicket {
    /// The load ended with `live`, resident until it is freed.
    fn loaded(mut self, live: &Arc<LiveIndex>) {
        if let Some(gauge) = self.0.take() {
            let mut held = gauge.held.lock();
            held.0 -= 1;
            held.1.push(Arc::downgrade(live));
            gauge.count(&held);
        }
    }
}

#[cfg(test)]
impl Drop for LoadTicket {
    fn drop(&mut self) {
        if let Some(gauge) = self.0.take() {
            gauge.held.lock().0 -= 1;
        }
    }
}

/// Where the background loader of the store at a path waits once its load is counted,
/// until told to go on (the sender dropped: at once). The crate's own tests; keyed by path,
/// since the loader starts inside `Store::open` (and tests running beside each other in one
/// process must not take each other's).
#[cfg(test)]
static LOADER_PAUSES: Mutex<Vec<(std::path::PathBuf, crossbeam_channel::Receiver<()>)>> =
    Mutex::new(Vec::new());

/// Makes the next background loader of the store at `path` wait (see [`LOADER_PAUSES`]);
/// send or drop the sender to let it go on.
#[cfg(test)]
pub(crate) fn pause_next_loader_of(path: &std::path::Path) -> crossbeam_channel::Sender<()> {
    let (go_on, wait) = crossbeam_channel::bounded(1);
    LOADER_PAUSES.lock().push((path.to_owned(), wait));
    go_on
}

#[cfg(test)]
impl Indexer {
    /// What a background loader of this store waits on, if a test paused it (see
    /// [`LOADER_PAUSES`]).
    fn take_loader_pause(&self) -> Option<crossbeam_channel::Receiver<()>> {
        let mut pauses = LOADER_PAUSES.lock();
        let same = |path: &std::path::Path| {
            path == self.engine.path()
                || matches!(
                    (std::fs::canonicalize(path), std::fs::canonicalize(self.engine.path())),
                    (Ok(a), Ok(b)) if a == b
                )
        };
        let at = pauses.iter().position(|(path, _)| same(path))?;
        Some(pauses.swap_remove(at).1)
    }

    /// Signals a test that a budgeted `build_index` has begun (before it waits for anything).
    fn signal_build_entered(&self) {
        if let Some(entered) = self.build_entered.lock().take() {
            let _ = entered.send(());
        }
    }

    /// Signals a test waiting at `build_pause` and waits for its go-ahead (no pause set: at
    /// once).
    fn pause_after_build_load(&self) {
        let pause = self.build_pause.lock().take();
        if let Some((reached, go_on)) = pause {
            let _ = reached.send(());
            let _ = go_on.recv();
        }
    }
}

#[cfg(test)]
mod background_panic_tests {
    //! Regression: a panic in the background graph work (inside `hnsw_rs` while
    //! absorbing new vectors) ended the maintenance thread with the index's `building`
    //! flag still set, so no later commit started graph work again and
    //! `Store::wait_for_index` waited out its whole timeout.

    use super::*;
    use crate::index::test_support::low_rank_vectors;
    use crate::options::{Durability, Options};
    use crate::{Chunk, Document, Op, SearchOptions, Store, Version};

    const DIM: usize = 16;

    /// A new store in a new temporary directory (kept alive by the first half), without
    /// fsyncs: these tests crash nothing.
    fn open_store(name: &str) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = Options::default().durability(Durability::None);
        let store = Store::open(dir.path().join(name), options).expect("open");
        (dir, store)
    }

    /// Writes one-chunk documents `{source}/v{i}` for `i` in `from..to`, with `vectors[i]`,
    /// in batches of 1000.
    fn write(store: &Store, source: &str, vectors: &[Vec<f32>], from: usize, to: usize) {
        for start in (from..to).step_by(1000) {
            let ops = (start..to.min(start + 1000))
                .map(|i| {
                    Op::Upsert(
                        Document::new(source, format!("v{i}"), Version::number(1))
                            .with_chunk(Chunk::new(format!("chunk {i}"), vectors[i].clone())),
                    )
                })
                .collect();
            for outcome in store.write_batch(ops).expect("write a batch") {
                outcome.expect("write a document");
            }
        }
    }

    #[test]
    fn a_panicking_graph_insert_leaves_the_index_maintained() {
        let (_dir, store) = open_store("panic.redb");
        write(
            &store,
            "first",
            &low_rank_vectors(5, 10_500, DIM),
            0,
            10_500,
        );
        assert!(
            store.wait_for_index(Duration::from_secs(120)),
            "first build"
        );
        let live = store.indexer().live().expect("loaded");
        // Panics a third of the way through the batch below (inside the insert loop).
        assert!(
            live.index.fail_graph_inserts_after(Some(100)),
            "a graph was built"
        );
        let persisted = store.index_info().persisted_points;
        assert!(persisted > 0 && persisted <= 10_500, "{persisted}");

        // Absorbing these panics inside the graph: the graph is dropped, and the same
        // worker goes on to rebuild it (from every live vector) and persist that.
        let more = low_rank_vectors(6, 300, DIM);
        write(&store, "more", &more, 0, 300);
        assert!(
            store.wait_for_index(Duration::from_secs(120)),
            "the index never settled after the panic: {:?}",
            store.index_info()
        );
        let info = store.index_info();
        assert!(info.graph_ready && !info.building, "{info:?}");
        // A point for every live vector (the few no search reaches are scored exactly,
        // as after any build; `verify` checks that membership).
        assert_eq!(info.graph_points, 10_800, "{info:?}");
        // Absorbing 300 points persists nothing (the snapshot is refreshed after 50 %
        // growth); only the rebuild persists all 10,800.
        assert_eq!(info.persisted_points, 10_800, "{info:?}");
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{:#?}", report.violations);
        for (i, v) in more.iter().enumerate() {
            let exact = SearchOptions::default().exact(true);
            let hits = store.search(v, 1, &exact).expect("search");
            let top = hits.first().map(|h| (h.source.as_str(), h.id.clone()));
            assert_eq!(top, Some(("more", format!("v{i}"))), "vector {i}");
        }
    }

    // Regression: after a graph build failed (a panic inside hnsw_rs), every later commit
    // started another full build, which failed the same way.
    #[test]
    fn a_failed_build_is_retried_only_after_the_vectors_change() {
        let (_dir, store) = open_store("retry.redb");
        let vectors = low_rank_vectors(7, 12_500, DIM);
        let write_range = |from: usize, to: usize| {
            write(&store, "s", &vectors, from, to);
            assert!(store.wait_for_index(Duration::from_secs(120)), "settled");
        };
        write_range(0, 1_000);
        let live = store.indexer().live().expect("loaded");
        live.index.fail_builds(true);
        for from in (1_000..10_000).step_by(1_000) {
            write_range(from, from + 1_000);
        }
        assert_eq!(live.index.builds_started(), 1, "the first build, at 10,000");
        assert!(!store.index_info().graph_ready);
        // Small commits: the vectors barely changed, so the build is not tried again.
        for from in (10_000..10_050).step_by(10) {
            write_range(from, from + 10);
        }
        assert_eq!(live.index.builds_started(), 1);
        // 10 % more vectors than at the failure: tried again (and fails again).
        write_range(10_050, 11_050);
        assert_eq!(live.index.builds_started(), 2);
        assert!(!store.index_info().graph_ready);
        // Searches are exact meanwhile, and right.
        let hits = store
            .search(&vectors[10_500], 1, &SearchOptions::default())
            .expect("search");
        assert_eq!(hits.first().map(|h| h.id.as_str()), Some("v10500"));
        // The cause gone, the next try after enough change builds the graph.
        live.index.fail_builds(false);
        write_range(11_050, 12_500);
        assert_eq!(live.index.builds_started(), 3);
        let info = store.index_info();
        assert!(info.graph_ready, "{info:?}");
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{:#?}", report.violations);
    }

    // Regression: `Store::build_index` reported a failed build (a panic inside hnsw_rs)
    // as `ReadError::Corrupted { what: "vector index" }`, telling the caller the file was
    // damaged when nothing in it was.
    #[test]
    fn a_failed_build_index_is_an_index_build_error_and_changes_nothing() {
        let (_dir, store) = open_store("build.redb");
        // Past the exact threshold: the background builds a graph and persists it.
        let vectors = low_rank_vectors(8, 10_500, DIM);
        write(&store, "s", &vectors, 0, 10_500);
        assert!(store.wait_for_index(Duration::from_secs(120)), "settled");
        let live = store.indexer().live().expect("loaded");
        let before = store.index_info();
        assert!(
            before.graph_ready && before.persisted_points > 0,
            "{before:?}"
        );
        let counters = store.stats().expect("stats").counters;

        live.index.fail_builds(true);
        match store.build_index() {
            Err(ReadError::IndexBuild { detail }) => assert!(!detail.is_empty()),
            other => panic!("expected an IndexBuild error, got {other:?}"),
        }
        // The graph that served before still serves, and the persisted one is the same.
        let after = store.index_info();
        assert!(after.graph_ready && !after.building, "{after:?}");
        assert_eq!(after.graph_points, before.graph_points, "{after:?}");
        assert_eq!(after.persisted_points, before.persisted_points, "{after:?}");
        assert_eq!(store.stats().expect("stats").counters, counters);
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{:#?}", report.violations);
        let hits = store
            .search(&vectors[1_234], 1, &SearchOptions::default())
            .expect("search");
        assert_eq!(hits.first().map(|h| h.id.as_str()), Some("v1234"));

        // The cause gone, the same call builds and persists the graph.
        live.index.fail_builds(false);
        store.build_index().expect("build");
        let info = store.index_info();
        assert!(info.graph_ready, "{info:?}");
        assert_eq!(info.persisted_points, 10_500, "{info:?}");
    }

    #[test]
    fn clear_building_on_unwind_clears_only_when_its_thread_unwinds() {
        let flag = Arc::new(AtomicBool::new(true));
        let held = flag.clone();
        let result = std::thread::spawn(move || {
            let _clear = ClearBuildingOnUnwind(&held);
            panic!("a bug in background graph work");
        })
        .join();
        assert!(result.is_err());
        assert!(
            !flag.load(Ordering::SeqCst),
            "cleared by the unwinding thread"
        );

        flag.store(true, Ordering::SeqCst);
        drop(ClearBuildingOnUnwind(&flag));
        assert!(
            flag.load(Ordering::SeqCst),
            "a normal exit leaves it to its owner"
        );
    }
}

#[cfg(test)]
mod budgeted_load_tests {
    //! A budgeted index loaded on open (from the index the file saved, or built from the
    //! vectors rows) ends the load with a walk of layer 0: the load holds walks while it
    //! inserts, and an index left holding them would never walk again, so a point some
    //! later insert orphaned would be found by no search (the reachability walk of
    //! `index::budget`; stop 60 noted that nothing tested this end).

    use super::test_support::{open_budgeted as open, DIM, N};
    use crate::backend::redb::schema::BUDGET_SNAPSHOT;
    use crate::index::test_support::low_rank_vectors;
    use crate::{Chunk, Document, Op, Store, Version};
    use std::time::Duration;

    /// Once the index is ready: whether walks are held, the points the last walk covered,
    /// the points the graph holds.
    fn walk_state(store: &Store) -> (bool, usize, usize) {
        assert!(
            store.wait_for_index(Duration::from_secs(120)),
            "index ready"
        );
        let live = store.indexer().live().expect("loaded");
        live.budget.as_ref().expect("budgeted").walk_state()
    }

    #[test]
    fn a_budgeted_load_ends_with_a_walk_from_the_saved_index_and_from_the_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("walk.redb");
        let vectors = low_rank_vectors(61, N, DIM);
        {
            let store = open(&path);
            for start in (0..N).step_by(1000) {
                let ops = (start..start + 1000)
                    .map(|i| {
                        Op::Upsert(
                            Document::new("s", format!("v{i}"), Version::number(1))
                                .with_chunk(Chunk::new(format!("chunk {i}"), vectors[i].clone())),
                        )
                    })
                    .collect();
                for outcome in store.write_batch(ops).expect("write") {
                    outcome.expect("document");
                }
            }
            store.build_index().expect("build and save");
            assert_eq!(walk_state(&store).2, N, "every point in the graph");
        }
        {
            let store = open(&path);
            let state = walk_state(&store);
            assert!(
                store.index_info().loaded_from_file,
                "the saved index loaded"
            );
            assert_eq!(state, (false, N, N), "(holding walks, walked, points)");
        }
        // Without the saved index: the open builds it from the vectors rows.
        {
            let db = redb::Database::open(&path).expect("redb open");
            let tx = db.begin_write().expect("write");
            assert!(
                tx.delete_table(BUDGET_SNAPSHOT).expect("delete"),
                "it was saved"
            );
            tx.commit().expect("commit");
        }
        let store = open(&path);
        let state = walk_state(&store);
        assert!(!store.index_info().loaded_from_file, "built from the rows");
        assert_eq!(state, (false, N, N), "(holding walks, walked, points)");
    }
}

/// What the crate tests below share: a budgeted store and its writes.
#[cfg(test)]
mod test_support {
    use crate::options::{Durability, Options};
    use crate::Store;
    use std::path::Path;

    /// The budgeted stores' dimension and documents.
    pub(super) const DIM: usize = 32;
    pub(super) const N: usize = 4000;
    /// Small enough that the codes are trained below `N` points (at 2,048).
    pub(super) const BUDGET: u64 = 2 << 20;

    /// The store at `path` under [`BUDGET`], not durable.
    pub(super) fn open_budgeted(path: &Path) -> Store {
        let options = Options::default()
            .durability(Durability::None)
            .memory_budget(BUDGET);
        Store::open(path, options).expect("open")
    }

    /// Writes one-chunk documents `s/v{i}` (`vectors[i]`, chunk metadata `{"group": i % 4}`)
    /// into `store`, for the tests below.
    pub(super) fn write_documents(store: &crate::Store, vectors: &[Vec<f32>]) {
        use crate::{Chunk, Document, Op, Version};
        for start in (0..vectors.len()).step_by(1000) {
            let ops = (start..vectors.len().min(start + 1000))
                .map(|i| {
                    Op::Upsert(
                        Document::new("s", format!("v{i}"), Version::number(1)).with_chunk(
                            Chunk::new(format!("chunk {i}"), vectors[i].clone())
                                .with_meta(serde_json::json!({ "group": i % 4 })),
                        ),
                    )
                })
                .collect();
            for outcome in store.write_batch(ops).expect("write a batch") {
                outcome.expect("write a document");
            }
        }
    }

    /// Adds space `space` to `store` and gives the chunk of each document `s/v{i}` vector
    /// `vectors[i]` there, for the tests below.
    pub(super) fn fill_space(store: &crate::Store, space: &str, vectors: &[Vec<f32>]) {
        use crate::SpaceVector;
        store
            .add_space(space, "test-model", vectors[0].len())
            .expect("add the space");
        let mut after = None;
        loop {
            let missing = store
                .chunks_missing_vectors(space, after, 1000)
                .expect("walk the chunks");
            let Some(last) = missing.last() else { break };
            after = Some(last.revision);
            let batch = missing
                .into_iter()
                .map(|chunk| {
                    let i: usize = chunk.id[1..].parse().expect("a document v{i}");
                    SpaceVector::for_chunk(&chunk, vectors[i].clone())
                })
                .collect();
            store
                .write_space_vectors(space, batch)
                .expect("write the space's vectors");
        }
    }
}

#[cfg(test)]
mod filtered_space_search_tests {
    //! Regression: under a memory budget, a filtered search of a space other than the
    //! default one passed no filter index to the scan, which then built one of the whole
    //! store for the search alone (a posting, a row and an entry for every live chunk:
    //! tens of MB at a million chunks, outside the budget), on every query. It now
    //! evaluates the filter on the store's shared filter index, as every other search does.

    use super::test_support::{fill_space, write_documents};
    use crate::backend::redb::derived::filter_index::builds_on_this_thread;
    use crate::index::test_support::low_rank_vectors;
    use crate::options::{Durability, Options};
    use crate::{Filter, SearchOptions, Store};

    const N: usize = 1200;

    #[test]
    fn a_filtered_search_of_a_space_under_a_budget_builds_no_filter_index_of_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = Options::default()
            .durability(Durability::None)
            .memory_budget(4 << 20);
        let store = Store::open(dir.path().join("spaces.redb"), options).expect("open");
        let wide = low_rank_vectors(72, N, 24);
        write_documents(&store, &low_rank_vectors(71, N, 32));
        fill_space(&store, "wide", &wide);
        let metric = store.metric();
        let filter = Filter::parse(&serde_json::json!({ "group": 1 })).expect("filter");
        let options = SearchOptions::default().space("wide").filter(filter);
        // The exact top 5 of group 1 in the space.
        let expected = |query: &[f32], deleted: &[usize]| {
            let mut scored: Vec<(f32, usize)> = (0..N)
                .filter(|i| i % 4 == 1 && !deleted.contains(i))
                .map(|i| (crate::index::distance::distance(metric, query, &wide[i]), i))
                .collect();
            scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            scored
                .into_iter()
                .take(5)
                .map(|(_, i)| format!("v{i}"))
                .collect::<Vec<_>>()
        };
        let ids = |hits: Vec<crate::Hit>| hits.into_iter().map(|h| h.id).collect::<Vec<_>>();

        let before = builds_on_this_thread();
        for query in &wide[..20] {
            let hits = store.search(query, 5, &options).expect("search the space");
            assert_eq!(ids(hits), expected(query, &[]));
        }
        assert_eq!(
            builds_on_this_thread() - before,
            1,
            "the shared filter index, built by the first search, and no other"
        );

        // A commit: the shared index catches up from the changelog, not rebuilt.
        let nearest = expected(&wide[0], &[]);
        let gone: usize = nearest[0][1..].parse().expect("v{i}");
        store
            .delete("s", &nearest[0], crate::Version::number(2))
            .expect("delete");
        for query in &wide[..20] {
            let hits = store.search(query, 5, &options).expect("search the space");
            assert_eq!(ids(hits), expected(query, &[gone]));
        }
        assert_eq!(
            builds_on_this_thread() - before,
            1,
            "caught up, not rebuilt"
        );
    }
}

#[cfg(test)]
mod budgeted_build_tests {
    //! `Store::build_index` under a memory budget.

    use super::pause_next_loader_of;
    use super::test_support::{fill_space, open_budgeted as open, write_documents, DIM, N};
    use crate::backend::redb::schema::BUDGET_SNAPSHOT;
    use crate::index::test_support::low_rank_vectors;
    use crate::{SearchOptions, Store};
    use std::time::Duration;

    fn settle(store: &Store) {
        assert!(
            store.wait_for_index(Duration::from_secs(120)),
            "index ready: {:?}",
            store.index_info()
        );
    }

    /// Regression: `build_index` under a budget unpublished the index and loaded a new
    /// one at once, while the background load an open starts (with no saved index that
    /// fits, from the vectors rows) was still loading its own: two full budgeted loads ran
    /// side by side, about twice the budget. It now waits for the background load (and
    /// for background work holding the index that serves) and frees that index first.
    #[test]
    fn build_index_during_the_load_after_open_never_holds_two_budgeted_indexes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("build.redb");
        let vectors = low_rank_vectors(81, N, DIM);
        {
            let store = open(&path);
            write_documents(&store, &vectors);
            store.build_index().expect("build and save");
        }
        // No usable saved index: the next open loads from the vectors rows.
        {
            let db = redb::Database::open(&path).expect("redb open");
            let tx = db.begin_write().expect("write");
            assert!(tx.delete_table(BUDGET_SNAPSHOT).expect("delete"), "saved");
            tx.commit().expect("commit");
        }
        // The open's loader, counted, waits until `build_index` has begun.
        let loader = pause_next_loader_of(&path);
        let store = open(&path);
        let (entered, build_began) = crossbeam_channel::bounded(1);
        *store.indexer().build_entered.lock() = Some(entered);
        std::thread::scope(|scope| {
            let build = scope.spawn(|| store.build_index());
            build_began.recv().expect("build_index began");
            drop(loader);
            build.join().expect("no panic").expect("build");
        });
        settle(&store);
        let gauge = &store.indexer().budgeted;
        assert_eq!(gauge.loads(), 2, "the open's load and the build's");
        assert_eq!(gauge.most(), 1, "budgeted indexes held at once");
        let info = store.index_info();
        assert!(info.loaded && !info.loaded_from_file, "{info:?}");
        assert_eq!(info.live_vectors, N as u64, "{info:?}");
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{:#?}", report.violations);
        let hits = store
            .search(&vectors[7], 1, &SearchOptions::default())
            .expect("search");
        assert_eq!(hits.first().map(|h| h.id.as_str()), Some("v7"));
    }

    /// Regression: a commit made while `build_index` loaded under a budget that the
    /// loaded index could not catch up with (here a promotion, which replaces every
    /// vector) left it published all the same: it could not serve, so every search
    /// scanned the file until some later commit happened to reload it. It is now
    /// unpublished and loaded again, and `build_index` returns with an index that serves.
    #[test]
    fn build_index_loads_again_when_a_promotion_lands_during_its_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("promote.redb");
        let store = open(&path);
        let next = low_rank_vectors(92, N, 16);
        write_documents(&store, &low_rank_vectors(91, N, DIM));
        fill_space(&store, "next", &next);
        store.activate("next").expect("activate");
        settle(&store);
        let (reached, load_done) = crossbeam_channel::bounded(1);
        let (go_on, wait) = crossbeam_channel::bounded(1);
        *store.indexer().build_pause.lock() = Some((reached, wait));
        std::thread::scope(|scope| {
            let build = scope.spawn(|| store.build_index());
            load_done.recv().expect("the build's load ended");
            // Commits the vectors of `next` in place of the default ones.
            store.drop_space("default").expect("promote");
            go_on.send(()).expect("go on");
            build.join().expect("no panic").expect("build");
        });
        // At once, no commit since: the index published covers the latest commit.
        let latest = store
            .indexer()
            .engine
            .snapshot()
            .and_then(|s| s.commit())
            .expect("latest");
        let live = store.indexer().live().expect("an index published");
        assert_eq!(live.applied(), latest, "the index covers the promotion");
        assert_eq!(live.len_live(), N);
        drop(live);
        assert_eq!(store.dimension(), Some(16));
        assert_eq!(store.indexer().budgeted.most(), 1);
        settle(&store);
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{:#?}", report.violations);
        let hits = store
            .search(&next[11], 1, &SearchOptions::default())
            .expect("search");
        assert_eq!(hits.first().map(|h| h.id.as_str()), Some("v11"));
    }
}
