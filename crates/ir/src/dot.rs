//! Graphviz DOT export of a [`Function`] ([`Function::to_dot`]), for looking at graphs and
//! at what fusion made of them.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use crate::{Function, Node, NodeId, Op};

impl Function {
    /// The function as a Graphviz DOT digraph. Never fails: a dangling reference in an
    /// invalid function is drawn as an edge to a bare DOT node.
    ///
    /// One DOT node per IR node, labelled with its name, op and output type(s). Data edges
    /// go from producer to user and are labelled with the output index when it is not 0;
    /// control dependencies (`other_deps`) are dashed grey edges from the dependency to the
    /// dependent. Parameters are drawn as blue `invhouse` shapes, Results as green `house`
    /// shapes, Constants as yellow rounded boxes. Every fused kernel is drawn as a cluster
    /// (`subgraph "cluster_<name>"`) holding its body's nodes, labelled with the kernel's
    /// name and op count; the outer producers of its live-ins point at the body's
    /// Parameters, and the body's Results point at the kernel's outer users. Kernels nested
    /// in a body become nested clusters.
    ///
    /// State: a Variable is an orange `cylinder`; its initializer is a cluster
    /// (`"cluster_<name>/initializer"`, drawn like a kernel body) whose Result points at the
    /// variable over a dotted edge labelled `init`. Assigns are red boxes, and the edge
    /// between an Assign and the variable it writes is bold red, labelled `writes`, with its
    /// arrowhead at the variable (`dir=back`, so the layout still ranks the variable above
    /// its users). Sinks ([`crate::Function::sinks`]) have a double border and a `(sink)`
    /// line in their label.
    ///
    /// Names come from user files, so every string is written as a quoted DOT string with
    /// `"` and `\` escaped; a newline becomes DOT's `\n` line break and other control
    /// characters are shown as `\xNN`. DOT node identifiers are generated (`n3`, `n3_0`,
    /// ...), never names. Render with e.g. `dot -Tsvg graph.dot -o graph.svg`.
    ///
    /// ```
    /// use graphlift_ir::{ElementType::F32, FunctionBuilder};
    /// let b = FunctionBuilder::new("f");
    /// let x = b.parameter("x", F32, [4]);
    /// let f = b.finish(&[x.relu().named("act")]).unwrap();
    /// let dot = f.to_dot();
    /// assert!(dot.starts_with("digraph \"f\" {"));
    /// assert!(dot.contains("label=\"act\\nRelu\\nf32[4]\""));
    /// ```
    pub fn to_dot(&self) -> String {
        let mut w = DotWriter {
            out: String::new(),
            clusters: HashSet::new(),
        };
        w.line(0, &format!("digraph {} {{", quote(self.name())));
        w.line(1, "compound=true;");
        w.line(1, &format!("label={}; labelloc=t;", quote(self.name())));
        w.line(1, "node [shape=box, fontname=\"Helvetica\", fontsize=10];");
        w.line(1, "edge [fontname=\"Helvetica\", fontsize=9];");
        w.function(self, "n", 1, "", false);
        w.line(0, "}");
        w.out
    }
}

/// Writes DOT text; `clusters` keeps cluster names unique across nesting levels.
struct DotWriter {
    out: String,
    clusters: HashSet<String>,
}

impl DotWriter {
    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// Writes `f`'s nodes (kernels as clusters, each Variable followed by its initializer's
    /// cluster) and then its edges. DOT ids are `prefix` + node index; `path` qualifies
    /// cluster names of nested kernels and initializers; `in_body` marks the Parameters and
    /// Results of a kernel body or initializer (drawn dashed: they are live-ins and kernel
    /// outputs, not function inputs and outputs).
    fn function(&mut self, f: &Function, prefix: &str, indent: usize, path: &str, in_body: bool) {
        let mut cluster_of: HashMap<NodeId, String> = HashMap::new();
        for n in f.nodes() {
            if let Op::FusedKernel(k) = n.op() {
                let cluster = self.cluster(
                    &k.body,
                    &format!("{path}{}", n.name()),
                    &format!("{}\n{}", n.name(), n.op()),
                    &dot_id(prefix, n.id()),
                    indent,
                );
                cluster_of.insert(n.id(), cluster);
                continue;
            }
            let id = dot_id(prefix, n.id());
            let sink = f.sinks().contains(&n.id());
            self.line(
                indent,
                &format!(
                    "{id} [label={}{}];",
                    quote(&node_label(n, sink)),
                    node_attrs(n, in_body, sink)
                ),
            );
            if let Op::Variable(v) = n.op() {
                self.cluster(
                    &v.initializer,
                    &format!("{path}{}/initializer", n.name()),
                    &format!("{} initializer", n.name()),
                    &id,
                    indent,
                );
                if let Some(&r) = v.initializer.results().first() {
                    let init = dot_id(&format!("{id}_"), r);
                    self.line(
                        indent,
                        &format!("{init} -> {id} [style=dotted, label=\"init\"];"),
                    );
                }
            }
        }
        for n in f.nodes() {
            for (slot, o) in n.inputs().iter().enumerate() {
                let src = source(f, prefix, o.node, o.index);
                let dst = target(f, prefix, n.id(), slot);
                let mut attrs = Vec::new();
                if o.index > 0 {
                    attrs.push(format!("label=\"{}\"", o.index));
                }
                if slot == 0 && matches!(n.op(), Op::Assign) {
                    attrs.push(WRITES_EDGE.to_string());
                }
                let attrs = if attrs.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", attrs.join(", "))
                };
                self.line(indent, &format!("{src} -> {dst}{attrs};"));
            }
            for &d in n.other_deps() {
                let mut attrs = vec!["style=dashed".to_string(), "color=\"#8c8c8c\"".to_string()];
                let src = match cluster_of.get(&d) {
                    Some(c) => {
                        attrs.push(format!("ltail={}", quote(c)));
                        source(f, prefix, d, 0)
                    }
                    None => dot_id(prefix, d),
                };
                let dst = match cluster_of.get(&n.id()) {
                    Some(c) => {
                        attrs.push(format!("lhead={}", quote(c)));
                        kernel_entry(f, prefix, n.id())
                    }
                    None => dot_id(prefix, n.id()),
                };
                self.line(indent, &format!("{src} -> {dst} [{}];", attrs.join(", ")));
            }
        }
    }

    /// Writes `body` as a cluster named after `qualified` (a kernel's path, or a
    /// variable's path + `/initializer`) and labelled `title` and its op count; its DOT ids
    /// are `owner` (the DOT id of the node it belongs to) + `_` + body node index. Returns
    /// the cluster's name.
    fn cluster(
        &mut self,
        body: &Function,
        qualified: &str,
        title: &str,
        owner: &str,
        indent: usize,
    ) -> String {
        let cluster = self.cluster_name(qualified);
        let ops = body
            .nodes()
            .filter(|b| !matches!(b.op(), Op::Parameter | Op::Result))
            .count();
        self.line(indent, &format!("subgraph {} {{", quote(&cluster)));
        let plural = if ops == 1 { "" } else { "s" };
        let label = format!("{title} ({ops} op{plural})");
        self.line(indent + 1, &format!("label={};", quote(&label)));
        self.line(
            indent + 1,
            "style=\"rounded,filled\"; fillcolor=\"#f4f4f4\"; color=\"#7a7a7a\";",
        );
        self.function(
            body,
            &format!("{owner}_"),
            indent + 1,
            &format!("{qualified}/"),
            true,
        );
        self.line(indent, "}");
        cluster
    }

    /// `cluster_<name>`, suffixed when a cluster of that name exists already.
    fn cluster_name(&mut self, qualified: &str) -> String {
        let base = format!("cluster_{qualified}");
        let mut name = base.clone();
        let mut k = 2;
        while !self.clusters.insert(name.clone()) {
            name = format!("{base}#{k}");
            k += 1;
        }
        name
    }
}

fn dot_id(prefix: &str, id: NodeId) -> String {
    format!("{prefix}{}", id.index())
}

/// The kernel body of node `id`, if it is a fused kernel.
fn body_of(f: &Function, id: NodeId) -> Option<&Function> {
    match f.get(id).map(Node::op) {
        Some(Op::FusedKernel(k)) => Some(&k.body),
        _ => None,
    }
}

/// The DOT node that output `index` of node `id` comes from: a kernel's is its body's
/// Result `index`.
fn source(f: &Function, prefix: &str, id: NodeId, index: usize) -> String {
    match body_of(f, id).and_then(|b| b.results().get(index)) {
        Some(&r) => dot_id(&format!("{}_", dot_id(prefix, id)), r),
        None => dot_id(prefix, id),
    }
}

/// The DOT node that input `slot` of node `id` goes to: a kernel's is its body's
/// Parameter `slot`.
fn target(f: &Function, prefix: &str, id: NodeId, slot: usize) -> String {
    match body_of(f, id).and_then(|b| b.parameters().get(slot)) {
        Some(&p) => dot_id(&format!("{}_", dot_id(prefix, id)), p),
        None => dot_id(prefix, id),
    }
}

/// A DOT node inside kernel `id`'s cluster for an edge that ends at the cluster.
fn kernel_entry(f: &Function, prefix: &str, id: NodeId) -> String {
    let first = body_of(f, id).and_then(|b| {
        b.parameters()
            .first()
            .or_else(|| b.results().first())
            .copied()
    });
    match first {
        Some(b) => dot_id(&format!("{}_", dot_id(prefix, id)), b),
        None => dot_id(prefix, id),
    }
}

/// The attributes of the edge from a variable to an Assign of it: the Assign writes it.
const WRITES_EDGE: &str = "label=\"writes\", color=\"#c0392b\", fontcolor=\"#c0392b\", \
                           style=bold, dir=back";

/// Name, op and output type(s), one per line, and `(sink)` for a sink.
fn node_label(n: &Node, sink: bool) -> String {
    let types = n
        .outputs()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let sink = if sink { "\n(sink)" } else { "" };
    format!("{}\n{}\n{types}{sink}", n.name(), n.op())
}

/// The attributes after the label: the op's shape and colours, and a double border for a
/// sink.
fn node_attrs(n: &Node, in_body: bool, sink: bool) -> String {
    let style = match (n.op(), in_body) {
        (Op::Parameter, false) => ", shape=invhouse, style=filled, fillcolor=\"#cfe2ff\"",
        (Op::Parameter, true) => ", shape=invhouse, style=\"filled,dashed\", fillcolor=\"#cfe2ff\"",
        (Op::Result, false) => ", shape=house, style=filled, fillcolor=\"#d1e7dd\"",
        (Op::Result, true) => ", shape=house, style=\"filled,dashed\", fillcolor=\"#d1e7dd\"",
        (Op::Constant(_), _) => ", style=\"filled,rounded\", fillcolor=\"#fff3cd\"",
        (Op::Variable(_), _) => ", shape=cylinder, style=filled, fillcolor=\"#ffd8a8\"",
        (Op::Assign, _) => ", style=filled, fillcolor=\"#f8d7da\", color=\"#c0392b\"",
        _ => "",
    };
    let border = if sink { ", peripheries=2" } else { "" };
    format!("{style}{border}")
}

/// `s` as a quoted DOT string: `"` and `\` escaped, a newline as DOT's `\n` line break,
/// other control characters shown as `\xNN`.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c if c.is_control() => {
                // `write!` to a String cannot fail.
                let _ = write!(q, "\\\\x{:02x}", u32::from(c));
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quoting() {
        assert_eq!(quote("plain"), "\"plain\"");
        assert_eq!(quote("a\"b"), r#""a\"b""#);
        assert_eq!(quote("back\\"), r#""back\\""#);
        assert_eq!(quote("two\nlines"), r#""two\nlines""#);
        assert_eq!(quote("tab\there\r"), r#""tab\\x09here\\x0d""#);
        assert_eq!(quote("é∑"), "\"é∑\"");
    }
}
