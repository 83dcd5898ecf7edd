#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| browser_mcp_fuzz::args(data));
