//! The rows' vectors in memory, beside their words ([`super::terms`]), so
//! that the vector half of a search is an exact scan here rather than a
//! LanceDB query: the query (with its IVF_HNSW_SQ index) was most of a
//! search, and a scan of the vectors in memory takes a fraction of its
//! time (`memd bench search-path`; BENCHMARKS.md, "Where a search's time
//! goes"). Kept only up to [`MAX_ROWS`] rows: past that the memory (1.5 KiB
//! a row at 384 dimensions) is not worth it, and LanceDB's index answers.
//!
//! The distance is LanceDB's cosine distance, `1 - a·b / (|a| |b|)` (1 for
//! a zero vector), so the list is the one an exact LanceDB scan gives.

/// Most rows whose vectors are kept: 30 MiB at 384 dimensions.
pub(super) const MAX_ROWS: usize = 20_000;

/// One vector per slot of [`super::terms::Terms`].
#[derive(Clone)]
pub(super) struct Vectors {
    dim: usize,
    /// Slot-major: slot `s` is `data[s * dim..(s + 1) * dim]`.
    data: Vec<f32>,
    /// Each slot's `1 / |v|` (0 for a zero vector), and whether it is live.
    inverse_norms: Vec<f32>,
    live: Vec<bool>,
    count: usize,
}

impl Vectors {
    pub(super) fn new(dim: usize) -> Vectors {
        Vectors {
            dim,
            data: Vec::new(),
            inverse_norms: Vec::new(),
            live: Vec::new(),
            count: 0,
        }
    }

    pub(super) fn dim(&self) -> usize {
        self.dim
    }

    /// How many slots hold a vector.
    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// Slot `slot` holds `v`; false (nothing kept) if `v` has another
    /// dimension.
    pub(super) fn set(&mut self, slot: u32, v: &[f32]) -> bool {
        if v.len() != self.dim {
            return false;
        }
        let s = slot as usize;
        if self.live.len() <= s {
            self.live.resize(s + 1, false);
            self.inverse_norms.resize(s + 1, 0.0);
            self.data.resize((s + 1) * self.dim, 0.0);
        }
        self.data[s * self.dim..(s + 1) * self.dim].copy_from_slice(v);
        self.inverse_norms[s] = inverse_norm(v);
        if !self.live[s] {
            self.count += 1;
        }
        self.live[s] = true;
        true
    }

    /// Slot `slot` no longer holds a vector.
    pub(super) fn unset(&mut self, slot: u32) {
        if let Some(live) = self.live.get_mut(slot as usize)
            && *live
        {
            *live = false;
            self.count -= 1;
        }
    }

    /// Whether `slot` holds a vector.
    pub(super) fn live(&self, slot: u32) -> bool {
        self.live.get(slot as usize).copied().unwrap_or(false)
    }

    /// `1 / |v|` of the vector of `slot` (0 for a zero vector).
    pub(super) fn inverse_norm(&self, slot: u32) -> f32 {
        self.inverse_norms
            .get(slot as usize)
            .copied()
            .unwrap_or(0.0)
    }

    /// The vector of `slot`.
    pub(super) fn get(&self, slot: u32) -> &[f32] {
        let s = slot as usize;
        &self.data[s * self.dim..(s + 1) * self.dim]
    }
}

/// The slots `0..slots` of dimension `dim` that `keep` keeps, each given
/// by `vector` with its inverse norm, with their cosine distance to
/// `query`: the `n` nearest, and any as near as the `n`-th (which of
/// those tied at the cut are listed is the caller's choice, and must not
/// depend on the slots, which depend on the order rows were written),
/// nearest first. Empty if `query` has another dimension. For the
/// vectors kept in memory and those of the words file ([`super::words`]).
pub(super) fn nearest_among<'a>(
    dim: usize,
    slots: usize,
    (query, n): (&[f32], usize),
    keep: impl Fn(u32) -> bool,
    vector: impl Fn(u32) -> (&'a [f32], f32),
) -> Vec<(u32, f32)> {
    if query.len() != dim || n == 0 {
        return Vec::new();
    }
    let q_norm = dot(query, query).sqrt();
    let q_inverse = if q_norm > 0.0 { 1.0 / q_norm } else { 0.0 };
    let mut all: Vec<(u32, f32)> = (0..slots as u32)
        .filter(|&s| keep(s))
        .map(|s| {
            let (v, inverse) = vector(s);
            let scale = inverse * q_inverse;
            let d = match scale > 0.0 {
                true => 1.0 - dot(query, v) * scale,
                false => 1.0,
            };
            (s, d)
        })
        .collect();
    let by = |a: &(u32, f32), b: &(u32, f32)| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0));
    if all.len() > n {
        all.select_nth_unstable_by(n - 1, by);
        let cut = all[n - 1].1;
        let (near, rest) = all.split_at_mut(n);
        let tied: Vec<(u32, f32)> = rest.iter().copied().filter(|x| x.1 <= cut).collect();
        let mut kept = near.to_vec();
        kept.extend(tied);
        all = kept;
    }
    all.sort_by(by);
    all
}

/// `a · b`, by LanceDB's kernels: dispatched at run time to the widest
/// vector instructions the processor has, and built at full optimisation
/// (memd itself is built at opt-level 1, where a plain loop took 6 ms for
/// 10,000 rows).
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    lance_linalg::distance::dot_f32(a, b)
}

/// `1 / |v|`, 0 for a zero vector (as [`Vectors`] keeps it).
pub(super) fn inverse_norm(v: &[f32]) -> f32 {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 { 1.0 / norm } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nearest(v: &Vectors, query: &[f32], n: usize) -> Vec<(u32, f32)> {
        let vector = |s: u32| (v.get(s), v.inverse_norm(s));
        nearest_among(v.dim, v.live.len(), (query, n), |s| v.live(s), vector)
    }

    /// The nearest slots by cosine distance, with every one tied at the
    /// cut, the removed ones left out and a zero vector at distance 1.
    #[test]
    fn the_nearest_live_slots_by_cosine_distance() {
        let mut v = Vectors::new(3);
        assert!(v.set(0, &[1.0, 0.0, 0.0]));
        assert!(v.set(1, &[0.0, 2.0, 0.0]));
        assert!(v.set(2, &[1.0, 1.0, 0.0]));
        assert!(v.set(3, &[0.0, 0.0, 0.0]));
        assert!(v.set(5, &[3.0, 0.1, 0.0]));
        assert!(!v.set(4, &[1.0, 0.0]), "another dimension is refused");
        v.unset(5);
        assert_eq!(v.len(), 4);
        let near = nearest(&v, &[2.0, 0.0, 0.0], 3);
        let slots: Vec<u32> = near.iter().map(|(s, _)| *s).collect();
        assert_eq!(slots, [0, 2, 1, 3], "the ties at the cut are all listed");
        assert!(near[0].1.abs() < 1e-6);
        assert!((near[1].1 - (1.0 - 1.0 / 2f32.sqrt())).abs() < 1e-6);
        assert!((near[2].1 - 1.0).abs() < 1e-6);
        let all = nearest(&v, &[2.0, 0.0, 0.0], 10);
        assert_eq!(all.len(), 4);
        assert_eq!(all[3], (3, 1.0), "a zero vector is at distance 1");
    }
}
