"""The oldest glibc a set of ELF files can run on: the highest GLIBC_ symbol version any of
them needs, read from each file's version references (.gnu.version_r, what `readelf -V`
lists as "Version needs"). Standard library only, so it runs with any python3.

    python3 packaging/glibc_floor.py [--max X.Y] PATH...

Lists every ELF file under the PATHs (files or directories) that needs any GLIBC_ version,
the highest first, with the overall floor on the last line. With --max, exits 1 when the
floor is above X.Y (and names the files that are). Files that are not ELF are skipped.
"""

import argparse
import os
import struct
import sys

SHT_GNU_VERNEED = 0x6FFFFFFE


class NotElf(Exception):
    pass


def version_key(text):
    return tuple(int(part) for part in text.split("."))


def _needed_versions(data):
    """Every version name the ELF image `data` needs, with the library it needs it from."""
    if data[:4] != b"\x7fELF":
        raise NotElf()
    bits, order = data[4], data[5]
    if bits not in (1, 2) or order not in (1, 2):
        raise NotElf()
    end = "<" if order == 1 else ">"
    if bits == 2:
        shoff, = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
        section = struct.Struct(end + "IIQQQQIIQQ")
    else:
        shoff, = struct.unpack_from(end + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
        section = struct.Struct(end + "IIIIIIIIII")
    sections = [section.unpack_from(data, shoff + index * shentsize) for index in range(shnum)]
    verneed = struct.Struct(end + "HHIII")
    vernaux = struct.Struct(end + "IHHII")
    found = []
    for _, kind, _, _, offset, _, link, count, _, _ in sections:
        if kind != SHT_GNU_VERNEED:
            continue
        strings = sections[link][4]

        def name_at(index):
            start = strings + index
            return data[start:data.index(b"\0", start)].decode("ascii", "replace")

        entry = offset
        for _ in range(count):
            _, aux_count, file_name, aux, following = verneed.unpack_from(data, entry)
            library = name_at(file_name)
            item = entry + aux
            for _ in range(aux_count):
                _, _, _, version_name, aux_next = vernaux.unpack_from(data, item)
                found.append((library, name_at(version_name)))
                item += aux_next
            if not following:
                break
            entry += following
    return found


def glibc_needed(path):
    """The highest GLIBC_ version `path` needs ("2.17"), None when it needs none, or
    raises NotElf."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        needed = _needed_versions(data)
    except (struct.error, IndexError, ValueError) as error:
        raise SystemExit(f"glibc_floor: {path}: a damaged ELF file ({error})")
    versions = [name[len("GLIBC_"):] for _, name in needed
                if name.startswith("GLIBC_") and name[len("GLIBC_"):].replace(".", "").isdigit()]
    return max(versions, key=version_key) if versions else None


def files_under(paths):
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            for directory, subdirs, names in os.walk(path):
                subdirs.sort()
                for name in sorted(names):
                    full = os.path.join(directory, name)
                    if os.path.isfile(full) and not os.path.islink(full):
                        yield full
        elif os.path.isfile(path):
            yield path
        else:
            raise SystemExit(f"glibc_floor: no file or directory {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description="the highest GLIBC_ version ELF files need")
    parser.add_argument("--max", help="fail when a file needs a glibc newer than this (e.g. 2.31)")
    parser.add_argument("paths", nargs="+")
    options = parser.parse_args(argv)
    needs = []
    for path in files_under(options.paths):
        try:
            version = glibc_needed(path)
        except NotElf:
            continue
        if version:
            needs.append((version_key(version), version, path))
    needs.sort(key=lambda need: (tuple(-part for part in need[0]), need[2]))
    for _, version, path in needs:
        print(f"GLIBC_{version:<8} {path}")
    floor = needs[0][1] if needs else None
    print(f"glibc floor: {floor or 'none (no file needs a GLIBC_ version)'}")
    if options.max and floor and version_key(floor) > version_key(options.max):
        above = [path for key, _, path in needs if key > version_key(options.max)]
        print(f"glibc floor {floor} is above {options.max}: {len(above)} file(s) need more, "
              f"the first {above[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
