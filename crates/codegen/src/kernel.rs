//! The loop structure and calling convention (the range ABI) of a fused kernel: one
//! Cranelift function that computes any range of its iteration space, so the runtime can
//! run a kernel in parts (a thread's share, an epilogue's block).

use super::lanes::{data_flags, Lanes};
use super::lower::HelperRefs;
use super::mixed::forms;
use super::plan::{KernelPlan, SlotOp};
use super::strip::{self, StripPlan};
use crate::access::At;
use crate::helpers::Helper;
use crate::loops::{emit_body, emit_invariants, vector_loops, Body, Frame};
use crate::JitError;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{AbiParam, BlockArg, InstBuilder, Signature, Type, Value};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::FunctionBuilder;

/// The kernel signature: `(inputs, outputs, begin, end)`, all pointer-sized, no results,
/// in the platform's C calling convention. This is the range ABI of every kernel:
///
/// ```text
/// unsafe extern "C" fn(inputs: *const *const u8, outputs: *const *mut u8, begin: usize, end: usize)
/// ```
///
/// which computes elements `begin..end` of the kernel's iteration space (nothing if
/// `begin >= end`). `inputs` holds one pointer per live-in, then one per hidden constant
/// buffer; `outputs` one per kernel output. Loads and stores are `notrap` and never
/// `aligned`: buffers may be unaligned.
pub fn kernel_signature(ptr: Type, call_conv: CallConv) -> Signature {
    let mut sig = Signature::new(call_conv);
    for _ in 0..4 {
        sig.params.push(AbiParam::new(ptr));
    }
    sig
}

/// Builds the kernel's function body into `b` (whose signature is [`kernel_signature`]),
/// strip-mined by `strips` when the plan has one ([`StripPlan::of`]).
///
/// Vector kernels of `n` lanes ([`Lanes::X4`]: `n = 4`, [`Lanes::X2`]: `n = 2`) run
/// 1. a preheader: buffer pointers, constants and every loop-invariant slot (splat loads and
///    what is computed from them) — Cranelift does not hoist, so this is done here;
/// 2. a main loop over `2n` elements per trip (two vector bodies: unrolled 2×), entered
///    only with a full trip left and tested at the bottom (one branch per trip);
/// 3. a tail loop over the last 1 to `2n − 1` elements, `n` per trip, that runs **the same
///    vector body** on lanes whose indices are `i + min(lane, r − 1)` (`r` elements left):
///    the extra lanes of the last trip recompute the last element, and the lanes are stored
///    back to those same indices, so the tail computes exactly what full vectors compute and
///    never touches memory outside `begin..end`. (A separate `n`-element body for the first
///    tail trip would be a fourth copy of the body: a quarter more code to compile, for one
///    vector per call.)
///
/// Mixed-width kernels ([`Lanes::Mixed`], `n = 4`) run the same loops; a body computes each
/// 32-bit value as one `X4` vector and each 64-bit value as two `X2` vectors (elements
/// `i..i+2` and `i+2..i+4`; in the tail, lanes `0..2` and `2..4` of the index list), see
/// [`super::mixed`]. A kernel at the scalar width [`Lanes::X1`] runs one element per trip;
/// [`Lanes::for_types`] never picks it, [`crate::JitKernel::compile_scalar`] does.
///
/// A vector kernel that calls the vector math library ([`super::strip`]) runs these loops
/// once per stage of each strip of elements, each time computing only what that stage
/// stores ([`Body`]).
///
/// # Errors
/// [`JitError::Codegen`] if an op cannot be lowered.
pub fn build(
    b: &mut FunctionBuilder,
    plan: &KernelPlan,
    strips: Option<&StripPlan>,
    helpers: &HelperRefs,
    ptr: Type,
) -> Result<(), JitError> {
    if let Some(s) = plan.slots.iter().find(|s| !plan.lanes.holds(s.ty)) {
        return Err(JitError::Codegen {
            kernel: plan.name.clone(),
            message: format!(
                "node `{}`: {} values in a {:?} kernel",
                s.node, s.ty, plan.lanes
            ),
        });
    }
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (inputs, outputs, begin, end) = (params[0], params[1], params[2], params[3]);
    let pre = b.create_block();
    let exit = b.create_block();
    let nonempty = b.ins().icmp(IntCC::UnsignedLessThan, begin, end);
    b.ins().brif(nonempty, pre, &[], exit, &[]);

    // Preheader: pointers and invariants.
    b.switch_to_block(pre);
    let mut used = vec![false; plan.args.len()];
    for s in &plan.slots {
        if let SlotOp::Load { arg, .. } = s.op {
            used[arg] = true;
        }
    }
    let pointer = |b: &mut FunctionBuilder, table: Value, k: usize| {
        let offset = (k as i64).wrapping_mul(i64::from(ptr.bytes()));
        let addr = b.ins().iadd_imm_s(table, offset);
        b.ins().load(ptr, data_flags(), addr, 0)
    };
    let args: Vec<Option<Value>> = used
        .iter()
        .enumerate()
        .map(|(k, &u)| u.then(|| pointer(b, inputs, k)))
        .collect();
    let outs: Vec<Value> = (0..plan.outputs.len())
        .map(|k| pointer(b, outputs, k))
        .collect();
    let mut fr = Frame {
        plan,
        helpers,
        ptr,
        args,
        outs,
        forms: forms(plan),
        invariants: vec![None; plan.slots.len()],
    };
    emit_invariants(b, &mut fr)?;

    let mut fence = false;
    match (plan.lanes, strips) {
        (Lanes::X4 | Lanes::X2 | Lanes::Mixed, Some(strips)) => {
            fence = strips.streams();
            strip::loops(b, &fr, strips, (begin, end), exit)?
        }
        (Lanes::X4 | Lanes::X2 | Lanes::Mixed, None) => {
            vector_loops(b, &fr, &Body::whole(&fr), (begin, end), exit)?
        }
        (Lanes::X1, _) => {
            let whole = Body::whole(&fr);
            let body = b.create_block();
            let i = b.append_block_param(body, ptr);
            b.ins().jump(body, &[BlockArg::Value(begin)]);
            b.switch_to_block(body);
            emit_body(b, &fr, &whole, At::Scalar(i))?;
            let next = b.ins().iadd_imm_s(i, 1);
            let more = b.ins().icmp(IntCC::UnsignedLessThan, next, end);
            b.ins()
                .brif(more, body, &[BlockArg::Value(next)], exit, &[]);
        }
    }
    b.switch_to_block(exit);
    if fence {
        let f = helpers.get(Helper::StoreFence, &plan.name)?;
        b.ins().call(f, &[]);
    }
    b.ins().return_(&[]);
    b.seal_all_blocks();
    Ok(())
}
