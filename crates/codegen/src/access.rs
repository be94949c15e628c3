//! Loads and stores of a kernel body: contiguous, broadcast (row, column, run, general
//! index map) and gathered inputs, at a full vector, the tail's lane indices, or one element.

use super::broadcast::Addressing;
use super::divide::ConstDivisor;
use super::half::{bits16_of_value, bits16_to_f32};
use super::lanes::{cast_flags, data_flags, Emit, Lanes};
use super::storage::{compute_type, is_narrow};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, BlockArg, ConstantData, InstBuilder, Type, Value};
use cranelift_frontend::FunctionBuilder;
use graphlift_ir::ElementType;

/// Where a body reads and writes.
#[derive(Clone, Copy)]
pub enum At<'a> {
    /// A full vector at element `i`.
    Vector(Value),
    /// The tail: lane `l` is element `idx[l]` (one index per lane).
    Tail(&'a [Value]),
    /// One element `i`.
    Scalar(Value),
}

/// A slot's value: one vector (or scalar), or the parts of a 64-bit value in a mixed loop.
pub type Parts = Vec<Value>;

/// log2 of the element size in bytes.
pub fn size_shift(t: ElementType) -> i64 {
    i64::from(t.size_bytes().trailing_zeros())
}

/// The address of element `index` of type `t` at `base`.
pub fn element_addr(b: &mut FunctionBuilder, base: Value, index: Value, t: ElementType) -> Value {
    let off = b.ins().ishl_imm_u(index, size_shift(t));
    b.ins().iadd(base, off)
}

/// One element, as a scalar (`bool` as `I8`; a storage type widened exactly to the type
/// it is computed in, [`crate::storage`]).
pub fn scalar_load(b: &mut FunctionBuilder, base: Value, index: Value, t: ElementType) -> Value {
    let addr = element_addr(b, base, index, t);
    let flags = data_flags();
    match t {
        ElementType::I8 => b.ins().sload8(types::I32, flags, addr, 0),
        ElementType::U8 => b.ins().uload8(types::I32, flags, addr, 0),
        ElementType::I16 => b.ins().sload16(types::I32, flags, addr, 0),
        ElementType::U16 => b.ins().uload16(types::I32, flags, addr, 0),
        ElementType::U32 => b.ins().uload32(flags, addr, 0),
        ElementType::F16 | ElementType::BF16 => {
            let h = b.ins().uload16(types::I32, flags, addr, 0);
            bits16_to_f32(&mut Emit::new(b, Lanes::X1), t, h)
        }
        _ => {
            let ty = Emit::new(b, Lanes::X1).ty(t);
            b.ins().load(ty, flags, addr, 0)
        }
    }
}

/// The source index of element `i < count` under `addressing` (pointer-sized integers).
pub fn source_index(
    b: &mut FunctionBuilder,
    addressing: &Addressing,
    i: Value,
    count: usize,
) -> Value {
    match addressing {
        Addressing::Contiguous => i,
        Addressing::Splat => {
            let ty = b.func.dfg.value_type(i);
            b.ins().iconst(ty, 0)
        }
        Addressing::Row { len } => ConstDivisor::new(*len, count).remainder(b, i),
        Addressing::General { terms } => {
            let ty = b.func.dfg.value_type(i);
            let mut acc: Option<Value> = None;
            for t in terms {
                let mut q = i;
                if t.div != 1 {
                    q = ConstDivisor::new(t.div, count).quotient(b, q);
                }
                if t.modulo != 0 {
                    q = ConstDivisor::new(t.modulo, count).remainder(b, q);
                }
                if t.stride != 1 {
                    let s = b.ins().iconst(ty, t.stride as i64);
                    q = b.ins().imul(q, s);
                }
                acc = Some(match acc {
                    None => q,
                    Some(a) => b.ins().iadd(a, q),
                });
            }
            acc.unwrap_or_else(|| b.ins().iconst(ty, 0))
        }
    }
}

/// Loads input `base` (of `count` elements, read through `addressing`) at `at`, as one
/// value of `lanes` lanes of `t`.
pub fn load(
    b: &mut FunctionBuilder,
    base: Value,
    addressing: &Addressing,
    t: ElementType,
    at: At,
    lanes: Lanes,
    count: usize,
) -> Value {
    match at {
        At::Scalar(i) => {
            let j = source_index(b, addressing, i, count);
            scalar_load(b, base, j, t)
        }
        At::Tail(idx) => {
            let js: Vec<Value> = idx
                .iter()
                .map(|&x| source_index(b, addressing, x, count))
                .collect();
            gather(b, base, &js, t, lanes)
        }
        At::Vector(i) => match addressing {
            Addressing::Contiguous => vector_load(b, base, i, t, lanes),
            Addressing::Row { len } if *len >= lanes.count() => {
                row_load(b, base, i, (*len, count), t, lanes)
            }
            Addressing::General { terms }
                if terms.last().is_some_and(|t| t.div >= lanes.count()) =>
            {
                let run = terms.last().map_or(1, |t| t.div);
                run_load(b, base, addressing, (run, count), i, t, lanes)
            }
            _ => {
                let js: Vec<Value> = (0..lanes.count() as i64)
                    .map(|l| {
                        let x = if l == 0 { i } else { b.ins().iadd_imm_s(i, l) };
                        source_index(b, addressing, x, count)
                    })
                    .collect();
                gather(b, base, &js, t, lanes)
            }
        },
    }
}

/// One vector of consecutive elements (`bool`: one byte per lane, widened to a mask).
pub fn vector_load(
    b: &mut FunctionBuilder,
    base: Value,
    i: Value,
    t: ElementType,
    lanes: Lanes,
) -> Value {
    let addr = element_addr(b, base, i, t);
    let ty = Emit::new(b, lanes).ty(t);
    match t {
        ElementType::Bool => {
            // The lanes' bytes as one integer (`I32` / `I16`), in lane 0 of a vector of
            // that integer, then sign-widened (0 and 1 stay 0 and 1) to the mask's lanes.
            let (word_ty, word_vec) = packed_bool_types(lanes);
            let word = b.ins().load(word_ty, data_flags(), addr, 0);
            let v = b.ins().scalar_to_vector(word_vec, word);
            let mut v = b.ins().bitcast(types::I8X16, cast_flags(), v);
            while b.func.dfg.value_type(v).lane_bits() < ty.lane_bits() {
                v = b.ins().swiden_low(v);
            }
            to_mask(b, v)
        }
        _ if is_narrow(t) => narrow_vector_load(b, addr, t, lanes),
        _ => b.ins().load(ty, data_flags(), addr, 0),
    }
}

/// One vector of consecutive elements of storage type `t` at `addr`, widened to the
/// 32-bit lanes it is computed in: the lanes' bytes as one integer in lane 0 of a vector,
/// sign- (signed) or zero-extended (unsigned, 16-bit floats' bits) lane by lane, 16-bit
/// floats then converted ([`bits16_to_f32`]).
fn narrow_vector_load(b: &mut FunctionBuilder, addr: Value, t: ElementType, lanes: Lanes) -> Value {
    let size = t.size_bytes();
    // The lanes' bytes: four (`I32`) or eight (`I64`).
    let (word, word_vec) = if size * lanes.count() == 4 {
        (types::I32, types::I32X4)
    } else {
        (types::I64, types::I64X2)
    };
    let bytes = b.ins().load(word, data_flags(), addr, 0);
    let v = b.ins().scalar_to_vector(word_vec, bytes);
    let narrow_ty = match size {
        1 => types::I8X16,
        2 => types::I16X8,
        _ => types::I32X4,
    };
    let mut v = b.ins().bitcast(narrow_ty, cast_flags(), v);
    let signed = matches!(t, ElementType::I8 | ElementType::I16);
    let wide_bits = compute_type(t).size_bytes() as u32 * 8;
    while b.func.dfg.value_type(v).lane_bits() < wide_bits {
        v = if signed {
            b.ins().swiden_low(v)
        } else {
            b.ins().uwiden_low(v)
        };
    }
    if t.is_float() {
        bits16_to_f32(&mut Emit::new(b, lanes), t, v)
    } else {
        v
    }
}

/// Integer vector lanes holding 0/1 to a mask of the same type.
pub fn to_mask(b: &mut FunctionBuilder, words: Value) -> Value {
    let ty = b.func.dfg.value_type(words);
    let zero = b.ins().iconst(ty.lane_type(), 0);
    let zero = b.ins().splat(ty, zero);
    b.ins().icmp(IntCC::NotEqual, words, zero)
}

/// One vector of elements at arbitrary indices (`js`: one per lane).
pub fn gather(
    b: &mut FunctionBuilder,
    base: Value,
    js: &[Value],
    t: ElementType,
    lanes: Lanes,
) -> Value {
    let vec_ty = Emit::new(b, lanes).ty(t);
    let mut acc: Option<Value> = None;
    for (l, &j) in js.iter().enumerate() {
        let mut x = scalar_load(b, base, j, t);
        if t == ElementType::Bool {
            x = b.ins().uextend(vec_ty.lane_type(), x);
        }
        acc = Some(match acc {
            None => b.ins().scalar_to_vector(vec_ty, x),
            Some(v) => b.ins().insertlane(v, x, l as u8),
        });
    }
    let v = acc.unwrap_or_else(|| b.ins().iconst(types::I32, 0));
    if t == ElementType::Bool {
        to_mask(b, v)
    } else {
        v
    }
}

/// `fast` when `offset <= limit` (unsigned), else `slow`: a diamond of blocks that yields
/// the taken side's vector of type `vec_ty`.
pub fn split_load(
    b: &mut FunctionBuilder,
    offset: Value,
    limit: usize,
    vec_ty: Type,
    fast: impl FnOnce(&mut FunctionBuilder) -> Value,
    slow: impl FnOnce(&mut FunctionBuilder) -> Value,
) -> Value {
    let fits = b
        .ins()
        .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, offset, limit as i64);
    let fast_block = b.create_block();
    let slow_block = b.create_block();
    let merge = b.create_block();
    let v = b.append_block_param(merge, vec_ty);
    b.ins().brif(fits, fast_block, &[], slow_block, &[]);
    b.switch_to_block(fast_block);
    let x = fast(b);
    b.ins().jump(merge, &[BlockArg::Value(x)]);
    b.switch_to_block(slow_block);
    let x = slow(b);
    b.ins().jump(merge, &[BlockArg::Value(x)]);
    b.switch_to_block(merge);
    v
}

/// A row-vector load `b[(i + l) mod len]`, `len >= lanes`, for `i < count`: one vector
/// load when the lanes do not wrap, else a gather.
pub fn row_load(
    b: &mut FunctionBuilder,
    base: Value,
    i: Value,
    (len, count): (usize, usize),
    t: ElementType,
    lanes: Lanes,
) -> Value {
    let n = lanes.count();
    let vec_ty = Emit::new(b, lanes).ty(t);
    let ptr = b.func.dfg.value_type(i);
    let k = b.ins().iconst(ptr, len as i64);
    let j = ConstDivisor::new(len, count).remainder(b, i);
    split_load(
        b,
        j,
        len - n,
        vec_ty,
        |b| vector_load(b, base, j, t, lanes),
        |b| {
            let js: Vec<Value> = (0..n as i64)
                .map(|l| {
                    if l == 0 {
                        return j;
                    }
                    let jl = b.ins().iadd_imm_s(j, l);
                    let wrapped = b.ins().isub(jl, k);
                    let over = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, jl, k);
                    b.ins().select(over, wrapped, jl)
                })
                .collect();
            gather(b, base, &js, t, lanes)
        },
    )
}

/// A load under a general addressing whose innermost axis group repeats (column vectors
/// `c[M, 1]`, channels `[C, 1, 1]`): the source index is constant over runs of `run` (the
/// innermost kept group's `div`, at least `lanes`) consecutive elements, so when the
/// vector's lanes lie in one run, one scalar load splat to every lane; else a gather. For
/// `i < count`.
pub fn run_load(
    b: &mut FunctionBuilder,
    base: Value,
    addressing: &Addressing,
    (run, count): (usize, usize),
    i: Value,
    t: ElementType,
    lanes: Lanes,
) -> Value {
    let n = lanes.count();
    let vec_ty = Emit::new(b, lanes).ty(t);
    let r = ConstDivisor::new(run, count).remainder(b, i);
    split_load(
        b,
        r,
        run - n,
        vec_ty,
        |b| {
            let j = source_index(b, addressing, i, count);
            if t == ElementType::Bool {
                // Through the gather's bool widening, with every lane at `j`.
                gather(b, base, &vec![j; n], t, lanes)
            } else {
                let x = scalar_load(b, base, j, t);
                b.ins().splat(vec_ty, x)
            }
        },
        |b| {
            let js: Vec<Value> = (0..n as i64)
                .map(|l| {
                    let x = if l == 0 { i } else { b.ins().iadd_imm_s(i, l) };
                    source_index(b, addressing, x, count)
                })
                .collect();
            gather(b, base, &js, t, lanes)
        },
    )
}

/// Stores `v` (`lanes` lanes of `t`) to output `base` at `at`.
pub fn store(b: &mut FunctionBuilder, base: Value, v: Value, t: ElementType, at: At, lanes: Lanes) {
    if is_narrow(t) {
        return narrow_store(b, base, v, t, at, lanes);
    }
    match at {
        At::Scalar(i) => {
            let addr = element_addr(b, base, i, t);
            b.ins().store(data_flags(), v, addr, 0);
        }
        At::Vector(i) => {
            let addr = element_addr(b, base, i, t);
            let x = if t == ElementType::Bool {
                mask_bytes(b, v, lanes)
            } else {
                v
            };
            b.ins().store(data_flags(), x, addr, 0);
        }
        At::Tail(idx) => {
            for (l, &j) in idx.iter().enumerate() {
                let mut x = b.ins().extractlane(v, l as u8);
                if t == ElementType::Bool {
                    let bit = b.ins().band_imm_u(x, 1);
                    x = b.ins().ireduce(types::I8, bit);
                }
                let addr = element_addr(b, base, j, t);
                b.ins().store(data_flags(), x, addr, 0);
            }
        }
    }
}

/// Stores `v` (lanes of the type storage type `t` is computed in, holding `t`'s values)
/// as `t`: 16-bit floats
/// as their bits ([`bits16_of_value`]), then each lane's low bytes (every value of `t`
/// is already in range: [`crate::storage::narrow`]); a vector's lanes gathered to the front
/// by one byte shuffle and stored as one integer.
fn narrow_store(
    b: &mut FunctionBuilder,
    base: Value,
    v: Value,
    t: ElementType,
    at: At,
    lanes: Lanes,
) {
    let size = t.size_bytes();
    let flags = data_flags();
    let to_bits = |b: &mut FunctionBuilder, v: Value, lanes: Lanes| {
        if t.is_float() {
            bits16_of_value(&mut Emit::new(b, lanes), t, v)
        } else {
            v
        }
    };
    let store_one = |b: &mut FunctionBuilder, x: Value, j: Value| {
        let addr = element_addr(b, base, j, t);
        match size {
            1 => b.ins().istore8(flags, x, addr, 0),
            2 => b.ins().istore16(flags, x, addr, 0),
            _ => b.ins().istore32(flags, x, addr, 0),
        };
    };
    // Bytes per lane of the type `t` is computed in (4, or 8 for `u32` in `i64`).
    let lane_bytes = compute_type(t).size_bytes();
    match at {
        At::Scalar(i) => {
            let x = to_bits(b, v, Lanes::X1);
            store_one(b, x, i);
        }
        At::Tail(idx) => {
            let x = to_bits(b, v, lanes);
            for (l, &j) in idx.iter().enumerate() {
                let lane = b.ins().extractlane(x, l as u8);
                store_one(b, lane, j);
            }
        }
        At::Vector(i) => {
            let x = to_bits(b, v, lanes);
            let bytes = b.ins().bitcast(types::I8X16, cast_flags(), x);
            let n = lanes.count();
            let picks: Vec<u8> = (0..16)
                .map(|k| {
                    let (lane, byte) = (k / size, k % size);
                    if lane < n {
                        (lane * lane_bytes + byte) as u8
                    } else {
                        0
                    }
                })
                .collect();
            let picks = b.func.dfg.immediates.push(ConstantData::from(picks));
            let packed = b.ins().shuffle(bytes, bytes, picks);
            // The `size · n` bytes as one `I32` (four bytes) or `I64` (eight).
            let word_vec = if size * n == 4 {
                types::I32X4
            } else {
                types::I64X2
            };
            let words = b.ins().bitcast(word_vec, cast_flags(), packed);
            let w = b.ins().extractlane(words, 0);
            let addr = element_addr(b, base, i, t);
            b.ins().store(flags, w, addr, 0);
        }
    }
}

/// A mask's lanes as one 0/1 byte each, packed into one integer (`I32` for four lanes,
/// `I16` for two): the low byte of each lane after a shift by `lane bits − 1`, gathered to
/// the front by one byte shuffle.
pub fn mask_bytes(b: &mut FunctionBuilder, mask: Value, lanes: Lanes) -> Value {
    let ty = b.func.dfg.value_type(mask);
    let lane_bytes = ty.lane_bits() / 8;
    let ones = b.ins().ushr_imm_u(mask, i64::from(ty.lane_bits() - 1));
    let bytes = b.ins().bitcast(types::I8X16, cast_flags(), ones);
    let picks: Vec<u8> = (0..16)
        .map(|k| {
            if k < lanes.count() as u32 {
                (k * lane_bytes) as u8
            } else {
                0
            }
        })
        .collect();
    let picks = b.func.dfg.immediates.push(ConstantData::from(picks));
    let packed = b.ins().shuffle(bytes, bytes, picks);
    let (_, words) = packed_bool_types(lanes);
    let words = b.ins().bitcast(words, cast_flags(), packed);
    b.ins().extractlane(words, 0)
}

/// The integer holding one `bool` byte per lane of a vector of `lanes` (`I32` for four
/// lanes, `I16` for two), and the vector type with that integer as its lane.
pub fn packed_bool_types(lanes: Lanes) -> (Type, Type) {
    match lanes {
        Lanes::X2 => (types::I16, types::I16X8),
        Lanes::X4 | Lanes::X1 | Lanes::Mixed => (types::I32, types::I32X4),
    }
}
