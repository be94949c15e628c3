//! `graphlift bench --profile N`: where a call's time goes, by op type, from the execution
//! trace of `N` calls (each step's wall time as the tracer records it), and the time
//! between steps.

use std::collections::HashMap;
use std::fmt::Write as _;

use graphlift::runtime::trace::{StepKind, Trace};

/// Time spent in one kind of step, summed over the traced calls.
#[derive(Debug, Clone, PartialEq)]
pub struct OpTime {
    /// Op type (`MatMul`, `FusedKernel`, ...), with ` (JIT)` for fused kernels.
    pub op: String,
    /// Steps of this op per call.
    pub steps: usize,
    /// Mean time per call in ms.
    pub ms_per_call: f64,
    /// Share of the summed step time, in percent.
    pub share: f64,
}

/// The per-op-type table of `trace`, largest first; steps of every recorded call are summed
/// and divided by `calls`, the model calls traced (an executable that runs its batch sample
/// by sample records a call per sample). Empty for an empty trace.
pub fn by_op(trace: &Trace, calls: usize) -> Vec<OpTime> {
    if calls == 0 || trace.calls.is_empty() {
        return Vec::new();
    }
    let mut sums: HashMap<String, (usize, u64)> = HashMap::new();
    for call in &trace.calls {
        for r in &call.records {
            let Some(t) = &r.timing else { continue };
            let op = match r.kind {
                StepKind::JitKernel => format!("{} (JIT)", r.op.type_name()),
                _ => r.op.type_name().to_string(),
            };
            let e = sums.entry(op).or_default();
            e.0 += 1;
            e.1 += t.duration_ns;
        }
    }
    let total: u64 = sums.values().map(|(_, ns)| ns).sum::<u64>().max(1);
    let mut rows: Vec<OpTime> = sums
        .into_iter()
        .map(|(op, (n, ns))| OpTime {
            op,
            steps: n / calls,
            ms_per_call: ns as f64 / calls as f64 / 1e6,
            share: 100.0 * ns as f64 / total as f64,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.ms_per_call
            .total_cmp(&a.ms_per_call)
            .then(a.op.cmp(&b.op))
    });
    rows
}

/// The `n` steps that took longest, as (node name, op type, mean ms per model call of the
/// `calls` traced), longest first.
pub fn slowest_steps(trace: &Trace, calls: usize, n: usize) -> Vec<(String, String, f64)> {
    let mut sums: HashMap<(String, String), u64> = HashMap::new();
    for call in &trace.calls {
        for r in &call.records {
            if let Some(t) = &r.timing {
                *sums
                    .entry((r.name.clone(), r.op.type_name().to_string()))
                    .or_default() += t.duration_ns;
            }
        }
    }
    let mut steps: Vec<(String, String, f64)> = sums
        .into_iter()
        .map(|((name, op), ns)| (name, op, ns as f64 / calls.max(1) as f64 / 1e6))
        .collect();
    steps.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    steps.truncate(n);
    steps
}

/// The time a call spends between its steps: from the end of one step to the start of the
/// next (buffers, dispatch, and a little of the tracer's own bookkeeping), so serial gaps
/// between parallel steps show beside the steps.
#[derive(Debug, Clone, PartialEq)]
pub struct Gaps {
    /// Mean time between steps per call, in ms.
    pub ms_per_call: f64,
    /// The longest single gap of any call, in ms, and the step it followed.
    pub longest: Option<(f64, String)>,
}

/// The gaps between the steps of `trace`'s calls (see [`Gaps`]), per model call of the
/// `calls` traced; zero for an empty trace.
pub fn gaps(trace: &Trace, calls: usize) -> Gaps {
    let mut total = 0u64;
    let mut longest: Option<(u64, &str)> = None;
    for call in &trace.calls {
        let timed: Vec<_> = call
            .records
            .iter()
            .filter_map(|r| r.timing.as_ref().map(|t| (r.name.as_str(), t)))
            .collect();
        for pair in timed.windows(2) {
            let ((name, a), (_, b)) = (pair[0], pair[1]);
            let gap = b.start_ns.saturating_sub(a.start_ns + a.duration_ns);
            total += gap;
            if longest.is_none_or(|(g, _)| gap > g) {
                longest = Some((gap, name));
            }
        }
    }
    Gaps {
        ms_per_call: total as f64 / calls.max(1) as f64 / 1e6,
        longest: longest.map(|(g, name)| (g as f64 / 1e6, name.to_string())),
    }
}

/// The table as text: one line per op type, then the total, then the time between steps
/// (`gaps`).
pub fn report(rows: &[OpTime], calls: usize, gaps: &Gaps) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "profile: step time by op over {calls} traced call(s)");
    let _ = writeln!(
        s,
        "  {:<24} {:>6} {:>12} {:>7}",
        "op", "steps", "ms/call", "share"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "  {:<24} {:>6} {:>12.4} {:>6.1}%",
            r.op, r.steps, r.ms_per_call, r.share
        );
    }
    let total: f64 = rows.iter().map(|r| r.ms_per_call).sum();
    let _ = writeln!(s, "  {:<24} {:>6} {:>12.4}", "total", "", total);
    let longest = gaps.longest.as_ref().map_or(String::new(), |(ms, after)| {
        format!(" (longest {ms:.4} ms, after {after})")
    });
    let _ = writeln!(
        s,
        "  {:<24} {:>6} {:>12.4}{longest}",
        "between steps", "", gaps.ms_per_call
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift::runtime::trace::Tracer;
    use graphlift::{Backend, ElementType::F32, FunctionBuilder, Tensor};

    #[test]
    fn sums_steps_by_op_type_over_calls() {
        let b = FunctionBuilder::new("p");
        let x = b.parameter("x", F32, [2, 3]);
        let w = b.parameter("w", F32, [3, 4]);
        let y = b.op(graphlift::Op::MatMul, &[x, w]);
        let out = (y + y.scalar_like(1.0)).relu();
        let f = b.finish(&[out]).unwrap();
        let exe = Backend::create("CPU-JIT").unwrap().compile(&f).unwrap();
        let ins = [
            Tensor::from_vec(vec![1f32; 6], [2, 3]).unwrap(),
            Tensor::from_vec(vec![0.5f32; 12], [3, 4]).unwrap(),
        ];
        let tracer = Tracer::start();
        for _ in 0..3 {
            exe.run(&ins).unwrap();
        }
        let trace = tracer.finish();
        let rows = by_op(&trace, 3);
        let ops: Vec<&str> = rows.iter().map(|r| r.op.as_str()).collect();
        assert!(ops.contains(&"MatMul"), "{ops:?}");
        assert!(ops.contains(&"FusedKernel (JIT)"), "{ops:?}");
        assert!(rows.iter().all(|r| r.steps == 1), "{rows:?}");
        let share: f64 = rows.iter().map(|r| r.share).sum();
        assert!((share - 100.0).abs() < 1e-6, "{share}");
        assert!(rows
            .windows(2)
            .all(|w| w[0].ms_per_call >= w[1].ms_per_call));
        let slow = slowest_steps(&trace, 3, 1);
        assert_eq!(slow.len(), 1);
        assert!(slow[0].2 >= slowest_steps(&trace, 3, 5).last().unwrap().2);
        let g = gaps(&trace, 3);
        let text = report(&rows, 3, &g);
        assert!(text.contains("MatMul") && text.contains("total"), "{text}");
        assert!(text.contains("between steps"), "{text}");
        assert!(by_op(&Trace::default(), 3).is_empty());
        // Two steps a call: one gap each, from the recorded starts and ends.
        let mut want = 0u64;
        for call in &trace.calls {
            let t: Vec<_> = call.records.iter().filter_map(|r| r.timing).collect();
            assert_eq!(t.len(), 2);
            want += t[1].start_ns - (t[0].start_ns + t[0].duration_ns);
        }
        assert!(
            (g.ms_per_call - want as f64 / 3.0 / 1e6).abs() < 1e-12,
            "{g:?}"
        );
        assert!(g.longest.is_some());
        assert_eq!(gaps(&Trace::default(), 3).ms_per_call, 0.0);
    }
}
