//! Product quantisation: the compact codes a budgeted index keeps in memory instead of the
//! vectors (see [`super::budget`]).
//!
//! A vector of `dim` floats is cut into `m` consecutive subspaces (widths differing by at
//! most one); each subspace has [`CENTROIDS`] centroids fitted by k-means on a sample
//! ([`ProductQuantizer::train`]), and a vector's code is, per subspace, the byte naming its
//! nearest centroid: `m` bytes instead of `4 * dim`. A query is compared with codes
//! asymmetrically: [`ProductQuantizer::table`] computes, once per query, the query's partial
//! distance to every centroid of every subspace, and a code's distance is the sum of `m`
//! looked-up entries ([`Table::distance`]). The estimate only steers the traversal; a
//! budgeted search's hits are scored again on the exact vectors read from the file.

use super::distance::dot_distance;
use super::workers::map_in_halves;
use super::Metric;

/// Centroids per subspace: one byte of code.
pub(crate) const CENTROIDS: usize = 256;

/// k-means rounds of a training.
const ROUNDS: usize = 8;

/// Subspaces trained on separate threads when at least this many (each is independent).
const PARALLEL_SUBSPACES: usize = 2;

/// A trained product quantiser.
#[derive(Debug, Clone)]
pub(crate) struct ProductQuantizer {
    metric: Metric,
    /// Subspace `j` covers dimensions `bounds[j]..bounds[j + 1]`.
    bounds: Vec<usize>,
    /// Subspace `j`'s centroids, from `CENTROIDS * bounds[j]` on, one coordinate at a
    /// time: for each of its dimensions, that coordinate of its [`CENTROIDS`] centroids
    /// (so a query's table row and a vector's encoding run along contiguous columns).
    centroids: Vec<f32>,
}

/// A query's distances to every centroid, for [`Table::distance`].
pub(crate) struct Table {
    metric: Metric,
    /// `m` rows of [`CENTROIDS`] partial sums (dot products for cosine and dot, squared
    /// differences for L2); a row is an array, so a code byte indexes it unchecked.
    entries: Vec<[f32; CENTROIDS]>,
}

impl Table {
    /// The estimated distance (in the metric's internal units, see
    /// [`super::distance::distance`]) from the query to the vector coded as `code`.
    ///
    /// Four running sums (subspace `j` into sum `j % 4`) held in registers: the
    /// traversal's inner loop.
    #[inline]
    pub(crate) fn distance(&self, code: &[u8]) -> f32 {
        let n = code.len().min(self.entries.len());
        let (rows, code) = (&self.entries[..n], &code[..n]);
        let (mut s0, mut s1, mut s2, mut s3) = (0f32, 0f32, 0f32, 0f32);
        let (rows4, codes4) = (rows.chunks_exact(4), code.chunks_exact(4));
        let (rows_tail, codes_tail) = (rows4.remainder(), codes4.remainder());
        for (r, c) in rows4.zip(codes4) {
            s0 += r[0][usize::from(c[0])];
            s1 += r[1][usize::from(c[1])];
            s2 += r[2][usize::from(c[2])];
            s3 += r[3][usize::from(c[3])];
        }
        let mut tail = [0f32; 3];
        for ((t, r), &c) in tail.iter_mut().zip(rows_tail).zip(codes_tail) {
            *t = r[usize::from(c)];
        }
        s0 += tail[0];
        s1 += tail[1];
        s2 += tail[2];
        finish(self.metric, (s0 + s1) + (s2 + s3))
    }
}

/// The metric's internal distance from a raw sum (as `distance::distance` maps it).
#[inline]
fn finish(metric: Metric, raw: f32) -> f32 {
    let d = match metric {
        Metric::Cosine => 1.0 - raw,
        Metric::L2 => raw,
        Metric::Dot => dot_distance(raw),
    };
    super::distance::finish(d)
}

/// The subspace boundaries of `m` subspaces over `dim` dimensions (`m` clamped to
/// `1..=dim`).
fn bounds(dim: usize, m: usize) -> Vec<usize> {
    let m = m.clamp(1, dim.max(1));
    (0..=m).map(|j| j * dim / m).collect()
}

impl ProductQuantizer {
    /// A quantiser of `m` subspaces (clamped to `1..=dim`) trained on `sample` (`dim`
    /// floats per vector, at least one vector). Deterministic for a given sample.
    pub(crate) fn train(dim: usize, m: usize, metric: Metric, sample: &[f32]) -> ProductQuantizer {
        let bounds = bounds(dim, m);
        let n = sample.len() / dim.max(1);
        let per_subspace = map_in_halves(bounds.len() - 1, PARALLEL_SUBSPACES, |j| {
            let (lo, hi) = (bounds[j], bounds[j + 1]);
            let width = hi - lo;
            // The subspace's values, contiguous.
            let mut points = Vec::with_capacity(n * width);
            for row in sample.chunks_exact(dim).take(n) {
                points.extend_from_slice(&row[lo..hi]);
            }
            kmeans(&points, width, j as u64)
        });
        let mut centroids = Vec::with_capacity(CENTROIDS * dim);
        for (j, c) in per_subspace.iter().enumerate() {
            let width = bounds[j + 1] - bounds[j];
            for d in 0..width {
                centroids.extend(c.chunks_exact(width).map(|centroid| centroid[d]));
            }
        }
        ProductQuantizer {
            metric,
            bounds,
            centroids,
        }
    }

    /// Bytes of one code (the number of subspaces).
    pub(crate) fn code_len(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Bytes the quantiser itself holds (its centroids).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.centroids.capacity() * 4 + self.bounds.capacity() * 8
    }

    /// The centroids, subspace after subspace ([`CENTROIDS`] rows of each subspace's
    /// width): what a persisted budgeted index saves ([`Self::from_centroids`]).
    pub(crate) fn centroids(&self) -> &[f32] {
        &self.centroids
    }

    /// The quantiser of `code_len` subspaces over `dim` dimensions whose centroids are
    /// `centroids` (as [`Self::centroids`] gave them); `None` unless their count is
    /// `CENTROIDS * dim`, `code_len` is in `1..=dim` and every value is finite.
    pub(crate) fn from_centroids(
        dim: usize,
        code_len: usize,
        metric: Metric,
        centroids: Vec<f32>,
    ) -> Option<ProductQuantizer> {
        let ok = dim > 0
            && (1..=dim).contains(&code_len)
            && Some(centroids.len()) == CENTROIDS.checked_mul(dim)
            && centroids.iter().all(|x| x.is_finite());
        ok.then(|| ProductQuantizer {
            metric,
            bounds: bounds(dim, code_len),
            centroids,
        })
    }

    fn subspace(&self, j: usize) -> (usize, usize, &[f32]) {
        let (lo, hi) = (self.bounds[j], self.bounds[j + 1]);
        let centroids = &self.centroids[CENTROIDS * lo..CENTROIDS * hi];
        (lo, hi, centroids)
    }

    /// Writes `vector`'s code (the nearest centroid per subspace) into `code`
    /// ([`Self::code_len`] bytes).
    pub(crate) fn encode_into(&self, vector: &[f32], code: &mut [u8]) {
        for (j, out) in code.iter_mut().enumerate().take(self.code_len()) {
            let (lo, hi, centroids) = self.subspace(j);
            let Some(part) = vector.get(lo..hi) else {
                return;
            };
            *out = nearest_column_major(part, centroids) as u8;
        }
    }

    /// The vector `code` stands for (each subspace's centroid), into `out` (`dim` floats).
    pub(crate) fn decode_into(&self, code: &[u8], out: &mut [f32]) {
        for (j, &c) in code.iter().enumerate().take(self.code_len()) {
            let (lo, hi, centroids) = self.subspace(j);
            let Some(dst) = out.get_mut(lo..hi) else {
                return;
            };
            for (x, column) in dst.iter_mut().zip(centroids.chunks_exact(CENTROIDS)) {
                *x = column[usize::from(c)];
            }
        }
    }

    /// The lookup table of `query` ([`Table::distance`]).
    pub(crate) fn table(&self, query: &[f32]) -> Table {
        let m = self.code_len();
        let mut entries = vec![[0f32; CENTROIDS]; m];
        for (j, row) in entries.iter_mut().enumerate() {
            let (lo, hi, centroids) = self.subspace(j);
            let Some(part) = query.get(lo..hi) else {
                break;
            };
            // Column by column: each step is one multiply-add over the row's CENTROIDS
            // entries (the same sums, in the same order, as centroid by centroid).
            for (&q, column) in part.iter().zip(centroids.chunks_exact(CENTROIDS)) {
                match self.metric {
                    Metric::L2 => {
                        for (entry, &x) in row.iter_mut().zip(column) {
                            *entry += (q - x) * (q - x);
                        }
                    }
                    Metric::Cosine | Metric::Dot => {
                        for (entry, &x) in row.iter_mut().zip(column) {
                            *entry += q * x;
                        }
                    }
                }
            }
        }
        Table {
            metric: self.metric,
            entries,
        }
    }
}

/// Index of the centroid nearest to `point` (squared L2) among [`CENTROIDS`] stored one
/// coordinate at a time (see `ProductQuantizer::centroids`); the first of equals.
#[inline]
fn nearest_column_major(point: &[f32], columns: &[f32]) -> usize {
    let mut sums = [0f32; CENTROIDS];
    for (&p, column) in point.iter().zip(columns.chunks_exact(CENTROIDS)) {
        for (sum, &x) in sums.iter_mut().zip(column) {
            *sum += (p - x) * (p - x);
        }
    }
    let mut best = (f32::INFINITY, 0usize);
    for (i, &d) in sums.iter().enumerate() {
        if d < best.0 {
            best = (d, i);
        }
    }
    best.1
}

/// Index of the row of `centroids` (`width` floats each) nearest to `point` (squared L2).
#[inline]
fn nearest(point: &[f32], centroids: &[f32], width: usize) -> usize {
    let mut best = (f32::INFINITY, 0usize);
    for (i, c) in centroids.chunks_exact(width.max(1)).enumerate() {
        let d: f32 = point.iter().zip(c).map(|(a, b)| (a - b) * (a - b)).sum();
        if d < best.0 {
            best = (d, i);
        }
    }
    best.1
}

/// [`CENTROIDS`] centroids of `points` (`width` floats each) by Lloyd's k-means, seeded
/// with evenly spaced points (repeated when there are fewer points than centroids). An
/// emptied centroid is moved to the point farthest from its own centroid.
fn kmeans(points: &[f32], width: usize, seed: u64) -> Vec<f32> {
    let n = points.len() / width.max(1);
    let mut centroids = vec![0f32; CENTROIDS * width];
    if n == 0 || width == 0 {
        return centroids;
    }
    let offset = (seed as usize).wrapping_mul(7919) % n.max(1);
    for (i, c) in centroids.chunks_exact_mut(width).enumerate() {
        let p = (offset + i * n / CENTROIDS.min(n).max(1)) % n;
        c.copy_from_slice(&points[p * width..(p + 1) * width]);
    }
    let mut assignment = vec![0usize; n];
    let mut distance = vec![0f32; n];
    for _ in 0..ROUNDS {
        for (p, point) in points.chunks_exact(width).enumerate() {
            let a = nearest(point, &centroids, width);
            assignment[p] = a;
            let c = &centroids[a * width..(a + 1) * width];
            distance[p] = point.iter().zip(c).map(|(x, y)| (x - y) * (x - y)).sum();
        }
        let mut sums = vec![0f64; CENTROIDS * width];
        let mut counts = vec![0usize; CENTROIDS];
        for (p, point) in points.chunks_exact(width).enumerate() {
            let a = assignment[p];
            counts[a] += 1;
            for (s, &x) in sums[a * width..(a + 1) * width].iter_mut().zip(point) {
                *s += f64::from(x);
            }
        }
        for (i, c) in centroids.chunks_exact_mut(width).enumerate() {
            if counts[i] > 0 {
                for (x, s) in c.iter_mut().zip(&sums[i * width..(i + 1) * width]) {
                    *x = (*s / counts[i] as f64) as f32;
                }
            } else if n > CENTROIDS {
                // The point worst served so far.
                let (far, _) = distance.iter().enumerate().fold(
                    (0usize, f32::NEG_INFINITY),
                    |best, (p, &d)| {
                        if d > best.1 {
                            (p, d)
                        } else {
                            best
                        }
                    },
                );
                distance[far] = 0.0;
                c.copy_from_slice(&points[far * width..(far + 1) * width]);
            }
        }
    }
    centroids
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::distance::distance;
    use crate::index::test_support::{low_rank_vectors, random_unit_vectors};

    fn flat(vectors: &[Vec<f32>]) -> Vec<f32> {
        vectors.iter().flatten().copied().collect()
    }

    #[test]
    fn codes_are_one_byte_per_subspace_and_decode_near_the_vector() {
        let dim = 32;
        let data = low_rank_vectors(1, 2000, dim);
        let pq = ProductQuantizer::train(dim, 8, Metric::Cosine, &flat(&data));
        assert_eq!(pq.code_len(), 8);
        let mut code = vec![0u8; 8];
        let mut decoded = vec![0f32; dim];
        let mut error = 0f64;
        let mut spread = 0f64;
        for v in &data[..200] {
            pq.encode_into(v, &mut code);
            pq.decode_into(&code, &mut decoded);
            error += f64::from(crate::index::distance::l2_squared(v, &decoded));
            spread += f64::from(crate::index::distance::l2_squared(v, &data[1000]));
        }
        assert!(
            error < spread / 20.0,
            "reconstruction error {error} against spread {spread}"
        );
    }

    #[test]
    fn the_table_distance_is_the_distance_to_the_decoded_vector() {
        for metric in [Metric::Cosine, Metric::L2, Metric::Dot] {
            let dim = 24;
            let data = random_unit_vectors(2, 600, dim);
            // Uneven widths: 24 dimensions over 7 subspaces.
            let pq = ProductQuantizer::train(dim, 7, metric, &flat(&data));
            let query = &data[5];
            let table = pq.table(query);
            let mut code = vec![0u8; pq.code_len()];
            let mut decoded = vec![0f32; dim];
            for v in &data[100..140] {
                pq.encode_into(v, &mut code);
                pq.decode_into(&code, &mut decoded);
                let want = distance(metric, query, &decoded);
                let got = table.distance(&code);
                assert!(
                    (want - got).abs() <= 1e-4 * (1.0 + want.abs()),
                    "{metric:?}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn ranking_by_codes_finds_most_true_neighbours_in_a_short_list() {
        let dim = 64;
        let data = low_rank_vectors(3, 3000, dim);
        let pq = ProductQuantizer::train(dim, 16, Metric::Cosine, &flat(&data));
        let codes: Vec<Vec<u8>> = data
            .iter()
            .map(|v| {
                let mut c = vec![0u8; pq.code_len()];
                pq.encode_into(v, &mut c);
                c
            })
            .collect();
        let (mut found, mut total) = (0usize, 0usize);
        for q in 0..20 {
            let query = &data[q * 7];
            let mut exact: Vec<(f32, usize)> = data
                .iter()
                .enumerate()
                .map(|(i, v)| (distance(Metric::Cosine, query, v), i))
                .collect();
            exact.sort_by(|a, b| a.0.total_cmp(&b.0));
            let table = pq.table(query);
            let mut approx: Vec<(f32, usize)> = codes
                .iter()
                .enumerate()
                .map(|(i, c)| (table.distance(c), i))
                .collect();
            approx.sort_by(|a, b| a.0.total_cmp(&b.0));
            let short: Vec<usize> = approx[..100].iter().map(|x| x.1).collect();
            found += exact[..10].iter().filter(|x| short.contains(&x.1)).count();
            total += 10;
        }
        assert!(found * 100 >= total * 95, "{found} of {total}");
    }

    #[test]
    fn each_code_byte_names_its_subspaces_nearest_centroid() {
        let dim = 20;
        let data = random_unit_vectors(5, 800, dim);
        // Uneven widths: 20 dimensions over 6 subspaces.
        let pq = ProductQuantizer::train(dim, 6, Metric::L2, &flat(&data));
        let bounds = bounds(dim, 6);
        let mut code = vec![0u8; pq.code_len()];
        let mut other = vec![0u8; pq.code_len()];
        let (mut chosen, mut decoded) = (vec![0f32; dim], vec![0f32; dim]);
        for v in &data[..30] {
            pq.encode_into(v, &mut code);
            pq.decode_into(&code, &mut chosen);
            for j in 0..pq.code_len() {
                let (lo, hi) = (bounds[j], bounds[j + 1]);
                let own = crate::index::distance::l2_squared(&v[lo..hi], &chosen[lo..hi]);
                for c in 0..CENTROIDS {
                    other.copy_from_slice(&code);
                    other[j] = c as u8;
                    pq.decode_into(&other, &mut decoded);
                    let d = crate::index::distance::l2_squared(&v[lo..hi], &decoded[lo..hi]);
                    assert!(
                        own <= d,
                        "subspace {j}: centroid {c} is nearer ({d} < {own})"
                    );
                }
            }
        }
    }

    #[test]
    fn fewer_points_than_centroids_still_train() {
        let dim = 8;
        let data = random_unit_vectors(4, 10, dim);
        let pq = ProductQuantizer::train(dim, 4, Metric::L2, &flat(&data));
        let mut code = vec![0u8; 4];
        let mut decoded = vec![0f32; dim];
        pq.encode_into(&data[3], &mut code);
        pq.decode_into(&code, &mut decoded);
        assert!(crate::index::distance::l2_squared(&data[3], &decoded) < 1e-6);
    }
}
