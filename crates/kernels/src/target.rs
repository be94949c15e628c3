//! The one owner of what the host can run and which code paths are switched on: the CPU's
//! features (detected once per process) and the `GRAPHLIFT_*` settings, read once into a
//! [`Target`] that the backend builds and passes down explicitly (as Cranelift's ISA flags).

use std::sync::atomic::{AtomicU8, Ordering};

use crate::parallel::ThreadConfig;

/// Turns the vector math library off (kernels keep `exp`, `tanh`, … inline) when `0`.
pub const VECLIB_ENV: &str = "GRAPHLIFT_VECLIB";
/// Turns AVX-512 code off when `0`: assembled kernels are AVX2 code on a host that has it
/// ([`ASSEMBLER_ENV`] turns them off), and products use the AVX2 tiles.
pub const AVX512_ENV: &str = "GRAPHLIFT_AVX512";
/// Turns assembled kernels off when `0`: every fused kernel goes through Cranelift's
/// four-lane loops.
pub const ASSEMBLER_ENV: &str = "GRAPHLIFT_ASSEMBLER";
/// Turns non-temporal stores off when `0`.
pub const STREAM_ENV: &str = "GRAPHLIFT_STREAM";
/// Turns epilogue fusion (kernels run in the output loop of a MatMul or convolution) off
/// when `0`.
pub const EPILOGUE_FUSION_ENV: &str = "GRAPHLIFT_EPILOGUE_FUSION";
/// Turns batch splitting (a batched model run sample by sample, whole samples spread over
/// the threads) off when `0`.
pub const BATCH_SPLIT_ENV: &str = "GRAPHLIFT_BATCH_SPLIT";
/// The number of threads kernel calls are split over (default: the available cores).
pub const NUM_THREADS_ENV: &str = "GRAPHLIFT_NUM_THREADS";
/// The most compiled kernels a backend's kernel cache keeps (least recently used evicted
/// first; `0` caches nothing). Default: [`DEFAULT_KERNEL_CACHE_CAPACITY`].
pub const KERNEL_CACHE_ENV: &str = "GRAPHLIFT_KERNEL_CACHE";

/// The kernel cache's default capacity, in entries: 1,024.
///
/// An entry is one compiled kernel; the JIT module that holds its code lives while an entry
/// or an executable uses it. Small kernels that no executable uses any more cost about
/// 17 KB resident each (issue 28 measured 140 MB for 8,192 of them), so a full default
/// cache of them holds on the order of 20 MB — affordable in a long-running process —
/// while a model compiles one entry per distinct fused region (tens to hundreds), so
/// several models recompiled in turn, or one model at a handful of shapes, still hit. A
/// lookup hashes the key and moves a hit to the most recent end, a shift over at most this
/// many entries.
pub const DEFAULT_KERNEL_CACHE_CAPACITY: usize = 1024;

/// The kernel cache capacity a [`KERNEL_CACHE_ENV`] value asks for: a non-negative integer
/// (`0` disables the cache), else (unset, empty or not a number) the default,
/// [`DEFAULT_KERNEL_CACHE_CAPACITY`], as [`NUM_THREADS_ENV`] falls back to its default.
pub fn kernel_cache_from(value: Option<&str>) -> usize {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(DEFAULT_KERNEL_CACHE_CAPACITY)
}

/// The x86-64 features graphlift's code paths need (all `false` on other architectures).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuFeatures {
    /// AVX2 (256-bit integer and float vectors).
    pub avx2: bool,
    /// FMA3 fused multiply-add.
    pub fma: bool,
    /// AVX-512 Foundation (sixteen `f32` lanes, mask registers).
    pub avx512f: bool,
    /// BMI2 (`shlx`, used for tail masks).
    pub bmi2: bool,
    /// AVX-512 VNNI (`vpdpbusd`: UINT8 x INT8 products summed four at a time into INT32,
    /// the integer GEMM of `QuantizedMatMul`).
    pub avx512vnni: bool,
    /// F16C (`vcvtph2ps`, `vcvtps2ph`: `f16` to `f32` and back, rounded to nearest even).
    pub f16c: bool,
    /// The vendor is Intel (`cpuid` leaf 0 reads `GenuineIntel`): a tuning fact, not a
    /// feature. The packed product prefetches its next weight panel only there, where the
    /// hardware prefetchers left the first row tile over a panel waiting on L3; on AMD Zen 4
    /// the same prefetch made products slower (BENCHMARKS.md, the twenty-first session).
    pub intel: bool,
}

/// Whether `cpuid` leaf 0 names the vendor `GenuineIntel` (its vendor string in `ebx`,
/// `edx`, `ecx`, in that order).
#[cfg(target_arch = "x86_64")]
fn is_intel() -> bool {
    let id = std::arch::x86_64::__cpuid(0);
    let word = |w: &[u8; 4]| u32::from_le_bytes(*w);
    [id.ebx, id.edx, id.ecx] == [word(b"Genu"), word(b"ineI"), word(b"ntel")]
}

impl CpuFeatures {
    /// The host's features, detected on the first call (`cpuid`, through
    /// `is_x86_feature_detected!`) and cached for the process in one relaxed atomic byte, so
    /// that the library's per-strip dispatch costs one load (a race detects twice, alike).
    #[inline]
    pub fn host() -> CpuFeatures {
        const DETECTED: u8 = 1 << 7;
        static HOST: AtomicU8 = AtomicU8::new(0);
        let mut bits = HOST.load(Ordering::Relaxed);
        if bits & DETECTED == 0 {
            bits = CpuFeatures::detect().to_bits() | DETECTED;
            HOST.store(bits, Ordering::Relaxed);
        }
        CpuFeatures::from_bits(bits)
    }

    #[cold]
    fn detect() -> CpuFeatures {
        #[cfg(target_arch = "x86_64")]
        {
            CpuFeatures {
                avx2: std::arch::is_x86_feature_detected!("avx2"),
                fma: std::arch::is_x86_feature_detected!("fma"),
                avx512f: std::arch::is_x86_feature_detected!("avx512f"),
                bmi2: std::arch::is_x86_feature_detected!("bmi2"),
                avx512vnni: std::arch::is_x86_feature_detected!("avx512vnni"),
                f16c: std::arch::is_x86_feature_detected!("f16c"),
                intel: is_intel(),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            CpuFeatures::default()
        }
    }

    fn to_bits(self) -> u8 {
        u8::from(self.avx2)
            | u8::from(self.fma) << 1
            | u8::from(self.avx512f) << 2
            | u8::from(self.bmi2) << 3
            | u8::from(self.avx512vnni) << 4
            | u8::from(self.f16c) << 5
            | u8::from(self.intel) << 6
    }

    fn from_bits(b: u8) -> CpuFeatures {
        CpuFeatures {
            avx2: b & 1 != 0,
            fma: b & 2 != 0,
            avx512f: b & 4 != 0,
            bmi2: b & 8 != 0,
            avx512vnni: b & 16 != 0,
            f16c: b & 32 != 0,
            intel: b & 64 != 0,
        }
    }

    /// Whether the vector math library has wide code for this CPU: AVX2 and FMA (its
    /// AVX-512 code also needs [`CpuFeatures::avx512f`]).
    pub fn has_wide_library(&self) -> bool {
        self.avx2 && self.fma
    }

    /// Whether the library's sixteen-lane code runs: AVX-512F.
    pub fn has_avx512_library(&self) -> bool {
        self.avx512f
    }

    /// Whether the AVX-512 kernel assembler's code runs: AVX-512F and BMI2.
    pub fn has_avx512_kernels(&self) -> bool {
        self.avx512f && self.bmi2
    }

    /// Whether the assembler's AVX2 code runs: AVX2, FMA and F16C (every AVX2 processor
    /// has F16C, which came before it).
    pub fn has_avx2_kernels(&self) -> bool {
        self.avx2 && self.fma && self.f16c
    }

    /// Whether the host runs the assembler's code for `isa`.
    pub fn runs(&self, isa: VectorIsa) -> bool {
        match isa {
            VectorIsa::Avx2 => self.has_avx2_kernels(),
            VectorIsa::Avx512 => self.has_avx512_kernels(),
        }
    }
}

/// The vector instruction set of an assembled kernel (`graphlift_codegen::asm`): the width
/// of its vectors and how many registers it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VectorIsa {
    /// AVX2 with FMA3 and F16C: sixteen 256-bit `ymm` registers, eight `f32` lanes each.
    Avx2,
    /// AVX-512F (with BMI2): thirty-two 512-bit `zmm` registers, sixteen `f32` lanes each,
    /// and mask registers.
    Avx512,
}

impl VectorIsa {
    /// `f32` lanes per vector: 8 or 16.
    pub fn lanes(self) -> usize {
        match self {
            VectorIsa::Avx2 => 8,
            VectorIsa::Avx512 => 16,
        }
    }

    /// Vector registers: 16 or 32.
    pub fn registers(self) -> usize {
        match self {
            VectorIsa::Avx2 => 16,
            VectorIsa::Avx512 => 32,
        }
    }

    /// Its name in reports: `AVX2` or `AVX-512`.
    pub fn name(self) -> &'static str {
        match self {
            VectorIsa::Avx2 => "AVX2",
            VectorIsa::Avx512 => "AVX-512",
        }
    }
}

/// Why a code path is off: the host cannot run its code, or it was switched off (by a
/// `GRAPHLIFT_*` variable or a `with_*` call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffReason {
    /// The host lacks the named features.
    Host(&'static str),
    /// Switched off by the named environment variable or the builder.
    Switched(&'static str),
    /// Not taken: the host runs the named path, which is faster there.
    Superseded(&'static str),
}

impl OffReason {
    /// Why a path is off: the host cannot run it (`runs` false: it lacks `needs`), or it is
    /// switched off (`on` false, by `env` or the builder); `None` when it is on.
    fn of(runs: bool, needs: &'static str, on: bool, env: &'static str) -> Option<OffReason> {
        if !runs {
            Some(OffReason::Host(needs))
        } else if !on {
            Some(OffReason::Switched(env))
        } else {
            None
        }
    }
}

impl std::fmt::Display for OffReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OffReason::Host(what) => write!(f, "the host lacks {what}"),
            OffReason::Switched(var) => {
                write!(f, "switched off ({var}=0 or the backend's setting)")
            }
            OffReason::Superseded(by) => write!(f, "the host runs {by}, which is faster"),
        }
    }
}

/// The code paths a backend compiles for: the host's features and every switch, read once,
/// with the thread count and the kernel cache's capacity.
/// A setting the host cannot run is off whatever is asked ([`Target::veclib_off`] and the
/// like say why).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The CPU the code runs on.
    pub features: CpuFeatures,
    veclib: bool,
    avx512: bool,
    assembler: bool,
    stream: bool,
    epilogue_fusion: bool,
    batch_split: bool,
    threads: ThreadConfig,
    kernel_cache: usize,
    /// The last-level cache size plans assume, where set; else the host's.
    last_level_cache: Option<usize>,
}

/// A switch variable's value: on unless it is set to `0`.
fn switch(var: &str) -> bool {
    std::env::var(var).map_or(true, |v| v.trim() != "0")
}

impl Target {
    /// The host with every code path it can run switched on, [`ThreadConfig::default`]'s
    /// threads and a kernel cache of [`DEFAULT_KERNEL_CACHE_CAPACITY`] entries (the
    /// environment is not read).
    pub fn host() -> Target {
        Target::for_features(CpuFeatures::host())
    }

    /// `features` with every code path switched on.
    pub fn for_features(features: CpuFeatures) -> Target {
        Target {
            features,
            veclib: true,
            avx512: true,
            assembler: true,
            stream: true,
            epilogue_fusion: true,
            batch_split: true,
            threads: ThreadConfig::default(),
            kernel_cache: DEFAULT_KERNEL_CACHE_CAPACITY,
            last_level_cache: None,
        }
    }

    /// The host, with [`VECLIB_ENV`], [`AVX512_ENV`], [`ASSEMBLER_ENV`], [`STREAM_ENV`],
    /// [`EPILOGUE_FUSION_ENV`] and [`BATCH_SPLIT_ENV`] (each on unless set to `0`),
    /// [`NUM_THREADS_ENV`] ([`ThreadConfig::from_threads_var`]) and [`KERNEL_CACHE_ENV`]
    /// ([`kernel_cache_from`]) read now.
    pub fn from_env() -> Target {
        Target {
            veclib: switch(VECLIB_ENV),
            avx512: switch(AVX512_ENV),
            assembler: switch(ASSEMBLER_ENV),
            stream: switch(STREAM_ENV),
            epilogue_fusion: switch(EPILOGUE_FUSION_ENV),
            batch_split: switch(BATCH_SPLIT_ENV),
            threads: ThreadConfig::from_threads_var(std::env::var(NUM_THREADS_ENV).ok().as_deref()),
            kernel_cache: kernel_cache_from(std::env::var(KERNEL_CACHE_ENV).ok().as_deref()),
            ..Target::host()
        }
    }

    /// This target with the vector math library switched on or off.
    pub fn with_veclib(self, on: bool) -> Target {
        Target { veclib: on, ..self }
    }

    /// This target with AVX-512 kernels switched on or off.
    pub fn with_avx512(self, on: bool) -> Target {
        Target { avx512: on, ..self }
    }

    /// This target with assembled kernels switched on or off.
    pub fn with_assembler(self, on: bool) -> Target {
        Target {
            assembler: on,
            ..self
        }
    }

    /// This target with non-temporal stores switched on or off.
    pub fn with_streaming_stores(self, on: bool) -> Target {
        Target { stream: on, ..self }
    }

    /// This target with epilogue fusion switched on or off.
    pub fn with_epilogue_fusion(self, on: bool) -> Target {
        Target {
            epilogue_fusion: on,
            ..self
        }
    }

    /// This target with batch splitting switched on or off.
    pub fn with_batch_split(self, on: bool) -> Target {
        Target {
            batch_split: on,
            ..self
        }
    }

    /// This target with a thread configuration.
    pub fn with_threads(self, threads: ThreadConfig) -> Target {
        Target { threads, ..self }
    }

    /// This target with a kernel cache of at most `entries` compiled kernels (`0`: none
    /// cached).
    pub fn with_kernel_cache_capacity(self, entries: usize) -> Target {
        Target {
            kernel_cache: entries,
            ..self
        }
    }

    /// This target with a last-level cache of `bytes`, which plans assume in place of the
    /// host's (which kernels write with non-temporal stores, which buffers values share):
    /// for planning for another machine, or testing the plans of one.
    pub fn with_last_level_cache(self, bytes: usize) -> Target {
        Target {
            last_level_cache: Some(bytes),
            ..self
        }
    }

    /// The last-level cache size in bytes plans assume: the one set
    /// ([`Target::with_last_level_cache`]), else the host's
    /// ([`crate::stream::last_level_cache_bytes`]).
    pub fn last_level_cache_bytes(&self) -> usize {
        self.last_level_cache
            .unwrap_or_else(crate::stream::last_level_cache_bytes)
    }

    /// Why kernels do not call the vector math library; `None` when it is on.
    pub fn veclib_off(&self) -> Option<OffReason> {
        let runs = self.features.has_wide_library();
        OffReason::of(runs, "AVX2 and FMA", self.veclib, VECLIB_ENV)
    }

    /// Why no kernel is AVX-512 code; `None` when it is on.
    pub fn avx512_off(&self) -> Option<OffReason> {
        let runs = self.features.has_avx512_kernels();
        OffReason::of(runs, "AVX-512F and BMI2", self.avx512, AVX512_ENV)
    }

    /// Why no kernel is assembled code; `None` when it is on.
    pub fn assembler_off(&self) -> Option<OffReason> {
        let f = &self.features;
        let runs = f.has_avx2_kernels() || f.has_avx512_kernels();
        OffReason::of(runs, "AVX2, FMA and F16C", self.assembler, ASSEMBLER_ENV)
    }

    /// The instruction set kernels that qualify are assembled for: AVX-512 where it is on
    /// ([`Target::avx512`]), else AVX2 where the host has it; `None` when assembled kernels
    /// are off ([`Target::assembler_off`]).
    pub fn vector_isa(&self) -> Option<VectorIsa> {
        if self.assembler_off().is_some() {
            None
        } else if self.avx512() {
            Some(VectorIsa::Avx512)
        } else {
            Some(VectorIsa::Avx2).filter(|_| self.features.has_avx2_kernels())
        }
    }

    /// Why no kernel writes with non-temporal stores; `None` when it is on. A streaming
    /// kernel is strip-mined and its strips copied out (`codegen::strip`), which the AVX2
    /// assembler refuses: where AVX2 kernels are assembled, their plain stores are used
    /// instead, being at least as fast there (BENCHMARKS.md, the nineteenth session).
    pub fn stream_off(&self) -> Option<OffReason> {
        let runs = cfg!(target_arch = "x86_64");
        let off = OffReason::of(runs, "x86-64 non-temporal stores", self.stream, STREAM_ENV);
        match self.vector_isa() {
            Some(VectorIsa::Avx2) if off.is_none() => Some(OffReason::Superseded(
                "assembled AVX2 kernels with plain stores",
            )),
            _ => off,
        }
    }

    /// Whether `f32` `exp`, `sigmoid`, `tanh`, `erf`, divisions and the GELU and SiLU forms
    /// of four-lane kernels are calls to the vector math library.
    pub fn veclib(&self) -> bool {
        self.veclib_off().is_none()
    }

    /// Whether AVX-512 code is on: assembled kernels of sixteen lanes
    /// ([`Target::vector_isa`]) and the products' AVX-512 tiles.
    pub fn avx512(&self) -> bool {
        self.avx512_off().is_none()
    }

    /// Whether kernels whose calls move more than the last-level cache write their outputs
    /// with non-temporal stores.
    pub fn streaming_stores(&self) -> bool {
        self.stream_off().is_none()
    }

    /// Whether kernels that consume a MatMul or convolution result run in its output loop.
    pub fn epilogue_fusion(&self) -> bool {
        self.epilogue_fusion
    }

    /// Whether a batched Function whose samples are independent may run sample by sample.
    pub fn batch_split(&self) -> bool {
        self.batch_split
    }

    /// How kernel calls are split over threads.
    pub fn threads(&self) -> ThreadConfig {
        self.threads
    }

    /// The most compiled kernels a backend's kernel cache keeps (`0`: none).
    pub fn kernel_cache_capacity(&self) -> usize {
        self.kernel_cache
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_without_the_features_gets_no_wide_code_whatever_is_asked() {
        let bare = Target::for_features(CpuFeatures::default()).with_veclib(true);
        assert!(!bare.veclib() && !bare.avx512());
        assert_eq!(bare.veclib_off(), Some(OffReason::Host("AVX2 and FMA")));
        assert_eq!(
            bare.avx512_off(),
            Some(OffReason::Host("AVX-512F and BMI2"))
        );
        let full = CpuFeatures {
            avx2: true,
            fma: true,
            avx512f: true,
            bmi2: true,
            avx512vnni: true,
            f16c: true,
            intel: false,
        };
        let t = Target::for_features(full);
        assert!(t.veclib() && t.avx512() && t.epilogue_fusion());
        let off = t.with_avx512(false).with_veclib(false);
        assert_eq!(off.avx512_off(), Some(OffReason::Switched(AVX512_ENV)));
        assert_eq!(off.veclib_off(), Some(OffReason::Switched(VECLIB_ENV)));
        assert!(off
            .avx512_off()
            .is_some_and(|why| why.to_string().contains("GRAPHLIFT_AVX512=0")));
        assert_eq!(t.vector_isa(), Some(VectorIsa::Avx512));
        assert_eq!(off.vector_isa(), Some(VectorIsa::Avx2));
        let none = t.with_assembler(false);
        assert_eq!(none.vector_isa(), None);
        assert_eq!(
            none.assembler_off(),
            Some(OffReason::Switched(ASSEMBLER_ENV))
        );
        assert_eq!(bare.vector_isa(), None);
        let avx2 = CpuFeatures {
            avx2: true,
            fma: true,
            f16c: true,
            ..CpuFeatures::default()
        };
        assert_eq!(
            Target::for_features(avx2).vector_isa(),
            Some(VectorIsa::Avx2)
        );
    }

    /// Non-temporal stores go with the AVX-512 code, or with no assembled code at all: the
    /// AVX2 assembler's plain stores supersede them.
    #[test]
    fn streaming_stores_are_off_where_avx2_kernels_are_assembled() {
        let avx2 = CpuFeatures {
            avx2: true,
            fma: true,
            f16c: true,
            ..CpuFeatures::default()
        };
        let full = CpuFeatures {
            avx512f: true,
            bmi2: true,
            ..avx2
        };
        let on = |t: Target| t.with_streaming_stores(true).streaming_stores();
        let x86 = cfg!(target_arch = "x86_64");
        assert_eq!(on(Target::for_features(full)), x86);
        assert_eq!(on(Target::for_features(CpuFeatures::default())), x86);
        assert_eq!(on(Target::for_features(avx2).with_assembler(false)), x86);
        let t = Target::for_features(avx2).with_streaming_stores(true);
        if x86 {
            assert!(!t.streaming_stores());
            let why = t.stream_off().unwrap();
            assert!(matches!(why, OffReason::Superseded(_)));
            assert!(why.to_string().contains("AVX2"), "{why}");
        }
        assert!(!Target::for_features(full)
            .with_avx512(false)
            .streaming_stores());
        assert_eq!(
            Target::for_features(full)
                .with_streaming_stores(false)
                .stream_off(),
            Some(OffReason::Switched(STREAM_ENV))
        );
    }

    #[test]
    fn the_kernel_cache_variable_is_a_count_or_the_default() {
        assert_eq!(kernel_cache_from(Some("64")), 64);
        assert_eq!(kernel_cache_from(Some(" 0 ")), 0);
        for bad in [None, Some(""), Some("lots"), Some("-1"), Some("1.5")] {
            assert_eq!(
                kernel_cache_from(bad),
                DEFAULT_KERNEL_CACHE_CAPACITY,
                "{bad:?}"
            );
        }
        let t = Target::host();
        assert_eq!(t.kernel_cache_capacity(), DEFAULT_KERNEL_CACHE_CAPACITY);
        assert_eq!(t.with_kernel_cache_capacity(3).kernel_cache_capacity(), 3);
    }
}
