//! The pass manager: the default pipeline end to end, disabling by name, validation naming
//! the pass that broke the function, dumps, timings.

use std::path::PathBuf;

use graphlift_ir::{ElementType::F32, Function, FunctionBuilder, IrError, Output};

use super::*;
use crate::testing::{assert_same_values, count_op};
use crate::FusedOpExpansion;

/// A graph every pass of the default pipeline has work on:
/// - `c1 * c2` folds; `x * 1.0` and `x + (-0.0)` simplify; `exp(x)` twice is merged;
/// - a dead branch is removed; the rest fuses.
fn sample() -> Function {
    let b = FunctionBuilder::new("sample");
    let x = b.parameter("x", F32, [2, 4]);
    let c1 = b.constant(vec![1.0f32, 2.0, 3.0, 4.0], [4]);
    let c2 = b.constant(vec![0.5f32, 0.5, 0.5, 0.5], [4]);
    let folded = (c1 * c2).tagged("onnx:Mul:scale");
    let e1 = x.exp().tagged("onnx:Exp:e1");
    let e2 = x.exp().tagged("onnx:Exp:e2");
    let s = ((e1 * 1.0) + (-0.0)).tagged("onnx:Add:bias");
    // PyTorch's spelling of a square: canonical forms make it `x * x`.
    let y = (s + e2) * folded + x.pow(x.scalar_like(2.0));
    let _dead = (y.abs() + x).sigmoid();
    b.finish(&[y.relu()]).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("graphlift-passes-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

const DEFAULT_NAMES: [&str; 10] = [
    "scope_fusion",
    "qdq_lowering",
    "half_widening",
    "batch_norm_folding",
    "constant_folding",
    "canonical_forms",
    "common_subexpression_elimination",
    "algebraic_simplification",
    "dead_code_elimination",
    "subgraph_extraction",
];

#[test]
fn the_default_pipeline_runs_every_pass_in_order_and_keeps_the_values() {
    let pm = PassManager::default_pipeline(ExtractionConfig::default());
    assert_eq!(pm.pass_names(), DEFAULT_NAMES);
    assert!(pm.validation(), "on in tests");
    let original = sample();
    let mut f = original.clone();
    let report = pm.run(&mut f).unwrap();
    assert_same_values(&original, &f);

    let names: Vec<&str> = report.passes.iter().map(|p| p.name).collect();
    assert_eq!(names, DEFAULT_NAMES);
    for (i, p) in report.passes.iter().enumerate() {
        assert_eq!(p.position, i + 1);
        assert!(p.enabled);
        // Every pass that changes a function also prunes it, so the dead branch is gone
        // before dead code elimination runs; the sample has no batch normalisation.
        let idle = matches!(
            p.name,
            "dead_code_elimination"
                | "batch_norm_folding"
                | "scope_fusion"
                | "qdq_lowering"
                | "half_widening"
        );
        assert_eq!(p.changed, !idle, "{}", p.name);
        assert!(p.dump.is_none());
    }
    assert_eq!(
        report.total_time(),
        report.passes.iter().map(|p| p.duration).sum()
    );
    assert!(
        report.total_time() > Duration::ZERO,
        "wall time is measured"
    );
    assert!(report.changed());
    assert_eq!(report.passes.last().unwrap().nodes_after, f.node_count());
    assert_eq!(count_op(&f, "FusedKernel"), 1, "{f}");
    assert_eq!(count_op(&f, "Sigmoid"), 0);
    let text = report.to_string();
    assert_eq!(text.lines().count(), DEFAULT_NAMES.len());
    assert!(text
        .lines()
        .all(|l| l.contains("changed ") && l.contains(" us ")));
    assert!(text.contains(" unchanged "));
    assert!(report.get("cse").is_none());
    assert!(report.get("subgraph_extraction").is_some());

    // The provenance survives the whole pipeline onto the kernel.
    let k = f
        .nodes()
        .find(|n| n.op().type_name() == "FusedKernel")
        .unwrap();
    for tag in [
        "onnx:Exp:e1",
        "onnx:Exp:e2",
        "onnx:Add:bias",
        "onnx:Mul:scale",
    ] {
        assert!(k.tags().contains(tag), "{tag} lost:\n{f}");
    }
}

#[test]
fn a_pass_is_disabled_by_name_and_unknown_names_list_the_known_ones() {
    let mut pm = PassManager::default_pipeline(ExtractionConfig::default());
    pm.disable("subgraph_extraction")
        .unwrap()
        .disable("constant_folding")
        .unwrap();
    assert!(pm.is_disabled("subgraph_extraction"));
    let mut f = sample();
    let report = pm.run(&mut f).unwrap();
    assert_eq!(count_op(&f, "FusedKernel"), 0, "fusion is off");
    assert_eq!(
        count_op(&f, "Multiply"),
        3,
        "c1 * c2 was not folded; e1 * 1 is gone; x^2 is x * x"
    );
    let off = report.get("subgraph_extraction").unwrap();
    assert!(!off.enabled && !off.changed);
    assert_eq!(off.duration, Duration::ZERO);
    assert!(report.to_string().contains("disabled"));

    pm.enable("subgraph_extraction").unwrap();
    assert!(!pm.is_disabled("subgraph_extraction"));

    let err = pm.disable("fusion").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "unknown pass `fusion`; known passes: {}",
            DEFAULT_NAMES.join(", ")
        )
    );
    assert!(pm.enable("cse").is_err());
}

/// A test-only pass that breaks the function: it points a node's input at the node itself.
struct Corrupt;

impl Pass for Corrupt {
    fn name(&self) -> &'static str {
        "corrupt"
    }
    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        let victim = f
            .nodes()
            .find(|n| n.op().type_name() == "Exp")
            .map(|n| n.id())
            .ok_or_else(|| PassError::Broken {
                pass: "corrupt",
                message: "no Exp".into(),
            })?;
        let user = f.node(victim)?.users(0)[0].0;
        f.replace_output(Output::from(victim), Output::from(user))?;
        Ok(true)
    }
}

/// A test-only pass that fails with an IR error.
struct Failing;

impl Pass for Failing {
    fn name(&self) -> &'static str {
        "failing"
    }
    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        f.node_by_name("nonexistent").map(|_| true).ok_or_else(|| {
            PassError::Ir(IrError::Dangling {
                function: f.name().to_string(),
                what: "no node `nonexistent`".into(),
            })
        })
    }
}

fn exp_chain() -> Function {
    let b = FunctionBuilder::new("chain");
    let x = b.parameter("x", F32, [4]);
    b.finish(&[x.exp().abs().relu()]).unwrap()
}

#[test]
fn validation_names_the_pass_that_broke_the_function() {
    let mut pm = PassManager::new();
    pm.add(DeadCodeElimination)
        .add(Corrupt)
        .add(AlgebraicSimplification);
    let mut f = exp_chain();
    let err = pm.run(&mut f).unwrap_err();
    match &err {
        PassError::Validation { pass, position, .. } => {
            assert_eq!((*pass, *position), ("corrupt", 2));
        }
        other => panic!("expected a validation error, got {other}"),
    }
    assert!(
        err.to_string().contains("after pass `corrupt` (pass 2"),
        "{err}"
    );

    // Disabling the culprit bisects it away.
    pm.disable("corrupt").unwrap();
    let mut f = exp_chain();
    pm.run(&mut f).unwrap();

    // With validation forced off, the next pass trips over the damage and gets the blame
    // (each pass checks its input); alone, the broken function goes through unnoticed.
    pm.enable("corrupt").unwrap().set_validation(false);
    assert!(!pm.validation());
    let err = pm.run(&mut exp_chain()).unwrap_err();
    assert!(
        matches!(
            err,
            PassError::InPass {
                pass: "algebraic_simplification",
                ..
            }
        ),
        "{err}"
    );
    let mut alone = PassManager::new();
    alone.add(Corrupt).set_validation(false);
    let mut f = exp_chain();
    alone.run(&mut f).unwrap();
    assert!(f.validate().is_err());
}

#[test]
fn an_invalid_input_and_a_failing_pass_are_errors_that_say_where() {
    let mut pm = PassManager::new();
    pm.add(DeadCodeElimination);
    let mut f = exp_chain();
    Corrupt.run(&mut f).unwrap();
    let err = pm.run(&mut f).unwrap_err();
    assert!(matches!(err, PassError::InvalidInput { .. }), "{err}");

    let mut pm = PassManager::new();
    pm.add(Failing);
    let err = pm.run(&mut exp_chain()).unwrap_err();
    assert!(
        matches!(
            &err,
            PassError::InPass {
                pass: "failing",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().starts_with("pass `failing`: "), "{err}");
}

#[test]
fn dumps_are_written_after_each_pass_even_when_it_breaks_the_function() {
    let dir = temp_dir("dumps");
    let mut pm = PassManager::default_pipeline(ExtractionConfig::default());
    pm.set_dump_dir(Some(dir.clone()))
        .disable("dead_code_elimination")
        .unwrap();
    assert_eq!(pm.dump_dir(), Some(dir.as_path()));
    let mut f = sample();
    let report = pm.run(&mut f).unwrap();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "00-input.txt",
            "01-scope_fusion.txt",
            "02-qdq_lowering.txt",
            "03-half_widening.txt",
            "04-batch_norm_folding.txt",
            "05-constant_folding.txt",
            "06-canonical_forms.txt",
            "07-common_subexpression_elimination.txt",
            "08-algebraic_simplification.txt",
            "10-subgraph_extraction.txt",
        ],
        "one per enabled pass, numbered by position"
    );
    assert_eq!(
        report.get("constant_folding").unwrap().dump,
        Some(dir.join("05-constant_folding.txt"))
    );
    let input = std::fs::read_to_string(dir.join("00-input.txt")).unwrap();
    assert!(
        input.starts_with("# input\nfunction sample(x) -> ("),
        "{input}"
    );
    assert!(input.contains("tags=[onnx:Exp:e1]"), "{input}");
    let folded = std::fs::read_to_string(dir.join("05-constant_folding.txt")).unwrap();
    assert!(folded.starts_with("# after pass 5 `constant_folding` (changed: true)\n"));
    assert!(folded.contains("passes=[constant_folding]"), "{folded}");
    let fused = std::fs::read_to_string(dir.join("10-subgraph_extraction.txt")).unwrap();
    assert_eq!(
        fused,
        format!("# after pass 10 `subgraph_extraction` (changed: true)\n{f}")
    );

    // The dump of a pass that breaks the function is written before validation fails.
    let dir2 = temp_dir("broken_dump");
    let mut pm = PassManager::new();
    pm.add(Corrupt).set_dump_dir(Some(dir2.clone()));
    assert!(pm.run(&mut exp_chain()).is_err());
    let broken = std::fs::read_to_string(dir2.join("01-corrupt.txt")).unwrap();
    assert!(broken.contains("cycle through node"), "{broken}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

#[test]
fn a_dump_directory_that_cannot_be_created_is_an_error() {
    let file = temp_dir("not_a_dir");
    std::fs::write(&file, "a file").unwrap();
    let mut pm = PassManager::new();
    pm.add(DeadCodeElimination)
        .set_dump_dir(Some(file.join("sub")));
    let err = pm.run(&mut exp_chain()).unwrap_err();
    assert!(matches!(err, PassError::Dump { .. }), "{err}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn from_env_reads_graphlift_dump() {
    // The only test that touches the variable; the manager reads it once, in from_env.
    let dir = temp_dir("env");
    let saved = std::env::var_os(DUMP_ENV);
    std::env::set_var(DUMP_ENV, &dir);
    let pm = PassManager::from_env(ExtractionConfig::default());
    std::env::set_var(DUMP_ENV, "");
    let empty = PassManager::from_env(ExtractionConfig::default());
    match saved {
        Some(v) => std::env::set_var(DUMP_ENV, v),
        None => std::env::remove_var(DUMP_ENV),
    }
    assert_eq!(pm.dump_dir(), Some(dir.as_path()));
    assert_eq!(pm.pass_names(), DEFAULT_NAMES);
    assert_eq!(empty.dump_dir(), None, "an empty value means no dumps");
}

#[test]
fn fused_op_expansion_can_be_put_in_front() {
    let mut pm = PassManager::default_pipeline(ExtractionConfig::default());
    pm.insert(0, Box::new(FusedOpExpansion));
    assert_eq!(pm.pass_names()[0], "fused_op_expansion");
    let original = sample();
    let mut f = original.clone();
    pm.run(&mut f).unwrap();
    let once = f.clone();
    // Re-optimizing a fused function expands and re-extracts the same kernel.
    let report = pm.run(&mut f).unwrap();
    assert!(report.get("fused_op_expansion").unwrap().changed);
    assert_same_values(&original, &f);
    assert_eq!(count_op(&f, "FusedKernel"), count_op(&once, "FusedKernel"));
}
