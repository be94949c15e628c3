//! `NodeEmitter`: adds the IR nodes of one ONNX node, with names, provenance tags, creation
//! site and ONNX-style errors, and makes numpy (multidirectional) broadcasting explicit.
//! Its attribute readers are in `emit/attrs.rs`.

use std::collections::HashSet;

use graphlift_ir::{
    BinaryOp, CompareOp, CreationSite, ElementType, Function, NodeId, Op, Output, Shape,
    TensorData, TensorType, UnaryOp,
};

use graphlift_runtime::{reference, Tensor};

use crate::error::{NodeRef, OnnxError};
use crate::import::unique_name;
use crate::proto::{attribute_type, AttributeProto, NodeProto};

mod attrs;

/// Constant folding at import makes results of up to this many elements (or no larger than
/// their largest operand).
pub(crate) const FOLD_LIMIT: usize = 1 << 16;

/// Checks that attribute `a` of the node at `at` is of type `want` (an
/// [`attribute_type`] code). IR version 1 models leave `type` unset; then `present`
/// (whether the value field is set) decides.
///
/// # Errors
/// [`OnnxError::BadAttribute`] naming the node and attribute: `expected GRAPH, got INT`.
pub(crate) fn check_attribute_type(
    a: &AttributeProto,
    want: i32,
    present: bool,
    at: &NodeRef,
) -> Result<(), OnnxError> {
    if a.r#type == want || (a.r#type == attribute_type::UNDEFINED && present) {
        return Ok(());
    }
    Err(OnnxError::BadAttribute {
        at: at.clone(),
        attribute: a.name.clone(),
        message: format!(
            "expected {}, got {}",
            attribute_type::name(want),
            attribute_type::name(a.r#type)
        ),
    })
}

/// Builds the IR for one ONNX node.
pub(crate) struct NodeEmitter<'a> {
    function: &'a mut Function,
    node: &'a NodeProto,
    at: NodeRef,
    opset: i64,
    site: CreationSite,
    reserved: &'a HashSet<String>,
    tag: String,
    base: String,
    created: Vec<NodeId>,
}

impl<'a> NodeEmitter<'a> {
    pub(crate) fn new(
        function: &'a mut Function,
        node: &'a NodeProto,
        at: NodeRef,
        opset: i64,
        site: CreationSite,
        reserved: &'a HashSet<String>,
    ) -> NodeEmitter<'a> {
        let base = crate::import::node_base_name(node);
        NodeEmitter {
            function,
            tag: format!("onnx:{}:{}", node.op_type, base),
            base,
            node,
            at,
            opset,
            site,
            reserved,
            created: Vec::new(),
        }
    }

    /// Nodes created so far, in order.
    pub(crate) fn created(&self) -> &[NodeId] {
        &self.created
    }

    /// The ONNX node.
    pub(crate) fn node(&self) -> &NodeProto {
        self.node
    }

    /// The default-domain opset version.
    pub(crate) fn opset(&self) -> i64 {
        self.opset
    }

    /// The node's location, for errors.
    pub(crate) fn at(&self) -> NodeRef {
        self.at.clone()
    }

    fn ir_error(&self, e: graphlift_ir::IrError) -> OnnxError {
        OnnxError::Ir {
            at: self.at(),
            source: Box::new(e),
        }
    }

    /// A type mismatch error.
    pub(crate) fn type_error(&self, message: String) -> OnnxError {
        OnnxError::TypeMismatch {
            at: self.at(),
            message,
        }
    }

    /// A shape mismatch error.
    pub(crate) fn shape_error(&self, message: String) -> OnnxError {
        OnnxError::ShapeMismatch {
            at: self.at(),
            message,
        }
    }

    /// A [`OnnxError::UnsupportedFeature`] for this node.
    pub(crate) fn unsupported(&self, feature: impl Into<String>) -> OnnxError {
        OnnxError::UnsupportedFeature {
            at: self.at(),
            feature: feature.into(),
        }
    }

    /// A bad attribute error.
    pub(crate) fn attribute_error(&self, attribute: &str, message: String) -> OnnxError {
        OnnxError::BadAttribute {
            at: self.at(),
            attribute: attribute.to_string(),
            message,
        }
    }

    /// Names, tags and records a freshly created node.
    fn finish_node(&mut self, id: NodeId, what: &str) -> Result<Output, OnnxError> {
        let name = unique_name(
            self.function,
            self.reserved,
            &format!("{}/{what}", self.base),
        );
        self.function
            .set_name(id, name)
            .map_err(|e| self.ir_error(e))?;
        self.function
            .add_tag(id, self.tag.clone())
            .map_err(|e| self.ir_error(e))?;
        self.created.push(id);
        Ok(Output::from(id))
    }

    /// The type of a value.
    pub(crate) fn ty(&self, v: Output) -> Result<TensorType, OnnxError> {
        self.function
            .output_type(v)
            .cloned()
            .map_err(|e| self.ir_error(e))
    }

    /// The element type of a value.
    pub(crate) fn et(&self, v: Output) -> Result<ElementType, OnnxError> {
        Ok(self.ty(v)?.element_type)
    }

    /// Adds a node of `op` on operands of matching shapes.
    ///
    /// When every operand is a Constant the op is evaluated at once with the reference
    /// kernels and becomes a Constant (import-time constant folding), so that shape
    /// computations (`Shape -> Gather -> Unsqueeze -> Concat -> Reshape`) end in the static
    /// attributes the IR needs. Broadcasts are not folded (a broadcast constant stays a
    /// stride-0 read), nor are results larger than [`FOLD_LIMIT`] elements that are larger
    /// than their largest operand.
    pub(crate) fn op(&mut self, op: Op, inputs: &[Output]) -> Result<Output, OnnxError> {
        if let Some(folded) = self.fold(&op, inputs)? {
            return Ok(folded);
        }
        let what = op.type_name();
        let id = self
            .function
            .add_node_at(op, inputs, self.site.clone())
            .map_err(|e| self.ir_error(e))?;
        self.finish_node(id, what)
    }

    /// The value of `v` if it is known at import: a Constant, or a Broadcast of one
    /// (materialised here only; the graph keeps the broadcast).
    pub(crate) fn constant_value(&self, v: Output) -> Option<Tensor> {
        let node = self.function.node(v.node).ok()?;
        match node.op() {
            Op::Constant(d) => {
                Tensor::from_data((**d).clone(), node.output_type().shape.clone()).ok()
            }
            Op::Broadcast(to) => {
                let from = self.constant_value(*node.inputs().first()?)?;
                let data = reference::broadcast(from.data(), from.shape(), to).ok()?;
                Tensor::from_data(data, to.clone()).ok()
            }
            _ => None,
        }
    }

    /// The integer data of input `i`, which must be a Constant (after folding) of `i32` or
    /// `i64` elements: shapes, axes and slice bounds are static in graphlift.
    ///
    /// # Errors
    /// [`OnnxError::UnsupportedFeature`] naming the input when it is computed at run time, or
    /// [`OnnxError::TypeMismatch`] when it is not an integer tensor.
    pub(crate) fn constant_ints(&self, v: Output, what: &str) -> Result<Vec<i64>, OnnxError> {
        match self.constant_value(v).as_ref().map(Tensor::data) {
            Some(TensorData::I64(d)) => Ok(d.clone()),
            Some(TensorData::I32(d)) => Ok(d.iter().map(|&x| i64::from(x)).collect()),
            // The other integer types widen exactly (u64 beyond i64::MAX wraps, as a cast).
            Some(d) if d.element_type().is_integer() => {
                let ints =
                    reference::convert(d, ElementType::I64).map_err(|m| self.type_error(m))?;
                Ok(ints.into_vec::<i64>().unwrap_or_default())
            }
            Some(d) => Err(self.type_error(format!(
                "{what} must be an integer tensor, is {}",
                d.element_type()
            ))),
            None => Err(self.not_constant(v, what, "give every symbolic input dimension a value")),
        }
    }

    /// The float data of input `v` as `f64` (exactly: an `f32`, `f16` or `bf16` element keeps
    /// its value), which must be a Constant (after folding) of float elements.
    ///
    /// # Errors
    /// [`OnnxError::UnsupportedFeature`] naming the input when it is computed at run time, or
    /// [`OnnxError::TypeMismatch`] when it is not a float tensor.
    pub(crate) fn constant_floats(&self, v: Output, what: &str) -> Result<Vec<f64>, OnnxError> {
        match self.constant_value(v).as_ref().map(Tensor::data) {
            Some(TensorData::F32(d)) => Ok(d.iter().map(|&x| f64::from(x)).collect()),
            Some(TensorData::F64(d)) => Ok(d.clone()),
            Some(d) if d.element_type().is_float() => {
                Ok((0..d.len()).filter_map(|i| d.get_f64(i)).collect())
            }
            Some(d) => Err(self.type_error(format!(
                "{what} must be a float tensor, is {}",
                d.element_type()
            ))),
            None => Err(self.not_constant(v, what, "")),
        }
    }

    /// The error for an operand `v` that must be constant and is not:
    /// [`OnnxError::RunTimeOperand`] when it is, or is computed from, a graph input (a
    /// caller can give that input's value: [`parameter_source`] names it), else
    /// [`OnnxError::UnsupportedFeature`] with `hint`.
    pub(crate) fn not_constant(&self, v: Output, what: &str, hint: &str) -> OnnxError {
        if let Some(input) = parameter_source(self.function, v) {
            return OnnxError::RunTimeOperand {
                at: self.at(),
                what: what.to_string(),
                input,
            };
        }
        let hint = if hint.is_empty() {
            String::new()
        } else {
            format!(": {hint}")
        };
        self.unsupported(format!(
            "{what} is computed at run time; graphlift needs it constant (static shapes){hint}"
        ))
    }

    /// Evaluates `op` now if all its operands are Constants (see [`NodeEmitter::op`]).
    fn fold(&mut self, op: &Op, inputs: &[Output]) -> Result<Option<Output>, OnnxError> {
        if inputs.is_empty() || matches!(op, Op::Broadcast(_) | Op::FusedKernel(_)) {
            return Ok(None);
        }
        let mut tensors = Vec::with_capacity(inputs.len());
        for &v in inputs {
            let Some(t) = self.constant_value(v) else {
                return Ok(None);
            };
            tensors.push(t);
        }
        // Infer on a one-node probe function; an op that does not fit its operands is left
        // to the real `add_node_at` below, whose error names the ONNX node.
        let mut probe = Function::new("fold");
        let mut params = Vec::with_capacity(tensors.len());
        for (i, t) in tensors.iter().enumerate() {
            let p = probe
                .add_parameter(format!("in{i}"), t.element_type(), t.shape().clone())
                .map_err(|e| self.ir_error(e))?;
            params.push(Output::from(p));
        }
        let Ok(id) = probe.add_node(op.clone(), &params) else {
            return Ok(None);
        };
        let node = probe.node(id).map_err(|e| self.ir_error(e))?;
        let n = node
            .output_type()
            .shape
            .element_count()
            .unwrap_or(usize::MAX);
        let largest = tensors.iter().map(|t| t.data().len()).max().unwrap_or(0);
        if node.outputs().len() != 1 || (n > FOLD_LIMIT && n > largest) {
            return Ok(None);
        }
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let result = reference::evaluate_node(node, &refs).map_err(|e| OnnxError::Fold {
            at: self.at(),
            message: e.to_string(),
        })?;
        let Some(value) = result.into_iter().next() else {
            return Ok(None);
        };
        let shape = value.shape().clone();
        self.constant(value.data().clone(), shape).map(Some)
    }

    /// A Constant.
    pub(crate) fn constant(&mut self, data: TensorData, shape: Shape) -> Result<Output, OnnxError> {
        let id = self
            .function
            .add_constant(data, shape)
            .map_err(|e| self.ir_error(e))?;
        // add_constant records the importer as the creation site; nothing else to set.
        self.finish_node(id, "Constant")
    }

    /// A 0-d constant of `et` holding `x` (rounded to a float type, truncated and
    /// saturated to an integer, or `x != 0` for bool: [`TensorData::from_f64`]).
    pub(crate) fn scalar(&mut self, et: ElementType, x: f64) -> Result<Output, OnnxError> {
        self.constant(TensorData::from_f64(et, &[x]), Shape::scalar())
    }

    /// A 0-d constant of `v`'s element type.
    pub(crate) fn scalar_like(&mut self, v: Output, x: f64) -> Result<Output, OnnxError> {
        let et = self.et(v)?;
        self.scalar(et, x)
    }

    /// `v` broadcast to `shape` (numpy rules); no node when the shape already matches.
    pub(crate) fn broadcast_to(&mut self, v: Output, shape: &Shape) -> Result<Output, OnnxError> {
        if self.ty(v)?.shape == *shape {
            return Ok(v);
        }
        self.op(Op::Broadcast(shape.clone()), &[v])
    }

    /// The numpy (ONNX multidirectional) broadcast of the values' shapes.
    ///
    /// # Errors
    /// [`OnnxError::ShapeMismatch`] listing the shapes when they do not broadcast.
    pub(crate) fn common_shape(&self, values: &[Output]) -> Result<Shape, OnnxError> {
        let shapes = values
            .iter()
            .map(|&v| self.ty(v).map(|t| t.shape))
            .collect::<Result<Vec<_>, _>>()?;
        shapes
            .iter()
            .try_fold(Shape::scalar(), |acc, s| Shape::broadcast(&acc, s))
            .ok_or_else(|| {
                let list: Vec<String> = shapes.iter().map(ToString::to_string).collect();
                self.shape_error(format!(
                    "input shapes {} do not broadcast (numpy rules)",
                    list.join(", ")
                ))
            })
    }

    /// Broadcasts every value to their common shape.
    pub(crate) fn broadcast_all(&mut self, values: &[Output]) -> Result<Vec<Output>, OnnxError> {
        let shape = self.common_shape(values)?;
        values
            .iter()
            .map(|&v| self.broadcast_to(v, &shape))
            .collect()
    }

    /// Checks that all values have one element type and returns it.
    pub(crate) fn same_type(&self, values: &[Output]) -> Result<ElementType, OnnxError> {
        let types = values
            .iter()
            .map(|&v| self.et(v))
            .collect::<Result<Vec<_>, _>>()?;
        let first = types.first().copied().unwrap_or(ElementType::F32);
        if types.iter().any(|&t| t != first) {
            let list: Vec<&str> = types.iter().map(|t| t.name()).collect();
            return Err(self.type_error(format!(
                "inputs have different element types ({}); {} needs one type",
                list.join(", "),
                self.node.op_type
            )));
        }
        Ok(first)
    }

    /// Checks that `v`'s element type satisfies `ok` (`what` describes the allowed types).
    pub(crate) fn require(
        &self,
        v: Output,
        ok: fn(ElementType) -> bool,
        what: &str,
    ) -> Result<ElementType, OnnxError> {
        let t = self.et(v)?;
        if ok(t) {
            Ok(t)
        } else {
            Err(self.type_error(format!("{} needs {what} input, got {t}", self.node.op_type)))
        }
    }

    /// A unary op.
    pub(crate) fn unary(&mut self, u: UnaryOp, x: Output) -> Result<Output, OnnxError> {
        self.op(Op::Unary(u), &[x])
    }

    /// A binary op on operands of one element type, broadcasting their shapes.
    pub(crate) fn binary(
        &mut self,
        b: BinaryOp,
        x: Output,
        y: Output,
    ) -> Result<Output, OnnxError> {
        self.same_type(&[x, y])?;
        let v = self.broadcast_all(&[x, y])?;
        self.op(Op::Binary(b), &v)
    }

    /// A comparison on operands of one element type, broadcasting their shapes.
    pub(crate) fn compare(
        &mut self,
        c: CompareOp,
        x: Output,
        y: Output,
    ) -> Result<Output, OnnxError> {
        self.same_type(&[x, y])?;
        let v = self.broadcast_all(&[x, y])?;
        self.op(Op::Compare(c), &v)
    }

    /// `cond ? a : b`, broadcasting all three.
    pub(crate) fn select(
        &mut self,
        cond: Output,
        a: Output,
        b: Output,
    ) -> Result<Output, OnnxError> {
        if self.et(cond)? != ElementType::Bool {
            return Err(
                self.type_error(format!("the condition must be BOOL, is {}", self.et(cond)?))
            );
        }
        self.same_type(&[a, b])?;
        let v = self.broadcast_all(&[cond, a, b])?;
        self.op(Op::Select, &v)
    }

    /// Converts to `to`; no node when the type already is `to`.
    pub(crate) fn convert(&mut self, x: Output, to: ElementType) -> Result<Output, OnnxError> {
        if self.et(x)? == to {
            return Ok(x);
        }
        self.op(Op::Convert(to), &[x])
    }

    /// Converts to `to` as [`NodeEmitter::convert`] does, but never folds a constant `x`: a
    /// `DequantizeLinear` of a constant 8-bit weight stays `Convert` of the integer
    /// Constant, which the QDQ lowering pass reads (the pipeline's constant folding folds it
    /// where that pass does not take it).
    pub(crate) fn convert_unfolded(
        &mut self,
        x: Output,
        to: ElementType,
    ) -> Result<Output, OnnxError> {
        if self.et(x)? == to {
            return Ok(x);
        }
        let id = self
            .function
            .add_node_at(Op::Convert(to), &[x], self.site.clone())
            .map_err(|e| self.ir_error(e))?;
        self.finish_node(id, "Convert")
    }

    /// `x * c` for a constant `c` of `x`'s type.
    pub(crate) fn mul_scalar(&mut self, x: Output, c: f64) -> Result<Output, OnnxError> {
        let k = self.scalar_like(x, c)?;
        self.binary(BinaryOp::Multiply, x, k)
    }

    /// `x + c` for a constant `c` of `x`'s type.
    pub(crate) fn add_scalar(&mut self, x: Output, c: f64) -> Result<Output, OnnxError> {
        let k = self.scalar_like(x, c)?;
        self.binary(BinaryOp::Add, x, k)
    }

    // ----- inputs -----

    /// Required input `i`.
    ///
    /// # Errors
    /// [`OnnxError::MissingInput`] when the node omits it.
    pub(crate) fn input(&self, inputs: &[Option<Output>], i: usize) -> Result<Output, OnnxError> {
        inputs
            .get(i)
            .copied()
            .flatten()
            .ok_or_else(|| OnnxError::MissingInput {
                at: self.at(),
                index: i,
                input: self.node.input.get(i).cloned().unwrap_or_default(),
            })
    }

    /// Optional input `i`: `None` when the node leaves it out (or names it `""`).
    pub(crate) fn optional_input(&self, inputs: &[Option<Output>], i: usize) -> Option<Output> {
        inputs.get(i).copied().flatten()
    }

    /// Checks the number of inputs is in `min..=max`.
    pub(crate) fn arity(
        &self,
        inputs: &[Option<Output>],
        min: usize,
        max: usize,
    ) -> Result<(), OnnxError> {
        let n = inputs.len();
        if n < min || n > max {
            let want = if min == max {
                format!("{min}")
            } else if max == usize::MAX {
                format!("at least {min}")
            } else {
                format!("{min} to {max}")
            };
            return Err(OnnxError::Arity {
                at: self.at(),
                message: format!(
                    "{} takes {want} input(s), the node has {n}",
                    self.node.op_type
                ),
            });
        }
        Ok(())
    }
}

/// The name of the Parameter that `v` is, or the nearest one it is computed from
/// (breadth-first over its operands): giving that input's value at import is what can
/// make `v` a constant (a `Range` over `Squeeze(i)`, a `Slice` end `Min(d, i + 1)`). A
/// loop body's iteration number and carried values are Parameters of the body, so this
/// is also how a body names the values it must be specialised for
/// (`import/control_flow.rs`).
pub(crate) fn parameter_source(function: &Function, v: Output) -> Option<String> {
    let mut seen = HashSet::new();
    let mut queue = std::collections::VecDeque::from([v.node]);
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id) || seen.len() > 4096 {
            continue;
        }
        let node = function.node(id).ok()?;
        if matches!(node.op(), Op::Parameter) {
            return Some(node.name().to_string());
        }
        queue.extend(node.inputs().iter().map(|o| o.node));
    }
    None
}

impl graphlift_ir::expansion::ElementwiseEmitter for NodeEmitter<'_> {
    type Error = OnnxError;
    fn unary(&mut self, op: UnaryOp, x: Output) -> Result<Output, OnnxError> {
        NodeEmitter::unary(self, op, x)
    }
    fn binary(&mut self, op: BinaryOp, a: Output, b: Output) -> Result<Output, OnnxError> {
        NodeEmitter::binary(self, op, a, b)
    }
}
