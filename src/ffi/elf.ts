/**
 * A minimal reader of ELF64 shared objects: enough to check a library file before `dlopen`
 * (a truncated `.so` makes the dynamic loader fault with SIGBUS instead of failing) and to
 * list the libraries it needs (DT_NEEDED), its SONAME and its RPATH/RUNPATH.
 *
 * Why: CANN's shared objects carry no RPATH, so opening `libopapi_nn.so` by absolute path
 * only works once the libraries it needs are loaded (glibc reuses an already-loaded object
 * whose SONAME matches a DT_NEEDED entry) or reachable through `LD_LIBRARY_PATH`.
 * {@linkcode ./library.ts} uses the needed-lists to load each dependency first.
 *
 * @module
 */

/** What the dynamic section of a shared object says about its dependencies. */
export interface ElfDynamicInfo {
  /** DT_SONAME, when present. */
  readonly soname: string | undefined;
  /** DT_NEEDED entries, in file order. */
  readonly needed: readonly string[];
  /** DT_RPATH or DT_RUNPATH entries (colon-separated lists joined), when present. */
  readonly runpath: string | undefined;
}

/** The result of checking a file: its dynamic info, or why it cannot be loaded. */
export type ElfCheck =
  | { readonly ok: true; readonly info: ElfDynamicInfo }
  | { readonly ok: false; readonly problem: string };

const PT_LOAD = 1;
const PT_DYNAMIC = 2;
const DT_NULL = 0;
const DT_NEEDED = 1;
const DT_STRTAB = 5;
const DT_STRSZ = 10;
const DT_SONAME = 14;
const DT_RPATH = 15;
const DT_RUNPATH = 29;

interface Segment {
  readonly type: number;
  readonly offset: number;
  readonly vaddr: number;
  readonly fileSize: number;
}

/** Reads a NUL-terminated string at `offset` of `bytes`. */
function cString(bytes: Uint8Array, offset: number): string | undefined {
  if (offset < 0 || offset >= bytes.length) return undefined;
  let end = offset;
  while (end < bytes.length && bytes[end] !== 0) end++;
  if (end === bytes.length) return undefined;
  return new TextDecoder().decode(bytes.subarray(offset, end));
}

/**
 * Random access to a file: `read(offset, length)` returns exactly the bytes asked for (the
 * caller never reads past `size`). Libraries such as libopapi.so weigh hundreds of megabytes,
 * so only the headers, the dynamic segment and the string table are read.
 */
export interface ElfSource {
  /** The file size in bytes. */
  readonly size: number;
  /** Reads `length` bytes at `offset`. */
  read(offset: number, length: number): Uint8Array;
}

/** An {@linkcode ElfSource} over an open file (needs --allow-read to open it). */
export function fileSource(file: Deno.FsFile): ElfSource {
  const size = file.statSync().size;
  return {
    size,
    read(offset, length) {
      const out = new Uint8Array(length);
      file.seekSync(offset, Deno.SeekMode.Start);
      let done = 0;
      while (done < length) {
        const n = file.readSync(out.subarray(done));
        if (n === null || n === 0) break;
        done += n;
      }
      return out;
    },
  };
}

/**
 * Checks that the file is a complete little-endian ELF64 shared object: the program headers,
 * every loadable segment and the section header table lie inside the file. Returns its
 * dynamic info, or the problem in words (phrased to follow the file name).
 */
export function inspectElf(source: ElfSource): ElfCheck {
  const size = source.size;
  if (size < 64) return { ok: false, problem: `is ${size} bytes, too short for an ELF header` };
  const header = source.read(0, 64);
  if (header[0] !== 0x7f || header[1] !== 0x45 || header[2] !== 0x4c || header[3] !== 0x46) {
    return { ok: false, problem: "is not an ELF file (bad magic)" };
  }
  if (header[4] !== 2) return { ok: false, problem: "is not a 64-bit ELF file" };
  if (header[5] !== 1) return { ok: false, problem: "is not a little-endian ELF file" };
  const at = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let view = at(header);
  const u16 = (o: number) => view.getUint16(o, true);
  const u32 = (o: number) => view.getUint32(o, true);
  const u64 = (o: number) => Number(view.getBigUint64(o, true));
  const type = u16(16);
  if (type !== 3 && type !== 2) {
    return { ok: false, problem: `is an ELF file of type ${type}, not a shared object` };
  }
  const phoff = u64(32);
  const shoff = u64(40);
  const phentsize = u16(54);
  const phnum = u16(56);
  const shentsize = u16(58);
  const shnum = u16(60);
  const truncated = (what: string, end: number) => ({
    ok: false as const,
    problem: `is truncated: ${what} ends at byte ${end} but the file has ${size} bytes`,
  });
  if (phoff + phnum * phentsize > size) {
    return truncated("the program header table", phoff + phnum * phentsize);
  }
  if (shoff > 0 && shoff + shnum * shentsize > size) {
    return truncated("the section header table", shoff + shnum * shentsize);
  }
  view = at(source.read(phoff, phnum * phentsize));
  const segments: Segment[] = [];
  for (let i = 0; i < phnum; i++) {
    const base = i * phentsize;
    const segment = {
      type: u32(base),
      offset: u64(base + 8),
      vaddr: u64(base + 16),
      fileSize: u64(base + 32),
    };
    if (
      (segment.type === PT_LOAD || segment.type === PT_DYNAMIC) &&
      segment.offset + segment.fileSize > size
    ) {
      return truncated(`segment ${i}`, segment.offset + segment.fileSize);
    }
    segments.push(segment);
  }
  const dynamic = segments.find((s) => s.type === PT_DYNAMIC);
  if (!dynamic) return { ok: false, problem: "has no dynamic section (not a shared library)" };
  // Dynamic entries hold virtual addresses; map them to file offsets through PT_LOAD.
  const fileOffset = (vaddr: number): number | undefined => {
    for (const s of segments) {
      if (s.type === PT_LOAD && vaddr >= s.vaddr && vaddr < s.vaddr + s.fileSize) {
        return s.offset + (vaddr - s.vaddr);
      }
    }
    return undefined;
  };
  view = at(source.read(dynamic.offset, dynamic.fileSize));
  const entries: [number, number][] = [];
  for (let o = 0; o + 16 <= dynamic.fileSize; o += 16) {
    const tag = u64(o);
    if (tag === DT_NULL) break;
    entries.push([tag, u64(o + 8)]);
  }
  const strtabAddress = entries.find(([tag]) => tag === DT_STRTAB)?.[1];
  const strtabSize = entries.find(([tag]) => tag === DT_STRSZ)?.[1] ?? 0;
  const strtab = strtabAddress === undefined ? undefined : fileOffset(strtabAddress);
  if (strtab === undefined || strtab + strtabSize > size) {
    return { ok: false, problem: "has no readable dynamic string table" };
  }
  const strings = source.read(strtab, strtabSize);
  const text = (tag: number) =>
    entries.filter(([t]) => t === tag).map(([, v]) => cString(strings, v));
  const needed = text(DT_NEEDED);
  if (needed.some((n) => n === undefined)) {
    return { ok: false, problem: "has a DT_NEEDED entry outside its string table" };
  }
  const paths = [...text(DT_RPATH), ...text(DT_RUNPATH)].filter((p) => p !== undefined);
  return {
    ok: true,
    info: {
      soname: text(DT_SONAME)[0],
      needed: needed as string[],
      runpath: paths.length > 0 ? paths.join(":") : undefined,
    },
  };
}
