//! Compiling a Function: the pass pipeline, kernel code from the cache or new modules, and
//! the plan of steps over buffers.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use super::epilogue::fuse_epilogues;
use graphlift_ir::{Function, Op, Output};
use graphlift_passes::PassManager;
use graphlift_runtime::state::{VariableStore, Variables};
use graphlift_runtime::{function_signature, RuntimeError, Tensor};

use crate::cache::KernelKey;
use crate::JitError;
use graphlift_codegen::compile::{self, CompiledKernel, KernelCode};
use graphlift_codegen::module::KernelModule;
use graphlift_codegen::plan;
use graphlift_kernels::native;

use graphlift_codegen::code_path::choose_code_path;

use super::batch_split::Schedule;
use super::*;

impl CpuJitBackend {
    /// The compiled code of every plan: from the cache, or compiled now (equal plans of one
    /// function once, all misses into one new module) and cached.
    pub(super) fn kernel_codes(
        &self,
        plans: &[plan::KernelPlan],
    ) -> Result<Vec<Arc<KernelCode>>, JitError> {
        let keys: Vec<KernelKey> = plans.iter().map(KernelKey::of).collect();
        let mut codes: Vec<Option<Arc<KernelCode>>> = Vec::with_capacity(plans.len());
        // Unique missing keys, and for each, the plan that compiles it.
        let mut missing: Vec<usize> = Vec::new();
        for (k, key) in keys.iter().enumerate() {
            let found = self.cache.get(key);
            if found.is_none() && !missing.iter().any(|&m| keys[m] == *key) {
                missing.push(k);
            }
            codes.push(found);
        }
        if !missing.is_empty() {
            let module = Arc::new(KernelModule::new()?);
            let refs: Vec<&plan::KernelPlan> = missing.iter().map(|&m| &plans[m]).collect();
            let fresh = compile::compile_codes(&module, &refs)?;
            for (&m, code) in missing.iter().zip(fresh) {
                let code = Arc::new(code);
                self.cache.insert(keys[m].clone(), Arc::clone(&code));
                for (k, key) in keys.iter().enumerate() {
                    if codes[k].is_none() && *key == keys[m] {
                        codes[k] = Some(Arc::clone(&code));
                    }
                }
            }
        }
        codes
            .into_iter()
            .map(|c| c.ok_or_else(|| JitError::Module("a kernel was not compiled".into())))
            .collect()
    }

    /// Compiles `function` into the concrete executable type, or takes the plan of a live
    /// executable of an equal Function from the executable cache
    /// ([`CpuJitBackend::with_executable_cache`]).
    ///
    /// # Errors
    /// [`RuntimeError::Ir`] if the function does not validate; [`RuntimeError::Compile`]
    /// if extraction or code generation fails (the message names the kernel).
    pub fn compile_executable(
        &self,
        function: &Function,
    ) -> Result<CpuJitExecutable, RuntimeError> {
        let cache = self
            .executables
            .as_ref()
            .filter(|_| PassManager::env_dump_dir().is_none());
        let plan = match cache.and_then(|c| c.get(function)) {
            Some(plan) => plan,
            None => {
                let plan = Arc::new(self.scheduled_plan(function, cache.is_some())?);
                if let Some(c) = cache {
                    c.insert(&plan);
                }
                plan
            }
        };
        // One sample's steps run on one thread (a group of one of the backend's); the
        // samples share the backend's.
        let parallel = match plan.schedule {
            Schedule::Samples(_) => Arc::new(Parallel::group(&self.parallel, 1)),
            Schedule::Whole(_) => Arc::clone(&self.parallel),
        };
        let groups = self.group_executables(&plan);
        let variables = VariableStore::new(Variables::of(function)?);
        let pools = (parallel, Arc::clone(&self.parallel));
        Ok(CpuJitExecutable {
            groups,
            ..self.executable_on(plan, pools, variables)
        })
    }

    /// An executable of `plan` with no groups, its steps split over `parallel` and, for a
    /// plan run sample by sample, its samples over `batch_pool`.
    pub(super) fn executable_on(
        &self,
        plan: Arc<ExecutablePlan>,
        (parallel, batch_pool): (Arc<Parallel>, Arc<Parallel>),
        variables: Option<VariableStore>,
    ) -> CpuJitExecutable {
        CpuJitExecutable {
            plan,
            recycled: self.recycling.bins(),
            parallel,
            batch_pool,
            wakes_helpers: AtomicBool::new(false),
            variables,
            groups: Vec::new(),
        }
    }

    /// Runs the pass pipeline on a copy of `function`, then plans its steps, buffers and
    /// kernels through the stages of [`STAGES`], to run on `schedule`; `source` is the
    /// Function the executable cache knows the plan by. With a dump directory
    /// (`GRAPHLIFT_DUMP`) the passes write their dumps and each later stage writes the plan
    /// as it left it to `cpu-jit-NN-<stage>.txt` ([`Lowering::describe`]).
    pub(super) fn compile_plan(
        &self,
        function: &Function,
        source: Option<Function>,
        schedule: Schedule,
    ) -> Result<ExecutablePlan, RuntimeError> {
        function.validate()?;
        let (parameters, results) = function_signature(function)?;
        let fname = function.name().to_string();
        let pm =
            PassManager::from_env_with_scope_fusion(self.config.clone(), self.scope_fusion.clone());
        let dump = pm.dump_dir().map(Path::to_path_buf);
        let mut l = Lowering::passes(function, pm, &fname)?;
        l.variables = function.variables().map(|n| n.name().to_string()).collect();
        for (k, (name, stage)) in STAGES.into_iter().enumerate() {
            stage(&mut l, self)?;
            if let Some(dir) = &dump {
                let path = dir.join(format!("cpu-jit-{:02}-{name}.txt", k + 1));
                std::fs::write(&path, l.describe()).map_err(|e| RuntimeError::Compile {
                    function: fname.clone(),
                    message: format!("writing the dump {}: {e}", path.display()),
                })?;
            }
        }
        let mut take_result = vec![false; l.result_locs.len()];
        for (k, loc) in l.result_locs.iter().enumerate() {
            take_result[k] =
                matches!(loc, Loc::Temp(_)) && !l.result_locs[k + 1..].iter().any(|x| x == loc);
        }
        let direct = DirectCall::of(&l.steps, &l.result_locs);
        Ok(ExecutablePlan {
            target: self.target,
            source,
            schedule,
            function: l.g,
            parameters,
            results,
            steps: l.steps,
            temps: l.temps,
            buffers: l.buffers,
            peak_intermediate_bytes: l.peak_intermediate_bytes,
            constants: l.constants,
            result_locs: l.result_locs,
            take_result,
            direct,
            infos: OnceLock::new(),
            pass_report: l.pass_report,
            compiled: l.compiled,
            variables: l.variables,
            control_flow: l.control_flow,
        })
    }
}

/// One stage of [`STAGES`].
type Stage = fn(&mut Lowering, &CpuJitBackend) -> Result<(), RuntimeError>;

/// The stages of compiling a Function for CPU-JIT after the pass pipeline, in order, as
/// Halide's lowering is a logged list of passes: the steps in topological order with a
/// kernel plan per fused kernel, epilogue fusion into MatMul and convolution output loops,
/// each kernel's code path ([`choose_code_path`]), state (assigns written in place by their
/// kernels, reads that alias a variable's storage: `backend/state.rs`), liveness (which temporaries die after
/// which step), buffers (temporaries to recycled buffers), the kernels' machine code
/// (from the kernel cache or new JIT modules), and the constant operands of native
/// products packed once (`packing`).
const STAGES: [(&str, Stage); 8] = [
    ("steps", Lowering::steps),
    ("epilogue_fusion", Lowering::epilogue_fusion),
    ("code_paths", Lowering::code_paths),
    ("state", Lowering::state),
    ("liveness", Lowering::liveness),
    ("buffers", Lowering::buffers),
    ("kernels", Lowering::kernels),
    ("packing", Lowering::packing),
];

/// A Function part way through its compilation: what each stage has planned so far.
pub(super) struct Lowering {
    pub(super) fname: String,
    pub(super) g: Function,
    /// The source function's variables by name, in node order: [`Loc::Variable`] indexes
    /// this (and the executable's `Variables`).
    pub(super) variables: Vec<String>,
    pass_report: graphlift_passes::PassRunReport,
    pub(super) steps: Vec<Step>,
    pub(super) plans: Vec<plan::KernelPlan>,
    temps: usize,
    constants: Vec<Tensor>,
    pub(super) result_locs: Vec<Loc>,
    peak_intermediate_bytes: usize,
    buffers: BufferPlan,
    compiled: Vec<CompiledKernel>,
    control_flow: Vec<graphlift_runtime::control_flow::CompiledBodies>,
}

impl Lowering {
    /// The pass pipeline `pm` on a copy of `function`: the first stage.
    fn passes(function: &Function, pm: PassManager, fname: &str) -> Result<Lowering, RuntimeError> {
        let mut g = function.clone();
        let pass_report = pm.run(&mut g).map_err(|e| RuntimeError::Compile {
            function: fname.to_string(),
            message: format!("pass pipeline: {e}"),
        })?;
        // Only live nodes run (`Function::live_nodes`): an assign nothing needs must not.
        g.remove_dead_nodes();
        g.validate()?;
        Ok(Lowering {
            fname: fname.to_string(),
            g,
            variables: Vec::new(),
            pass_report,
            steps: Vec::new(),
            plans: Vec::new(),
            temps: 0,
            constants: Vec::new(),
            result_locs: Vec::new(),
            peak_intermediate_bytes: 0,
            buffers: BufferPlan::default(),
            compiled: Vec::new(),
            control_flow: Vec::new(),
        })
    }

    /// Stage `steps`: a step per computing node in topological order (constants bound
    /// once), a kernel plan per fused kernel, and where every value and result lives.
    fn steps(&mut self, backend: &CpuJitBackend) -> Result<(), RuntimeError> {
        let g = &self.g;
        let fname = &self.fname;
        let mut locs: HashMap<Output, Loc> = HashMap::new();
        for (k, &p) in g.parameters().iter().enumerate() {
            locs.insert(Output::new(p, 0), Loc::Input(k));
        }
        for id in g.topological_order()? {
            let node = g.node(id)?;
            if matches!(node.op(), Op::Parameter | Op::Result) {
                continue;
            }
            if let Op::Constant(data) = node.op() {
                let shape = node.output_type().shape.clone();
                self.constants
                    .push(Tensor::from_data((**data).clone(), shape)?);
                locs.insert(Output::new(id, 0), Loc::Constant(self.constants.len() - 1));
                continue;
            }
            if let Op::Variable(_) = node.op() {
                let v = self.variables.iter().position(|n| n == node.name());
                let v = v.ok_or_else(|| RuntimeError::Compile {
                    function: fname.clone(),
                    message: format!("variable `{}` is not in the source function", node.name()),
                })?;
                locs.insert(Output::new(id, 0), Loc::Variable(v));
                continue;
            }
            let inputs = node
                .inputs()
                .iter()
                .map(|o| {
                    locs.get(o).copied().ok_or_else(|| RuntimeError::Compile {
                        function: fname.clone(),
                        message: format!(
                            "input {o:?} of `{}` [provenance: {}] is not computed",
                            node.name(),
                            provenance(node)
                        ),
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let variable = match inputs.first() {
                Some(&Loc::Variable(v)) => v,
                _ => usize::MAX,
            };
            let kind = match node.op() {
                Op::FusedKernel(k) => {
                    let mut p = plan::plan_kernel(node.name(), &k.body)
                        .map_err(|e| e.into_compile_error(fname))?;
                    // Standalone until epilogue fusion says otherwise (below).
                    choose_code_path(&mut p, &backend.target, false);
                    self.plans.push(p);
                    StepKind::Kernel(self.plans.len() - 1)
                }
                // A read copies until the state stage finds it may alias the storage.
                Op::ReadVariable => StepKind::Read(variable),
                Op::Assign => {
                    // An assign's value is its input's: it fills no temporary.
                    locs.insert(Output::new(id, 0), inputs[1]);
                    self.steps.push(Step {
                        node: id,
                        kind: StepKind::Assign(variable),
                        inputs,
                        outputs: Vec::new(),
                        free_after: Vec::new(),
                        epilogue: None,
                        in_place: Vec::new(),
                        packed: None,
                        forwards: None,
                    });
                    continue;
                }
                Op::ControlFlow(cf) => {
                    self.control_flow
                        .push(control_flow::compile_bodies(backend, cf)?);
                    StepKind::ControlFlow(self.control_flow.len() - 1)
                }
                _ => StepKind::Native,
            };
            let outputs: Vec<usize> = (self.temps..self.temps + node.outputs().len()).collect();
            self.temps += outputs.len();
            for (i, &t) in outputs.iter().enumerate() {
                locs.insert(Output::new(id, i), Loc::Temp(t));
            }
            self.steps.push(Step {
                node: id,
                kind,
                inputs,
                outputs,
                free_after: Vec::new(),
                epilogue: None,
                in_place: Vec::new(),
                packed: None,
                forwards: None,
            });
        }
        self.result_locs = g
            .results()
            .iter()
            .map(|&r| {
                let src = g.result_source(r)?;
                locs.get(&src)
                    .copied()
                    .ok_or_else(|| RuntimeError::Compile {
                        function: fname.clone(),
                        message: format!("result {r} is not computed"),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(())
    }

    /// Stage `epilogue_fusion`: kernels that consume a MatMul or convolution result move
    /// into its output loop (when the target has it on).
    fn epilogue_fusion(&mut self, backend: &CpuJitBackend) -> Result<(), RuntimeError> {
        if backend.target.epilogue_fusion() {
            let steps = std::mem::take(&mut self.steps);
            self.steps = fuse_epilogues(steps, &self.g, &self.plans)?;
        }
        Ok(())
    }

    /// Stage `packing`: the constant operand of each native product that takes the packed
    /// path ([`graphlift_kernels::native::prepare`] decides) packed once, here, for every
    /// call; steps of one op over the same constants and data shape (an unrolled recurrent
    /// op's step products) share one packing.
    fn packing(&mut self, backend: &CpuJitBackend) -> Result<(), RuntimeError> {
        type Key = (String, Vec<Option<usize>>, Option<Vec<usize>>);
        let mut made: HashMap<Key, Option<usize>> = HashMap::new();
        let mut packed: Vec<native::PackedWeights> = Vec::new();
        let mut of_step: Vec<Option<usize>> = Vec::with_capacity(self.steps.len());
        for step in &self.steps {
            if step.kind != StepKind::Native {
                of_step.push(None);
                continue;
            }
            let node = self.g.node(step.node)?;
            let own = &step.inputs[..node.inputs().len().min(step.inputs.len())];
            let constants: Vec<Option<&Tensor>> = own
                .iter()
                .map(|l| match *l {
                    Loc::Constant(c) => self.constants.get(c),
                    _ => None,
                })
                .collect();
            let data = node
                .inputs()
                .first()
                .and_then(|&o| self.g.output_type(o).ok())
                .map(|t| &t.shape);
            let key = (
                format!("{:?}", node.op()),
                own.iter()
                    .map(|l| match *l {
                        Loc::Constant(c) => Some(c),
                        _ => None,
                    })
                    .collect(),
                data.map(|s| s.dims().to_vec()),
            );
            let made = made.entry(key).or_insert_with(|| {
                let w = native::prepare(node, &constants, data, &backend.target)?;
                packed.push(w);
                Some(packed.len() - 1)
            });
            of_step.push(*made);
        }
        // All of them in one mapping on huge pages: read once per call, from L3 or memory.
        native::PackedWeights::share_pages(&mut packed);
        let packed: Vec<Arc<native::PackedWeights>> = packed.into_iter().map(Arc::new).collect();
        for (step, w) in self.steps.iter_mut().zip(of_step) {
            step.packed = w.and_then(|w| packed.get(w)).cloned();
        }
        Ok(())
    }

    /// Stage `code_paths`: kernels that are still steps of their own are standalone (they
    /// may stream; epilogues run on blocks that are in cache).
    fn code_paths(&mut self, backend: &CpuJitBackend) -> Result<(), RuntimeError> {
        for step in &self.steps {
            if let StepKind::Kernel(i) = step.kind {
                if let Some(p) = self.plans.get_mut(i) {
                    choose_code_path(p, &backend.target, true);
                }
            }
        }
        Ok(())
    }

    /// Stage `liveness`: the temporaries that die after each step.
    fn liveness(&mut self, _: &CpuJitBackend) -> Result<(), RuntimeError> {
        plan_lifetimes(&mut self.steps, &self.result_locs, self.temps);
        plan_forwarding(&mut self.steps, &self.g)?;
        self.peak_intermediate_bytes = peak_bytes(&self.steps, &self.g)?;
        Ok(())
    }

    /// Stage `buffers`: temporaries assigned to recycled buffers.
    fn buffers(&mut self, backend: &CpuJitBackend) -> Result<(), RuntimeError> {
        let cache = backend.target.last_level_cache_bytes();
        self.buffers = BufferPlan::assign(&self.steps, &self.g, (self.temps, cache))?;
        Ok(())
    }

    /// Stage `kernels`: each plan's machine code, from the kernel cache or compiled now.
    fn kernels(&mut self, backend: &CpuJitBackend) -> Result<(), RuntimeError> {
        let codes = backend
            .kernel_codes(&self.plans)
            .map_err(|e| e.into_compile_error(&self.fname))?;
        let plans = std::mem::take(&mut self.plans);
        self.compiled = plans
            .into_iter()
            .zip(codes)
            .map(|(p, c)| CompiledKernel::new(p, c))
            .collect();
        Ok(())
    }

    /// The plan so far, as text: each step (node, op, kind, where its inputs are, the
    /// temporaries it fills and frees, its epilogue), each kernel plan's code path, the
    /// buffers and, once compiled, each kernel's code.
    pub(super) fn describe(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "function `{}`: {} step(s), {} temporaries",
            self.fname,
            self.steps.len(),
            self.temps
        );
        for (k, st) in self.steps.iter().enumerate() {
            let (name, op) = self.g.get(st.node).map_or(("?".into(), "?".into()), |n| {
                (n.name().to_string(), n.op().type_name().to_string())
            });
            let _ = write!(
                s,
                "step {k}: {name} ({op}) {:?} inputs {:?} outputs {:?} frees {:?}",
                st.kind, st.inputs, st.outputs, st.free_after
            );
            if let Some(e) = &st.epilogue {
                let _ = write!(s, " epilogue {:?} reads {:?}", e.step.kind, e.reads);
            }
            if let Some(w) = &st.packed {
                let _ = write!(s, " {w}");
            }
            s.push('\n');
        }
        let _ = writeln!(s, "results at {:?}", self.result_locs);
        for (k, p) in self.plans.iter().enumerate() {
            let _ = writeln!(
                s,
                "kernel {k}: {} {:?}, {} elements, library calls {}, assembler {:?}, streams {}",
                p.name, p.lanes, p.count, p.veclib, p.isa, p.stream
            );
        }
        if !self.buffers.of.is_empty() {
            let _ = writeln!(
                s,
                "buffers: {} ({} bytes) for {} temporaries {:?}; peak {} bytes live",
                self.buffers.count,
                self.buffers.bytes,
                self.temps,
                self.buffers.of,
                self.peak_intermediate_bytes
            );
        }
        for (k, c) in self.compiled.iter().enumerate() {
            let path = match c.assembled() {
                Some(isa) => isa.name(),
                None => "Cranelift",
            };
            let _ = writeln!(
                s,
                "kernel {k}: {}: {path} code, {} bytes",
                c.plan.name, c.code_size
            );
        }
        s
    }
}
