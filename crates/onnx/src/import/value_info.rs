//! Declared value types: the extents and element types a graph declares for its inputs and
//! outputs, symbolic dimensions bound from the inputs, and checks of what the graph computes.

use std::collections::HashMap;

use graphlift_ir::{Shape, TensorType};

use crate::error::{NodeRef, OnnxError};
use crate::proto::{GraphProto, TensorShapeDimension, ValueInfoProto};
use crate::tensor::{data_type_name, element_type, shape_from_dims};

/// The declared extents of a graph input: `Some(n)` for a fixed one, `Err(name)` for a
/// `dim_param`, `Ok(None)` for an unknown one (no value, a negative value as some exporters
/// write for "dynamic", or the anonymous `dim_param` `?`).
pub(super) fn declared_dims(vi: &ValueInfoProto) -> Option<Vec<Result<Option<usize>, String>>> {
    let shape = vi.r#type.as_ref()?.tensor_type.as_ref()?.shape.as_ref()?;
    Some(
        shape
            .dim
            .iter()
            .map(|d| match (d.dim_value, &d.dim_param) {
                (Some(v), _) if v >= 0 => Ok(Some(v as usize)),
                // `?` is the exporters' anonymous placeholder, not a shared name.
                (_, Some(p)) if !p.is_empty() && p != "?" => Err(p.clone()),
                _ => Ok(None),
            })
            .collect(),
    )
}

/// The values of `dim_param`s fixed by the `given` input shapes.
pub(super) fn bind_dim_params(
    graph: &GraphProto,
    given: &HashMap<String, Vec<usize>>,
) -> Result<HashMap<String, usize>, OnnxError> {
    let mut bindings: HashMap<String, (usize, String)> = HashMap::new();
    for vi in &graph.input {
        let (Some(given), Some(declared)) = (given.get(&vi.name), declared_dims(vi)) else {
            continue;
        };
        for (d, &n) in declared.iter().zip(given) {
            if let Err(p) = d {
                match bindings.get(p) {
                    Some((m, other)) if *m != n => {
                        return Err(OnnxError::ShapeMismatch {
                            at: NodeRef::item("graph input", &vi.name),
                            message: format!(
                                "dimension `{p}` is {n} here but {m} in input `{other}`"
                            ),
                        })
                    }
                    _ => {
                        bindings.insert(p.clone(), (n, vi.name.clone()));
                    }
                }
            }
        }
    }
    Ok(bindings.into_iter().map(|(p, (n, _))| (p, n)).collect())
}

/// The static tensor type of a graph input: its declared shape, with symbolic extents taken
/// from `given` (the shape the caller gave for this input) or `bindings`.
pub(super) fn value_type(
    vi: &ValueInfoProto,
    at: &NodeRef,
    given: Option<&[usize]>,
    bindings: &HashMap<String, usize>,
) -> Result<TensorType, OnnxError> {
    let unsupported = |message: &str| OnnxError::UnsupportedType {
        at: at.clone(),
        message: message.to_string(),
    };
    let Some(tp) = &vi.r#type else {
        return Err(unsupported("no type is declared"));
    };
    let Some(tt) = &tp.tensor_type else {
        let kind = if tp.sequence_type.is_some() {
            "sequence"
        } else if tp.map_type.is_some() {
            "map"
        } else if tp.optional_type.is_some() {
            "optional"
        } else if tp.sparse_tensor_type.is_some() {
            "sparse tensor"
        } else if tp.opaque_type.is_some() {
            "opaque"
        } else {
            "no type is declared"
        };
        return Err(unsupported(kind));
    };
    let et = element_type(tt.elem_type, at)?;
    let Some(declared) = declared_dims(vi) else {
        return match given {
            Some(g) => Ok(TensorType::new(et, Shape::new(g))),
            None => Err(unsupported(
                "unknown rank (no shape); give the input's shape (graphlift needs static shapes)",
            )),
        };
    };
    if let Some(g) = given {
        let fits = g.len() == declared.len()
            && declared
                .iter()
                .zip(g)
                .all(|(d, &n)| !matches!(d, Ok(Some(m)) if *m != n));
        if !fits {
            let text: Vec<String> = declared
                .iter()
                .map(|d| match d {
                    Ok(Some(n)) => n.to_string(),
                    Ok(None) => "?".into(),
                    Err(p) => p.clone(),
                })
                .collect();
            return Err(OnnxError::ShapeMismatch {
                at: at.clone(),
                message: format!(
                    "the given shape {g:?} does not fit the declared [{}]",
                    text.join(", ")
                ),
            });
        }
        return Ok(TensorType::new(et, Shape::new(g)));
    }
    let dims = declared
        .iter()
        .enumerate()
        .map(|(axis, d)| match d {
            Ok(Some(n)) => Ok(*n as i64),
            Err(p) => bindings.get(p).map(|&n| n as i64).ok_or_else(|| {
                unsupported(&format!(
                    "symbolic dimension `{p}` on axis {axis}; give the input's shape \
                     (`--shape {}=...`): graphlift needs static shapes",
                    vi.name
                ))
            }),
            Ok(None) => Err(unsupported(&format!(
                "unknown dimension on axis {axis}; give the input's shape (`--shape {}=...`): \
                 graphlift needs static shapes",
                vi.name
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TensorType::new(et, shape_from_dims(&dims, at)?))
}

/// Checks a graph output's declared type (where declared) against the inferred one. A
/// declared shape with a symbolic or unknown extent is the exporter's annotation, not a
/// fact (PyTorch's `dynamic_axes` name output axes by hand: ddddocr's `common.onnx` declares
/// `[1, seqlen]` for a `[32, 1, 8210]` output), so it is not checked, as onnxruntime only
/// warns; a fully static one must match.
pub(super) fn check_declared_type(
    vi: &ValueInfoProto,
    t: &TensorType,
    at: &NodeRef,
) -> Result<(), OnnxError> {
    let Some(tp) = &vi.r#type else { return Ok(()) };
    if tp.tensor_type.is_none()
        && (tp.sequence_type.is_some() || tp.map_type.is_some() || tp.optional_type.is_some())
    {
        return Err(OnnxError::UnsupportedType {
            at: at.clone(),
            message: "a graph output that is not a tensor".into(),
        });
    }
    let Some(tt) = &tp.tensor_type else {
        return Ok(());
    };
    if tt.elem_type != 0 {
        let declared = element_type(tt.elem_type, at)?;
        if declared != t.element_type {
            return Err(OnnxError::TypeMismatch {
                at: at.clone(),
                message: format!(
                    "declared {}, computed {}",
                    data_type_name(tt.elem_type),
                    t.element_type
                ),
            });
        }
    }
    let fixed = |d: &TensorShapeDimension| matches!(d.dim_value, Some(v) if v >= 0);
    if let Some(shape) = tt.shape.as_ref().filter(|s| s.dim.iter().all(fixed)) {
        let dims = t.shape.dims();
        let rank_ok = shape.dim.len() == dims.len();
        let dims_ok = rank_ok
            && shape
                .dim
                .iter()
                .zip(dims)
                .all(|(d, &n)| d.dim_value.and_then(|v| usize::try_from(v).ok()) == Some(n));
        if !dims_ok {
            let declared: Vec<String> = shape
                .dim
                .iter()
                .map(|d| match (d.dim_value, &d.dim_param) {
                    (Some(v), _) => v.to_string(),
                    (None, Some(p)) => p.clone(),
                    (None, None) => "?".into(),
                })
                .collect();
            return Err(OnnxError::ShapeMismatch {
                at: at.clone(),
                message: format!("declared [{}], computed {}", declared.join(", "), t.shape),
            });
        }
    }
    Ok(())
}
