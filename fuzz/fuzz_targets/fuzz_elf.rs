//! The host ELF reader: headers, every section's bytes, symbols, RELA/RELR tables, the dynamic
//! section and address translation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocpack_offload::elf::{self, Elf};

fuzz_target!(|data: &[u8]| {
    let _ = elf::is_elf(data);
    let _ = elf::is_elf64_le(data);
    let Ok(elf) = Elf::parse(data) else {
        return;
    };
    let _ = elf.section(b".hip_fatbin");
    let _ = elf.section(b".hipFatBinSegment");
    for s in &elf.sections {
        let Ok(bytes) = elf.section_data(s) else {
            continue;
        };
        assert!(bytes.len() as u64 <= data.len() as u64);
        match s.sh_type {
            elf::SHT_RELA => {
                elf::for_each_rela(bytes, |r| {
                    let _ = elf::reloc_kind(elf.e_machine, r.r_type);
                    let _ = elf.symbol(s.link as usize, r.sym);
                });
            }
            elf::SHT_RELR => {
                let mut n = 0usize;
                elf::for_each_relr(bytes, |_| n += 1);
                assert_eq!(n, elf::parse_relr(bytes).len());
            }
            elf::SHT_SYMTAB | elf::SHT_DYNSYM => {
                for i in 0..(s.size / 24).min(1024) {
                    let _ = elf.symbol(s.index, i as u32);
                }
            }
            _ => {}
        }
        let _ = elf.vaddr_to_offset(s.addr);
        let _ = elf.load_segment_at_offset(s.offset);
    }
    for p in &elf.segments {
        if let Some(o) = elf.vaddr_to_offset(p.vaddr) {
            let _ = elf.load_segment_at_offset(o);
        }
        let _ = elf.vaddr_to_offset(p.vaddr.wrapping_add(p.filesz));
    }
    let _ = (elf.dynamic.len(), elf.truncated_segments.len());
    // Ask for the relocations of a few addresses: wrapper-like fields at the start of every
    // writable segment and section, as the walk does.
    let mut wanted = std::collections::HashSet::new();
    for p in elf.segments.iter().filter(|p| p.flags & elf::PF_W != 0) {
        for i in 0..16u64 {
            wanted.insert(p.vaddr.wrapping_add(24 * i + 8));
        }
    }
    for s in &elf.sections {
        wanted.insert(s.addr.wrapping_add(8));
    }
    let (rela, relr) = elf.dynamic_relocations(&wanted, None);
    assert!(rela.keys().all(|a| wanted.contains(a)));
    assert!(relr.iter().all(|a| wanted.contains(a)));
    // Read with pread in chunks from a file where the ELF starts 7 bytes in, the table gives
    // the same relocations as through the bytes.
    let padded = [&[0u8; 7][..], data].concat();
    let (rela_read, relr_read) = elf.dynamic_relocations(&wanted, Some((&padded.as_slice(), 7)));
    assert_eq!(rela_read.len(), rela.len());
    assert!(rela.iter().all(|(a, r)| {
        rela_read
            .get(a)
            .is_some_and(|x| x.addend == r.addend && x.r_type == r.r_type && x.sym == r.sym)
    }));
    assert_eq!(relr_read, relr);
    for r in rela.values() {
        let _ = elf::reloc_kind(elf.e_machine, r.r_type);
        let _ = elf.dynamic_symbol(r.sym);
    }
});
