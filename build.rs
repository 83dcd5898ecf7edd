//! Link flags of the two binaries.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    // Relative relocations packed (DT_RELR): the dynamic loader reads every relocation of a
    // binary at start, and the pages it read stay in the process's RSS. Packed, the daemon's
    // table is a few KiB instead of 368 KiB (browserctl's: 218 KiB) (issue 17). GNU ld and
    // lld leave the tables unpacked when the C library cannot read packed ones (glibc before
    // 2.36).
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
