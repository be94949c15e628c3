//! The `state` stage of compiling for CPU-JIT: which assigns their kernel writes in place
//! into the variable's storage, and which reads of a variable alias its storage instead of
//! copying it. Both keep every value a step reads equal to the interpreter's.

use std::collections::HashMap;

use graphlift_codegen::in_place::writes_in_place;
use graphlift_ir::NodeId;
use graphlift_runtime::RuntimeError;

use super::compile_plan::Lowering;
use super::*;

/// Position of a use that outlives every step: a result, read when the call ends.
const END: usize = usize::MAX;

impl Lowering {
    /// Stage `state`: in-place assigns ([`Lowering::write_in_place`]), then aliasing reads
    /// ([`Lowering::alias_reads`]). Nothing to do without variables.
    pub(super) fn state(&mut self, _: &CpuJitBackend) -> Result<(), RuntimeError> {
        if self.variables.is_empty() {
            return Ok(());
        }
        self.write_in_place()?;
        self.alias_reads();
        Ok(())
    }

    /// Makes the kernel step `K` that computes an assign's value write it straight into the
    /// variable `v` (no temporary, no copy; the assign's step then runs nothing) when:
    /// - `K` is a kernel step of its own (not an epilogue) and the value is an output that
    ///   only the assign uses;
    /// - every live-in of `K` that reads `v` is read only at the element it writes
    ///   ([`writes_in_place`]), so each element is read before it is overwritten;
    /// - no step between `K` and the assign reads or writes `v`, and every control
    ///   dependency of the assign runs before `K`, so moving the write up changes no value
    ///   any step sees;
    /// - no write of `v` comes after `K` while a user of the assign's value may still read
    ///   it (the value then lives in the storage).
    pub(super) fn write_in_place(&mut self) -> Result<(), RuntimeError> {
        let position = self.node_positions();
        for a in 0..self.steps.len() {
            let StepKind::Assign(v) = self.steps[a].kind else {
                continue;
            };
            let Some(&Loc::Temp(t)) = self.steps[a].inputs.get(1) else {
                continue;
            };
            let Some((k, j)) = self.made_by(t) else {
                continue;
            };
            let kernel = &self.steps[k];
            let (StepKind::Kernel(p), None) = (kernel.kind, &kernel.epilogue) else {
                continue;
            };
            let node = self.g.node(kernel.node)?;
            let assign = self.g.node(self.steps[a].node)?;
            let only_user = node.users(j).len() == 1;
            let reads_ok = (0..node.inputs().len()).all(|i| {
                !self.reads_variable(kernel.inputs[i], v) || writes_in_place(&self.plans[p], i, j)
            });
            let quiet_between = (k + 1..a).all(|s| !self.touches(s, v));
            let deps_before = assign
                .other_deps()
                .iter()
                .all(|d| position.get(d).is_none_or(|&s| s < k));
            let last = self.last_use(Loc::Temp(t), &[a]);
            let no_later_write = (k + 1..=last.min(self.steps.len() - 1))
                .filter(|&s| s != a)
                .all(|s| !self.writes(s, v));
            let once = !kernel.in_place.iter().any(|&(_, w)| w == v);
            if only_user && reads_ok && quiet_between && deps_before && no_later_write && once {
                self.steps[k].in_place.push((j, v));
                self.steps[a].kind = StepKind::AssignInPlace(v);
                self.substitute(Loc::Temp(t), Loc::Variable(v));
            }
        }
        Ok(())
    }

    /// Makes each read of a variable `v` whose value no write of `v` can change before its
    /// last use an alias of the storage: its step copies nothing and its users read the
    /// storage. A write by an in-place kernel that is the read's last use does not count
    /// (that kernel reads each element before it writes it: [`Lowering::write_in_place`]).
    pub(super) fn alias_reads(&mut self) {
        for r in 0..self.steps.len() {
            let (StepKind::Read(v), [t]) = (self.steps[r].kind, self.steps[r].outputs.as_slice())
            else {
                continue;
            };
            let t = *t;
            let last = self.last_use(Loc::Temp(t), &[]).max(r);
            let conflict = (r + 1..=last.min(self.steps.len() - 1)).any(|s| {
                let in_place_last = s == last && self.steps[s].in_place.iter().any(|w| w.1 == v);
                self.writes(s, v) && !in_place_last
            });
            if !conflict {
                self.steps[r].kind = StepKind::ReadAlias(v);
                self.steps[r].outputs.clear();
                self.substitute(Loc::Temp(t), Loc::Variable(v));
            }
        }
    }

    /// The step position of every node that has a step.
    fn node_positions(&self) -> HashMap<NodeId, usize> {
        let mut at = HashMap::new();
        for (s, step) in self.steps.iter().enumerate() {
            at.insert(step.node, s);
            if let Some(e) = &step.epilogue {
                at.insert(e.step.node, s);
            }
        }
        at
    }

    /// The step and output index that fill temporary `t`.
    fn made_by(&self, t: usize) -> Option<(usize, usize)> {
        self.steps
            .iter()
            .enumerate()
            .find_map(|(s, step)| step.outputs.iter().position(|&u| u == t).map(|j| (s, j)))
    }

    /// The inputs of step `s`, its epilogue's included.
    fn step_inputs(&self, s: usize) -> impl Iterator<Item = Loc> + '_ {
        let step = &self.steps[s];
        let epilogue = step.epilogue.iter().flat_map(|e| e.step.inputs.iter());
        step.inputs.iter().chain(epilogue).copied()
    }

    /// The last step that reads `loc` (steps in `ignore` aside), [`END`] if a result is it,
    /// 0 if nothing reads it.
    fn last_use(&self, loc: Loc, ignore: &[usize]) -> usize {
        if self.result_locs.contains(&loc) {
            return END;
        }
        (0..self.steps.len())
            .filter(|s| !ignore.contains(s) && self.step_inputs(*s).any(|l| l == loc))
            .max()
            .unwrap_or(0)
    }

    /// Whether step `s` writes variable `v`.
    fn writes(&self, s: usize, v: usize) -> bool {
        let step = &self.steps[s];
        step.kind == StepKind::Assign(v) || step.in_place.iter().any(|w| w.1 == v)
    }

    /// Whether step `s` reads or writes variable `v` (a read step, or any input that is its
    /// storage).
    fn touches(&self, s: usize, v: usize) -> bool {
        matches!(
            self.steps[s].kind,
            StepKind::Read(w) | StepKind::ReadAlias(w) | StepKind::AssignInPlace(w) if w == v
        ) || self.writes(s, v)
            || self.step_inputs(s).any(|l| l == Loc::Variable(v))
    }

    /// Whether the value at `loc` is a read of variable `v` (its storage, or the output of
    /// a step that reads it).
    fn reads_variable(&self, loc: Loc, v: usize) -> bool {
        match loc {
            Loc::Variable(w) => w == v,
            Loc::Temp(t) => self
                .made_by(t)
                .is_some_and(|(s, _)| self.steps[s].kind == StepKind::Read(v)),
            Loc::Input(_) | Loc::Constant(_) => false,
        }
    }

    /// Replaces `from` by `to` wherever a step or a result reads it.
    fn substitute(&mut self, from: Loc, to: Loc) {
        for step in &mut self.steps {
            let epilogue = step
                .epilogue
                .iter_mut()
                .flat_map(|e| e.step.inputs.iter_mut());
            for l in step.inputs.iter_mut().chain(epilogue) {
                if *l == from {
                    *l = to;
                }
            }
        }
        for l in &mut self.result_locs {
            if *l == from {
                *l = to;
            }
        }
    }
}
