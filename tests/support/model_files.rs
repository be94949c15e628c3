//! The real models' files (`scripts/fetch-models.sh`, run by `scripts/test.sh`): where
//! they are, and their `.npy` inputs and outputs as tensors.

use std::path::{Path, PathBuf};

use graphlift::{Shape, Tensor, TensorData};

/// `target/models`, or `GRAPHLIFT_MODELS`.
pub fn models_dir() -> PathBuf {
    std::env::var_os("GRAPHLIFT_MODELS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/models"),
        PathBuf::from,
    )
}

/// Reads a little-endian, C-order `.npy` of `f32` or `i64` (what the fetch script writes).
pub fn read_npy(path: &Path) -> Tensor {
    let bytes = std::fs::read(path)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/fetch-models.sh)", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let descr = match npy.dtype() {
        npyz::DType::Plain(t) => t.to_string(),
        other => panic!("{}: unexpected dtype {other:?}", path.display()),
    };
    let data = match descr.as_str() {
        "<f4" => TensorData::F32(npy.into_vec::<f32>().unwrap()),
        "<i8" => TensorData::I64(npy.into_vec::<i64>().unwrap()),
        other => panic!("{}: unexpected dtype {other}", path.display()),
    };
    Tensor::from_data(data, Shape::new(shape)).unwrap()
}
