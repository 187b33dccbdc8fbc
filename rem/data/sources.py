"""Getting verified dataset files: a mirror folder, the system dataset folder, then the canonical URLs.

Every file lands in `<dest>/<name>` uncompressed, only after its payload md5 matched the manifest: it is
written to a temporary name, checked, then renamed, so nothing half-written is ever where the next run
would trust it. Downloads resume from a `.part` file when the server honours Range requests.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterable

from rem.data.registry import DatasetSpec, RemoteFile

CHUNK = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


class DataSourceError(RuntimeError):
    """No source could provide a verified copy of a file (the message lists every place tried)."""


class ChecksumError(DataSourceError):
    """A file's payload does not match the manifest."""


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


def install_verified(source: Path, target: Path, expected: RemoteFile) -> None:
    """Decompress (if gzipped) `source` to `target`, atomically, iff its payload md5 is the expected one."""
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    digest = hashlib.md5()
    try:
        with _open_payload(source) as src, open(tmp, "wb") as dst:
            for chunk in iter(lambda: src.read(CHUNK), b""):
                digest.update(chunk)
                dst.write(chunk)
    except (OSError, EOFError, gzip.BadGzipFile) as err:
        tmp.unlink(missing_ok=True)
        raise ChecksumError(f"{source}: unreadable or truncated ({err})") from None
    actual = digest.hexdigest()
    if actual != expected.md5:
        tmp.unlink(missing_ok=True)
        raise ChecksumError(f"{source}: checksum mismatch for {expected.name}: expected md5 {expected.md5}, got {actual}")
    os.replace(tmp, target)


def download(url: str, part: Path, timeout: float = 30.0) -> None:
    """Fetch `url` into `part`, continuing a previous partial download when the server allows it."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            resumed = have and response.status == 206
            with open(part, "ab" if resumed else "wb") as out:
                shutil.copyfileobj(response, out, CHUNK)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # already complete
            return
        raise DataSourceError(f"{url}: HTTP {err.code}") from None
    except (urllib.error.URLError, OSError, TimeoutError) as err:
        reason = getattr(err, "reason", err)
        raise DataSourceError(f"{url}: {reason}") from None


def local_candidates(spec: DatasetSpec, remote: RemoteFile, folders: Iterable[Path]) -> list[Path]:
    """Paths a local copy could have: the published (.gz) name first, then the plain name."""
    names = [n for n in (remote.archive, remote.name) if n]
    return [folder / n for folder in folders for n in names]


def fetch_file(spec: DatasetSpec, remote: RemoteFile, dest: Path, *, mirrors: list[Path], system_root: Path | None,
               download_ok: bool) -> str:
    """Place one verified file in `dest`; returns where it came from."""
    target = dest / remote.name
    stamp = target.with_name(f".{remote.name}.verified")
    if target.exists() and stamp.exists() and stamp.read_text() == f"{remote.md5} {target.stat().st_size}":
        return "already present"
    tried: list[str] = []
    folders = [m / spec.name for m in mirrors]
    if system_root is not None and spec.system_dir:
        folders.append(system_root / spec.system_dir)
    for path in local_candidates(spec, remote, folders):
        if not path.is_file():
            tried.append(f"{path} (missing)")
            continue
        try:
            install_verified(path, target, remote)
        except ChecksumError as err:
            tried.append(str(err))
            continue
        stamp.write_text(f"{remote.md5} {target.stat().st_size}")
        return str(path)
    if download_ok:
        for base in spec.urls:
            url = base + (remote.archive or remote.name)
            part = dest / f".{remote.archive or remote.name}.part"
            try:
                download(url, part)
                install_verified(part, target, remote)
            except DataSourceError as err:
                tried.append(str(err))
                if isinstance(err, ChecksumError):
                    part.unlink(missing_ok=True)  # a wrong complete file must not be resumed
                continue
            part.unlink(missing_ok=True)
            stamp.write_text(f"{remote.md5} {target.stat().st_size}")
            return url
    else:
        tried.append("downloads disabled (data.download: false)")
    raise DataSourceError(f"{spec.name}/{remote.name}: no verified source; tried: " + "; ".join(tried))


def fetch(spec: DatasetSpec, dest: Path, *, mirrors: list[Path] = (), system_root: Path | None = None,
          download_ok: bool = True) -> dict[str, str]:
    """Fetch every file of `spec` into `dest`; returns {file name: where it came from}."""
    dest.mkdir(parents=True, exist_ok=True)
    return {
        remote.name: fetch_file(spec, remote, dest, mirrors=list(mirrors), system_root=system_root, download_ok=download_ok)
        for remote in spec.files
    }


def mirror_folders(configured: str, repo_root: Path) -> list[Path]:
    """The mirror folders to try: env REM_DATA_MIRROR (os.pathsep-separated) first, then the params value."""
    folders = [Path(p) for p in os.environ.get("REM_DATA_MIRROR", "").split(os.pathsep) if p]
    if configured:
        path = Path(configured)
        folders.append(path if path.is_absolute() else repo_root / path)
    return folders
