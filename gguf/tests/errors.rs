//! Malformed files, each built byte by byte, and the error that names what and where.

use gguf::{GgmlType, Gguf, GgufError};

/// A GGUF file written by hand, so that it can be wrong in any way.
#[derive(Default)]
struct Raw {
    bytes: Vec<u8>,
}

impl Raw {
    fn header(version: u32, n_tensors: u64, n_kv: u64) -> Self {
        let mut r = Self::default();
        r.bytes.extend_from_slice(b"GGUF");
        r.u32(version).u64(n_tensors).u64(n_kv);
        r
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn str(&mut self, s: &[u8]) -> &mut Self {
        self.u64(u64::try_from(s.len()).unwrap());
        self.bytes.extend_from_slice(s);
        self
    }
    fn kv_u32(&mut self, key: &str, v: u32) -> &mut Self {
        self.str(key.as_bytes()).u32(4).u32(v)
    }
    fn tensor(&mut self, name: &str, dims: &[u64], ty: u32, offset: u64) -> &mut Self {
        self.str(name.as_bytes()).u32(u32::try_from(dims.len()).unwrap());
        for &d in dims {
            self.u64(d);
        }
        self.u32(ty).u64(offset)
    }
    /// Pads to 32 and appends `n` data bytes.
    fn data(&mut self, n: usize) -> Vec<u8> {
        let mut b = self.bytes.clone();
        b.resize(b.len().next_multiple_of(32) + n, 0);
        b
    }
    fn parse(&self) -> Result<Gguf, GgufError> {
        Gguf::parse(self.bytes.clone())
    }
}

#[test]
fn minimal_file_parses() {
    let mut r = Raw::header(3, 1, 1);
    r.kv_u32("a", 7).tensor("t", &[32], 0, 0);
    let g = Gguf::parse(r.data(128)).unwrap();
    assert_eq!(g.u32("a").unwrap(), 7);
    assert_eq!(g.data_offset(), 96);
    assert_eq!(g.tensor("t").unwrap().bytes().len(), 128);
}

#[test]
fn header_errors() {
    assert!(matches!(Gguf::parse(b"GGU".to_vec()), Err(GgufError::Truncated { offset: 0, .. })));
    let mut bad = Raw::header(3, 0, 0).bytes;
    bad[0] = b'X';
    assert!(matches!(Gguf::parse(bad), Err(GgufError::BadMagic { found }) if &found == b"XGUF"));
    assert!(matches!(Raw::header(1, 0, 0).parse(), Err(GgufError::UnsupportedVersion { version: 1 })));
    assert_eq!(Raw::header(2, 0, 0).parse().unwrap().version(), 2);
}

#[test]
fn huge_counts_are_refused_before_allocating() {
    let err = Raw::header(3, 0, u64::MAX).parse().unwrap_err();
    assert!(matches!(err, GgufError::CountTooLarge { offset: 16, count: u64::MAX, limit: 0, .. }), "{err}");
    let err = Raw::header(3, u64::MAX, 0).parse().unwrap_err();
    assert!(matches!(err, GgufError::CountTooLarge { count: u64::MAX, .. }), "{err}");
    // An array of 2^60 u64 in a 100-byte file.
    let mut r = Raw::header(3, 0, 1);
    r.str(b"arr").u32(9).u32(10).u64(1 << 60);
    let err = r.parse().unwrap_err();
    assert!(matches!(&err, GgufError::CountTooLarge { what, offset: 43, .. } if what.contains("\"arr\"")), "{err}");
    // A string claiming 2^63 bytes.
    let mut r = Raw::header(3, 0, 1);
    r.str(b"s").u32(8).u64(1 << 63);
    assert!(matches!(r.parse(), Err(GgufError::Truncated { needed, .. }) if needed == 1 << 63));
}

#[test]
fn metadata_errors_name_the_key_and_offset() {
    let mut r = Raw::header(3, 0, 2);
    r.kv_u32("k", 1).kv_u32("k", 2);
    assert!(matches!(r.parse(), Err(GgufError::DuplicateKey { key, offset: 41 }) if key == "k"));

    let mut r = Raw::header(3, 0, 1);
    r.str(b"k").u32(13).u32(0);
    assert!(matches!(r.parse(), Err(GgufError::UnknownValueType { key, raw: 13, offset: 33 }) if key == "k"));

    let mut r = Raw::header(3, 0, 1);
    r.str(b"\xff").u32(4).u32(0);
    assert!(matches!(r.parse(), Err(GgufError::InvalidUtf8 { offset: 32, .. })));

    let mut r = Raw::header(3, 0, 1);
    r.str(b"b").u32(7);
    r.bytes.push(2);
    assert!(matches!(r.parse(), Err(GgufError::InvalidBool { raw: 2, .. })));

    let mut r = Raw::header(3, 0, 1);
    // MAX_ARRAY_DEPTH arrays of one array each, the innermost holding an empty u8 array.
    r.str(b"deep").u32(9);
    for _ in 0..gguf::MAX_ARRAY_DEPTH {
        r.u32(9).u64(1);
    }
    r.u32(0).u64(0);
    let innermost = 24 + 8 + 4 + 4 + 12 * gguf::MAX_ARRAY_DEPTH;
    let err = r.parse().unwrap_err();
    assert!(
        matches!(&err, GgufError::ArrayTooDeep { key, offset, limit: 8 } if key == "deep" && *offset == innermost),
        "{err}"
    );
    // One level less parses.
    let mut r = Raw::header(3, 0, 1);
    r.str(b"deep").u32(9);
    for _ in 1..gguf::MAX_ARRAY_DEPTH {
        r.u32(9).u64(1);
    }
    r.u32(0).u64(0);
    assert!(r.parse().is_ok());
}

#[test]
fn alignment_must_be_a_power_of_two_u32() {
    let mut r = Raw::header(3, 0, 1);
    r.kv_u32("general.alignment", 24);
    assert!(matches!(r.parse(), Err(GgufError::BadAlignment { found: 24 })));
    let mut r = Raw::header(3, 0, 1);
    r.str(b"general.alignment").u32(10).u64(32);
    assert!(matches!(r.parse(), Err(GgufError::WrongType { expected: "u32", found, .. }) if found == "u64"));
    let mut r = Raw::header(3, 1, 1);
    r.kv_u32("general.alignment", 64).tensor("t", &[1], 0, 0);
    let g = Gguf::parse({
        let mut b = r.bytes.clone();
        b.resize(128 + 4, 0);
        b
    })
    .unwrap();
    assert_eq!((g.alignment(), g.data_offset()), (64, 128));
}

#[test]
fn tensor_info_errors() {
    let mut r = Raw::header(3, 2, 0);
    r.tensor("t", &[32], 0, 0).tensor("t", &[32], 0, 128);
    assert!(matches!(Gguf::parse(r.data(256)), Err(GgufError::DuplicateTensor { name, offset: 57 }) if name == "t"));

    let mut r = Raw::header(3, 1, 0);
    r.tensor(&"x".repeat(64), &[1], 0, 0);
    assert!(matches!(Gguf::parse(r.data(4)), Err(GgufError::TensorNameTooLong { len: 64, limit: 63, offset: 24 })));

    let mut r = Raw::header(3, 1, 0);
    r.tensor("t", &[1, 1, 1, 1, 1], 0, 0);
    assert!(matches!(Gguf::parse(r.data(4)), Err(GgufError::DimCount { n_dims: 5, .. })));

    let mut r = Raw::header(3, 1, 0);
    r.tensor("t", &[4, 0], 0, 0);
    assert!(matches!(Gguf::parse(r.data(4)), Err(GgufError::ZeroDim { axis: 1, offset: 45, .. })));

    let mut r = Raw::header(3, 1, 0);
    r.tensor("t", &[1 << 32, 1 << 32], 0, 0);
    assert!(matches!(Gguf::parse(r.data(4)), Err(GgufError::SizeOverflow { .. })));

    let mut r = Raw::header(3, 1, 0);
    r.tensor("q", &[48, 2], 3, 0);
    let err = Gguf::parse(r.data(1000)).unwrap_err();
    assert!(matches!(&err, GgufError::RowNotBlockMultiple { row: 48, block: 32, ty: GgmlType::Q4_1, .. }), "{err}");
    assert_eq!(err.to_string(), "tensor \"q\": row length 48 is not a multiple of Q4_1's block of 32");
}

#[test]
fn tensor_data_errors() {
    let mut r = Raw::header(3, 1, 0);
    r.tensor("t", &[8], 0, 16);
    assert!(matches!(Gguf::parse(r.data(64)), Err(GgufError::MisalignedTensor { offset: 16, alignment: 32, .. })));

    let mut r = Raw::header(3, 1, 0);
    r.tensor("t", &[32], 0, 0);
    let err = Gguf::parse(r.data(127)).unwrap_err();
    assert!(matches!(err, GgufError::TensorOutOfBounds { start: 64, end: 192, file_len: 191, .. }), "{err}");

    // An offset near 2^64: the real start and end, past u64, not a saturated range.
    let offset = u64::MAX - 31;
    let mut r = Raw::header(3, 1, 0);
    r.tensor("far", &[32], 0, offset);
    let err = Gguf::parse(r.data(128)).unwrap_err();
    let start = 64 + u128::from(offset);
    assert!(
        matches!(&err, GgufError::TensorOutOfBounds { offset: o, len: 128, start: s, end: e, file_len: 192, .. }
            if *o == offset && *s == start && *e == start + 128),
        "{err}"
    );
    let message = err.to_string();
    for part in ["\"far\"", &offset.to_string(), "size 128", &format!("{start}..{}", start + 128), "192 bytes"] {
        assert!(message.contains(part), "{part}: {message}");
    }
    assert_eq!(start, 18_446_744_073_709_551_648, "2^64 - 32 + 64 = 2^64 + 32");

    let mut r = Raw::header(3, 2, 0);
    r.tensor("a", &[32], 0, 0).tensor("b", &[8], 0, 96);
    let err = Gguf::parse(r.data(256)).unwrap_err();
    assert!(
        matches!(&err, GgufError::TensorOverlap { first, second, offset: 96 } if first == "a" && second == "b"),
        "{err}"
    );
}

#[test]
fn unsupported_types_parse_but_refuse_data_access() {
    let mut r = Raw::header(3, 2, 0);
    // IQ2_XXS (id 16): 66 bytes per 256 values, no decoder here.
    r.tensor("iq2", &[256], 16, 0).tensor("new", &[7], 999, 96);
    let g = Gguf::parse(r.data(200)).unwrap();
    assert_eq!(g.tensor_info("iq2").unwrap().byte_len(), Some(66));
    assert_eq!(g.tensor_info("new").unwrap().ty(), GgmlType::Unknown(999));
    let err = g.tensor("iq2").unwrap_err();
    assert_eq!(err.to_string(), "unsupported type IQ2_XXS for tensor \"iq2\"");
    assert!(matches!(g.tensor("new"), Err(GgufError::UnsupportedType { ty: GgmlType::Unknown(999), .. })));
}

#[test]
fn typed_getters_name_key_and_types() {
    let mut r = Raw::header(3, 0, 1);
    r.str(b"toks").u32(9).u32(5).u64(2).u32(1).u32(2);
    let g = r.parse().unwrap();
    assert_eq!(g.i32_array("toks").unwrap(), [1, 2]);
    let err = g.string_array("toks").unwrap_err();
    assert_eq!(err.to_string(), "metadata key \"toks\" has type array of i32, expected array of string");
    assert_eq!(g.str("nope").unwrap_err().to_string(), "metadata key \"nope\" is missing");
}

#[test]
fn open_names_the_path() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("does-not-exist.gguf");
    let err = Gguf::open(&path).unwrap_err();
    assert!(matches!(&err, GgufError::Read(infile::ReadError::Io { path: p, .. }) if p == &path), "{err}");
    assert!(err.to_string().contains("does-not-exist.gguf"), "{err}");
    let empty = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("empty.gguf");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(Gguf::open(&empty), Err(GgufError::Truncated { offset: 0, available: 0, .. })));
}

#[test]
fn open_refuses_what_is_not_a_bounded_regular_file() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    for path in [std::path::Path::new("/dev/zero"), dir] {
        let err = Gguf::open(path).unwrap_err();
        assert!(matches!(&err, GgufError::Read(infile::ReadError::NotRegular { .. })), "{err}");
    }
    let huge = dir.join("over-limit.gguf");
    std::fs::File::create(&huge).unwrap().set_len(gguf::MAX_FILE_BYTES + 1).unwrap();
    let err = Gguf::open(&huge).unwrap_err();
    std::fs::remove_file(&huge).unwrap();
    assert!(matches!(&err, GgufError::Read(e @ infile::ReadError::TooLarge { .. }) if e.is_invalid_input()), "{err}");
    assert!(err.to_string().contains("GGUF model limit"), "{err}");
}

/// A file with one tensor of `ty` holding `data`, and the data's file offset.
fn one_tensor(ty: GgmlType, elems: u64, data: &[u8]) -> (Gguf, usize) {
    let mut w = gguf::GgufWriter::new();
    w.add_tensor("w", &[elems], ty, data.to_vec()).unwrap();
    let g = Gguf::parse(w.to_bytes()).unwrap();
    let at = g.data_offset();
    (g, at)
}

#[test]
fn non_finite_weights_are_found_with_their_index() {
    let f32s = |values: &[f32]| values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
    let (g, at) = one_tensor(GgmlType::F32, 4, &f32s(&[1.0, -2.0, f32::NAN, f32::INFINITY]));
    let err = g.tensor("w").unwrap().check_finite().unwrap_err();
    assert!(
        matches!(&err, GgufError::NonFinite { unit: "element", index: 2, field: "value", offset, value, .. }
            if *offset == u64::try_from(at + 8).unwrap() && value.is_nan()),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!("tensor \"w\" (F32): value of element 2 at byte offset {} is NaN; weights must be finite", at + 8)
    );
    let (g, _) = one_tensor(GgmlType::F32, 4, &f32s(&[1.0, -2.0, 3.0, f32::MIN]));
    g.tensor("w").unwrap().check_finite().unwrap();

    // F16: 0x3c00 is 1.0, 0xfc00 is -inf.
    let (g, _) = one_tensor(GgmlType::F16, 4, &[0x00, 0x3c, 0x00, 0x3c, 0x00, 0x3c, 0x00, 0xfc]);
    let err = g.tensor("w").unwrap().check_finite().unwrap_err();
    assert!(
        matches!(&err, GgufError::NonFinite { unit: "element", index: 3, value, .. } if *value == f32::NEG_INFINITY),
        "{err}"
    );

    // Q4_1: two blocks; the second's minimum is NaN (0x7e00), its quants anything.
    let mut q = gguf::quant::quantize(GgmlType::Q4_1, &[0.5; 64]).unwrap();
    g_ok(GgmlType::Q4_1, 64, &q);
    q[20 + 2..20 + 4].copy_from_slice(&0x7e00u16.to_le_bytes());
    let (g, at) = one_tensor(GgmlType::Q4_1, 64, &q);
    let err = g.tensor("w").unwrap().check_finite().unwrap_err();
    assert!(
        matches!(&err, GgufError::NonFinite { unit: "block", index: 1, field: "minimum m", offset, .. }
            if *offset == u64::try_from(at + 22).unwrap()),
        "{err}"
    );
    assert!(err.to_string().contains("minimum m of block 1"), "{err}");

    // Q8_0: the first block's scale is +inf.
    let mut q = gguf::quant::quantize(GgmlType::Q8_0, &[0.5; 64]).unwrap();
    g_ok(GgmlType::Q8_0, 64, &q);
    q[..2].copy_from_slice(&0x7c00u16.to_le_bytes());
    let (g, _) = one_tensor(GgmlType::Q8_0, 64, &q);
    let err = g.tensor("w").unwrap().check_finite().unwrap_err();
    assert!(
        matches!(&err, GgufError::NonFinite { unit: "block", index: 0, field: "scale d", value, .. } if *value == f32::INFINITY),
        "{err}"
    );

    // BF16: 0x3f80 is 1.0, 0xff80 is -inf, 0x7fc1 a NaN.
    let (g, at) = one_tensor(GgmlType::Bf16, 3, &[0x80, 0x3f, 0xc1, 0x7f, 0x80, 0xff]);
    let err = g.tensor("w").unwrap().check_finite().unwrap_err();
    assert!(
        matches!(&err, GgufError::NonFinite { unit: "element", index: 1, field: "value", offset, value, .. }
            if *offset == u64::try_from(at + 2).unwrap() && value.is_nan()),
        "{err}"
    );

    // The k-quants keep their f16 fields at the end (Q2_K: d at 80, dmin at 82 of 84 bytes;
    // Q3_K: d at 108 of 110; Q6_K: d at 208 of 210) or the start (Q4_K, Q5_K: d at 0, dmin at
    // 2). Each case: two blocks, the second's field set to -inf (0xfc00).
    let cases = [
        (GgmlType::Q2K, 84, 82, "minimum scale dmin"),
        (GgmlType::Q2K, 84, 80, "scale d"),
        (GgmlType::Q3K, 110, 108, "scale d"),
        (GgmlType::Q4K, 144, 2, "minimum scale dmin"),
        (GgmlType::Q5K, 176, 0, "scale d"),
        (GgmlType::Q6K, 210, 208, "scale d"),
        (GgmlType::Q4_0, 18, 0, "scale d"),
        (GgmlType::Q5_0, 22, 0, "scale d"),
        (GgmlType::Q5_1, 24, 2, "minimum m"),
    ];
    for (ty, block, field_at, name) in cases {
        let elems = 2 * ty.layout().unwrap().block_elems;
        let mut q = gguf::quant::quantize(ty, &vec![0.5; usize::try_from(elems).unwrap()]).unwrap();
        g_ok(ty, elems, &q);
        q[block + field_at..block + field_at + 2].copy_from_slice(&0xfc00u16.to_le_bytes());
        let (g, at) = one_tensor(ty, elems, &q);
        let err = g.tensor("w").unwrap().check_finite().unwrap_err();
        assert!(
            matches!(&err, GgufError::NonFinite { unit: "block", index: 1, field, offset, value, .. }
                if *field == name && *offset == u64::try_from(at + block + field_at).unwrap()
                    && *value == f32::NEG_INFINITY),
            "{ty}: {err}"
        );
    }
}

fn g_ok(ty: GgmlType, elems: u64, data: &[u8]) {
    let (g, _) = one_tensor(ty, elems, data);
    g.tensor("w").unwrap().check_finite().unwrap();
}

#[test]
fn the_writer_sets_and_removes_keys_and_tensors() {
    let config = gguf::TinyLlamaConfig::default();
    let mut w = gguf::tiny_llama_writer(&config);
    assert_eq!(w.to_bytes(), gguf::tiny_llama(&config));
    let keys = |g: &Gguf| g.metadata().map(|(k, _)| k.to_owned()).collect::<Vec<_>>();
    let before = keys(&Gguf::parse(w.to_bytes()).unwrap());
    w.set("llama.context_length", gguf::Value::U32(7)).unwrap();
    w.set("added.key", gguf::Value::Bool(true)).unwrap();
    assert_eq!(w.remove("general.name"), Some(gguf::Value::String("Redline Tiny Llama".into())));
    assert!(w.remove("general.name").is_none());
    assert!(w.remove_tensor("output_norm.weight"));
    w.tensor_data_mut("blk.0.attn_norm.weight").unwrap()[..4].copy_from_slice(&2.5f32.to_le_bytes());
    let g = Gguf::parse(w.to_bytes()).unwrap();
    assert_eq!(g.u32("llama.context_length").unwrap(), 7);
    assert!(g.bool("added.key").unwrap());
    assert!(g.get("general.name").is_none());
    assert!(g.tensor_info("output_norm.weight").is_none());
    assert_eq!(g.tensor("blk.0.attn_norm.weight").unwrap().to_f32().unwrap()[0], 2.5);
    let mut expected: Vec<String> = before.into_iter().filter(|k| k != "general.name").collect();
    expected.push("added.key".into());
    assert_eq!(keys(&g), expected, "a set key keeps its place");
    assert!(w.set("general.alignment", gguf::Value::U32(3)).is_err());
}
