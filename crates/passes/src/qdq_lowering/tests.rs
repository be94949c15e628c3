//! The QDQ lowering on small graphs written as the ONNX importer composes
//! `QuantizeLinear`/`DequantizeLinear`, checked against the reference interpreter.
