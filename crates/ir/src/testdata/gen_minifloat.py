"""Writes minifloat.txt: expected FLOAT8 / FLOAT4 conversions for crates/ir/src/minifloat.rs,
computed by ml_dtypes and onnx.numpy_helper (the ONNX reference's own conversions).

Run with the venv of HOUSE_RULES.md: python gen_minifloat.py > minifloat.txt
Lines: `decode FORMAT BITS F32BITS` (every pattern's value) and
`encode FORMAT SATURATE F32BITS BITS` (probe values: every value, the midpoints between
neighbours and their neighbours in f32, overflow, infinities, NaNs).
"""
import ml_dtypes
import numpy as np
from onnx import numpy_helper

FORMATS = {
    "e4m3fn": ml_dtypes.float8_e4m3fn,
    "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "e5m2": ml_dtypes.float8_e5m2,
    "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "e2m1": ml_dtypes.float4_e2m1fn,
    "e8m0": ml_dtypes.float8_e8m0fnu,
}


def main():
    for name, dtype in FORMATS.items():
        count = 16 if name == "e2m1" else 256
        pats = np.arange(count, dtype=np.uint8)
        values = pats.view(dtype).astype(np.float32)
        for p, v in zip(pats, values):
            print(f"decode {name} {p:#04x} {v.view(np.uint32):#010x}")
        finite = np.unique(values[np.isfinite(values)]).astype(np.float64)
        mids = (finite[:-1] + finite[1:]) / 2
        probes = np.concatenate([finite, mids, finite * 4, [np.inf, -np.inf, np.nan, -np.nan, 1e-30, -1e-30, 3e38]])
        probes32 = probes.astype(np.float32)  # 3e38 * 4 overflows to inf: wanted
        up = np.nextafter(probes32, np.float32(np.inf))
        down = np.nextafter(probes32, np.float32(-np.inf))
        probes32 = np.unique(np.concatenate([probes32, up, down, -probes32]).view(np.uint32)).view(np.float32)
        for sat in (1, 0):
            if name == "e8m0":
                if sat == 0:
                    continue
                got = numpy_helper.to_float8e8m0(probes32, True, "up").view(np.uint8)
            elif name == "e2m1":
                got = probes32.astype(dtype).view(np.uint8)
            elif sat:
                got = numpy_helper.saturate_cast(probes32, dtype).view(np.uint8)
            else:
                got = probes32.astype(dtype).view(np.uint8)
            for x, b in zip(probes32, got):
                print(f"encode {name} {sat} {x.view(np.uint32):#010x} {b:#04x}")


main()
