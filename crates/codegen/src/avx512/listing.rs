//! The Intel-syntax listing of an assembled kernel (`graphlift explain`, `JitKernel::ir`):
//! its constant pool as words, then its instructions with their offsets.

use iced_x86::{Decoder, DecoderOptions, Formatter, IntelFormatter};

use super::{LANES, UNROLL};
use crate::plan::KernelPlan;

/// Four `int3` bytes: the pool's padding, left out of the listing.
pub(super) const INT3_WORD: u32 = 0xCCCC_CCCC;

/// The Intel-syntax listing of `code`: the constant pool before `entry` as 32-bit words, then
/// the instructions.
pub(super) fn listing(plan: &KernelPlan, code: &[u8], entry: usize) -> String {
    use std::fmt::Write;
    let mut out = format!(
        "; function `{}`: AVX-512, {LANES} f32 lanes, {UNROLL} bodies per main-loop trip \
         (graphlift codegen::avx512)\n",
        plan.name
    );
    let mut f = IntelFormatter::new();
    let mut text = String::new();
    for (i, word) in code[..entry].chunks_exact(4).enumerate() {
        let bits = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        if bits == INT3_WORD {
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
