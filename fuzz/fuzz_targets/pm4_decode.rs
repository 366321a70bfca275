//! Any byte string, read as little-endian dwords, decodes without panicking, ends, and every
//! packet can be visited for every family.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pm4_encoding::bits::FieldDesc;
use pm4_encoding::disasm::Visitor;
use pm4_encoding::regs::RegisterInfo;
use pm4_encoding::{Decoder, Family};

struct Count(usize);

impl Visitor for Count {
    fn field(&mut self, _: &'static str, _: u64) {
        self.0 += 1;
    }
    fn enum_field(&mut self, _: &'static str, _: u64, _: Option<&'static str>) {
        self.0 += 1;
    }
    fn word(&mut self, _: &'static str, _: u32, fields: &'static [FieldDesc]) {
        self.0 += fields.len();
    }
    fn register(&mut self, _: u32, _: u32, _: Option<&'static RegisterInfo>) {
        self.0 += 1;
    }
    fn payload(&mut self, _: &'static str, words: &[u32]) {
        self.0 += words.len();
    }
}

fuzz_target!(|data: &[u8]| {
    let words: Vec<u32> = data.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut steps = 0usize;
    let mut end = 0usize;
    for item in Decoder::new(&words) {
        steps += 1;
        assert!(steps <= words.len(), "decoder yielded more items than dwords");
        match item {
            Ok(d) => {
                assert_eq!(d.offset, end, "packets must tile the stream");
                end = d.offset + d.words.len();
                for family in Family::ALL {
                    d.packet.visit(family, &mut Count(0));
                }
            }
            Err(e) => assert!(e.offset() < words.len()),
        }
    }
});
