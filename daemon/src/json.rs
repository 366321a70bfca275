//! A request's JSON values read one field at a time, with the kind of a value that is not what
//! a field takes named in the 400's message.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::error::ApiError;

/// The JSON kind of `value`, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Field `name` as a `T`; absent or `null` is `None`.
pub(crate) fn field<T: DeserializeOwned>(
    obj: &Map<String, Value>,
    name: &str,
    expected: &str,
) -> Result<Option<T>, ApiError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => serde_json::from_value(value.clone()).map(Some).map_err(|_| {
            let shown: String = value.to_string().chars().take(40).collect();
            ApiError::invalid(name, "invalid_type", format!("'{name}' must be {expected}, not {} {shown}", kind(value)))
        }),
    }
}
