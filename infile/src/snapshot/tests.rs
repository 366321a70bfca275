use std::io::Write as _;
use std::os::fd::AsRawFd as _;

use super::*;
use crate::{gib, mib};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("infile-snapshot-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const LIMIT: Limit = Limit::new("test model", gib(1));

/// Bytes that differ at every offset of every chunk (a multiplicative hash of the offset), over
/// three chunks and a tail so that the copy crosses chunk boundaries.
fn content() -> Vec<u8> {
    (0..3 * CHUNK_BYTES + 17).map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0]).collect()
}

fn file_with(name: &str, bytes: &[u8]) -> PathBuf {
    let path = scratch(name).join("m.bin");
    std::fs::write(&path, bytes).unwrap();
    path
}

fn options(backing: Backing) -> SnapshotOptions {
    SnapshotOptions { budget_bytes: None, backing }
}

#[test]
fn a_snapshot_holds_exactly_the_files_bytes_and_their_digest() {
    let bytes = content();
    let path = file_with("exact", &bytes);
    let opened = Opened::open(&path, LIMIT).unwrap();
    assert_eq!(opened.size(), bytes.len() as u64);
    for backing in [Backing::SealedMemfd, Backing::Heap] {
        let snapshot = opened.snapshot(&options(backing)).unwrap();
        assert_eq!(snapshot.backing(), backing);
        assert!(snapshot.bytes() == bytes.as_slice(), "{backing:?}: the bytes");
        // The digest, computed here over the file's bytes as written, not by the copy loop.
        let expected: [u8; 32] = Sha256::digest(&bytes).into();
        assert_eq!(snapshot.sha256(), &expected, "{backing:?}");
        assert_eq!(snapshot.sha256_hex(), hex(&expected));
        assert_eq!(snapshot.memfd().is_some(), backing == Backing::SealedMemfd);
    }
    assert_eq!(opened.sha256().unwrap(), <[u8; 32]>::from(Sha256::digest(&bytes)));
    assert_eq!(opened.prefix(4).unwrap(), bytes[..4]);
    assert_eq!(opened.prefix(usize::MAX).unwrap(), bytes, "a prefix longer than the file is the file");
}

#[test]
fn the_memfd_refuses_writes_truncation_and_growth_from_anyone() {
    let bytes = content();
    let path = file_with("sealed", &bytes);
    let snapshot = Opened::open(&path, LIMIT).unwrap().snapshot(&options(Backing::SealedMemfd)).unwrap();
    let fd = snapshot.memfd().unwrap();
    assert!(rustix::fs::fcntl_get_seals(fd).unwrap().contains(SEALS));
    // Another opener of the same memfd, as another process would reach it through /proc.
    let proc = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let mut writer = std::fs::OpenOptions::new().write(true).open(&proc).unwrap();
    let eperm = |r: std::io::Result<()>| r.unwrap_err().raw_os_error() == Some(libc::EPERM);
    assert!(eperm(writer.write_all(b"x")), "a write");
    assert!(eperm(writer.set_len(1)), "a truncation");
    assert!(eperm(writer.set_len(bytes.len() as u64 + 4096)), "growth");
    assert!(rustix::fs::fcntl_add_seals(fd, rustix::fs::SealFlags::empty()).is_err(), "the seals are sealed");
    assert!(snapshot.bytes() == bytes.as_slice());
}

#[test]
fn changing_the_file_after_the_snapshot_changes_nothing_it_holds() {
    let bytes = content();
    let path = file_with("after", &bytes);
    let opened = Opened::open(&path, LIMIT).unwrap();
    let snapshots = [Backing::SealedMemfd, Backing::Heap].map(|b| opened.snapshot(&options(b)).unwrap());
    // Truncated to nothing, then rewritten with other bytes of another length.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
    std::fs::write(&path, vec![0xA5; 100]).unwrap();
    let expected: [u8; 32] = Sha256::digest(&bytes).into();
    for snapshot in &snapshots {
        // Every page is read again: a mapping of the file itself would fault here.
        assert!(snapshot.bytes() == bytes.as_slice(), "{:?}", snapshot.backing());
        assert_eq!(snapshot.sha256(), &expected);
    }
    assert!(matches!(opened.check_unchanged(), Err(ReadError::Changed { .. })));
}

#[test]
fn a_file_truncated_before_the_copy_is_a_short_read_naming_it() {
    let bytes = content();
    for backing in [Backing::SealedMemfd, Backing::Heap] {
        let path = file_with("short", &bytes);
        let opened = Opened::open(&path, LIMIT).unwrap();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(40_000).unwrap();
        let error = opened.snapshot(&options(backing)).unwrap_err();
        assert!(
            matches!(error, ReadError::ShortRead { expected, read: 40_000, .. } if expected == bytes.len() as u64),
            "{error}"
        );
        assert!(error.is_invalid_input());
        let message = error.to_string();
        assert!(message.contains("short read") && message.contains(&*path.to_string_lossy()), "{message}");
        assert!(matches!(opened.sha256(), Err(ReadError::ShortRead { read: 40_000, .. })));
        assert!(matches!(opened.prefix(50_000), Err(ReadError::ShortRead { read: 40_000, .. })));
    }
}

#[test]
fn a_file_that_grows_or_is_written_while_read_is_refused() {
    let bytes = content();
    let path = file_with("grew", &bytes);
    let opened = Opened::open(&path, LIMIT).unwrap();
    std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"more").unwrap();
    let error = opened.snapshot(&SnapshotOptions::default()).unwrap_err();
    assert!(matches!(error, ReadError::Grew { expected, .. } if expected == bytes.len() as u64), "{error}");
    assert!(error.is_invalid_input());

    // The same size, other bytes: the modification time tells.
    let path = file_with("written", &bytes);
    let opened = Opened::open(&path, LIMIT).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().write_all(b"XXXX").unwrap();
    let error = opened.snapshot(&SnapshotOptions::default()).unwrap_err();
    assert!(matches!(error, ReadError::Changed { .. }), "{error}");
    assert!(error.to_string().contains("modification time"), "{error}");
}

#[test]
fn a_snapshot_over_the_budget_is_refused_before_a_byte_is_read() {
    let path = scratch("budget").join("huge.bin");
    // Sparse: reading it would take minutes, so refusing it fast shows nothing was read.
    std::fs::File::create(&path).unwrap().set_len(gib(64)).unwrap();
    let opened = Opened::open(&path, Limit::new("test model", gib(512))).unwrap();
    let started = std::time::Instant::now();
    let options = SnapshotOptions { budget_bytes: Some(mib(1)), backing: Backing::SealedMemfd };
    let error = opened.snapshot(&options).unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    assert!(matches!(error, ReadError::OverBudget { size, budget, .. } if size == gib(64) && budget == mib(1)));
    assert!(!error.is_invalid_input(), "this machine's limit, not the file's fault");
    assert!(error.to_string().contains("huge.bin"), "{error}");
}

#[test]
fn an_empty_file_is_an_empty_snapshot() {
    let path = file_with("empty", b"");
    let snapshot = Opened::open(&path, LIMIT).unwrap().snapshot(&SnapshotOptions::default()).unwrap();
    assert!(snapshot.bytes().is_empty());
    assert_eq!(snapshot.sha256_hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

#[test]
fn a_snapshot_taken_again_reads_the_file_opened_even_after_a_rename_over_it() {
    let bytes = content();
    let dir = scratch("rename");
    let path = dir.join("m.bin");
    std::fs::write(&path, &bytes).unwrap();
    let opened = Opened::open(&path, LIMIT).unwrap();
    let other = dir.join("other.bin");
    std::fs::write(&other, b"not the model").unwrap();
    std::fs::rename(&other, &path).unwrap();
    let again = opened.snapshot(&SnapshotOptions::default()).unwrap();
    assert!(again.bytes() == bytes.as_slice());
}

#[test]
fn memfd_unavailable_falls_back_to_the_heap_and_other_failures_do_not() {
    for errno in [libc::ENOSYS, libc::EPERM, libc::EACCES, libc::EINVAL] {
        assert!(memfd_or_fallback(Err(std::io::Error::from_raw_os_error(errno))).unwrap().is_none(), "{errno}");
    }
    for errno in [libc::EMFILE, libc::ENOMEM] {
        assert!(memfd_or_fallback(Err(std::io::Error::from_raw_os_error(errno))).is_err(), "{errno}");
    }
    assert!(memfd_or_fallback(sys::memfd_create()).unwrap().is_some(), "this kernel has memfd");
}

#[test]
fn the_budget_is_half_the_smaller_of_memtotal_and_the_cgroup_limit() {
    let meminfo = "MemTotal:       24000000 kB\nMemFree:         5000000 kB\n";
    assert_eq!(mem_total_bytes(meminfo), Some(24_000_000 * 1024));
    assert_eq!(mem_total_bytes("MemFree: 1 kB\n"), None);
    assert_eq!(cgroup_v2_dir("0::/user.slice/a.scope\n"), Some("user.slice/a.scope"));
    assert_eq!(cgroup_v2_dir("1:memory:/x\n"), None);
    let budget = memory_budget().expect("this machine's memory is readable");
    let total = mem_total_bytes(&std::fs::read_to_string("/proc/meminfo").unwrap()).unwrap();
    assert!(budget <= total / 2 && budget > 0, "{budget} of {total}");
}
