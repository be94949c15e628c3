//! A bounded map, least recently used first out: the caches of specialised control-flow
//! bodies and of an ONNX session's specialisations.

use std::collections::HashMap;

/// A bounded map, least recently used first out (a hit makes an entry the most recent).
#[derive(Debug)]
pub struct Lru<V> {
    capacity: usize,
    clock: u64,
    entries: HashMap<Vec<u64>, (u64, V)>,
    evictions: usize,
}

impl<V> Lru<V> {
    /// An empty cache of at most `capacity` entries (0: keeps nothing).
    pub fn new(capacity: usize) -> Lru<V> {
        Lru {
            capacity,
            clock: 0,
            entries: HashMap::new(),
            evictions: 0,
        }
    }

    /// The entry of `key`, made the most recently used.
    pub fn get(&mut self, key: &[u64]) -> Option<&V> {
        self.clock += 1;
        let now = self.clock;
        self.entries.get_mut(key).map(|e| {
            e.0 = now;
            &e.1
        })
    }

    /// Inserts `value` under `key`, evicting the least recently used entry when full.
    pub fn insert(&mut self, key: Vec<u64>, value: V) {
        if self.capacity == 0 {
            return;
        }
        self.clock += 1;
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            if let Some(old) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.0)
                .map(|(k, _)| k.clone())
            {
                self.entries.remove(&old);
                self.evictions += 1;
            }
        }
        self.entries.insert(key, (self.clock, value));
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries evicted so far.
    pub fn evictions(&self) -> usize {
        self.evictions
    }

    /// The most entries it holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}
