#!/usr/bin/env python3
"""Where code loads: for each object, in how many of N starts its code's
address agrees with its file offset modulo 2 MiB (the condition for the
kernel to map 2 MiB page-cache folios of the file, and for one shared
cache entry to serve every start: lib/share.c's share_refusal).

Usage: where.py N NAME=[@]PROGRAM[:LIBRARY]...

NAME=PROGRAM is a program placed by the kernel (execve): its load bias is
AT_ENTRY (LD_SHOW_AUXV) minus e_entry.  NAME=PROGRAM:LIBRARY is a library
placed by ld.so when PROGRAM starts: its base is what LD_TRACE_LOADED_OBJECTS
prints, the address of the very mappings a real start makes (ld.so maps
every object in that mode; it only stops before running the program).
Prints one JSON line per object: {"case": "load", "object", "by",
"starts", "agree", "p_align", "example"}.
"""
import json
import os
import re
import struct
import subprocess
import sys

HUGE = 2 << 20


def elf_info(path):
    """(e_type, e_entry, [(p_vaddr, p_offset, p_memsz, p_align) of each executable PT_LOAD])."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            raise ValueError("%s: not a 64-bit ELF file" % path)
        e_type, = struct.unpack_from("<H", head, 16)
        e_entry, e_phoff = struct.unpack_from("<QQ", head, 24)
        e_phentsize, e_phnum = struct.unpack_from("<HH", head, 54)
        f.seek(e_phoff)
        table = f.read(e_phentsize * e_phnum)
    segs = []
    for i in range(e_phnum):
        p_type, p_flags, p_offset, p_vaddr, _, _, p_memsz, p_align = struct.unpack_from(
            "<IIQQQQQQ", table, i * e_phentsize)
        if p_type == 1 and p_flags & 1:
            segs.append((p_vaddr, p_offset, p_memsz, p_align))
    return e_type, e_entry, segs


def interpreter(path):
    """The PT_INTERP of @path (its ld.so)."""
    with open(path, "rb") as f:
        data = f.read(1 << 16)
    e_phoff, = struct.unpack_from("<Q", data, 32)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
    for i in range(e_phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, e_phoff + i * e_phentsize)
        if p_type == 3:
            f = open(path, "rb")
            f.seek(p_offset)
            return f.read(p_filesz).rstrip(b"\0").decode()
    raise ValueError("%s has no interpreter" % path)


def start_bias(program, library, via_ldso=False):
    """One start's load bias of @library (ld.so) or of @program (kernel, or
    ld.so when @via_ldso)."""
    env = dict(os.environ, LD_TRACE_LOADED_OBJECTS="1")
    argv = [program]
    if via_ldso:
        env["LD_DEBUG"] = "files"
        argv = [interpreter(program), program]
    elif not library:
        env["LD_SHOW_AUXV"] = "1"
    r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    out = r.stdout.decode(errors="replace")
    if via_ldso:
        m = re.search(r"file=%s \[0\];\s+generating link map\s+\d+:\s+dynamic: 0x[0-9a-f]+\s+base: (0x[0-9a-f]+)"
                      % re.escape(program), r.stderr.decode(errors="replace"))
        return int(m.group(1), 16) if m else None
    if library:
        name = os.path.basename(library)
        for line in out.splitlines():
            m = re.match(r"\s*(\S+) => (\S+) \((0x[0-9a-f]+)\)", line)
            if m and (m.group(1) == name or os.path.realpath(m.group(2)) == os.path.realpath(library)):
                return int(m.group(3), 16)
        return None
    m = re.search(r"^AT_ENTRY:\s+(0x[0-9a-f]+)", out, re.M)
    if not m:
        return None
    e_type, e_entry, _ = elf_info(program)
    return int(m.group(1), 16) - e_entry if e_type == 3 else 0


def measure(name, program, library, n):
    via_ldso = program.startswith("@")
    program = program.lstrip("@")
    path = library or program
    _, _, segs = elf_info(path)
    # The biggest executable segment: the code the library would move.
    vaddr, offset, _, p_align = max(segs, key=lambda s: s[2])
    agree = seen = 0
    example = None
    for _ in range(n):
        bias = start_bias(program, library, via_ldso)
        if bias is None:
            continue
        seen += 1
        example = bias
        agree += (bias + vaddr - offset) % HUGE == 0
    return {"case": "load", "object": name, "path": os.path.realpath(path),
            "by": "ld.so" if library or via_ldso else "kernel", "starts": seen, "agree": agree, "p_align": p_align,
            "example": hex(example) if example is not None else None}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    n = int(sys.argv[1])
    for arg in sys.argv[2:]:
        name, _, what = arg.partition("=")
        program, _, library = what.partition(":")
        try:
            line = measure(name, program, library or None, n)
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            line = {"case": "load", "object": name, "error": str(e)}
        print(json.dumps(line, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    main()
