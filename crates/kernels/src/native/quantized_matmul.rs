//! `QuantizedMatMul` natively: each block of rows of the FLOAT activation is quantized to
//! UINT8, multiplied by the INT8 weights (already in VNNI layout, packed once by the QDQ
//! pass) with INT32 accumulators, and dequantized in the store. On a host with AVX-512 VNNI
//! the product runs on `vpdpbusd` (16 columns x 4 `k` values per instruction), on AVX2 by
//! 16-bit pairs ([`super::int_avx2`]); elsewhere a portable loop gives the same integers.
//! The reference (`graphlift_runtime::reference::quantized_matmul`) defines the result;
//! every path equals it bit for bit.

use std::borrow::Cow;

use graphlift_ir::{QuantizedMatMul, TensorData};
use graphlift_runtime::reference::quantize_u8;
use graphlift_runtime::Tensor;

use super::epilogue::Epilogue;
use super::int_avx2::IntegerPath;
use super::packed::{self, PackedWeights};
use crate::parallel::{for_each, Parallel};

#[cfg(target_arch = "x86_64")]
mod avx2;

/// Rows of one register tile (the AVX-512 tile is `MR` rows x 64 columns: 24 accumulators).
const MR: usize = 6;

/// The operands of one call, checked against each other.
struct Problem<'a> {
    x: &'a [f32],
    w: &'a [i8],
    offset: &'a [i32],
    scale: &'a [f32],
    /// `K` and `N`.
    k: usize,
    n: usize,
    q: QuantizedMatMul,
    /// For the AVX2 path, the weights of each block of eight columns (the whole blocks)
    /// together and widened to `i16`: `[N / 8, ceil(K / 4), 8, 4]`, so that a tile reads
    /// them in one run as it multiplies them ([`packed::wide_quad_panels`]; packed when the
    /// executable was compiled, else made here; empty on the other paths).
    panels: Cow<'a, [i16]>,
}

/// [`QuantizedMatMul`] of `x` `[..., M, K]`, `w` `[ceil(K / 4), N, 4]`, `offset` `[N]` and
/// `scale` `[N]`, written into `out` when it is an `f32` buffer of the result's size (else a
/// new one); `epilogue` runs on each finished block of rows. `packed`, the weights
/// [`packed::prepare`] regrouped when the executable was compiled, spares the AVX2 path
/// doing it on every call. `None` when the operands do
/// not fit (the caller then runs the reference, whose error names the node).
pub(super) fn quantized_matmul(
    q: &QuantizedMatMul,
    [x, w, offset, scale]: [&Tensor; 4],
    out: Option<TensorData>,
    parallel: &Parallel,
    (epilogue, packed): (Option<Epilogue<'_>>, Option<&PackedWeights>),
) -> Option<TensorData> {
    let (TensorData::F32(xd), TensorData::I8(wd), TensorData::I32(od), TensorData::F32(sd)) =
        (x.data(), w.data(), offset.data(), scale.data())
    else {
        return None;
    };
    let (&[.., _, k], &[k4, n, 4]) = (x.shape().dims(), w.shape().dims()) else {
        return None;
    };
    let dx = x.shape().dims();
    let rows: usize = dx[..dx.len() - 1].iter().product();
    if k4 != k.div_ceil(4)
        || wd.len() != k4 * n * 4
        || od.len() != n
        || sd.len() != n
        || xd.len() != rows * k
    {
        return None;
    }
    let path = IntegerPath::host();
    let p = Problem {
        x: xd,
        w: wd,
        offset: od,
        scale: sd,
        k,
        n,
        q: *q,
        panels: match (path, packed.and_then(|w| w.panels_of(k4, n))) {
            (IntegerPath::Avx2, Some(p)) => Cow::Borrowed(p),
            (IntegerPath::Avx2, None) => Cow::Owned(packed::wide_quad_panels(wd, k4, n)),
            _ => Cow::Borrowed(&[]),
        },
    };
    let mut y = match out {
        Some(TensorData::F32(v)) if v.len() == rows * n => v,
        _ => vec![0f32; rows * n],
    };
    if n == 0 || rows == 0 {
        return Some(TensorData::F32(y));
    }
    let team = parallel.team(rows * n * k);
    let run = |(blk, c): (usize, &mut [f32]), per: usize| {
        rows_block(&p, blk * per, c, path, epilogue.as_ref());
    };
    match team {
        Some(team) => {
            let per = rows.div_ceil(team.threads()).next_multiple_of(MR).min(rows);
            for_each(team, y.chunks_mut(per * n).enumerate(), |t| run(t, per));
        }
        None => run((0, &mut y), rows),
    }
    Some(TensorData::F32(y))
}

/// Rows `first..first + c.len() / n` of the result into `c` on `path` (which the caller
/// has checked the host runs), handed to `epilogue` once written: on AVX2 by
/// [`avx2::rows`], a chunk at a time; else `MR` rows at a time, the rows quantized into a
/// small buffer (padded with zeros to a multiple of 4 `k` values), then multiplied on VNNI
/// or in portable code, and the epilogue run on the whole block.
fn rows_block(
    p: &Problem<'_>,
    first: usize,
    c: &mut [f32],
    path: IntegerPath,
    epilogue: Option<&Epilogue<'_>>,
) {
    let kp = p.k.div_ceil(4) * 4;
    #[cfg(target_arch = "x86_64")]
    if path == IntegerPath::Avx2 && p.panels.len() == p.n / 8 * (kp / 4) * 32 {
        // SAFETY: the host has AVX2 (the caller checked `path`); the panels hold the whole
        // blocks of eight columns (checked above), and `c` rows of `n` from row `first` of
        // `x` (checked in `quantized_matmul`).
        unsafe { avx2::rows(p, first, c, epilogue) };
        return;
    }
    let vnni = path == IntegerPath::Vnni;
    let mut a = vec![0u8; MR * kp];
    for (t, c) in c.chunks_mut(MR * p.n).enumerate() {
        let mr = c.len() / p.n;
        let r0 = first + t * MR;
        for i in 0..mr {
            let x = &p.x[(r0 + i) * p.k..(r0 + i + 1) * p.k];
            let row = &mut a[i * kp..i * kp + p.k];
            #[cfg(target_arch = "x86_64")]
            if vnni {
                // SAFETY: the host has AVX-512F (the caller checked `vnni`); `x` and `row` are
                // slices of one length, which is all the function reads and writes.
                unsafe { x86::quantize_row(x, p.q.x_scale, p.q.x_zero_point, row) };
                continue;
            }
            for (av, &xv) in row.iter_mut().zip(x) {
                *av = quantize_u8(xv, p.q.x_scale, p.q.x_zero_point);
            }
        }
        #[cfg(target_arch = "x86_64")]
        if vnni {
            // SAFETY: the host has AVX-512F and AVX-512 VNNI (the caller checked `vnni`); `a` holds `mr`
            // rows of `kp` bytes, `p.w` is `kp / 4 · n · 4` bytes, `offset` and `scale` `n`
            // elements, `c` `mr · n` (all checked in `quantized_matmul` or by construction).
            unsafe { x86::tile_rows(&a, mr, kp, p, c) };
            continue;
        }
        portable_rows(&a, mr, kp, p, (0..p.n, c));
    }
    if let Some(e) = epilogue {
        e.run(first * p.n, c);
    }
}

/// The portable product of `mr` quantized rows (`kp` bytes each) into columns `cols` of
/// `c`, in INT32 wrapping as the reference.
fn portable_rows(
    a: &[u8],
    mr: usize,
    kp: usize,
    p: &Problem<'_>,
    (cols, c): (std::ops::Range<usize>, &mut [f32]),
) {
    let n = p.n;
    let mut acc = vec![0i32; cols.len()];
    for i in 0..mr {
        acc.copy_from_slice(&p.offset[cols.clone()]);
        let row = &a[i * kp..(i + 1) * kp];
        for (k4, quad) in row.chunks_exact(4).enumerate() {
            let w = &p.w[(k4 * n + cols.start) * 4..(k4 * n + cols.end) * 4];
            for (s, wq) in acc.iter_mut().zip(w.chunks_exact(4)) {
                let dot: i32 = (0..4).map(|j| i32::from(quad[j]) * i32::from(wq[j])).sum();
                *s = s.wrapping_add(dot);
            }
        }
        let y = &mut c[i * n + cols.start..i * n + cols.end];
        for ((y, &s), &sc) in y.iter_mut().zip(&acc).zip(&p.scale[cols.clone()]) {
            *y = s as f32 * sc;
        }
    }
}

/// The x86 code: the AVX-512 VNNI path, and the AVX2 path's quantization.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Problem, MR};
    use crate::native::lanes::lane_mask;

    /// Columns of one register tile: four `zmm` of 16 INT32 accumulators.
    const NC: usize = 64;

    /// `x` quantized into `row` as `quantize_u8` does: the IEEE division, rounding to
    /// nearest even (`vrndscaleps`), the zero point added, the clamp to `[0, 255]` that
    /// takes NaN to 0 (`vmaxps` returns its second operand for a NaN first), the conversion.
    ///
    /// # Safety
    /// The host must have AVX-512F; `row.len() == x.len()`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn quantize_row(x: &[f32], scale: f32, zero_point: u8, row: &mut [u8]) {
        let (s, z) = (_mm512_set1_ps(scale), _mm512_set1_ps(f32::from(zero_point)));
        let (lo, hi) = (_mm512_setzero_ps(), _mm512_set1_ps(255.0));
        let len = x.len().min(row.len());
        let mut i = 0;
        while i < len {
            let m: __mmask16 = if len - i >= 16 {
                0xffff
            } else {
                (1u16 << (len - i)) - 1
            };
            // SAFETY: lanes `i..i + 16` under mask `m` are within `x` and `row` (`m` covers
            // only `i..len`); masked lanes are neither read nor written.
            unsafe {
                let v = _mm512_maskz_loadu_ps(m, x.as_ptr().add(i));
                let v = _mm512_div_ps(v, s);
                let v =
                    _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
                let v = _mm512_add_ps(v, z);
                let v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
                let b = _mm512_cvtusepi32_epi8(_mm512_cvttps_epi32(v));
                _mm_mask_storeu_epi8(row.as_mut_ptr().add(i).cast(), m, b);
            }
            i += 16;
        }
    }

    /// [`quantize_row`] on AVX2: eight values at a time (`vroundps` to nearest even, the
    /// same division, zero point, NaN-to-0 clamp and conversion), the tail in scalar code.
    ///
    /// # Safety
    /// The host must have AVX2; `row.len() == x.len()`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn quantize_row_avx2(x: &[f32], scale: f32, zero_point: u8, row: &mut [u8]) {
        let (s, z) = (_mm256_set1_ps(scale), _mm256_set1_ps(f32::from(zero_point)));
        let (lo, hi) = (_mm256_setzero_ps(), _mm256_set1_ps(255.0));
        let len = x.len().min(row.len());
        let whole = len - len % 8;
        for i in (0..whole).step_by(8) {
            // SAFETY: elements `i..i + 8 <= len` of `x` and `row`.
            unsafe {
                let v = _mm256_div_ps(_mm256_loadu_ps(x.as_ptr().add(i)), s);
                let v = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
                // `vmaxps` returns its second operand (0) for a NaN first.
                let v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, z), lo), hi);
                let i32s = _mm256_cvttps_epi32(v);
                let u16s = _mm_packus_epi32(
                    _mm256_castsi256_si128(i32s),
                    _mm256_extracti128_si256::<1>(i32s),
                );
                let u8s = _mm_packus_epi16(u16s, u16s);
                _mm_storel_epi64(row.as_mut_ptr().add(i).cast(), u8s);
            }
        }
        for (r, &v) in row[whole..len].iter_mut().zip(&x[whole..len]) {
            *r = graphlift_runtime::reference::quantize_u8(v, scale, zero_point);
        }
    }

    /// `mr` (`<= MR`) quantized rows of `a` (`kp` bytes each, a multiple of 4) times the
    /// weights of `p`, dequantized into `c` (`mr · n`), 64 columns at a time (the last tile
    /// masked).
    ///
    /// # Safety
    /// AVX-512F and AVX-512 VNNI; `a.len() >= mr · kp`, `p.w.len() == kp / 4 · n · 4`,
    /// `p.offset.len() == p.scale.len() == n`, `c.len() == mr · n`.
    #[target_feature(enable = "avx512f,avx512vnni")]
    pub(super) unsafe fn tile_rows(a: &[u8], mr: usize, kp: usize, p: &Problem<'_>, c: &mut [f32]) {
        let n = p.n;
        let mut col = 0;
        while col < n {
            let masks: [__mmask16; 4] = std::array::from_fn(|v| lane_mask(n - col, v));
            let t = Tile {
                a: a.as_ptr(),
                kp,
                w: p.w.as_ptr().wrapping_add(col * 4),
                n,
                masks,
                offset: p.offset.as_ptr().wrapping_add(col),
                scale: p.scale.as_ptr().wrapping_add(col),
                c: c.as_mut_ptr().wrapping_add(col),
            };
            // SAFETY: as this function's contract; the tile reads rows `0..mr` of `a`,
            // columns `col..col + 64` (masked to `n`) of `w`, `offset`, `scale` and `c`.
            unsafe {
                match mr {
                    6 => tile::<6>(&t),
                    5 => tile::<5>(&t),
                    4 => tile::<4>(&t),
                    3 => tile::<3>(&t),
                    2 => tile::<2>(&t),
                    _ => tile::<1>(&t),
                }
            }
            col += NC;
        }
        const _: () = assert!(MR == 6);
    }

    /// One register tile: pointers at its first column (computed with `wrapping_add`, never
    /// dereferenced outside the masks).
    struct Tile {
        a: *const u8,
        kp: usize,
        w: *const i8,
        n: usize,
        masks: [__mmask16; 4],
        offset: *const i32,
        scale: *const f32,
        c: *mut f32,
    }

    /// `R` rows x 64 columns: for each group of 4 `k` values, 4 masked loads of weights,
    /// `R` broadcasts of 4 activation bytes, `4R` `vpdpbusd`; then `(acc + offset) · scale`
    /// stored under the masks.
    ///
    /// # Safety
    /// AVX-512F and VNNI; `t.a` has `R` rows of `t.kp` bytes; `t.w` has `t.kp / 4` rows of
    /// `t.n · 4` bytes, and every column under `t.masks` is one of them; likewise
    /// `t.offset`, `t.scale` and the `R` rows of `t.c` (stride `t.n`).
    #[target_feature(enable = "avx512f,avx512vnni")]
    #[inline]
    unsafe fn tile<const R: usize>(t: &Tile) {
        let mut acc = [[_mm512_setzero_si512(); 4]; R];
        let mut b = [_mm512_setzero_si512(); 4];
        for k4 in 0..t.kp / 4 {
            let wp = t.w.wrapping_add(k4 * t.n * 4);
            for (v, (bv, &m)) in b.iter_mut().zip(&t.masks).enumerate() {
                // SAFETY: lanes under the mask are columns below `n` of weight row `k4`.
                *bv = unsafe { _mm512_maskz_loadu_epi32(m, wp.wrapping_add(64 * v).cast()) };
            }
            for (i, acc) in acc.iter_mut().enumerate() {
                // SAFETY: bytes `4·k4..4·k4 + 4` of row `i < R` are within `a`.
                let quad = unsafe { t.a.add(i * t.kp + 4 * k4).cast::<i32>().read_unaligned() };
                let av = _mm512_set1_epi32(quad);
                for (a, &bv) in acc.iter_mut().zip(&b) {
                    *a = _mm512_dpbusd_epi32(*a, av, bv);
                }
            }
        }
        for (v, &m) in t.masks.iter().enumerate() {
            // SAFETY: lanes under the mask are columns below `n` of `offset`, `scale`, and
            // of rows `i < R` of `c`.
            unsafe {
                let off = _mm512_maskz_loadu_epi32(m, t.offset.wrapping_add(16 * v).cast());
                let sc = _mm512_maskz_loadu_ps(m, t.scale.wrapping_add(16 * v));
                for (i, acc) in acc.iter().enumerate() {
                    let y = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc[v], off)), sc);
                    _mm512_mask_storeu_ps(t.c.wrapping_add(i * t.n + 16 * v), m, y);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use graphlift_ir::Shape;
    use graphlift_runtime::reference;
    use proptest::prelude::*;

    use super::*;
    use crate::parallel::ThreadConfig;

    /// The native result and the reference's for one problem.
    fn both(
        rows: usize,
        k: usize,
        n: usize,
        seed: u64,
        zp: u8,
        threads: usize,
    ) -> (Vec<f32>, Vec<f32>) {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as u32
        };
        let x: Vec<f32> = (0..rows * k)
            .map(|_| (next() % 4001) as f32 / 10.0 - 200.0)
            .collect();
        let wm: Vec<i8> = (0..k * n).map(|_| next() as u8 as i8).collect();
        let offset: Vec<i32> = (0..n).map(|_| (next() % 20001) as i32 - 10000).collect();
        let scale: Vec<f32> = (0..n).map(|_| (next() % 1000 + 1) as f32 * 1e-4).collect();
        let q = QuantizedMatMul {
            x_scale: 0.75,
            x_zero_point: zp,
        };
        let xs = Shape::new([1, rows, k]);
        let ws = Shape::new([k.div_ceil(4), n, 4]);
        let xt = Tensor::from_data(TensorData::F32(x), xs).unwrap();
        let wt = Tensor::from_data(TensorData::I8(reference::pack_vnni(&wm, k, n)), ws).unwrap();
        let ot = Tensor::from_data(TensorData::I32(offset), Shape::new([n])).unwrap();
        let st = Tensor::from_data(TensorData::F32(scale), Shape::new([n])).unwrap();
        let want = reference::quantized_matmul(
            &q,
            (xt.data(), xt.shape()),
            (wt.data(), wt.shape()),
            ot.data(),
            st.data(),
        )
        .unwrap();
        let parallel = Parallel::new(ThreadConfig::with_threads(threads));
        let got =
            quantized_matmul(&q, [&xt, &wt, &ot, &st], None, &parallel, (None, None)).unwrap();
        // With the weights packed as `packed::prepare` packs them, the same floats.
        let TensorData::I8(wv) = wt.data() else {
            panic!("INT8 weights")
        };
        let w = PackedWeights::quad_panels(wv, 1, (k.div_ceil(4), n)).unwrap();
        let again =
            quantized_matmul(&q, [&xt, &wt, &ot, &st], None, &parallel, (None, Some(&w))).unwrap();
        assert_eq!(again, got, "packed panels");
        let (TensorData::F32(got), TensorData::F32(want)) = (got, want) else {
            panic!("f32 results")
        };
        // The portable path, whatever the host has.
        let (TensorData::F32(xd), TensorData::I8(wd), TensorData::I32(od), TensorData::F32(sd)) =
            (xt.data(), wt.data(), ot.data(), st.data())
        else {
            panic!("operand types")
        };
        let p = Problem {
            x: xd,
            w: wd,
            offset: od,
            scale: sd,
            k,
            n,
            q,
            panels: Cow::Owned(packed::wide_quad_panels(wd, k.div_ceil(4), n)),
        };
        // The other paths this host runs, whatever the dispatch picked.
        let mut paths = vec![IntegerPath::Portable];
        if super::super::int_avx2::available() {
            paths.push(IntegerPath::Avx2);
        }
        for path in paths {
            let mut other = vec![0f32; rows * n];
            rows_block(&p, 0, &mut other, path, None);
            assert_eq!(other, want, "{path:?} path");
        }
        (got, want)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Every shape (row, column and `k` tails included) and zero point gives the
        /// reference's floats exactly, on one thread and on three.
        #[test]
        fn equals_the_reference(
            rows in 1usize..20,
            k in 1usize..70,
            n in 1usize..150,
            zp in any::<u8>(),
            seed in any::<u64>(),
            threads in 1usize..4,
        ) {
            let (got, want) = both(rows, k, n, seed, zp, threads);
            prop_assert_eq!(got, want);
        }
    }

    /// The vector quantizations give `quantize_u8`'s bytes for ties, both ends of the
    /// range, infinities and NaN, at every tail length.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn vector_quantization_equals_the_scalar_one() {
        let specials = [
            0.375,
            1.125,
            -0.375,
            2.0,
            95.999,
            96.0,
            200.0,
            -200.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -0.0,
            0.1,
            47.625,
            -47.625,
            1e30,
        ];
        let features = crate::target::CpuFeatures::host();
        for len in 0..specials.len() + 1 {
            let x = &specials[..len];
            for zp in [0u8, 3, 128, 255] {
                let want: Vec<u8> = x.iter().map(|&v| quantize_u8(v, 0.75, zp)).collect();
                if features.avx2 {
                    let mut got = vec![0u8; len];
                    // SAFETY: AVX2 checked; `x` and `got` have one length.
                    unsafe { x86::quantize_row_avx2(x, 0.75, zp, &mut got) };
                    assert_eq!(got, want, "AVX2, {len} values, zero point {zp}");
                }
                if features.avx512f {
                    let mut got = vec![0u8; len];
                    // SAFETY: AVX-512F checked; `x` and `got` have one length.
                    unsafe { x86::quantize_row(x, 0.75, zp, &mut got) };
                    assert_eq!(got, want, "AVX-512, {len} values, zero point {zp}");
                }
            }
        }
    }

    #[test]
    fn a_large_product_split_over_threads_equals_the_reference() {
        let (got, want) = both(61, 384, 200, 7, 128, 3);
        assert_eq!(got, want);
    }

    /// A deep product whose rows span several chunks and whose columns span several blocks
    /// of the AVX2 path (with a short last chunk, tile and block, and a column tail).
    #[test]
    fn chunks_and_column_blocks_equal_the_reference() {
        for threads in [1, 2] {
            let (got, want) = both(150, 1536, 90, 11, 3, threads);
            assert_eq!(got, want, "{threads} threads");
        }
    }
}
