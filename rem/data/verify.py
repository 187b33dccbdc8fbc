"""Verifying and installing one file: payload checks, gzip and archive unpacking, and the `.verified` stamps.

Files and archive members are written to a temporary name, verified, then moved into place, so a half-written file is
never trusted; members with `..` or absolute paths are refused. The stamp's md5 spares a later run the rehash."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from rem.data.registry import DatasetSpec, RemoteFile
from rem.io import atomic_write, atomic_write_text

CHUNK = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


class DataSourceError(RuntimeError):
    """No source could provide a verified copy of a file (the message lists every place tried)."""


class ChecksumError(DataSourceError):
    """A file's payload does not match the manifest."""


class FormatError(ChecksumError):
    """A file's content is not what its format requires (truncated/corrupt archive, magic, shape, unsafe member)."""


def md5_of(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _open_payload(path: Path):
    with open(path, "rb") as fh:
        magic = fh.read(2)
    return gzip.open(path, "rb") if magic == GZIP_MAGIC else open(path, "rb")


def check_payload(label: str, expected: RemoteFile, md5: str, size: int, head: bytes) -> None:
    """One-line ChecksumError/FormatError unless md5 (when known), size (when fixed) and header match."""
    if expected.md5 and md5 != expected.md5:
        raise ChecksumError(f"{label}: checksum mismatch for {expected.name}: expected md5 {expected.md5}, got {md5}")
    if expected.size and size != expected.size:
        raise FormatError(f"{label}: size mismatch for {expected.name}: expected {expected.size} bytes, got {size}")
    if expected.header and not head.startswith(expected.header):
        raise FormatError(f"{label}: wrong header for {expected.name}: expected bytes {expected.header[:24].hex()}, "
                          f"got {head[:len(expected.header)].hex() or 'nothing'}")


def copy_with_digest(src, dst) -> tuple[str, int, bytes]:
    """Stream src to dst; returns (md5 of the payload, its size, its first 64 bytes for header checks)."""
    digest, size, head = hashlib.md5(), 0, b""
    for chunk in iter(lambda: src.read(CHUNK), b""):
        digest.update(chunk)
        if len(head) < 64:
            head += chunk[:64]
        size += len(chunk)
        dst.write(chunk)
    return digest.hexdigest(), size, head


def install_verified(source: Path, target: Path, expected: RemoteFile) -> str:
    """Decompress (if gzipped) `source` to `target`, atomically, iff its payload is the expected one; its md5."""
    observed: dict[str, str] = {}

    def write(tmp: Path) -> None:
        try:
            with _open_payload(source) as src, open(tmp, "wb") as dst:
                digest, size, head = copy_with_digest(src, dst)
        except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as err:
            raise FormatError(f"{source}: unreadable or truncated ({err})") from None
        check_payload(str(source), expected, digest, size, head)
        observed["md5"] = digest

    atomic_write(target, write)
    return observed["md5"]


def _check_member_name(archive: Path, name: str) -> None:
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if not name or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":") or ".." in parts:
        raise FormatError(f"{archive}: refusing archive member {name!r} (absolute path or '..'); "
                          f"expected relative member names")


def _archive_entries(archive: Path, kind: str):
    """Yields (member name, is_dir, open-callable) for a tar or zip file, refusing unsafe names and links."""
    if kind == "zip":
        zf = zipfile.ZipFile(archive)
        with zf:
            for info in zf.infolist():
                _check_member_name(archive, info.filename)
                yield info.filename, info.is_dir(), (lambda i=info: zf.open(i))
    else:
        with tarfile.open(archive, "r:*") as tf:
            for info in tf:
                _check_member_name(archive, info.name)
                if not (info.isfile() or info.isdir()):
                    raise FormatError(f"{archive}: refusing archive member {info.name!r} (link or special file); "
                                      f"expected regular files and folders")
                yield info.name, info.isdir(), (lambda i=info: tf.extractfile(i))


def extract_verified(archive: Path, dest: Path, expected: RemoteFile) -> list[str]:
    """Extract and verify `expected.members` (all when none are listed) into `dest`; returns the top-level names."""
    wanted = {m.name: m for m in expected.members}
    tmp = dest / f".extract-{expected.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    found: set[str] = set()
    try:
        try:
            for name, is_dir, opener in _archive_entries(archive, expected.kind):
                norm = name.rstrip("/")
                if is_dir or (wanted and norm not in wanted):
                    continue
                out = tmp / norm
                out.parent.mkdir(parents=True, exist_ok=True)
                with opener() as src, open(out, "wb") as dst:
                    digest, size, head = copy_with_digest(src, dst)
                if norm in wanted:
                    check_payload(f"{archive}:{norm}", wanted[norm], digest, size, head)
                found.add(norm)
        except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, zlib.error, ValueError) as err:
            raise FormatError(f"{archive}: truncated or corrupt {expected.kind} archive ({err})") from None
        missing = sorted(set(wanted) - found)
        if missing:
            raise FormatError(f"{archive}: archive lacks member {missing[0]!r}; expected members "
                              f"{', '.join(sorted(wanted))}")
        if not found:
            raise FormatError(f"{archive}: empty {expected.kind} archive; expected at least one file")
        tops = sorted({PurePosixPath(n).parts[0] for n in found})
        for top in tops:
            final = dest / top
            if final.is_dir():
                shutil.rmtree(final)
            elif final.exists():
                final.unlink()
            os.replace(tmp / top, final)
        return tops
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _stamp(dest: Path, remote: RemoteFile) -> Path:
    return dest / f".{remote.name}.verified"


def is_present(dest: Path, remote: RemoteFile) -> bool:
    stamp = _stamp(dest, remote)
    if not stamp.exists():
        return False
    lines = stamp.read_text().splitlines()
    if not lines:
        return False
    md5, _, size = lines[0].partition(" ")
    if remote.md5 and md5 != remote.md5:
        return False
    if remote.kind:  # archives: their extracted top-level entries must still be there
        return all((dest / top).exists() for top in lines[1:]) and len(lines) > 1
    target = dest / remote.name
    return target.exists() and str(target.stat().st_size) == size


def stamp_text(dest: Path, remote: RemoteFile) -> str:
    """The recorded identity (md5, size) of a fetched file: what the prepared cache is keyed by."""
    stamp = _stamp(dest, remote)
    return stamp.read_text().splitlines()[0] if stamp.exists() else ""


def recorded_checksums(spec: DatasetSpec, dest: Path) -> dict[str, str]:
    """{file: md5 of its verified payload} for the fetched files of `spec` in `dest` (recorded with runs)."""
    return {remote.name: stamp_text(dest, remote).partition(" ")[0] for remote in spec.files
            if stamp_text(dest, remote)}


def install(source: Path, dest: Path, remote: RemoteFile) -> None:
    target = dest / remote.name
    md5 = install_verified(source, target, remote)
    size = target.stat().st_size
    lines = [f"{md5} {size}"]
    if remote.kind:
        try:
            lines += extract_verified(target, dest, remote)
        finally:
            target.unlink(missing_ok=True)  # the extracted members are what is kept
    atomic_write_text(_stamp(dest, remote), "\n".join(lines))
