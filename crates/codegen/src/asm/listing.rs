//! The Intel-syntax listing of an assembled kernel (`graphlift explain`, `JitKernel::ir`):
//! its constant pool as words, then its instructions with their offsets.

use iced_x86::{Decoder, DecoderOptions, Formatter, IntelFormatter};

use super::{Layout, UNROLL};
use crate::plan::KernelPlan;
use graphlift_kernels::target::VectorIsa;

/// Four `int3` bytes: the pool's padding, left out of the listing.
pub(super) const INT3_WORD: u32 = 0xCCCC_CCCC;

/// The Intel-syntax listing of `code` (laid out by `layout`): the constant pool before
/// `entry` as 32-bit words (of an AVX2 vector, the first of each 32-byte group), then the
/// instructions.
pub(super) fn listing(plan: &KernelPlan, layout: &Layout, code: &[u8], entry: usize) -> String {
    use std::fmt::Write;
    let isa = layout.isa;
    let mut out = format!(
        "; function `{}`: {}, {} f32 lanes, {UNROLL} bodies per main-loop trip \
         (graphlift codegen::asm)\n",
        plan.name,
        isa.name(),
        isa.lanes()
    );
    let mut f = IntelFormatter::new();
    let mut text = String::new();
    for (i, word) in code[..entry].chunks_exact(4).enumerate() {
        let bits = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        let repeat = isa == VectorIsa::Avx2 && i % 8 >= 2;
        if bits == INT3_WORD || repeat {
            continue;
        }
        let _ = writeln!(
            out,
            "{:5x}:  dd {bits:#010x}  ; {}",
            4 * i,
            f32::from_bits(bits)
        );
    }
    for ins in Decoder::with_ip(64, &code[entry..], entry as u64, DecoderOptions::NONE).iter() {
        text.clear();
        f.format(&ins, &mut text);
        let _ = writeln!(out, "{:5x}:  {text}", ins.ip());
    }
    out
}
