//! Folds an inference batch normalisation into the convolution before it.

use std::collections::BTreeSet;
use std::sync::Arc;

use graphlift_ir::{BinaryOp, Function, NodeId, Op, Output, Shape, TensorData};

use crate::rewrite::{record_pass_once, replace_by_value, rewrite_on_copy};
use crate::{Pass, PassError};

/// Rewrites `BatchNormInference(Convolution(x, W), scale, bias, mean, variance)` into
/// `Convolution(x, W') + b'` (a per-channel bias broadcast over the output), where for each
/// output channel `m`
///
/// ```text
/// s[m]  = scale[m] / sqrt(variance[m] + epsilon)
/// W'[m] = W[m] * s[m]
/// b'[m] = bias[m] - mean[m] * s[m]
/// ```
///
/// computed in `f64` and rounded once to the element type. This is the standard inference
/// rewrite (onnxruntime's `ConvBNFusion`, TVM's `FoldScaleAxis`): it saves a pass over the
/// convolution's output and leaves the bias `Add` to be fused with what follows. It is not
/// bit-exact: `x·(W·s)` rounds differently from `(x·W)·s`, by a few ulp of each product.
///
/// Applies when `W` and the four statistics are Constants, the convolution's only user is
/// the batch normalisation, and neither node has control dependencies. Provenance: the new
/// `Add` takes the batch normalisation's tags by nGraph's rule, then the tags of the
/// convolution and the constants it replaces; the new Convolution, Constants and Broadcast
/// take the union of both nodes' tags; every new node records [`BatchNormFolding::NAME`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchNormFolding;

impl BatchNormFolding {
    /// The pass's name, recorded in the pass history of every node it creates.
    pub const NAME: &'static str = "batch_norm_folding";
}

impl Pass for BatchNormFolding {
    fn name(&self) -> &'static str {
        BatchNormFolding::NAME
    }

    /// Folds every batch normalisation that follows a convolution as described above;
    /// `true` when one was folded.
    ///
    /// # Errors
    /// [`PassError::Ir`] if `f` does not validate; `f` is then unchanged.
    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        rewrite_on_copy(f, BatchNormFolding::NAME, any_match, fold_all)
    }
}

/// A Constant's data, if `o` is produced by one.
fn constant(g: &Function, o: Output) -> Option<Arc<TensorData>> {
    match g.node(o.node).ok()?.op() {
        Op::Constant(d) => Some(Arc::clone(d)),
        _ => None,
    }
}

/// The f64 values of a float Constant.
fn floats(d: &TensorData) -> Option<Vec<f64>> {
    match d {
        TensorData::F32(v) => Some(v.iter().map(|&x| f64::from(x)).collect()),
        TensorData::F64(v) => Some(v.clone()),
        _ => None,
    }
}

/// `values` in the element type of `like`.
fn like(like: &TensorData, values: Vec<f64>) -> TensorData {
    match like {
        TensorData::F32(_) => TensorData::F32(values.into_iter().map(|x| x as f32).collect()),
        _ => TensorData::F64(values),
    }
}

/// The filter `W'` and per-channel bias `b'` of `BatchNormInference(Convolution(x, W),
/// scale, bias, mean, variance)` folded as [`BatchNormFolding`] describes: `filter` is
/// `[M, C / groups, K..]` and the statistics `[M]`, all `f32` or all `f64` (the
/// filter's type); computed in `f64`, rounded once. `None` when they are not floats or
/// their lengths do not fit `M` output channels.
pub(crate) fn fold(
    filter: &TensorData,
    [scale, bias, mean, variance]: [&TensorData; 4],
    epsilon: f64,
) -> Option<(TensorData, TensorData)> {
    let w = floats(filter)?;
    let stats = [scale, bias, mean, variance].map(floats);
    let [Some(scale), Some(bias), Some(mean), Some(var)] = stats else {
        return None;
    };
    let m = scale.len();
    if m == 0 || w.len() % m != 0 || [&bias, &mean, &var].iter().any(|v| v.len() != m) {
        return None;
    }
    let per = w.len() / m;
    let s: Vec<f64> = (0..m)
        .map(|c| scale[c] / (var[c] + epsilon).sqrt())
        .collect();
    let folded: Vec<f64> = w.iter().enumerate().map(|(i, &v)| v * s[i / per]).collect();
    let b: Vec<f64> = (0..m).map(|c| bias[c] - mean[c] * s[c]).collect();
    Some((like(filter, folded), like(filter, b)))
}

/// The folded filter and bias of one match, or `None` when the pattern does not apply.
struct Match {
    conv: NodeId,
    x: Output,
    filter: TensorData,
    filter_shape: Shape,
    bias: TensorData,
    bypassed: Vec<NodeId>,
}

/// Whether some batch normalisation reads a convolution (a cheap look: the rest of the
/// pattern, and the folded filter and bias, are left to [`match_at`]).
fn any_match(g: &Function) -> Result<bool, PassError> {
    for n in g.nodes() {
        if matches!(n.op(), Op::BatchNormInference(_))
            && matches!(g.node(n.inputs()[0].node)?.op(), Op::Convolution(_))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

fn match_at(g: &Function, bn: NodeId) -> Option<Match> {
    let node = g.node(bn).ok()?;
    let Op::BatchNormInference(epsilon) = node.op() else {
        return None;
    };
    let conv_out = node.inputs()[0];
    let conv = g.node(conv_out.node).ok()?;
    if !matches!(conv.op(), Op::Convolution(_))
        || conv.users(0).len() != 1
        || !conv.other_deps().is_empty()
        || !node.other_deps().is_empty()
    {
        return None;
    }
    let w_out = conv.inputs()[1];
    let w_data = constant(g, w_out)?;
    let stats: Vec<Arc<TensorData>> = node.inputs()[1..]
        .iter()
        .map(|&o| constant(g, o))
        .collect::<Option<_>>()?;
    let (filter, bias) = fold(
        &w_data,
        [&stats[0], &stats[1], &stats[2], &stats[3]],
        *epsilon,
    )?;
    let mut bypassed = vec![conv_out.node, w_out.node];
    bypassed.extend(node.inputs()[1..].iter().map(|o| o.node));
    Some(Match {
        conv: conv_out.node,
        x: conv.inputs()[0],
        filter,
        filter_shape: g.output_type(w_out).ok()?.shape.clone(),
        bias,
        bypassed,
    })
}

fn fold_all(g: &mut Function) -> Result<bool, PassError> {
    let candidates: Vec<NodeId> = g
        .nodes()
        .filter(|n| matches!(n.op(), Op::BatchNormInference(_)))
        .map(|n| n.id())
        .collect();
    let mut touched = BTreeSet::new();
    for bn in candidates {
        let Some(m) = match_at(g, bn) else { continue };
        let (site, tags, out_type) = {
            let node = g.node(bn)?;
            let mut tags = node.tags().clone();
            tags.union_with(g.node(m.conv)?.tags());
            (
                node.creation_site().clone(),
                tags,
                node.output_type().clone(),
            )
        };
        let conv_op = g.node(m.conv)?.op().clone();
        let channels = m.bias.len();
        let mut per_channel = vec![1; out_type.shape.rank()];
        per_channel[1] = channels;
        let w = g.add_constant_at(m.filter, m.filter_shape, site.clone())?;
        let conv = g.add_node_at(conv_op, &[m.x, w.into()], site.clone())?;
        let b = g.add_constant_at(m.bias, Shape::new(per_channel), site.clone())?;
        let bb = g.add_node_at(
            Op::Broadcast(out_type.shape.clone()),
            &[b.into()],
            site.clone(),
        )?;
        let add = g.add_node_at(
            Op::Binary(BinaryOp::Add),
            &[conv.into(), bb.into()],
            site.clone(),
        )?;
        for id in [w, conv, b, bb] {
            g.add_tags(id, &tags)?;
            touched.insert(id);
        }
        replace_by_value(g, bn, add.into(), &m.bypassed, BatchNormFolding::NAME)?;
        touched.insert(add);
    }
    if touched.is_empty() {
        return Ok(false);
    }
    record_pass_once(g, &touched, BatchNormFolding::NAME)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_ir::{Convolution, ElementType, Window};
    use graphlift_runtime::reference::evaluate_function;
    use graphlift_runtime::Tensor;

    fn build(shared_conv: bool) -> Function {
        let mut f = Function::new("conv_bn");
        let x = f
            .add_parameter("x", ElementType::F32, Shape::new([1, 2, 4, 4]))
            .unwrap();
        let w = f
            .add_constant(
                TensorData::F32((0..36).map(|i| i as f32 / 10.0 - 1.0).collect()),
                Shape::new([2, 2, 3, 3]),
            )
            .unwrap();
        let window = Window {
            shape: vec![3, 3],
            strides: vec![1, 1],
            dilations: vec![1, 1],
            pads_begin: vec![1, 1],
            pads_end: vec![1, 1],
        };
        let conv = f
            .add_node(
                Op::Convolution(Convolution { window, groups: 1 }),
                &[x.into(), w.into()],
            )
            .unwrap();
        f.add_tag(conv, "onnx:Conv:c").unwrap();
        let p = |f: &mut Function, v: [f32; 2]| {
            f.add_constant(TensorData::F32(v.to_vec()), Shape::new([2]))
                .unwrap()
        };
        let (s, b, m, v) = (
            p(&mut f, [1.5, -0.5]),
            p(&mut f, [0.25, 2.0]),
            p(&mut f, [0.1, -3.0]),
            p(&mut f, [4.0, 0.5]),
        );
        let bn = f
            .add_node(
                Op::BatchNormInference(1e-5),
                &[conv.into(), s.into(), b.into(), m.into(), v.into()],
            )
            .unwrap();
        f.add_tag(bn, "onnx:BatchNormalization:bn").unwrap();
        f.add_result(bn.into(), None).unwrap();
        if shared_conv {
            f.add_result(conv.into(), None).unwrap();
        }
        f
    }

    fn run(f: &Function) -> Vec<f32> {
        let x = Tensor::from_data(
            TensorData::F32((0..32).map(|i| ((i * 7) % 11) as f32 - 5.0).collect()),
            Shape::new([1, 2, 4, 4]),
        )
        .unwrap();
        match evaluate_function(f, &[x]).unwrap()[0].data() {
            TensorData::F32(v) => v.clone(),
            _ => panic!("f32"),
        }
    }

    #[test]
    fn folds_into_the_convolution_and_keeps_the_values() {
        let mut f = build(false);
        let before = run(&f);
        assert!(BatchNormFolding.run(&mut f).unwrap());
        assert!(!f
            .nodes()
            .any(|n| matches!(n.op(), Op::BatchNormInference(_))));
        let after = run(&f);
        for (a, b) in before.iter().zip(&after) {
            assert!((a - b).abs() <= 1e-5 * (1.0 + a.abs()), "{a} vs {b}");
        }
        let add = f
            .nodes()
            .find(|n| n.op() == &Op::Binary(BinaryOp::Add))
            .unwrap();
        assert!(add.tags().contains("onnx:BatchNormalization:bn"));
        assert!(add.tags().contains("onnx:Conv:c"));
        assert!(add
            .pass_history()
            .iter()
            .any(|p| p == BatchNormFolding::NAME));
        assert!(
            !BatchNormFolding.run(&mut f).unwrap(),
            "nothing left to fold"
        );
    }

    #[test]
    fn leaves_a_convolution_with_other_users() {
        let mut f = build(true);
        assert!(!BatchNormFolding.run(&mut f).unwrap());
    }

    /// A filter read from a variable is not a constant, whatever its initializer: the
    /// convolution and the batch normalisation stay (and compute the same over calls that
    /// halve the filter).
    #[test]
    fn leaves_a_filter_read_from_a_variable() {
        let mut f = build(false);
        let conv = f
            .nodes()
            .find(|n| matches!(n.op(), Op::Convolution(_)))
            .unwrap();
        let (conv, w) = (conv.id(), conv.inputs()[1]);
        let mut init = Function::new("w_initializer");
        let c = init.import_node_from(&f, w.node, &[]).unwrap();
        init.add_result(c.into(), None).unwrap();
        let var = f.add_variable("w", init).unwrap();
        let read = f.add_node(Op::ReadVariable, &[var.into()]).unwrap();
        f.replace_input(conv, 1, read.into()).unwrap();
        let half = f
            .add_constant(TensorData::F32(vec![0.5; 36]), Shape::new([2, 2, 3, 3]))
            .unwrap();
        let next = f
            .add_node(Op::Binary(BinaryOp::Multiply), &[read.into(), half.into()])
            .unwrap();
        let assign = f.add_node(Op::Assign, &[var.into(), next.into()]).unwrap();
        f.add_sink(assign).unwrap();
        assert!(!crate::testing::run_checked(&BatchNormFolding, &mut f));
    }
}
