//! `graphlift explain`: what the compiler did to a model — the pass pipeline with timings,
//! every fused kernel with its nodes' provenance and pass histories, the nodes left outside
//! kernels and why — and, on request, the compiled graph as DOT, SVG or JSON.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use graphlift::jit::{CpuJitBackend, CpuJitExecutable};
use graphlift::{Executable, Function};

use crate::error::CliError;
use crate::grad::chosen_function;
use crate::run::import_for;
use crate::{default_model, ExplainArgs};

/// Runs `graphlift explain`.
///
/// # Errors
/// Any import or compile error; [`CliError::Io`] when an output file cannot be written;
/// [`CliError::Graphviz`] when `--svg` is given and `dot` is missing or fails.
pub fn explain(args: &ExplainArgs) -> Result<(), CliError> {
    let (function, what) = match &args.model {
        Some(path) => {
            let (model, _) = import_for(path, &[], &args.shapes)?;
            let (f, which) = chosen_function(&model, &args.gradient)?;
            (f, format!("model: {}, {which}", path.display()))
        }
        None if !args.gradient.wrt.is_empty() => {
            return Err(CliError::Usage("--wrt needs a MODEL".into()))
        }
        None => (
            default_model::default_model()?.model.function,
            format!("model: embedded default ({})", default_model::DESCRIPTION),
        ),
    };
    let exe = CpuJitBackend::new()
        .with_scope_fusion(args.scope.registry()?)
        .compile_executable(&function)?;
    println!("{what}");
    print!("{}", report(&exe));
    let compiled = exe.function();
    if let Some(path) = &args.dot {
        write_atomically(path, compiled.to_dot().as_bytes())?;
    }
    if let Some(path) = &args.json {
        write_atomically(path, compiled.to_json().as_bytes())?;
    }
    if let Some(path) = &args.svg {
        write_atomically(path, &render_svg(compiled)?)?;
    }
    Ok(())
}

/// The QDQ lowering's section: each product made an integer kernel, each left in float
/// with the reason, and the 8-bit round trips made float clamps. Nothing for a model without
/// quantized values.
fn qdq_report(s: &mut String, q: &graphlift::passes::QdqReport) {
    if q.lowered.is_empty() && q.stayed_float.is_empty() && q.round_trips == 0 {
        return;
    }
    let _ = writeln!(
        s,
        "\nquantized (QDQ) patterns: {} on integer kernels, {} in float, {} \
         QuantizeLinear -> DequantizeLinear round trip(s) made float clamps:",
        q.lowered.len(),
        q.stayed_float.len(),
        q.round_trips
    );
    for (node, what) in &q.lowered {
        let _ = writeln!(s, "  integer: {node}: {what}");
    }
    for (node, why) in &q.stayed_float {
        let _ = writeln!(s, "  float:   {node}: {why}");
    }
}

/// The text report: pipeline, kernels, nodes outside kernels, and how each read and assign
/// of a variable runs.
pub fn report(exe: &CpuJitExecutable) -> String {
    let mut s = String::new();
    let _ = match exe.batch_split() {
        Ok(spread) => writeln!(
            s,
            "\nbatch: split sample by sample, {spread} (what follows is one sample's plan)"
        ),
        Err(why) => writeln!(s, "\nbatch: every step runs on the whole batch ({why})"),
    };
    let passes = exe.pass_report();
    let _ = writeln!(
        s,
        "\npass pipeline ({} us in total):",
        passes.total_time().as_micros()
    );
    for line in passes.to_string().lines() {
        let _ = writeln!(s, "  {line}");
    }
    if let Some(q) = passes.qdq() {
        qdq_report(&mut s, q);
    }
    let kernels = exe.kernels();
    let _ = writeln!(s, "\nkernels ({}):", kernels.len());
    for k in &kernels {
        let _ = writeln!(
            s,
            "  {}: {} node(s), {} live-in(s), {} output(s), {} bytes of code",
            k.name,
            k.fused_nodes.len(),
            k.live_ins,
            k.outputs,
            k.code_size
        );
        if let Some(producer) = &k.epilogue_of {
            let _ = writeln!(s, "    runs in the output loop of `{producer}` (epilogue)");
        }
        for (output, variable) in &k.writes_in_place {
            let _ = writeln!(
                s,
                "    writes output {output} in place into variable `{variable}` (its assign \
                 needs no temporary and no copy)"
            );
        }
        if let Some(Some(isa)) = exe.kernel_assembled(&k.name) {
            let _ = writeln!(
                s,
                "    {} code: {} f32 lanes, assembled without Cranelift",
                isa.name(),
                isa.lanes()
            );
        } else {
            let lanes = exe.kernel_lanes(&k.name).unwrap_or(1);
            let why = exe.kernel_assembler_refusal(&k.name).unwrap_or_default();
            let _ = writeln!(
                s,
                "    Cranelift code, {lanes} lane(s) a vector; not assembled: {why}"
            );
        }
        if exe.kernel_streams(&k.name).unwrap_or(false) {
            let _ = writeln!(s, "    writes its outputs with non-temporal stores");
        }
        let library = exe.kernel_library_functions(&k.name).unwrap_or_default();
        if !library.is_empty() {
            let _ = writeln!(
                s,
                "    calls the vector math library in strips: {}",
                library.join(", ")
            );
        }
        let scalar = exe.kernel_scalar_calls(&k.name).unwrap_or_default();
        if !scalar.is_empty() {
            let _ = writeln!(
                s,
                "    calls the interpreter's scalar function once per lane (no vector \
                 lowering): {}",
                scalar.join(", ")
            );
        }
        let _ = writeln!(s, "    provenance: {}", join(&k.tags));
        for (i, n) in k.fused_nodes.iter().enumerate() {
            let tags = k.node_tags.get(i).map(|t| join(t)).unwrap_or_default();
            let passes = k.pass_history.get(i).map(|p| join(p)).unwrap_or_default();
            let code: u32 = k
                .code_ranges
                .iter()
                .filter(|r| &r.node == n)
                .map(|r| r.end - r.start)
                .sum();
            let _ = writeln!(
                s,
                "    - {n}  tags: [{tags}]  passes: [{passes}]  code: {code} bytes"
            );
        }
    }
    match exe.scope_fusion_report() {
        Some(r) => {
            let _ = writeln!(s, "\nscope fusion ({} fused):", r.fused.len());
            for line in r.to_string().lines() {
                let _ = writeln!(s, "  {line}");
            }
        }
        None => {
            let _ = writeln!(s, "\nscope fusion: disabled");
        }
    }
    let outside = exe
        .extraction_report()
        .map(|r| r.outside.as_slice())
        .unwrap_or_default();
    let _ = writeln!(s, "\noutside kernels ({}):", outside.len());
    for o in outside {
        let tags = exe
            .function()
            .get(o.node)
            .map(|n| n.tags().iter().collect::<Vec<_>>().join(", "))
            .unwrap_or_default();
        let _ = writeln!(s, "  - {} ({}) [{tags}]: {}", o.name, o.op, o.reason);
    }
    // The steps' reports, one section each where any step has one.
    let steps = exe.steps();
    let control = steps.iter().filter_map(|st| {
        let how = st.control_flow.as_ref()?;
        Some(format!("{}: {how}", st.node))
    });
    section(&mut s, "control-flow steps", control.collect());
    let packed = steps.iter().filter_map(|st| {
        let w = st.packed.as_ref()?;
        Some(format!("{} ({}): {w}", st.node, st.op))
    });
    section(&mut s, "products on packed weights", packed.collect());
    let forwards = steps.iter().filter_map(|st| {
        let how = st.forwards.as_ref()?;
        Some(format!("{}: {how}", st.node))
    });
    section(&mut s, "reshapes without a copy", forwards.collect());
    let state = steps.iter().filter_map(|st| {
        let how = st.state.as_ref()?;
        Some(format!("{} ({}): {how}", st.node, st.op))
    });
    section(&mut s, "reads and assigns of variables", state.collect());
    s
}

/// Appends the section `title` listing `lines`, one `  - ` item each; nothing when there
/// are none.
fn section(s: &mut String, title: &str, lines: Vec<String>) {
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n{title} ({}):", lines.len());
    for line in lines {
        let _ = writeln!(s, "  - {line}");
    }
}

fn join(v: &[String]) -> String {
    v.join(", ")
}

/// Renders `f` through Graphviz: `dot -Tsvg`, the DOT text on stdin.
fn render_svg(f: &Function) -> Result<Vec<u8>, CliError> {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            CliError::Graphviz(if e.kind() == std::io::ErrorKind::NotFound {
                "--svg needs Graphviz: the `dot` command was not found on PATH (install \
                 graphviz, or write --dot FILE and render it elsewhere)"
                    .into()
            } else {
                format!("cannot start `dot`: {e}")
            })
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(f.to_dot().as_bytes())
            .map_err(|e| CliError::Graphviz(format!("writing to `dot`: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| CliError::Graphviz(format!("waiting for `dot`: {e}")))?;
    if !out.status.success() {
        return Err(CliError::Graphviz(format!(
            "`dot -Tsvg` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

/// Writes `data` to `path` complete or not at all: into a temporary file beside it, then
/// renamed over it.
fn write_atomically(path: &Path, data: &[u8]) -> Result<(), CliError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CliError::Io { path, source }
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp: PathBuf = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp)
        .and_then(|mut file| {
            file.write_all(data)?;
            file.sync_all()
        })
        .map_err(io(&tmp));
    let renamed = written.and_then(|()| std::fs::rename(&tmp, path).map_err(io(path)));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

#[cfg(test)]
mod tests {
    use super::qdq_report;
    use graphlift::passes::QdqReport;

    /// The QDQ section lists each pattern on its own line, integer kernels first, with what
    /// each became or why it stayed in float; a model without QDQ patterns has no section.
    #[test]
    fn the_qdq_section_lists_integer_and_float_patterns() {
        let mut s = String::new();
        qdq_report(&mut s, &QdqReport::default());
        assert!(s.is_empty(), "{s}");
        let report = QdqReport {
            lowered: vec![("mm".into(), "QuantizedMatMul 4x24x9".into())],
            stayed_float: vec![("add".into(), "Add stays in float".into())],
            round_trips: 2,
        };
        qdq_report(&mut s, &report);
        let lines: Vec<&str> = s.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(
            lines,
            [
                "quantized (QDQ) patterns: 1 on integer kernels, 1 in float, 2 QuantizeLinear \
                 -> DequantizeLinear round trip(s) made float clamps:",
                "  integer: mm: QuantizedMatMul 4x24x9",
                "  float:   add: Add stays in float",
            ]
        );
    }
}
