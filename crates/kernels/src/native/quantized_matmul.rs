//! `QuantizedMatMul` natively: each block of rows of the FLOAT activation is quantized to
//! UINT8, multiplied by the INT8 weights (already in VNNI layout, packed once by the QDQ
//! pass) with INT32 accumulators, and dequantized in the store. On a host with AVX-512 VNNI
//! the product runs on `vpdpbusd` (16 columns x 4 `k` values per instruction); elsewhere a
//! portable loop gives the same integers. The reference
//! (`graphlift_runtime::reference::quantized_matmul`) defines the result; both paths equal
//! it bit for bit.

use graphlift_ir::{QuantizedMatMul, TensorData};
use graphlift_runtime::reference::quantize_u8;
use graphlift_runtime::Tensor;

use super::epilogue::Epilogue;
use super::matmul::MIN_PARALLEL_MACS;
use crate::parallel::{for_each, Parallel};
use crate::target::CpuFeatures;

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
}

/// [`QuantizedMatMul`] of `x` `[..., M, K]`, `w` `[ceil(K / 4), N, 4]`, `offset` `[N]` and
/// `scale` `[N]`, written into `out` when it is an `f32` buffer of the result's size (else a
/// new one); `epilogue` runs on each finished block of rows. `None` when the operands do
/// not fit (the caller then runs the reference, whose error names the node).
pub(super) fn quantized_matmul(
    q: &QuantizedMatMul,
    [x, w, offset, scale]: [&Tensor; 4],
    out: Option<TensorData>,
    parallel: &Parallel,
    epilogue: Option<Epilogue<'_>>,
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
    let p = Problem {
        x: xd,
        w: wd,
        offset: od,
        scale: sd,
        k,
        n,
        q: *q,
    };
    let mut y = match out {
        Some(TensorData::F32(v)) if v.len() == rows * n => v,
        _ => vec![0f32; rows * n],
    };
    if n == 0 || rows == 0 {
        return Some(TensorData::F32(y));
    }
    let threads = parallel.config().threads;
    let pool = (threads > 1 && rows * n * k >= MIN_PARALLEL_MACS)
        .then(|| parallel.pool())
        .flatten();
    let vnni = CpuFeatures::host().avx512vnni && CpuFeatures::host().avx512f;
    let run = |(blk, c): (usize, &mut [f32]), per: usize| {
        let first = blk * per;
        rows_block(&p, first, c, vnni);
        if let Some(e) = &epilogue {
            e.run(first * n, c);
        }
    };
    match pool {
        Some(pool) => {
            let per = rows.div_ceil(threads).next_multiple_of(MR).min(rows);
            for_each(pool, y.chunks_mut(per * n).enumerate(), |t| run(t, per));
        }
        None => run((0, &mut y), rows),
    }
    Some(TensorData::F32(y))
}

/// Rows `first..first + c.len() / n` of the result into `c`, `MR` rows at a time: the rows
/// quantized into a small buffer (padded with zeros to a multiple of 4 `k` values), then
/// multiplied; on the AVX-512 VNNI path when `vnni` (which the caller has checked the host
/// has), else the portable one.
fn rows_block(p: &Problem<'_>, first: usize, c: &mut [f32], vnni: bool) {
    let kp = p.k.div_ceil(4) * 4;
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
        portable_rows(&a, mr, kp, p, c);
    }
}

/// The portable product of `mr` quantized rows (`kp` bytes each) into `c`, in INT32
/// wrapping as the reference.
fn portable_rows(a: &[u8], mr: usize, kp: usize, p: &Problem<'_>, c: &mut [f32]) {
    let n = p.n;
    let mut acc = vec![0i32; n];
    for i in 0..mr {
        acc.copy_from_slice(p.offset);
        let row = &a[i * kp..(i + 1) * kp];
        for (k4, quad) in row.chunks_exact(4).enumerate() {
            let w = &p.w[k4 * n * 4..(k4 + 1) * n * 4];
            for (s, wq) in acc.iter_mut().zip(w.chunks_exact(4)) {
                let dot: i32 = (0..4).map(|j| i32::from(quad[j]) * i32::from(wq[j])).sum();
                *s = s.wrapping_add(dot);
            }
        }
        for ((y, &s), &sc) in c[i * n..(i + 1) * n].iter_mut().zip(&acc).zip(p.scale) {
            *y = s as f32 * sc;
        }
    }
}

/// The AVX-512 VNNI path.
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
        let got = quantized_matmul(&q, [&xt, &wt, &ot, &st], None, &parallel, None).unwrap();
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
        };
        let mut portable = vec![0f32; rows * n];
        rows_block(&p, 0, &mut portable, false);
        assert_eq!(portable, want, "portable path");
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

    #[test]
    fn a_large_product_split_over_threads_equals_the_reference() {
        let (got, want) = both(61, 384, 200, 7, 128, 3);
        assert_eq!(got, want);
    }
}
