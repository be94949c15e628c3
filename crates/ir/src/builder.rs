//! [`FunctionBuilder`]: builds a [`Function`] with operator overloading and numpy
//! broadcasting, made explicit as `Broadcast` nodes, so graphs read like the math they compute.

mod adjoint;
mod autodiff;
mod state;

use std::cell::{Cell, RefCell};
use std::ops;

use crate::{
    BinaryOp, CompareOp, CreationSite, ElementType, Function, IrError, NodeId, Op, Output, Shape,
    TensorData, UnaryOp,
};

/// Builds a [`Function`] through [`Value`] handles.
///
/// Like XLA's `XlaBuilder`, an op that cannot be built does not panic: the builder records
/// the first error, every value derived from the bad one is poisoned, and
/// [`FunctionBuilder::finish`] returns that error (op, operand types and creation site).
/// A [`Value`] belongs to the builder that made it and to the function it was building: using
/// it with another builder, or after `finish`, is an [`IrError::ForeignValue`] naming it.
///
/// ```
/// use graphlift_ir::{ElementType::F32, FunctionBuilder};
/// let b = FunctionBuilder::new("halide_subgraph");
/// let [a, bb, c, d] = ["A", "B", "C", "D"].map(|n| b.parameter(n, F32, [8]));
/// let r = ((a + bb) * c).relu() + d;
/// let f = b.finish(&[r]).unwrap();
/// assert_eq!(f.parameters().len(), 4);
/// ```
#[derive(Debug)]
pub struct FunctionBuilder {
    function: RefCell<Function>,
    error: RefCell<Option<IrError>>,
    /// How many functions `finish` has handed out: values of an earlier generation belong
    /// to a finished function.
    generation: Cell<u64>,
    /// The reads and assigns of variables, in creation order (`builder/state.rs`).
    log: RefCell<Vec<state::Access>>,
    /// How many [`FunctionBuilder::saved_user_deps`] contexts are open.
    guarded: Cell<usize>,
}

/// A value being built: one output of a node in a [`FunctionBuilder`], or a poisoned value
/// when building it failed.
///
/// It can only be used with the builder that made it, before that builder's next
/// [`FunctionBuilder::finish`]; otherwise the op is an [`IrError::ForeignValue`].
#[derive(Debug, Clone, Copy)]
pub struct Value<'b> {
    builder: &'b FunctionBuilder,
    generation: u64,
    output: Option<Output>,
}

impl FunctionBuilder {
    /// A builder for a function named `name`.
    pub fn new(name: impl Into<String>) -> FunctionBuilder {
        FunctionBuilder {
            function: RefCell::new(Function::new(name)),
            error: RefCell::new(None),
            generation: Cell::new(0),
            log: RefCell::new(Vec::new()),
            guarded: Cell::new(0),
        }
    }

    /// A builder that goes on building `function` without its results (they are removed:
    /// the values they passed out stay, see [`Function::remove_results`]); its nodes' values
    /// are taken with [`FunctionBuilder::value_of`]. For adding derivatives to an imported
    /// model.
    pub fn from_function(mut function: Function) -> FunctionBuilder {
        function.remove_results();
        let b = FunctionBuilder::new(function.name());
        b.function.replace(function);
        b
    }

    fn record<T>(&self, r: Result<T, IrError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.error.borrow_mut().get_or_insert(e);
                None
            }
        }
    }

    fn value(&self, id: Option<NodeId>) -> Value<'_> {
        Value {
            builder: self,
            generation: self.generation.get(),
            output: id.map(Output::from),
        }
    }

    /// `true` when `v` was made by this builder for the function it is building now.
    fn owns(&self, v: &Value<'_>) -> bool {
        std::ptr::eq(v.builder, self) && v.generation == self.generation.get()
    }

    /// Records an [`IrError::ForeignValue`] for the first of `values` this builder does not
    /// own ([`FunctionBuilder::owns`]), adding `op`; `true` when it owns them all.
    #[track_caller]
    fn check_owned(&self, op: &dyn std::fmt::Display, values: &[Value<'_>]) -> bool {
        let Some((index, v)) = values.iter().enumerate().find(|(_, v)| !self.owns(v)) else {
            return true;
        };
        let value = if std::ptr::eq(v.builder, self) {
            "a value of a function this builder has already finished".to_string()
        } else if v.generation != v.builder.generation.get() {
            "a value of a function another FunctionBuilder has already finished".to_string()
        } else {
            // `try_borrow`: the other builder may be inside its own `with_function`.
            let node = v.builder.function.try_borrow().ok().and_then(|f| {
                let node = f.get(v.output?.node)?.name().to_string();
                Some(format!("node `{node}` of function `{}`", f.name()))
            });
            format!(
                "{} (made by another FunctionBuilder)",
                node.as_deref().unwrap_or("a value")
            )
        };
        let e = IrError::ForeignValue {
            at: format!(
                "{op} in function `{}` (created at {})",
                self.function.borrow().name(),
                CreationSite::caller()
            ),
            index,
            value,
        };
        self.record::<()>(Err(e));
        false
    }

    /// A new parameter of the given type.
    #[track_caller]
    pub fn parameter(
        &self,
        name: &str,
        element_type: ElementType,
        shape: impl Into<Shape>,
    ) -> Value<'_> {
        let r = self
            .function
            .borrow_mut()
            .add_parameter(name, element_type, shape);
        self.value(self.record(r))
    }

    /// A constant tensor.
    #[track_caller]
    pub fn constant(&self, data: impl Into<TensorData>, shape: impl Into<Shape>) -> Value<'_> {
        let r = self.function.borrow_mut().add_constant(data.into(), shape);
        self.value(self.record(r))
    }

    /// A 0-d constant of `element_type` holding `x` (converted as Rust's `as` does: to an
    /// integer it truncates toward zero and saturates, NaN is 0; to `f16`/`bf16` it rounds
    /// to nearest even; to `bool` it is `x != 0`).
    #[track_caller]
    pub fn scalar(&self, element_type: ElementType, x: f64) -> Value<'_> {
        self.constant(TensorData::from_f64(element_type, &[x]), Shape::scalar())
    }

    /// `shape` of pseudo-random numbers uniform on `[low, high)`, the same on every call for
    /// one `seed` (ONNX `RandomUniform`; [`crate::RandomFill`]): a random initial value.
    #[track_caller]
    pub fn random_uniform(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        low: f64,
        high: f64,
        seed: u64,
    ) -> Value<'_> {
        let distribution = crate::Distribution::Uniform { low, high };
        self.random(distribution, element_type, shape.into(), seed)
    }

    /// `shape` of pseudo-random numbers from the normal distribution of `mean` and standard
    /// deviation `scale`, the same on every call for one `seed` (ONNX `RandomNormal`;
    /// [`crate::RandomFill`]): a random initial value.
    #[track_caller]
    pub fn random_normal(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        mean: f64,
        scale: f64,
        seed: u64,
    ) -> Value<'_> {
        let distribution = crate::Distribution::Normal { mean, scale };
        self.random(distribution, element_type, shape.into(), seed)
    }

    #[track_caller]
    fn random(
        &self,
        distribution: crate::Distribution,
        element_type: ElementType,
        shape: Shape,
        seed: u64,
    ) -> Value<'_> {
        let fill = crate::RandomFill {
            distribution,
            element_type,
            shape,
            seed,
        };
        self.op(Op::Random(std::sync::Arc::new(fill)), &[])
    }

    /// Adds a node of `op` on already-broadcast operands. An operand that is a variable
    /// ([`FunctionBuilder::variable`]) is read by a new `ReadVariable` node, ordered after
    /// the variable's assigns made before it; an `Assign` or `ReadVariable` takes the
    /// variable itself as input 0.
    #[track_caller]
    pub fn op(&self, op: Op, inputs: &[Value<'_>]) -> Value<'_> {
        if !self.check_owned(&op, inputs) {
            return self.value(None);
        }
        let Some(ins) = inputs.iter().map(|v| v.output).collect::<Option<Vec<_>>>() else {
            return self.value(None);
        };
        let site = CreationSite::caller();
        let ins: Vec<Output> = ins
            .into_iter()
            .enumerate()
            .map(|(slot, o)| {
                let target = slot == 0 && matches!(op, Op::ReadVariable | Op::Assign);
                if target {
                    Some(o)
                } else {
                    self.read_if_variable(o, &site)
                }
            })
            .collect::<Option<_>>()
            .unwrap_or_default();
        if ins.len() != inputs.len() {
            return self.value(None);
        }
        let r = self.function.borrow_mut().add_node_at(op, &ins, site);
        let id = self.record(r);
        if let Some(id) = id {
            self.log_access(id);
        }
        self.value(id)
    }

    /// Adds an op whose operands are first broadcast to their common shape (numpy rules).
    #[track_caller]
    pub fn broadcasting_op(&self, op: Op, inputs: &[Value<'_>]) -> Value<'_> {
        if !self.check_owned(&op, inputs) {
            return self.value(None);
        }
        let Some(shapes) = inputs
            .iter()
            .map(|v| v.tensor_type().map(|t| t.1))
            .collect::<Option<Vec<_>>>()
        else {
            return self.value(None);
        };
        let target = shapes
            .iter()
            .try_fold(Shape::scalar(), |acc, s| Shape::broadcast(&acc, s));
        let Some(target) = target else {
            // Let the op report the incompatible shapes.
            return self.op(op, inputs);
        };
        let ins: Vec<Value<'_>> = inputs
            .iter()
            .map(|v| v.broadcast_to(target.clone()))
            .collect();
        self.op(op, &ins)
    }

    /// The first error recorded so far, if any.
    pub fn error(&self) -> Option<IrError> {
        self.error.borrow().clone()
    }

    /// Adds a Result for each value, in order, and returns the function. The builder is left
    /// empty, also when it returns an error. Values made before belong to the finished
    /// function: using them with this builder afterwards is an [`IrError::ForeignValue`].
    ///
    /// # Errors
    /// The first error any builder call recorded, including a result that is not a value
    /// of this builder's function ([`IrError::ForeignValue`]).
    ///
    /// To make several computations over one graph, call [`FunctionBuilder::computation`]
    /// for each and keep building.
    #[track_caller]
    pub fn finish(&self, results: &[Value<'_>]) -> Result<Function, IrError> {
        let function = self.computation(results);
        self.generation.set(self.generation.get() + 1);
        let name = self.function.borrow().name().to_string();
        self.function.replace(Function::new(name));
        self.log.borrow_mut().clear();
        self.error.borrow_mut().take();
        function
    }

    /// Builds a subgraph with `build` and makes every node it created (parameters aside)
    /// a member of the provenance group of the value it returns (nGraph's
    /// `add_provenance_group_members_above`, for builders that return one node for a
    /// subgraph): a tag later set on that value ([`Value::tagged`]) reaches them all.
    ///
    /// ```
    /// use graphlift_ir::{ElementType::F32, FunctionBuilder};
    /// let b = FunctionBuilder::new("f");
    /// let x = b.parameter("x", F32, [4]);
    /// let silu = b.provenance_group(|| x * x.sigmoid()).tagged("onnx:Silu:s");
    /// let f = b.finish(&[silu]).unwrap();
    /// let tagged = f.nodes().filter(|n| n.tags().contains("onnx:Silu:s")).count();
    /// assert_eq!(tagged, 2); // Sigmoid and Multiply
    /// ```
    #[track_caller]
    pub fn provenance_group<'b>(&'b self, build: impl FnOnce() -> Value<'b>) -> Value<'b> {
        let first = self.function.borrow().arena_len();
        let root = build();
        if !self.check_owned(&"provenance_group", &[root]) {
            return root;
        }
        if let Some(o) = root.output {
            self.with_function(|f| {
                let members: Vec<NodeId> = f
                    .nodes()
                    .filter(|n| n.id().index() >= first && !matches!(n.op(), Op::Parameter))
                    .map(|n| n.id())
                    .collect();
                f.add_provenance_group_members(o.node, &members)
            });
        }
        root
    }

    /// Runs `f` on the function under construction (to set names, tags, metadata).
    pub fn with_function<T>(
        &self,
        f: impl FnOnce(&mut Function) -> Result<T, IrError>,
    ) -> Option<T> {
        let r = f(&mut self.function.borrow_mut());
        self.record(r)
    }
}

impl<'b> Value<'b> {
    /// The builder that made this value.
    pub fn builder(&self) -> &'b FunctionBuilder {
        self.builder
    }

    /// The output this value is, or `None` if it is poisoned.
    pub fn output(&self) -> Option<Output> {
        self.output
    }

    /// Element type and shape, or `None` if poisoned or made for a function its builder has
    /// since finished.
    pub fn tensor_type(&self) -> Option<(ElementType, Shape)> {
        if self.generation != self.builder.generation.get() {
            return None;
        }
        let o = self.output?;
        let f = self.builder.function.borrow();
        let t = f.output_type(o).ok()?;
        Some((t.element_type, t.shape.clone()))
    }

    /// Sets the producing node's name.
    #[track_caller]
    pub fn named(self, name: &str) -> Value<'b> {
        if !self.builder.check_owned(&"named", &[self]) {
            return self;
        }
        if let Some(o) = self.output {
            self.builder.with_function(|f| f.set_name(o.node, name));
        }
        self
    }

    /// Adds a provenance tag to the producing node.
    #[track_caller]
    pub fn tagged(self, tag: &str) -> Value<'b> {
        if !self.builder.check_owned(&"tagged", &[self]) {
            return self;
        }
        if let Some(o) = self.output {
            self.builder.with_function(|f| f.add_tag(o.node, tag));
        }
        self
    }

    /// Broadcasts to `shape` (numpy rules); no node is added when the shape already matches.
    #[track_caller]
    pub fn broadcast_to(self, shape: impl Into<Shape>) -> Value<'b> {
        let shape = shape.into();
        match self.tensor_type() {
            Some((_, s)) if s == shape => self,
            _ => self.builder.op(Op::Broadcast(shape), &[self]),
        }
    }

    /// Converts to another element type.
    #[track_caller]
    pub fn convert(self, to: ElementType) -> Value<'b> {
        self.builder.op(Op::Convert(to), &[self])
    }

    #[track_caller]
    fn unary(self, u: UnaryOp) -> Value<'b> {
        self.builder.op(Op::Unary(u), &[self])
    }

    #[track_caller]
    fn binary(self, b: BinaryOp, other: Value<'b>) -> Value<'b> {
        self.builder.broadcasting_op(Op::Binary(b), &[self, other])
    }

    #[track_caller]
    fn compare(self, c: CompareOp, other: Value<'b>) -> Value<'b> {
        self.builder.broadcasting_op(Op::Compare(c), &[self, other])
    }

    /// A 0-d constant of this value's element type.
    #[track_caller]
    pub fn scalar_like(self, x: f64) -> Value<'b> {
        if !self.builder.check_owned(&"scalar_like", &[self]) {
            return self.builder.value(None);
        }
        match self.tensor_type() {
            Some((t, _)) => self.builder.scalar(t, x),
            None => self.builder.value(None),
        }
    }
}

macro_rules! unary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {
        impl<'b> Value<'b> {
            $(
                $(#[$doc])*
                #[track_caller]
                pub fn $name(self) -> Value<'b> {
                    self.unary(UnaryOp::$op)
                }
            )*
        }
    };
}

unary_methods! {
    /// `|x|`.
    abs => Abs;
    /// `max(x, 0)`.
    relu => Relu;
    /// `e^x`.
    exp => Exp;
    /// Natural logarithm.
    log => Log;
    /// Square root.
    sqrt => Sqrt;
    /// Hyperbolic tangent.
    tanh => Tanh;
    /// Logistic sigmoid.
    sigmoid => Sigmoid;
    /// Error function.
    erf => Erf;
    /// Sine.
    sin => Sin;
    /// Cosine.
    cos => Cos;
    /// Hyperbolic sine.
    sinh => Sinh;
    /// Hyperbolic cosine.
    cosh => Cosh;
    /// Round toward -inf.
    floor => Floor;
    /// Round toward +inf.
    ceil => Ceil;
    /// Round half to even.
    round => Round;
    /// Sign: -1, 0 or 1.
    sign => Sign;
}

macro_rules! binary_methods {
    ($($(#[$doc:meta])* $name:ident => $kind:ident :: $op:ident;)*) => {
        impl<'b> Value<'b> {
            $(
                $(#[$doc])*
                #[track_caller]
                pub fn $name(self, other: Value<'b>) -> Value<'b> {
                    binary_methods!(@call self, other, $kind, $op)
                }
            )*
        }
    };
    (@call $s:ident, $o:ident, Binary, $op:ident) => { $s.binary(BinaryOp::$op, $o) };
    (@call $s:ident, $o:ident, Compare, $op:ident) => { $s.compare(CompareOp::$op, $o) };
}

binary_methods! {
    /// Elementwise maximum (broadcasting).
    max => Binary::Maximum;
    /// Elementwise minimum (broadcasting).
    min => Binary::Minimum;
    /// `self ^ other` (broadcasting).
    pow => Binary::Power;
    /// Logical and (broadcasting).
    and => Binary::And;
    /// Logical or (broadcasting).
    or => Binary::Or;
    /// Logical xor (broadcasting).
    xor => Binary::Xor;
    /// `self == other` (broadcasting).
    eq => Compare::Equal;
    /// `self != other` (broadcasting).
    ne => Compare::NotEqual;
    /// `self < other` (broadcasting).
    lt => Compare::Less;
    /// `self <= other` (broadcasting).
    le => Compare::LessEq;
    /// `self > other` (broadcasting).
    gt => Compare::Greater;
    /// `self >= other` (broadcasting).
    ge => Compare::GreaterEq;
}

/// `cond ? a : b` elementwise, broadcasting all three.
#[track_caller]
pub fn select<'b>(cond: Value<'b>, a: Value<'b>, b: Value<'b>) -> Value<'b> {
    cond.builder.broadcasting_op(Op::Select, &[cond, a, b])
}

macro_rules! arith_ops {
    ($($trait:ident $method:ident => $op:ident;)*) => {
        $(
            impl<'b> ops::$trait for Value<'b> {
                type Output = Value<'b>;
                #[track_caller]
                fn $method(self, rhs: Value<'b>) -> Value<'b> {
                    self.binary(BinaryOp::$op, rhs)
                }
            }
            impl<'b> ops::$trait<f64> for Value<'b> {
                type Output = Value<'b>;
                #[track_caller]
                fn $method(self, rhs: f64) -> Value<'b> {
                    let c = self.scalar_like(rhs);
                    self.binary(BinaryOp::$op, c)
                }
            }
            impl<'b> ops::$trait<Value<'b>> for f64 {
                type Output = Value<'b>;
                #[track_caller]
                fn $method(self, rhs: Value<'b>) -> Value<'b> {
                    let c = rhs.scalar_like(self);
                    c.binary(BinaryOp::$op, rhs)
                }
            }
        )*
    };
}

arith_ops! {
    Add add => Add;
    Sub sub => Subtract;
    Mul mul => Multiply;
    Div div => Divide;
}

impl<'b> ops::Not for Value<'b> {
    type Output = Value<'b>;
    /// Logical not (bool).
    #[track_caller]
    fn not(self) -> Value<'b> {
        self.unary(UnaryOp::Not)
    }
}

impl<'b> ops::Neg for Value<'b> {
    type Output = Value<'b>;
    #[track_caller]
    fn neg(self) -> Value<'b> {
        self.unary(UnaryOp::Negative)
    }
}
