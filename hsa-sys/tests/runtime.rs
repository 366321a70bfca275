//! Tests against the installed `libhsa-runtime64` (Debian: `libhsa-runtime64-1`). Without it the
//! tests that need it fail under `CI=true` and are skipped, with the reason printed, otherwise.

use std::ffi::OsString;
use std::path::PathBuf;

use hsa_sys::{Hsa, HsaFns, HsaStatus, LoadError};

fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// The runtime from the default candidates (the environment override is ignored, so a developer's
/// setting cannot change what these tests mean), or `None` after printing why it is absent.
fn runtime() -> Option<Hsa> {
    match Hsa::load_with_env(None) {
        Ok(hsa) => Some(hsa),
        Err(error @ LoadError::NotFound { .. }) => {
            assert!(!in_ci(), "CI=true and the HSA runtime is not installed: {error}");
            eprintln!("skipping: {error}");
            None
        }
        Err(error) => panic!("{error}"),
    }
}

/// Whether this machine has a kernel driver the runtime can open.
fn kfd_usable() -> bool {
    std::fs::OpenOptions::new().read(true).write(true).open("/dev/kfd").is_ok()
}

#[test]
fn loads_with_every_symbol() {
    let Some(hsa) = runtime() else { return };
    println!("opened {} as {}", hsa.opened_as().display(), hsa.library_path().display());
    assert!(hsa.library_path().is_absolute(), "dladdr names the mapped file: {}", hsa.library_path().display());
    assert_eq!(HsaFns::SYMBOLS.len(), 37);
    assert!(hsa.extensions().redline_soft_hsa_inject.is_none(), "ROCr has no Redline extension");
}

#[test]
fn init_returns_a_documented_outcome() {
    let Some(hsa) = runtime() else { return };
    let status = hsa.init();
    println!("hsa_init: {status}");
    match hsa.status_string(status) {
        Ok(text) => println!("hsa_status_string: {}", text.to_string_lossy()),
        Err(error) => println!("hsa_status_string failed: {error}"),
    }
    if kfd_usable() {
        assert_eq!(status, HsaStatus::SUCCESS, "/dev/kfd is usable");
        // SAFETY: balances the successful `hsa_init` above; nothing else of the runtime is in use.
        let shut_down = unsafe { (hsa.fns().hsa_shut_down)() };
        assert_eq!(shut_down, HsaStatus::SUCCESS);
    } else {
        assert!(!status.is_success(), "hsa_init succeeded without a usable /dev/kfd");
        assert!(status.name().is_some(), "hsa_init returned an undeclared status {status:?}");
    }
}

#[test]
fn a_missing_override_path_is_not_found() {
    let path = "/nonexistent/libhsa-runtime64.so.1";
    let error = Hsa::load_with_env(Some(OsString::from(path))).expect_err("a nonexistent path loaded");
    let LoadError::NotFound { tried } = &error else { panic!("unexpected {error:?}") };
    assert_eq!(tried.len(), 1, "the override is the only candidate");
    assert_eq!(tried[0].candidate, PathBuf::from(path));
    assert!(!tried[0].error.is_empty());
    assert!(error.to_string().contains(path), "{error}");
}

#[test]
fn a_library_without_the_symbols_lists_them_all() {
    let error = Hsa::load_with_env(Some(OsString::from("libc.so.6"))).expect_err("libc is not the HSA runtime");
    let LoadError::MissingSymbols { library, missing } = &error else { panic!("unexpected {error:?}") };
    assert_eq!(library, &PathBuf::from("libc.so.6"));
    assert_eq!(missing.as_slice(), HsaFns::SYMBOLS, "libc defines none of them");
    println!("{error}");
}
