//! The work of one kernel call in byte-equivalents ([`call_work`]), for the cost model of the
//! thread split ([`graphlift_kernels::parallel`]): how many tasks a call is worth.

use graphlift_ir::{BinaryOp, ElementType, UnaryOp};

use super::calls::LibraryCalls;
use super::plan::{KernelPlan, SlotOp};
use graphlift_kernels::veclib::VecFn;

/// Byte-equivalents of one element of a call to the vector math library
/// ([`super::strip`]): the call's wide code plus the strip buffers' traffic and the stage
/// loops' overhead, measured as the inline weights are ([`call_work`]): the forms as the
/// whole of E2 (GELU-tanh) and E3 (SiLU with `exp`) less their 8 bytes of traffic, with the
/// library's AVX-512 code as a software pipeline (`graphlift_kernels::veclib`'s `wide`); the
/// other functions scaled by what the pipeline gained in the library's own loop. `erf` and
/// GELU-erf gained least: both pieces are computed for every element, so they are bound by
/// their operations. SiLU with `exp` weighs 10 rather than its 7 so that E3 is split from
/// 2^15 elements, where two tasks are faster than one; neither E2 nor E3 splits at 2^14.
/// Figures in `BENCHMARKS.md`.
fn library_weight(f: VecFn) -> usize {
    match f {
        VecFn::Exp => 36,
        VecFn::Divide => 8,
        VecFn::GeluTanh => 12,
        VecFn::GeluErf | VecFn::GeluErfDivide => 38,
        VecFn::Silu => 25,
        VecFn::SiluExp | VecFn::Swish => 10,
        VecFn::Tanh => 34,
        VecFn::Sigmoid => 50,
        VecFn::Erf => 61,
    }
}

/// Byte-equivalents of one element of the slot `op` of element type `ty`. One-instruction
/// ops (add, multiply, compare, select, relu, ...) count nothing: a kernel made of them is
/// bound by its traffic, and the threshold was set for that (counting them split E1-like
/// kernels at sizes where two tasks only break even, and made PP-OCR's 2-thread call slower:
/// `BENCHMARKS.md`).
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
            // A helper call per lane (the reference's scalar function).
            u if crate::lower::scalar_unary(*u, ty).is_some() => (200, true),
            u if UnaryOp::TRIG.contains(u) => (150, true),
            _ => (0, false),
        },
        SlotOp::Binary(b, ..) => match b {
            BinaryOp::Power => (950, true),
            // A helper call per lane.
            BinaryOp::Mod | BinaryOp::FloorMod => (60, false),
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
///
/// XLA's CPU backend sizes parallel tasks from a cost analysis of flops, transcendentals
/// and bytes; graphlift counts **byte-equivalents**: the bytes a call reads and writes, plus
/// for every element the compute of each per-element slot, weighted by how many bytes the
/// same time would move. Without the compute term a kernel of `tanh` would wait for as many
/// elements as a kernel of one addition before it is split, though each element costs it
/// ten times more.
///
/// One byte-equivalent is the time in which the E1 loop `relu((a+b)·c)+d`, one thread, in
/// cache, moves one byte; the `f32` weights come from E1, E2 (GELU with `tanh`) and E3
/// (`x/(1 + e^−x)`) timed with `graphlift bench-expr` on the 2-vCPU Zen 5 guest (figures in
/// `BENCHMARKS.md`). `f64` math is taken as three times the `f32` per element (two lanes
/// per vector instead of four, and polynomials of about twice the degree), other `f64` and
/// `i64` ops as twice. The weights are coarse on purpose: they decide between one task and
/// a few, where a factor of two in cost moves the split by one power of two of the size.
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
