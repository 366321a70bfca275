#!/usr/bin/env python3
"""Capture PM4 command streams produced by tinygrad's AMD backend, without a GPU.

tinygrad (https://pypi.org/project/tinygrad/, MIT) drives AMD GPUs directly: its
`AMDComputeQueue` (tinygrad/runtime/ops_amd.py) builds PM4 packets as lists of
32-bit integers and copies them into a KFD compute ring. This script runs the
real `AMDDevice`, `AMDProgram` and `AMDComputeQueue` code on top of a stand-in
KFD interface (`FakeKFDIface`, defined here) that hands out host memory at fixed,
deterministic virtual addresses instead of talking to /dev/kfd. Everything that
is written to the ring, and every dword list a queue method builds, therefore
comes from tinygrad's own code; only the device description (IP versions, CU
counts) and the kernel descriptor fed to `AMDProgram` are chosen here.

Usage:
    python3 -m venv /tmp/tgvenv
    /tmp/tgvenv/bin/pip install tinygrad==0.14.0
    /tmp/tgvenv/bin/python tools/capture-tinygrad-pm4.py [--wheel PATH] [--out DIR]

Each target architecture is captured in its own subprocess so that tinygrad's
class-level state (signal pools, peer groups) and the fake address space start
from the same point for every target, which keeps the output byte-for-byte
reproducible.
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import functools
import hashlib
import importlib.metadata
import json
import mmap
import os
import struct
import subprocess
import sys
import types
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "crates" / "redline" / "tests" / "data" / "external"

# Device descriptions handed to tinygrad through the fake KFD interface.
#   gfx: KFD gfx_target_version; gc/sdma/nbio: IP discovery versions (major, minor, rev);
#   the remaining keys mirror the KFD topology node properties tinygrad reads.
TARGETS = {
  "gfx1100": dict(desc="Navi 31 (RX 7900 XTX class), GC 11.0.0", gfx=110000, gc=(11, 0, 0), sdma=(6, 0, 0), nbio=(4, 3, 0),
                  se=6, sa_per_se=2, cu=96),
  "gfx1151": dict(desc="Strix Halo APU, GC 11.5.1", gfx=110501, gc=(11, 5, 1), sdma=(6, 1, 1), nbio=(7, 11, 3),
                  se=2, sa_per_se=2, cu=40),
  "gfx1200": dict(desc="Navi 44 (RX 9060 XT class), GC 12.0.0", gfx=120000, gc=(12, 0, 0), sdma=(7, 0, 0), nbio=(6, 3, 1),
                  se=2, sa_per_se=2, cu=32),
  "gfx1201": dict(desc="Navi 48 (RX 9070 XT class), GC 12.0.1", gfx=120001, gc=(12, 0, 1), sdma=(7, 0, 1), nbio=(6, 3, 1),
                  se=4, sa_per_se=2, cu=64),
}
# Not capturable: gfx1030 (GC 10.3). tinygrad 0.14.0 ships no gc_10_3_* register tables and
# AMDDevice.__init__ asserts `target in ((9,4,2),(9,5,0)) or target[0] in (11, 12)`.

VA_BASE = 0x7E00_0000_0000  # first fake GPU/CPU virtual address handed out
VA_ALIGN = 0x20_0000        # 2 MiB, like large KFD allocations


# ----------------------------------------------------------------------------------------------
# Fixed-address host memory, so va_addr == CPU address (tinygrad writes some structures through
# va_addr directly, as it does with KFD's unified address space) and addresses are deterministic.

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
MAP_FIXED_NOREPLACE, MAP_NORESERVE = 0x100000, 0x4000


class FixedVA:
  def __init__(self, base: int): self.next = base

  def alloc(self, size: int) -> int:
    size = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE
    addr = self.next
    got = _libc.mmap(addr, size, mmap.PROT_READ | mmap.PROT_WRITE,
                     mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0)
    if got != addr: raise OSError(ctypes.get_errno(), f"mmap at {addr:#x} failed (got {got})")
    self.next = (addr + size + VA_ALIGN - 1) // VA_ALIGN * VA_ALIGN
    return addr


# ----------------------------------------------------------------------------------------------
# Per-target capture (runs in a child process).

def capture_target(arch: str) -> dict:
  from tinygrad.runtime import ops_amd
  from tinygrad.runtime.ops_amd import AMDDevice, AMDProgram, AMDComputeQueue, AMDQueueDesc
  from tinygrad.runtime.support.hcq import HCQBuffer, MMIOInterface
  from tinygrad.runtime.autogen import kfd, amdgpu_kd as kd
  from tinygrad.runtime.autogen.am import am
  from tinygrad.device import TinyELF, BufferSpec
  from tinygrad import dtypes

  t = TARGETS[arch]
  va = FixedVA(VA_BASE)

  class FakeKFDIface:
    """Stands in for ops_amd.KFDIface: same attributes, host memory instead of /dev/kfd."""
    def __init__(self, dev, device_id):
      self.dev = dev
      simd_per_cu = 2
      self.props = {
        'gfx_target_version': t["gfx"], 'num_xcc': 1,
        'array_count': t["se"] * t["sa_per_se"], 'simd_arrays_per_engine': t["sa_per_se"],
        'simd_count': t["cu"] * simd_per_cu, 'simd_per_cu': simd_per_cu, 'max_waves_per_simd': 16,
        'lds_size_in_kb': 64, 'max_slots_scratch_cu': 32, 'cu_per_simd_array': t["cu"] // (t["se"] * t["sa_per_se"]),
      }
      self.ip_versions = {am.GC_HWIP: t["gc"], am.SDMA0_HWIP: t["sdma"], am.NBIF_HWIP: t["nbio"]}
      # KFD event used by AMDComputeQueue.signal() for timeline signals (interrupt to wake the host).
      self.event_page = self.alloc(0x8000, uncached=True)
      dev.queue_event = types.SimpleNamespace(event_id=5, event_slot_index=5)
      dev.queue_event_mailbox_ptr = self.event_page.va_addr + dev.queue_event.event_slot_index * 8

    def alloc(self, size: int, host=False, uncached=False, cpu_access=False, contiguous=False, cpu_addr=None, **kw) -> HCQBuffer:
      addr = va.alloc(size)
      return HCQBuffer(addr, size, meta=types.SimpleNamespace(handle=addr), view=MMIOInterface(addr, size, fmt='B'), owner=self.dev)

    def free(self, mem): pass
    def map(self, mem): pass
    def sleep(self, tm: int): pass
    def require_profile_mode(self, can_set_mode=True): pass
    def is_wgp_active(self, xcc, se, sa, wgp) -> bool: return True

    def create_queue(self, queue_type, ring, gart, rptr, wptr, eop_buffer=None, cwsr_buffer=None, ctl_stack_size=0,
                     ctx_save_restore_size=0, xcc_id=0, idx=0):
      if queue_type == kfd.KFD_IOC_QUEUE_TYPE_SDMA: raise OSError("no SDMA queue in the fake interface")
      doorbell = self.alloc(0x1000)
      return AMDQueueDesc(ring=ring.cpu_view().view(fmt='I'), read_ptr=gart.cpu_view().view(offset=rptr, size=8, fmt='Q'),
                          write_ptr=gart.cpu_view().view(offset=wptr, size=8, fmt='Q'), doorbell=doorbell.cpu_view().view(size=8, fmt='Q'))

  # Use the fake interface instead of probing /dev/kfd.
  AMDDevice._select_iface = lambda self, device: (setattr(self, 'device_id', 0), FakeKFDIface(self, 0))[1]

  # ---- record which queue method produced which dword range -----------------------------------
  log: list[tuple[int, str, int, int]] = []  # (depth, method, start, end)
  depth = [0]
  methods = ["wait", "memory_barrier", "acquire_mem", "release_mem", "wait_reg_mem", "exec", "signal", "timestamp", "write",
             "poll_bit", "spi_config", "set_grbm", "sqtt_start", "sqtt_stop", "sqtt_config", "pmc_start", "pmc_read",
             "pmc_reset_counters"]

  def traced(name, fn):
    @functools.wraps(fn)
    def wrapper(self, *a, **k):
      start = len(self._q)
      depth[0] += 1
      try: return fn(self, *a, **k)
      finally:
        depth[0] -= 1
        log.append((depth[0], name, start, len(self._q)))
    return wrapper

  for m in methods: setattr(AMDComputeQueue, m, traced(m, getattr(AMDComputeQueue, m)))

  # ---- record every packet the queue builds through pkt3()/wreg() ------------------------------
  packets: list[dict] = []  # dicts: start, end, opcode, (reg, reg_addr)

  orig_pkt3, orig_wreg = AMDComputeQueue.pkt3, AMDComputeQueue.wreg

  def pkt3(self, cmd, *vals):
    start = len(self._q)
    orig_pkt3(self, cmd, *vals)
    packets.append(dict(start=start, end=len(self._q), opcode=cmd))

  def wreg(self, reg, *args, **kwargs):
    orig_wreg(self, reg, *args, **kwargs)
    packets[-1].update(reg=reg.name, reg_addr=reg.addr[0])

  AMDComputeQueue.pkt3, AMDComputeQueue.wreg = pkt3, wreg

  dev = AMDDevice("AMD")
  assert dev.arch == arch, (dev.arch, arch)

  # ---- kernels: a minimal AMDGPU code object (ELF with .rodata kernel descriptor + .text) -------
  gfx12 = dev.target[0] >= 12

  def rsrc1(vgpr_granules: int) -> int:
    v = (3 << kd.COMPUTE_PGM_RSRC1_FLOAT_DENORM_MODE_32_SHIFT) | (3 << kd.COMPUTE_PGM_RSRC1_FLOAT_DENORM_MODE_16_64_SHIFT) \
      | kd.COMPUTE_PGM_RSRC1_GFX10_PLUS_WGP_MODE | kd.COMPUTE_PGM_RSRC1_GFX10_PLUS_MEM_ORDERED | vgpr_granules
    if not gfx12: v |= kd.COMPUTE_PGM_RSRC1_GFX6_GFX11_ENABLE_DX10_CLAMP | kd.COMPUTE_PGM_RSRC1_GFX6_GFX11_ENABLE_IEEE_MODE
    return v

  def code_object(name: str, *, kernarg_size: int, lds: int, private: int, props: int, rsrc1_v: int, rsrc2_v: int) -> bytes:
    desc = kd.llvm_amdhsa_kernel_descriptor_t()
    desc.group_segment_fixed_size, desc.private_segment_fixed_size, desc.kernarg_size = lds, private, kernarg_size
    desc.kernel_code_entry_byte_offset = 0x100 - 0x40  # .text at 0x100, descriptor at 0x40
    desc.compute_pgm_rsrc1, desc.compute_pgm_rsrc2, desc.compute_pgm_rsrc3 = rsrc1_v, rsrc2_v, 0
    desc.kernel_code_properties = props
    rodata, text = bytes(desc), struct.pack('<I', 0xBFB00000)  # s_endpgm (gfx11/gfx12 encoding)
    shstr = b"\0.rodata\0.text\0.shstrtab\0"
    ehsize, shentsize = 64, 64
    # layout: ehdr | .rodata @0x40 | .text @0x100 | shstrtab @0x140 | section headers @0x180
    blob = bytearray(0x180)
    blob[0x40:0x40 + len(rodata)] = rodata
    blob[0x100:0x104] = text
    blob[0x140:0x140 + len(shstr)] = shstr
    def shdr(nm, typ, flags, addr, off, size, align):
      return struct.pack('<IIQQQQIIQQ', nm, typ, flags, addr, off, size, 0, 0, align, 0)
    blob += shdr(0, 0, 0, 0, 0, 0, 0)
    blob += shdr(shstr.index(b".rodata"), 1, 2, 0x40, 0x40, len(rodata), 64)
    blob += shdr(shstr.index(b".text"), 1, 6, 0x100, 0x100, len(text), 256)
    blob += shdr(shstr.index(b".shstrtab"), 3, 0, 0, 0x140, len(shstr), 1)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0x40, 3]) + bytes(7)  # ELF64, LE, ELFOSABI_AMDGPU_HSA v3
    blob[0:ehsize] = ident + struct.pack('<HHIQQQIHHHHHH', 3, 224, 1, 0, 0, 0x180, 0, ehsize, 0, 0, shentsize, 4, 3)
    return bytes(blob)

  KP = kd.KERNEL_CODE_PROPERTY_ENABLE_SGPR_KERNARG_SEGMENT_PTR
  W32 = kd.KERNEL_CODE_PROPERTY_ENABLE_WAVEFRONT_SIZE32
  R2 = lambda user_sgprs, extra=0: (user_sgprs << kd.COMPUTE_PGM_RSRC2_USER_SGPR_COUNT_SHIFT) | extra
  # Kernel A: wave32, kernarg pointer only (3 buffer args), workgroup id x/y -- the common tinygrad case.
  elf_a = code_object("E_4_32", kernarg_size=24, lds=0, private=0, props=KP | W32, rsrc1_v=rsrc1(1),
                      rsrc2_v=R2(2, kd.COMPUTE_PGM_RSRC2_ENABLE_SGPR_WORKGROUP_ID_X | kd.COMPUTE_PGM_RSRC2_ENABLE_SGPR_WORKGROUP_ID_Y))
  # Kernel B: wave64, private segment buffer + dispatch pointer + kernarg pointer in user SGPRs, 4 KiB LDS, scratch.
  elf_b = code_object("r_64_16_4", kernarg_size=16, lds=4096, private=256,
                      props=KP | kd.KERNEL_CODE_PROPERTY_ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER | kd.KERNEL_CODE_PROPERTY_ENABLE_SGPR_DISPATCH_PTR,
                      rsrc1_v=rsrc1(3), rsrc2_v=R2(8, kd.COMPUTE_PGM_RSRC2_ENABLE_PRIVATE_SEGMENT | kd.COMPUTE_PGM_RSRC2_ENABLE_SGPR_WORKGROUP_ID_X
                                                    | kd.COMPUTE_PGM_RSRC2_ENABLE_SGPR_WORKGROUP_ID_Y | kd.COMPUTE_PGM_RSRC2_ENABLE_SGPR_WORKGROUP_ID_Z))
  ptr = dtypes.float32
  prg_a = AMDProgram(dev, TinyELF(lib=elf_a, name="E_4_32", target=None, signature=((None, 0, ptr, ()),) * 3))
  prg_b = AMDProgram(dev, TinyELF(lib=elf_b, name="r_64_16_4", target=None, signature=((None, 0, ptr, ()),) * 2))

  bufs = [dev.allocator.alloc(0x10000, BufferSpec()) for _ in range(3)]

  captures: dict[str, dict] = {}

  pm4 = dev.pm4
  opnames = {getattr(pm4, f"PACKET3_{n}"): n for n in ["NOP", "SET_SH_REG", "SET_UCONFIG_REG", "WAIT_REG_MEM", "ACQUIRE_MEM",
             "RELEASE_MEM", "DISPATCH_DIRECT", "EVENT_WRITE", "COPY_DATA", "INDIRECT_BUFFER", "PRED_EXEC"]}
  addr2reg = {}
  for ip in (dev.gc, dev.nbio):
    for r in ip.regs.values(): addr2reg.setdefault(r.addr[0], r.name)

  def annotate(p: dict) -> dict:
    p = dict(p, name=opnames[p["opcode"]])
    if "reg" in p:
      base = pm4.PACKET3_SET_SH_REG_START if p["name"] == "SET_SH_REG" else pm4.PACKET3_SET_UCONFIG_REG_START
      n = p["end"] - p["start"] - 2
      p["pkt_offset"] = p["reg_addr"] - base
      # first dword: the register the producer named; following dwords: the table's register at that address
      p["covers"] = [[p["reg_addr"] + i, p["reg"] if i == 0 else addr2reg.get(p["reg_addr"] + i, "?")] for i in range(n)]
    return p

  def from_ring(fn) -> tuple[list[int], list]:
    """Run fn(); return what it appended to the compute ring and the method log entries."""
    ring, start = dev.compute_queue.ring, dev.compute_queue.put_value
    del log[:], packets[:]
    fn()
    words = [ring[i % len(ring)] for i in range(start, dev.compute_queue.put_value)]
    return words, list(log), list(packets)

  def from_queue(fn) -> tuple[list[int], list]:
    """Build a fresh AMDComputeQueue with fn(q); return its dword list (not submitted)."""
    q = dev.hw_compute_queue_t()
    del log[:], packets[:]
    fn(q)
    return [int(x) for x in q._q], list(log), list(packets)

  def add(what, how, words_log, note):
    words, lg, pk = words_log
    assert all(isinstance(w, int) and 0 <= w < 2**32 for w in words), what
    captures[what] = dict(how=how, note=note, words=words, log=lg, packets=[annotate(p) for p in pk])

  # Signals: a plain (non-timeline) signal and the device's timeline signal.
  sig = dev.new_signal(value=0)

  add("kernel-launch", "ring",
      from_ring(lambda: prg_a(*bufs, global_size=(4, 2, 1), local_size=(32, 1, 1))),
      "AMDProgram.__call__(3 buffers, global_size=(4,2,1), local_size=(32,1,1)) -> ring contents after submit()")
  # wait=True takes the hcq_profile path (timestamps around exec) and then synchronizes on the
  # timeline signal; mark the signal as already reached so synchronize() returns.
  def launch_profiled():
    dev.timeline_signal.value = 1 << 30
    prg_b(*bufs[:2], global_size=(64, 1, 1), local_size=(16, 4, 1), wait=True)
  add("kernel-launch-profiled", "ring", from_ring(launch_profiled),
      "AMDProgram.__call__(2 buffers, global_size=(64,1,1), local_size=(16,4,1), wait=True) with a kernel using "
      "private segment + dispatch pointer SGPRs, wave64, 4 KiB LDS -> ring contents after submit()")

  add("memory-barrier", "queue", from_queue(lambda q: q.memory_barrier()), "AMDComputeQueue.memory_barrier()")
  add("wait", "queue", from_queue(lambda q: q.wait(sig, 0x1234)), "AMDComputeQueue.wait(signal, 0x1234)")
  add("signal", "queue", from_queue(lambda q: q.signal(sig, 0x1235)), "AMDComputeQueue.signal(non-timeline signal, 0x1235)")
  add("signal-timeline", "queue", from_queue(lambda q: q.signal(dev.timeline_signal, 7)),
      "AMDComputeQueue.signal(device timeline signal, 7) on the KFD path (adds the event-mailbox interrupt)")
  add("timestamp", "queue", from_queue(lambda q: q.timestamp(sig)), "AMDComputeQueue.timestamp(signal)")
  add("write", "queue", from_queue(lambda q: (q.write(bufs[0], 0xCAFE), q.write(bufs[1].offset(8), 0x1_0000_0002, b64=True))),
      "AMDComputeQueue.write(buf, 0xCAFE); AMDComputeQueue.write(buf+8, 0x100000002, b64=True)")
  add("poll-bit", "queue", from_queue(lambda q: q.poll_bit(bufs[0], 0x1, mask=0x1)), "AMDComputeQueue.poll_bit(buf, 1, mask=1)")

  # A queue bound to the device (as HCQGraph does) is submitted as an INDIRECT_BUFFER.
  def bound_submit():
    q = dev.hw_compute_queue_t().wait(sig, 1).memory_barrier()
    q.exec(prg_a, prg_a.fill_kernargs(tuple(bufs)), (8, 1, 1), (32, 1, 1))
    q.signal(sig, 2)
    q.bind(dev)
    captures["indirect-body"] = dict(how="ib", note="IB contents of the bound queue (wait, memory_barrier, exec, signal)",
                                     words=[int(x) for x in q._q], log=list(log), packets=[annotate(p) for p in packets])
    del log[:], packets[:]
    # bind() builds the INDIRECT_BUFFER packet itself (not through pkt3); record it for the expectations.
    packets.append(dict(start=0, end=len(q.indirect_cmd), opcode=dev.pm4.PACKET3_INDIRECT_BUFFER))
    q.submit(dev)
  del log[:], packets[:]
  add("submit-indirect", "ring", from_ring(bound_submit),
      "AMDComputeQueue.bind(dev) then submit(dev): ring gets the INDIRECT_BUFFER packet pointing at the bound IB")

  # Profiling paths: SQ thread trace start/stop and performance counters.
  se_cnt = dev.se_cnt
  sqtt_bufs = [dev.allocator.alloc(0x100000, BufferSpec(nolru=True, uncached=True)) for _ in range(se_cnt)]
  wptrs = dev.allocator.alloc(0x1000, BufferSpec(cpu_access=True, nolru=True))
  add("sqtt-start", "queue", from_queue(lambda q: q.sqtt_start(sqtt_bufs)), "AMDComputeQueue.sqtt_start(one 1 MiB trace buffer per shader engine)")
  add("sqtt-stop", "queue", from_queue(lambda q: q.sqtt_stop(wptrs)), "AMDComputeQueue.sqtt_stop(wptr buffer)")
  dev.pmc_sched = []
  counters = [("GRBM_GUI_ACTIVE", "GRBM"), ("SQ_WAVES", "SQ"), ("GL2C_HIT", "GL2C")]
  from tinygrad.runtime.support.amd import import_pmc
  pmc = import_pmc(dev.target)
  sel = [(n, *pmc[n]) for n, _ in counters if n in pmc]
  add("pmc-start", "queue", from_queue(lambda q: q.pmc_start(sel)), f"AMDComputeQueue.pmc_start({[s[0] for s in sel]})")
  pmc_buf = dev.allocator.alloc(0x10000, BufferSpec(nolru=True, uncached=True))
  add("pmc-read", "queue", from_queue(lambda q: q.pmc_read(pmc_buf, dev.pmc_sched)), "AMDComputeQueue.pmc_read(buf, schedule from pmc_start)")

  # Register names/offsets tinygrad used (dword offsets as written into the PM4 stream).
  regs = {}
  for name in ["regCOMPUTE_PGM_LO", "regCOMPUTE_PGM_HI", "regCOMPUTE_PGM_RSRC1", "regCOMPUTE_PGM_RSRC2", "regCOMPUTE_PGM_RSRC3",
               "regCOMPUTE_TMPRING_SIZE", "regCOMPUTE_DISPATCH_SCRATCH_BASE_LO", "regCOMPUTE_DISPATCH_SCRATCH_BASE_HI",
               "regCOMPUTE_RESTART_X", "regCOMPUTE_USER_DATA_0", "regCOMPUTE_RESOURCE_LIMITS", "regCOMPUTE_START_X",
               "regCOMPUTE_NUM_THREAD_X", "regCOMPUTE_DISPATCH_INITIATOR", "regCOMPUTE_PERFCOUNT_ENABLE", "regCOMPUTE_THREAD_TRACE_ENABLE",
               "regGRBM_GFX_INDEX", "regSPI_CONFIG_CNTL", "regCP_PERFMON_CNTL", "regCP_PERFMON_CNTL_1", "regSQ_PERFCOUNTER_CTRL",
               "regSQ_PERFCOUNTER_CTRL2", "regSQ_THREAD_TRACE_CTRL", "regSQ_THREAD_TRACE_MASK", "regSQ_THREAD_TRACE_TOKEN_MASK",
               "regSQ_THREAD_TRACE_BUF0_SIZE", "regSQ_THREAD_TRACE_BUF0_BASE", "regSQ_THREAD_TRACE_BUF0_BASE_LO",
               "regSQ_THREAD_TRACE_BUF0_BASE_HI", "regSQ_THREAD_TRACE_STATUS", "regSQ_THREAD_TRACE_WPTR"]:
    with contextlib.suppress(AttributeError):
      regs[name] = getattr(dev.gc, name).addr[0]
  pf = '0' if dev.nbio.version[:2] != (7, 11) else '1'
  for name in [f"regBIF_BX_PF{pf}_GPU_HDP_FLUSH_REQ", f"regBIF_BX_PF{pf}_GPU_HDP_FLUSH_DONE"]:
    regs[name] = getattr(dev.nbio, name).addr[0]
  consts = {k: getattr(pm4, k) for k in ["PACKET3_SET_SH_REG_START", "PACKET3_SET_SH_REG_END", "PACKET3_SET_UCONFIG_REG_START"]}

  return dict(arch=arch, target=list(dev.target), desc=t["desc"], ip_versions=dict(gc=t["gc"], sdma=t["sdma"], nbio=t["nbio"]),
              gc_regs_module=dev.gc.regs and _regs_module("gc", dev.gc.version), nbio_regs_module=_regs_module(dev.nbio.name, dev.nbio.version),
              se_cnt=dev.se_cnt, cu_cnt=dev.cu_cnt, tmpring_size=dev.tmpring_size, regs=regs, pm4_consts=consts,
              kernels={"E_4_32": dict(rsrc1=prg_a.rsrc1, rsrc2=prg_a.rsrc2, rsrc3=prg_a.rsrc3, prog_addr=prg_a.prog_addr, wave32=prg_a.wave32),
                       "r_64_16_4": dict(rsrc1=prg_b.rsrc1, rsrc2=prg_b.rsrc2, rsrc3=prg_b.rsrc3, prog_addr=prg_b.prog_addr, wave32=prg_b.wave32)},
              captures=captures)


def _regs_module(prefix, version):
  from tinygrad.runtime.autogen.am import regs
  cands = [c for c in regs.__all__ if c.startswith(prefix + "_") and (v := tuple(map(int, c.split('_')[1:])))[0] == version[0] and v <= tuple(version)]
  return cands[-1] if cands else None


# ----------------------------------------------------------------------------------------------
# Output

def fmt_words(words: list[int], per_line: int = 8) -> str:
  return "\n".join(" ".join(f"0x{w:08x}" for w in words[i:i + per_line]) for i in range(0, len(words), per_line)) + "\n"


def packet_counts(cap: dict) -> dict[str, int]:
  counts: dict[str, int] = {}
  for p in cap["packets"]: counts[p["name"]] = counts.get(p["name"], 0) + 1
  return counts


def check_tiling(what: str, cap: dict):
  """The packets the producer emitted must cover the captured dwords exactly, in order."""
  pos = 0
  for p in sorted(cap["packets"], key=lambda p: p["start"]):
    assert p["start"] == pos, (what, p, pos)
    pos = p["end"]
  assert pos == len(cap["words"]), (what, pos, len(cap["words"]))


def packet_line(p: dict) -> str:
  line = f"[{p['start']}, {p['end']}) PACKET3 {p['name']}"
  if "reg" in p:
    regs = ", ".join(f"{n.removeprefix('reg')}@0x{a:04X}" for a, n in p["covers"])
    line += f" offset=0x{p['pkt_offset']:03X}: {regs}"
  return line


def write_file(path: Path, arch_res: dict, what: str, cap: dict, version: str, wheel_sha: str):
  counts = packet_counts(cap)
  lines = [
    f"# producer: tinygrad {version} (PyPI), AMDComputeQueue in tinygrad/runtime/ops_amd.py",
    f"# wheel: tinygrad-{version}-py3-none-any.whl sha256={wheel_sha}",
    f"# target: {arch_res['arch']} ({arch_res['desc']}); gc regs table {arch_res['gc_regs_module']}, "
    f"nbio regs table {arch_res['nbio_regs_module']}",
    f"# capture: {cap['note']}",
    f"# source: {SOURCES[cap['how']]}",
    f"# dwords: {len(cap['words'])}; packets: {len(cap['packets'])} ("
    + ", ".join(f"{n} x{c}" for n, c in counts.items()) + ")",
    "# dword ranges [start, end) by producer method (nested calls indented):",
  ]
  log = sorted(cap["log"], key=lambda e: (e[2], e[0]))
  for depth, name, s, e in log:
    if e > s or depth == 0: lines.append(f"#   {'  ' * depth}[{s}, {e}) AMDComputeQueue.{name}")
  if not log: lines.append(f"#   [0, {len(cap['words'])}) AMDComputeQueue.bind (indirect_cmd) written by AMDComputeQueue._submit")
  if len(cap["packets"]) <= 40:
    lines.append("# packets as emitted by the producer (SET_*_REG: register offset and the registers each data dword targets):")
    lines += [f"#   {packet_line(p)}" for p in cap["packets"]]
  lines.append("# regenerate: /tmp/tgvenv/bin/python tools/capture-tinygrad-pm4.py")
  path.write_text("\n".join(lines) + "\n" + fmt_words(cap["words"]))


SOURCES = {"ring": "compute ring contents written by AMDComputeQueue._submit (what the CP fetches)",
           "ib": "indirect buffer contents of a queue after AMDComputeQueue.bind()",
           "queue": "AMDComputeQueue._q dword list built by the named method (not submitted)"}

README_HEAD = """# External PM4 streams

Command streams emitted by an independent PM4 producer, for checking the decoder against
code that was not written with it. Do not edit by hand: regenerate (see below).

## Provenance

| | |
|---|---|
| producer | [tinygrad](https://pypi.org/project/tinygrad/) `{version}`, `AMDComputeQueue` / `AMDProgram` / `AMDDevice` in `tinygrad/runtime/ops_amd.py`; register tables from `tinygrad/runtime/autogen/am/regs.py`, packet constants from `tinygrad/runtime/autogen/am/pm4_nv.py` |
| file | `tinygrad-{version}-py3-none-any.whl` |
| SHA-256 | `{sha}` |
| license | MIT (tinygrad) |
| capture script | `tools/capture-tinygrad-pm4.py` (imports and calls tinygrad; no tinygrad source is copied here) |

No GPU is involved. The script runs tinygrad's real `AMDDevice.__init__`, `AMDProgram.__init__`,
`AMDProgram.__call__` and `AMDComputeQueue` methods on top of a stand-in for tinygrad's KFD
interface that hands out host memory at fixed virtual addresses (starting at `0x7e0000000000`)
instead of calling `/dev/kfd`. `*-kernel-launch*` and `*-submit-indirect` files are the dwords
tinygrad wrote into the compute ring; `*-indirect-body` is the IB a bound queue points at; the
other files are the dword list a single queue method built. What the script chooses (not tinygrad):
the device description (IP versions, SE/CU counts) and two kernel descriptors (a minimal AMDGPU
ELF with `.rodata` descriptor and a one-instruction `.text`):

* `E_4_32`: wave32, user SGPRs = kernarg pointer, workgroup id x/y, kernarg 24 bytes.
* `r_64_16_4`: wave64, user SGPRs = private segment buffer + dispatch pointer + kernarg pointer,
  workgroup id x/y/z, 4 KiB LDS, 256 bytes scratch per lane.

Not captured: **gfx1030** (GFX10.3). tinygrad {version} has no GC 10.3 register tables
(`regs.py` ships gc 9.4.3, 11.0.0, 11.0.3, 11.5.0, 12.0.0) and `AMDDevice.__init__` asserts
`target in ((9,4,2),(9,5,0)) or target[0] in (11, 12)`. gfx9 (MI300) streams are possible but
outside the decoder's targets. tinygrad's SDMA copy queue (not PM4) and its AQL mode
(`AMD_AQL=1`, PM4 wrapped in AQL vendor packets) are not captured. The wheel ships no `MOCKGPU`
support (`test/mockgpu` is not in the wheel), so it is not used.

## Regenerate

```
python3 -m venv /tmp/tgvenv
/tmp/tgvenv/bin/pip install tinygrad=={version}   # or the wheel file with the SHA-256 above
/tmp/tgvenv/bin/python tools/capture-tinygrad-pm4.py --wheel /path/to/tinygrad-{version}-py3-none-any.whl
```

The output is deterministic (two runs are byte-identical). `--wheel` is only hashed for the
headers. Each `.hex` file starts with `#` comment lines (producer, version, wheel SHA-256, target,
which producer method produced which dword range, and for short streams every packet) followed by
whitespace-separated 32-bit words, 8 per line.

## Targets

| target | GC / NBIO IP versions given | tinygrad tables used | SE | CU | COMPUTE_TMPRING_SIZE | RSRC1 (E_4_32 / r_64_16_4) | RSRC2 (E_4_32 / r_64_16_4) |
|---|---|---|---|---|---|---|---|
"""


def write_readme(out: Path, version: str, sha: str, results: dict):
  L = [README_HEAD.format(version=version, sha=sha).rstrip("\n")]
  for arch, r in results.items():
    k = r["kernels"]
    ipv = r["ip_versions"]
    L.append(f"| {arch} | GC {'.'.join(map(str, ipv['gc']))}, NBIO {'.'.join(map(str, ipv['nbio']))} | {r['gc_regs_module']}, {r['nbio_regs_module']} "
             f"| {r['se_cnt']} | {r['cu_cnt']} | 0x{r['tmpring_size']:08x} | 0x{k['E_4_32']['rsrc1']:08x} / 0x{k['r_64_16_4']['rsrc1']:08x} "
             f"| 0x{k['E_4_32']['rsrc2']:08x} / 0x{k['r_64_16_4']['rsrc2']:08x} |")
  L.append("")
  L.append("RSRC1 on gfx11 includes bit 20 (PRIV), which tinygrad sets on gfx11 itself; RSRC2 includes the LDS size tinygrad adds (bits 15+).")
  L.append("")
  L.append("## Expected packets per file")
  L.append("")
  L.append("Recorded from the producer while it built each stream: every packet goes through")
  L.append("`AMDComputeQueue.pkt3(opcode, ...)` (register writes through `AMDComputeQueue.wreg(reg, ...)`), except the")
  L.append("INDIRECT_BUFFER, which `AMDComputeQueue.bind()` builds directly. The capture script checks that these packets")
  L.append("tile each file exactly. All are type-3 packets; opcode names are tinygrad's `PACKET3_*` constants.")
  L.append("")
  files = sorted({w for r in results.values() for w in r["captures"]}, key=lambda w: list(next(iter(results.values()))["captures"]).index(w))
  for what in files:
    caps = {a: r["captures"][what] for a, r in results.items()}
    first = next(iter(caps.values()))
    L.append(f"### `tinygrad-<target>-{what}.hex`")
    L.append("")
    L.append(first["note"] + ".")
    L.append("")
    L.append("| target | dwords | packets | by opcode |")
    L.append("|---|---|---|---|")
    for a, c in caps.items():
      L.append(f"| {a} | {len(c['words'])} | {len(c['packets'])} | " + ", ".join(f"{n} {v}" for n, v in packet_counts(c).items()) + " |")
    seqs = {a: [p["name"] for p in c["packets"]] for a, c in caps.items()}
    if len(first["packets"]) <= 40 and all(v == seqs[next(iter(seqs))] for v in seqs.values()):
      L.append("")
      L.append("Packet order (all targets): " + ", ".join(p["name"] + (f" ({p['reg'].removeprefix('reg')})" if "reg" in p else "") for p in first["packets"]) + ".")
    L.append("")
  L.append("## Registers written by SET_SH_REG / SET_UCONFIG_REG")
  L.append("")
  L.append("Dword register addresses as computed by tinygrad (`AMDReg.addr`: IP base segment from")
  L.append("`navi_offsets.py` + register offset from `regs.py`); the value in the packet is the address minus")
  L.append("`PACKET3_SET_SH_REG_START` (0x2C00) or `PACKET3_SET_UCONFIG_REG_START` (0xC000). Every data dword of a")
  L.append("SET_*_REG packet targets consecutive registers; the names below are the registers those dwords")
  L.append("land on, from the same table.")
  L.append("")
  regs: dict[tuple[str, int], set[str]] = {}
  for a, r in results.items():
    for c in r["captures"].values():
      for p in c["packets"]:
        for addr, name in p.get("covers", []):
          regs.setdefault((p["name"], addr), set()).add(f"{name.removeprefix('reg')}:{a}")
  L.append("| packet | dword address | packet offset | register name (targets) |")
  L.append("|---|---|---|---|")
  for (pk, addr), names in sorted(regs.items(), key=lambda x: (x[0][0] != "SET_SH_REG", x[0][1])):
    base = 0x2C00 if pk == "SET_SH_REG" else 0xC000
    by_name: dict[str, list[str]] = {}
    for n in sorted(names):
      nm, a = n.split(":")
      by_name.setdefault(nm, []).append(a)
    desc = "; ".join(f"{nm} ({'all' if len(ts) == len(results) else ', '.join(ts)})" for nm, ts in by_name.items())
    L.append(f"| {pk} | 0x{addr:04X} | 0x{addr - base:03X} | {desc} |")
  L.append("")
  L.append("WAIT_REG_MEM in `memory_barrier` polls register dwords (not SET_*_REG): "
           + "; ".join(f"{a}: " + ", ".join(f"{n.removeprefix('reg')}=0x{v:04X}" for n, v in r["regs"].items() if "HDP_FLUSH" in n)
                       for a, r in results.items()) + ".")
  L.append("")
  (out / "README.md").write_text("\n".join(L))



def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--wheel", default="/tmp/tg/tinygrad-0.14.0-py3-none-any.whl", help="wheel file (only hashed, for provenance)")
  ap.add_argument("--out", default=str(DEFAULT_OUT))
  ap.add_argument("--child", help=argparse.SUPPRESS)
  ap.add_argument("--json", help="also write all captures and register offsets to this JSON file")
  args = ap.parse_args()

  if args.child:
    res = capture_target(args.child)
    sys.stdout.write(json.dumps(res))
    return

  version = importlib.metadata.version("tinygrad")
  wheel_sha = hashlib.sha256(Path(args.wheel).read_bytes()).hexdigest() if Path(args.wheel).exists() else "unknown"
  out = Path(args.out)
  out.mkdir(parents=True, exist_ok=True)
  env = {**os.environ, "DEBUG": "0", "PROFILE": "0", "VIZ": "0", "AMD_AQL": "0"}
  results = {}
  for arch in TARGETS:
    p = subprocess.run([sys.executable, __file__, "--child", arch], capture_output=True, text=True, env=env)
    if p.returncode != 0:
      sys.stderr.write(p.stderr)
      raise SystemExit(f"capture for {arch} failed")
    results[arch] = res = json.loads(p.stdout)
    for what, cap in res["captures"].items():
      check_tiling(f"{arch}/{what}", cap)
      path = out / f"tinygrad-{arch}-{what}.hex"
      write_file(path, res, what, cap, version, wheel_sha)
      print(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}: {len(cap['words'])} dwords")
  write_readme(out, version, wheel_sha, results)
  if args.json: Path(args.json).write_text(json.dumps(dict(version=version, wheel_sha256=wheel_sha, results=results), indent=1))


if __name__ == "__main__":
  main()
