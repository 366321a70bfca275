//! Every packet the decoder accepts re-emits to exactly the dwords it was decoded from, and the
//! re-emitted stream decodes to the same packets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pm4_encoding::{Decoder, Emit, Writer};

fuzz_target!(|data: &[u8]| {
    let words: Vec<u32> = data.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let decoded: Vec<_> = Decoder::new(&words).map_while(Result::ok).collect();
    let total: usize = decoded.iter().map(|d| d.words.len()).sum();
    let mut buf = vec![0u32; total];
    let mut writer = Writer::new(&mut buf);
    for d in &decoded {
        assert_eq!(d.packet.buffer_len(), d.words.len());
        let at = writer.emit(&d.packet).expect("buffer sized to the decoded stream");
        assert_eq!(at, d.offset);
    }
    assert_eq!(writer.finish(), total);
    assert_eq!(&buf[..], &words[..total]);
    let again: Vec<_> = Decoder::new(&buf).collect::<Result<_, _>>().expect("re-emitted stream decodes");
    assert_eq!(again.len(), decoded.len());
    for (a, b) in again.iter().zip(&decoded) {
        assert_eq!(a.packet, b.packet);
    }
});
