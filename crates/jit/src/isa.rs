//! The host instruction set, built once and shared by every JIT module.
//!
//! `cranelift_native::builder()` detects the host CPU's features (SSE4.1, AVX, FMA, ...);
//! the shared flags are `opt_level=speed`, `is_pic=false` (required by `JITModule`) and
//! `use_colocated_libcalls=false` (libcalls may live anywhere in the address space). The
//! ISA object is `Send + Sync` and is cloned (an `Arc`) into each module.
//!
//! Cranelift's IR verifier runs in debug builds (tests, fuzzing) only, as Wasmtime runs it:
//! it checks the IR graphlift generates, not anything a user gives, and it is about 45% of
//! Cranelift's compile time (`../shared/notes/cranelift-0.135.md`).

use std::sync::OnceLock;

use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};

use crate::JitError;

/// The shared host ISA.
///
/// # Errors
/// [`JitError::Isa`] when Cranelift does not support the host, or rejects a flag; the error
/// is computed once and returned to every caller.
pub(crate) fn host_isa() -> Result<OwnedTargetIsa, JitError> {
    static ISA: OnceLock<Result<OwnedTargetIsa, String>> = OnceLock::new();
    ISA.get_or_init(build).clone().map_err(JitError::Isa)
}

fn build() -> Result<OwnedTargetIsa, String> {
    let mut flags = settings::builder();
    for (name, value) in [
        ("opt_level", "speed"),
        ("is_pic", "false"),
        ("use_colocated_libcalls", "false"),
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
