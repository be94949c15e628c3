//! Running the state steps of a plan: reads that alias a variable's storage, assigns that
//! copy into it or whose kernel wrote it in place, and kernel steps that write in place.

use graphlift_ir::{Node, TensorData};
use graphlift_runtime::trace::CallRecorder;
use graphlift_runtime::{RuntimeError, Tensor};
use smallvec::SmallVec;

use super::execute::{output_buffer, Sources};
use super::*;

impl CpuJitExecutable {
    /// Runs `step` when it fills no temporary (an aliasing read, an assign) and records it
    /// with its value when `recorder` is on; `false` for any other step.
    pub(super) fn run_state_step(
        &self,
        step: &Step,
        inputs: &[Tensor],
        temps: &[Option<Tensor>],
        vars: &mut [Tensor],
        recorder: &mut Option<CallRecorder>,
        started: Option<std::time::Instant>,
    ) -> Result<bool, RuntimeError> {
        let v = match step.kind {
            StepKind::ReadAlias(v) | StepKind::AssignInPlace(v) => v,
            StepKind::Assign(v) => {
                self.assign(step, v, inputs, temps, vars)?;
                v
            }
            _ => return Ok(false),
        };
        if let (Some(r), Some(start)) = (recorder.as_mut(), started) {
            let value = vars.get(v).cloned().into_iter().collect::<Vec<_>>();
            self.record(r, step, start, &value)?;
        }
        Ok(true)
    }

    /// Copies an assign's value (input 1) into variable `v`'s storage.
    fn assign(
        &self,
        step: &Step,
        v: usize,
        inputs: &[Tensor],
        temps: &[Option<Tensor>],
        vars: &mut [Tensor],
    ) -> Result<(), RuntimeError> {
        let node = self.plan.function.node(step.node)?;
        let fail = |m: &str| Self::execution_error(node, m.into());
        let copied = match step.inputs.get(1).copied() {
            Some(Loc::Variable(u)) if u == v => true,
            Some(Loc::Variable(u)) => {
                let (src, dst) = two_mut(vars, u, v).ok_or_else(|| fail("no such variable"))?;
                dst.data_mut().copy_from(src.data())
            }
            Some(loc) => {
                let value = self
                    .resolve_one(
                        loc,
                        Sources {
                            inputs,
                            temps,
                            vars: &[],
                        },
                    )
                    .ok_or_else(|| fail("the value was not computed"))?;
                let dst = vars.get_mut(v).ok_or_else(|| fail("no such variable"))?;
                dst.data_mut().copy_from(value.data())
            }
            None => false,
        };
        if copied {
            Ok(())
        } else {
            Err(fail("the value does not have the variable's type"))
        }
    }

    /// Runs a kernel step that writes some outputs in place into variables
    /// ([`Step::in_place`]): each such variable's storage is moved out for the call, handed
    /// to the kernel as that output and as every live-in that reads the variable, and put
    /// back (also when the call fails). The outputs written in place are returned as empty
    /// tensors (their temporaries are never read).
    pub(super) fn run_in_place(
        &self,
        node: &Node,
        step: &Step,
        inputs: &[Tensor],
        temps: &[Option<Tensor>],
        seeded: Vec<Option<Tensor>>,
        vars: &mut [Tensor],
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let StepKind::Kernel(k) = step.kind else {
            return Err(Self::execution_error(
                node,
                "only a kernel writes in place".into(),
            ));
        };
        let mut taken: SmallVec<[(usize, usize, Tensor); 2]> = SmallVec::new();
        for &(j, v) in &step.in_place {
            let Some(slot) = vars.get_mut(v) else {
                break;
            };
            let empty = Tensor::zeros(slot.element_type(), [0])?;
            taken.push((j, v, std::mem::replace(slot, empty)));
        }
        let src = Sources {
            inputs,
            temps,
            vars,
        };
        let result = self.call_in_place(node, step, k, src, seeded, &mut taken);
        for (_, v, t) in taken {
            vars[v] = t;
        }
        result
    }

    /// The kernel call of [`CpuJitExecutable::run_in_place`], with the written variables'
    /// storage in `taken` as `(output, variable, storage)`.
    fn call_in_place(
        &self,
        node: &Node,
        step: &Step,
        k: usize,
        src: Sources<'_>,
        seeded: Vec<Option<Tensor>>,
        taken: &mut [(usize, usize, Tensor)],
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let fail = |m: String| Self::execution_error(node, m);
        if taken.len() != step.in_place.len() {
            return Err(fail("a variable written in place does not exist".into()));
        }
        let own = &step.inputs[..node.inputs().len().min(step.inputs.len())];
        let mut aliases: SmallVec<[(usize, usize); 2]> = SmallVec::new();
        let mut ins: Vec<Option<&TensorData>> = Vec::with_capacity(own.len());
        for (i, &loc) in own.iter().enumerate() {
            let writes = match loc {
                Loc::Variable(v) => step.in_place.iter().find(|w| w.1 == v),
                _ => None,
            };
            if let Some(&(j, _)) = writes {
                aliases.push((i, j));
                ins.push(None);
            } else {
                let t = self.resolve_one(loc, src);
                ins.push(Some(
                    t.ok_or_else(|| fail("an input was not computed".into()))?
                        .data(),
                ));
            }
        }
        let mut seeded = seeded.into_iter().chain(std::iter::repeat(None));
        let mut outs: Vec<Option<Tensor>> = Vec::with_capacity(node.outputs().len());
        for (j, ty) in node.outputs().iter().enumerate() {
            let seed = seeded.next().flatten();
            let written = step.in_place.iter().any(|w| w.0 == j);
            outs.push(if written {
                None
            } else {
                Some(output_buffer(ty, seed)?)
            });
        }
        let mut slots: Vec<Option<&mut TensorData>> = outs
            .iter_mut()
            .map(|t| t.as_mut().map(Tensor::data_mut))
            .collect();
        for (j, _, t) in taken.iter_mut() {
            if let Some(s) = slots.get_mut(*j) {
                *s = Some(t.data_mut());
            }
        }
        let mut out_data: Vec<&mut TensorData> = slots
            .into_iter()
            .collect::<Option<_>>()
            .ok_or_else(|| fail("an output has no buffer".into()))?;
        self.plan.compiled[k]
            .invoke_in_place(&ins, &mut out_data, &aliases, Some(&self.parallel))
            .map_err(|e| fail(e.to_string()))?;
        drop(out_data);
        outs.into_iter()
            .zip(node.outputs())
            .map(|(t, ty)| match t {
                Some(t) => Ok(t),
                None => Tensor::zeros(ty.element_type, [0]),
            })
            .collect()
    }
}

/// `(&vars[src], &mut vars[dst])` for `src != dst`.
fn two_mut(vars: &mut [Tensor], src: usize, dst: usize) -> Option<(&Tensor, &mut Tensor)> {
    if src == dst || src.max(dst) >= vars.len() {
        return None;
    }
    if src < dst {
        let (a, b) = vars.split_at_mut(dst);
        Some((&a[src], &mut b[0]))
    } else {
        let (a, b) = vars.split_at_mut(src);
        Some((&b[0], &mut a[dst]))
    }
}
