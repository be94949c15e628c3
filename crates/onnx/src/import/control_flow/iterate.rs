//! `Loop` and `Scan` (see the parent module's doc).

use super::hoist::{BodyIndex, Carried, Settling};
use super::*;

impl<'m> Importer<'m> {
    pub(super) fn import_loop(
        &mut self,
        index: usize,
        node: &'m NodeProto,
        inputs: &[Option<Output>],
        at: &NodeRef,
        cx: &Context,
    ) -> Result<Vec<Output>, OnnxError> {
        let body_g = graph_attr(node, "body", at)?;
        let arity = |message: String| OnnxError::Arity {
            at: at.clone(),
            message,
        };
        if inputs.len() < 2 {
            return Err(arity(
                "Loop needs the inputs M and cond (either may be empty)".into(),
            ));
        }
        let n = inputs.len() - 2;
        if body_g.input.len() != 2 + n {
            return Err(arity(format!(
                "the body has {} inputs, needs {} (iteration number, condition, {n} carried)",
                body_g.input.len(),
                2 + n
            )));
        }
        if body_g.output.len() < 1 + n {
            return Err(arity(format!(
                "the body has {} outputs, needs at least {} (condition, {n} carried)",
                body_g.output.len(),
                1 + n
            )));
        }
        let k_scan = body_g.output.len() - 1 - n;
        if node.output.len() > n + k_scan {
            return Err(arity(format!(
                "has {} outputs; its body gives {n} carried values and {k_scan} scan outputs",
                node.output.len()
            )));
        }
        let ir = |e| OnnxError::Ir {
            at: at.clone(),
            source: Box::new(e),
        };
        // M and cond, made one-element i64 and bool.
        let trip = match inputs[0] {
            Some(m) => m,
            None => Output::from(
                self.function
                    .add_constant(TensorData::I64(vec![i64::MAX]), Shape::scalar())
                    .map_err(ir)?,
            ),
        };
        let cond = match inputs[1] {
            Some(c) => c,
            None => Output::from(
                self.function
                    .add_constant(TensorData::Bool(vec![true]), Shape::scalar())
                    .map_err(ir)?,
            ),
        };
        self.check_one_element(trip, ElementType::I64, "the trip count M", at)?;
        self.check_one_element(cond, ElementType::Bool, "the condition cond", at)?;
        let mut initial = Vec::with_capacity(n);
        for (k, v) in inputs[2..].iter().enumerate() {
            initial.push(v.ok_or_else(|| arity(format!("loop-carried input {} is empty", k + 2)))?);
        }
        // How each carried value changes: one the body passes through is captured instead
        // of carried; one that settles after the first iteration stays carried, but the
        // hoisted nodes read both its values.
        let body_index = BodyIndex::of(body_g);
        let carried: Vec<Carried> = (0..n)
            .map(|k| {
                let (from, to) = (&body_g.input[2 + k].name, &body_g.output[1 + k].name);
                self.carried(&body_index, (from, to), initial[k])
            })
            .collect();
        let invariant: Vec<bool> = carried.iter().map(|c| matches!(c, Carried::Same)).collect();
        let variant: Vec<usize> = (0..n).filter(|&k| !invariant[k]).collect();
        let ty = |f: &Function, o: Output| f.output_type(o).cloned().map_err(ir);
        let iter_t = declared_or(
            &body_g.input[0],
            TensorType::new(ElementType::I64, Shape::scalar()),
        );
        let cond_t = declared_or(
            &body_g.input[1],
            TensorType::new(ElementType::Bool, Shape::scalar()),
        );
        let mut params = vec![
            (body_g.input[0].name.clone(), iter_t.clone()),
            (body_g.input[1].name.clone(), cond_t),
        ];
        for &k in &variant {
            params.push((
                body_g.input[2 + k].name.clone(),
                ty(&self.function, initial[k])?,
            ));
        }
        // Loop-invariant code motion (`hoist.rs`): the body's nodes that read only invariant
        // values run once, before the loop, in this graph.
        let invariant_names: Vec<(String, Output)> = (0..n)
            .filter(|&k| invariant[k])
            .map(|k| (body_g.input[2 + k].name.clone(), initial[k]))
            .collect();
        let settling: Vec<Settling> = carried
            .into_iter()
            .enumerate()
            .filter_map(|(k, c)| match c {
                Carried::Settles { settled, chain } => Some(Settling {
                    name: body_g.input[2 + k].name.clone(),
                    first: initial[k],
                    settled,
                    chain,
                }),
                _ => None,
            })
            .collect();
        let iteration = body_g.input[0].name.clone();
        let body_owned: GraphProto;
        let body_g: &GraphProto =
            match self.hoist(body_g, &invariant_names, &settling, &iteration)? {
                Some(b) => {
                    body_owned = b;
                    &body_owned
                }
                None => body_g,
            };
        let mut results = vec![body_g.output[0].name.clone()];
        results.extend(variant.iter().map(|&k| body_g.output[1 + k].name.clone()));
        results.extend(body_g.output[1 + n..].iter().map(|o| o.name.clone()));
        let free = free_names(body_g);
        let mut captures = Captures::resolve(self, free, at)?;
        for (name, v) in invariant_names {
            let used =
                results.contains(&name) || body_g.node.iter().any(|nd| nd.input.contains(&name));
            if used {
                let k = constant_of(&self.function, v);
                let small = k.as_ref().is_some_and(|t| t.len() <= EMBED_LIMIT);
                captures.add(name, v, k, small);
            }
        }
        let mut spec = BodySpec::new(params, results);
        // The iteration number starts at 0; a carried value at its initial value, when known.
        let f = &self.function;
        let initial_of = |k: usize| -> Option<Option<Tensor>> {
            match k {
                0 => Some(Tensor::from_data(TensorData::I64(vec![0]), iter_t.shape.clone()).ok()),
                1 => None,
                _ => Some(constant_of(f, initial[variant[k - 2]])),
            }
        };
        let probe = import_binding(body_g, &mut spec, &mut captures, f, cx, &initial_of, at)?;
        // Scan outputs need a static length.
        let scan_length = if k_scan > 0 {
            let specialised = !spec.bound.is_empty();
            Some(self.static_trip_count(trip, cond, &probe, specialised, node, at)?)
        } else {
            None
        };
        let body = if spec.bound.is_empty() {
            Body::Static(probe)
        } else {
            let bound: Vec<usize> = spec.bound.keys().copied().collect();
            let specializer = OnnxBody {
                graph: body_g.clone(),
                spec: spec.clone(),
                bound: bound.clone(),
                cx: cx.clone(),
            };
            Body::Specialized(Arc::new(
                Specialized::new(
                    if body_g.name.is_empty() {
                        "body".to_string()
                    } else {
                        body_g.name.clone()
                    },
                    bound,
                    probe.parameter_types(),
                    probe.result_types(),
                    Arc::new(specializer),
                )
                .with_capacity(cx.specialization_capacity),
            ))
        };
        let mut operands = vec![trip, cond];
        operands.extend(variant.iter().map(|&k| initial[k]));
        operands.extend(captures.operands());
        let cf = ControlFlow::Loop(Loop {
            body,
            carried: variant.len(),
            scan_outputs: k_scan,
            scan_length,
        });
        let id = self.add_control_flow(index, node, cf, &operands, at)?;
        let mut outs = Vec::with_capacity(n + k_scan);
        for (k, &init) in initial.iter().enumerate() {
            outs.push(match variant.iter().position(|&v| v == k) {
                Some(p) => Output::new(id, p),
                None => init,
            });
        }
        for j in 0..k_scan {
            outs.push(Output::new(id, variant.len() + j));
        }
        Ok(outs)
    }

    /// The iteration count of a loop whose scan outputs need it static: a constant `M` with
    /// a constant (or absent) `cond` and a body whose condition result is `true` or its
    /// condition input (a body specialised per iteration must pass the condition input
    /// through: a constant in one specialisation may depend on the bound values).
    ///
    /// # Errors
    /// [`OnnxError::RunTimeOperand`] for an `M` or `cond` that is a graph input;
    /// [`OnnxError::DataDependentShape`] for one computed at run time or a body that computes
    /// its condition (a [`crate::Session`] runs such a loop as a dynamic step).
    fn static_trip_count(
        &self,
        trip: Output,
        cond: Output,
        body: &Function,
        specialised: bool,
        node: &NodeProto,
        at: &NodeRef,
    ) -> Result<usize, OnnxError> {
        let dynamic = |operand: &str| OnnxError::DataDependentShape {
            at: at.clone(),
            operand: operand.to_string(),
            output: node
                .output
                .iter()
                .find(|o| !o.is_empty())
                .cloned()
                .unwrap_or_default(),
        };
        let known = |o: Output, k: usize, what: &str| -> Result<Tensor, OnnxError> {
            if let Some(t) = constant_of(&self.function, o) {
                return Ok(t);
            }
            match crate::emit::parameter_source(&self.function, o) {
                Some(input) => Err(OnnxError::RunTimeOperand {
                    at: at.clone(),
                    what: format!("{what} (it fixes the length of the scan outputs)"),
                    input,
                }),
                None => Err(dynamic(node.input.get(k).map_or("", String::as_str))),
            }
        };
        let m = known(trip, 0, "the trip count M")?;
        let c = known(cond, 1, "the condition cond")?;
        let body_cond = body
            .results()
            .first()
            .and_then(|&r| body.result_source(r).ok());
        let trivially_true = body_cond.is_some_and(|o| {
            body.parameters().get(1) == Some(&o.node)
                || (!specialised
                    && constant_of(body, o).is_some_and(|t| t.data().get_f64(0) == Some(1.0)))
        });
        if !trivially_true {
            // The loop may stop early: its length depends on the body's condition.
            let body_cond = graph_attr(node, "body", at)?.output[0].name.clone();
            return Err(dynamic(&body_cond));
        }
        if c.data().get_f64(0) == Some(0.0) {
            return Ok(0);
        }
        let m = match m.data() {
            TensorData::I64(d) => d.first().copied().unwrap_or(0),
            d => d.get_f64(0).unwrap_or(0.0) as i64,
        };
        usize::try_from(m.max(0)).map_err(|_| OnnxError::UnsupportedFeature {
            at: at.clone(),
            feature: format!("trip count {m}"),
        })
    }

    pub(super) fn import_scan(
        &mut self,
        index: usize,
        node: &'m NodeProto,
        inputs: &[Option<Output>],
        at: &NodeRef,
        cx: &Context,
    ) -> Result<Vec<Output>, OnnxError> {
        if self.opset < 9 {
            return Err(OnnxError::UnsupportedFeature {
                at: at.clone(),
                feature: "Scan before opset 9 (a batch axis and sequence_lens); graphlift \
                          imports the Scan of opset 9 on"
                    .into(),
            });
        }
        let body_g = graph_attr(node, "body", at)?;
        let bad = |attribute: &str, message: String| OnnxError::BadAttribute {
            at: at.clone(),
            attribute: attribute.to_string(),
            message,
        };
        let m = int_attr(node, "num_scan_inputs", at)?
            .ok_or_else(|| bad("num_scan_inputs", "is required".into()))?;
        let m = usize::try_from(m)
            .ok()
            .filter(|&m| m >= 1 && m <= inputs.len())
            .ok_or_else(|| {
                bad(
                    "num_scan_inputs",
                    format!("{m} for {} inputs", inputs.len()),
                )
            })?;
        let n = inputs.len() - m;
        let ins: Vec<Output> = inputs
            .iter()
            .enumerate()
            .map(|(k, v)| {
                v.ok_or_else(|| OnnxError::Arity {
                    at: at.clone(),
                    message: format!("input {k} is empty"),
                })
            })
            .collect::<Result<_, _>>()?;
        if body_g.input.len() != n + m {
            return Err(OnnxError::Arity {
                at: at.clone(),
                message: format!(
                    "the body has {} inputs, needs {} ({n} state, {m} scan)",
                    body_g.input.len(),
                    n + m
                ),
            });
        }
        if body_g.output.len() < n {
            return Err(OnnxError::Arity {
                at: at.clone(),
                message: format!(
                    "the body has {} outputs, fewer than its {n} state values",
                    body_g.output.len()
                ),
            });
        }
        let k_out = body_g.output.len() - n;
        let ir = |e| OnnxError::Ir {
            at: at.clone(),
            source: Box::new(e),
        };
        let types: Vec<TensorType> = ins
            .iter()
            .map(|&o| self.function.output_type(o).cloned().map_err(ir))
            .collect::<Result<_, _>>()?;
        let norm =
            |axes: Option<Vec<i64>>, count: usize, ranks: &dyn Fn(usize) -> usize, what: &str| {
                let axes = axes.unwrap_or_else(|| vec![0; count]);
                if axes.len() != count {
                    return Err(bad(
                        what,
                        format!("has {} entries for {count} values", axes.len()),
                    ));
                }
                axes.iter()
                    .enumerate()
                    .map(|(k, &a)| {
                        let r = ranks(k) as i64;
                        let a2 = if a < 0 { a + r } else { a };
                        usize::try_from(a2)
                            .ok()
                            .filter(|&x| (x as i64) < r)
                            .ok_or_else(|| bad(what, format!("axis {a} out of range for rank {r}")))
                    })
                    .collect::<Result<Vec<usize>, OnnxError>>()
            };
        let input_axes = norm(
            ints_attr(node, "scan_input_axes", at)?,
            m,
            &|k| types[n + k].shape.rank(),
            "scan_input_axes",
        )?;
        let dirs = |name: &str, count: usize| -> Result<Vec<bool>, OnnxError> {
            let d = ints_attr(node, name, at)?.unwrap_or_else(|| vec![0; count]);
            if d.len() != count {
                return Err(bad(
                    name,
                    format!("has {} entries for {count} values", d.len()),
                ));
            }
            d.iter()
                .map(|&x| match x {
                    0 | 1 => Ok(x == 1),
                    _ => Err(bad(
                        name,
                        format!("{x} is neither 0 (forward) nor 1 (reverse)"),
                    )),
                })
                .collect()
        };
        let input_reverse = dirs("scan_input_directions", m)?;
        let output_reverse = dirs("scan_output_directions", k_out)?;
        let mut params = Vec::with_capacity(n + m);
        for (vi, t) in body_g.input.iter().zip(&types).take(n) {
            params.push((vi.name.clone(), t.clone()));
        }
        for k in 0..m {
            let t = &types[n + k];
            let mut d = t.shape.dims().to_vec();
            d.remove(input_axes[k]);
            params.push((
                body_g.input[n + k].name.clone(),
                TensorType::new(t.element_type, Shape::new(d)),
            ));
        }
        let mut captures = Captures::resolve(self, free_names(body_g), at)?;
        let mut spec = BodySpec::new(
            params,
            body_g.output.iter().map(|o| o.name.clone()).collect(),
        );
        let body = import_binding(
            body_g,
            &mut spec,
            &mut captures,
            &self.function,
            cx,
            &|_| None,
            at,
        )?;
        let out_types = body.result_types();
        let output_axes = norm(
            ints_attr(node, "scan_output_axes", at)?,
            k_out,
            &|k| out_types.get(n + k).map_or(0, |t| t.shape.rank() + 1),
            "scan_output_axes",
        )?;
        let mut operands = ins.clone();
        operands.extend(captures.operands());
        let cf = ControlFlow::Scan(Scan {
            body,
            state: n,
            scan_inputs: m,
            input_axes,
            input_reverse,
            output_axes,
            output_reverse,
        });
        let id = self.add_control_flow(index, node, cf, &operands, at)?;
        Ok((0..n + k_out).map(|k| Output::new(id, k)).collect())
    }
}
