//! Compiling a Function: the pass pipeline, kernel code from the cache or new modules, and
//! the plan of steps over buffers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::epilogue::fuse_epilogues;
use graphlift_ir::{Function, Op, Output};
use graphlift_passes::PassManager;
use graphlift_runtime::{function_signature, RuntimeError, Tensor};

use crate::cache::KernelKey;
use crate::JitError;
use graphlift_codegen::compile::{self, CompiledKernel, KernelCode};
use graphlift_codegen::module::KernelModule;
use graphlift_codegen::plan;

use graphlift_codegen::code_path::choose_code_path;

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
                let plan = Arc::new(self.compile_plan(function, cache.is_some())?);
                if let Some(c) = cache {
                    c.insert(&plan);
                }
                plan
            }
        };
        Ok(CpuJitExecutable {
            plan,
            recycled: Mutex::new(Vec::new()),
            parallel: Arc::clone(&self.parallel),
        })
    }

    /// Runs the pass pipeline on a copy of `function` and plans its steps, buffers and
    /// kernels; keeps a copy of `function` as the plan's source when `keep_source`.
    pub(super) fn compile_plan(
        &self,
        function: &Function,
        keep_source: bool,
    ) -> Result<ExecutablePlan, RuntimeError> {
        function.validate()?;
        let (parameters, results) = function_signature(function)?;
        let mut g = function.clone();
        let fname = function.name().to_string();
        let pass_report = PassManager::from_env(self.config.clone())
            .run(&mut g)
            .map_err(|e| RuntimeError::Compile {
                function: fname.clone(),
                message: format!("pass pipeline: {e}"),
            })?;
        g.validate()?;
        let compile_err = |e: JitError| e.into_compile_error(&fname);

        let mut locs: HashMap<Output, Loc> = HashMap::new();
        for (k, &p) in g.parameters().iter().enumerate() {
            locs.insert(Output::new(p, 0), Loc::Input(k));
        }
        let mut steps = Vec::new();
        let mut plans = Vec::new();
        let mut temps = 0usize;
        let mut constants = Vec::new();
        for id in g.topological_order()? {
            let node = g.node(id)?;
            if matches!(node.op(), Op::Parameter | Op::Result) {
                continue;
            }
            if let Op::Constant(data) = node.op() {
                let shape = node.output_type().shape.clone();
                constants.push(Tensor::from_data((**data).clone(), shape)?);
                locs.insert(Output::new(id, 0), Loc::Constant(constants.len() - 1));
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
            let kind = if let Op::FusedKernel(k) = node.op() {
                let mut p = plan::plan_kernel(node.name(), &k.body).map_err(compile_err)?;
                // Standalone until epilogue fusion says otherwise (below).
                choose_code_path(&mut p, &self.target, false);
                plans.push(p);
                StepKind::Kernel(plans.len() - 1)
            } else {
                StepKind::Native
            };
            let outputs: Vec<usize> = (temps..temps + node.outputs().len()).collect();
            temps += outputs.len();
            for (i, &t) in outputs.iter().enumerate() {
                locs.insert(Output::new(id, i), Loc::Temp(t));
            }
            steps.push(Step {
                node: id,
                kind,
                inputs,
                outputs,
                free_after: Vec::new(),
                epilogue: None,
            });
        }
        let result_locs = g
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
        if self.target.epilogue_fusion() {
            steps = fuse_epilogues(steps, &g, &plans)?;
        }
        // Kernels that are still steps of their own are standalone (epilogues run on blocks
        // that are in cache).
        for step in &steps {
            if let StepKind::Kernel(i) = step.kind {
                if let Some(p) = plans.get_mut(i) {
                    choose_code_path(p, &self.target, true);
                }
            }
        }
        plan_lifetimes(&mut steps, &result_locs, temps);
        let peak_intermediate_bytes = peak_bytes(&steps, &g)?;
        let (buffer_of, buffers) = assign_buffers(&steps, &g, temps)?;

        let codes = self.kernel_codes(&plans).map_err(compile_err)?;
        let compiled: Vec<CompiledKernel> = plans
            .into_iter()
            .zip(codes)
            .map(|(p, c)| CompiledKernel::new(p, c))
            .collect();
        let mut take_result = vec![false; result_locs.len()];
        for (k, loc) in result_locs.iter().enumerate() {
            take_result[k] =
                matches!(loc, Loc::Temp(_)) && !result_locs[k + 1..].iter().any(|l| l == loc);
        }
        let direct = DirectCall::of(&steps, &result_locs);
        Ok(ExecutablePlan {
            target: self.target,
            source: keep_source.then(|| function.clone()),
            function: g,
            parameters,
            results,
            steps,
            temps,
            buffer_of,
            buffers,
            peak_intermediate_bytes,
            constants,
            result_locs,
            take_result,
            direct,
            infos: OnceLock::new(),
            pass_report,
            compiled,
        })
    }
}
