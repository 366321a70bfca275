//! Any bytes as the body of `POST /v1/completions` and `POST /v1/chat/completions`: parsed or a
//! 400 with a message, never a panic.
#![no_main]

use daemon::{RequestEndpoint, check_request_body};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for endpoint in [RequestEndpoint::Completions, RequestEndpoint::Chat] {
        if let Err((_, message)) = check_request_body(endpoint, data) {
            assert!(!message.is_empty(), "an error without a message");
        }
    }
});
