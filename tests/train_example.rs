//! The training example (`examples/train`, whose model, data and loop are in
//! `examples/train/mlp.rs`, included here) in CI: it reaches its documented test accuracy,
//! one of its steps on CPU-JIT matches the INTERPRETER, and a missing or malformed data file
//! is an error naming the file and line. Needs `target/datasets/digits.csv`
//! (`scripts/fetch-datasets.sh`, run by `scripts/test.sh`); without it the tests fail.

#[path = "../examples/train/mlp.rs"]
mod mlp;

use mlp::{Config, Digits, Mlp};

/// The example's split of the digits, or a failure that says how to fetch them.
fn data(config: &Config) -> (Digits, Digits) {
    let digits = mlp::load_digits(&mlp::digits_path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(digits.len(), 1797, "scikit-learn's digits have 1797 rows");
    mlp::split(&digits, config.test_rows, config.shuffle_seed).unwrap()
}

/// The example's run, as `cargo run --release --example train` makes it: the bound its
/// module doc states (it reaches 98.06 % on the x86-64 hosts it was measured on; other seeds
/// give 97.5 to 98.9 %, so a host whose rounding differs stays above the bound too).
#[test]
fn the_example_reaches_its_documented_accuracy() {
    let config = Config::default();
    let (train, test) = data(&config);
    let epochs = mlp::train("CPU-JIT", &config, &train, &test, &mut ()).unwrap();
    assert_eq!(epochs.len(), config.epochs);
    let (first, last) = (&epochs[0], &epochs[epochs.len() - 1]);
    assert!(last.loss < 0.1 * first.loss, "the loss falls: {epochs:#?}");
    assert!(
        last.test_accuracy >= 0.97,
        "test accuracy {:.2} % < 97 %: {epochs:#?}",
        100.0 * last.test_accuracy
    );
}

/// One Adam step from the same initial values on the same batch: every variable (weights,
/// biases, moments, the powers of the decay rates) agrees between CPU-JIT and the reference.
#[test]
fn one_step_on_cpu_jit_matches_the_interpreter() {
    let config = Config::default();
    let (train, _) = data(&config);
    let indices: Vec<usize> = (0..config.batch).collect();
    let batch = train.batch(&indices).unwrap();
    let mut losses = Vec::new();
    let mut variables = Vec::new();
    for backend in ["INTERPRETER", "CPU-JIT"] {
        let mut mlp = Mlp::new(backend, &config).unwrap();
        losses.push(mlp.step(&batch).unwrap());
        variables.push(mlp.variables().unwrap());
    }
    assert!((losses[0] - losses[1]).abs() <= 1e-5, "losses {losses:?}");
    let names: Vec<&str> = variables[0].iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names.len(),
        14,
        "4 parameters, 2 moments each, 2 powers: {names:?}"
    );
    for ((name, reference), (jit_name, jit)) in variables[0].iter().zip(&variables[1]) {
        assert_eq!(name, jit_name);
        let (reference, jit) = (reference.read::<f32>().unwrap(), jit.read::<f32>().unwrap());
        for (i, (a, b)) in reference.iter().zip(jit).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5,
                "{name}[{i}]: INTERPRETER {a}, CPU-JIT {b}"
            );
        }
    }
}

/// A data file that is absent or malformed is an error naming it (and the line), not a
/// panic.
#[test]
fn bad_data_files_are_named_errors() {
    let dir = std::env::temp_dir().join(format!("graphlift-train-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("absent.csv");
    let e = mlp::load_digits(&missing).unwrap_err().to_string();
    assert!(
        e.contains("absent.csv") && e.contains("fetch-datasets.sh"),
        "{e}"
    );

    let row = |label: &str| format!("{}{label}\n", "0,".repeat(mlp::FEATURES));
    let cases = [
        (
            format!("{}0,1,2\n", row("3")),
            ":2: expected 65 comma-separated values, found 3",
        ),
        (
            row("3") + &row("10"),
            ":2: last column: `10` is not a label",
        ),
        (row("x"), ":1: last column: `x` is not a label"),
        (
            row("1").replacen('0', "17", 1),
            ":1: column 1: `17` is not a pixel value",
        ),
        ("\n".to_string(), ": no rows"),
    ];
    let path = dir.join("digits.csv");
    for (text, want) in cases {
        std::fs::write(&path, text).unwrap();
        let e = mlp::load_digits(&path).unwrap_err().to_string();
        assert!(
            e.starts_with(&path.display().to_string()) && e.contains(want),
            "{e}"
        );
    }
    std::fs::write(&path, row("7") + &row("0")).unwrap();
    let digits = mlp::load_digits(&path).unwrap();
    assert_eq!(digits.labels, [7, 0]);
    std::fs::remove_dir_all(&dir).unwrap();
}
