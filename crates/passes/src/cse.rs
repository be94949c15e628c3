//! Common subexpression elimination: equal computations on equal inputs become one node.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};

use graphlift_ir::{
    BinaryOp, CompareOp, ElementType, Function, Node, NodeId, Op, Output, Shape, TensorData,
    TensorType, UnaryOp,
};

use foldhash::{HashMap, HashSet};

use crate::rewrite::{record_pass_once, replace_by_value, rewrite_on_copy};
use crate::{Pass, PassError};

#[cfg(test)]
mod tests;

/// Merges nodes that compute the same thing (nGraph's `CommonSubexpressionElimination`,
/// TVM's `EliminateCommonSubexpr`).
///
/// Two nodes merge when they have the same op with the same attributes (`Convert`'s target
/// type, `Broadcast`'s shape; for Constants the same type, shape and data **bit for bit**, so
/// `0.0` and `-0.0`, or two NaNs with different payloads, stay apart; fused kernels with
/// equal bodies), the same inputs in the same order, and neither has control dependencies
/// (`other_deps`): a node ordered after something is never merged. Parameters and Results
/// never merge.
///
/// State: Variables never merge, whatever their initializers (each is its own storage, with
/// its own name in the Executable), and neither do Assigns (each is a write). Two
/// `ReadVariable`s of one variable merge under the rule above: without control
/// dependencies of their own, both run before any assign of the variable (validation orders
/// every read against every assign), so they see the same value; a read ordered after an
/// assign has a control dependency and stays apart.
///
/// Deterministic: of a set of equal nodes the one with the lowest id is kept, and the others
/// are replaced by it with [`Function::replace_node_unpruned`], so it takes their tags (the
/// union, per nGraph's rule), their users and their dependents, and
/// [`CommonSubexpressionElimination::NAME`] is appended to its pass history once. Runs to a
/// fixed point: merging inputs can make their users equal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommonSubexpressionElimination;

impl CommonSubexpressionElimination {
    /// The pass's name, recorded in the pass history of every node that absorbed another.
    pub const NAME: &'static str = "common_subexpression_elimination";
}

impl Pass for CommonSubexpressionElimination {
    fn name(&self) -> &'static str {
        CommonSubexpressionElimination::NAME
    }

    /// Merges equal nodes; `true` when at least one merge happened.
    ///
    /// # Errors
    /// [`PassError::Ir`] if `f` does not validate. `f` is then unchanged.
    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        rewrite_on_copy(
            f,
            CommonSubexpressionElimination::NAME,
            has_twins,
            eliminate,
        )
    }
}

/// Whether two nodes have the same [`Key`] (a merge may follow; [`same_op`] decides).
fn has_twins(g: &Function) -> Result<bool, PassError> {
    let mut keys = HashSet::with_capacity_and_hasher(g.node_count(), Default::default());
    Ok(g.nodes().filter_map(Key::of).any(|k| !keys.insert(k)))
}

fn eliminate(g: &mut Function) -> Result<bool, PassError> {
    let mut kept = BTreeSet::new();
    let mut replaced = BTreeSet::new();
    loop {
        let mut merged = false;
        // Buckets by the key's hash; a candidate's key is compared exactly, from the graph
        // as it is now (the key borrows the node, and merges change the graph).
        let mut table: HashMap<u64, Vec<NodeId>> = HashMap::default();
        for id in g.topological_order()? {
            if replaced.contains(&id) {
                continue;
            }
            let node = g.node(id)?;
            let Some(key) = Key::of(node) else { continue };
            let bucket = table.entry(hash_of(&key)).or_default();
            let twin = bucket.iter().position(|&other| {
                g.get(other).is_some_and(|o| {
                    Key::of(o).as_ref() == Some(&key) && same_op(o.op(), node.op())
                })
            });
            let Some(pos) = twin else {
                bucket.push(id);
                continue;
            };
            let other = bucket[pos];
            let (keep, drop) = if other < id { (other, id) } else { (id, other) };
            bucket[pos] = keep;
            replace_by_value(
                g,
                drop,
                keep.into(),
                &[],
                CommonSubexpressionElimination::NAME,
            )?;
            kept.insert(keep);
            kept.remove(&drop);
            replaced.insert(drop);
            merged = true;
        }
        if !merged {
            break;
        }
    }
    record_pass_once(g, &kept, CommonSubexpressionElimination::NAME)?;
    Ok(!replaced.is_empty())
}

/// What must be equal for two nodes to merge, hashable; the exact op comparison
/// ([`same_op`]) settles collisions within a bucket.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key<'n> {
    op: OpKey<'n>,
    inputs: &'n [Output],
    outputs: &'n [TensorType],
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum OpKey<'n> {
    Unary(UnaryOp),
    Binary(BinaryOp),
    Compare(CompareOp),
    Select,
    Convert(ElementType),
    Broadcast(&'n Shape),
    /// A hash of the data's bits.
    Constant(u64),
    /// Number of nodes of the body.
    FusedKernel(usize),
    /// Any other op, by type name; [`same_op`] compares the attributes.
    Other(&'static str),
}

impl<'n> Key<'n> {
    /// The key of `node`, or `None` if it may not merge.
    fn of(node: &'n Node) -> Option<Key<'n>> {
        if !node.other_deps().is_empty() {
            return None;
        }
        let op = match node.op() {
            Op::Parameter | Op::Result | Op::Variable(_) | Op::Assign => return None,
            Op::Unary(u) => OpKey::Unary(*u),
            Op::Binary(b) => OpKey::Binary(*b),
            Op::Compare(c) => OpKey::Compare(*c),
            Op::Select => OpKey::Select,
            Op::Convert(t) => OpKey::Convert(*t),
            Op::Broadcast(s) => OpKey::Broadcast(s),
            Op::Constant(d) => {
                let mut h = DefaultHasher::new();
                hash_bits(d, &mut h);
                OpKey::Constant(h.finish())
            }
            Op::FusedKernel(k) => OpKey::FusedKernel(k.body.node_count()),
            op => OpKey::Other(op.type_name()),
        };
        Some(Key {
            op,
            inputs: node.inputs(),
            outputs: node.outputs(),
        })
    }
}

fn hash_of(key: &Key) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::default().hash_one(key)
}

/// Whether two ops (already of equal keys) are the same: Constants bit for bit, everything
/// else by `==` (for fused kernels, equal bodies).
fn same_op(a: &Op, b: &Op) -> bool {
    match (a, b) {
        (Op::Constant(x), Op::Constant(y)) => same_bits(x, y),
        _ => a == b,
    }
}

fn same_bits(x: &TensorData, y: &TensorData) -> bool {
    x.same_bits(y)
}

/// Feeds the bits of every element to `h`.
/// Elements of a constant that its key hashes: at most this many, spread over the data
/// (the bucket's exact comparison settles collisions), so keying a model's weights costs
/// nothing like hashing every byte of them.
const HASHED_ELEMENTS: usize = 64;

fn hash_bits(d: &TensorData, h: &mut impl Hasher) {
    d.element_type().hash(h);
    d.len().hash(h);
    let stride = d.len().div_ceil(HASHED_ELEMENTS).max(1);
    match d {
        TensorData::F32(v) => v.iter().step_by(stride).for_each(|x| x.to_bits().hash(h)),
        TensorData::F64(v) => v.iter().step_by(stride).for_each(|x| x.to_bits().hash(h)),
        TensorData::F16(v) => v.iter().step_by(stride).for_each(|x| x.to_bits().hash(h)),
        TensorData::BF16(v) => v.iter().step_by(stride).for_each(|x| x.to_bits().hash(h)),
        TensorData::I32(v) => v.iter().step_by(stride).for_each(|x| x.hash(h)),
        TensorData::I64(v) => v.iter().step_by(stride).for_each(|x| x.hash(h)),
        TensorData::Bool(v) => v.iter().step_by(stride).for_each(|x| x.hash(h)),
        TensorData::I8(v) => v.iter().step_by(stride).for_each(|x| x.hash(h)),
        TensorData::U8(v) => v.iter().step_by(stride).for_each(|x| x.hash(h)),
        TensorData::I16(v) => v.iter().step_by(stride).for_each(|x| x.hash(h)),
        TensorData::U16(v) => v.iter().step_by(stride).for_each(|x| x.hash(h)),
        TensorData::U32(v) => v.iter().step_by(stride).for_each(|x| x.hash(h)),
        TensorData::U64(v) => v.iter().step_by(stride).for_each(|x| x.hash(h)),
        // The storage-only types, by their bit patterns.
        other => graphlift_ir::storage_bits(other)
            .unwrap_or_default()
            .iter()
            .step_by(stride)
            .for_each(|x| x.hash(h)),
    }
}
