//! The host instruction set for Cranelift, built once with graphlift's flags and shared by
//! every JIT module ([`host_isa`]).

use std::sync::OnceLock;

use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};

use crate::JitError;

/// The shared host ISA.
///
/// `cranelift_native::builder()` detects the host CPU's features (SSE4.1, AVX, FMA, ...);
/// the shared flags are `opt_level=none`, `is_pic=false` (required by `JITModule`),
/// `use_colocated_libcalls=false` (libcalls may live anywhere in the address space) and
/// inline stack probes (`enable_probestack`, for the strip buffers of [`crate::strip`]). The
/// ISA object is `Send + Sync` and is cloned (an `Arc`) into each module.
///
/// `opt_level=none` skips Cranelift's mid-end (the e-graph: GVN, LICM, algebraic rewrites);
/// instruction selection and register allocation are the same. graphlift's kernels already
/// do what the mid-end would add: invariants are hoisted to the preheader by
/// [`crate::kernel`], divisions of indices by constants are multiplies and shifts
/// ([`crate::divide`]), and each slot is computed once per vector. (Not merged: the index
/// arithmetic of two inputs with the same broadcast, a few integer instructions per vector
/// each.) What the mid-end did here was harmful: it merged every use of a vector-math
/// constant into one value and hoisted it into the loop header, where the sixteen `xmm`
/// registers could not hold them all, so the loop reloaded and spilled them on every trip.
/// Without it each constant stays a memory operand at its use, and both kernels and cold
/// compiles are faster (A/B figures in `BENCHMARKS.md`).
///
/// Cranelift's IR verifier runs in debug builds (tests, fuzzing) only, as Wasmtime runs it:
/// it checks the IR graphlift generates, not anything a user gives, and it is a large share
/// of Cranelift's compile time (measured on Cranelift 0.135: `BENCHMARKS.md`).
///
/// # Errors
/// [`JitError::Isa`] when Cranelift does not support the host, or rejects a flag; the error
/// is computed once and returned to every caller.
pub fn host_isa() -> Result<OwnedTargetIsa, JitError> {
    static ISA: OnceLock<Result<OwnedTargetIsa, String>> = OnceLock::new();
    ISA.get_or_init(build).clone().map_err(JitError::Isa)
}

fn build() -> Result<OwnedTargetIsa, String> {
    let mut flags = settings::builder();
    for (name, value) in [
        ("opt_level", "none"),
        ("is_pic", "false"),
        ("use_colocated_libcalls", "false"),
        // Strip-mined kernels keep their strip buffers in their frame (up to 16 KiB):
        // probe each page of a frame larger than one, so that a frame never steps over a
        // thread's guard page.
        ("enable_probestack", "true"),
        ("probestack_strategy", "inline"),
        (
            "enable_verifier",
            if cfg!(debug_assertions) {
                "true"
            } else {
                "false"
            },
        ),
    ] {
        flags
            .set(name, value)
            .map_err(|e| format!("flag {name}={value}: {e}"))?;
    }
    let isa =
        cranelift_native::builder().map_err(|e| format!("host not supported by Cranelift: {e}"))?;
    isa.finish(settings::Flags::new(flags))
        .map_err(|e| format!("building the host ISA: {e}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_isa_is_built_once_and_shared() {
        let a = super::host_isa().unwrap();
        let b = super::host_isa().unwrap();
        assert!(std::sync::Arc::ptr_eq(&a, &b));
        assert_eq!(u32::from(a.pointer_bits()), usize::BITS);
    }
}
