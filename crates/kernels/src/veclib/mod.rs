//! The vector math library ([`VecFn`]): `f32` `exp`, `sigmoid`, `tanh`, `erf`, division and
//! the GELU and SiLU forms over strips of elements, compiled ahead of time for the host's
//! widest vectors, which fused kernels call because Cranelift's own vectors are 128-bit.

mod forms;
mod functions;
mod simd;
mod wide;

use graphlift_ir::{BinaryOp, ElementType, UnaryOp};
use multiversion::multiversion;

pub use forms::{Pattern, MAX_PARAMS};
pub use functions::{erf, exp, sigmoid, tanh};
pub(crate) use wide::{softmax_numerators, softmax_rows};

/// A function of the library: `dst[i] = f(src[i])` (or `f(a[i], b[i])`) for the `f32`
/// elements of a strip.
///
/// Cranelift 0.135 lowers 128-bit vectors only (four `f32` lanes), and the inline vector
/// math of [`crate::vmath`] is bound by instruction throughput at that width, as is division
/// (one `divps` per four elements). The library holds the same functions compiled by rustc
/// for AVX-512 (sixteen lanes) and AVX2 with FMA (eight), picked at run time for the host
/// (the `multiversion` crate), with the plain build as the fallback of the dispatch. It
/// plays the part of LLVM's vector libraries (SVML, libmvec, SLEEF, chosen by `-fveclib`):
/// a compiler that cannot emit the wide code itself calls it. A kernel that applies one of
/// these functions to a value it computes is *strip-mined* (`codegen::strip`): it computes
/// the argument of the call for a strip of elements into a buffer on its stack, calls the
/// library once for the strip, and goes on with the results.
///
/// Each function is the inline function's algorithm, operation for operation, written once
/// over the operations of `simd::F32x` (`functions`) for one lane and for sixteen; division
/// is IEEE division, and a form performs its expression's operations in their order
/// (`forms`), so a library call gives the inline
/// code's result bit for bit (a NaN for a NaN: the sign and payload of a NaN are not
/// specified), and the bounds of [`crate::vmath`] (`exp` and `sigmoid` 1 ulp, `erf` 2 ulp,
/// `tanh` 4 ulp, over every `f32`) hold for both. `crates/codegen/tests/kernels/veclib.rs`
/// checks the bits of the library against the JIT's inline code over a sample of every
/// binade and the special values; `graphlift accuracy --library` measures the library's
/// code over every `f32`.
///
/// On a host with AVX-512 every function but division (`exp`, `sigmoid`, `tanh`, `erf` and
/// the forms) runs its sixteen-lane instantiation for the whole sixteen-element vectors
/// (`wide`: the same bits, one instruction for the scaling by `2^n`, a two-stage software
/// pipeline), the one-lane one for the rest; each of them also has an entry point that writes
/// its results with non-temporal stores, which kernels too large for the cache call
/// ([`VecFn::streams`]).
///
/// The library is used when the host has AVX2 and FMA (each `mul_add` is one instruction;
/// without FMA it would be a libm call per element) and the [`crate::target::Target`]
/// switches it on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VecFn {
    /// `e^x`.
    Exp,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `tanh(x)`.
    Tanh,
    /// `erf(x)`.
    Erf,
    /// `a / b` (IEEE division).
    Divide,
    /// GELU, tanh form (`forms::GELU_TANH`).
    GeluTanh,
    /// GELU, erf form (`forms::GELU_ERF`).
    GeluErf,
    /// GELU, erf form with a division (`forms::GELU_ERF_DIVIDE`).
    GeluErfDivide,
    /// SiLU (`forms::SILU`).
    Silu,
    /// SiLU written with `exp` (`forms::SILU_EXP`).
    SiluExp,
    /// Swish with a slope, written with `exp` (`forms::SWISH`).
    Swish,
}

impl VecFn {
    /// Every function of the library.
    pub const ALL: [VecFn; 11] = [
        VecFn::Exp,
        VecFn::Sigmoid,
        VecFn::Tanh,
        VecFn::Erf,
        VecFn::Divide,
        VecFn::GeluTanh,
        VecFn::GeluErf,
        VecFn::GeluErfDivide,
        VecFn::Silu,
        VecFn::SiluExp,
        VecFn::Swish,
    ];

    /// The activation forms, in the order a kernel's slots are matched against them (a
    /// form before the forms it contains; none of these contains another).
    pub const FORMS: [VecFn; 6] = [
        VecFn::GeluTanh,
        VecFn::GeluErf,
        VecFn::GeluErfDivide,
        VecFn::Silu,
        VecFn::SiluExp,
        VecFn::Swish,
    ];

    /// The expression a form computes, or `None` for a single function.
    pub fn pattern(self) -> Option<&'static Pattern> {
        match self {
            VecFn::GeluTanh => Some(&forms::GELU_TANH),
            VecFn::GeluErf => Some(&forms::GELU_ERF),
            VecFn::GeluErfDivide => Some(&forms::GELU_ERF_DIVIDE),
            VecFn::Silu => Some(&forms::SILU),
            VecFn::SiluExp => Some(&forms::SILU_EXP),
            VecFn::Swish => Some(&forms::SWISH),
            _ => None,
        }
    }

    /// Its number of scalar `f32` parameters: its entry point takes them after `n` (a
    /// form takes [`MAX_PARAMS`], unused ones ignored; a single function none).
    pub fn params(self) -> usize {
        if self.pattern().is_some() {
            MAX_PARAMS
        } else {
            0
        }
    }

    /// Its number of arguments (1 or 2): its entry point takes that many source pointers,
    /// then `dst` and `n`.
    pub fn arity(self) -> usize {
        match self {
            VecFn::Divide => 2,
            _ => 1,
        }
    }

    /// The library function that computes the binary `op` on elements of type `ty`.
    pub fn of_binary(op: BinaryOp, ty: ElementType) -> Option<VecFn> {
        (op == BinaryOp::Divide && ty == ElementType::F32).then_some(VecFn::Divide)
    }

    /// The library function that computes the unary `op` on elements of type `ty`.
    pub fn of_unary(op: UnaryOp, ty: ElementType) -> Option<VecFn> {
        match (op, ty) {
            (UnaryOp::Exp, ElementType::F32) => Some(VecFn::Exp),
            (UnaryOp::Sigmoid, ElementType::F32) => Some(VecFn::Sigmoid),
            (UnaryOp::Tanh, ElementType::F32) => Some(VecFn::Tanh),
            (UnaryOp::Erf, ElementType::F32) => Some(VecFn::Erf),
            _ => None,
        }
    }

    /// Its name in reports (`graphlift explain`).
    pub fn name(self) -> &'static str {
        match self {
            VecFn::Exp => "exp",
            VecFn::Sigmoid => "sigmoid",
            VecFn::Tanh => "tanh",
            VecFn::Erf => "erf",
            VecFn::Divide => "divide",
            VecFn::GeluTanh => "gelu_tanh",
            VecFn::GeluErf => "gelu_erf",
            VecFn::GeluErfDivide => "gelu_erf_divide",
            VecFn::Silu => "silu",
            VecFn::SiluExp => "silu_exp",
            VecFn::Swish => "swish",
        }
    }

    /// The JIT symbol name of its strip entry point.
    pub fn symbol(self) -> &'static str {
        match self {
            VecFn::Exp => "graphlift_veclib_exp_f32",
            VecFn::Sigmoid => "graphlift_veclib_sigmoid_f32",
            VecFn::Tanh => "graphlift_veclib_tanh_f32",
            VecFn::Erf => "graphlift_veclib_erf_f32",
            VecFn::Divide => "graphlift_veclib_divide_f32",
            VecFn::GeluTanh => "graphlift_veclib_gelu_tanh_f32",
            VecFn::GeluErf => "graphlift_veclib_gelu_erf_f32",
            VecFn::GeluErfDivide => "graphlift_veclib_gelu_erf_divide_f32",
            VecFn::Silu => "graphlift_veclib_silu_f32",
            VecFn::SiluExp => "graphlift_veclib_silu_exp_f32",
            VecFn::Swish => "graphlift_veclib_swish_f32",
        }
    }

    /// The address of its strip entry point, an
    /// `unsafe extern "C" fn(src: *const f32, dst: *mut f32, n: usize)`; for
    /// [`VecFn::Divide`] an `unsafe extern "C" fn(a: *const f32, b: *const f32, dst: *mut
    /// f32, n: usize)`; for a form an `unsafe extern "C" fn(src: *const f32, dst: *mut f32,
    /// n: usize, c0: f32, c1: f32, c2: f32, c3: f32)`. With `stream`, the entry point that
    /// writes `dst` with non-temporal stores ([`VecFn::streams`]; the caller fences).
    pub fn address(self, stream: bool) -> *const u8 {
        macro_rules! entry {
            ($strip:ident) => {
                if stream {
                    $strip::<true> as *const u8
                } else {
                    $strip::<false> as *const u8
                }
            };
        }
        match self {
            VecFn::Exp => entry!(exp_strip),
            VecFn::Sigmoid => entry!(sigmoid_strip),
            VecFn::Tanh => entry!(tanh_strip),
            VecFn::Erf => entry!(erf_strip),
            VecFn::Divide => divide_strip as *const u8,
            VecFn::GeluTanh => entry!(gelu_tanh_strip),
            VecFn::GeluErf => entry!(gelu_erf_strip),
            VecFn::GeluErfDivide => entry!(gelu_erf_divide_strip),
            VecFn::Silu => entry!(silu_strip),
            VecFn::SiluExp => entry!(silu_exp_strip),
            VecFn::Swish => entry!(swish_strip),
        }
    }

    /// Whether it has an entry point that writes its results with non-temporal stores: the
    /// functions with AVX-512 code (`wide`: all but division), on a host that has it. A kernel that streams
    /// (`KernelPlan::stream`) calls that entry for a call whose result is an output.
    pub fn streams(self) -> bool {
        self != VecFn::Divide && wide::host_has_avx512()
    }

    /// `dst[i] = f(src[i])` for every `i` (the lengths must be equal; extra elements of the
    /// longer slice are left alone), through the host's widest code (what a kernel's call
    /// runs, without the kernel), a form with parameters `c`. [`VecFn::Divide`] takes its
    /// divisors from `dst` (`dst[i] = src[i] / dst[i]`).
    pub fn map(self, src: &[f32], dst: &mut [f32], c: [f32; MAX_PARAMS]) {
        match self {
            VecFn::Exp => map_exp::<false>(src, dst, &c),
            VecFn::Sigmoid => map_sigmoid::<false>(src, dst, &c),
            VecFn::Tanh => map_tanh::<false>(src, dst, &c),
            VecFn::Erf => map_erf::<false>(src, dst, &c),
            VecFn::Divide => {
                let b = dst.to_vec();
                map_divide(src, &b, dst)
            }
            VecFn::GeluTanh => map_gelu_tanh::<false>(src, dst, &c),
            VecFn::GeluErf => map_gelu_erf::<false>(src, dst, &c),
            VecFn::GeluErfDivide => map_gelu_erf_divide::<false>(src, dst, &c),
            VecFn::Silu => map_silu::<false>(src, dst, &c),
            VecFn::SiluExp => map_silu_exp::<false>(src, dst, &c),
            VecFn::Swish => map_swish::<false>(src, dst, &c),
        }
    }
}

/// Defines `$map::<NT>(src, dst, c)`, the host-dispatched slice map: `dst[i] = f(src[i], c)`
/// for the lane function `f = $f` (extra elements of the longer slice are left alone); with
/// `wide = $w`, the whole sixteen-element vectors go through [`wide`]'s AVX-512 function
/// `wide::$w::<NT>(src, dst, c)` first (bit-identical, faster where the host has it) and
/// the one-lane code does the rest. With `NT` the wide code writes with non-temporal stores
/// ([`crate::stream`]), whole 64-byte lines: the one-lane code does the elements before the
/// first line boundary of `dst`, and the caller fences. Without wide code `NT` changes
/// nothing.
macro_rules! strip_map {
    ($map:ident, $f:expr $(, wide = $w:ident)?) => {
        fn $map<const NT: bool>(src: &[f32], dst: &mut [f32], c: &[f32; MAX_PARAMS]) {
            #[multiversion(targets(
                "x86_64+avx512f+avx512vl+avx512bw+avx512dq+avx2+fma",
                "x86_64+avx2+fma"
            ))]
            fn lanes(src: &[f32], dst: &mut [f32], c: [f32; MAX_PARAMS]) {
                let f = $f;
                for (d, &x) in dst.iter_mut().zip(src) {
                    *d = f(x, c);
                }
            }
            let n = src.len().min(dst.len());
            #[allow(unused_mut)]
            let mut done = 0;
            $(
                if NT {
                    done = dst.as_ptr().align_offset(64).min(n);
                    lanes(&src[..done], &mut dst[..done], *c);
                }
                done += wide::$w::<NT>(&src[done..n], &mut dst[done..n], c);
            )?
            if done < n {
                lanes(&src[done..n], &mut dst[done..n], *c);
            }
        }
    };
}

/// Defines `$map` ([`strip_map!`], parameters ignored) and `$strip::<NT>`, its entry point
/// for JIT code, for the single function whose lane function is `$f`.
macro_rules! library_function {
    ($map:ident, $strip:ident, $f:path $(, wide = $w:ident)?) => {
        strip_map!($map, |x: f32, _: [f32; MAX_PARAMS]| $f(x) $(, wide = $w)?);

        unsafe extern "C" fn $strip<const NT: bool>(src: *const f32, dst: *mut f32, n: usize) {
            // SAFETY: only JIT kernels call this (`codegen::strip`), with `n` at most the
            // strip length. `dst` is a strip buffer of the kernel's own stack frame, or the
            // `n` elements of a kernel output from the strip's first element on; `src` is
            // another strip buffer of that frame, or the `n` elements of a kernel input from
            // the strip's first element on. The runtime checked every input and output to
            // hold the whole iteration space before calling the kernel, and outputs alias
            // neither inputs nor each other (they are distinct `&mut` borrows). So both
            // ranges are valid, and they do not overlap: a strip buffer holds one value.
            let (src, dst) = unsafe {
                (
                    std::slice::from_raw_parts(src, n),
                    std::slice::from_raw_parts_mut(dst, n),
                )
            };
            $map::<NT>(src, dst, &[0.0; MAX_PARAMS]);
        }
    };
}

library_function!(map_exp, exp_strip, exp, wide = exp);
library_function!(map_sigmoid, sigmoid_strip, sigmoid, wide = sigmoid);
library_function!(map_tanh, tanh_strip, tanh, wide = tanh);
library_function!(map_erf, erf_strip, erf, wide = erf);

/// Defines `$map` ([`strip_map!`]) and `$strip::<NT>` for the form whose lane function is
/// `$f`: as [`library_function!`], with the form's parameters.
macro_rules! form_function {
    ($map:ident, $strip:ident, $f:path $(, wide = $w:ident)?) => {
        strip_map!($map, $f $(, wide = $w)?);

        unsafe extern "C" fn $strip<const NT: bool>(
            src: *const f32,
            dst: *mut f32,
            n: usize,
            c0: f32,
            c1: f32,
            c2: f32,
            c3: f32,
        ) {
            // SAFETY: as for the functions of `library_function!`: `src` points at `n`
            // elements of a strip buffer of the calling kernel's frame or of a checked kernel
            // input, `dst` at `n` elements of another strip buffer or of a kernel output,
            // which overlaps no input.
            let (src, dst) = unsafe {
                (
                    std::slice::from_raw_parts(src, n),
                    std::slice::from_raw_parts_mut(dst, n),
                )
            };
            // By reference: built by value, the array went through the stack as four scalar
            // stores and one 16-byte load, a failed store forwarding on every call.
            $map::<NT>(src, dst, &[c0, c1, c2, c3]);
        }
    };
}

form_function!(
    map_gelu_tanh,
    gelu_tanh_strip,
    forms::gelu_tanh,
    wide = gelu_tanh
);
form_function!(
    map_gelu_erf,
    gelu_erf_strip,
    forms::gelu_erf,
    wide = gelu_erf
);
form_function!(
    map_gelu_erf_divide,
    gelu_erf_divide_strip,
    forms::gelu_erf_divide,
    wide = gelu_erf_divide
);
form_function!(map_silu, silu_strip, forms::silu, wide = silu);
form_function!(
    map_silu_exp,
    silu_exp_strip,
    forms::silu_exp,
    wide = silu_exp
);
form_function!(map_swish, swish_strip, forms::swish, wide = swish);

#[multiversion(targets(
    "x86_64+avx512f+avx512vl+avx512bw+avx512dq+avx2+fma",
    "x86_64+avx2+fma"
))]
fn map_divide(a: &[f32], b: &[f32], dst: &mut [f32]) {
    for (d, (&a, &b)) in dst.iter_mut().zip(a.iter().zip(b)) {
        *d = a / b;
    }
}

unsafe extern "C" fn divide_strip(a: *const f32, b: *const f32, dst: *mut f32, n: usize) {
    // SAFETY: as for the one-argument functions of `library_function!`: `a` and `b` each
    // point at `n` elements of a strip buffer of the calling kernel's frame or of a checked
    // kernel input (they may be the same buffer: both are only read), and `dst` at `n`
    // elements that neither overlaps.
    let (a, b, dst) = unsafe {
        (
            std::slice::from_raw_parts(a, n),
            std::slice::from_raw_parts(b, n),
            std::slice::from_raw_parts_mut(dst, n),
        )
    };
    map_divide(a, b, dst);
}
