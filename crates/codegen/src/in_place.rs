//! In-place kernel calls: an output written into the buffer of an input that the kernel
//! reads only at the element it writes (`w = w - lr * g` writing `w`), so an assign to a
//! variable needs no temporary and no copy.

use graphlift_ir::TensorData;
use graphlift_kernels::parallel::{for_each, Parallel};

use crate::compile::CompiledKernel;
use crate::plan::KernelPlan;
use crate::strip::StripPlan;
use crate::JitError;

/// Whether the kernel of `plan` may write output `output` into the buffer of live-in
/// `input`: it reads that live-in only at the element it computes
/// ([`KernelPlan::reads_contiguously`]), with the output's element type; the output is
/// computed from that load ([`KernelPlan::computed_from`]: an output that is not, such as a
/// broadcast parameter, may be stored before the loop loads the live-in, and an element
/// would then be read after it is overwritten); and it writes the output only in the loop
/// that also loads the live-in (not from a library call or a streamed strip copy, which run
/// after a strip's loads of other stages: [`StripPlan`]). Every element is then loaded
/// before it is stored, by the same thread. Decided on the final plan (after its code path
/// is chosen).
pub fn writes_in_place(plan: &KernelPlan, input: usize, output: usize) -> bool {
    let (Some(arg), Some(&(slot, ty))) = (plan.args.get(input), plan.outputs.get(output)) else {
        return false;
    };
    input < plan.live_ins
        && arg.ty == ty
        && plan.reads_contiguously(input)
        && plan.computed_from(slot, input)
        && StripPlan::of(plan).is_none_or(|s| !s.writes_output(output))
}

impl CompiledKernel {
    /// [`writes_in_place`] for this kernel's plan.
    pub fn writes_in_place(&self, input: usize, output: usize) -> bool {
        writes_in_place(&self.plan, input, output)
    }

    /// [`CompiledKernel::invoke_split`] over the whole iteration space with some outputs
    /// written in place: for each `(input, output)` of `aliases`, `inputs[input]` is `None`
    /// and the kernel reads that live-in from `outputs[output]`, which holds its value on
    /// entry and the output's on return.
    ///
    /// # Errors
    /// [`JitError::Buffer`] unless every other buffer passes the checks of
    /// [`CompiledKernel::prepare`], every alias pairs a `None` input with an output that
    /// [`CompiledKernel::writes_in_place`] allows, and every `None` input is aliased —
    /// checked before any pointer reaches the kernel.
    pub fn invoke_in_place(
        &self,
        inputs: &[Option<&TensorData>],
        outputs: &mut [&mut TensorData],
        aliases: &[(usize, usize)],
        parallel: Option<&Parallel>,
    ) -> Result<(), JitError> {
        let bad = |message: String| JitError::Buffer {
            kernel: self.plan.name.clone(),
            message,
        };
        for (k, input) in inputs.iter().enumerate() {
            let aliased: Vec<usize> = aliases.iter().filter(|a| a.0 == k).map(|a| a.1).collect();
            match (input, aliased.as_slice()) {
                (Some(_), []) => {}
                (None, [o]) if self.writes_in_place(k, *o) && *o < outputs.len() => {}
                (None, [o]) => {
                    return Err(bad(format!(
                        "output {o} cannot be written in place of input {k}"
                    )))
                }
                _ => {
                    return Err(bad(format!(
                        "input {k} must be given or aliased to exactly one output"
                    )))
                }
            }
        }
        let mut buffers = self.prepare_slots(inputs, outputs)?;
        for &(k, o) in aliases {
            buffers.ins[k] = buffers.outs[o].cast_const();
        }
        let count = self.plan.count;
        if count == 0 {
            return Ok(());
        }
        // SAFETY: `prepare_slots` checked every given input and every output to
        // have the planned element type and count, and each aliased input now points at its
        // output, which has the input's element type (`writes_in_place`) and `count`
        // elements, the input's planned length (`reads_contiguously`). The kernel reads an
        // aliased input only at the index it is computing and stores that index of the
        // output only after the loads of the same loop body (`writes_in_place`), so every
        // element is read before it is written, and the value read is the one on entry.
        // Outputs are distinct `&mut` borrows; given inputs are shared borrows distinct
        // from them. Chunks split over the pool are disjoint ranges, and `for_each` returns
        // only when all are done, while every borrow is still held.
        match parallel.and_then(|p| p.split(0, count, self.work(), count)) {
            None => unsafe { self.call_unchecked(&buffers.ins, &buffers.outs, 0, count) },
            Some((team, chunks)) => for_each(team, chunks.into_iter(), |(b, e)| {
                let (ins, outs) = buffers.pointers();
                unsafe { self.call_unchecked(ins, outs, b, e) }
            }),
        }
        Ok(())
    }
}
