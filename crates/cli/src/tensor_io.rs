//! Reading tensors from ONNX TensorProto (`.pb`) and numpy (`.npy`) files, and writing
//! `.npy` files numpy can read.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use graphlift::{Tensor, TensorData};
use npyz::WriterBuilder;

use crate::error::CliError;

/// Reads a tensor; the format follows the extension (`.npy`, else ONNX TensorProto).
///
/// # Errors
/// [`CliError::Io`] if the file cannot be read; [`CliError::TensorFile`] for a format or
/// element type graphlift does not read (npy, C order: `f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8
/// b1`, and `U` (numpy's fixed-width `str`) as STRING; numpy has no bfloat16).
pub fn read_tensor(path: &Path) -> Result<Tensor, CliError> {
    let bytes = fs::read(path).map_err(|source| CliError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |message: String| CliError::TensorFile {
        path: path.to_path_buf(),
        message,
    };
    if path.extension().is_some_and(|e| e == "npy") {
        read_npy(&bytes).map_err(bad)
    } else {
        let t = graphlift::onnx::read_tensor_proto(&bytes)?;
        Tensor::from_data(t.data, t.shape).map_err(|e| bad(e.to_string()))
    }
}

fn read_npy(bytes: &[u8]) -> Result<Tensor, String> {
    check_npy_extents(bytes)?;
    let npy = npyz::NpyFile::new(bytes).map_err(|e| format!("not a numpy file: {e}"))?;
    if npy.order() != npyz::Order::C {
        return Err("Fortran-order arrays are not supported; save with C order".into());
    }
    let shape: Vec<usize> = npy
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("dimension {d} too large")))
        .collect::<Result<_, _>>()?;
    let descr = match npy.dtype() {
        npyz::DType::Plain(type_str) => type_str.to_string(),
        other => {
            return Err(format!(
                "structured dtype {} is not supported",
                other.descr()
            ))
        }
    };
    let kind = descr.trim_start_matches(['<', '>', '|', '=']);
    let io = |e: std::io::Error| format!("reading {descr} data: {e}");
    let data = match kind {
        "f2" => TensorData::F16(npy.into_vec().map_err(io)?),
        "f4" => TensorData::F32(npy.into_vec().map_err(io)?),
        "f8" => TensorData::F64(npy.into_vec().map_err(io)?),
        "i1" => TensorData::I8(npy.into_vec().map_err(io)?),
        "i2" => TensorData::I16(npy.into_vec().map_err(io)?),
        "i4" => TensorData::I32(npy.into_vec().map_err(io)?),
        "i8" => TensorData::I64(npy.into_vec().map_err(io)?),
        "u1" => TensorData::U8(npy.into_vec().map_err(io)?),
        "u2" => TensorData::U16(npy.into_vec().map_err(io)?),
        "u4" => TensorData::U32(npy.into_vec().map_err(io)?),
        "u8" => TensorData::U64(npy.into_vec().map_err(io)?),
        "b1" => TensorData::Bool(npy.into_vec().map_err(io)?),
        // numpy's `str`: fixed-width UTF-32, trailing NULs dropped.
        u if u.starts_with('U') => TensorData::String(npy.into_vec().map_err(io)?),
        _ => {
            return Err(format!(
                "numpy dtype {descr} is not supported (f2, f4, f8, i1, i2, i4, i8, u1, u2, u4, \
                 u8, b1, U are)"
            ))
        }
    };
    Tensor::from_data(data, shape).map_err(|e| e.to_string())
}

/// Rejects a `.npy` header holding a tuple of integers (its `shape`, or a sub-array shape)
/// whose nonzero extents multiply past `u64`: npyz multiplies them unchecked while parsing
/// the header (a panic in debug builds, a wrapped length in release). Bytes that are not a
/// well-formed header are left for npyz to reject.
fn check_npy_extents(bytes: &[u8]) -> Result<(), String> {
    // Magic, version, then the header length: u16 for version 1, u32 for versions 2 and 3.
    let Some(rest) = bytes.strip_prefix(b"\x93NUMPY") else {
        return Ok(());
    };
    let (len, header) = match rest {
        [1, _, a, b, header @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), header),
        [2 | 3, _, a, b, c, d, header @ ..] => {
            let len = u32::from_le_bytes([*a, *b, *c, *d]);
            (usize::try_from(len).unwrap_or(usize::MAX), header)
        }
        _ => return Ok(()),
    };
    let Some(Ok(header)) = header.get(..len).map(std::str::from_utf8) else {
        return Ok(());
    };
    // Every innermost parenthesized group.
    for group in header
        .split(')')
        .filter_map(|g| g.rsplit_once('(').map(|(_, t)| t))
    {
        let extents: Option<Vec<u64>> = group
            .split(',')
            .map(|d| d.trim().trim_end_matches(['L', 'l']))
            .filter(|d| !d.is_empty())
            .map(|d| d.parse().ok())
            .collect();
        let Some(extents) = extents else { continue };
        let product = extents
            .iter()
            .filter(|&&d| d != 0)
            .try_fold(1u64, |acc, &d| acc.checked_mul(d));
        if product.is_none() {
            return Err(format!(
                "shape ({group}): the product of its extents overflows"
            ));
        }
    }
    Ok(())
}

/// Writes `tensor` as a numpy `.npy` file (C order, little-endian). The file appears
/// complete or not at all: it is written under a temporary name and renamed.
///
/// # Errors
/// [`CliError::Io`] if writing fails; [`CliError::TensorFile`] for a `bf16` tensor or one of
/// the storage-only types (FLOAT8, FLOAT4E2M1, INT4, ...): numpy has no dtype for them
/// (`ml_dtypes` adds its own), so write a `.pb` instead.
pub fn write_npy(path: &Path, tensor: &Tensor) -> Result<(), CliError> {
    let io = |source| CliError::Io {
        path: path.to_path_buf(),
        source,
    };
    let t = tensor.element_type();
    if t == graphlift::ElementType::BF16 || t.is_storage_only() {
        return Err(CliError::TensorFile {
            path: path.to_path_buf(),
            message: format!("numpy has no {t} dtype; write the tensor as an ONNX .pb file"),
        });
    }
    let tmp = path.with_extension("npy.partial");
    let file = fs::File::create(&tmp).map_err(io)?;
    let shape: Vec<u64> = tensor.shape().dims().iter().map(|&d| d as u64).collect();
    let mut out = BufWriter::new(file);
    write_data(&mut out, &shape, tensor.data()).map_err(io)?;
    out.flush().map_err(io)?;
    drop(out);
    fs::rename(&tmp, path).map_err(io)
}

fn write_data<W: Write>(w: W, shape: &[u64], data: &TensorData) -> std::io::Result<()> {
    fn put<T: npyz::AutoSerialize + Copy, W: Write>(
        w: W,
        shape: &[u64],
        v: &[T],
    ) -> std::io::Result<()> {
        let mut writer = npyz::WriteOptions::new()
            .default_dtype()
            .shape(shape)
            .writer(w)
            .begin_nd()?;
        writer.extend(v.iter().copied())?;
        writer.finish()
    }
    match data {
        TensorData::F32(v) => put(w, shape, v),
        TensorData::F64(v) => put(w, shape, v),
        TensorData::F16(v) => put(w, shape, v),
        TensorData::I32(v) => put(w, shape, v),
        TensorData::I64(v) => put(w, shape, v),
        TensorData::I8(v) => put(w, shape, v),
        TensorData::U8(v) => put(w, shape, v),
        TensorData::I16(v) => put(w, shape, v),
        TensorData::U16(v) => put(w, shape, v),
        TensorData::U32(v) => put(w, shape, v),
        TensorData::U64(v) => put(w, shape, v),
        TensorData::Bool(v) => put(w, shape, v),
        TensorData::String(v) => put_strings(w, shape, v),
        other => Err(std::io::Error::other(format!(
            "numpy has no {} dtype",
            other.element_type()
        ))),
    }
}

/// Strings as numpy's `str` (`<U` as wide as the longest, in characters; at least 1, as
/// numpy makes it). numpy drops trailing NULs when it reads them back, as it does its own.
fn put_strings<W: Write>(w: W, shape: &[u64], v: &[String]) -> std::io::Result<()> {
    let width = v
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0)
        .max(1);
    let type_str: npyz::TypeStr = format!("<U{width}")
        .parse()
        .map_err(std::io::Error::other)?;
    let mut writer = npyz::WriteOptions::<str>::new()
        .dtype(npyz::DType::Plain(type_str))
        .shape(shape)
        .writer(w)
        .begin_nd()?;
    for s in v {
        writer.push(s.as_str())?;
    }
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_round_trip_every_type() {
        let dir = std::env::temp_dir().join(format!("graphlift-npy-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let cases = [
            Tensor::from_vec(vec![1.5f32, -2.0, f32::NAN, 0.0, 1e-40, 7.0], [2, 3]).unwrap(),
            Tensor::from_vec(vec![1.5f64], graphlift::Shape::scalar()).unwrap(),
            Tensor::from_vec(vec![i32::MIN, 0, i32::MAX], [3]).unwrap(),
            Tensor::from_vec(Vec::<i64>::new(), [0, 4]).unwrap(),
            Tensor::from_vec(vec![true, false], [2, 1]).unwrap(),
            Tensor::from_vec(vec![i8::MIN, -1, i8::MAX], [3]).unwrap(),
            Tensor::from_vec(vec![0u8, 255], [2]).unwrap(),
            Tensor::from_vec(vec![i16::MIN, 7], [2]).unwrap(),
            Tensor::from_vec(vec![u16::MAX], [1]).unwrap(),
            Tensor::from_vec(vec![u32::MAX, 0], [2]).unwrap(),
            Tensor::from_vec(vec![u64::MAX, 1], [1, 2]).unwrap(),
            Tensor::from_vec(
                vec![graphlift::f16::from_f32(1.5), graphlift::f16::INFINITY],
                [2],
            )
            .unwrap(),
            Tensor::from_data(
                TensorData::String(
                    ["", "a b", "\u{fc}ber", "\u{1d11e}"]
                        .map(String::from)
                        .to_vec(),
                ),
                [2, 2],
            )
            .unwrap(),
        ];
        for (i, t) in cases.iter().enumerate() {
            let p = dir.join(format!("t{i}.npy"));
            write_npy(&p, t).unwrap();
            let back = read_tensor(&p).unwrap();
            assert_eq!(back.tensor_type(), t.tensor_type());
            assert!(graphlift::runtime::compare(&back, t, 0.0, 0.0).passed());
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A version 1.0 `.npy` file of `<f4` with the given shape literal and data bytes.
    fn npy_v1(shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend(u16::try_from(header.len()).unwrap().to_le_bytes());
        b.extend(header.as_bytes());
        b.extend(data);
        b
    }

    #[test]
    fn hostile_npy_shapes_and_short_data_are_errors() {
        assert_eq!(
            read_npy(&npy_v1("(2,)", &[0, 0, 128, 63, 0, 0, 0, 64]))
                .unwrap()
                .read::<f32>()
                .unwrap(),
            &[1.0, 2.0]
        );
        // Data shorter than the shape.
        let e = read_npy(&npy_v1("(3,)", &[0; 8])).unwrap_err();
        assert!(e.starts_with("reading <f4 data:"), "{e}");
        // Extents whose product overflows u64 (npyz would panic) or usize.
        for shape in [
            "(4611686018427387904, 8)",
            "(18446744073709551615, 2)",
            "(0, 4294967296, 4294967296)",
        ] {
            let e = read_npy(&npy_v1(shape, &[0; 8])).unwrap_err();
            assert!(
                e.contains("the product of its extents overflows"),
                "{shape}: {e}"
            );
        }
        // A huge count that fits in u64: the data is missing.
        let e = read_npy(&npy_v1("(1099511627776,)", &[0; 8])).unwrap_err();
        assert!(e.starts_with("reading <f4 data:"), "{e}");
    }

    #[test]
    fn rejects_garbage() {
        let dir = std::env::temp_dir().join(format!("graphlift-bad-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.npy");
        fs::write(&p, b"\x93NUMPY garbage").unwrap();
        assert!(matches!(read_tensor(&p), Err(CliError::TensorFile { .. })));
        assert!(matches!(
            read_tensor(&dir.join("missing.npy")),
            Err(CliError::Io { .. })
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
