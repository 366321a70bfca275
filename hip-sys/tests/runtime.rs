//! Tests against the installed `libamdhip64` (Debian: `libamdhip64-5`). Without it the tests that
//! need it fail under `CI=true` and are skipped, with the reason printed, otherwise.

use std::ffi::OsString;
use std::path::PathBuf;

use hip_sys::{HEADER_VERSION_MAJOR, Hip, HipError, HipFns, LoadError};

fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// The runtime from the default candidates (the environment override is ignored, so a developer's
/// setting cannot change what these tests mean), or `None` after printing why it is absent.
fn runtime() -> Option<Hip> {
    match Hip::load_with_env(None) {
        Ok(hip) => Some(hip),
        Err(error @ LoadError::NotFound { .. }) => {
            assert!(!in_ci(), "CI=true and the HIP runtime is not installed: {error}");
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

fn describe(hip: &Hip, error: HipError) -> String {
    let name = hip.error_name(error).map(|text| text.to_string_lossy().into_owned());
    let text = hip.error_string(error).map(|text| text.to_string_lossy().into_owned());
    format!("{error} [runtime: {name:?}, {text:?}]")
}

#[test]
fn loads_with_every_symbol() {
    let Some(hip) = runtime() else { return };
    println!("opened {} as {}", hip.opened_as().display(), hip.library_path().display());
    assert!(hip.library_path().is_absolute(), "dladdr names the mapped file: {}", hip.library_path().display());
    assert_eq!(HipFns::SYMBOLS.len(), 21);
}

#[test]
fn versions_are_reported() {
    let Some(hip) = runtime() else { return };
    match hip.runtime_version() {
        Ok(version) => {
            println!("hipRuntimeGetVersion: {version} (major {})", version / 10_000_000);
            if hip.opened_as().to_string_lossy().contains(".so.5") {
                assert_eq!(version / 10_000_000, HEADER_VERSION_MAJOR, "a .so.5 is a ROCm 5 runtime");
            }
        }
        Err(error) => println!("hipRuntimeGetVersion failed: {}", describe(&hip, error)),
    }
    match hip.driver_version() {
        Ok(version) => println!("hipDriverGetVersion: {version}"),
        Err(error) => println!("hipDriverGetVersion failed: {}", describe(&hip, error)),
    }
}

#[test]
fn init_returns_a_documented_outcome() {
    let Some(hip) = runtime() else { return };
    let error = hip.init();
    println!("hipInit(0): {}", describe(&hip, error));
    match hip.device_count() {
        Ok(count) => println!("hipGetDeviceCount: {count}"),
        Err(count_error) => println!("hipGetDeviceCount failed: {}", describe(&hip, count_error)),
    }
    if kfd_usable() {
        assert_eq!(error, HipError::SUCCESS, "/dev/kfd is usable");
    } else {
        assert!(!error.is_success(), "hipInit succeeded without a usable /dev/kfd");
        assert!(error.name().is_some(), "hipInit returned an undeclared code {error:?}");
    }
}

#[test]
fn a_missing_override_path_is_not_found() {
    let path = "/nonexistent/libamdhip64.so.5";
    let error = Hip::load_with_env(Some(OsString::from(path))).expect_err("a nonexistent path loaded");
    let LoadError::NotFound { tried } = &error else { panic!("unexpected {error:?}") };
    assert_eq!(tried.len(), 1, "the override is the only candidate");
    assert_eq!(tried[0].candidate, PathBuf::from(path));
    assert!(!tried[0].error.is_empty());
    assert!(error.to_string().contains(path), "{error}");
}

#[test]
fn a_library_without_the_symbols_lists_them_all() {
    let error = Hip::load_with_env(Some(OsString::from("libc.so.6"))).expect_err("libc is not the HIP runtime");
    let LoadError::MissingSymbols { library, missing } = &error else { panic!("unexpected {error:?}") };
    assert_eq!(library, &PathBuf::from("libc.so.6"));
    assert_eq!(missing.as_slice(), HipFns::SYMBOLS, "libc defines none of them");
    println!("{error}");
}
