//! `If`, and the dispatch of every control-flow node (see the parent module's doc).

use super::*;

impl<'m> Importer<'m> {
    /// Imports control-flow node `index` (`If`, `Loop`, `Scan`); returns its outputs.
    pub(in crate::import) fn control_flow(
        &mut self,
        index: usize,
        node: &'m NodeProto,
        inputs: &[Option<Output>],
    ) -> Result<Vec<Output>, OnnxError> {
        let at = node_ref(index, node);
        let cx = Context {
            opset: self.opset,
            opsets: self.opsets.clone(),
            source: self.source.to_string(),
            node: at.clone(),
            specialization_capacity: self.specialization_capacity,
        };
        match node.op_type.as_str() {
            "If" => self.import_if(index, node, inputs, &at, &cx),
            "Loop" => self.import_loop(index, node, inputs, &at, &cx),
            _ => self.import_scan(index, node, inputs, &at, &cx),
        }
    }

    /// Adds the control-flow node with its operands; names and tags it as the importer does.
    pub(super) fn add_control_flow(
        &mut self,
        index: usize,
        node: &NodeProto,
        cf: ControlFlow,
        operands: &[Output],
        at: &NodeRef,
    ) -> Result<graphlift_ir::NodeId, OnnxError> {
        let site = CreationSite {
            file: self.source.clone(),
            line: u32::try_from(index + 1).unwrap_or(u32::MAX),
            column: 1,
        };
        let ir = |e| OnnxError::Ir {
            at: at.clone(),
            source: Box::new(e),
        };
        let id = self
            .function
            .add_node_at(Op::ControlFlow(Arc::new(cf)), operands, site)
            .map_err(ir)?;
        let base = crate::import::node_base_name(node);
        let name = unique_name(&self.function, &self.reserved, &base);
        self.function.set_name(id, name).map_err(ir)?;
        self.function
            .add_tag(id, format!("onnx:{}:{base}", node.op_type))
            .map_err(ir)?;
        Ok(id)
    }

    fn import_if(
        &mut self,
        _index: usize,
        node: &'m NodeProto,
        inputs: &[Option<Output>],
        at: &NodeRef,
        cx: &Context,
    ) -> Result<Vec<Output>, OnnxError> {
        let cond = inputs
            .first()
            .copied()
            .flatten()
            .ok_or_else(|| OnnxError::Arity {
                at: at.clone(),
                message: "If needs its condition input".into(),
            })?;
        self.check_one_element(cond, ElementType::Bool, "the condition", at)?;
        let then_g = graph_attr(node, "then_branch", at)?;
        let else_g = graph_attr(node, "else_branch", at)?;
        // Checked here too, not only when both branches are imported: a constant condition
        // imports only the taken one.
        if then_g.output.len() != else_g.output.len() {
            return Err(OnnxError::Arity {
                at: at.clone(),
                message: format!(
                    "the branches disagree: then has {} output(s), else {}",
                    then_g.output.len(),
                    else_g.output.len()
                ),
            });
        }
        if let Some(c) = constant_of(&self.function, cond) {
            let taken = if c.data().get_f64(0).is_some_and(|x| x != 0.0) {
                then_g
            } else {
                else_g
            };
            return self.inline_branch(taken, at);
        }
        let mut names = free_names(then_g);
        for n in free_names(else_g) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        let mut captures = Captures::resolve(self, names, at)?;
        let branch = |g: &GraphProto, captures: &mut Captures, f: &Function| {
            let mut spec = BodySpec::new(
                Vec::new(),
                g.output.iter().map(|o| o.name.clone()).collect(),
            );
            import_binding(g, &mut spec, captures, f, cx, &|_| None, at)
        };
        let mut then_branch = branch(then_g, &mut captures, &self.function)?;
        let embedded = captures.embedded.clone();
        let else_branch = branch(else_g, &mut captures, &self.function)?;
        // Both branches take the same parameters: a constant the else branch needed copied
        // in is copied into the then branch too.
        if captures.embedded != embedded {
            then_branch = branch(then_g, &mut captures, &self.function)?;
        }
        let mut operands = vec![cond];
        operands.extend(captures.operands());
        let n = then_branch.results().len();
        let cf = ControlFlow::If(If {
            then_branch,
            else_branch,
        });
        let id = self.add_control_flow(_index, node, cf, &operands, at)?;
        Ok((0..n).map(|k| Output::new(id, k)).collect())
    }

    /// Imports the nodes of `branch` into this graph (an `If` whose condition is constant);
    /// returns the values of its outputs.
    fn inline_branch(
        &mut self,
        branch: &'m GraphProto,
        at: &NodeRef,
    ) -> Result<Vec<Output>, OnnxError> {
        for t in &branch.initializer {
            self.initializers.insert(t.name.as_str(), t);
        }
        for (index, n) in branch.node.iter().enumerate() {
            self.node(index, n)
                .map_err(|e| explain_order(e, branch, index))?;
        }
        branch
            .output
            .iter()
            .enumerate()
            .map(|(i, o)| self.value(&o.name, at, i))
            .collect()
    }
}
