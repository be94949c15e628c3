//! Provenance tags (nGraph): an ordered set of strings on each node naming the framework ops
//! it came from.

use indexmap::IndexSet;

/// An ordered set of provenance tags: insertion order is kept, duplicates are dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProvenanceTags(IndexSet<String>);

impl ProvenanceTags {
    /// An empty set.
    pub fn new() -> ProvenanceTags {
        ProvenanceTags::default()
    }
    /// Adds a tag; returns `false` if it was present.
    pub fn insert(&mut self, tag: impl Into<String>) -> bool {
        self.0.insert(tag.into())
    }
    /// Adds every tag of `other` not yet present, in `other`'s order.
    pub fn union_with(&mut self, other: &ProvenanceTags) {
        for t in &other.0 {
            if !self.0.contains(t) {
                self.0.insert(t.clone());
            }
        }
    }
    /// Whether `tag` is present.
    pub fn contains(&self, tag: &str) -> bool {
        self.0.contains(tag)
    }
    /// Number of tags.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// `true` when there are no tags.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Tags in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

impl<S: Into<String>> FromIterator<S> for ProvenanceTags {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        ProvenanceTags(iter.into_iter().map(Into::into).collect())
    }
}
