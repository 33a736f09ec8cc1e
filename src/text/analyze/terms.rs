//! [`Terms`]: one text's distinct terms and their counts, in a hash table of their own for
//! short terms and `hashbrown` for long ones.

use std::hash::BuildHasher;

/// One text's terms counted, in buffers reused from one text to the next: each distinct term
/// is copied once into an arena and found again through a hash table of its place, so
/// analysing a chunk allocates nothing once the buffers have grown. The distinct terms come
/// out in the order of their first occurrence (sorting them cost more than all the rest).
///
/// Terms of up to 8 bytes (most words of prose) are found as one integer in an
/// open-addressing table of their own ([`short_key`]): a lookup is a multiply and a compare
/// of two integers, not a string hash and a byte comparison (the analysis was the larger
/// part of an accepted write's text-index cost). Longer terms go through `hashbrown`. A term
/// always goes to the same table (by its bytes), so each is counted in one place.
pub(crate) struct Terms {
    /// Every distinct term of the text, one after the other (each the bytes of a `str`).
    arena: Vec<u8>,
    /// Each distinct term's span in `arena` and its count, in order of first occurrence.
    counts: Vec<(u32, u32, u32)>,
    /// Each distinct long term's index in `counts`, by the term's hash.
    places: hashbrown::HashTable<u32>,
    /// Short terms: a power of two long (or empty), at most half full with entries of the
    /// current generation (a quarter, after a run of ASCII words: fewer collisions); an
    /// entry of another generation is free (so a new text does not clear the table).
    short: Vec<ShortEntry>,
    /// Entries of `short` of the current generation.
    short_used: usize,
    /// The current text's generation of `short` entries (never 0, which no entry of a text
    /// has).
    generation: u32,
    /// Seeded at random, so no text can be crafted to collide.
    hasher: foldhash::fast::RandomState,
    /// The short table's hash seeds (drawn from `hasher`; the second odd).
    seeds: (u64, u64),
    /// The number of terms (repeats included).
    len: u32,
    /// An ASCII text's pieces in order, found before any is counted: a short word's key,
    /// or 0 for the next of `others` (the analyzer's buffers, kept here for reuse).
    pub(super) keys: Vec<u64>,
    /// An ASCII text's pieces that are not short words: (start, end, alphanumeric, has an
    /// upper-case letter).
    pub(super) others: Vec<(usize, usize, bool, bool)>,
}

/// An entry of [`Terms`]' short table.
#[derive(Clone, Copy, Default)]
struct ShortEntry {
    /// The term's key ([`short_key`]).
    key: u64,
    /// Its index in `counts`.
    place: u32,
    /// The text it belongs to ([`Terms`]' `generation`).
    generation: u32,
}

impl Default for Terms {
    fn default() -> Terms {
        let hasher = foldhash::fast::RandomState::default();
        let seeds = (hasher.hash_one(1u64), hasher.hash_one(2u64) | 1);
        Terms {
            seeds,
            arena: Vec::new(),
            counts: Vec::new(),
            places: hashbrown::HashTable::new(),
            short: Vec::new(),
            short_used: 0,
            generation: 1,
            hasher,
            len: 0,
            keys: Vec::new(),
            others: Vec::new(),
        }
    }
}

impl std::fmt::Debug for Terms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terms")
            .field("distinct", &self.counts.len())
            .field("len", &self.len)
            .finish()
    }
}

impl Terms {
    pub(super) fn clear(&mut self) {
        self.arena.clear();
        self.counts.clear();
        self.places.clear();
        if self.short_used > 0 {
            self.generation = self.generation.wrapping_add(1);
            if self.generation == 0 {
                // Every 2^32 texts: entries of the generation coming round again are freed.
                self.short.fill(ShortEntry::default());
                self.generation = 1;
            }
            self.short_used = 0;
        }
        self.len = 0;
    }

    /// Counts one occurrence of `term`.
    pub(super) fn add(&mut self, term: &str) {
        match short_key(term.as_bytes()) {
            Some(key) => self.add_short(key, term.len()),
            None => self.add_long(term.as_bytes()),
        }
    }

    /// Whether the arena can take `n` more bytes: a chunk's text is at most
    /// `MAX_FIELD_BYTES` (far below 4 GiB); only a query of gigabytes could take the arena
    /// past u32 offsets, and a term that would is left out.
    fn arena_takes(&self, n: usize) -> bool {
        self.arena.len().saturating_add(n) <= u32::MAX as usize
    }

    /// Counts the short words `keys` (none 0) in order, as [`Terms::add_short`] does one
    /// by one: with the table grown and the arena's room checked once for the whole run,
    /// and the lengths kept in locals (a call per word stored and reloaded them). The table
    /// is grown to at most a quarter full: at half, a word of prose found another's entry
    /// first about one time in five, and that branch mispredicted.
    #[inline]
    pub(super) fn add_short_run(&mut self, keys: &[u64]) {
        while (self.short_used + keys.len()) * 4 > self.short.len() {
            self.grow_short();
        }
        if !self.arena_takes(SHORT_TERM_BYTES * keys.len()) {
            for &key in keys {
                self.add_short(key, short_len(key));
            }
            return;
        }
        let generation = self.generation;
        let mask = self.short.len() - 1;
        let seeds = self.seeds;
        let Terms {
            arena,
            counts,
            short,
            short_used,
            len,
            ..
        } = self;
        // Room for every key being new, written through slices with the lengths in locals
        // (writes through a `Vec` made the compiler reload every length after each).
        let (counts_from, arena_from) = (counts.len(), arena.len());
        counts.resize(counts_from + keys.len(), (0, 0, 0));
        arena.resize(arena_from + SHORT_TERM_BYTES * keys.len(), 0);
        let (mut counts_len, mut arena_len) = (counts_from, arena_from);
        let (counts_room, arena_room) = (counts.as_mut_slice(), arena.as_mut_slice());
        for &key in keys {
            let mut at = short_slot(seeds, key) & mask;
            // The table is at most a quarter full: a free entry comes before `at` wraps round.
            while let Some(entry) = short.get_mut(at) {
                if entry.generation == generation {
                    if entry.key == key {
                        if let Some(counted) = counts_room.get_mut(entry.place as usize) {
                            counted.2 = counted.2.saturating_add(1);
                        }
                        break;
                    }
                    at = (at + 1) & mask;
                    continue;
                }
                // The key's bytes are the term's (ASCII letters and digits).
                let end = arena_len + short_len(key);
                if let (Some(bytes), Some(counted)) = (
                    arena_room.get_mut(arena_len..arena_len + SHORT_TERM_BYTES),
                    counts_room.get_mut(counts_len),
                ) {
                    bytes.copy_from_slice(&key.to_le_bytes());
                    *counted = (arena_len as u32, end as u32, 1);
                    *entry = ShortEntry {
                        key,
                        place: counts_len as u32,
                        generation,
                    };
                    counts_len += 1;
                    arena_len = end;
                }
                break;
            }
        }
        counts.truncate(counts_len);
        arena.truncate(arena_len);
        *short_used += counts_len - counts_from;
        *len = len.saturating_add(keys.len() as u32);
    }

    /// Counts one occurrence of the short term of `n` bytes whose key is `key`.
    #[inline]
    fn add_short(&mut self, key: u64, n: usize) {
        if self.short_used * 2 >= self.short.len() {
            self.grow_short();
        }
        let mask = self.short.len() - 1;
        let mut at = self.short_slot(key);
        loop {
            let entry = self.short[at];
            if entry.generation == self.generation {
                if entry.key == key {
                    let count = &mut self.counts[entry.place as usize].2;
                    *count = count.saturating_add(1);
                    break;
                }
                at = (at + 1) & mask;
                continue;
            }
            if !self.arena_takes(SHORT_TERM_BYTES) {
                return;
            }
            // The key's bytes are the term's (of a `str`, or ASCII letters and digits).
            let start = self.arena.len();
            self.arena.extend_from_slice(&key.to_le_bytes());
            self.arena.truncate(start + n);
            let place = self.counts.len() as u32;
            self.counts.push((start as u32, self.arena.len() as u32, 1));
            self.short[at] = ShortEntry {
                key,
                place,
                generation: self.generation,
            };
            self.short_used += 1;
            break;
        }
        self.len = self.len.saturating_add(1);
    }

    /// Where `key`'s probe starts in the short table (a power of two of at least 64
    /// entries): both halves of a seeded 128-bit product folded together, so that the keys
    /// of similar words do not cluster under linear probing.
    #[inline(always)]
    fn short_slot(&self, key: u64) -> usize {
        short_slot(self.seeds, key) & (self.short.len() - 1)
    }

    /// Doubles the short table (64 entries at first) and places the current text's keys
    /// again.
    fn grow_short(&mut self) {
        let size = (self.short.len() * 2).max(64);
        let old = std::mem::replace(&mut self.short, vec![ShortEntry::default(); size]);
        let generation = self.generation;
        let mask = size - 1;
        for entry in old.into_iter().filter(|e| e.generation == generation) {
            let mut at = self.short_slot(entry.key);
            while self.short[at].generation == generation {
                at = (at + 1) & mask;
            }
            self.short[at] = entry;
        }
    }

    /// Counts one occurrence of a term longer than [`SHORT_TERM_BYTES`] (or with a zero
    /// byte): the bytes of a `str`.
    pub(super) fn add_long(&mut self, term: &[u8]) {
        let Terms {
            arena,
            counts,
            places,
            hasher,
            len,
            ..
        } = self;
        let span = |i: u32| {
            let (start, end, _) = counts[i as usize];
            arena.get(start as usize..end as usize).unwrap_or_default()
        };
        let hash = hasher.hash_one(term);
        let entry = places.entry(hash, |&i| span(i) == term, |&i| hasher.hash_one(span(i)));
        match entry {
            hashbrown::hash_table::Entry::Occupied(found) => {
                let count = &mut counts[*found.get() as usize].2;
                *count = count.saturating_add(1);
            }
            hashbrown::hash_table::Entry::Vacant(vacant) => {
                // See `arena_takes`.
                if arena.len().saturating_add(term.len()) > u32::MAX as usize {
                    return;
                }
                let start = arena.len() as u32;
                arena.extend_from_slice(term);
                let place = counts.len() as u32;
                counts.push((start, arena.len() as u32, 1));
                vacant.insert(place);
            }
        }
        *len = len.saturating_add(1);
    }

    /// About how many bytes the buffers hold.
    pub(super) fn capacity_bytes(&self) -> usize {
        self.arena.capacity()
            + self.counts.capacity() * std::mem::size_of::<(u32, u32, u32)>()
            + self.places.capacity() * (std::mem::size_of::<u32>() + 1)
            + self.short.capacity() * std::mem::size_of::<ShortEntry>()
            + self.keys.capacity() * std::mem::size_of::<u64>()
            + self.others.capacity() * std::mem::size_of::<(usize, usize, bool, bool)>()
    }

    /// The number of terms of the text (its length for BM25).
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// The current text's generation of short-table entries.
    #[cfg(test)]
    pub(super) fn generation(&self) -> u32 {
        self.generation
    }

    /// Sets the current text's generation (as if that many texts had been analysed).
    #[cfg(test)]
    pub(super) fn set_generation(&mut self, generation: u32) {
        self.generation = generation;
    }

    /// The number of distinct terms.
    #[cfg(test)]
    pub(crate) fn distinct(&self) -> usize {
        self.counts.len()
    }

    /// Each distinct term with its count, in order of first occurrence.
    pub(crate) fn counts(&self) -> impl Iterator<Item = (&str, u32)> + '_ {
        self.counts.iter().map(|&(start, end, count)| {
            let term = self.arena.get(start as usize..end as usize);
            (
                term.and_then(|t| std::str::from_utf8(t).ok())
                    .unwrap_or_default(),
                count,
            )
        })
    }

    /// The distinct terms as (start, end, count) spans of the arena, in order of first
    /// occurrence, and the arena (the terms one after the other, in that order): what a row
    /// is encoded from.
    pub(crate) fn spans(&self) -> (&[u8], &[(u32, u32, u32)]) {
        (&self.arena, &self.counts)
    }
}

/// The short words counted by one [`Terms::add_short_run`] at most (the table is grown for
/// a whole run as if each were new).
pub(super) const SHORT_RUN: usize = 1024;

/// A short key's hash (the folded multiply of `foldhash`, with `seeds`).
#[inline(always)]
fn short_slot(seeds: (u64, u64), key: u64) -> usize {
    let full = u128::from(key ^ seeds.0) * u128::from(seeds.1);
    (full as u64 ^ (full >> 64) as u64) as usize
}

/// The length of the short term whose key is `key` (not 0): its highest byte is the
/// term's last, as no term of a key has a zero byte.
#[inline(always)]
fn short_len(key: u64) -> usize {
    SHORT_TERM_BYTES - key.leading_zeros() as usize / 8
}

/// The terms of at most [`SHORT_TERM_BYTES`] bytes, none of them zero, as one integer: the
/// bytes little-endian, zero above them (so terms of different lengths differ too, and no
/// term is 0).
pub(super) const SHORT_TERM_BYTES: usize = 8;

#[inline]
pub(super) fn short_key(term: &[u8]) -> Option<u64> {
    if term.len() > SHORT_TERM_BYTES || term.contains(&0) {
        return None;
    }
    let mut le = [0u8; SHORT_TERM_BYTES];
    le[..term.len()].copy_from_slice(term);
    Some(u64::from_le_bytes(le))
}
