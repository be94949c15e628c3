//! The analysis view of a function used to form regions: live nodes, their neighbours over
//! data edges and control dependencies, and a topological rank of the quotient graph in which
//! every region formed so far is one node, so that convexity checks stay cheap.

use graphlift_ir::{Function, NodeId};
use smallvec::{smallvec, SmallVec};

use crate::PassError;

/// Live nodes with their neighbours, quotient ranks and the region being grown.
///
/// Ranks: at first, a node's rank is its position in the function's topological order; each
/// slot holds one node. When a region is contracted, its members share one slot, and the
/// slots between the region's lowest and highest rank are reordered (those the region does
/// not reach first, then the region, then those it reaches) so that ranks stay a
/// topological order of the quotient graph. A convexity check is then a pair of depth-first
/// searches bounded by the candidate region's lowest and highest rank, as in OpenVINO
/// snippets' cycle check with topological-order bounds.
pub(super) struct GraphView {
    live: Vec<bool>,
    /// Live data users and control-dependent nodes, sorted, deduplicated.
    succs: Vec<Adjacent>,
    /// Input producers and control dependencies, sorted, deduplicated.
    preds: Vec<Adjacent>,
    /// Whether some live node has a control dependency on this one.
    ctrl_target: Vec<bool>,
    /// Live nodes in the function's topological order.
    order: Vec<NodeId>,
    /// Position in `order` (fixed).
    topo_pos: Vec<usize>,
    /// Rank in a topological order of the quotient graph.
    rank: Vec<usize>,
    /// The nodes of each rank: one node, or the members of a contracted region.
    slots: Vec<SmallVec<[NodeId; 1]>>,
    /// Members of the region being grown.
    in_region: Vec<bool>,
    /// Visit marks of the current search (`mark[i] == epoch`).
    mark: Vec<u32>,
    epoch: u32,
    /// The stack of a search, kept between searches.
    stack: Vec<NodeId>,
}

/// The neighbours of a node (most have a few: kept inline).
type Adjacent = SmallVec<[NodeId; 4]>;

impl GraphView {
    /// The view of `f`, which must validate.
    ///
    /// # Errors
    /// [`PassError::Ir`] if `f` has a cycle.
    pub(super) fn new(f: &Function) -> Result<GraphView, PassError> {
        let len = f.nodes().map(|n| n.id().index() + 1).max().unwrap_or(0);
        let mut live = f.live_nodes();
        live.resize(len, false);
        let mut succs = vec![Adjacent::new(); len];
        let mut preds = vec![Adjacent::new(); len];
        let mut ctrl_target = vec![false; len];
        for n in f.nodes().filter(|n| live[n.id().index()]) {
            let i = n.id().index();
            for p in n.inputs().iter().map(|o| o.node) {
                succs[p.index()].push(n.id());
                preds[i].push(p);
            }
            for &d in n.other_deps() {
                succs[d.index()].push(n.id());
                preds[i].push(d);
                ctrl_target[d.index()] = true;
            }
        }
        for v in succs.iter_mut().chain(preds.iter_mut()) {
            v.sort_unstable();
            v.dedup();
        }
        let order: Vec<NodeId> = f
            .topological_order()?
            .into_iter()
            .filter(|id| live[id.index()])
            .collect();
        let mut topo_pos = vec![usize::MAX; len];
        for (pos, id) in order.iter().enumerate() {
            topo_pos[id.index()] = pos;
        }
        let slots = order.iter().map(|&id| smallvec![id]).collect();
        Ok(GraphView {
            live,
            succs,
            preds,
            ctrl_target,
            rank: topo_pos.clone(),
            topo_pos,
            order,
            slots,
            in_region: vec![false; len],
            mark: vec![0; len],
            epoch: 0,
            stack: Vec::new(),
        })
    }

    /// Number of node slots (one past the largest node index).
    pub(super) fn len(&self) -> usize {
        self.live.len()
    }

    /// Live nodes in topological order.
    pub(super) fn order(&self) -> &[NodeId] {
        &self.order
    }

    /// Whether `id` is live ([`Function::live_nodes`]: a result, a sink such as a main-stream
    /// assign, or a parameter reaches it through inputs or control dependencies), as
    /// [`Function::remove_dead_nodes`] decides.
    pub(super) fn is_live(&self, id: NodeId) -> bool {
        self.live.get(id.index()).copied().unwrap_or(false)
    }

    /// Whether a live node has a control dependency on `id`.
    pub(super) fn is_ctrl_target(&self, id: NodeId) -> bool {
        self.ctrl_target.get(id.index()).copied().unwrap_or(false)
    }

    /// Position of a live node in the function's topological order.
    pub(super) fn topo_pos(&self, id: NodeId) -> usize {
        self.topo_pos[id.index()]
    }

    /// Rank of a live node in the current quotient graph.
    pub(super) fn rank(&self, id: NodeId) -> usize {
        self.rank[id.index()]
    }

    /// Whether `id` is in the region being grown.
    pub(super) fn in_region(&self, id: NodeId) -> bool {
        self.in_region.get(id.index()).copied().unwrap_or(false)
    }

    /// Puts `id` in, or takes it out of, the region being grown.
    pub(super) fn set_in_region(&mut self, id: NodeId, member: bool) {
        self.in_region[id.index()] = member;
    }

    /// Whether the region being grown, whose ranks span `lo..=hi`, stays convex when the
    /// unassigned node `n` joins it: no path from `n` to the region, nor from the region to
    /// `n`, passes through a node outside both.
    pub(super) fn keeps_convex(&mut self, n: NodeId, lo: usize, hi: usize) -> bool {
        !self.reaches_region(n, true, hi) && !self.reaches_region(n, false, lo)
    }

    fn next_epoch(&mut self) {
        if self.epoch == u32::MAX {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.epoch = 0;
        }
        self.epoch += 1;
    }

    /// Searches forward (or backward) from the outside neighbours of `n` for a member of the
    /// region, visiting only ranks `<= bound` (or `>= bound`); a contracted region is
    /// entered as a whole.
    fn reaches_region(&mut self, n: NodeId, forward: bool, bound: usize) -> bool {
        self.next_epoch();
        let GraphView {
            succs,
            preds,
            rank,
            slots,
            in_region,
            mark,
            epoch,
            stack,
            ..
        } = self;
        let adj = if forward { &*succs } else { &*preds };
        stack.clear();
        stack.extend(
            adj[n.index()]
                .iter()
                .copied()
                .filter(|s| !in_region[s.index()]),
        );
        while let Some(v) = stack.pop() {
            let i = v.index();
            if in_region[i] {
                return true;
            }
            if mark[i] == *epoch || v == n {
                continue;
            }
            mark[i] = *epoch;
            let r = rank[i];
            if (forward && r > bound) || (!forward && r < bound) {
                continue;
            }
            for &u in &slots[r] {
                mark[u.index()] = *epoch;
                stack.extend(
                    adj[u.index()]
                        .iter()
                        .copied()
                        .filter(|s| mark[s.index()] != *epoch),
                );
            }
        }
        false
    }

    /// Makes the region being grown (`members`, all unassigned singletons) one node of the
    /// quotient graph, keeping ranks a topological order. The region must be convex.
    pub(super) fn contract(&mut self, members: &[NodeId]) {
        let ranks = members.iter().map(|m| self.rank[m.index()]);
        let (Some(lo), Some(hi)) = (ranks.clone().min(), ranks.max()) else {
            return;
        };
        // Mark what the region reaches within its rank window.
        self.next_epoch();
        let GraphView {
            succs,
            rank,
            slots,
            in_region,
            mark,
            epoch,
            ..
        } = self;
        let mut stack: Vec<NodeId> = members
            .iter()
            .flat_map(|m| succs[m.index()].iter().copied())
            .filter(|s| !in_region[s.index()])
            .collect();
        while let Some(v) = stack.pop() {
            let i = v.index();
            if mark[i] == *epoch || in_region[i] {
                continue;
            }
            mark[i] = *epoch;
            let r = rank[i];
            if r > hi {
                continue;
            }
            for &u in &slots[r] {
                mark[u.index()] = *epoch;
                stack.extend(succs[u.index()].iter().copied());
            }
        }
        let mut before = Vec::new();
        let mut after = Vec::new();
        for slot in &mut slots[lo..=hi] {
            let slot = std::mem::take(slot);
            match slot.first() {
                None => {}
                Some(u) if in_region[u.index()] => {}
                Some(u) if mark[u.index()] == *epoch => after.push(slot),
                Some(_) => before.push(slot),
            }
        }
        let reordered = before
            .into_iter()
            .chain(std::iter::once(SmallVec::from_slice(members)))
            .chain(after);
        for (pos, slot) in (lo..).zip(reordered) {
            for u in &slot {
                rank[u.index()] = pos;
            }
            slots[pos] = slot;
        }
    }
}
