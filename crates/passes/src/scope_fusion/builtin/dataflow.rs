//! Reading a scope's data flow for structure checks: the one value a scope hands out, ops
//! looked through `Broadcast`s, scalar constants, reductions, layout ops, and the record of
//! every node walked (the fused op's) or kept (upstream of its inputs, left as they are),
//! which must account for every computing node of the scope.

use std::collections::HashSet;

use graphlift_ir::{BinaryOp, Function, Node, NodeId, Op, Output, Reduction, UnaryOp};

use crate::scope_fusion::{Scope, ScopeGraph, StructureMismatch};

/// A walk over one scope's data flow.
pub(crate) struct Walk<'f> {
    f: &'f Function,
    scope: HashSet<NodeId>,
    scope_name: String,
    visited: Vec<NodeId>,
    /// Scope nodes upstream of the fused op's inputs, which stay in the graph.
    kept: HashSet<NodeId>,
}

type Res<T> = Result<T, StructureMismatch>;

pub(crate) fn mismatch<T>(why: String) -> Res<T> {
    Err(StructureMismatch::new(why))
}

impl<'f> Walk<'f> {
    /// A walk over `scope` of `graph`.
    pub(crate) fn new(scope: &Scope, graph: &ScopeGraph<'f>) -> Walk<'f> {
        Walk {
            f: graph.function(),
            scope: graph.scope_nodes(scope.id()),
            scope_name: scope.name().to_string(),
            visited: Vec::new(),
            kept: HashSet::new(),
        }
    }

    pub(crate) fn function(&self) -> &'f Function {
        self.f
    }

    /// The node producing `o` (it exists: outputs come from the function).
    pub(crate) fn node(&self, o: Output) -> Res<&'f Node> {
        self.f
            .node(o.node)
            .map_err(|e| StructureMismatch::new(e.to_string()))
    }

    /// The one value of the scope used outside it (by another node or a Result).
    pub(crate) fn output(&self) -> Res<Output> {
        let mut outs = Vec::new();
        for &id in &self.scope {
            let n = self.node(Output::from(id))?;
            for i in 0..n.outputs().len() {
                if n.users(i).iter().any(|(u, _)| !self.scope.contains(u)) {
                    outs.push(Output::new(id, i));
                }
            }
        }
        outs.sort();
        match outs.as_slice() {
            [o] => Ok(*o),
            _ => mismatch(format!(
                "the scope hands out {} values; the fused op has one output{}",
                outs.len(),
                self.readers(&outs)
            )),
        }
    }

    /// `: `a` read by `u`, `v`; ...` for the first values of `outs` (a refusal's why).
    fn readers(&self, outs: &[Output]) -> String {
        const SHOWN: usize = 4;
        let name = |id: NodeId| {
            self.f
                .get(id)
                .map_or(id.to_string(), |n| n.name().to_string())
        };
        let mut parts = Vec::new();
        for &o in outs.iter().take(SHOWN) {
            let Some(n) = self.f.get(o.node) else {
                continue;
            };
            let users: Vec<String> = n
                .users(o.index)
                .iter()
                .filter(|(u, _)| !self.scope.contains(u))
                .map(|&(u, _)| format!("`{}`", name(u)))
                .collect();
            parts.push(format!("`{}` read by {}", n.name(), users.join(", ")));
        }
        if outs.len() > SHOWN {
            parts.push(format!("{} more", outs.len() - SHOWN));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(": {}", parts.join("; "))
        }
    }

    /// `o` with the `Broadcast`s producing it looked through (each recorded as walked).
    pub(crate) fn strip(&mut self, mut o: Output) -> Res<Output> {
        loop {
            let n = self.node(o)?;
            match n.op() {
                Op::Broadcast(_) => {
                    self.visited.push(n.id());
                    o = n.inputs()[0];
                }
                _ => return Ok(o),
            }
        }
    }

    /// The op computing `o`, looked through broadcasts without recording them.
    pub(crate) fn op_of(&self, mut o: Output) -> Res<&'f Op> {
        loop {
            let n = self.node(o)?;
            match n.op() {
                Op::Broadcast(_) => o = n.inputs()[0],
                op => return Ok(op),
            }
        }
    }

    /// How many nodes have been walked: [`Walk::reset`] forgets those after it, when an
    /// alternative reading failed.
    pub(crate) fn mark(&self) -> usize {
        self.visited.len()
    }

    /// Forgets the nodes walked since `mark`.
    pub(crate) fn reset(&mut self, mark: usize) {
        self.visited.truncate(mark);
    }

    /// The op computing `o` (through broadcasts), which must lie in the scope; recorded.
    pub(crate) fn compute(&mut self, o: Output, what: &str) -> Res<&'f Node> {
        let o = self.strip(o)?;
        let n = self.node(o)?;
        if !self.scope.contains(&n.id()) {
            return mismatch(format!(
                "{what} is `{}` ({}), outside the scope",
                n.name(),
                n.op().type_name()
            ));
        }
        self.visited.push(n.id());
        Ok(n)
    }

    /// The mismatch "`what` is `n`, not `want`".
    pub(crate) fn wrong<T>(n: &Node, what: &str, want: &str) -> Res<T> {
        mismatch(format!("{what} is `{}` ({}), not {want}", n.name(), n.op(),))
    }

    /// The operands of the binary op `b` computing `o` (inside the scope).
    pub(crate) fn binary(&mut self, o: Output, b: BinaryOp, what: &str) -> Res<(Output, Output)> {
        let n = self.compute(o, what)?;
        match n.op() {
            Op::Binary(x) if *x == b => Ok((n.inputs()[0], n.inputs()[1])),
            _ => Self::wrong(n, what, b.name()),
        }
    }

    /// The operand of the unary op `u` computing `o` (inside the scope).
    pub(crate) fn unary(&mut self, o: Output, u: UnaryOp, what: &str) -> Res<Output> {
        let n = self.compute(o, what)?;
        match n.op() {
            Op::Unary(x) if *x == u => Ok(n.inputs()[0]),
            _ => Self::wrong(n, what, u.name()),
        }
    }

    /// The reduction computing `o` (inside the scope) and its operand; it must keep its
    /// reduced axes (so the value broadcasts back over its operand).
    pub(crate) fn reduce(
        &mut self,
        o: Output,
        what: &str,
        want: &str,
    ) -> Res<(&'f Reduction, Output)> {
        let n = self.compute(o, what)?;
        match n.op() {
            Op::Reduce(r) if n.op().type_name() == want => {
                if !r.keep_dims {
                    return mismatch(format!(
                        "{what} `{}` does not keep its reduced axes",
                        n.name()
                    ));
                }
                Ok((r, n.inputs()[0]))
            }
            _ => Self::wrong(n, what, want),
        }
    }

    /// The value of a constant all of whose elements are equal (through broadcasts).
    pub(crate) fn scalar(&mut self, o: Output, what: &str) -> Res<f64> {
        let o = self.strip(o)?;
        let n = self.node(o)?;
        if let Op::Constant(data) = n.op() {
            let first = data.get_f64(0);
            if let Some(v) = first {
                if (0..data.len()).all(|i| data.get_f64(i).map(f64::to_bits) == Some(v.to_bits())) {
                    if self.scope.contains(&n.id()) {
                        self.visited.push(n.id());
                    }
                    return Ok(v);
                }
            }
        }
        mismatch(format!(
            "{what} is `{}` ({}), not a scalar constant",
            n.name(),
            n.op()
        ))
    }

    /// Checks that `a` and `b` are the same value (through broadcasts).
    pub(crate) fn same(&mut self, a: Output, b: Output, what: &str) -> Res<()> {
        let (sa, sb) = (self.strip(a)?, self.strip(b)?);
        if sa == sb {
            return Ok(());
        }
        let (na, nb) = (self.node(sa)?, self.node(sb)?);
        mismatch(format!(
            "{what}: `{}` and `{}` differ",
            na.name(),
            nb.name()
        ))
    }

    /// The operand of the `Reshape` computing `o` (inside the scope) and the shape it gives.
    pub(crate) fn reshape(&mut self, o: Output, what: &str) -> Res<(Output, &'f [usize])> {
        let n = self.compute(o, what)?;
        match n.op() {
            Op::Reshape(s) => Ok((n.inputs()[0], s.dims())),
            _ => Self::wrong(n, what, "Reshape"),
        }
    }

    /// The operand of the `Transpose` computing `o` (inside the scope) and its permutation.
    pub(crate) fn transpose(&mut self, o: Output, what: &str) -> Res<(Output, &'f [usize])> {
        let n = self.compute(o, what)?;
        match n.op() {
            Op::Transpose(p) => Ok((n.inputs()[0], p.as_slice())),
            _ => Self::wrong(n, what, "Transpose"),
        }
    }

    /// The operands of the `MatMul` computing `o` (inside the scope).
    pub(crate) fn matmul(&mut self, o: Output, what: &str) -> Res<(Output, Output)> {
        let n = self.compute(o, what)?;
        match n.op() {
            Op::MatMul => Ok((n.inputs()[0], n.inputs()[1])),
            _ => Self::wrong(n, what, "MatMul"),
        }
    }

    /// The extents of `o`.
    pub(crate) fn dims(&self, o: Output) -> Res<&'f [usize]> {
        self.f
            .output_type(o)
            .map(|t| t.shape.dims())
            .map_err(|e| StructureMismatch::new(e.to_string()))
    }

    /// Keeps the scope's nodes that `o` is computed from (`o`'s own included): they stay in
    /// the graph, upstream of the fused op's input `o`, and count as accounted for.
    pub(crate) fn keep(&mut self, o: Output) {
        let mut stack = vec![o.node];
        while let Some(id) = stack.pop() {
            if !self.scope.contains(&id) || !self.kept.insert(id) {
                continue;
            }
            if let Some(n) = self.f.get(id) {
                stack.extend(n.inputs().iter().map(|i| i.node));
            }
        }
    }

    /// The walked nodes inside the scope (the fused op's inner nodes), after checking that
    /// walked and kept nodes account for every node of the scope but constants.
    pub(crate) fn finish(mut self, fused: &str) -> Res<Vec<NodeId>> {
        let walked: HashSet<NodeId> = self.visited.iter().copied().collect();
        let mut stray: Vec<&Node> = self
            .scope
            .iter()
            .filter(|id| !walked.contains(id) && !self.kept.contains(id))
            .filter_map(|&id| self.f.get(id))
            .filter(|n| !matches!(n.op(), Op::Constant(_)))
            .collect();
        stray.sort_by_key(|n| n.id());
        if let Some(n) = stray.first() {
            return mismatch(format!(
                "`{}` ({}) in scope `{}` is not part of the {fused} computation",
                n.name(),
                n.op().type_name(),
                self.scope_name
            ));
        }
        self.visited.retain(|id| self.scope.contains(id));
        self.visited.sort();
        self.visited.dedup();
        Ok(self.visited)
    }
}

/// `m(a)` with `b` as the other operand, else `m(b)` with `a` (the walk reset between the
/// tries); the first error if both fail.
pub(crate) fn either<T>(
    w: &mut Walk<'_>,
    a: Output,
    b: Output,
    mut m: impl FnMut(&mut Walk<'_>, Output) -> Res<T>,
) -> Res<(T, Output)> {
    let mark = w.mark();
    match m(w, a) {
        Ok(t) => Ok((t, b)),
        Err(first) => {
            w.reset(mark);
            m(w, b).map(|t| (t, a)).map_err(|_| first)
        }
    }
}
