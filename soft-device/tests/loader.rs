//! Loading every checked-in code object on every target: addresses against `kernarg-abi`'s
//! values plus the load base, loaded bytes against the file's bytes found through the ELF
//! symbol and section tables.

use std::str::FromStr;

use hal::LoadError;
use object::read::elf::ElfFile64;
use object::{Object, ObjectSection, ObjectSymbol};
use pm4_encoding::Target;
use soft_device::loader::{CodeObjects, SoftKernels};
use soft_device::memory::SimMemory;

/// The file bytes behind ELF virtual address `address`, through the section that holds it.
fn file_bytes(elf: &ElfFile64<'_, object::LittleEndian>, data: &[u8], address: u64, len: usize) -> Vec<u8> {
    let section = elf
        .sections()
        .find(|s| s.address() <= address && address < s.address() + s.size())
        .unwrap_or_else(|| panic!("no section holds {address:#x}"));
    let (offset, _) = section.file_range().expect("file-backed section");
    let start = usize::try_from(offset + (address - section.address())).unwrap();
    data[start..start + len].to_vec()
}

/// The `.co` files of `target` below `objects/` (production modules, not fixtures).
fn production(target: Target) -> Vec<&'static kernels::EmbeddedArtifact> {
    let dir = format!("{target}/");
    kernels::artifacts().iter().filter(|a| a.path.starts_with(&dir) && a.path.ends_with(".co")).collect()
}

#[test]
fn every_production_code_object_loads_at_its_descriptor_addresses() {
    let mut loaded_kernels = 0;
    for target in Target::ALL {
        let artifacts = production(target);
        assert_eq!(artifacts.len(), 15, "{target}");
        let mut memory = SimMemory::new();
        let mut objects = SoftKernels::new();
        for artifact in artifacts {
            let expected = kernarg_abi::read_any(artifact.bytes, Some(target)).unwrap();
            let elf = ElfFile64::<object::LittleEndian>::parse(artifact.bytes).unwrap();
            let loaded =
                soft_device::loader::load(&mut objects, &mut memory, target, artifact.bytes, None).unwrap().clone();
            assert!(loaded.load_va >= SimMemory::VA_BASE, "{}", artifact.path);
            assert_eq!(loaded.load_va, loaded.allocation.va);
            assert_eq!(hex(&loaded.sha256), artifact.sha256, "{}", artifact.path);
            assert_eq!(loaded.kernels.len(), expected.kernels.len());
            for (k, want) in loaded.kernels.iter().zip(&expected.kernels) {
                let what = format!("{} {}", artifact.path, k.name);
                assert_eq!(k.name, want.metadata.name, "{what}");
                assert_eq!(k.kd_va, loaded.load_va + want.descriptor_address, "{what}");
                assert_eq!(k.entry_va, loaded.load_va + want.entry_address, "{what}");
                assert_eq!(k.entry_va % 256, 0, "{what}");
                // The descriptor bytes at the kd VA are the `.kd` symbol's bytes in the file.
                let symbol = elf.symbol_by_name(&format!("{}.kd", k.name)).expect(".kd symbol");
                assert_eq!(symbol.address(), want.descriptor_address, "{what}");
                let mut kd = [0u8; 64];
                memory.read(k.kd_va, &mut kd).unwrap();
                assert_eq!(kd.to_vec(), file_bytes(&elf, artifact.bytes, symbol.address(), 64), "{what}");
                // The first instruction bytes too.
                let mut code = [0u8; 16];
                memory.read(k.entry_va, &mut code).unwrap();
                assert_eq!(code.to_vec(), file_bytes(&elf, artifact.bytes, want.entry_address, 16), "{what}");
                let slot = objects.by_kd(k.kd_va).expect("in the table");
                assert_eq!(&slot.loaded, k);
                assert_eq!(objects.reference(k.kd_va).map(|e| e.name), Some(k.name.as_str()), "{what}: registry entry");
                assert_eq!(objects.by_entry(k.entry_va).map(|s| s.loaded.kd_va), Some(k.kd_va));
                assert!(objects.by_kd(k.entry_va).is_none());
                loaded_kernels += 1;
            }
        }
        assert_eq!(objects.table().objects().len(), 15);
    }
    // 77 kernels (elementwise holds add and mul, quant three, llama five, prefill five,
    // ggml_quants 42, gemma 6, lfm2 2, qwen35 5) on each target of the target table.
    assert_eq!(loaded_kernels, 77 * Target::ALL.len());
}

#[test]
fn segments_past_their_file_bytes_are_zero_and_images_do_not_overlap() {
    let target = Target::Gfx1100;
    let mut memory = SimMemory::new();
    let mut objects = SoftKernels::new();
    let mut ranges = Vec::new();
    for artifact in production(target) {
        let loaded =
            soft_device::loader::load(&mut objects, &mut memory, target, artifact.bytes, None).unwrap().clone();
        let elf = ElfFile64::<object::LittleEndian>::parse(artifact.bytes).unwrap();
        // Every loaded segment: file bytes first, zeros to memsz.
        for segment in elf.elf_program_headers() {
            use object::read::elf::ProgramHeader;
            let le = object::LittleEndian;
            if segment.p_type(le) != object::elf::PT_LOAD {
                continue;
            }
            let (vaddr, memsz) = (segment.p_vaddr(le), segment.p_memsz(le));
            let (offset, filesz) = (segment.p_offset(le), segment.p_filesz(le));
            let mut image = vec![0u8; usize::try_from(memsz).unwrap()];
            memory.read(loaded.load_va + vaddr, &mut image).unwrap();
            let file = &artifact.bytes[usize::try_from(offset).unwrap()..usize::try_from(offset + filesz).unwrap()];
            let filesz = usize::try_from(filesz).unwrap();
            assert_eq!(&image[..filesz], file, "{}", artifact.path);
            assert!(image[filesz..].iter().all(|&b| b == 0), "{}", artifact.path);
        }
        ranges.push((loaded.allocation.va, loaded.allocation.va + loaded.allocation.size));
    }
    ranges.sort_unstable();
    assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0));
}

#[test]
fn fixtures_without_references_load_without_registry_entries() {
    for target in Target::ALL {
        let mut memory = SimMemory::new();
        let mut objects = SoftKernels::new();
        let scratch = kernels::artifact(&format!("fixtures/{target}/scratch.co")).unwrap();
        let loaded = soft_device::loader::load(&mut objects, &mut memory, target, scratch.bytes, None).unwrap().clone();
        assert!(!loaded.kernels.is_empty());
        for k in &loaded.kernels {
            assert!(objects.by_kd(k.kd_va).is_some(), "{target} {}", k.name);
            assert!(objects.reference(k.kd_va).is_none(), "{target} {}", k.name);
        }
        // The wave64 axpy is a registered variant.
        let wave64 = kernels::artifact(&format!("fixtures/{target}/axpy-wave64.co")).unwrap();
        let loaded = soft_device::loader::load(&mut objects, &mut memory, target, wave64.bytes, None).unwrap().clone();
        let axpy = loaded.kernel("axpy").unwrap();
        assert_eq!(axpy.wavefront_size, 64);
        assert!(objects.by_kd(axpy.kd_va).is_some());
        assert!(objects.reference(axpy.kd_va).is_some());
    }
}

#[test]
fn bundles_load_the_entry_for_the_target() {
    let bundle = kernels::artifact("fixtures/fill.bundle").unwrap();
    let entries = kernarg_abi::bundle::device_entries(bundle.bytes).unwrap();
    let targets: Vec<Target> =
        entries.iter().filter_map(|e| e.processor().and_then(|p| Target::from_str(p).ok())).collect();
    assert!(!targets.is_empty());
    for target in targets {
        let mut memory = SimMemory::new();
        let mut objects = SoftKernels::new();
        let loaded = soft_device::loader::load(&mut objects, &mut memory, target, bundle.bytes, None).unwrap();
        assert!(loaded.kernel("fill").is_some(), "{target}");
    }
}

#[test]
fn wrong_targets_and_garbage_are_refused() {
    let mut memory = SimMemory::new();
    let mut objects = SoftKernels::new();
    let fill = kernels::artifact("gfx1030/fill.co").unwrap();
    assert!(matches!(
        soft_device::loader::load(&mut objects, &mut memory, Target::Gfx1100, fill.bytes, None),
        Err(LoadError::Read(kernarg_abi::ReadError::TargetMismatch { requested: Target::Gfx1100, .. }))
    ));
    assert!(matches!(
        soft_device::loader::load(&mut objects, &mut memory, Target::Gfx1100, b"not an elf", None),
        Err(LoadError::Read(kernarg_abi::ReadError::NotElf { len: 10 }))
    ));
    let huge = vec![0u8; CodeObjects::CODE_OBJECT_BYTES_MAX + 1];
    assert!(matches!(
        soft_device::loader::load(&mut objects, &mut memory, Target::Gfx1100, &huge, None),
        Err(LoadError::TooLarge { len, limit }) if len == limit + 1
    ));
    // Nothing was mapped by the failed loads.
    assert!(memory.is_empty());
    assert!(objects.table().objects().is_empty());
}

#[test]
fn code_object_count_is_limited() {
    let mut memory = SimMemory::new();
    let mut objects = SoftKernels::new();
    let fill = kernels::artifact("gfx1100/fill.co").unwrap();
    for _ in 0..CodeObjects::CODE_OBJECTS_MAX {
        soft_device::loader::load(&mut objects, &mut memory, Target::Gfx1100, fill.bytes, None).unwrap();
    }
    assert!(matches!(
        soft_device::loader::load(&mut objects, &mut memory, Target::Gfx1100, fill.bytes, None),
        Err(LoadError::TooMany { limit: 64 })
    ));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
