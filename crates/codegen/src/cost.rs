//! The work of one kernel call, for the thread split's cost model ([`graphlift_kernels::parallel`]).
//!
//! XLA's CPU backend sizes parallel tasks from a cost analysis of flops, transcendentals
//! and bytes; graphlift counts **byte-equivalents**: the bytes a call reads and writes, plus
//! for every element the compute of each per-element slot, weighted by how many bytes the
//! same time would move. Without the compute term a kernel of `tanh` would wait for as many
//! elements as a kernel of one addition before it is split, though each element costs it
//! ten times more.
//!
//! Weights were measured on the 2-vCPU Zen 5 guest (2026-11-25, `graphlift bench-expr`, one
//! thread, 2^14 elements, in cache): the E1 loop `relu((a+b)·c)+d` moves about 140 bytes per
//! nanosecond (20 bytes per element at 0.14 ns), so one byte-equivalent is about 7 ps of
//! compute. E3 `x/(1 + e^−x)` takes 0.87 ns per element (about 120 byte-equivalents, 8 of
//! them traffic), E2 (GELU with `tanh`) 1.46 ns (about 200) with the two-piece `tanh`,
//! 0.90 ns (about 128) with the rational one. `f64` math is taken as three
//! times the `f32` per element (two lanes per vector instead of four, and polynomials of
//! about twice the degree; the inline `f64` `exp` takes 1.92 ns per element), other `f64`
//! and `i64` ops as twice. The weights are coarse on purpose: they
//! decide between one task and a few, where a factor of two in cost moves the split by one
//! power of two of the size.

use graphlift_ir::{BinaryOp, ElementType, UnaryOp};

use super::calls::LibraryCalls;
use super::plan::{KernelPlan, SlotOp};
use graphlift_kernels::veclib::VecFn;

/// Byte-equivalents of one element of a call to the vector math library
/// ([`super::strip`]): the call's wide code plus the strip buffers' traffic and the stage
/// loops' overhead. Measured as above with the library: single functions before the
/// activation forms (E2 with `tanh` called, 0.54 ns per element, about 75
/// byte-equivalents; E3 with its `exp` and its division called, 0.40 ns, about 56), about
/// 40% of the inline weights; the forms as the whole of E2 (GELU-tanh) and E3 (SiLU with
/// `exp`) less their 8 bytes of traffic. With the AVX-512 code as a software pipeline
/// (2026-11-26, `graphlift_kernels::veclib`'s `wide`) E2 takes 0.140 ns per element (about 20
/// byte-equivalents) and E3 0.107 (about 15); the other functions are scaled by what the
/// pipeline gained in the library's own loop (`exp` 0.75, `tanh` 0.94, `sigmoid` 0.79;
/// SiLU through `sigmoid` takes 2.3 times SiLU with `exp` there). SiLU with `exp` weighs
/// 10 rather than its 7 so that E3 is split from 2^15 elements: 2 threads, 2^15, 0.081 ns
/// per element in two tasks against 0.102 in one; E2 at 2^14 in two tasks took 0.184 against
/// 0.140 in one, so neither splits at 2^14 (`graphlift bench-expr`, 2026-11-26). `erf` and
/// GELU-erf, pipelined last, gained less (`erf` 0.95, GELU-erf 0.89 and 0.83 with the
/// division): both pieces are computed for every element, so they are bound by their
/// operations.
fn library_weight(f: VecFn) -> usize {
    match f {
        VecFn::Exp => 36,
        VecFn::Divide => 8,
        VecFn::GeluTanh => 12,
        VecFn::GeluErf | VecFn::GeluErfDivide => 38,
        VecFn::Silu => 25,
        VecFn::SiluExp => 10,
        VecFn::Tanh => 34,
        VecFn::Sigmoid => 50,
        VecFn::Erf => 61,
    }
}

/// Byte-equivalents of one element of the slot `op` of element type `ty`. One-instruction
/// ops (add, multiply, compare, select, relu, ...) count nothing: a kernel made of them is
/// bound by its traffic, and the threshold was set for that (counting them split E1-like
/// kernels at sizes where two tasks only break even, and PP-OCR's 2-thread call got 4%
/// slower).
fn slot_weight(op: &SlotOp, ty: ElementType) -> usize {
    let (weight, transcendental) = match op {
        SlotOp::Load { .. } | SlotOp::Const(_) => return 0,
        SlotOp::Unary(u, _) => match u {
            UnaryOp::Exp => (96, true),
            UnaryOp::Log => (100, true),
            UnaryOp::Sigmoid | UnaryOp::Expm1 | UnaryOp::Log1p => (130, true),
            UnaryOp::Tanh => (100, true),
            UnaryOp::Erf => (170, true),
            UnaryOp::Sqrt => (8, false),
            _ => (0, false),
        },
        SlotOp::Binary(b, ..) => match b {
            BinaryOp::Power => (950, true),
            // Integer division is per lane (`sdiv` has no vector form on x64).
            BinaryOp::Divide if ty.is_integer() => (40, false),
            BinaryOp::Divide => (8, false),
            _ => (0, false),
        },
        SlotOp::Compare(..) | SlotOp::Select(..) | SlotOp::Convert(_) => (0, false),
    };
    match (ty, transcendental) {
        (ElementType::F64, true) => 3 * weight,
        (ElementType::F64 | ElementType::I64, false) => 2 * weight,
        _ => weight,
    }
}

/// The work of a call over the whole iteration space, in byte-equivalents: the traffic
/// (bytes of every input read once and every output written once) plus the compute of
/// every per-element slot (invariant slots run once per call and are not counted).
pub fn call_work(plan: &KernelPlan) -> usize {
    let library = LibraryCalls::of(plan);
    let per_element: usize = (0..plan.slots.len())
        .filter(|&k| !plan.slots[k].invariant && !library.inside(k))
        .map(|k| match library.get(k) {
            Some(c) => library_weight(c.function),
            None => slot_weight(&plan.slots[k].op, plan.slots[k].ty),
        })
        .sum();
    call_traffic(plan).saturating_add(plan.count.saturating_mul(per_element))
}

/// The bytes a call over the whole iteration space reads and writes: every input read once
/// and every output written once.
pub fn call_traffic(plan: &KernelPlan) -> usize {
    let reads = plan
        .args
        .iter()
        .map(|a| a.len.saturating_mul(a.ty.size_bytes()))
        .fold(0, usize::saturating_add);
    let writes = plan
        .outputs
        .iter()
        .map(|&(_, t)| plan.count.saturating_mul(t.size_bytes()))
        .fold(0, usize::saturating_add);
    reads.saturating_add(writes)
}
