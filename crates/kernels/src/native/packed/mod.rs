//! `f32` products whose one operand is a constant of the graph, packed once when the
//! executable is compiled (as onnxruntime's MLAS prepacks constant weights at session
//! creation) into the panels a microkernel reads, so a call only runs the
//! register-blocked tiles ([`microkernel`] on AVX-512, [`microkernel_avx2`] on AVX2 hosts,
//! over the same panels) over `k` blocks sized to L1 ([`driver`]). The
//! `gemm` crate packs both operands on every call; for the small `k` (16..1536) of
//! MiniLM's and PP-OCR's products that packing was most of what was left to gain. A
//! recurrent op's one-row state products, one per time step, run on [`gemv`] over the
//! same panels.
//!
//! [`prepare`] is the one place that decides whether a node's product takes this path;
//! everything it does not take (no AVX-512 or AVX2, `f64`, no constant operand, depthwise
//! convolutions) keeps the `gemm` crate, and so does a call whose operands do not match.

mod aligned;
mod channel_tile;
mod driver;
mod gemv;
mod microkernel;
mod microkernel_avx2;
#[cfg(test)]
mod tests;

use graphlift_ir::{ElementType, Node, Op, RecurrentSequence, Shape, TensorData};
use graphlift_runtime::Tensor;

use aligned::AlignedF32;

use super::conv_channels as channel_lanes;
use super::conv_geometry::{covers_images, pointwise_window, reads_fields_in_place};
use super::int_avx2::IntegerPath;
use crate::target::Target;
pub(super) use channel_tile::{channel_product, ChannelOut};
pub(super) use driver::{product, product_at, Columns, Lhs, Out, Rhs};
pub(super) use gemv::gemv;
use microkernel::{MR, NR};

/// Columns of one panel of weights packed for the right side: a block of columns split off
/// such weights starts on a multiple of this.
pub(super) const PANEL_COLUMNS: usize = NR;

/// The columns a microkernel computes at once (a 16-lane vector on AVX-512, a sub-tile's
/// two 8-lane vectors on AVX2): a run of columns that ends within one is computed as if it
/// filled it.
pub(super) const COLUMN_GRAIN: usize = 16;

/// An element type of the native products: `f32` slices run on the packed path, others
/// keep the `gemm` crate.
pub(super) trait Element: Copy {
    /// `s` as `f32` elements, when `Self` is `f32`.
    fn as_f32(s: &[Self]) -> Option<&[f32]>;
    /// `s` as mutable `f32` elements, when `Self` is `f32`.
    fn as_f32_mut(s: &mut [Self]) -> Option<&mut [f32]>;
}

impl Element for f32 {
    fn as_f32(s: &[f32]) -> Option<&[f32]> {
        Some(s)
    }
    fn as_f32_mut(s: &mut [f32]) -> Option<&mut [f32]> {
        Some(s)
    }
}

impl Element for f64 {
    fn as_f32(_: &[f64]) -> Option<&[f32]> {
        None
    }
    fn as_f32_mut(_: &mut [f64]) -> Option<&mut [f32]> {
        None
    }
}

/// Row blocks the native products split over threads start on whole panels of packed
/// left weights.
const _: () = assert!(super::matmul::ROW_BLOCK_ALIGN.is_multiple_of(MR));

/// Which operand of the product packed weights are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The left operand `a` (`m × k`, broadcast by the microkernel): panels of 8 rows,
    /// each stored `k`-major (8 values per step of `k`), the last padded with zeros.
    Left,
    /// The right operand `b` (`k × n`, loaded by the microkernel): panels of 48 columns,
    /// each stored `k`-major (48 values per step of `k`), the last padded with zeros.
    Right,
    /// The right operand `b` (`k × n`) of an `i32` product whose every value fits in `i8`
    /// (8-bit weights less their zero point, as dynamically quantized recurrent ops
    /// multiply them), narrowed to `i8`, a quarter of the bytes a product reads
    /// (`super::matmul_narrow`): in quads of `k` (`vpdpbusd`'s groups of four), `[⌈k/4⌉,
    /// n, 4]` with zeros past `k`, and each column's sum; on a host whose integer kernels
    /// run the AVX2 tile also regrouped as [`Side::QuadPanels`] are, so that a one-row
    /// product reads each block of eight columns in one run instead of 32 bytes every
    /// `4 · n`.
    Narrow,
    /// The INT8 weights `[⌈k/4⌉, n, 4]` of a `QuantizedMatMul` (the VNNI layout its operand
    /// has) regrouped for the AVX2 integer tile (`super::int_avx2`) and widened to `i16`
    /// as it reads them: the quads of each whole block of eight columns together,
    /// `[⌊n/8⌋, ⌈k/4⌉, 8, 4]` (`wide_quad_panels`; the last `n mod 8` columns stay in
    /// the operand).
    QuadPanels,
    /// The filters `[M, K]` (`K = C / groups · kH · kW`) of a `ConvolutionInteger`, the
    /// broadcast operand of its product (`super::conv_integer`): in the INT8 domain (`w −
    /// 128` for UINT8 filters), each row padded with zeros to `kp = ⌈K/4⌉ · 4` taps, with
    /// each row's sum, and on a host whose integer kernels run the AVX2 tile widened to
    /// `i16` as that tile reads them.
    IntegerFilters,
}

/// A constant operand of a node's products laid out once for its kernel (as [`Side`]
/// says): `f32` microkernel panels of `count` matrices of `rows × cols` each (a MatMul
/// constant's batch of matrices, a convolution filter's groups, each `[M / groups, C /
/// groups · kH · kW]`, or a recurrent op's directions, each `Wᵀ` above `Rᵀ`, `[input + h,
/// G·h]`), or the 8-bit weights of the integer products (narrowed `i32` weights, a
/// `QuantizedMatMul`'s panels, a `ConvolutionInteger`'s filters), for input `input` of the
/// node (a recurrent op's: 1, `W`, with `R`, input 2, below it). Made by [`prepare`], read
/// by the native `MatMul`, `Convolution`, `ConvolutionInteger`, `QuantizedMatMul` and
/// recurrent ops on every call.
#[derive(Debug)]
pub struct PackedWeights {
    side: Side,
    input: usize,
    rows: usize,
    cols: usize,
    count: usize,
    /// The `f32` panels, from a cache-line boundary.
    data: AlignedF32,
    /// The `i8` weights: the matrices of [`Side::Narrow`] weights in quads or the padded
    /// [`Side::IntegerFilters`] (empty for the others).
    narrow: Vec<i8>,
    /// The [`Side::QuadPanels`] panels, or the [`Side::IntegerFilters`] widened to `i16`
    /// (empty for the others, and where the AVX2 tile does not run).
    wide: Vec<i16>,
    /// The matrices of [`Side::Narrow`] weights in the AVX2 tile's panels (`quad_panels`,
    /// one after another; empty for the others, and where the AVX2 tile does not run).
    panels: Vec<i8>,
    /// The column sums of each matrix of [`Side::Narrow`] weights, `[count, cols]`, or the
    /// row sums of [`Side::IntegerFilters`], `[rows]`.
    column_sums: Vec<i32>,
}

impl PackedWeights {
    /// Moves the `f32` panels of `all` (the packed weights of one executable) into one
    /// read-only mapping on transparent huge pages where the platform has them (Linux),
    /// when together they fill one: most of a model's matrices are smaller than a huge page
    /// alone, and on 4 KiB pages a panel read from L3 or memory crossed a page every 4 KiB.
    /// The weights keep their values.
    pub fn share_pages(all: &mut [PackedWeights]) {
        let mut data: Vec<&mut AlignedF32> = all
            .iter_mut()
            .map(|w| &mut w.data)
            .filter(|d| !d.is_empty())
            .collect();
        AlignedF32::share(&mut data);
    }

    /// Packs `count` matrices of `rows × cols` from `src`, matrix `t`'s element `(i, j)` at
    /// `t · rows · cols + i · cols + j` (row-major, one after another), for `side`
    /// [`Side::Left`] or [`Side::Right`]. `None` when `src` is shorter than that, a size
    /// overflows, or `side` is another (made by [`PackedWeights::narrow`] and
    /// [`PackedWeights::quad_panels`]).
    pub fn pack(
        src: &[f32],
        side: Side,
        input: usize,
        (count, rows, cols): (usize, usize, usize),
    ) -> Option<PackedWeights> {
        let matrix = rows.checked_mul(cols)?;
        if src.len() < count.checked_mul(matrix)? || !matches!(side, Side::Left | Side::Right) {
            return None;
        }
        let per = Self::padded(side, rows, cols)?;
        let mut data = AlignedF32::zeros(count.checked_mul(per)?)?;
        for (t, dst) in data.chunks_exact_mut(per.max(1)).enumerate().take(count) {
            let m = &src[t * matrix..(t + 1) * matrix];
            match side {
                Side::Left => {
                    for (i, row) in m.chunks_exact(cols.max(1)).enumerate().take(rows) {
                        let panel = (i / MR) * MR * cols;
                        for (p, &v) in row.iter().enumerate() {
                            dst[panel + p * MR + i % MR] = v;
                        }
                    }
                }
                Side::Right | Side::Narrow | Side::QuadPanels | Side::IntegerFilters => {
                    for (p, row) in m.chunks_exact(cols.max(1)).enumerate().take(rows) {
                        for (jp, part) in row.chunks(NR).enumerate() {
                            let at = jp * NR * rows + p * NR;
                            dst[at..at + part.len()].copy_from_slice(part);
                        }
                    }
                }
            }
        }
        Some(PackedWeights {
            side,
            input,
            rows,
            cols,
            count,
            data,
            narrow: Vec::new(),
            wide: Vec::new(),
            panels: Vec::new(),
            column_sums: Vec::new(),
        })
    }

    /// The transposes of `count` `rows × cols` row-major matrices of `src` (one after
    /// another; each `cols × rows`) packed for the right side, from node input `input`: a
    /// convolution's filters `[M, C · kH · kW]` as the loaded operand, one matrix per
    /// group: of the product of the images with them where a window covers each image
    /// (`super::whole_image`), or of the channel-lane tiles (`super::conv_channels`).
    /// `None` when `src` is shorter or a size overflows.
    pub fn pack_transposed(
        src: &[f32],
        input: usize,
        (count, rows, cols): (usize, usize, usize),
    ) -> Option<PackedWeights> {
        let matrix = rows.checked_mul(cols)?;
        let src = src.get(..count.checked_mul(matrix)?)?;
        let transposed: Vec<f32> = src
            .chunks_exact(matrix.max(1))
            .flat_map(|m| {
                (0..cols).flat_map(move |p| m.iter().skip(p).step_by(cols.max(1)).copied())
            })
            .collect();
        PackedWeights::pack(&transposed, Side::Right, input, (count, cols, rows))
    }

    /// `count` `i32` matrices of `rows × cols` from `src` (row-major, one after another) as
    /// [`Side::Narrow`] weights of node input `input`, with the AVX2 tile's panels when
    /// `panels`; `None` when a value does not fit in `i8` or `src` is shorter than that.
    pub fn narrow(
        src: &[i32],
        input: usize,
        (count, rows, cols): (usize, usize, usize),
        panels: bool,
    ) -> Option<PackedWeights> {
        let matrix = rows.checked_mul(cols)?;
        let src = src.get(..count.checked_mul(matrix)?)?;
        let quads = Self::padded(Side::Narrow, rows, cols)?;
        let mut narrow = vec![0i8; count.checked_mul(quads)?];
        let mut column_sums = vec![0i32; count * cols];
        for (t, m) in src.chunks_exact(matrix.max(1)).enumerate().take(count) {
            let (dst, sums) = (&mut narrow[t * quads..], &mut column_sums[t * cols..]);
            for (p, row) in m.chunks_exact(cols.max(1)).enumerate().take(rows) {
                for (j, &v) in row.iter().enumerate() {
                    dst[(p / 4) * 4 * cols + 4 * j + p % 4] = i8::try_from(v).ok()?;
                    sums[j] = sums[j].wrapping_add(v);
                }
            }
        }
        let panels = if panels && quads > 0 {
            let k4 = rows.div_ceil(4);
            narrow
                .chunks_exact(quads)
                .flat_map(|m| quad_panels(m, k4, cols))
                .collect()
        } else {
            Vec::new()
        };
        Some(PackedWeights {
            side: Side::Narrow,
            input,
            rows,
            cols,
            count,
            data: AlignedF32::default(),
            narrow,
            wide: Vec::new(),
            panels,
            column_sums,
        })
    }

    /// The [`Side::QuadPanels`] weights of node input `input`, from `w`, a `QuantizedMatMul`
    /// operand `[k4, n, 4]`; `None` when `w` is shorter than that.
    pub fn quad_panels(w: &[i8], input: usize, (k4, n): (usize, usize)) -> Option<PackedWeights> {
        let w = w.get(..k4.checked_mul(n)?.checked_mul(4)?)?;
        Some(PackedWeights {
            side: Side::QuadPanels,
            input,
            rows: k4,
            cols: n,
            count: 1,
            data: AlignedF32::default(),
            narrow: Vec::new(),
            wide: wide_quad_panels(w, k4, n),
            panels: Vec::new(),
            column_sums: Vec::new(),
        })
    }

    /// The panels of [`Side::QuadPanels`] weights of `k4 × n` quads (`None` for other
    /// weights or other extents).
    pub(in crate::native) fn panels_of(&self, k4: usize, n: usize) -> Option<&[i16]> {
        (self.side == Side::QuadPanels && (self.rows, self.cols) == (k4, n))
            .then_some(&self.wide[..])
    }

    /// Matrix `t` of [`Side::Narrow`] weights (`None` for other weights or `t` out of
    /// range).
    pub(in crate::native) fn narrow_matrix(&self, t: usize) -> Option<NarrowMatrix<'_>> {
        fn nth(v: &[i8], t: usize, len: usize) -> Option<&[i8]> {
            v.get(t.checked_mul(len)?..t.checked_add(1)?.checked_mul(len)?)
        }
        let quads = Self::padded(Side::Narrow, self.rows, self.cols)?;
        let whole = self.cols - self.cols % super::int_avx2::COLUMNS;
        let panel_len = self.rows.div_ceil(4).checked_mul(4 * whole)?;
        Some(NarrowMatrix {
            quads: nth(&self.narrow, t, quads)?,
            panels: if self.panels.is_empty() {
                &[]
            } else {
                nth(&self.panels, t, panel_len)?
            },
            sums: self.column_sums.get(t * self.cols..(t + 1) * self.cols)?,
        })
    }

    /// The filters `w` (`[rows, k]`, 8-bit) of a `ConvolutionInteger`'s node input
    /// `input` as [`Side::IntegerFilters`], widened to `i16` as well when `widen`; `None`
    /// when `w` is not 8-bit or not `rows · k` long.
    pub fn integer_filters(
        w: &TensorData,
        input: usize,
        (rows, k): (usize, usize),
        widen: bool,
    ) -> Option<PackedWeights> {
        let int8: Vec<i8> = match w {
            TensorData::I8(v) => v.clone(),
            TensorData::U8(v) => v.iter().map(|&b| (b ^ 0x80) as i8).collect(),
            _ => return None,
        };
        if int8.len() != rows.checked_mul(k)? || k == 0 {
            return None;
        }
        let kp = k.div_ceil(4) * 4;
        let mut narrow = vec![0i8; rows.checked_mul(kp)?];
        let mut column_sums = Vec::with_capacity(rows);
        for (dst, src) in narrow.chunks_exact_mut(kp).zip(int8.chunks_exact(k)) {
            dst[..k].copy_from_slice(src);
            column_sums.push(src.iter().fold(0i32, |s, &v| s.wrapping_add(i32::from(v))));
        }
        let wide = if widen {
            narrow.iter().map(|&v| i16::from(v)).collect()
        } else {
            Vec::new()
        };
        Some(PackedWeights {
            side: Side::IntegerFilters,
            input,
            rows,
            cols: k,
            count: 1,
            data: AlignedF32::default(),
            narrow,
            wide,
            panels: Vec::new(),
            column_sums,
        })
    }

    /// [`Side::IntegerFilters`] of `rows` filters of `k` taps: the padded INT8 rows
    /// (`[rows, kp]`), their `i16` widening (empty where not made) and their sums (`None`
    /// for other weights or extents).
    pub(in crate::native) fn integer_rows(
        &self,
        rows: usize,
        k: usize,
    ) -> Option<(&[i8], &[i16], &[i32])> {
        (self.side == Side::IntegerFilters && (self.rows, self.cols) == (rows, k)).then_some((
            &self.narrow[..],
            &self.wide[..],
            &self.column_sums[..],
        ))
    }

    /// Elements of one packed matrix: whole panels.
    fn padded(side: Side, rows: usize, cols: usize) -> Option<usize> {
        match side {
            Side::Left => rows.div_ceil(MR).checked_mul(MR)?.checked_mul(cols),
            Side::Right => cols.div_ceil(NR).checked_mul(NR)?.checked_mul(rows),
            Side::Narrow => rows.div_ceil(4).checked_mul(4)?.checked_mul(cols),
            Side::QuadPanels => (cols - cols % 8).checked_mul(rows)?.checked_mul(4),
            Side::IntegerFilters => cols.div_ceil(4).checked_mul(4)?.checked_mul(rows),
        }
    }

    /// Where matrix `t` starts in `data`.
    fn matrix_offset(&self, t: usize) -> usize {
        t * Self::padded(self.side, self.rows, self.cols).unwrap_or(0)
    }

    /// Which operand of the product the weights are.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The node input the weights were packed from.
    pub fn input(&self) -> usize {
        self.input
    }

    /// `(count, rows, cols)`: the number of matrices and each one's extents.
    pub fn extents(&self) -> (usize, usize, usize) {
        (self.count, self.rows, self.cols)
    }

    /// Bytes the packed panels take.
    pub fn bytes(&self) -> usize {
        self.data.len() * std::mem::size_of::<f32>()
            + self.narrow.len()
            + self.wide.len() * std::mem::size_of::<i16>()
            + self.panels.len()
            + self.column_sums.len() * std::mem::size_of::<i32>()
    }
}

/// One matrix `[k, n]` of [`Side::Narrow`] weights, as [`PackedWeights::narrow_matrix`]
/// lends it.
pub(in crate::native) struct NarrowMatrix<'a> {
    /// The quads `[⌈k/4⌉, n, 4]`, zeros past `k`.
    pub quads: &'a [i8],
    /// The quads of each whole block of eight columns together, `[⌊n/8⌋, ⌈k/4⌉, 8, 4]`
    /// (`quad_panels`), or empty where the weights were made without them.
    pub panels: &'a [i8],
    /// Each column's sum, `[n]`.
    pub sums: &'a [i32],
}

impl std::fmt::Display for PackedWeights {
    /// `packed f32 weights: input 1 (right), 1 x 384x1536, 2.4 MB` (`packed i8 weights: ...`
    /// for [`Side::Narrow`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (ty, side) = match self.side {
            Side::Left => ("f32", "left"),
            Side::Right => ("f32", "right"),
            Side::Narrow | Side::QuadPanels => ("i8", "right"),
            Side::IntegerFilters => ("i8", "left"),
        };
        write!(
            f,
            "packed {ty} weights: input {} ({side}), {} x {}x{}, {:.1} MB",
            self.input,
            self.count,
            self.rows,
            self.cols,
            self.bytes() as f64 / 1e6
        )
    }
}

/// The elements of an `f32` tensor.
fn f32_data(t: &Tensor) -> Option<&[f32]> {
    match t.data() {
        TensorData::F32(v) if t.element_type() == ElementType::F32 => Some(v.as_slice()),
        _ => None,
    }
}

/// The packed weights for `node`'s products when they take the packed path, given the
/// node's inputs that are constants of the graph (`constants[i]` for input `i`, `None`
/// where the input is computed): the one decision of which path a product takes.
///
/// - `MatMul` with a constant `f32` right operand (rank ≥ 2): each of its matrices packed
///   for the right side; else with a constant `f32` left operand: packed for the left.
///   On the AVX2 tiles only for fewer than `AVX2_MATMUL_ROWS_LIMIT` rows of the left
///   operand (all of `data`'s rows for a right constant).
/// - `MatMul` with a constant `i32` right operand whose values all fit in `i8`: narrowed
///   ([`Side::Narrow`]; on any target, the product being portable code), with the AVX2
///   tile's panels on a host whose integer kernels run it.
/// - `ConvolutionInteger` with a constant 8-bit filter `[M, C / groups, (kH,) kW]`: the
///   filters as [`Side::IntegerFilters`] (widened where the integer kernels run the AVX2
///   tile), on any target.
/// - `QuantizedMatMul` with constant INT8 weights `[k4, n, 4]`, on a host whose integer
///   kernels run the AVX2 tile (`IntegerPath::Avx2`): the weights in that tile's panels
///   ([`Side::QuadPanels`]).
/// - A recurrent op (`Op::Recurrent`) with constant `f32` weights `W` and `R`: per
///   direction `Wᵀ` above `Rᵀ`, packed for the right side (`recurrent_weights`).
/// - `Convolution` (1-D or 2-D) with a constant `f32` filter whose windows cover each
///   whole image (`data`, the shape of input 0, says so: see
///   `conv_geometry::covers_images`): the filters transposed, `[C · kH · kW, M]`, packed
///   for the right side, the images `[N, C · kH · kW]` being the left operand.
/// - Any other `Convolution` (1-D or 2-D) with a constant `f32` filter that is not
///   depthwise (one input and one output channel per group, which runs a direct loop):
///   each group's filters `[M / groups, C / groups · kH · kW]` packed for the left side
///   (pointwise, im2col and in-place products alike); on the AVX2 tiles, where `data`
///   says its fields are unrolled, only for fewer than `AVX2_ROWS_LIMIT` filters per group
///   (`AVX2_POINTWISE_LIMIT` for a pointwise one); fields read in place (see
///   `conv_geometry::reads_fields_in_place`) take the packed filters at any count.
///
/// `None` (the `gemm` crate runs, as for every other product) for the `f32` products when
/// the target runs no packed microkernel (neither AVX-512, [`Target::avx512`], nor, on a
/// host without AVX-512F, AVX2 and FMA), or when the node is anything else.
pub fn prepare(
    node: &Node,
    constants: &[Option<&Tensor>],
    data: Option<&Shape>,
    target: &Target,
) -> Option<PackedWeights> {
    if let (Op::MatMul, [_, Some(b)]) = (node.op(), constants) {
        if b.element_type() == ElementType::I32 {
            let [batch @ .., rows, cols] = b.shape().dims() else {
                return None;
            };
            let count = batch.iter().try_fold(1usize, |n, &d| n.checked_mul(d))?;
            let TensorData::I32(v) = b.data() else {
                return None;
            };
            let panels = IntegerPath::host() == IntegerPath::Avx2;
            return PackedWeights::narrow(v, 1, (count, *rows, *cols), panels);
        }
    }
    if let (Op::ConvolutionInteger(_), [_, _, Some(w), _]) = (node.op(), constants) {
        let [m, rest @ ..] = w.shape().dims() else {
            return None;
        };
        let k = rest.iter().try_fold(1usize, |n, &d| n.checked_mul(d))?;
        let widen = IntegerPath::host() == IntegerPath::Avx2;
        return PackedWeights::integer_filters(w.data(), 2, (*m, k), widen);
    }
    if let (Op::QuantizedMatMul(_), [_, Some(w), ..]) = (node.op(), constants) {
        if IntegerPath::host() != IntegerPath::Avx2 {
            return None;
        }
        let (&[k4, n, 4], TensorData::I8(v)) = (w.shape().dims(), w.data()) else {
            return None;
        };
        return PackedWeights::quad_panels(v, 1, (k4, n));
    }
    if !packs_f32(target) {
        return None;
    }
    match (node.op(), constants) {
        (Op::MatMul, [a, b]) => {
            let (input, t, side) = match (a, b) {
                (_, Some(b)) => (1, b, Side::Right),
                (Some(a), None) => (0, a, Side::Left),
                (None, None) => return None,
            };
            let dims = t.shape().dims();
            let [batch @ .., rows, cols] = dims else {
                return None;
            };
            // The broadcast operand's rows: the constant's own, or every row of `a` (the
            // products folded into one when they share `b`).
            let broadcast_rows = match side {
                Side::Left => Some(*rows),
                _ => data.and_then(|sa| Some(sa.element_count().ok()? / rows.max(&1))),
            };
            if !worth_packing(target, broadcast_rows, AVX2_MATMUL_ROWS_LIMIT) {
                return None;
            }
            let count = batch.iter().try_fold(1usize, |n, &d| n.checked_mul(d))?;
            PackedWeights::pack(f32_data(t)?, side, input, (count, *rows, *cols))
        }
        (Op::Convolution(conv), [_, Some(f)]) => {
            let dims = f.shape().dims();
            if !(3..=4).contains(&dims.len()) || conv.groups == 0 || dims[0] % conv.groups != 0 {
                return None;
            }
            let per_group = dims[0] / conv.groups;
            let depth = dims[1..]
                .iter()
                .try_fold(1usize, |n, &d| n.checked_mul(d))?;
            if data.is_some_and(|sx| covers_images(sx, f.shape(), conv)) {
                return PackedWeights::pack_transposed(f32_data(f)?, 1, (1, dims[0], depth));
            }
            let avx512 = target.avx512();
            let lanes =
                data.and_then(|sx| channel_lanes::pack(f32_data(f)?, sx, f.shape(), conv, avx512));
            if lanes.is_some() {
                return lanes;
            }
            let limit = match pointwise_window(&dims[2..], conv) {
                true => AVX2_POINTWISE_LIMIT,
                false => AVX2_ROWS_LIMIT,
            };
            // Fields read in place need the packed filters, and pay for them at any count
            // (no unrolled matrix for the `gemm` crate to pack).
            let in_place = data.is_some_and(|sx| reads_fields_in_place(sx, f.shape(), conv));
            if (per_group == 1 && dims[1] == 1)
                || !(in_place || worth_packing(target, Some(per_group), limit))
            {
                return None;
            }
            PackedWeights::pack(f32_data(f)?, Side::Left, 1, (conv.groups, per_group, depth))
        }
        (Op::Recurrent(r), [_, Some(w), Some(rw), ..]) => recurrent_weights(r, w, rw),
        _ => None,
    }
}

/// Whether `target` runs the packed `f32` product: its AVX-512 microkernel (on unless
/// switched off), or on a host without AVX-512F its AVX2 one (AVX2 and FMA). An AVX-512
/// host with AVX-512 switched off keeps the `gemm` crate.
fn packs_f32(target: &Target) -> bool {
    let f = target.features;
    target.avx512() || (!f.avx512f && f.avx2 && f.fma)
}

/// The fewest rows of the broadcast operand from which the `gemm` crate is as fast as the
/// packed product on the AVX2 tiles (`microkernel_avx2`), or faster: below 64 rows the
/// tiles were 1.3-1.5x faster; from 64 to 127 (96-filter 3x3 convolutions, MatMuls of 64
/// to 120 rows) 0-10 % faster; from 128 on (128 to 256 filters) 4-7 % slower
/// (BENCHMARKS.md, the eleventh and twelfth sessions). Convolutions whose fields are read
/// in place take the tiles at any count: 6-12 % faster from 128 to 192 filters once their
/// bands were stored straight into the output (the fourteenth session).
const AVX2_ROWS_LIMIT: usize = 128;

/// [`AVX2_ROWS_LIMIT`] for a `MatMul` with constant weights, once the packed panels were
/// aligned to cache lines and split over threads by columns: at 128 rows ([128, 384] x
/// [384, 1536] and MiniLM's other products) the tiles were 2-5 % faster than the `gemm`
/// crate at 1 thread and 2-8 % at 2; at 256 rows level alone but 3 % (1 thread) and 10 %
/// (2 threads) slower in an ALBERT model (unidic_lite_imitator); from 512 rows on 4-12 %
/// slower (their results outgrow the caches between blocks of `k`; the fourteenth
/// session).
const AVX2_MATMUL_ROWS_LIMIT: usize = 256;

/// [`AVX2_ROWS_LIMIT`] for a pointwise convolution's filters, whose loaded operand is the
/// image's channels, each a plane apart: with 64 filters over planes of 200 x 152 the tiles
/// were 1.15-1.35x slower than the `gemm` crate, which packs them (BENCHMARKS.md, the
/// twelfth session).
const AVX2_POINTWISE_LIMIT: usize = 64;

/// Whether a product whose broadcast operand has `rows` rows (`None`: not known) takes the
/// packed path on `target` (which runs it): always on AVX-512, on AVX2 below `limit`
/// ([`AVX2_ROWS_LIMIT`], [`AVX2_MATMUL_ROWS_LIMIT`] or [`AVX2_POINTWISE_LIMIT`]).
fn worth_packing(target: &Target, rows: Option<usize>, limit: usize) -> bool {
    target.avx512() || rows.is_some_and(|r| r < limit)
}

/// The quads `w` (`[k4, n, 4]`, the VNNI layout of a `QuantizedMatMul`'s weights) of each
/// whole block of eight columns together: `[⌊n/8⌋, k4, 8, 4]`, so that the AVX2 tile
/// reads a block's `k4` groups of 32 bytes in one run.
pub(in crate::native) fn quad_panels(w: &[i8], k4: usize, n: usize) -> Vec<i8> {
    const COLUMNS: usize = super::int_avx2::COLUMNS;
    let mut out = Vec::with_capacity(n / COLUMNS * k4 * 4 * COLUMNS);
    for col in (0..n - n % COLUMNS).step_by(COLUMNS) {
        for g in 0..k4 {
            let at = (g * n + col) * 4;
            out.extend_from_slice(&w[at..at + 4 * COLUMNS]);
        }
    }
    out
}

/// [`quad_panels`] widened to `i16`, as the AVX2 tile reads a `QuantizedMatMul`'s weights
/// (`int_avx2::Wide16`).
pub(in crate::native) fn wide_quad_panels(w: &[i8], k4: usize, n: usize) -> Vec<i16> {
    quad_panels(w, k4, n).into_iter().map(i16::from).collect()
}

/// The weights of recurrent op `r`, `W` `[dirs, G·h, input]` and `R` `[dirs, G·h, h]`
/// (ONNX's layout, `G` gates), packed for the right side as one matrix per direction of
/// `input + h` rows by `G·h` columns: `Wᵀ` above `Rᵀ`, so the input projection is a
/// product over the first `input` rows and each step's state product one over the last
/// `h` ([`gemv`]). `None` when the operands are not `f32` or their shapes disagree (the
/// kernel then reports them through the reference).
pub(in crate::native) fn recurrent_weights(
    r: &RecurrentSequence,
    w: &Tensor,
    rw: &Tensor,
) -> Option<PackedWeights> {
    let (wd, rd) = (w.shape().dims(), rw.shape().dims());
    let h = r.hidden_size;
    let gates = r.cell.gates().checked_mul(h)?;
    let (&[dirs, g, input], &[rdirs, rg, rh]) = (wd, rd) else {
        return None;
    };
    if (g, rdirs, rg, rh) != (gates, dirs, gates, h) || dirs != r.direction.count() {
        return None;
    }
    let (w, rw) = (f32_data(w)?, f32_data(rw)?);
    let rows = input.checked_add(h)?;
    let mut stacked = vec![0f32; dirs.checked_mul(rows)?.checked_mul(gates)?];
    for (d, m) in stacked.chunks_exact_mut(rows * gates).enumerate() {
        let (wd, rd) = (&w[d * gates * input..], &rw[d * gates * h..]);
        for j in 0..gates {
            for p in 0..input {
                m[p * gates + j] = wd[j * input + p];
            }
            for p in 0..h {
                m[(input + p) * gates + j] = rd[j * h + p];
            }
        }
    }
    PackedWeights::pack(&stacked, Side::Right, 1, (dirs, rows, gates))
}
