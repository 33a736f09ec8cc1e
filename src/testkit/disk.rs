//! The simulated disk: a `redb::StorageBackend` with fault injection and power loss.

use super::rng::SplitMix64;
use parking_lot::Mutex;
use std::sync::Arc;

/// Which storage calls a fault may hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    /// `StorageBackend::write`.
    Write,
    /// `StorageBackend::set_len`.
    SetLen,
    /// `StorageBackend::sync_data`.
    Sync,
}

/// How long an injected fault lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultMode {
    /// Only the chosen call fails (a transient error).
    Once,
    /// The chosen call and every later write, set_len and sync fail (a dead disk). Reads work.
    Forever,
}

#[derive(Clone, Debug)]
enum Unsynced {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

#[derive(Debug, Default)]
struct DiskState {
    /// What reads see: the file as the OS page cache holds it.
    image: Vec<u8>,
    /// What a power loss keeps for sure: the image at the last successful `sync_data`.
    durable: Vec<u8>,
    /// Writes and length changes since that sync, in order.
    unsynced: Vec<Unsynced>,
    /// Mutating calls (write, set_len, sync_data) so far, failed ones included.
    io_ops: u64,
    /// The call number (in `io_ops`) that fails, and how.
    fault: Option<(u64, FaultMode)>,
    /// Calls failed so far.
    faults_hit: u64,
    /// Every mutating call, when tracing (kind, ok).
    trace: Option<Vec<(IoKind, bool)>>,
}

/// A simulated disk: an in-memory file image that knows what is durable, fails chosen calls,
/// and produces what a power loss would leave. Cheap to clone (shared state).
#[derive(Clone, Debug, Default)]
pub struct Disk {
    state: Arc<Mutex<DiskState>>,
}

impl Disk {
    /// An empty disk (a new file).
    pub fn new() -> Disk {
        Disk::default()
    }

    /// A disk holding `image`, all of it durable (a file found on disk after a restart).
    pub fn from_image(image: Vec<u8>) -> Disk {
        let disk = Disk::default();
        {
            let mut state = disk.state.lock();
            state.durable = image.clone();
            state.image = image;
        }
        disk
    }

    /// A redb storage backend on this disk. Hand it to [`Store::open_with_backend`].
    pub fn backend(&self) -> DiskBackend {
        DiskBackend { disk: self.clone() }
    }

    /// The file as reads see it (what a process crash without power loss leaves).
    pub fn image(&self) -> Vec<u8> {
        self.state.lock().image.clone()
    }

    /// The file at the last successful sync.
    pub fn durable_image(&self) -> Vec<u8> {
        self.state.lock().durable.clone()
    }

    /// What a power loss now leaves: the durable image plus a random subset (chosen by `seed`)
    /// of the writes and length changes made since, applied in order.
    pub fn power_loss_image(&self, seed: u64) -> Vec<u8> {
        let state = self.state.lock();
        let mut rng = SplitMix64::new(seed);
        let mut image = state.durable.clone();
        for entry in &state.unsynced {
            if rng.one_in(2) {
                continue;
            }
            match entry {
                Unsynced::SetLen(len) => image.resize(usize::try_from(*len).unwrap_or(0), 0),
                Unsynced::Write { offset, data } => {
                    let start = usize::try_from(*offset).unwrap_or(usize::MAX);
                    let end = start.saturating_add(data.len());
                    if end == usize::MAX {
                        continue;
                    }
                    if image.len() < end {
                        image.resize(end, 0);
                    }
                    image[start..end].copy_from_slice(data);
                }
            }
        }
        image
    }

    /// How many writes and length changes are not yet durable.
    pub fn unsynced_ops(&self) -> usize {
        self.state.lock().unsynced.len()
    }

    /// Mutating calls (write, set_len, sync_data) so far.
    pub fn io_ops(&self) -> u64 {
        self.state.lock().io_ops
    }

    /// Calls failed by an injected fault so far.
    pub fn faults_hit(&self) -> u64 {
        self.state.lock().faults_hit
    }

    /// Fails the mutating call number `at` (counted from 0 since the disk was made), in `mode`.
    pub fn fail_at(&self, at: u64, mode: FaultMode) {
        self.state.lock().fault = Some((at, mode));
    }

    /// Fails the `n`-th mutating call from now (0: the next one).
    pub fn fail_after(&self, n: u64, mode: FaultMode) {
        let mut state = self.state.lock();
        state.fault = Some((state.io_ops + n, mode));
    }

    /// Removes any injected fault (the disk works again).
    pub fn heal(&self) {
        self.state.lock().fault = None;
    }

    /// Starts recording every mutating call.
    pub fn start_trace(&self) {
        self.state.lock().trace = Some(Vec::new());
    }

    /// The recorded calls.
    pub fn trace(&self) -> Vec<(IoKind, bool)> {
        self.state.lock().trace.clone().unwrap_or_default()
    }

    /// Counts a mutating call and says whether it fails.
    fn check(state: &mut DiskState, kind: IoKind) -> std::io::Result<()> {
        let n = state.io_ops;
        state.io_ops += 1;
        let fails = match state.fault {
            Some((at, FaultMode::Once)) => n == at,
            Some((at, FaultMode::Forever)) => n >= at,
            None => false,
        };
        if let Some(trace) = &mut state.trace {
            trace.push((kind, !fails));
        }
        if fails {
            state.faults_hit += 1;
            Err(std::io::Error::other(format!(
                "injected fault on {kind:?} (call {n})"
            )))
        } else {
            Ok(())
        }
    }
}

/// The [`redb::StorageBackend`] of a [`Disk`].
#[derive(Debug)]
pub struct DiskBackend {
    disk: Disk,
}

/// What a real file answers to a read past its end (`read_exact_at`'s `UnexpectedEof`), so a
/// damaged length that sends redb past the end is seen as the real backend would show it.
fn out_of_range() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::UnexpectedEof,
        "read past the end of the file",
    )
}

impl redb::StorageBackend for DiskBackend {
    fn len(&self) -> Result<u64, std::io::Error> {
        Ok(self.disk.state.lock().image.len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        let state = self.disk.state.lock();
        let start = usize::try_from(offset).map_err(|_| out_of_range())?;
        let source = start
            .checked_add(out.len())
            .and_then(|end| state.image.get(start..end))
            .ok_or_else(out_of_range)?;
        out.copy_from_slice(source);
        Ok(())
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        let mut state = self.disk.state.lock();
        Disk::check(&mut state, IoKind::SetLen)?;
        let new_len = usize::try_from(len).map_err(|_| out_of_range())?;
        state.image.resize(new_len, 0);
        state.unsynced.push(Unsynced::SetLen(len));
        Ok(())
    }

    fn sync_data(&self) -> Result<(), std::io::Error> {
        let mut state = self.disk.state.lock();
        Disk::check(&mut state, IoKind::Sync)?;
        state.durable = state.image.clone();
        state.unsynced.clear();
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        let mut state = self.disk.state.lock();
        Disk::check(&mut state, IoKind::Write)?;
        let start = usize::try_from(offset).map_err(|_| out_of_range())?;
        let end = start.checked_add(data.len()).ok_or_else(out_of_range)?;
        let target = state.image.get_mut(start..end).ok_or_else(out_of_range)?;
        target.copy_from_slice(data);
        state.unsynced.push(Unsynced::Write {
            offset,
            data: data.to_vec(),
        });
        Ok(())
    }
}
