//! A small deterministic random number generator (no dependency, same sequence everywhere): the
//! one SplitMix64 of the crate, its tests, benches and fuzz targets.

/// SplitMix64: enough randomness for choosing fault points and subsets, reproducible by seed.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            0
        } else {
            self.next_u64() % bound
        }
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// A MiniLM-like embedding: `dimension` gaussian floats (Box-Muller), normalised to unit
    /// length (a sentence encoder's vectors lie within a few binades, as these do).
    pub fn minilm_like(&mut self, dimension: usize) -> Vec<f32> {
        let mut uniform = || ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let v: Vec<f64> = (0..dimension)
            .map(|_| (-2.0 * uniform().ln()).sqrt() * (std::f64::consts::TAU * uniform()).cos())
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.iter().map(|x| (x / norm) as f32).collect()
    }
}
