use super::*;
use lowering::plan::Transport;

const SHA: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
const KV: &str = "f32:layer,position,kv_head,head_dim";

fn row_json(arch: &str, kind: &str, fixture: &str) -> String {
    format!(
        r#"{{"arch": "{arch}", "device_kind": "{kind}",
            "model_format": {{"container": "gguf", "architecture": "llama", "tensor_types": ["F32", "Q4_1", "Q8_0"]}},
            "model_sha256": "{SHA}", "max_context": 1024, "kv_layout": "{KV}", "transport": "pm4",
            "fixture": "{fixture}"}}"#
    )
}

fn registry(rows: &[String]) -> String {
    format!(r#"{{"admissions": [{}]}}"#, rows.join(","))
}

fn fixtures() -> BTreeSet<String> {
    ["smollm2-135m-gfx1100-sim", "smollm2-135m-gfx1201-sim"].iter().map(|s| (*s).to_owned()).collect()
}

fn format(types: &[&str]) -> ModelFormat {
    ModelFormat {
        container: "gguf".into(),
        architecture: "llama".into(),
        tensor_types: types.iter().map(|s| (*s).to_owned()).collect(),
    }
}

fn query<'a>(arch: Target, kind: &'a str, devices: u32, f: &'a ModelFormat, sha: &'a str) -> AdmissionQuery<'a> {
    AdmissionQuery {
        arch,
        device_kind: kind,
        devices,
        model_format: f,
        model_sha256: sha,
        context: 1024,
        kv_layout: KV,
        transport: Transport::Pm4,
    }
}

fn one_row() -> AdmissionRegistry {
    let text = registry(&[row_json("gfx1100", "sim", "smollm2-135m-gfx1100-sim")]);
    AdmissionRegistry::parse(&text, Some(&fixtures())).unwrap()
}

#[test]
fn an_exact_match_is_admitted_by_its_row() {
    let reg = one_row();
    let f = format(&["F32", "Q4_1", "Q8_0"]);
    let d = reg.decide(&query(Target::Gfx1100, "sim", 1, &f, SHA));
    assert!(d.admitted, "{}", d.reason);
    let row = d.row.unwrap();
    assert_eq!((row.index, row.fixture.as_str()), (0, "smollm2-135m-gfx1100-sim"));
    assert!(d.reason.contains("smollm2-135m-gfx1100-sim"), "{}", d.reason);
}

#[test]
fn every_mismatch_is_refused_with_its_reason() {
    let reg = one_row();
    let f = format(&["F32", "Q4_1", "Q8_0"]);
    let other_sha = "0".repeat(64);
    let cases = [
        (query(Target::Gfx1030, "sim", 1, &f, SHA), "architecture gfx1030 has no admission row (admitted: gfx1100)"),
        (query(Target::Gfx1100, "hsa", 1, &f, SHA), "device kind \"hsa\" on gfx1100"),
        (query(Target::Gfx1100, "sim", 2, &f, SHA), "2 devices"),
        (query(Target::Gfx1100, "sim", 0, &f, SHA), "0 devices"),
        (query(Target::Gfx1100, "sim", 1, &f, &other_sha), "is not certified for gfx1100 sim"),
    ];
    for (q, needle) in cases {
        let d = reg.decide(&q);
        assert!(!d.admitted && d.row.is_none(), "{q:?}");
        assert!(d.reason.contains(needle), "{q:?}: {}", d.reason);
    }
}

#[test]
fn a_longer_context_another_kv_layout_or_transport_is_refused_naming_the_row() {
    let reg = one_row();
    let f = format(&["F32", "Q4_1", "Q8_0"]);
    let shorter = AdmissionQuery { context: 32, ..query(Target::Gfx1100, "sim", 1, &f, SHA) };
    assert!(reg.decide(&shorter).admitted, "a shorter context is within the evidence");
    let cases = [
        (
            AdmissionQuery { context: 1025, ..query(Target::Gfx1100, "sim", 1, &f, SHA) },
            "context 1025 exceeds the 1024 positions row 0 (fixture smollm2-135m-gfx1100-sim) certifies",
        ),
        (
            AdmissionQuery {
                kv_layout: "f16:layer,position,kv_head,head_dim",
                ..query(Target::Gfx1100, "sim", 1, &f, SHA)
            },
            "KV layout f16:layer,position,kv_head,head_dim is not the f32:layer,position,kv_head,head_dim row 0",
        ),
        (
            AdmissionQuery { transport: Transport::Aql, ..query(Target::Gfx1100, "sim", 1, &f, SHA) },
            "transport aql is not the pm4 row 0",
        ),
    ];
    for (q, needle) in cases {
        let d = reg.decide(&q);
        assert!(!d.admitted && d.row.is_none(), "{q:?}");
        assert!(d.reason.contains(needle), "{q:?}: {}", d.reason);
    }
}

#[test]
fn an_uncertified_tensor_type_set_is_refused_even_with_the_digest() {
    let reg = one_row();
    for types in [&["F32", "Q4_1"][..], &["F32", "Q4_1", "Q8_0", "F16"], &["F32", "Q8_0", "unknown(99)"]] {
        let f = format(types);
        let d = reg.decide(&query(Target::Gfx1100, "sim", 1, &f, SHA));
        assert!(!d.admitted, "{types:?}");
        assert!(d.reason.contains("not certified"), "{types:?}: {}", d.reason);
    }
    let mut f = format(&["F32", "Q4_1", "Q8_0"]);
    f.architecture = "qwen2".into();
    assert!(!reg.decide(&query(Target::Gfx1100, "sim", 1, &f, SHA)).admitted);
}

#[test]
fn wildcards_are_rejected_naming_row_and_field() {
    let good = row_json("gfx1100", "sim", "smollm2-135m-gfx1100-sim");
    let cases = [
        (good.replace("\"gfx1100\"", "\"*\""), "arch"),
        (good.replace("\"gfx1100\"", "\"gfx11*\""), "arch"),
        (good.replace("\"sim\"", "\"any\""), "device_kind"),
        (good.replace("\"llama\"", "\"*\""), "model_format.architecture"),
        (good.replace("\"Q8_0\"", "\"Q*\""), "model_format.tensor_types"),
        (good.replace("smollm2-135m-gfx1100-sim", "smollm2-*"), "fixture"),
        (good.replace("\"pm4\"", "\"any\""), "transport"),
        (good.replace(KV, "*"), "kv_layout"),
    ];
    for (row, field) in cases {
        let text = registry(&[row_json("gfx1201", "sim", "smollm2-135m-gfx1201-sim"), row]);
        let err = AdmissionRegistry::parse(&text, None).unwrap_err();
        assert!(matches!(&err, AdmissionError::Wildcard { row: 1, field: f, .. } if *f == field), "{field}: {err}");
        assert!(err.to_string().contains("row 1") && err.to_string().contains(field), "{err}");
    }
}

#[test]
fn empty_missing_and_malformed_fields_are_rejected() {
    let good = row_json("gfx1100", "sim", "smollm2-135m-gfx1100-sim");
    let cases = [
        (good.replace("\"gfx1100\"", "\"\""), "arch"),
        (good.replace("\"gfx1100\"", "\"gfx9000\""), "arch"),
        (good.replace("\"sim\"", "\"cuda\""), "device_kind"),
        (good.replace(SHA, "abc"), "model_sha256"),
        (good.replace(SHA, &SHA.to_uppercase()), "model_sha256"),
        (good.replace("[\"F32\", \"Q4_1\", \"Q8_0\"]", "[]"), "model_format.tensor_types"),
        (good.replace("\"Q8_0\"", "\"Q4_1\""), "model_format.tensor_types"),
        (good.replace("\"fixture\": \"smollm2-135m-gfx1100-sim\"", "\"fixture\": 7"), "fixture"),
        (good.replace("\"fixture\"", "\"evidence\""), "fixture"),
        (good.replace("\"max_context\": 1024", "\"max_context\": 0"), "max_context"),
        (good.replace("\"max_context\": 1024", "\"max_context\": \"1024\""), "max_context"),
        (good.replace("\"max_context\"", "\"context\""), "max_context"),
        (good.replace(KV, ""), "kv_layout"),
        (good.replace("\"transport\": \"pm4\"", "\"transport\": \"pm5\""), "transport"),
        (good.replace("\"transport\"", "\"route\""), "transport"),
    ];
    for (row, field) in cases {
        let err = AdmissionRegistry::parse(&registry(&[row]), None).unwrap_err();
        assert!(matches!(&err, AdmissionError::Field { row: 0, field: f, .. } if *f == field), "{field}: {err}");
    }
    for text in ["", "[]", "{\"rows\": []}", "{\"admissions\": [3]}"] {
        assert!(matches!(AdmissionRegistry::parse(text, None), Err(AdmissionError::Format { .. })), "{text:?}");
    }
}

#[test]
fn unknown_fixtures_and_duplicates_are_rejected() {
    let text = registry(&[row_json("gfx1100", "sim", "smollm2-135m-gfx1151-sim")]);
    let err = AdmissionRegistry::parse(&text, Some(&fixtures())).unwrap_err();
    assert_eq!(err, AdmissionError::UnknownFixture { row: 0, fixture: "smollm2-135m-gfx1151-sim".into() });
    assert!(AdmissionRegistry::parse(&text, None).is_ok(), "without a fixture registry the id is not checked");
    let row = row_json("gfx1100", "sim", "smollm2-135m-gfx1100-sim");
    let err = AdmissionRegistry::parse(&registry(&[row.clone(), row]), None).unwrap_err();
    assert_eq!(err, AdmissionError::Duplicate { row: 1, first: 0 });
}

#[test]
fn the_format_of_the_tiny_model_is_read_from_its_tensors() {
    let file = gguf::Gguf::parse(gguf::tiny_llama(&gguf::TinyLlamaConfig::default())).unwrap();
    let f = ModelFormat::of_gguf(&file);
    assert_eq!((f.container.as_str(), f.architecture.as_str()), ("gguf", "llama"));
    let expected: BTreeSet<String> =
        file.tensors().iter().map(|t| t.ty().name().unwrap().to_owned()).collect::<BTreeSet<_>>();
    assert_eq!(f.tensor_types, expected);
    assert!(!f.tensor_types.is_empty());
}

/// The embedded fixture registry with the gfx1100 SmolLM2 fixture's sealing promotion replaced
/// by `promotion` (a JSON value, or `None` to remove it).
fn fixtures_promoting(promotion: Option<serde_json::Value>) -> crate::golden::registry::Registry {
    let mut root: serde_json::Value = serde_json::from_str(load::EMBEDDED_FIXTURES).unwrap();
    let rows = root["fixtures"].as_array_mut().unwrap();
    let row = rows.iter_mut().find(|f| f["id"] == "smollm2-135m-gfx1100-sim").unwrap();
    let sealed = row["sealed"].as_object_mut().unwrap();
    match promotion {
        Some(p) => sealed.insert("promotion".to_owned(), p),
        None => sealed.remove("promotion"),
    };
    crate::golden::registry::Registry::parse(&root.to_string()).unwrap()
}

#[test]
fn only_a_fixture_whose_sealing_run_promoted_the_route_lets_its_row_admit() {
    let f = format(&["F32", "Q4_1", "Q8_0"]);
    let q = query(Target::Gfx1100, "sim", 1, &f, SHA);
    let promote = serde_json::json!({"rule": "ratio>=1,gates=pass,health=pass", "disposition": "promote",
        "reason": "every clause holds"});
    let d = one_row().with_promotions(&fixtures_promoting(Some(promote))).decide(&q);
    assert!(d.admitted, "{}", d.reason);

    let hold = serde_json::json!({"rule": "ratio>=1,gates=pass,health=pass", "disposition": "hold",
        "reason": "ratio>=1: ratio 0.9870 is not >=1"});
    let d = one_row().with_promotions(&fixtures_promoting(Some(hold))).decide(&q);
    assert!(!d.admitted && d.row.is_none());
    assert_eq!(
        d.reason,
        "row 0 (fixture smollm2-135m-gfx1100-sim) does not arm the retained route by default: its sealing bench \
         held the route under the rule ratio>=1,gates=pass,health=pass: ratio>=1: ratio 0.9870 is not >=1"
    );

    let d = one_row().with_promotions(&fixtures_promoting(None)).decide(&q);
    assert!(!d.admitted);
    assert!(d.reason.ends_with("it was sealed without a promotion rule"), "{}", d.reason);

    // A fixture the registry lacks holds its row too.
    let empty = crate::golden::registry::Registry::parse(r#"{"fixtures": []}"#).unwrap();
    let d = one_row().with_promotions(&empty).decide(&q);
    assert!(!d.admitted && d.reason.ends_with("it is not a sealed fixture"), "{}", d.reason);
}

#[test]
fn a_disposition_other_than_promote_or_hold_is_refused_naming_the_fixture() {
    let mut root: serde_json::Value = serde_json::from_str(load::EMBEDDED_FIXTURES).unwrap();
    root["fixtures"][0]["sealed"]["promotion"] =
        serde_json::json!({"rule": "ratio>=1", "disposition": "maybe", "reason": "?"});
    let err = crate::golden::registry::Registry::parse(&root.to_string()).unwrap_err();
    let id = root["fixtures"][0]["id"].as_str().unwrap();
    assert_eq!(
        err.to_string(),
        format!("fixture {id}: field sealed.promotion.disposition: \"maybe\" is not promote or hold")
    );
}
