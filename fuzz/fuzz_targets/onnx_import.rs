//! Random bytes into the ONNX importer: it returns `Ok` or `Err`, and never panics, hangs
//! (libFuzzer's `-timeout`) or allocates without bound (`-rss_limit_mb`, `-malloc_limit_mb`).
//! An imported model is also validated, as every consumer of the importer does.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(model) = graphlift::onnx::import_model_bytes(data) {
        model
            .function
            .validate()
            .expect("the importer returns only valid Functions");
    }
});
