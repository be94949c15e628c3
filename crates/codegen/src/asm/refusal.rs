//! Why a kernel is not assembled code ([`Refusal`]): what `graphlift explain` prints for a
//! kernel that stays with Cranelift.

use graphlift_kernels::target::VectorIsa;

/// Why a kernel plan is not assembled here ([`super::Layout::of`]): it then goes through
/// Cranelift's four-lane loops, or calls the vector math library in strips.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The plan was not marked for assembled code: the target has it off (see
    /// `graphlift_kernels::target::Target::assembler_off` for why).
    Off,
    /// The host cannot run the plan's instruction set (AVX-512: AVX-512F and BMI2; AVX2:
    /// AVX2, FMA and F16C).
    Host(VectorIsa),
    /// The kernel streams its outputs through strip buffers on an AVX2 host, all its ops
    /// are one or two instructions, and no division reads a broadcast value (that code is
    /// as wide where it counts: the memory traffic; AVX2 code stores through the caches).
    Streams,
    /// The kernel is not a four-lane one (`f64`, `i64` or mixed widths).
    NotFourLane,
    /// Its iteration space has 2^31 elements or more.
    TooLarge,
    /// A value is of a storage type ([`crate::storage`]) the plan's instruction set has no
    /// conversions for here: any but `f16` in AVX-512 code, `u32` in AVX2 code, or a narrow
    /// input read as a run (a column or channel vector).
    Storage(graphlift_ir::ElementType),
    /// A value or output is of none of the types the assembler holds in 32-bit lanes
    /// (`f32`, `i32`, `bool`; narrow storage types are [`Refusal::Storage`]).
    NotF32,
    /// An operation the assembler has no code for (its name).
    Op(String),
    /// An input read at two addressings, or rows or runs of different lengths.
    Addressing,
    /// More buffers than pointer registers, or more live values than vector registers.
    Registers,
    /// Every op it has no one-instruction code for is a call to the vector math library,
    /// which runs in strips ([`crate::strip`]), and either nothing else is computed per
    /// element or (AVX2) one call is an activation form; on AVX2 never a kernel with a
    /// SiLU form, which this code computes faster.
    Library,
    /// The assembler took the plan but failed to write its code (a bug in it; the message
    /// says where): the Cranelift code runs instead.
    Failed(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Off => write!(f, "assembled kernels are off"),
            Refusal::Host(VectorIsa::Avx512) => write!(f, "the host lacks AVX-512F or BMI2"),
            Refusal::Host(VectorIsa::Avx2) => write!(f, "the host lacks AVX2, FMA or F16C"),
            Refusal::Streams => write!(f, "it streams its outputs through strip buffers"),
            Refusal::NotFourLane => write!(f, "its values are not all 32-bit"),
            Refusal::TooLarge => write!(f, "it has 2^31 elements or more"),
            Refusal::NotF32 => write!(f, "a value is not f32"),
            Refusal::Storage(t) => write!(
                f,
                "a value is stored as {t}, which the assembler does not convert there"
            ),
            Refusal::Op(op) => write!(f, "the assembler has no code for {op}"),
            Refusal::Failed(why) => write!(f, "the assembler failed ({why})"),
            Refusal::Addressing => {
                write!(
                    f,
                    "an input is read two ways, or its rows or runs differ in length"
                )
            }
            Refusal::Registers => write!(f, "it needs more registers than x86-64 has"),
            Refusal::Library => write!(
                f,
                "its vector math is library calls (with nothing to compute between them, \
                 or an activation form on AVX2), which run at the host's width"
            ),
        }
    }
}
