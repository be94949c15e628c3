//! `Convert` between `f32` and the half types (`f16`, `bf16`) over whole slices with the
//! `half` crate, which uses the host's conversion instructions (F16C) where it has them:
//! the rounding half-precision widening puts around every op of a half model. Round to
//! nearest even, as the reference's element-wise `half` conversions.

use graphlift_ir::{ElementType, TensorData};
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

/// `x` converted to `to`, or `None` when this kernel does not apply (another pair of types);
/// the caller then runs the reference.
pub fn convert(x: &TensorData, to: ElementType) -> Option<TensorData> {
    Some(match (x, to) {
        (TensorData::F32(v), ElementType::F16) => {
            let mut y = vec![f16::ZERO; v.len()];
            y.convert_from_f32_slice(v);
            TensorData::F16(y)
        }
        (TensorData::F32(v), ElementType::BF16) => {
            let mut y = vec![bf16::ZERO; v.len()];
            y.convert_from_f32_slice(v);
            TensorData::BF16(y)
        }
        (TensorData::F16(v), ElementType::F32) => {
            let mut y = vec![0f32; v.len()];
            v.convert_to_f32_slice(&mut y);
            TensorData::F32(y)
        }
        (TensorData::BF16(v), ElementType::F32) => {
            let mut y = vec![0f32; v.len()];
            v.convert_to_f32_slice(&mut y);
            TensorData::F32(y)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_reference() {
        let mut values: Vec<f32> = (0..4000).map(|i| (i as f32 - 2000.0) * 37.123).collect();
        values.extend([
            0.0,
            -0.0,
            f32::INFINITY,
            -f32::INFINITY,
            1e-8,
            65519.0,
            65520.0,
        ]);
        values.extend([1.0 + f32::EPSILON, 1.000_488_3, 3.0e38]);
        let x = TensorData::F32(values);
        for to in [ElementType::F16, ElementType::BF16] {
            let got = convert(&x, to).unwrap();
            let want = graphlift_runtime::reference::convert(&x, to).unwrap();
            assert!(got.same_bits(&want), "{to:?}");
            let back = convert(&got, ElementType::F32).unwrap();
            let want_back = graphlift_runtime::reference::convert(&got, ElementType::F32).unwrap();
            assert!(back.same_bits(&want_back), "{to:?} back");
        }
    }
}
