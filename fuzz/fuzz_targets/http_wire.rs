#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| cosid_fuzz::http_wire(data));
