//! Building a [`Function`]: parameters, constants, nodes (with shape and type inference),
//! results, and nodes imported from another function.

use crate::infer::infer_output_types;
use crate::node::Inputs;
use crate::{
    CreationSite, ElementType, IrError, Node, NodeId, Op, Output, OutputTypes, ProvenanceTags,
    Shape, TensorData, TensorType,
};
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;

impl Function {
    /// Adds a Parameter of the given type at the end of the parameter list.
    ///
    /// # Errors
    /// [`IrError::ShapeOverflow`] naming the parameter and its creation site for a shape
    /// whose element count overflows `usize`; [`IrError::DuplicateName`] if `name` is taken.
    #[track_caller]
    pub fn add_parameter(
        &mut self,
        name: impl Into<String>,
        element_type: ElementType,
        shape: impl Into<Shape>,
    ) -> Result<NodeId, IrError> {
        let (name, shape, site) = (name.into(), shape.into(), CreationSite::caller());
        if shape.element_count().is_err() {
            return Err(IrError::ShapeOverflow {
                at: format!("Parameter `{name}` (created at {site})"),
                shape,
            });
        }
        self.check_name_free(&name)?;
        let id = self.push(
            Op::Parameter,
            Vec::new(),
            vec![TensorType::new(element_type, shape)],
            Some(name.into()),
            site,
        );
        self.parameters.push(id);
        Ok(id)
    }

    /// Adds a Constant holding `data` in the given shape.
    ///
    /// # Errors
    /// [`IrError::ConstantLength`] if `data` does not hold exactly as many elements as
    /// `shape`; [`IrError::ShapeOverflow`] naming the constant and its creation site for an
    /// overflowing shape.
    #[track_caller]
    pub fn add_constant(
        &mut self,
        data: TensorData,
        shape: impl Into<Shape>,
    ) -> Result<NodeId, IrError> {
        self.add_constant_at(data, shape, CreationSite::caller())
    }

    /// [`Function::add_constant`] with an explicit creation site (for passes such as
    /// constant folding, whose constant stands for a node created elsewhere).
    ///
    /// # Errors
    /// As [`Function::add_constant`].
    pub fn add_constant_at(
        &mut self,
        data: TensorData,
        shape: impl Into<Shape>,
        site: CreationSite,
    ) -> Result<NodeId, IrError> {
        let shape = shape.into();
        let name = format!("Constant_{}", self.nodes.len());
        let Ok(expected) = shape.element_count() else {
            return Err(IrError::ShapeOverflow {
                at: format!("Constant `{name}` (created at {site})"),
                shape,
            });
        };
        if data.len() != expected {
            return Err(IrError::ConstantLength {
                name,
                len: data.len(),
                shape,
                expected,
            });
        }
        let t = TensorType::new(data.element_type(), shape);
        Ok(self.push(
            Op::Constant(Arc::new(data)),
            Vec::new(),
            vec![t],
            None,
            site,
        ))
    }

    /// Adds a node computing `op` on `inputs`, inferring its output types.
    ///
    /// # Errors
    /// [`IrError::Inference`] naming the op, the operand types and the creation site when the
    /// operands are not acceptable; [`IrError::Dangling`] for an input that does not exist.
    /// Use [`Function::add_parameter`], [`Function::add_constant`] and
    /// [`Function::add_result`] for those ops.
    #[track_caller]
    pub fn add_node(&mut self, op: Op, inputs: &[Output]) -> Result<NodeId, IrError> {
        self.add_node_at(op, inputs, CreationSite::caller())
    }

    /// [`Function::add_node`] with an explicit creation site (for importers and passes that
    /// carry the site of the node they translate).
    pub fn add_node_at(
        &mut self,
        op: Op,
        inputs: &[Output],
        site: CreationSite,
    ) -> Result<NodeId, IrError> {
        if matches!(op, Op::Result) {
            return Err(self.dangling("use add_result to add a Result".into()));
        }
        if matches!(op, Op::Variable(_)) {
            return Err(self.dangling("use add_variable to add a Variable".into()));
        }
        let types = self.infer(&op, inputs, &site)?;
        if let Err(message) = self.check_state_inputs(&op, inputs) {
            let name = format!("{}_{}", op.type_name(), self.nodes.len());
            return Err(self.state_error(&name, format!("{message} (created at {site})")));
        }
        Ok(self.push(op, inputs.to_vec(), types, None, site))
    }

    pub(super) fn infer(
        &self,
        op: &Op,
        inputs: &[Output],
        site: &CreationSite,
    ) -> Result<OutputTypes, IrError> {
        let in_types: SmallVec<[TensorType; 2]> = inputs
            .iter()
            .map(|&o| self.output_type(o).cloned())
            .collect::<Result<_, _>>()?;
        infer_output_types(op, &in_types).map_err(|message| {
            IrError::Inference(Box::new(crate::InferenceError {
                op: op.to_string(),
                name: format!("{}_{}", op.type_name(), self.nodes.len()),
                site: site.clone(),
                operands: in_types
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                message,
            }))
        })
    }

    /// Adds a Result passing `value` out, at the end of the result list.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if `value` does not exist; [`IrError::DuplicateName`] if `name`
    /// is taken.
    #[track_caller]
    pub fn add_result(&mut self, value: Output, name: Option<String>) -> Result<NodeId, IrError> {
        let t = self.output_type(value)?.clone();
        if let Err(message) = self.check_state_inputs(&Op::Result, &[value]) {
            let name = name.as_deref().unwrap_or("Result");
            return Err(self.state_error(name, message));
        }
        if let Some(n) = &name {
            self.check_name_free(n)?;
        }
        let id = self.push(
            Op::Result,
            vec![value],
            vec![t],
            name.map(Arc::from),
            CreationSite::caller(),
        );
        self.results.push(id);
        Ok(id)
    }

    /// Copies `src` (op, name, metadata, tags, pass history, creation site) from another
    /// function, wiring it to `inputs` of this one. The name is kept if free, else suffixed.
    /// Parameters are added to the parameter list; Results to the result list.
    ///
    /// # Errors
    /// As [`Function::add_node`] when the inputs do not fit the op.
    pub fn import_node(&mut self, src: &Node, inputs: &[Output]) -> Result<NodeId, IrError> {
        self.import(src, inputs, None)
    }

    /// [`Function::import_node`] for node `id` of `from`. When every input has here the type
    /// its counterpart has in `from`, the copy keeps the node's recorded output types without
    /// inferring them again: inference depends only on the op and the input types, and a
    /// node's recorded types are what inference gave when it was built or loaded.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if `from` has no node `id`; as [`Function::add_node`] when the
    /// inputs do not fit the op.
    pub fn import_node_from(
        &mut self,
        from: &Function,
        id: NodeId,
        inputs: &[Output],
    ) -> Result<NodeId, IrError> {
        let src = from.node(id)?;
        let same_types = src.inputs.len() == inputs.len()
            && src.inputs.iter().zip(inputs).all(|(&a, &b)| {
                matches!((from.output_type(a), self.output_type(b)), (Ok(x), Ok(y)) if x == y)
            });
        self.import(src, inputs, same_types.then(|| src.outputs.clone()))
    }

    /// Copies `src` wired to `inputs`, with output types `types` (inferred when `None`).
    pub(super) fn import(
        &mut self,
        src: &Node,
        inputs: &[Output],
        types: Option<OutputTypes>,
    ) -> Result<NodeId, IrError> {
        if let Err(message) = self.check_state_inputs(&src.op, inputs) {
            return Err(self.state_error(&src.name, message));
        }
        let types = match (types, &src.op) {
            (Some(t), _) => t,
            (None, Op::Parameter | Op::Constant(_) | Op::Variable(_)) => src.outputs.clone(),
            (None, op) => self.infer(op, inputs, &src.site)?,
        };
        // The source's name when it is free here (shared, not copied), else a suffixed one.
        let name = if self.names.contains_key(&*src.name) {
            self.unique_name(&src.name).into()
        } else {
            Arc::clone(&src.name)
        };
        let id = self.push(
            src.op.clone(),
            Inputs::from_slice(inputs),
            types,
            Some(name),
            src.site.clone(),
        );
        let n = Arc::make_mut(self.nodes[id.index()].as_mut().expect("just pushed"));
        n.metadata = src.metadata.clone();
        n.tags = src.tags.clone();
        n.pass_history = src.pass_history.clone();
        match src.op {
            Op::Parameter => self.parameters.push(id),
            Op::Result => self.results.push(id),
            _ => {}
        }
        Ok(id)
    }

    pub(super) fn push(
        &mut self,
        op: Op,
        inputs: impl Into<Inputs>,
        outputs: impl Into<OutputTypes>,
        name: Option<Arc<str>>,
        site: CreationSite,
    ) -> NodeId {
        let (inputs, outputs): (Inputs, OutputTypes) = (inputs.into(), outputs.into());
        self.derived.forget();
        let id = NodeId(u32::try_from(self.nodes.len()).expect("more than 2^32 nodes"));
        let name = name.unwrap_or_else(|| {
            self.unique_name(&format!("{}_{}", op.type_name(), id.0))
                .into()
        });
        for (slot, o) in inputs.iter().enumerate() {
            if let Some(Some(p)) = self.nodes.get_mut(o.node.index()) {
                Arc::make_mut(p).users[o.index].push((id, slot));
            }
        }
        self.names.insert(Arc::clone(&name), id);
        let n_out = outputs.len();
        self.nodes.push(Some(Arc::new(Node {
            id,
            name,
            op,
            inputs,
            outputs,
            metadata: BTreeMap::new(),
            tags: ProvenanceTags::new(),
            pass_history: Vec::new(),
            site,
            other_deps: Vec::new(),
            users: (0..n_out).map(|_| SmallVec::new()).collect(),
        })));
        id
    }

    pub(super) fn unique_name(&self, base: &str) -> String {
        if !self.names.contains_key(base) {
            return base.to_string();
        }
        (1..)
            .map(|k| format!("{base}_{k}"))
            .find(|n| !self.names.contains_key(n.as_str()))
            .expect("an unused suffix exists")
    }

    pub(super) fn check_name_free(&self, name: &str) -> Result<(), IrError> {
        match self.names.get(name) {
            Some(&node) => Err(IrError::DuplicateName {
                function: self.name.clone(),
                name: name.to_string(),
                node,
            }),
            None => Ok(()),
        }
    }
}
