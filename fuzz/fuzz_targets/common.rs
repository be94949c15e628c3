//! What the differential fuzz targets share: decoding target shapes, parameters and ops
//! from raw bytes, and the two backends.

use std::sync::{Arc, OnceLock};

use arbitrary::{Result, Unstructured};
use graphlift::runtime::Backend as BackendTrait;
use graphlift::Backend;
use graphlift_harness::differential::{OpSpec, ParamSpec};

/// Extents across the vector-width (2 and 4 lanes) and 2× unroll (4 and 8) boundaries.
const EXTENTS: [usize; 16] = [0, 1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 31, 33, 64];
const MAX_ELEMENTS: usize = 4096;

/// A target shape of rank 0–4 with extents from [`EXTENTS`] and at most 4,096 elements
/// (an extent that would pass that is 1).
pub fn dims(u: &mut Unstructured<'_>) -> Result<Vec<usize>> {
    let rank = u.int_in_range(0..=4)?;
    let mut dims = Vec::with_capacity(rank);
    let mut count = 1usize;
    for _ in 0..rank {
        let d = *u.choose(&EXTENTS)?;
        let d = if d > 1 && count * d > MAX_ELEMENTS {
            1
        } else {
            d
        };
        count *= d.max(1);
        dims.push(d);
    }
    Ok(dims)
}

/// A parameter of any element type whose shape broadcasts to a target shape of `rank`.
pub fn param(u: &mut Unstructured<'_>, rank: usize) -> Result<ParamSpec> {
    Ok(ParamSpec {
        ty: u.int_in_range(0..=4)?,
        keep: u.arbitrary()?,
        drop: u.int_in_range(0..=rank)?,
    })
}

/// An op of the whole elementwise set.
pub fn op(u: &mut Unstructured<'_>) -> Result<OpSpec> {
    Ok(OpSpec {
        kind: u.int_in_range(0..=7)?,
        sub: u.int_in_range(0..=63)?,
        operands: [u.arbitrary::<u8>()?, u.arbitrary()?, u.arbitrary()?].map(usize::from),
        ty: u.int_in_range(0..=4)?,
    })
}

/// CPU-JIT and INTERPRETER, created once.
pub fn backends() -> &'static (Arc<dyn BackendTrait>, Arc<dyn BackendTrait>) {
    static B: OnceLock<(Arc<dyn BackendTrait>, Arc<dyn BackendTrait>)> = OnceLock::new();
    B.get_or_init(|| {
        (
            Backend::create("CPU-JIT").expect("CPU-JIT is registered"),
            Backend::create("INTERPRETER").expect("INTERPRETER is registered"),
        )
    })
}
