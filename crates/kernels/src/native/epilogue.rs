//! The hook through which a native producer (`MatMul`, `Convolution`) hands each finished
//! block of its output to an elementwise epilogue while the block is still in cache.

/// Work run on each block of a producer's output as soon as the producer has written it:
/// the fused kernel that consumes a `MatMul` or `Convolution` result, run in the producer's
/// output loop (XLA's and oneDNN's "output fusion", nGraph's fused `MatMulBias`), instead of
/// as a separate pass over the whole result.
///
/// A producer calls [`Epilogue::run`] once per block it writes, with the block's first
/// element index (in the producer's flat, row-major output) and the block's elements. The
/// blocks of one call cover the output exactly once; blocks may run concurrently on
/// several threads, always disjoint.
#[derive(Clone, Copy)]
pub struct Epilogue<'a> {
    f: &'a (dyn Fn(Block) + Sync),
    sole_reader: bool,
}

/// One finished block, as [`Epilogue::run`] hands it to the epilogue's function.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    /// Index of the block's first element in the producer's output.
    pub begin: usize,
    /// Number of elements.
    pub len: usize,
    /// The block's first element. Points at `len` initialized, immutable elements of
    /// `element_bytes` bytes each for the whole call of the epilogue's function (it comes
    /// from a borrowed slice in [`Epilogue::run`], the only place a `Block` is made).
    pub first: *const u8,
    /// Size of one element in bytes (`size_of` the producer's element type).
    pub element_bytes: usize,
}

impl<'a> Epilogue<'a> {
    /// An epilogue that calls `f` on each block; the producer writes its whole result as
    /// well (others read it).
    pub fn new(f: &'a (dyn Fn(Block) + Sync)) -> Epilogue<'a> {
        Epilogue {
            f,
            sole_reader: false,
        }
    }

    /// An epilogue that calls `f` on each block and is the only reader of the producer's
    /// result: the producer may hand it blocks from scratch buffers of its own and leave
    /// the result's elements as they were (unspecified), so that a result larger than the
    /// caches is neither written to memory nor read back. (Producers that do:
    /// the convolutions split by bands of output rows.)
    pub fn sole_reader(f: &'a (dyn Fn(Block) + Sync)) -> Epilogue<'a> {
        Epilogue {
            f,
            sole_reader: true,
        }
    }

    /// Whether the producer may leave its result unwritten ([`Epilogue::sole_reader`]).
    pub fn is_sole_reader(&self) -> bool {
        self.sole_reader
    }

    /// Hands `block`, elements `begin..begin + block.len()` of the producer's output, to the
    /// epilogue. Returns when the epilogue has finished with it.
    pub fn run<T: Copy>(&self, begin: usize, block: &[T]) {
        if block.is_empty() {
            return;
        }
        (self.f)(Block {
            begin,
            len: block.len(),
            first: block.as_ptr().cast(),
            element_bytes: std::mem::size_of::<T>(),
        });
    }
}

impl std::fmt::Debug for Epilogue<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Epilogue")
    }
}
