#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| cosid_fuzz::state_file(data));
