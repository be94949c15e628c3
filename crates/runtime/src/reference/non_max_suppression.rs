//! `NonMaxSuppression` (ONNX opsets 10 and 11, TensorFlow's `non_max_suppression`): per
//! batch and class, the greedy selection of boxes in order of score, each dropped when it
//! overlaps a box already selected by more than an intersection-over-union threshold. Its
//! output length depends on the values, so, like `NonZero`, it runs as a dynamic step
//! between compiled Functions (`graphlift_onnx::Session`), or folds at import when every
//! operand is constant.

use std::cmp::Ordering;

use graphlift_ir::{Shape, TensorData};

/// How a box's four numbers are written (ONNX's `center_point_box` attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoxEncoding {
    /// `[y1, x1, y2, x2]`: two opposite corners, of either diagonal (`center_point_box = 0`,
    /// TensorFlow's form).
    Corners,
    /// `[x_center, y_center, width, height]` (`center_point_box = 1`, PyTorch's form).
    Center,
}

impl BoxEncoding {
    /// The encoding ONNX's `center_point_box` value names.
    ///
    /// # Errors
    /// A message for a value other than 0 or 1.
    pub fn from_center_point_box(v: i64) -> Result<BoxEncoding, String> {
        match v {
            0 => Ok(BoxEncoding::Corners),
            1 => Ok(BoxEncoding::Center),
            _ => Err(format!("center_point_box {v} is neither 0 nor 1")),
        }
    }

    /// The box as `(x_min, y_min, x_max, y_max)`, in `f32` as onnxruntime computes it.
    fn extent(self, b: &[f32]) -> (f32, f32, f32, f32) {
        match self {
            BoxEncoding::Corners => (
                b[1].min(b[3]),
                b[0].min(b[2]),
                b[1].max(b[3]),
                b[0].max(b[2]),
            ),
            BoxEncoding::Center => {
                let (w, h) = (b[2] / 2.0, b[3] / 2.0);
                (b[0] - w, b[1] - h, b[0] + w, b[1] + h)
            }
        }
    }
}

/// The selection's parameters: ONNX's attribute and optional scalar inputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Suppression {
    /// How boxes are written.
    pub encoding: BoxEncoding,
    /// Most boxes selected per batch and class (`max_output_boxes_per_class`; absent or
    /// negative: 0, so nothing is selected).
    pub max_per_class: usize,
    /// A box is dropped when its intersection over union with a selected box is above this
    /// (`iou_threshold`, in `[0, 1]`; absent: 0).
    pub iou_threshold: f32,
    /// Only boxes whose score is above this are candidates (`score_threshold`; absent: every
    /// box is).
    pub score_threshold: Option<f32>,
}

impl Suppression {
    /// The parameters from ONNX's operands: `max_output_boxes_per_class` (INT64),
    /// `iou_threshold` and `score_threshold` (FLOAT), each absent or holding at most one
    /// value (an empty tensor counts as absent), and `center_point_box`.
    ///
    /// # Errors
    /// A message naming the operand for another element type, more than one value, an
    /// `iou_threshold` outside `[0, 1]` (or NaN), or a `center_point_box` other than 0 or 1.
    pub fn from_operands(
        max_output_boxes_per_class: Option<&TensorData>,
        iou_threshold: Option<&TensorData>,
        score_threshold: Option<&TensorData>,
        center_point_box: i64,
    ) -> Result<Suppression, String> {
        let max_per_class = match scalar(max_output_boxes_per_class, "max_output_boxes_per_class")?
        {
            Some(TensorData::I64(v)) => usize::try_from(v[0].max(0)).unwrap_or(usize::MAX),
            Some(other) => return Err(type_error("max_output_boxes_per_class", "INT64", other)),
            None => 0,
        };
        let float = |t: Option<&TensorData>, name: &str| match scalar(t, name)? {
            Some(TensorData::F32(v)) => Ok(Some(v[0])),
            Some(other) => Err(type_error(name, "FLOAT", other)),
            None => Ok(None),
        };
        let iou_threshold = float(iou_threshold, "iou_threshold")?.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&iou_threshold) {
            return Err(format!("iou_threshold {iou_threshold} is not in [0, 1]"));
        }
        Ok(Suppression {
            encoding: BoxEncoding::from_center_point_box(center_point_box)?,
            max_per_class,
            iou_threshold,
            score_threshold: float(score_threshold, "score_threshold")?,
        })
    }
}

/// `t` when it holds exactly one value, `None` when absent or empty.
fn scalar<'a>(t: Option<&'a TensorData>, name: &str) -> Result<Option<&'a TensorData>, String> {
    match t {
        Some(t) if t.len() > 1 => Err(format!("{name} has {} values, not one", t.len())),
        Some(t) if t.len() == 1 => Ok(Some(t)),
        _ => Ok(None),
    }
}

fn type_error(name: &str, want: &str, got: &TensorData) -> String {
    format!("{name} is {}, not {want}", got.element_type())
}

/// The boxes ONNX `NonMaxSuppression` selects: `boxes` FLOAT `[B, N, 4]` and `scores` FLOAT
/// `[B, C, N]` give INT64 `[K, 3]`, rows `(batch, class, box)` by batch, then class, then
/// order of selection.
///
/// For each batch and class, the candidates (every box, or those scoring above
/// `score_threshold`) are taken in order of decreasing score, ties by increasing box index,
/// a NaN score last; a candidate is selected unless its intersection over union with a box
/// already selected for the class is above `iou_threshold`, until `max_per_class` are
/// selected. Boxes of zero or negative area never suppress nor are suppressed. Areas and
/// ratios are computed in `f32` (onnxruntime's arithmetic).
///
/// # Errors
/// A message when the shapes are not `[B, N, 4]` and `[B, C, N]` with the same `B` and `N`,
/// or the data do not fill them.
pub fn non_max_suppression(
    (boxes, boxes_shape): (&[f32], &Shape),
    (scores, scores_shape): (&[f32], &Shape),
    s: &Suppression,
) -> Result<(TensorData, Shape), String> {
    let (&[b, n, four], &[sb, classes, sn]) = (boxes_shape.dims(), scores_shape.dims()) else {
        return Err(format!(
            "boxes {boxes_shape} and scores {scores_shape} must be [B, N, 4] and [B, C, N]"
        ));
    };
    if four != 4 || (sb, sn) != (b, n) {
        return Err(format!(
            "boxes {boxes_shape} and scores {scores_shape} must be [B, N, 4] and [B, C, N]"
        ));
    }
    if boxes.len() != b * n * 4 || scores.len() != b * classes * n {
        return Err(format!(
            "{} boxes values and {} scores for shapes {boxes_shape} and {scores_shape}",
            boxes.len(),
            scores.len()
        ));
    }
    let mut out = Vec::new();
    let mut order = Vec::with_capacity(n);
    let mut selected = Vec::new();
    for batch in 0..b {
        let extents: Vec<_> = boxes[batch * n * 4..(batch + 1) * n * 4]
            .chunks_exact(4)
            .map(|c| s.encoding.extent(c))
            .collect();
        for class in 0..classes {
            let row = &scores[(batch * classes + class) * n..][..n];
            order.clear();
            order.extend((0..n).filter(|&i| s.score_threshold.is_none_or(|t| row[i] > t)));
            // Stable: equal scores keep increasing box indices.
            order.sort_by(|&i, &j| by_score(row[j], row[i]));
            selected.clear();
            for &i in &order {
                if selected.len() >= s.max_per_class {
                    break;
                }
                let kept = selected
                    .iter()
                    .all(|&j: &usize| !overlaps(extents[i], extents[j], s.iou_threshold));
                if kept {
                    selected.push(i);
                    out.extend([batch as i64, class as i64, i as i64]);
                }
            }
        }
    }
    let k = out.len() / 3;
    Ok((TensorData::I64(out), Shape::new([k, 3])))
}

/// `a` against `b` with NaN below every number (and `-0.0` equal to `0.0`).
fn by_score(a: f32, b: f32) -> Ordering {
    let key = |v: f32| if v.is_nan() { f32::NEG_INFINITY } else { v };
    key(a)
        .partial_cmp(&key(b))
        .unwrap_or(Ordering::Equal)
        .then(b.is_nan().cmp(&a.is_nan()))
}

/// Whether two boxes `(x_min, y_min, x_max, y_max)` overlap by more than `threshold`
/// (intersection over union).
fn overlaps(a: (f32, f32, f32, f32), b: (f32, f32, f32, f32), threshold: f32) -> bool {
    let (ix0, iy0) = (a.0.max(b.0), a.1.max(b.1));
    let (ix1, iy1) = (a.2.min(b.2), a.3.min(b.3));
    if ix1 <= ix0 || iy1 <= iy0 {
        return false;
    }
    let inter = (ix1 - ix0) * (iy1 - iy0);
    let area = |r: (f32, f32, f32, f32)| (r.2 - r.0) * (r.3 - r.1);
    let (area_a, area_b) = (area(a), area(b));
    let union = area_a + area_b - inter;
    if inter <= 0.0 || area_a <= 0.0 || area_b <= 0.0 || union <= 0.0 {
        return false;
    }
    inter / union > threshold
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(max: usize, iou: f32, score: Option<f32>, encoding: BoxEncoding) -> Suppression {
        Suppression {
            encoding,
            max_per_class: max,
            iou_threshold: iou,
            score_threshold: score,
        }
    }

    fn run(
        boxes: &[f32],
        scores: &[f32],
        (b, c, n): (usize, usize, usize),
        s: &Suppression,
    ) -> Vec<i64> {
        let (data, shape) = non_max_suppression(
            (boxes, &Shape::new([b, n, 4])),
            (scores, &Shape::new([b, c, n])),
            s,
        )
        .unwrap();
        assert_eq!(shape.dims()[1], 3);
        let TensorData::I64(v) = data else {
            panic!("not INT64")
        };
        v
    }

    /// ONNX's node-test boxes: two clusters of three and one apart, in corner form.
    const CLUSTERS: [f32; 24] = [
        0.0, 0.0, 1.0, 1.0, 0.0, 0.1, 1.0, 1.1, 0.0, -0.1, 1.0, 0.9, //
        0.0, 10.0, 1.0, 11.0, 0.0, 10.1, 1.0, 11.1, 0.0, 100.0, 1.0, 101.0,
    ];
    const SCORES: [f32; 6] = [0.9, 0.75, 0.6, 0.95, 0.5, 0.3];

    #[test]
    fn greedy_selection_by_score_drops_overlapping_boxes() {
        let s = params(3, 0.5, Some(0.0), BoxEncoding::Corners);
        assert_eq!(
            run(&CLUSTERS, &SCORES, (1, 1, 6), &s),
            [0, 0, 3, 0, 0, 0, 0, 0, 5]
        );
        // At most two; then a score threshold that leaves only the first cluster's best.
        let s = params(2, 0.5, None, BoxEncoding::Corners);
        assert_eq!(run(&CLUSTERS, &SCORES, (1, 1, 6), &s), [0, 0, 3, 0, 0, 0]);
        let s = params(3, 0.5, Some(0.92), BoxEncoding::Corners);
        assert_eq!(run(&CLUSTERS, &SCORES, (1, 1, 6), &s), [0, 0, 3]);
    }

    #[test]
    fn flipped_corners_and_center_form_give_the_same_boxes() {
        let flipped: Vec<f32> = CLUSTERS
            .chunks_exact(4)
            .flat_map(|b| [b[2], b[3], b[0], b[1]])
            .collect();
        let center: Vec<f32> = CLUSTERS
            .chunks_exact(4)
            .flat_map(|b| {
                [
                    (b[1] + b[3]) / 2.0,
                    (b[0] + b[2]) / 2.0,
                    b[3] - b[1],
                    b[2] - b[0],
                ]
            })
            .collect();
        let want = [0, 0, 3, 0, 0, 0, 0, 0, 5];
        let s = params(3, 0.5, Some(0.0), BoxEncoding::Corners);
        assert_eq!(run(&flipped, &SCORES, (1, 1, 6), &s), want);
        let s = params(3, 0.5, Some(0.0), BoxEncoding::Center);
        assert_eq!(run(&center, &SCORES, (1, 1, 6), &s), want);
    }

    #[test]
    fn batches_and_classes_in_order_ties_by_index_nan_last() {
        // Two batches of the same boxes, two classes; class 1 has tied scores and a NaN.
        let boxes: Vec<f32> = CLUSTERS.iter().chain(&CLUSTERS).copied().collect();
        let mut scores = Vec::new();
        for _ in 0..2 {
            scores.extend(SCORES);
            scores.extend([f32::NAN, 0.5, 0.5, 0.5, 0.1, 0.5]);
        }
        let s = params(10, 0.5, None, BoxEncoding::Corners);
        let got = run(&boxes, &scores, (2, 2, 6), &s);
        let per_batch = |b: i64| {
            [
                [b, 0, 3],
                [b, 0, 0],
                [b, 0, 5], // class 0
                [b, 1, 1],
                [b, 1, 3],
                [b, 1, 5], // class 1: 0.5 ties by index; box 2 by 1
            ]
        };
        let want: Vec<i64> = per_batch(0)
            .into_iter()
            .chain(per_batch(1))
            .flatten()
            .collect();
        assert_eq!(got, want);
        // With nothing suppressed, the NaN-scored box comes last.
        let s = params(10, 1.0, None, BoxEncoding::Corners);
        let got = run(&boxes[..24], &scores[6..12], (1, 1, 6), &s);
        assert_eq!(got[got.len() - 1], 0, "the NaN-scored box is selected last");
    }

    #[test]
    fn degenerate_boxes_and_limits() {
        // Identical zero-area boxes never suppress each other.
        let boxes = [0.0f32; 8];
        let s = params(5, 0.0, None, BoxEncoding::Corners);
        assert_eq!(run(&boxes, &[0.2, 0.1], (1, 1, 2), &s), [0, 0, 0, 0, 0, 1]);
        // No box asked for: nothing; no boxes at all: nothing.
        let s = params(0, 0.5, None, BoxEncoding::Corners);
        assert!(run(&CLUSTERS, &SCORES, (1, 1, 6), &s).is_empty());
        let s = params(3, 0.5, None, BoxEncoding::Corners);
        assert!(run(&[], &[], (1, 1, 0), &s).is_empty());
    }

    #[test]
    fn operands_are_read_and_checked() {
        let max = TensorData::I64(vec![-4]);
        let iou = TensorData::F32(vec![0.3]);
        let s = Suppression::from_operands(Some(&max), Some(&iou), None, 1).unwrap();
        assert_eq!(s, params(0, 0.3, None, BoxEncoding::Center));
        let empty = TensorData::F32(vec![]);
        let s = Suppression::from_operands(None, None, Some(&empty), 0).unwrap();
        assert_eq!(s, params(0, 0.0, None, BoxEncoding::Corners));
        let bad = [
            Suppression::from_operands(Some(&iou), None, None, 0),
            Suppression::from_operands(None, Some(&TensorData::F32(vec![1.5])), None, 0),
            Suppression::from_operands(None, Some(&TensorData::F32(vec![f32::NAN])), None, 0),
            Suppression::from_operands(None, None, Some(&TensorData::F32(vec![0.1, 0.2])), 0),
            Suppression::from_operands(None, None, None, 2),
        ];
        for (k, r) in bad.iter().enumerate() {
            assert!(r.is_err(), "case {k} accepted");
        }
        let s = params(1, 0.5, None, BoxEncoding::Corners);
        let shape_error = non_max_suppression(
            (&CLUSTERS, &Shape::new([1, 6, 4])),
            (&SCORES, &Shape::new([1, 1, 5])),
            &s,
        );
        assert!(shape_error.unwrap_err().contains("[B, C, N]"));
        let fill_error = non_max_suppression(
            (&CLUSTERS[..20], &Shape::new([1, 6, 4])),
            (&SCORES, &Shape::new([1, 1, 6])),
            &s,
        );
        assert!(fill_error.is_err());
    }
}
