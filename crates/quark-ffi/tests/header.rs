//! `include/quark.h` must be what cbindgen makes from the crate today:
//! regenerate it and compare. `QUARK_BLESS=1` rewrites the file instead.

use std::path::Path;

#[test]
fn header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen failed");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let path = dir.join("include/quark.h");
    if std::env::var_os("QUARK_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write include/quark.h");
        return;
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "include/quark.h is stale: run QUARK_BLESS=1 cargo test -p quark-ffi --test header"
    );
}
