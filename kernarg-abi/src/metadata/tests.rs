use super::*;
use alloc::vec;

/// A MessagePack value for building test documents with `rmp`'s encoder.
#[derive(Clone)]
pub(crate) enum V {
    Map(Vec<(&'static str, V)>),
    Arr(Vec<V>),
    Str(&'static str),
    U(u64),
    I(i64),
    B(bool),
}

impl V {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut Vec<u8>) {
        use rmp::encode;
        match self {
            V::Map(entries) => {
                encode::write_map_len(out, u32::try_from(entries.len()).unwrap()).unwrap();
                for (k, v) in entries {
                    encode::write_str(out, k).unwrap();
                    v.write(out);
                }
            }
            V::Arr(items) => {
                encode::write_array_len(out, u32::try_from(items.len()).unwrap()).unwrap();
                for v in items {
                    v.write(out);
                }
            }
            V::Str(s) => encode::write_str(out, s).unwrap(),
            V::U(u) => {
                encode::write_uint(out, *u).unwrap();
            }
            V::I(i) => {
                encode::write_sint(out, *i).unwrap();
            }
            V::B(b) => encode::write_bool(out, *b).unwrap(),
        }
    }
}

fn arg(offset: u64, size: u64, kind: &'static str) -> V {
    V::Map(vec![(".offset", V::U(offset)), (".size", V::U(size)), (".value_kind", V::Str(kind))])
}

/// The `add` kernel of `llvm-readelf-19 --notes tests/data/kernels-gfx1100.co`, keys in its order.
fn add_kernel() -> Vec<(&'static str, V)> {
    vec![
        (
            ".args",
            V::Arr(vec![
                V::Map(vec![
                    (".address_space", V::Str("global")),
                    (".offset", V::U(0)),
                    (".size", V::U(8)),
                    (".value_kind", V::Str("global_buffer")),
                ]),
                V::Map(vec![
                    (".address_space", V::Str("global")),
                    (".offset", V::U(8)),
                    (".size", V::U(8)),
                    (".value_kind", V::Str("global_buffer")),
                ]),
                arg(16, 4, "by_value"),
            ]),
        ),
        (".group_segment_fixed_size", V::U(0)),
        (".kernarg_segment_align", V::U(8)),
        (".kernarg_segment_size", V::U(20)),
        (".max_flat_workgroup_size", V::U(1024)),
        (".name", V::Str("add")),
        (".private_segment_fixed_size", V::U(0)),
        (".sgpr_count", V::U(18)),
        (".sgpr_spill_count", V::U(0)),
        (".symbol", V::Str("add.kd")),
        (".uniform_work_group_size", V::U(1)),
        (".uses_dynamic_stack", V::B(false)),
        (".vgpr_count", V::U(4)),
        (".vgpr_spill_count", V::U(0)),
        (".wavefront_size", V::U(32)),
        (".workgroup_processor_mode", V::U(1)),
    ]
}

fn root(kernels: Vec<V>) -> V {
    V::Map(vec![
        ("amdhsa.kernels", V::Arr(kernels)),
        ("amdhsa.target", V::Str("amdgcn-amd-amdhsa--gfx1100")),
        ("amdhsa.version", V::Arr(vec![V::U(1), V::U(2)])),
    ])
}

fn with(mut kernel: Vec<(&'static str, V)>, key: &'static str, value: Option<V>) -> V {
    kernel.retain(|(k, _)| *k != key);
    if let Some(v) = value {
        kernel.push((key, v));
    }
    V::Map(kernel)
}

#[test]
fn add_kernel_fields() {
    let m = parse_metadata(&root(vec![V::Map(add_kernel())]).encode()).unwrap();
    assert_eq!(m.version, [1, 2]);
    assert_eq!(m.target, "amdgcn-amd-amdhsa--gfx1100");
    assert!(m.printf.is_empty());
    let k = &m.kernels[0];
    assert_eq!((k.name.as_str(), k.symbol.as_str()), ("add", "add.kd"));
    assert_eq!((k.kernarg_segment_size, k.kernarg_segment_align), (20, 8));
    assert_eq!((k.group_segment_fixed_size, k.private_segment_fixed_size), (0, 0));
    assert_eq!((k.wavefront_size, k.sgpr_count, k.vgpr_count, k.agpr_count), (32, 18, 4, None));
    assert_eq!(k.max_flat_workgroup_size, 1024);
    assert_eq!((k.sgpr_spill_count, k.vgpr_spill_count), (Some(0), Some(0)));
    assert!(!k.uses_dynamic_stack);
    assert_eq!(k.workgroup_processor_mode, Some(true));
    assert_eq!(k.uniform_work_group_size, Some(1));
    assert_eq!((k.reqd_workgroup_size, k.kind.as_deref(), k.language.as_deref()), (None, None, None));
    assert_eq!(k.args.len(), 3);
    assert_eq!(k.args[1].offset, 8);
    assert_eq!(k.args[1].value_kind, ValueKind::GlobalBuffer);
    assert_eq!(k.args[1].address_space, Some(AddressSpace::Global));
    assert_eq!((k.args[2].offset, k.args[2].size, &k.args[2].value_kind), (16, 4, &ValueKind::ByValue));
    assert_eq!(k.args[2].address_space, None);
}

#[test]
fn optional_keys_and_unknown_keys() {
    let mut kernel = add_kernel();
    kernel.push((".reqd_workgroup_size", V::Arr(vec![V::U(64), V::U(1), V::U(1)])));
    kernel.push((".kind", V::Str("normal")));
    kernel.push((".language", V::Str("OpenCL C")));
    kernel.push((".language_version", V::Arr(vec![V::U(2), V::U(0)])));
    kernel.push((".agpr_count", V::U(0)));
    kernel.push((".future_key", V::Map(vec![("x", V::Arr(vec![V::I(-1), V::Str("y")]))])));
    kernel.retain(|(k, _)| *k != ".args");
    kernel.push((
        ".args",
        V::Arr(vec![V::Map(vec![
            (".name", V::Str("lds")),
            (".type_name", V::Str("float*")),
            (".offset", V::U(0)),
            (".size", V::U(4)),
            (".value_kind", V::Str("dynamic_shared_pointer")),
            (".address_space", V::Str("local")),
            (".pointee_align", V::U(16)),
            (".access", V::Str("read_only")),
            (".actual_access", V::Str("read_write")),
            (".is_const", V::B(true)),
            (".is_restrict", V::B(true)),
            (".is_volatile", V::B(false)),
            (".is_pipe", V::B(false)),
            (".value_type", V::Str("f32")),
        ])]),
    ));
    let mut doc = root(vec![V::Map(kernel)]);
    if let V::Map(entries) = &mut doc {
        entries.push(("amdhsa.printf", V::Arr(vec![V::Str("1:1:4:%d\\n")])));
        entries.push(("amdhsa.unknown", V::U(7)));
    }
    let m = parse_metadata(&doc.encode()).unwrap();
    assert_eq!(m.printf, ["1:1:4:%d\\n"]);
    let k = &m.kernels[0];
    assert_eq!(k.reqd_workgroup_size, Some([64, 1, 1]));
    assert_eq!(k.kind.as_deref(), Some("normal"));
    assert_eq!(k.language.as_deref(), Some("OpenCL C"));
    assert_eq!(k.agpr_count, Some(0));
    let a = &k.args[0];
    assert_eq!((a.name.as_deref(), a.type_name.as_deref()), (Some("lds"), Some("float*")));
    assert_eq!(a.value_kind, ValueKind::DynamicSharedPointer);
    assert_eq!(a.address_space, Some(AddressSpace::Local));
    assert_eq!((a.access.clone(), a.actual_access.clone()), (Some(Access::ReadOnly), Some(Access::ReadWrite)));
    assert_eq!(a.pointee_align, Some(16));
    assert_eq!((a.is_const, a.is_restrict, a.is_volatile, a.is_pipe), (true, true, false, false));
}

#[test]
fn missing_required_keys_name_kernel_and_key() {
    for key in [
        ".symbol",
        ".kernarg_segment_size",
        ".kernarg_segment_align",
        ".group_segment_fixed_size",
        ".private_segment_fixed_size",
        ".wavefront_size",
        ".sgpr_count",
        ".vgpr_count",
        ".max_flat_workgroup_size",
    ] {
        let doc = root(vec![V::Map(add_kernel()), with(add_kernel(), key, None)]);
        assert_eq!(
            parse_metadata(&doc.encode()),
            Err(MetadataError::MissingKernelKey { kernel: "add".into(), key }),
            "{key}"
        );
    }
    let doc = root(vec![V::Map(add_kernel()), with(add_kernel(), ".name", None)]);
    assert_eq!(
        parse_metadata(&doc.encode()),
        Err(MetadataError::MissingKernelKey { kernel: "amdhsa.kernels[1]".into(), key: ".name" })
    );
    for (key, drop) in [(".offset", 0), (".size", 1), (".value_kind", 2)] {
        let mut a = vec![(".offset", V::U(0)), (".size", V::U(4)), (".value_kind", V::Str("by_value"))];
        a.remove(drop);
        let doc = root(vec![with(add_kernel(), ".args", Some(V::Arr(vec![arg(0, 4, "by_value"), V::Map(a)])))]);
        assert_eq!(
            parse_metadata(&doc.encode()),
            Err(MetadataError::MissingArgKey { kernel: "add".into(), index: 1, key })
        );
    }
    for key in ["amdhsa.version", "amdhsa.target", "amdhsa.kernels"] {
        let V::Map(mut entries) = root(vec![]) else { unreachable!() };
        entries.retain(|(k, _)| *k != key);
        assert_eq!(parse_metadata(&V::Map(entries).encode()), Err(MetadataError::MissingRootKey { key }));
    }
}

#[test]
fn duplicate_keys_are_errors_with_their_offset() {
    // {"amdhsa.target": "a", "amdhsa.target": "b"}: fixmap (1) + fixstr key (14) + "a" (2), so the
    // second key starts at byte 17.
    let doc = V::Map(vec![("amdhsa.target", V::Str("a")), ("amdhsa.target", V::Str("b"))]).encode();
    assert_eq!(
        parse_metadata(&doc),
        Err(MetadataError::DuplicateKey {
            path: FieldPath("metadata root".into()),
            offset: 17,
            key: "amdhsa.target".into()
        })
    );
    let mut kernel = add_kernel();
    kernel.push((".name", V::Str("again")));
    let err = parse_metadata(&root(vec![V::Map(kernel)]).encode()).unwrap_err();
    assert!(
        matches!(&err, MetadataError::DuplicateKey { path, key, .. } if path.as_str() == "amdhsa.kernels[0]" && key == ".name"),
        "{err:?}"
    );
    // Unknown keys too.
    let mut kernel = add_kernel();
    kernel.push((".x", V::U(1)));
    kernel.push((".x", V::U(1)));
    assert!(matches!(parse_metadata(&root(vec![V::Map(kernel)]).encode()), Err(MetadataError::DuplicateKey { .. })));
}

#[test]
fn wrong_types_and_ranges_name_the_field() {
    let doc = root(vec![with(add_kernel(), ".kernarg_segment_size", Some(V::Str("20")))]);
    let err = parse_metadata(&doc.encode()).unwrap_err();
    assert!(
        matches!(&err, MetadataError::WrongType { path, expected: "u32", found: "string", .. }
            if path.as_str() == "amdhsa.kernels[0].kernarg_segment_size"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        alloc::format!(
            "amdhsa.kernels[0].kernarg_segment_size at byte {}: expected u32, found string",
            match err {
                MetadataError::WrongType { offset, .. } => offset,
                _ => unreachable!(),
            }
        )
    );
    let doc = root(vec![with(add_kernel(), ".sgpr_count", Some(V::I(-1)))]);
    assert!(matches!(
        parse_metadata(&doc.encode()),
        Err(MetadataError::OutOfRange { value: -1, max: 0xffff_ffff, .. })
    ));
    let doc = root(vec![with(add_kernel(), ".sgpr_count", Some(V::U(1 << 32)))]);
    assert!(matches!(parse_metadata(&doc.encode()), Err(MetadataError::OutOfRange { value: 0x1_0000_0000, .. })));
    let doc = root(vec![with(add_kernel(), ".workgroup_processor_mode", Some(V::U(2)))]);
    assert!(matches!(parse_metadata(&doc.encode()), Err(MetadataError::OutOfRange { value: 2, max: 1, .. })));
    let doc = root(vec![with(add_kernel(), ".workgroup_processor_mode", Some(V::B(false)))]);
    assert_eq!(parse_metadata(&doc.encode()).unwrap().kernels[0].workgroup_processor_mode, Some(false));
    let doc = root(vec![with(add_kernel(), ".uses_dynamic_stack", Some(V::Str("no")))]);
    assert!(matches!(parse_metadata(&doc.encode()), Err(MetadataError::WrongType { found: "string", .. })));
    let doc = root(vec![with(add_kernel(), ".reqd_workgroup_size", Some(V::Arr(vec![V::U(1), V::U(1)])))]);
    assert!(matches!(parse_metadata(&doc.encode()), Err(MetadataError::WrongLength { expected: 3, found: 2, .. })));
    let doc = root(vec![with(add_kernel(), ".args", Some(V::Map(vec![])))]);
    assert!(matches!(
        parse_metadata(&doc.encode()),
        Err(MetadataError::WrongType { expected: "array", found: "map", .. })
    ));
    // A non-string key.
    assert!(matches!(parse_metadata(&[0x81, 0x01, 0x01]), Err(MetadataError::WrongType { found: "integer", .. })));
    // The root must be a map.
    assert!(matches!(parse_metadata(&[0x90]), Err(MetadataError::WrongType { expected: "map", found: "array", .. })));
}

#[test]
fn hostile_structure_is_bounded() {
    // Deep nesting under an unknown key: 100 nested fixarrays.
    let mut doc = vec![0x81, 0xa1, b'x'];
    doc.extend(core::iter::repeat_n(0x91, 100));
    doc.push(0xc0);
    assert!(matches!(parse_metadata(&doc), Err(MetadataError::TooDeep { limit: METADATA_DEPTH_MAX, .. })));
    // A map32 claiming 2^32 - 1 entries.
    assert!(matches!(
        parse_metadata(&[0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, b'x']),
        Err(MetadataError::LengthExceedsInput { length: u32::MAX, remaining: 2, .. })
    ));
    // A str32 key claiming 4 GiB.
    assert!(matches!(
        parse_metadata(&[0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, b'x']),
        Err(MetadataError::LengthExceedsInput { offset: 1, .. })
    ));
    // Invalid UTF-8 and the reserved marker.
    assert!(matches!(parse_metadata(&[0x81, 0xa1, 0xff, 0xc0]), Err(MetadataError::InvalidUtf8 { offset: 1, .. })));
    assert!(matches!(parse_metadata(&[0x81, 0xa1, b'x', 0xc1]), Err(MetadataError::ReservedMarker { offset: 3, .. })));
    // Trailing bytes after the root map.
    let mut doc = root(vec![V::Map(add_kernel())]).encode();
    let len = doc.len();
    doc.push(0);
    assert_eq!(parse_metadata(&doc), Err(MetadataError::TrailingBytes { offset: len, count: 1 }));
    // Every proper prefix of a valid document is an error, never a panic.
    doc.pop();
    for end in 0..doc.len() {
        assert!(parse_metadata(&doc[..end]).is_err(), "prefix {end}");
    }
    assert!(matches!(parse_metadata(&[]), Err(MetadataError::Truncated { offset: 0, .. })));
}

#[test]
fn value_kind_table_matches_reference() {
    // reference §7 ".value_kind strings", in table order.
    let reference = [
        "by_value",
        "global_buffer",
        "dynamic_shared_pointer",
        "sampler",
        "image",
        "pipe",
        "queue",
        "hidden_global_offset_x",
        "hidden_global_offset_y",
        "hidden_global_offset_z",
        "hidden_none",
        "hidden_printf_buffer",
        "hidden_hostcall_buffer",
        "hidden_default_queue",
        "hidden_completion_action",
        "hidden_multigrid_sync_arg",
        "hidden_block_count_x",
        "hidden_block_count_y",
        "hidden_block_count_z",
        "hidden_group_size_x",
        "hidden_group_size_y",
        "hidden_group_size_z",
        "hidden_remainder_x",
        "hidden_remainder_y",
        "hidden_remainder_z",
        "hidden_grid_dims",
        "hidden_heap_v1",
        "hidden_dynamic_lds_size",
        "hidden_private_base",
        "hidden_shared_base",
        "hidden_queue_ptr",
    ];
    let known: Vec<&str> = ValueKind::KNOWN.iter().map(ValueKind::as_str).collect();
    assert_eq!(known, reference);
    for s in reference {
        let k = ValueKind::parse(s);
        assert!(!matches!(k, ValueKind::Unknown(_)));
        assert_eq!(k.as_str(), s);
        assert_eq!(k.is_hidden(), s.starts_with("hidden_"));
    }
    assert_eq!(ValueKind::parse("hidden_tool_correlation_id"), ValueKind::Unknown("hidden_tool_correlation_id".into()));
    assert!(ValueKind::parse("hidden_tool_correlation_id").is_hidden());
    assert!(!ValueKind::parse("Global_Buffer").is_hidden());
    let spaces: Vec<&str> = AddressSpace::KNOWN.iter().map(AddressSpace::as_str).collect();
    assert_eq!(spaces, ["private", "global", "constant", "local", "generic", "region"]);
    let access: Vec<&str> = Access::KNOWN.iter().map(Access::as_str).collect();
    assert_eq!(access, ["read_only", "write_only", "read_write"]);
}

#[test]
fn only_major_version_1_is_read() {
    let doc = |major: u64, minor: u64| {
        V::Map(vec![
            ("amdhsa.version", V::Arr(vec![V::U(major), V::U(minor)])),
            ("amdhsa.target", V::Str("amdgcn-amd-amdhsa--gfx1100")),
            ("amdhsa.kernels", V::Arr(vec![V::Map(add_kernel())])),
        ])
        .encode()
    };
    for (major, minor) in [(99, 2), (0, 2), (2, 0)] {
        let err = parse_metadata(&doc(major, minor)).unwrap_err();
        // The array follows the 1-byte map header and the 15-byte key string.
        let MetadataError::UnsupportedVersion { path, offset: 16, found, supported_major: 1 } = &err else {
            panic!("[{major}, {minor}]: {err}")
        };
        assert_eq!(path.as_str(), "amdhsa.version");
        // CAST: the test values are small.
        #[allow(clippy::cast_possible_truncation)]
        let expected = [major as u32, minor as u32];
        assert_eq!(*found, expected);
        let text = err.to_string();
        assert!(text.starts_with(&format!("amdhsa.version at byte 16: version [{major}, {minor}]")), "{text}");
        assert!(text.contains("supported: major version 1"), "{text}");
    }
    for minor in [0, 1, 2, 3] {
        assert_eq!(parse_metadata(&doc(1, minor)).unwrap().version, [1, u32::try_from(minor).unwrap()]);
    }
}

#[test]
fn long_keys_and_names_are_cut_in_messages() {
    let key: &'static str = alloc::boxed::Box::leak("k".repeat(10_000).into_boxed_str());
    let doc = V::Map(vec![(key, V::U(1)), (key, V::U(2))]).encode();
    let err = parse_metadata(&doc).unwrap_err();
    assert!(matches!(&err, MetadataError::DuplicateKey { key: k, .. } if k.len() == 10_000));
    assert!(err.to_string().len() < 300, "{err}");
    let name: &'static str = alloc::boxed::Box::leak("n".repeat(10_000).into_boxed_str());
    let doc = root(vec![with(add_kernel(), ".name", Some(V::Str(name))), V::Map(vec![(".name", V::Str(name))])]);
    let err = parse_metadata(&doc.encode()).unwrap_err();
    assert!(matches!(&err, MetadataError::MissingKernelKey { kernel, .. } if kernel.len() == 10_000), "{err}");
    assert!(err.to_string().contains("... (10000 bytes)"), "{err}");
    assert!(err.to_string().len() < 300, "{err}");
}
