//! The pass manager: runs an ordered list of passes, validating, timing and dumping.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use graphlift_ir::Function;

use crate::{
    AlgebraicSimplification, BatchNormFolding, CanonicalForms, CommonSubexpressionElimination,
    ConstantFolding, DeadCodeElimination, ExtractionConfig, ExtractionReport, HalfWidening, Pass,
    PassError, QdqLowering, QdqReport, ScopeFusion, ScopeFusionRegistry, ScopeFusionReport,
    SubgraphExtraction,
};

#[cfg(test)]
mod provenance_tests;
#[cfg(test)]
mod tests;

/// The environment variable [`PassManager::from_env`] reads: a directory to dump the
/// function into after each pass.
pub const DUMP_ENV: &str = "GRAPHLIFT_DUMP";

/// The environment variable naming pipeline passes to switch off (comma-separated, e.g.
/// `qdq_lowering` to run a QDQ model with its pairs folded to float), read by
/// [`PassManager::from_env_with_scope_fusion`].
pub const DISABLE_PASSES_ENV: &str = "GRAPHLIFT_DISABLE_PASSES";

/// Runs an ordered list of passes over a [`Function`] (nGraph's `pass::Manager`, Halide's
/// logged lowering).
///
/// - **Validation**: when on, the input is validated before the first pass and the function
///   after every pass; a failure is [`PassError::Validation`] naming the pass that broke it
///   and its position, so a bad rewrite can be bisected (tract's lesson). On by default in
///   debug builds and tests (`cfg!(debug_assertions)`); [`PassManager::set_validation`]
///   forces it.
/// - **Disabling**: any pass, subgraph extraction included, can be switched off by name
///   ([`PassManager::disable`]); an unknown name is an error listing the known ones.
/// - **Report**: for every pass, whether it ran, whether it changed the function, its wall
///   time ([`PassRunReport`]).
/// - **Dumps**: with a dump directory ([`PassManager::set_dump_dir`], or the `GRAPHLIFT_DUMP`
///   environment variable read by [`PassManager::from_env`] — never inside a pass), the input
///   is written to `00-input.txt` and the function after the `N`th pass (1-based position in
///   the pipeline, counting disabled passes, so file names do not move) to
///   `NN-<pass>.txt`, in the text form of [`Function::to_text`]. A dump is written before
///   the function is validated, so the dump of a pass that broke the function shows the
///   damage.
///
/// On error the function is left as the failing step left it: unchanged by a pass that
/// returned an error, invalid after a pass that broke it (to inspect or dump), rewritten by
/// every earlier pass.
///
/// ```
/// use graphlift_ir::{ElementType::F32, FunctionBuilder};
/// use graphlift_passes::{ExtractionConfig, PassManager};
///
/// let b = FunctionBuilder::new("f");
/// let x = b.parameter("x", F32, [4]);
/// let mut f = b.finish(&[((x.exp() + x.exp()) * 1.0).relu()])?;
/// let mut pm = PassManager::default_pipeline(ExtractionConfig::default());
/// pm.disable("subgraph_extraction")?;
/// let report = pm.run(&mut f)?;
/// assert!(report.get("algebraic_simplification").is_some_and(|p| p.changed));
/// assert!(report.get("subgraph_extraction").is_some_and(|p| !p.enabled));
/// assert_eq!(f.nodes().filter(|n| n.op().type_name() == "Exp").count(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PassManager {
    passes: Vec<Box<dyn Pass>>,
    disabled: BTreeSet<String>,
    validate: bool,
    dump_dir: Option<PathBuf>,
}

impl fmt::Debug for PassManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PassManager")
            .field("passes", &self.pass_names())
            .field("disabled", &self.disabled)
            .field("validate", &self.validate)
            .field("dump_dir", &self.dump_dir)
            .finish()
    }
}

impl Default for PassManager {
    fn default() -> PassManager {
        PassManager::new()
    }
}

impl PassManager {
    /// An empty pipeline; validation on in debug builds and tests, no dumps.
    pub fn new() -> PassManager {
        PassManager {
            passes: Vec::new(),
            disabled: BTreeSet::new(),
            validate: cfg!(debug_assertions) || cfg!(test),
            dump_dir: None,
        }
    }

    /// The standard pipeline: scope fusion with the built-in passes, QDQ lowering,
    /// half-precision widening, batch-norm folding, constant folding, canonical forms, common subexpression
    /// elimination, algebraic simplification, dead code elimination, subgraph extraction with
    /// `config` ([`PassManager::with_scope_fusion`] takes another scope fusion registry).
    ///
    /// QDQ lowering ([`QdqLowering`]) comes before constant folding, which would fold the
    /// dequantized constant weights it reads back into float.
    /// Half-precision widening follows scope fusion (whose patterns read the graph as the
    /// exporter wrote it) and precedes the rest, so that every later pass and the kernels see
    /// `f32` ops, and constant folding widens half weights once.
    /// Scope fusion comes first because it reads the exporter's node names: batch-norm
    /// folding and constant folding make nodes with new names, CSE keeps one of two names,
    /// and extraction moves nodes into kernel bodies. Batch-norm folding then comes: it turns `Conv -> BatchNormalization` into a
    /// convolution and a bias `Add` that extraction then fuses with what follows.
    /// Folding comes first so that simplification sees the constants it makes, and canonical
    /// forms the constant exponents of `Pow`; canonical forms come after scope fusion, whose
    /// patterns read the exporters' spellings and names (the nodes it makes are unscoped); CSE before
    /// simplification so that `x - x` is found when the two operands were equal computations;
    /// DCE removes what the rewrites left unused before extraction forms regions. One run
    /// does not iterate: equal computations that simplification exposes (`exp(x * 1)` next
    /// to `exp(x)`) stay apart unless CSE is added again after it. Fused-op expansion
    /// ([`crate::FusedOpExpansion`]) is not included; its documentation says why.
    pub fn default_pipeline(config: ExtractionConfig) -> PassManager {
        PassManager::with_scope_fusion(config, ScopeFusionRegistry::builtin())
    }

    /// [`PassManager::default_pipeline`] with the scope fusion passes of `scope` (user
    /// passes registered, passes disabled by name).
    pub fn with_scope_fusion(config: ExtractionConfig, scope: ScopeFusionRegistry) -> PassManager {
        let mut pm = PassManager::new();
        pm.add(ScopeFusion::new(scope))
            .add(QdqLowering)
            .add(HalfWidening)
            .add(BatchNormFolding)
            .add(ConstantFolding::new())
            .add(CanonicalForms)
            .add(CommonSubexpressionElimination)
            .add(AlgebraicSimplification)
            .add(DeadCodeElimination)
            .add(SubgraphExtraction::new(config));
        pm
    }

    /// [`PassManager::default_pipeline`], dumping into the directory named by the
    /// `GRAPHLIFT_DUMP` environment variable when it is set and not empty.
    pub fn from_env(config: ExtractionConfig) -> PassManager {
        PassManager::from_env_with_scope_fusion(config, ScopeFusionRegistry::builtin())
    }

    /// [`PassManager::with_scope_fusion`], dumping as [`PassManager::from_env`] does, with
    /// the scope fusion passes named by `GRAPHLIFT_DISABLE_SCOPE_PASSES` (comma-separated)
    /// disabled as well as those `scope` disables. The environment is read here, once per
    /// pipeline, never inside a pass; a name no pass has is reported, not an error.
    pub fn from_env_with_scope_fusion(
        config: ExtractionConfig,
        mut scope: ScopeFusionRegistry,
    ) -> PassManager {
        scope.disable_from_env();
        let mut pm = PassManager::with_scope_fusion(config, scope);
        pm.set_dump_dir(PassManager::env_dump_dir());
        if let Ok(list) = std::env::var(DISABLE_PASSES_ENV) {
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                // A name no pass has is reported, not an error (as for scope passes).
                if let Err(e) = pm.disable(name) {
                    eprintln!("graphlift: {DISABLE_PASSES_ENV}: {e}");
                }
            }
        }
        pm
    }

    /// The directory `GRAPHLIFT_DUMP` names, if it is set and not empty.
    pub fn env_dump_dir() -> Option<PathBuf> {
        std::env::var_os(DUMP_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    }

    /// Appends a pass to the pipeline.
    pub fn add(&mut self, pass: impl Pass + 'static) -> &mut PassManager {
        self.passes.push(Box::new(pass));
        self
    }

    /// Appends a boxed pass to the pipeline.
    pub fn push(&mut self, pass: Box<dyn Pass>) -> &mut PassManager {
        self.passes.push(pass);
        self
    }

    /// Inserts a pass at `index` (clamped to the pipeline's length), e.g. 0 for the front.
    pub fn insert(&mut self, index: usize, pass: Box<dyn Pass>) -> &mut PassManager {
        let index = index.min(self.passes.len());
        self.passes.insert(index, pass);
        self
    }

    /// The names of the passes, in pipeline order.
    pub fn pass_names(&self) -> Vec<&'static str> {
        self.passes.iter().map(|p| p.name()).collect()
    }

    /// Switches off every pass named `name` (e.g. `"subgraph_extraction"` to disable
    /// fusion).
    ///
    /// # Errors
    /// [`PassError::UnknownPass`], listing the pipeline's pass names, when no pass has
    /// that name.
    pub fn disable(&mut self, name: &str) -> Result<&mut PassManager, PassError> {
        self.check_known(name)?;
        self.disabled.insert(name.to_string());
        Ok(self)
    }

    /// Switches a disabled pass back on.
    ///
    /// # Errors
    /// [`PassError::UnknownPass`] as [`PassManager::disable`].
    pub fn enable(&mut self, name: &str) -> Result<&mut PassManager, PassError> {
        self.check_known(name)?;
        self.disabled.remove(name);
        Ok(self)
    }

    /// Whether the pass `name` is switched off.
    pub fn is_disabled(&self, name: &str) -> bool {
        self.disabled.contains(name)
    }

    fn check_known(&self, name: &str) -> Result<(), PassError> {
        if self.passes.iter().any(|p| p.name() == name) {
            return Ok(());
        }
        Err(PassError::UnknownPass {
            name: name.to_string(),
            known: self.pass_names().join(", "),
        })
    }

    /// Forces validation after each pass on or off.
    pub fn set_validation(&mut self, on: bool) -> &mut PassManager {
        self.validate = on;
        self
    }

    /// Whether the function is validated after each pass.
    pub fn validation(&self) -> bool {
        self.validate
    }

    /// Sets (or, with `None`, clears) the directory the function is dumped into.
    pub fn set_dump_dir(&mut self, dir: Option<PathBuf>) -> &mut PassManager {
        self.dump_dir = dir;
        self
    }

    /// The dump directory, if any.
    pub fn dump_dir(&self) -> Option<&Path> {
        self.dump_dir.as_deref()
    }

    /// Runs every enabled pass, in order, on `f`.
    ///
    /// # Errors
    /// [`PassError::InvalidInput`] if validation is on and `f` does not validate;
    /// [`PassError::Validation`] naming the pass after which it stopped validating;
    /// [`PassError::Broken`] or [`PassError::InPass`] (naming the pass) when a pass fails;
    /// [`PassError::Dump`] when a dump cannot be written.
    pub fn run(&self, f: &mut Function) -> Result<PassRunReport, PassError> {
        if self.validate {
            f.validate()
                .map_err(|source| PassError::InvalidInput { source })?;
        }
        if let Some(dir) = &self.dump_dir {
            std::fs::create_dir_all(dir).map_err(|e| PassError::Dump {
                path: dir.clone(),
                message: e.to_string(),
            })?;
            write_dump(&dir.join("00-input.txt"), "input", f)?;
        }
        let mut report = PassRunReport::default();
        for (i, pass) in self.passes.iter().enumerate() {
            let name = pass.name();
            let position = i + 1;
            if self.disabled.contains(name) {
                report.passes.push(PassRecord {
                    name,
                    position,
                    enabled: false,
                    changed: false,
                    duration: Duration::ZERO,
                    nodes_after: f.node_count(),
                    dump: None,
                    extraction: None,
                    scope_fusion: None,
                    qdq: None,
                });
                continue;
            }
            let start = Instant::now();
            let result = pass.run_with_report(f);
            let duration = start.elapsed();
            let outcome = result.map_err(|e| match e {
                PassError::Broken { .. } => e,
                other => PassError::InPass {
                    pass: name,
                    source: Box::new(other),
                },
            })?;
            let changed = outcome.changed;
            let dump = match &self.dump_dir {
                Some(dir) => {
                    let path = dir.join(format!("{position:02}-{name}.txt"));
                    let what = format!("after pass {position} `{name}` (changed: {changed})");
                    write_dump(&path, &what, f)?;
                    Some(path)
                }
                None => None,
            };
            if self.validate {
                f.validate().map_err(|source| PassError::Validation {
                    pass: name,
                    position,
                    source,
                })?;
            }
            report.passes.push(PassRecord {
                name,
                position,
                enabled: true,
                changed,
                duration,
                nodes_after: f.node_count(),
                dump,
                extraction: outcome.extraction,
                scope_fusion: outcome.scope_fusion,
                qdq: outcome.qdq,
            });
        }
        Ok(report)
    }
}

fn write_dump(path: &Path, what: &str, f: &Function) -> Result<(), PassError> {
    let text = format!("# {what}\n{}", f.to_text());
    std::fs::write(path, text).map_err(|e| PassError::Dump {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// What [`PassManager::run`] did, one record per pass of the pipeline, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassRunReport {
    /// One record per pass, disabled ones included.
    pub passes: Vec<PassRecord>,
}

impl PassRunReport {
    /// Whether any pass changed the function.
    pub fn changed(&self) -> bool {
        self.passes.iter().any(|p| p.changed)
    }

    /// The sum of the passes' wall times.
    pub fn total_time(&self) -> Duration {
        self.passes.iter().map(|p| p.duration).sum()
    }

    /// The report of the last subgraph extraction that ran, if any.
    pub fn extraction(&self) -> Option<&ExtractionReport> {
        self.passes.iter().rev().find_map(|p| p.extraction.as_ref())
    }

    /// The report of the last scope fusion that ran, if any.
    pub fn scope_fusion(&self) -> Option<&ScopeFusionReport> {
        self.passes
            .iter()
            .rev()
            .find_map(|p| p.scope_fusion.as_ref())
    }

    /// The report of the last QDQ lowering that ran, if any.
    pub fn qdq(&self) -> Option<&QdqReport> {
        self.passes.iter().rev().find_map(|p| p.qdq.as_ref())
    }

    /// The first record of the pass `name`.
    pub fn get(&self, name: &str) -> Option<&PassRecord> {
        self.passes.iter().find(|p| p.name == name)
    }
}

impl fmt::Display for PassRunReport {
    /// One line per pass: position, name, `changed`/`unchanged`/`disabled`, time in µs, and
    /// the node count after it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.passes {
            let status = match (p.enabled, p.changed) {
                (false, _) => "disabled",
                (true, true) => "changed",
                (true, false) => "unchanged",
            };
            writeln!(
                f,
                "{:02} {:<34} {:<9} {:>10} us {:>7} nodes",
                p.position,
                p.name,
                status,
                p.duration.as_micros(),
                p.nodes_after
            )?;
        }
        Ok(())
    }
}

/// What one pass of a [`PassManager`] run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassRecord {
    /// The pass's name.
    pub name: &'static str,
    /// Its 1-based position in the pipeline (the `NN` of its dump file).
    pub position: usize,
    /// `false` when it was disabled and did not run.
    pub enabled: bool,
    /// Whether it changed the function.
    pub changed: bool,
    /// Wall time of the pass itself (`std::time::Instant`), without validation and dump;
    /// zero when disabled.
    pub duration: Duration,
    /// Live nodes of the function after the pass.
    pub nodes_after: usize,
    /// The dump file written after it, if dumping.
    pub dump: Option<PathBuf>,
    /// Subgraph extraction's report (kernels, nodes left outside and why).
    pub extraction: Option<ExtractionReport>,
    /// Scope fusion's report (fused scopes, discarded and refused matches).
    pub scope_fusion: Option<ScopeFusionReport>,
    /// QDQ lowering's report (products made integer kernels, those left in float and why).
    pub qdq: Option<QdqReport>,
}
