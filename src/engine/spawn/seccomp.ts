/*
 * The syscall filter every sandbox gets: a classic-BPF seccomp program, built here
 * from policy/sandbox.json `syscalls` and handed to bwrap on a descriptor
 * (`--seccomp N`, fds.ts), which loads it just before the command runs.
 *
 *   syscallFilter(policy) ─► this machine's architecture known (x86_64, aarch64)?
 *       no ─► none + why (status and doctor say so; the sandbox still starts)
 *       yes ─► the program, built once per policy:
 *         seccomp_data.arch ─► the native ABI ─► its table   (x86_64: the x32 ABI ─► ENOSYS)
 *                           ─► i386 on x86_64 ─► its own table (a 32-bit program is filtered too)
 *                           ─► anything else ─► the process is killed (no table, no guess)
 *         nr ─► `refused` (the kernel keyring: keyctl, add_key, request_key; perf_event_open,
 *               userfaultfd, bpf: kernel attack surface no build or test needs) ─► EPERM
 *            ─► with `refuse_new_user_namespaces`: clone and unshare with CLONE_NEWUSER ─► EPERM,
 *               clone3 (flags behind a pointer) ─► ENOSYS, glibc falls back to clone
 *            ─► with `refuse_setid_modes`: chmod, fchmod, fchmodat, fchmodat2, creat, mknod,
 *               mknodat with S_ISUID or S_ISGID in the mode ─► EPERM; open and openat
 *               likewise when they create (O_CREAT, O_TMPFILE); openat2 and io_uring, whose
 *               mode the filter cannot see (it is behind a pointer) ─► ENOSYS, so callers
 *               fall back to the calls above
 *            ─► allowed
 *
 * Why: root inside the sandbox is the host's uid 0, and a file it makes setuid in the
 * project stays setuid outside, where nosuid no longer holds; and every sandbox would
 * otherwise share the session keyring of whatever started shadowcode. A filter costs
 * nothing per start beyond the descriptor, and the program is a few hundred bytes.
 */
import { endianness } from 'node:os';
import type { Sandbox as SandboxPolicy } from '../../../gen/types/sandbox.js';

type Name = SandboxPolicy['syscalls']['refused'][number] | 'chmod' | 'fchmod' | 'fchmodat' | 'fchmodat2' | 'creat' | 'mknod' | 'mknodat' | 'open' | 'openat' | 'unshare' | 'clone' | 'clone3';

/** Syscall numbers per ABI (from the kernel's tables; a name an ABI lacks is absent: aarch64 has no chmod, open, creat or mknod). */
const TABLES: Record<'x86_64' | 'i386' | 'aarch64', Partial<Record<Name, number>>> = {
  x86_64: { keyctl: 250, add_key: 248, request_key: 249, perf_event_open: 298, userfaultfd: 323, bpf: 321, unshare: 272, clone: 56, clone3: 435, chmod: 90, fchmod: 91, fchmodat: 268, fchmodat2: 452, creat: 85, mknod: 133, mknodat: 259, open: 2, openat: 257, openat2: 437, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427 },
  i386: { keyctl: 288, add_key: 286, request_key: 287, perf_event_open: 336, userfaultfd: 374, bpf: 357, unshare: 310, clone: 120, clone3: 435, chmod: 15, fchmod: 94, fchmodat: 306, fchmodat2: 452, creat: 8, mknod: 14, mknodat: 297, open: 5, openat: 295, openat2: 437, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427 },
  aarch64: { keyctl: 219, add_key: 217, request_key: 218, perf_event_open: 241, userfaultfd: 282, bpf: 280, unshare: 97, clone: 220, clone3: 435, fchmod: 52, fchmodat: 53, fchmodat2: 452, mknodat: 33, openat: 56, openat2: 437, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427 },
};

// <linux/audit.h>: the machine, 64-bit, little-endian.
const AUDIT_ARCH = { x86_64: 0xc000003e, i386: 0x40000003, aarch64: 0xc00000b7 } as const;
const X32_SYSCALL_BIT = 0x40000000;

// <linux/seccomp.h>
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const RET_ALLOW = 0x7fff0000;
const EPERM = 1;
const ENOSYS = 38;

// <linux/filter.h> classic BPF
const LD_W_ABS = 0x20;
const JEQ = 0x15;
const JGE = 0x35;
const JSET = 0x45;
const RET = 0x06;

// struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }: the low
// word of args[i] on a little-endian machine (a mode or flags fit in it; 32-bit ABIs pass no more).
const NR = 0;
const ARCH = 4;
const arg = (i: number) => 16 + 8 * i;

const SETID = 0o6000; // S_ISUID | S_ISGID
const CREATES = 0o100 | 0o20000000; // O_CREAT | __O_TMPFILE (the same on x86 and the generic ABI)
const CLONE_NEWUSER = 0x10000000; // the flags are the first argument of clone and unshare on every ABI here

/** Which argument holds the mode, per call that sets one; and for open, which holds the flags. */
const MODE_AT: ReadonlyArray<readonly [Name, number]> = [
  ['chmod', 1],
  ['fchmod', 1],
  ['fchmodat', 2],
  ['fchmodat2', 2],
  ['creat', 1],
  ['mknod', 1],
  ['mknodat', 2],
];
const OPEN_AT: ReadonlyArray<readonly [Name, number, number]> = [
  ['open', 1, 2],
  ['openat', 2, 3],
];
/** What carries a mode the filter cannot read: answered ENOSYS, so the caller falls back to a call it can. */
const BLIND: readonly Name[] = ['openat2', 'io_uring_setup', 'io_uring_enter', 'io_uring_register'];

interface Ins {
  code: number;
  k: number;
  /** Jump targets, by label (a conditional jump); absent: fall through. */
  t?: string;
  f?: string;
}

/** A tiny assembler: instructions with labels, jumps resolved to classic BPF's forward offsets. */
class Program {
  private readonly ins: Ins[] = [];
  private readonly labels = new Map<string, number>();
  label(name: string): this {
    this.labels.set(name, this.ins.length);
    return this;
  }
  load(offset: number): this {
    this.ins.push({ code: LD_W_ABS, k: offset });
    return this;
  }
  jump(code: number, k: number, t?: string, f?: string): this {
    this.ins.push({ code, k, ...(t ? { t } : {}), ...(f ? { f } : {}) });
    return this;
  }
  ret(k: number): this {
    this.ins.push({ code: RET, k });
    return this;
  }
  bytes(): Buffer {
    const out = Buffer.alloc(this.ins.length * 8);
    this.ins.forEach((x, pc) => {
      const off = (label: string | undefined) => {
        if (label === undefined) return 0;
        const at = this.labels.get(label);
        if (at === undefined || at <= pc || at - pc - 1 > 255) throw new Error(`seccomp: bad jump to ${label}`);
        return at - pc - 1;
      };
      out.writeUInt16LE(x.code, pc * 8);
      out.writeUInt8(off(x.t), pc * 8 + 2);
      out.writeUInt8(off(x.f), pc * 8 + 3);
      out.writeUInt32LE(x.k >>> 0, pc * 8 + 4);
    });
    return out;
  }
}

/** The checks for one ABI's calls, its syscall number already loaded; ends in allow. */
function body(p: Program, abi: keyof typeof TABLES, rules: SandboxPolicy['syscalls']): void {
  const T = TABLES[abi];
  const L = (s: string) => `${abi}.${s}`;
  for (const name of rules.refused) {
    const nr = T[name];
    if (nr !== undefined) p.jump(JEQ, nr, L('eperm'));
  }
  if (rules.refuse_setid_modes) {
    for (const name of BLIND) {
      const nr = T[name];
      if (nr !== undefined) p.jump(JEQ, nr, L('enosys'));
    }
    for (const [name, mode] of MODE_AT) {
      const nr = T[name];
      if (nr !== undefined) p.jump(JEQ, nr, L(`mode${mode}`));
    }
    for (const [name, flags] of OPEN_AT) {
      const nr = T[name];
      if (nr !== undefined) p.jump(JEQ, nr, L(`open${flags}`));
    }
  }
  if (rules.refuse_new_user_namespaces) {
    // clone3 carries its flags behind a pointer: ENOSYS, and glibc falls back to clone.
    const c3 = T.clone3;
    if (c3 !== undefined) p.jump(JEQ, c3, L('enosys'));
    for (const name of ['unshare', 'clone'] as const) {
      const nr = T[name];
      if (nr !== undefined) p.jump(JEQ, nr, L('userns'));
    }
  }
  p.ret(RET_ALLOW);
  if (rules.refuse_new_user_namespaces) p.label(L('userns')).load(arg(0)).jump(JSET, CLONE_NEWUSER, L('eperm'), L('allow'));
  if (rules.refuse_setid_modes) {
    // An open that creates goes on to the mode check of its own mode argument.
    for (const [, flags, mode] of OPEN_AT) p.label(L(`open${flags}`)).load(arg(flags)).jump(JSET, CREATES, L(`mode${mode}`), L('allow'));
    for (const mode of [1, 2, 3]) p.label(L(`mode${mode}`)).load(arg(mode)).jump(JSET, SETID, L('eperm'), L('allow'));
  }
  p.label(L('eperm')).ret(RET_ERRNO | EPERM);
  p.label(L('enosys')).ret(RET_ERRNO | ENOSYS);
  p.label(L('allow')).ret(RET_ALLOW);
}

/** The native ABI of this machine, as the kernel names it; null where we have no table. */
export function nativeAbi(arch: string = process.arch, endian: string = endianness()): 'x86_64' | 'aarch64' | null {
  if (endian !== 'LE') return null;
  return arch === 'x64' ? 'x86_64' : arch === 'arm64' ? 'aarch64' : null;
}

/** The compiled program for one policy's rules on one ABI (exported for the tests' own look at it). */
export function compileFilter(rules: SandboxPolicy['syscalls'], abi: 'x86_64' | 'aarch64'): Buffer {
  const p = new Program();
  p.load(ARCH).jump(JEQ, AUDIT_ARCH[abi], 'native');
  if (abi === 'x86_64') p.jump(JEQ, AUDIT_ARCH.i386, 'i386');
  p.ret(RET_KILL_PROCESS);
  p.label('native').load(NR);
  if (abi === 'x86_64') p.jump(JGE, X32_SYSCALL_BIT, 'x86_64.enosys');
  body(p, abi, rules);
  if (abi === 'x86_64') {
    p.label('i386').load(NR);
    body(p, 'i386', rules);
  }
  return p.bytes();
}

export type SyscallFilter = { readonly kind: 'bpf'; readonly program: Buffer } | { readonly kind: 'none'; readonly why: string };

const built = new WeakMap<object, SyscallFilter>();

/** The filter for a policy's sandbox, built once per policy object. */
export function syscallFilter(policy: SandboxPolicy): SyscallFilter {
  let f = built.get(policy.syscalls);
  if (f) return f;
  const abi = nativeAbi();
  f = abi ? { kind: 'bpf', program: compileFilter(policy.syscalls, abi) } : { kind: 'none', why: `no syscall filter on ${process.arch} (shadowcode knows the syscall numbers of x86_64 and aarch64)` };
  built.set(policy.syscalls, f);
  return f;
}

/** The filter in words, for status and doctor. */
export function describeFilter(f: SyscallFilter, rules: SandboxPolicy['syscalls']): string {
  if (f.kind === 'none') return f.why;
  const keyring = ['keyctl', 'add_key', 'request_key'] as const;
  const others = rules.refused.filter((n) => !(keyring as readonly string[]).includes(n));
  const parts = [
    ...(keyring.some((n) => rules.refused.includes(n)) ? ['no kernel keyring'] : []),
    ...(others.length ? [`no ${others.join('/')}`] : []),
    ...(rules.refuse_setid_modes ? ['no setuid or setgid files'] : []),
    ...(rules.refuse_new_user_namespaces ? ['no new user namespaces'] : []),
  ];
  return parts.length ? parts.join(', ') : 'a syscall filter that refuses nothing';
}
