//! A human-readable text form of a [`Function`], one line per node, as Halide logs its
//! lowering steps and Cranelift writes its text tests: what the pass manager dumps after
//! each pass, for reading and diffing (not for parsing).

use std::fmt::{self, Write};

use crate::{Function, NodeId, Op, Output, TensorData};

/// How many elements of a Constant the text form shows.
pub const CONSTANT_PREVIEW: usize = 8;

impl Function {
    /// The function as text, one line per node in topological order. Never fails: a cyclic
    /// or dangling function is printed too.
    ///
    /// ```text
    /// function f(x, y) -> (Result_4)
    ///   x = Parameter() : f32[4]
    ///   y = Parameter() : f32[4]
    ///   add = Add(x, y) : f32[4]  tags=[onnx:Add:add]  passes=[algebraic_simplification]
    ///   Result_4 = Result(add) : f32[4]
    /// ```
    ///
    /// Each node line is `name = Op(inputs) : output types`, followed, when not empty, by
    /// `after=[...]` (control dependencies), `tags=[...]` (provenance), `passes=[...]` (pass
    /// history) and `meta={k=v, ...}` (metadata). Nodes come in topological order
    /// ([`Function::topological_order`]); a function with a cycle is printed in id order under
    /// a `# cycle` comment, and an input that does not exist prints as `?#id:index`, so a
    /// broken function can still be dumped. A Constant shows its first [`CONSTANT_PREVIEW`]
    /// elements (floats with `{:?}`, so `-0.0`, `NaN` and `inf` are visible); a fused
    /// kernel's body follows its line, indented. The form is for reading and diffing, not
    /// for parsing.
    ///
    /// State: a function with sinks ([`Function::sinks`]) lists them on a `sinks=[...]` line
    /// under its header. A Variable's line gives its type, and its initializer follows it,
    /// indented like a kernel body under an `initializer` header; the control dependencies
    /// that order reads and assigns are the `after=[...]` of their lines:
    ///
    /// ```text
    /// function state() -> (out)
    ///   sinks=[Assign_3]
    ///   w = Variable() : f32[2]
    ///     initializer w_init() -> (init)
    ///       Constant_0 = Constant{0.5, -0.0}() : f32[2]
    ///       init = Result(Constant_0) : f32[2]
    ///   ReadVariable_1 = ReadVariable(w) : f32[2]
    ///   Negative_2 = Negative(ReadVariable_1) : f32[2]
    ///   Assign_3 = Assign(w, Negative_2) : f32[2]
    ///   ReadVariable_4 = ReadVariable(w) : f32[2]  after=[Assign_3]
    ///   out = Result(ReadVariable_4) : f32[2]
    /// ```
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        // Writing to a String cannot fail.
        let _ = write_function(self, "function", 0, &mut s);
        s
    }
}

impl fmt::Display for Function {
    /// Formats as [`Function::to_text`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_function(self, "function", 0, f)
    }
}

/// Writes `f` under a header that starts with `keyword` (`function`, or `initializer` for a
/// Variable's), its lines indented by `indent` steps of two spaces; nested functions (kernel
/// bodies, initializers) follow their node's line two steps deeper.
fn write_function(f: &Function, keyword: &str, indent: usize, out: &mut impl Write) -> fmt::Result {
    let pad = "  ".repeat(indent);
    let names = |ids: &[NodeId]| {
        ids.iter()
            .map(|&id| node_name(f, id))
            .collect::<Vec<_>>()
            .join(", ")
    };
    writeln!(
        out,
        "{pad}{keyword} {}({}) -> ({})",
        f.name(),
        names(f.parameters()),
        names(f.results())
    )?;
    if !f.sinks().is_empty() {
        writeln!(out, "{pad}  sinks=[{}]", names(f.sinks()))?;
    }
    let order = match f.topological_order() {
        Ok(order) => order,
        Err(e) => {
            writeln!(out, "{pad}  # {e}; nodes in id order")?;
            f.nodes().map(|n| n.id()).collect()
        }
    };
    for id in order {
        let Some(n) = f.get(id) else { continue };
        write!(out, "{pad}  {} = ", n.name())?;
        match n.op() {
            Op::Constant(d) => write_constant(d, out)?,
            op => write!(out, "{op}")?,
        }
        let inputs: Vec<String> = n.inputs().iter().map(|&o| value_name(f, o)).collect();
        let types: Vec<String> = n.outputs().iter().map(ToString::to_string).collect();
        write!(out, "({}) : {}", inputs.join(", "), types.join(", "))?;
        if !n.other_deps().is_empty() {
            write!(out, "  after=[{}]", names(n.other_deps()))?;
        }
        if !n.tags().is_empty() {
            let tags: Vec<&str> = n.tags().iter().collect();
            write!(out, "  tags=[{}]", tags.join(", "))?;
        }
        if !n.pass_history().is_empty() {
            write!(out, "  passes=[{}]", n.pass_history().join(", "))?;
        }
        if !n.metadata().is_empty() {
            let meta: Vec<String> = n
                .metadata()
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            write!(out, "  meta={{{}}}", meta.join(", "))?;
        }
        writeln!(out)?;
        match n.op() {
            Op::FusedKernel(k) => write_function(&k.body, "function", indent + 2, out)?,
            Op::Variable(v) => write_function(&v.initializer, "initializer", indent + 2, out)?,
            Op::ControlFlow(c) => {
                for (keyword, body) in c.bodies() {
                    write_function(body, keyword, indent + 2, out)?;
                }
                if let crate::ControlFlow::Loop(crate::control_flow::Loop {
                    body: crate::control_flow::Body::Specialized(s),
                    ..
                }) = &**c
                {
                    writeln!(
                        out,
                        "{pad}    # body `{}` specialised per iteration for the values of its \
                         parameters {:?} ({} specialisation(s) cached)",
                        s.name,
                        s.bound,
                        s.cached()
                    )?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn node_name(f: &Function, id: NodeId) -> String {
    match f.get(id) {
        Some(n) => n.name().to_string(),
        None => format!("?{id}"),
    }
}

/// `name` for output 0 of a single-output node, `name:index` otherwise.
fn value_name(f: &Function, o: Output) -> String {
    match f.get(o.node) {
        Some(n) if n.outputs().len() == 1 && o.index == 0 => n.name().to_string(),
        Some(n) => format!("{}:{}", n.name(), o.index),
        None => format!("?{}:{}", o.node, o.index),
    }
}

fn write_constant(d: &TensorData, out: &mut impl Write) -> fmt::Result {
    let shown = d.len().min(CONSTANT_PREVIEW);
    let items: Vec<String> = match d {
        TensorData::F32(v) => v[..shown].iter().map(|x| format!("{x:?}")).collect(),
        TensorData::F64(v) => v[..shown].iter().map(|x| format!("{x:?}")).collect(),
        TensorData::F16(v) => v[..shown].iter().map(|x| format!("{x:?}")).collect(),
        TensorData::BF16(v) => v[..shown].iter().map(|x| format!("{x:?}")).collect(),
        // Quoted and escaped, so that commas and spaces in a string stay readable.
        TensorData::String(v) => v[..shown].iter().map(|x| format!("{x:?}")).collect(),
        other => {
            crate::match_data!(other, v => v[..shown].iter().map(ToString::to_string).collect())
        }
    };
    let more = if d.len() > shown {
        format!(", ... ({} elements)", d.len())
    } else {
        String::new()
    };
    write!(out, "Constant{{{}{more}}}", items.join(", "))
}

#[cfg(test)]
mod tests {
    use crate::{BinaryOp, ElementType::F32, Function, FunctionBuilder, Op, TensorData};

    #[test]
    fn one_line_per_node_in_topological_order() {
        let b = FunctionBuilder::new("f");
        let x = b.parameter("x", F32, [4]);
        let y = b.parameter("y", F32, [4]);
        let s = (x + y).named("add").tagged("onnx:Add:add");
        let c = b.constant(vec![-0.0f32, f32::NAN], [2]).named("c");
        let mut f = b.finish(&[s, c]).unwrap();
        let add = f.node_by_name("add").unwrap().id();
        f.record_pass(add, "algebraic_simplification").unwrap();
        f.set_metadata(add, "k", "v").unwrap();
        let expected = "\
function f(x, y) -> (Result_4, Result_5)
  x = Parameter() : f32[4]
  y = Parameter() : f32[4]
  add = Add(x, y) : f32[4]  tags=[onnx:Add:add]  passes=[algebraic_simplification]  meta={k=v}
  c = Constant{-0.0, NaN}() : f32[2]
  Result_4 = Result(add) : f32[4]
  Result_5 = Result(c) : f32[2]
";
        assert_eq!(f.to_text(), expected);
        assert_eq!(f.to_string(), expected);
    }

    #[test]
    fn long_constants_are_cut_and_control_dependencies_shown() {
        let mut f = Function::new("g");
        let c = f
            .add_constant(TensorData::I32((0..10).collect()), [10])
            .unwrap();
        let d = f
            .add_constant(TensorData::I32((0..10).collect()), [10])
            .unwrap();
        let a = f
            .add_node(Op::Binary(BinaryOp::Add), &[c.into(), d.into()])
            .unwrap();
        f.add_control_dependency(a, c).unwrap();
        f.add_result(a.into(), Some("out".into())).unwrap();
        let text = f.to_text();
        assert!(
            text.contains("Constant_0 = Constant{0, 1, 2, 3, 4, 5, 6, 7, ... (10 elements)}()"),
            "{text}"
        );
        assert!(
            text.contains("Add_2 = Add(Constant_0, Constant_1) : i32[10]  after=[Constant_0]"),
            "{text}"
        );
    }

    #[test]
    fn variables_show_their_initializer_and_sinks_are_listed() {
        let mut init = Function::new("w_init");
        let c = init
            .add_constant(TensorData::F32(vec![0.5, -0.0]), [2])
            .unwrap();
        init.add_result(c.into(), Some("init".into())).unwrap();
        let mut f = Function::new("state");
        let w = f.add_variable("w", init).unwrap();
        let r = f.add_node(Op::ReadVariable, &[w.into()]).unwrap();
        let n = f
            .add_node(Op::Unary(crate::UnaryOp::Negative), &[r.into()])
            .unwrap();
        let a = f.add_node(Op::Assign, &[w.into(), n.into()]).unwrap();
        let later = f.add_node(Op::ReadVariable, &[w.into()]).unwrap();
        f.add_control_dependency(later, a).unwrap();
        f.add_result(later.into(), Some("out".into())).unwrap();
        f.add_sink(a).unwrap();
        f.validate().unwrap();
        let expected = "\
function state() -> (out)
  sinks=[Assign_3]
  w = Variable() : f32[2]
    initializer w_init() -> (init)
      Constant_0 = Constant{0.5, -0.0}() : f32[2]
      init = Result(Constant_0) : f32[2]
  ReadVariable_1 = ReadVariable(w) : f32[2]
  Negative_2 = Negative(ReadVariable_1) : f32[2]
  Assign_3 = Assign(w, Negative_2) : f32[2]
  ReadVariable_4 = ReadVariable(w) : f32[2]  after=[Assign_3]
  out = Result(ReadVariable_4) : f32[2]
";
        assert_eq!(f.to_text(), expected);
    }

    #[test]
    fn a_cyclic_function_still_prints() {
        let mut f = Function::new("h");
        let x = f.add_parameter("x", F32, [1]).unwrap();
        let a = f
            .add_node(Op::Unary(crate::UnaryOp::Abs), &[x.into()])
            .unwrap();
        let b = f
            .add_node(Op::Unary(crate::UnaryOp::Abs), &[a.into()])
            .unwrap();
        f.add_result(b.into(), None).unwrap();
        // Point b's input at b itself: a self-loop, which validation rejects.
        f.replace_output(a.into(), b.into()).unwrap();
        assert!(f.validate().is_err());
        let text = f.to_text();
        assert!(text.contains("cycle through node"), "{text}");
        assert!(text.contains("Abs_2 = Abs(Abs_2) : f32[1]"), "{text}");
    }
}
