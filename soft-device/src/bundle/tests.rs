//! The bundle reader's unit tests.

use super::*;

#[test]
fn va_hex_strings() {
    let v: Va = serde_json::from_str("\"0x7f0000001000\"").unwrap();
    assert_eq!(v, Va(0x7f00_0000_1000));
    assert_eq!(serde_json::to_string(&v).unwrap(), "\"0x7f0000001000\"");
    assert!(serde_json::from_str::<Va>("\"7f00\"").is_err());
    assert!(serde_json::from_str::<Va>("4096").is_err());
    assert!(serde_json::from_str::<Va>("\"0xZZ\"").is_err());
    let long = format!("\"0x{}\"", "f".repeat(10_000));
    let msg = serde_json::from_str::<Va>(&long).unwrap_err().to_string();
    assert!(msg.len() < 300 && msg.contains("10002 bytes"), "{msg}");
}

#[test]
fn paths_stay_inside() {
    assert!(is_inside("ib.bin"));
    assert!(is_inside("expected/y.bin"));
    for bad in ["", "/etc/passwd", "../x", "a/../../b"] {
        assert!(!is_inside(bad), "{bad}");
    }
}

#[test]
fn shown_cuts_long_text() {
    assert_eq!(shown("short"), "\"short\"");
    let long = "é".repeat(100);
    let quoted = shown(&long);
    assert!(quoted.starts_with(&format!("\"{}\"", "é".repeat(SHOWN_CHARS_MAX))), "{quoted}");
    assert!(quoted.ends_with("\"… (200 bytes)"), "{quoted}");
}

/// A manifest that validates: a kernargs region with a kernarg site, an input, a signal, an
/// IB with a DIM site.
fn sample() -> Manifest {
    let region = |name: &str, va: u64, size: u64, role: Role, dtype: Option<&str>| Region {
        name: name.into(),
        va: Va(va),
        size,
        file: None,
        role,
        dtype: dtype.map(Into::into),
    };
    Manifest {
        format: FORMAT.into(),
        arch: "gfx1100".into(),
        ib: IbEntry { va: Va(0x7e00_0000_1000), file: "ib.bin".into(), size_dwords: 16 },
        aql: AqlEntry { file: "aql.bin".into(), packets: 1 },
        code_objects: Vec::new(),
        regions: vec![
            region("kernargs", 0x7e00_0000_0000, 256, Role::Kernargs, Some("bytes")),
            region("x", 0x7e00_0010_0000, 4096, Role::Input, Some("f32")),
            region("done", 0x5160_0000, 8, Role::Signal, Some("i64")),
        ],
        patch_sites: vec![
            PatchSite {
                binding: "n".into(),
                kind: PatchKind::KernargU32,
                va: Va(0x7e00_0000_000c),
                rule: "position + 1".into(),
            },
            PatchSite {
                binding: "grid".into(),
                kind: PatchKind::DispatchDim,
                va: Va(0x7e00_0000_1008),
                rule: "ceil((position + 1) / 64)".into(),
            },
        ],
        expected: vec![Expected { region: "x".into(), sha256: "0".repeat(64), file: "expected/x.bin".into() }],
    }
}

#[test]
fn validation_names_the_json_path_and_the_value() {
    sample().validate().unwrap();
    type Mutation = Box<dyn Fn(&mut Manifest)>;
    let cases: Vec<(Mutation, &str, &str)> = vec![
        (Box::new(|m| m.arch = "gfx9000".into()), "arch", "\"gfx9000\" is not a supported target (one of gfx1030"),
        (Box::new(|m| m.ib.size_dwords = 0), "ib.size_dwords", "0 is outside 1..=267386880"),
        (Box::new(|m| m.aql.packets = u32::MAX), "aql.packets", "4294967295 is outside 1..=65536"),
        (Box::new(|m| m.ib.va = Va(0x7e00_0000_1004)), "ib.va", "0x7e0000001004 is not aligned to 256 bytes"),
        (Box::new(|m| m.ib.va = Va(u64::MAX - 8)), "ib.va", "is outside the address space"),
        (Box::new(|m| m.regions[1].name = "kernargs".into()), "regions[1].name", "is also the name of regions[0]"),
        (Box::new(|m| m.regions[1].dtype = Some("float".into())), "regions[1].dtype", "\"float\" is not a known dtype"),
        (Box::new(|m| m.regions[1].size = 4098), "regions[1].size", "4098 is not a whole number of f32 elements"),
        (Box::new(|m| m.regions[2].va = Va(0)), "regions[2].va", "0 is not a signal handle"),
        (Box::new(|m| m.regions[1].va = Va(0x7e00_0000_0000)), "regions[1].va", "overlaps regions[0]"),
        (Box::new(|m| m.regions[1].file = Some("a/../../b".into())), "regions[1].file", "not a relative path inside"),
        (Box::new(|m| m.regions[1].file = Some("f".repeat(2000))), "regions[1].file", "longer than the limit of 1024"),
        (
            Box::new(|m| m.regions[1].file = Some("regions/a\0b.bin".into())),
            "regions[1].file",
            "\"regions/a\\0b.bin\" holds a control character",
        ),
        (
            Box::new(|m| m.ib.file = "ib/\u{1b}[2J.bin".into()),
            "ib.file",
            "\"ib/\\x1b[2J.bin\" holds a control character",
        ),
        (
            Box::new(|m| m.expected[0].file = "expected/x.bin/".into()),
            "expected[0].file",
            "ends with `/`: it names a directory",
        ),
        (
            Box::new(|m| m.patch_sites[0].rule = "position ** banana".into()),
            "patch_sites[0].rule",
            "\"position ** banana\" is not a rule",
        ),
        (Box::new(|m| m.patch_sites[0].va = Va(0x10_0000)), "patch_sites[0].va", "0x100000 lies in no region"),
        (Box::new(|m| m.patch_sites[0].va = Va(0x7e00_0010_0000)), "patch_sites[0].va", "of role input"),
        (Box::new(|m| m.patch_sites[0].va = Va(0x7e00_0000_000e)), "patch_sites[0].va", "is not dword aligned"),
        (
            Box::new(|m| m.patch_sites[1].va = Va(0x7e00_0000_1040)),
            "patch_sites[1].va",
            "lies outside the IB [0x7e0000001000, 0x7e0000001040)",
        ),
        (Box::new(|m| m.expected[0].region = "done".into()), "expected[0].region", "\"done\" is a signal region"),
        (Box::new(|m| m.expected[0].region = "y".into()), "expected[0].region", "\"y\" is not the name of a region"),
        (Box::new(|m| m.expected[0].sha256 = "g".repeat(64)), "expected[0].sha256", "is not 64 hex digits"),
        (
            Box::new(|m| m.regions[1].size = DEVICE_BYTES_MAX),
            "regions",
            "over the soft device's memory budget of 1069547520 bytes",
        ),
    ];
    for (mutate, at, needle) in cases {
        let mut m = sample();
        mutate(&mut m);
        let err = m.validate().unwrap_err();
        assert!(!err.is_io(), "{err}");
        let msg = err.to_string();
        assert!(matches!(&err, BundleError::Invalid { at: a, .. } if a == at), "{at}: {msg}");
        assert!(msg.starts_with(&format!("manifest.json: {at}: ")) && msg.contains(needle), "{at}: {msg}");
    }
}

#[test]
fn io_errors_are_told_from_invalid_bundles() {
    let missing = Bundle::open(Path::new("/nonexistent/redline-bundle")).unwrap_err();
    assert!(missing.is_io() && matches!(missing, BundleError::Dir { .. }), "{missing}");
    let file = Bundle::open(Path::new("/dev/null")).unwrap_err();
    assert!(file.is_io() && file.to_string().contains("a character device, not a bundle directory"), "{file}");
    let dir = std::env::temp_dir().join(format!("redline-bundle-unit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let none = Bundle::open(&dir).unwrap_err();
    assert!(none.is_io() && none.to_string().starts_with("manifest.json: cannot read"), "{none}");
    std::fs::write(dir.join("manifest.json"), b"{\"format\": 1}").unwrap();
    let parse = Bundle::open(&dir).unwrap_err();
    assert!(!parse.is_io(), "{parse}");
    assert_eq!(parse.to_string(), "manifest.json: line 1, column 12: invalid type: integer `1`, expected a string");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_budget_is_the_memory_less_the_kernarg_pool() {
    assert_eq!(DEVICE_BYTES_MAX, (1 << 30) - (4 << 20));
}
