//! A validator for the subset of JSON Schema (2020-12) that `docs/bench-report.schema.json`
//! uses: `type` (a name or a list, `"null"` included), `enum`, `const`, `required`,
//! `properties`, `additionalProperties` (a boolean or a schema), `items`, `minItems`, `minimum`,
//! `minLength`, `maxLength`, `oneOf` and `$ref` to `#/$defs/NAME`. Annotations (`$schema`,
//! `$id`, `title`, `description`, `$defs`) are skipped; any other keyword is an error, so the
//! schema cannot use one that this validator would silently ignore.
//!
//! Written here instead of depending on the `jsonschema` crate: even without default features
//! that pulls in about twenty crates (fancy-regex, regex, referencing, fraction, ahash, strum,
//! ...), a heavy build for one test on a 2-core machine.

use serde_json::Value;

/// Keywords that carry no constraint.
const ANNOTATIONS: [&str; 5] = ["$schema", "$id", "title", "description", "$defs"];
/// Deepest `$ref` chain followed (a cycle in the schema is an error, not a stack overflow).
const REF_DEPTH_MAX: usize = 64;

/// Every violation of `instance` against `schema` (whose `$defs` the `$ref`s name), each as
/// `JSON-pointer: what is wrong`; empty when it is valid.
pub(crate) fn validate(schema: &Value, instance: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, schema, instance, "", 0, &mut errors);
    errors
}

fn type_matches(name: &str, v: &Value) -> Option<bool> {
    Some(match name {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => return None,
    })
}

fn check_type(ty: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let names: Vec<&str> = match ty {
        Value::String(s) => vec![s.as_str()],
        Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
        _ => return errors.push(format!("{at}: schema error: type is {ty}")),
    };
    let mut matched = false;
    for name in &names {
        match type_matches(name, v) {
            Some(m) => matched |= m,
            None => return errors.push(format!("{at}: schema error: unknown type {name:?}")),
        }
    }
    if !matched {
        errors.push(format!("{at}: {} is not of type {}", short(v), names.join(" or ")));
    }
}

fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 60 { format!("{}...", text.chars().take(57).collect::<String>()) } else { text }
}

fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let name = reference.strip_prefix("#/$defs/")?;
    root.get("$defs")?.get(name)
}

fn check_object(root: &Value, schema: &Value, v: &Value, at: &str, depth: usize, errors: &mut Vec<String>) {
    let Some(map) = v.as_object() else { return };
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(name) {
                errors.push(format!("{at}: required property {name:?} is missing"));
            }
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (key, value) in map {
        let path = format!("{at}/{key}");
        match (properties.and_then(|p| p.get(key)), schema.get("additionalProperties")) {
            (Some(sub), _) => check(root, sub, value, &path, depth, errors),
            (None, Some(Value::Bool(false))) => errors.push(format!("{path}: property {key:?} is not allowed")),
            (None, Some(sub @ Value::Object(_))) => check(root, sub, value, &path, depth, errors),
            (None, _) => {}
        }
    }
}

fn check(root: &Value, schema: &Value, v: &Value, at: &str, depth: usize, errors: &mut Vec<String>) {
    let Some(keywords) = schema.as_object() else {
        return errors.push(format!("{at}: schema error: a schema is an object, found {}", short(schema)));
    };
    for (keyword, arg) in keywords {
        match keyword.as_str() {
            k if ANNOTATIONS.contains(&k) => {}
            "$ref" => match arg.as_str().and_then(|r| resolve(root, r)) {
                _ if depth >= REF_DEPTH_MAX => {
                    errors.push(format!("{at}: schema error: $ref deeper than {REF_DEPTH_MAX}"))
                }
                Some(target) => check(root, target, v, at, depth + 1, errors),
                None => errors.push(format!("{at}: schema error: unresolved $ref {arg}")),
            },
            "type" => check_type(arg, v, at, errors),
            "enum" => {
                if !arg.as_array().is_some_and(|list| list.contains(v)) {
                    errors.push(format!("{at}: {} is not one of {arg}", short(v)));
                }
            }
            "const" => {
                if arg != v {
                    errors.push(format!("{at}: {} is not {arg}", short(v)));
                }
            }
            "required" | "properties" | "additionalProperties" => {}
            "items" => {
                for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                    check(root, arg, item, &format!("{at}/{i}"), depth, errors);
                }
            }
            "minItems" => {
                if let (Some(list), Some(min)) = (v.as_array(), arg.as_u64())
                    && u64::try_from(list.len()).unwrap_or(u64::MAX) < min
                {
                    errors.push(format!("{at}: {} items, fewer than {min}", list.len()));
                }
            }
            "minimum" => {
                if let (Some(x), Some(min)) = (v.as_f64(), arg.as_f64())
                    && x < min
                {
                    errors.push(format!("{at}: {x} is below the minimum {min}"));
                }
            }
            "minLength" | "maxLength" => {
                if let (Some(s), Some(limit)) = (v.as_str(), arg.as_u64()) {
                    let len = u64::try_from(s.chars().count()).unwrap_or(u64::MAX);
                    let bad = if keyword == "minLength" { len < limit } else { len > limit };
                    if bad {
                        errors.push(format!("{at}: {len} characters, {keyword} is {limit}"));
                    }
                }
            }
            "oneOf" => {
                let Some(options) = arg.as_array() else {
                    return errors.push(format!("{at}: schema error: oneOf is not a list"));
                };
                let results: Vec<Vec<String>> = options
                    .iter()
                    .map(|option| {
                        let mut e = Vec::new();
                        check(root, option, v, at, depth, &mut e);
                        e
                    })
                    .collect();
                match results.iter().filter(|e| e.is_empty()).count() {
                    1 => {}
                    0 => errors.push(format!(
                        "{at}: matches none of oneOf: {}",
                        results.iter().map(|e| e.join("; ")).collect::<Vec<_>>().join(" | ")
                    )),
                    n => errors.push(format!("{at}: matches {n} options of oneOf, not exactly 1")),
                }
            }
            other => errors.push(format!("{at}: schema error: unsupported keyword {other:?}")),
        }
    }
    if keywords.contains_key("required")
        || keywords.contains_key("properties")
        || keywords.contains_key("additionalProperties")
    {
        check_object(root, schema, v, at, depth, errors);
    }
}

/// The schema file of the repository.
pub(crate) fn bench_report_schema() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/bench-report.schema.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Panics naming every violation of `report`.
pub(crate) fn assert_valid_report(report: &Value) {
    let errors = validate(&bench_report_schema(), report);
    assert!(errors.is_empty(), "the report does not match docs/bench-report.schema.json:\n{}", errors.join("\n"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fact_schema() -> Value {
        json!({
            "type": "object",
            "required": ["n", "name", "fact", "list"],
            "properties": {
                "n": {"type": "integer", "minimum": 1},
                "name": {"type": ["string", "null"], "minLength": 2, "maxLength": 4},
                "fact": {"oneOf": [{"$ref": "#/$defs/unknown"}, {"$ref": "#/$defs/known"}]},
                "list": {"type": "array", "minItems": 1, "items": {"enum": ["a", "b"]}},
                "tag": {"const": "t"},
            },
            "additionalProperties": false,
            "$defs": {
                "unknown": {
                    "type": "object", "required": ["value", "why"], "additionalProperties": false,
                    "properties": {"value": {"type": "null"}, "why": {"type": "string", "minLength": 1}},
                },
                "known": {
                    "type": "object", "required": ["value", "why"], "additionalProperties": false,
                    "properties": {"value": {"type": "number"}, "why": {"type": "null"}},
                },
            },
        })
    }

    fn good() -> Value {
        json!({"n": 2, "name": "abc", "fact": {"value": 1.5, "why": null}, "list": ["a"], "tag": "t"})
    }

    #[test]
    fn a_valid_instance_has_no_errors() {
        assert_eq!(validate(&fact_schema(), &good()), Vec::<String>::new());
        let mut unknown = good();
        unknown["fact"] = json!({"value": null, "why": "not measured"});
        unknown["name"] = Value::Null;
        assert_eq!(validate(&fact_schema(), &unknown), Vec::<String>::new());
    }

    #[test]
    fn each_violation_is_named_by_its_pointer() {
        let cases: [(&str, Value, &str); 11] = [
            ("n", json!("2"), "/n: \"2\" is not of type integer"),
            ("n", json!(0), "/n: 0 is below the minimum 1"),
            ("n", json!(1.5), "/n: 1.5 is not of type integer"),
            ("name", json!("a"), "/name: 1 characters, minLength is 2"),
            ("name", json!("abcde"), "/name: 5 characters, maxLength is 4"),
            ("name", json!(3), "/name: 3 is not of type string or null"),
            ("list", json!([]), "/list: 0 items, fewer than 1"),
            ("list", json!(["a", "c"]), "/list/1: \"c\" is not one of [\"a\",\"b\"]"),
            ("tag", json!("u"), "/tag: \"u\" is not \"t\""),
            ("extra", json!(1), "/extra: property \"extra\" is not allowed"),
            ("fact", json!({"value": null, "why": ""}), "/fact: matches none of oneOf"),
        ];
        for (key, value, expected) in cases {
            let mut instance = good();
            instance[key] = value;
            let errors = validate(&fact_schema(), &instance);
            assert!(errors.iter().any(|e| e.starts_with(expected)), "{key}: {errors:?}");
        }
    }

    #[test]
    fn a_missing_required_property_and_a_value_without_why_are_errors() {
        let mut instance = good();
        instance.as_object_mut().unwrap().remove("fact");
        assert_eq!(validate(&fact_schema(), &instance), [": required property \"fact\" is missing"]);
        let mut instance = good();
        instance["fact"] = json!({"value": null});
        let errors = validate(&fact_schema(), &instance);
        assert!(
            errors[0].starts_with("/fact: matches none of oneOf") && errors[0].contains("\"why\" is missing"),
            "{errors:?}"
        );
    }

    #[test]
    fn schema_errors_are_reported_not_ignored() {
        let errors = validate(&json!({"pattern": "^a"}), &json!("a"));
        assert_eq!(errors, [": schema error: unsupported keyword \"pattern\""]);
        let errors = validate(&json!({"$ref": "#/$defs/none"}), &json!(1));
        assert_eq!(errors, [": schema error: unresolved $ref \"#/$defs/none\""]);
        let errors = validate(&json!({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}), &json!(1));
        assert!(errors[0].contains("$ref deeper than 64"), "{errors:?}");
        let errors = validate(&json!({"type": "decimal"}), &json!(1));
        assert_eq!(errors, [": schema error: unknown type \"decimal\""]);
    }

    #[test]
    fn the_repository_schema_uses_only_the_subset_and_requires_every_record_field() {
        let schema = bench_report_schema();
        // A report of the wrong shape altogether fails at the top, and no error is a schema error.
        let errors = validate(&schema, &json!({}));
        assert!(errors.iter().all(|e| !e.contains("schema error")), "{errors:?}");
        assert!(errors.iter().any(|e| e == ": required property \"retained_tape\" is missing"), "{errors:?}");
        // Every field of a retained-replay claim (issue 16, point 6) is required at its place.
        let required_paths = [
            "source/branch",
            "source/commit",
            "source/dirty",
            "device/product",
            "device/agent",
            "device/pci",
            "device/runtime",
            "device/driver",
            "host/cpu_model",
            "clocks/cpu_governor",
            "clocks/gpu",
            "model/bytes",
            "model/parameters",
            "model/architecture",
            "model/quantization",
            "invocation/argv",
            "invocation/report_path",
            "workload/prompt_bytes_sha256",
            "kv_cache",
            "topology/devices",
            "environment/listed",
            "environment/other_set",
            "retained_tape",
            "output_health/arms",
            "output_health/criteria",
            "correctness/tolerance",
            "correctness/why",
            "ratio_retained_over_ordinary_tok_s",
            "delta_retained_minus_ordinary_tok_s",
            "comparison/tok_s",
            "comparison/ms_per_token",
            "promotion/rule",
            "promotion/declared_utc",
            "promotion/disposition",
            "promotion/reason",
        ];
        for path in required_paths {
            let mut node = &schema;
            let parts: Vec<&str> = path.split('/').collect();
            for (i, part) in parts.iter().enumerate() {
                let required = node["required"].as_array().unwrap_or_else(|| panic!("{path}: no required at {i}"));
                assert!(required.contains(&json!(part)), "{path}: {part} is not required");
                node = &node["properties"][part];
            }
        }
        let tape = &schema["properties"]["retained_tape"]["oneOf"][1]["properties"]["value"];
        for part in ["artifacts", "geometry", "effects", "bindings"] {
            assert!(tape["required"].as_array().unwrap().contains(&json!(part)), "retained_tape {part}");
        }
    }
}
