//! Provenance groups and the per-function provenance switch (nGraph's
//! `add_provenance_group_members`, `add_provenance_tags_above`, `provenance_enabled`), so that a
//! bridge that tags only the node it gets back tags the whole subgraph behind it.

use std::collections::HashSet;
use std::sync::Arc;

use super::Function;
use crate::{IrError, NodeId, Op, Output, ProvenanceTags};

impl Function {
    /// Whether passes propagate provenance tags on this function (on by default).
    pub fn provenance_enabled(&self) -> bool {
        self.provenance_enabled
    }

    /// Switches provenance propagation on or off for this function. When off,
    /// [`Function::replace_node`] moves no tags and passes hand on none
    /// ([`Function::propagate_tags`]); tags set explicitly with [`Function::add_tag`] stay.
    pub fn set_provenance_enabled(&mut self, on: bool) {
        self.provenance_enabled = on;
    }

    /// Makes `members` members of `root`'s provenance group: every tag later added to `root`
    /// is added to them too (and to the members of their own groups). `root` itself and
    /// duplicates are ignored.
    ///
    /// A builder that returns one node for a subgraph (a decomposed framework op) makes the
    /// subgraph's nodes members of the root's group; a tag later set on the root with
    /// [`Function::add_tag`] or [`Function::add_tags`] then reaches every member. Groups are
    /// a build-time aid: they are not saved by [`Function::to_json`], and members that are
    /// removed are skipped.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if `root` or a member does not exist.
    pub fn add_provenance_group_members(
        &mut self,
        root: NodeId,
        members: &[NodeId],
    ) -> Result<(), IrError> {
        self.node(root)?;
        for &m in members {
            self.node(m)?;
        }
        let group = self.groups.entry(root).or_default();
        for &m in members {
            if m != root && !group.contains(&m) {
                group.push(m);
            }
        }
        Ok(())
    }

    /// Makes every node between `root` and `base` members of `root`'s group: the nodes
    /// reached backwards from `root` over data inputs, stopping at the producers of `base`
    /// (not included) and at parameters. Returns the members added, nearest first.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if `root` does not exist.
    pub fn add_provenance_group_members_above(
        &mut self,
        root: NodeId,
        base: &[Output],
    ) -> Result<Vec<NodeId>, IrError> {
        let members = self.nodes_above(root, base)?;
        self.add_provenance_group_members(root, &members)?;
        Ok(members)
    }

    /// The members of `root`'s provenance group, in the order they were added (empty when
    /// it has none).
    pub fn provenance_group(&self, root: NodeId) -> &[NodeId] {
        self.groups.get(&root).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Adds `tags` to `root` and to every node above it up to `base` (nGraph's
    /// `add_provenance_tags_above`): the nodes reached backwards over data inputs, stopping
    /// at the producers of `base` (not tagged) and at parameters.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if `root` does not exist.
    pub fn add_provenance_tags_above(
        &mut self,
        root: NodeId,
        base: &[Output],
        tags: &ProvenanceTags,
    ) -> Result<(), IrError> {
        let above = self.nodes_above(root, base)?;
        self.add_tags(root, tags)?;
        for id in above {
            self.add_tags(id, tags)?;
        }
        Ok(())
    }

    /// Nodes reached backwards from `root` (excluded) over data inputs, stopping at the
    /// producers of `base` and at parameters, nearest first.
    fn nodes_above(&self, root: NodeId, base: &[Output]) -> Result<Vec<NodeId>, IrError> {
        let stop: HashSet<NodeId> = base.iter().map(|o| o.node).collect();
        let mut seen = HashSet::from([root]);
        let mut out = Vec::new();
        let mut queue: std::collections::VecDeque<NodeId> =
            self.node(root)?.inputs.iter().map(|o| o.node).collect();
        while let Some(id) = queue.pop_front() {
            if stop.contains(&id) || !seen.insert(id) {
                continue;
            }
            let Some(n) = self.get(id) else { continue };
            if matches!(n.op, Op::Parameter) {
                continue;
            }
            out.push(id);
            queue.extend(n.inputs.iter().map(|o| o.node));
        }
        Ok(out)
    }

    /// Adds `tags` to every member of `root`'s group, and of their groups, transitively.
    pub(super) fn tag_group(&mut self, root: NodeId, tags: &ProvenanceTags) {
        if self.groups.is_empty() {
            return;
        }
        let mut seen = HashSet::from([root]);
        let mut stack: Vec<NodeId> = self.provenance_group(root).to_vec();
        while let Some(m) = stack.pop() {
            if !seen.insert(m) {
                continue;
            }
            if let Some(Some(n)) = self.nodes.get_mut(m.index()) {
                Arc::make_mut(n).tags.union_with(tags);
            }
            stack.extend(self.provenance_group(m).iter().copied());
        }
    }
}
