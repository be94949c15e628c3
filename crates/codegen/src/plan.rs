//! Kernel planning: a fused kernel's body flattened to a list of slots (what to load,
//! compute and store, and what is loop-invariant), the form code generation emits from.

use foldhash::HashMap;
use smallvec::{smallvec, SmallVec};
use std::sync::Arc;

use graphlift_ir::{
    BinaryOp, CompareOp, ElementType, Function, Node, Op, Output, Shape, TensorData, UnaryOp,
};

use super::broadcast::{classify, Addressing};
use super::lanes::Lanes;
use crate::JitError;
use graphlift_kernels::target::VectorIsa;

/// Index of a slot in [`KernelPlan::slots`].
pub type SlotId = usize;

/// What a slot computes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SlotOp {
    /// Element of input `arg` (a live-in, or a hidden constant buffer).
    Load {
        /// Index into the kernel's input pointer array.
        arg: usize,
        /// How the element index maps to the buffer.
        addressing: Addressing,
    },
    /// A scalar constant, as raw bits of the slot's element type (`bool` as 0/1).
    Const(u64),
    /// Elementwise unary op.
    Unary(UnaryOp, SlotId),
    /// Elementwise binary op.
    Binary(BinaryOp, SlotId, SlotId),
    /// Comparison (result `Bool`).
    Compare(CompareOp, SlotId, SlotId),
    /// `cond ? a : b`.
    Select(SlotId, SlotId, SlotId),
    /// Conversion from the operand's element type to the slot's.
    Convert(SlotId),
}

/// One value of the lowered kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    /// What it computes.
    pub op: SlotOp,
    /// The element type it is computed in: its storage type's
    /// [`crate::storage::compute_type`] (`f32` for an `f16` value).
    pub ty: ElementType,
    /// Its element type in the graph (what loads read and stores write; `ty` unless a
    /// storage type, [`crate::storage`]).
    pub storage: ElementType,
    /// `true` when it depends on no per-element load (computed once, before the loop).
    pub invariant: bool,
    /// The body node it came from (for error messages).
    pub node: Arc<str>,
}

/// An input buffer of a kernel: element type and element count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgSpec {
    /// Element type.
    pub ty: ElementType,
    /// Number of elements the buffer must hold.
    pub len: usize,
}

/// A kernel ready for code generation.
#[derive(Debug, Clone)]
pub struct KernelPlan {
    /// Kernel name (the fused node's).
    pub name: String,
    /// Elements in the iteration space (every output holds this many).
    pub count: usize,
    /// The loop's lane width: `X4` when every value is `f32`/`i32`/`bool`, `X2` when every
    /// value is `f64`/`i64`/`bool`, else the scalar `X1` ([`Lanes::for_types`]).
    pub lanes: Lanes,
    /// Input buffers: the live-ins in order, then the hidden constant buffers.
    pub args: Vec<ArgSpec>,
    /// Number of live-ins (the first `live_ins` of `args`).
    pub live_ins: usize,
    /// Constant tensors read by index; `constants[c]` is `args[live_ins + c]`.
    pub constants: Vec<Arc<TensorData>>,
    /// Slots in dependency order.
    pub slots: Vec<Slot>,
    /// Output slots, one per body result, with their element types.
    pub outputs: Vec<(SlotId, ElementType)>,
    /// Whether `f32` `exp`, `sigmoid`, `tanh`, `erf` and divisions of an `X4` kernel are
    /// calls to the vector math library over strips ([`super::strip`]) rather than inline code. `false`
    /// from [`plan_kernel`]; the backend and [`crate::JitKernel`] set it.
    pub veclib: bool,
    /// Whether an `X4` kernel writes its `f32` and `i32` outputs with non-temporal stores
    /// ([`graphlift_kernels::stream`], [`super::strip`]). `false` from [`plan_kernel`]; the backend sets
    /// it for calls whose traffic exceeds the last-level cache.
    pub stream: bool,
    /// The instruction set the kernel is assembled for where it qualifies
    /// ([`super::asm`]: eight-lane AVX2 or sixteen-lane AVX-512 code) rather than lowered
    /// through Cranelift; `None`: Cranelift's. `None` from [`plan_kernel`]; the backend and
    /// [`crate::JitKernel`] set it.
    pub isa: Option<VectorIsa>,
}

impl KernelPlan {
    /// How many times each slot is read: as an operand of another slot (twice by `x · x`)
    /// or as an output.
    pub fn use_counts(&self) -> Vec<usize> {
        let mut uses = vec![0usize; self.slots.len()];
        for slot in &self.slots {
            for o in operands(&slot.op) {
                uses[o] += 1;
            }
        }
        for &(o, _) in &self.outputs {
            uses[o] += 1;
        }
        uses
    }

    /// Whether the kernel reads input `arg` only at the element it computes (every load of
    /// it is [`Addressing::Contiguous`] and the buffer holds `count` elements): a call on
    /// the range `begin..end` then reads exactly elements `begin..end` of it.
    pub fn reads_contiguously(&self, arg: usize) -> bool {
        let loads = |s: &&Slot| matches!(&s.op, SlotOp::Load { arg: a, .. } if *a == arg);
        self.args.get(arg).is_some_and(|a| a.len == self.count)
            && self.slots.iter().filter(loads).all(|s| {
                matches!(
                    &s.op,
                    SlotOp::Load {
                        addressing: Addressing::Contiguous,
                        ..
                    }
                )
            })
    }

    /// Whether the value of slot `slot` is computed from a load of argument `arg`: a chain
    /// of operands leads from it to such a load (so the code loads that element of `arg`
    /// before it has the value to store).
    pub fn computed_from(&self, slot: SlotId, arg: usize) -> bool {
        let mut from = vec![false; self.slots.len()];
        for (s, sl) in self.slots.iter().enumerate().take(slot.saturating_add(1)) {
            from[s] = match &sl.op {
                SlotOp::Load { arg: a, .. } => *a == arg,
                op => operands(op)
                    .iter()
                    .any(|&o| from.get(o).copied().unwrap_or(false)),
            };
        }
        from.get(slot).copied().unwrap_or(false)
    }
}

/// A view of a value: `None` at the iteration space itself, `Some(T)` broadcast onto `T`.
type View = Option<Shape>;

/// Plans the kernel `name` from its `body`.
///
/// The body is a small `Function` (parameters = live-ins, results = kernel outputs) of
/// `Unary`, `Binary`, `Compare`, `Select`, `Convert`, `Broadcast` and `Constant` nodes. A
/// value is planned once per *view*: at the kernel's iteration space directly, or broadcast
/// onto a larger shape (the Broadcast's target). A Broadcast emits nothing: its input is
/// planned at the broadcast view, so live-ins become indexed loads ([`Addressing`]) and
/// computed values are recomputed per element at the source index, never materialized.
/// Equal slots are shared (local value numbering). A slot that depends only on constants and
/// splat loads is *invariant*: it is computed once, before the loop.
///
/// # Errors
/// [`JitError::Ir`] when the body does not validate; [`JitError::Unsupported`] when it holds
/// a node that is not elementwise, Broadcast or Constant, a value of an element type fused
/// kernels do not lower ([`crate::lowers`]), has no results, or results of different
/// element counts.
pub fn plan_kernel(name: &str, body: &Function) -> Result<KernelPlan, JitError> {
    let unsupported = |message: String| JitError::Unsupported {
        kernel: name.to_string(),
        message,
    };
    body.validate()?;
    for n in body.nodes() {
        if let Some(t) = n
            .outputs()
            .iter()
            .map(|o| o.element_type)
            .find(|&t| !crate::lowers(t))
        {
            return Err(unsupported(format!(
                "node `{}` ({}) has element type {t}, which fused kernels do not lower",
                n.name(),
                n.op()
            )));
        }
    }
    let count_of = |s: &Shape| s.element_count().map_err(JitError::from);
    let results = body.results();
    let Some(&first) = results.first() else {
        return Err(unsupported("the body has no results".into()));
    };
    let count = count_of(&body.node(first)?.output_type().shape)?;
    for &r in results {
        let n = body.node(r)?;
        let c = count_of(&n.output_type().shape)?;
        if c != count {
            return Err(unsupported(format!(
                "result `{}` holds {c} elements, the first result {count}: one iteration space per kernel",
                n.name()
            )));
        }
    }
    let order = body.topological_order()?;

    // Which views of each value are needed: walk users before producers.
    // Nearly every value is read through one view: kept inline.
    // Sized up front: growing a map of these entries reallocates blocks of a kilobyte and
    // more, and glibc consolidates its free lists on each such request.
    let nodes = body.node_count();
    let mut views: HashMap<Output, SmallVec<[View; 1]>> =
        HashMap::with_capacity_and_hasher(nodes, Default::default());
    let add_view = |views: &mut HashMap<Output, SmallVec<[View; 1]>>, o: Output, v: View| {
        let e = views.entry(o).or_default();
        if !e.contains(&v) {
            e.push(v);
        }
    };
    for &r in results {
        add_view(&mut views, body.result_source(r)?, None);
    }
    for &id in order.iter().rev() {
        let node = body.node(id)?;
        let mine = views.get(&Output::new(id, 0)).cloned().unwrap_or_default();
        for v in mine {
            let input_view = inputs_view(node, &v);
            for &o in node.inputs() {
                let normal = normalize(&input_view, &body.output_type(o)?.shape, count)?;
                add_view(&mut views, o, normal);
            }
        }
    }

    let mut p = Planner {
        slots: Vec::new(),
        numbering: HashMap::with_capacity_and_hasher(nodes, Default::default()),
        constants: Vec::new(),
        live_ins: body.parameters().len(),
    };
    let mut planned: HashMap<(Output, View), SlotId> =
        HashMap::with_capacity_and_hasher(nodes, Default::default());
    for &id in &order {
        let node = body.node(id)?;
        let out = Output::new(id, 0);
        for v in views.get(&out).cloned().unwrap_or_default() {
            let slot = p.plan_node(body, node, &v, count, &planned, &unsupported)?;
            if let Some(s) = slot {
                planned.insert((out, v), s);
            }
        }
    }
    let mut outputs = Vec::new();
    for &r in results {
        let src = body.result_source(r)?;
        let s = planned
            .get(&(src, None))
            .copied()
            .ok_or_else(|| unsupported(format!("result {r} was not planned")))?;
        outputs.push((s, body.node(r)?.output_type().element_type));
    }
    let mut args = Vec::new();
    for &param in body.parameters() {
        let t = body.node(param)?.output_type();
        args.push(ArgSpec {
            ty: t.element_type,
            len: count_of(&t.shape)?,
        });
    }
    for c in &p.constants {
        args.push(ArgSpec {
            ty: c.element_type(),
            len: c.len(),
        });
    }
    Ok(KernelPlan {
        name: name.to_string(),
        count,
        lanes: Lanes::for_types(p.slots.iter().map(|s| s.ty)),
        args,
        live_ins: p.live_ins,
        constants: p.constants,
        slots: p.slots,
        outputs,
        veclib: false,
        isa: None,
        stream: false,
    })
}

struct Planner {
    slots: Vec<Slot>,
    /// Slots by what they compute and their storage type (an `i8` and an `i32` add differ).
    numbering: HashMap<(SlotOp, ElementType), SlotId>,
    constants: Vec<Arc<TensorData>>,
    live_ins: usize,
}

impl Planner {
    /// The slot computing `op` with result type `storage` (shared with an equal one).
    fn push(&mut self, op: SlotOp, storage: ElementType, node: &Node) -> SlotId {
        if let Some(&s) = self.numbering.get(&(op.clone(), storage)) {
            return s;
        }
        let invariant = match &op {
            SlotOp::Load { addressing, .. } => *addressing == Addressing::Splat,
            SlotOp::Const(_) => true,
            SlotOp::Unary(_, a) | SlotOp::Convert(a) => self.slots[*a].invariant,
            SlotOp::Binary(_, a, b) | SlotOp::Compare(_, a, b) => {
                self.slots[*a].invariant && self.slots[*b].invariant
            }
            SlotOp::Select(c, a, b) => {
                self.slots[*c].invariant && self.slots[*a].invariant && self.slots[*b].invariant
            }
        };
        let id = self.slots.len();
        self.slots.push(Slot {
            op: op.clone(),
            ty: crate::storage::compute_type(storage),
            storage,
            invariant,
            node: Arc::clone(node.shared_name()),
        });
        self.numbering.insert((op, storage), id);
        id
    }

    /// The slot of `node` at view `v`, or `None` for nodes that compute nothing (Results).
    fn plan_node(
        &mut self,
        body: &Function,
        node: &Node,
        v: &View,
        count: usize,
        planned: &HashMap<(Output, View), SlotId>,
        unsupported: &dyn Fn(String) -> JitError,
    ) -> Result<Option<SlotId>, JitError> {
        let ty = node.output_type().element_type;
        let shape = &node.output_type().shape;
        let in_view = inputs_view(node, v);
        let input = |k: usize| -> Result<SlotId, JitError> {
            let o = node.inputs()[k];
            let view = normalize(&in_view, &body.output_type(o)?.shape, count)?;
            planned.get(&(o, view)).copied().ok_or_else(|| {
                unsupported(format!("input {k} of `{}` was not planned", node.name()))
            })
        };
        let addressing = |n_elems: usize| match v {
            _ if n_elems == 1 => Addressing::Splat,
            None => Addressing::Contiguous,
            Some(t) => classify(shape, t),
        };
        let op = match node.op() {
            Op::Result => return Ok(None),
            Op::Parameter => {
                let arg = body
                    .parameters()
                    .iter()
                    .position(|&p| p == node.id())
                    .ok_or_else(|| unsupported(format!("`{}` is not a parameter", node.name())))?;
                SlotOp::Load {
                    arg,
                    addressing: addressing(shape.element_count()?),
                }
            }
            Op::Constant(data) => {
                if data.len() == 1 {
                    SlotOp::Const(scalar_bits(data))
                } else {
                    let c = match self.constants.iter().position(|d| Arc::ptr_eq(d, data)) {
                        Some(c) => c,
                        None => {
                            self.constants.push(Arc::clone(data));
                            self.constants.len() - 1
                        }
                    };
                    SlotOp::Load {
                        arg: self.live_ins + c,
                        addressing: addressing(data.len()),
                    }
                }
            }
            // Nothing to compute: the input was planned at the broadcast view.
            Op::Broadcast(_) => return input(0).map(Some),
            Op::Unary(u) => SlotOp::Unary(*u, input(0)?),
            Op::Binary(b) => SlotOp::Binary(*b, input(0)?, input(1)?),
            Op::Compare(c) => SlotOp::Compare(*c, input(0)?, input(1)?),
            Op::Select => SlotOp::Select(input(0)?, input(1)?, input(2)?),
            Op::Convert(_) => SlotOp::Convert(input(0)?),
            Op::FusedKernel(_) => {
                return Err(unsupported(format!(
                    "`{}`: a fused kernel inside a fused kernel",
                    node.name()
                )))
            }
            op => {
                return Err(unsupported(format!(
                    "`{}`: {} is not elementwise and has no place in a fused kernel",
                    node.name(),
                    op.type_name()
                )))
            }
        };
        Ok(Some(self.push(op, ty, node)))
    }
}

/// The view at which a node's inputs are read when the node is read at `v`: a Broadcast's
/// input is read broadcast onto the Broadcast's target (or onto `v`, which it broadcasts
/// to); other ops read their inputs at their own view.
fn inputs_view(node: &Node, v: &View) -> View {
    match (node.op(), v) {
        (Op::Broadcast(target), None) => Some(target.clone()),
        _ => v.clone(),
    }
}

/// `view` for a value of shape `s`: the identity (`None`) when `s` holds `count` elements
/// (it then broadcasts to the iteration space without repeating anything).
fn normalize(view: &View, s: &Shape, count: usize) -> Result<View, JitError> {
    Ok(match view {
        Some(_) if s.element_count()? == count => None,
        other => other.clone(),
    })
}

/// The raw bits of a one-element constant in the type it is computed in
/// ([`crate::storage::compute_type`]): `bool` as 0/1, integers sign- (signed) or
/// zero-extended (unsigned), 16-bit floats as the `f32` of their value; types fused kernels
/// do not lower, which plans refuse, as 0.
fn scalar_bits(d: &TensorData) -> u64 {
    match d {
        TensorData::F32(v) => u64::from(v[0].to_bits()),
        TensorData::F64(v) => v[0].to_bits(),
        TensorData::I32(v) => v[0] as i64 as u64,
        TensorData::I64(v) => v[0] as u64,
        TensorData::Bool(v) => u64::from(v[0]),
        TensorData::I8(v) => v[0] as i64 as u64,
        TensorData::U8(v) => u64::from(v[0]),
        TensorData::I16(v) => v[0] as i64 as u64,
        TensorData::U16(v) => u64::from(v[0]),
        TensorData::U32(v) => u64::from(v[0]),
        TensorData::F16(v) => u64::from(v[0].to_f32().to_bits()),
        TensorData::BF16(v) => u64::from(v[0].to_f32().to_bits()),
        _ => 0,
    }
}

/// The slots `op` reads.
pub fn operands(op: &SlotOp) -> SmallVec<[SlotId; 3]> {
    match op {
        SlotOp::Load { .. } | SlotOp::Const(_) => SmallVec::new(),
        SlotOp::Unary(_, a) | SlotOp::Convert(a) => smallvec![*a],
        SlotOp::Binary(_, a, b) | SlotOp::Compare(_, a, b) => smallvec![*a, *b],
        SlotOp::Select(c, a, b) => smallvec![*c, *a, *b],
    }
}
