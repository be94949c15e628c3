//! Running an executable's steps: kernel calls over planned buffers, epilogues in their
//! producer's output loop, and trace records.

use std::sync::atomic::Ordering::Relaxed;

use super::epilogue::EpilogueStep;
use graphlift_ir::{Node, TensorData, TensorType};
use graphlift_kernels::native::{self, Block, Epilogue};
use graphlift_runtime::trace::{CallRecorder, StepKind as TraceStepKind};
use graphlift_runtime::{RuntimeError, Tensor};
use smallvec::SmallVec;

use crate::JitError;
use graphlift_codegen::compile::CompiledKernel;

use super::*;

impl CpuJitExecutable {
    pub(super) fn execution_error(node: &Node, message: String) -> RuntimeError {
        RuntimeError::Execution {
            node: node.name().to_string(),
            op: node.op().to_string(),
            provenance: provenance(node),
            message,
        }
    }

    /// Runs a [`DirectCall`] plan on the caller's (validated) buffers.
    pub(super) fn call_direct(
        &self,
        d: &DirectCall,
        outputs: &mut [Tensor],
        inputs: &[Tensor],
    ) -> Result<(), RuntimeError> {
        let node = self.plan.function.node(d.node)?;
        let not_computed = || Self::execution_error(node, "an input was not computed".into());
        // The node's own inputs, as `run_step` takes them.
        let own = &d.inputs[..node.inputs().len().min(d.inputs.len())];
        let ins = own
            .iter()
            .map(|&l| {
                self.resolve_one(l, Sources::inputs(inputs))
                    .map(Tensor::data)
            })
            .collect::<Option<SmallVec<[&TensorData; 8]>>>()
            .ok_or_else(not_computed)?;
        let mut by_result: SmallVec<[Option<&mut TensorData>; 4]> =
            outputs.iter_mut().map(|t| Some(t.data_mut())).collect();
        let mut outs = d
            .results
            .iter()
            .map(|&r| by_result.get_mut(r).and_then(Option::take))
            .collect::<Option<SmallVec<[&mut TensorData; 4]>>>()
            .ok_or_else(not_computed)?;
        self.run_whole(&self.plan.compiled[d.kernel], &ins, &mut outs)
            .map_err(|e| Self::execution_error(node, e.to_string()))
    }

    /// Runs the plan's steps in order, leaving each value in its temp slot and writing the
    /// variables' storage `vars`; records each step when a tracer is alive.
    pub(super) fn run_steps(
        &self,
        inputs: &[Tensor],
        temps: &mut [Option<Tensor>],
        recorder: &mut Option<CallRecorder>,
        vars: &mut [Tensor],
    ) -> Result<(), RuntimeError> {
        let mut bin = self
            .recycled
            .as_ref()
            .and_then(|bins| bins.lock().ok()?.pop())
            .unwrap_or_else(|| vec![None; self.plan.buffers.count]);
        if self.wakes_helpers.load(Relaxed) {
            self.parallel.wake();
        }
        let offers = self.parallel.offers();
        for step in &self.plan.steps {
            let started = recorder.as_ref().map(CallRecorder::step_start);
            if self.run_state_step(step, inputs, temps, vars, recorder, started)? {
                continue;
            }
            let outs = match step.forwards {
                Some(input) => self.forward(step, input, temps)?,
                None => {
                    let seeded = step
                        .outputs
                        .iter()
                        .map(|&t| {
                            temps[t]
                                .take()
                                .or_else(|| self.plan.buffers.seed(t, &mut bin))
                        })
                        .collect();
                    self.run_step(step, inputs, temps, seeded, vars)?
                }
            };
            if let (Some(r), Some(start)) = (recorder.as_mut(), started) {
                if step.in_place.is_empty() {
                    self.record(r, step, start, &outs)?;
                } else {
                    // The values written in place are in the variables, not the outputs.
                    let mut shown = outs.clone();
                    for &(j, v) in &step.in_place {
                        if let (Some(o), Some(t)) = (shown.get_mut(j), vars.get(v)) {
                            o.clone_from(t);
                        }
                    }
                    self.record(r, step, start, &shown)?;
                }
            }
            for (&t, o) in step.outputs.iter().zip(outs) {
                temps[t] = Some(o);
            }
            for &t in &step.free_after {
                if let (Some(dead), Some(slot)) =
                    (temps[t].take(), bin.get_mut(self.plan.buffers.of[t]))
                {
                    *slot = Some(dead);
                }
            }
        }
        // Only this call's offers, unless another thread's call on the same pool made some
        // meanwhile: then the next call wakes helpers it may not need, which costs only
        // their spinning.
        self.wakes_helpers
            .store(self.parallel.offers() != offers, Relaxed);
        if let Some(Ok(mut bins)) = self.recycled.as_ref().map(|bins| bins.lock()) {
            // A plan run sample by sample has a call running on each of the pool's threads.
            if bins.len() < MAX_RECYCLE_BINS.max(self.batch_pool.config().threads) {
                bins.push(bin);
            }
        }
        Ok(())
    }

    /// Runs a `Reshape` step that forwards its dying input (`Step::forwards`): the input's
    /// buffer becomes the output, under the output's shape (the plan gives the two one
    /// buffer, [`BufferPlan::assign`]).
    fn forward(
        &self,
        step: &Step,
        input: usize,
        temps: &mut [Option<Tensor>],
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let node = self.plan.function.node(step.node)?;
        let Some(ty) = node.outputs().first() else {
            return Err(Self::execution_error(
                node,
                "a reshape without output".into(),
            ));
        };
        let value = temps[input]
            .take()
            .ok_or_else(|| Self::execution_error(node, "an input was not computed".into()))?;
        let moved = Tensor::from_data(value.into_data(), ty.shape.clone())
            .map_err(|e| Self::execution_error(node, e.to_string()))?;
        Ok(vec![moved])
    }

    /// Records `step` in the trace: its node, and an epilogue's kernel as a step of its own
    /// right after it (with no time of its own: it ran inside the producer's step).
    pub(super) fn record(
        &self,
        r: &mut CallRecorder,
        step: &Step,
        start: std::time::Instant,
        outs: &[Tensor],
    ) -> Result<(), RuntimeError> {
        let kind = |k: StepKind| match k {
            StepKind::Kernel(_) => TraceStepKind::JitKernel,
            _ => TraceStepKind::Native,
        };
        let node = self.plan.function.node(step.node)?;
        let n = node.outputs().len().min(outs.len());
        r.record(node, kind(step.kind), start, &outs[..n]);
        if let Some(e) = &step.epilogue {
            let end = r.step_start();
            r.record(
                self.plan.function.node(e.step.node)?,
                kind(e.step.kind),
                end,
                &outs[n..],
            );
        }
        Ok(())
    }

    /// The tensor at `loc`, or `None` if it was not computed.
    pub(super) fn resolve_one<'a>(&'a self, loc: Loc, src: Sources<'a>) -> Option<&'a Tensor> {
        match loc {
            Loc::Input(k) => src.inputs.get(k),
            Loc::Temp(t) => src.temps.get(t).and_then(Option::as_ref),
            Loc::Constant(c) => self.plan.constants.get(c),
            Loc::Variable(v) => src.vars.get(v),
        }
    }

    /// The tensors at `locs`, or `None` if one was not computed.
    pub(super) fn resolve<'a>(&'a self, locs: &[Loc], src: Sources<'a>) -> Option<Vec<&'a Tensor>> {
        locs.iter().map(|&l| self.resolve_one(l, src)).collect()
    }

    /// Runs one step. A kernel writes into `seeded[j]` for output `j` when the caller's
    /// output tensor was handed in for it (see [`Executable::call`]), else into a new tensor.
    pub(super) fn run_step(
        &self,
        step: &Step,
        inputs: &[Tensor],
        temps: &[Option<Tensor>],
        seeded: Vec<Option<Tensor>>,
        vars: &mut [Tensor],
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let node = self.plan.function.node(step.node)?;
        if !step.in_place.is_empty() {
            return self.run_in_place(node, step, inputs, temps, seeded, vars);
        }
        let src = Sources {
            inputs,
            temps,
            vars,
        };
        let own_inputs = &step.inputs[..node.inputs().len().min(step.inputs.len())];
        let ins = self
            .resolve(own_inputs, src)
            .ok_or_else(|| Self::execution_error(node, "an input was not computed".into()))?;
        match (step.kind, &step.epilogue) {
            (StepKind::Native, None) => native::evaluate_with_epilogue(
                node,
                &ins,
                seeded,
                &self.parallel,
                None,
                step.packed.as_deref(),
            )
            .map(|(outs, _)| outs),
            (StepKind::Native, Some(e)) => self.run_with_epilogue(node, step, e, &ins, src, seeded),
            (StepKind::Read(_), _) => Ok(vec![copy_of(ins[0], seeded)]),
            (StepKind::ReadAlias(_) | StepKind::Assign(_) | StepKind::AssignInPlace(_), _) => Err(
                Self::execution_error(node, "a state step runs in run_state_step".into()),
            ),
            (StepKind::ControlFlow(c), _) => self.run_control_flow(node, c, &ins),
            (StepKind::Kernel(k), _) => {
                let mut outs = kernel_outputs(node, seeded)?;
                let in_data: Vec<&TensorData> = ins.iter().map(|t| t.data()).collect();
                let mut out_data: Vec<&mut TensorData> =
                    outs.iter_mut().map(|t| t.data_mut()).collect();
                self.run_whole(&self.plan.compiled[k], &in_data, &mut out_data)
                    .map_err(|e| Self::execution_error(node, e.to_string()))?;
                Ok(outs)
            }
        }
    }

    /// Runs `kernel` over its whole iteration space, split over the pool when the cost
    /// model says so.
    pub(super) fn run_whole(
        &self,
        kernel: &CompiledKernel,
        inputs: &[&TensorData],
        outputs: &mut [&mut TensorData],
    ) -> Result<(), JitError> {
        kernel.invoke_split(inputs, outputs, 0, kernel.plan.count, Some(&self.parallel))
    }

    /// Runs the native `node` with the kernel step `e` as the epilogue of its output loop
    /// (see [`epilogue`]): the producer's outputs, then the kernel's.
    pub(super) fn run_with_epilogue(
        &self,
        node: &Node,
        step: &Step,
        e: &EpilogueStep,
        ins: &[&Tensor],
        src: Sources<'_>,
        mut seeded: Vec<Option<Tensor>>,
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let knode = self.plan.function.node(e.step.node)?;
        let StepKind::Kernel(k) = e.step.kind else {
            return Err(Self::execution_error(
                knode,
                "an epilogue must be a kernel".into(),
            ));
        };
        let kernel = &self.plan.compiled[k];
        let kernel_err = |err: JitError| Self::execution_error(knode, err.to_string());
        let mut kouts = kernel_outputs(knode, seeded.split_off(node.outputs().len()))?;
        // The producer's result, made before it runs so the kernel's buffers (with this one
        // in the slots that read it) are checked before any block reaches the kernel.
        let ty = node.output_type();
        let product = output_buffer(ty, seeded.into_iter().next().flatten())?;
        let not_computed = || Self::execution_error(knode, "an input was not computed".into());
        let mut out_data: Vec<&mut TensorData> = kouts.iter_mut().map(Tensor::data_mut).collect();
        let buffers = {
            let in_data = self
                .epilogue_inputs(e, product.data(), src)
                .ok_or_else(not_computed)?;
            kernel
                .prepare(&in_data, &mut out_data)
                .map_err(kernel_err)?
        };
        let run = |block: Block| {
            // SAFETY: `buffers` come from `prepare` on this kernel; the kernel's outputs
            // stay borrowed by `out_data` and its other inputs by `inputs`, `temps` and
            // `self.plan.constants` until the producer returns. The slots in `e.reads` read the
            // producer's result contiguously (checked when the plan was made, see
            // `fuse_epilogues`) and are replaced by the block, which `Epilogue::run` hands
            // over as a borrowed slice of the result (a separate buffer from every kernel
            // output). Producers hand over disjoint blocks, so concurrent calls write
            // disjoint ranges of the outputs.
            unsafe { kernel.call_on_block(&buffers, &e.reads, block) }
        };
        // The epilogue alone reads the result when the result dies with this step (it is
        // no graph result and no later step reads it): the producer may leave it unwritten.
        let sole_reader = step
            .outputs
            .first()
            .is_some_and(|t| step.free_after.contains(t));
        let epilogue = if sole_reader {
            Epilogue::sole_reader(&run)
        } else {
            Epilogue::new(&run)
        };
        let (mut outs, ran) = native::evaluate_with_epilogue(
            node,
            ins,
            vec![Some(product)],
            &self.parallel,
            Some(epilogue),
            step.packed.as_deref(),
        )?;
        if !ran {
            // A reference kernel computed the result: run the kernel over all of it.
            let result = outs.first().ok_or_else(not_computed)?;
            let in_data = self
                .epilogue_inputs(e, result.data(), src)
                .ok_or_else(not_computed)?;
            self.run_whole(kernel, &in_data, &mut out_data)
                .map_err(kernel_err)?;
        }
        drop(out_data);
        outs.extend(kouts);
        Ok(outs)
    }

    /// The epilogue kernel's input buffers, with `result` (the producer's) in the slots
    /// that read it; `None` if an input was not computed.
    pub(super) fn epilogue_inputs<'a>(
        &'a self,
        e: &EpilogueStep,
        result: &'a TensorData,
        src: Sources<'a>,
    ) -> Option<Vec<&'a TensorData>> {
        e.step
            .inputs
            .iter()
            .enumerate()
            .map(|(i, l)| {
                if e.reads.contains(&i) {
                    Some(result)
                } else {
                    self.resolve_one(*l, src).map(Tensor::data)
                }
            })
            .collect()
    }
}

/// Where a step's inputs are during a call: the caller's inputs, the temporaries filled so
/// far, and the variables' storage.
#[derive(Clone, Copy)]
pub(super) struct Sources<'a> {
    pub(super) inputs: &'a [Tensor],
    pub(super) temps: &'a [Option<Tensor>],
    pub(super) vars: &'a [Tensor],
}

impl<'a> Sources<'a> {
    /// The caller's inputs alone (a direct call has nothing else).
    pub(super) fn inputs(inputs: &'a [Tensor]) -> Sources<'a> {
        Sources {
            inputs,
            temps: &[],
            vars: &[],
        }
    }
}

/// A copy of `value` in the seeded buffer when it has the type, else in a new tensor.
fn copy_of(value: &Tensor, seeded: Vec<Option<Tensor>>) -> Tensor {
    match seeded.into_iter().next().flatten() {
        Some(mut buffer) if buffer.has_type(&value.tensor_type()) => {
            buffer.data_mut().copy_from(value.data());
            buffer
        }
        _ => value.clone(),
    }
}

/// A kernel's output tensors: the seeded buffers where they have the output's type, else
/// new zeroed tensors.
pub(super) fn kernel_outputs(
    node: &Node,
    seeded: Vec<Option<Tensor>>,
) -> Result<Vec<Tensor>, RuntimeError> {
    node.outputs()
        .iter()
        .zip(seeded.into_iter().chain(std::iter::repeat(None)))
        .map(|(t, seed)| output_buffer(t, seed))
        .collect()
}

/// The seeded buffer when it has type `t`, else a new zeroed tensor of `t`.
pub(super) fn output_buffer(t: &TensorType, seed: Option<Tensor>) -> Result<Tensor, RuntimeError> {
    match seed {
        Some(buffer) if buffer.has_type(t) => Ok(buffer),
        _ => Tensor::zeros(t.element_type, t.shape.clone()),
    }
}
