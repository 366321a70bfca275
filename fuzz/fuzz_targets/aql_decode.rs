//! Any bytes decode as an AQL packet or a typed error, never a panic; every accepted packet
//! re-encodes to the same 64 bytes (empty INVALID slots excepted: their body is not inspected).
#![no_main]

use aql_packets::{AqlPacket, decode_slice};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() != 64 {
        assert!(decode_slice(data).is_err(), "only 64-byte inputs are packets");
    }
    let Some(bytes) = data.get(..64) else { return };
    let Ok(packet) = decode_slice(bytes) else { return };
    if !matches!(packet, AqlPacket::Invalid) {
        assert_eq!(&packet.to_bytes()[..], bytes);
    }
});
