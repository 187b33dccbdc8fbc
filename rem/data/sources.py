"""Where verified dataset files come from, in order: mirror folders, the system dataset folder, the canonical URLs
(or a generated dataset's generator). Downloads resume from a `.part` file; a failure lists every place tried."""

from __future__ import annotations

import http.client
import os
import time
import urllib.error
import urllib.request
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

from rem.data.registry import DatasetSpec, RemoteFile, get_dataset
from rem.data.verify import (
    CHUNK,
    ChecksumError,
    DataSourceError,
    FormatError,
    install,
    is_present,
    recorded_checksums,
    stamp_text,
)
from rem.io import home_checkout, resolve_path

if TYPE_CHECKING:
    from rem.config import Config

__all__ = ["ChecksumError", "DataSourceError", "FormatError", "download", "fetch", "fetch_dataset", "fetch_file",
           "local_candidates", "mirror_folders", "recorded_checksums", "stamp_text"]


def download(url: str, part: Path, timeout: float = 30.0, attempts: int = 3) -> None:
    """Fetch `url` into `part`, continuing a partial download (Range) after a dropped connection."""
    last, tried = "", 0
    for attempt in range(attempts):
        tried += 1
        have = part.stat().st_size if part.exists() else 0
        request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                resumed = have and response.status == 206
                expected = response.headers.get("Content-Length")
                got = 0
                with open(part, "ab" if resumed else "wb") as out:
                    while True:
                        chunk = response.read(CHUNK)
                        if not chunk:
                            break
                        out.write(chunk)
                        got += len(chunk)
                if expected is not None and got < int(expected):
                    raise http.client.IncompleteRead(b"", int(expected) - got)
            return
        except urllib.error.HTTPError as err:
            if err.code == 416 and have:  # already complete
                return
            raise DataSourceError(f"{url}: HTTP {err.code}") from None
        except (urllib.error.URLError, OSError, TimeoutError, http.client.HTTPException) as err:
            last = _failure(err, timeout)
            got_some = part.exists() and part.stat().st_size > have
            if not got_some and isinstance(err, urllib.error.URLError):
                break  # nothing reachable: do not insist
            time.sleep(0.05 * (attempt + 1))
    raise DataSourceError(f"{url}: {last} (after {tried} attempt{'s' if tried > 1 else ''})")


def _failure(err: BaseException, timeout: float) -> str:
    """Why a request failed, in a few words (urllib wraps some errors in URLError.reason, not all)."""
    reason = getattr(err, "reason", None) or err
    if isinstance(reason, TimeoutError):
        return f"no response within {timeout:g} s"
    if isinstance(reason, http.client.IncompleteRead):
        return f"connection closed {reason.expected} bytes before the end of the body"
    return str(reason) or reason.__class__.__name__


def local_candidates(spec: DatasetSpec, remote: RemoteFile, folders: Iterable[Path]) -> list[Path]:
    """Paths a local copy could have: the published (.gz) name first, then the plain name."""
    names = [n for n in dict.fromkeys((remote.archive, remote.name)) if n]
    return [folder / n for folder in folders for n in names]


def fetch_file(spec: DatasetSpec, remote: RemoteFile, dest: Path, *, mirrors: list[Path], system_root: Path | None,
               download_ok: bool) -> str:
    """Place one verified file in `dest`; returns where it came from."""
    if is_present(dest, remote):
        return "already present"
    tried: list[str] = []
    folder = remote.folder or spec.name
    folders = [m / folder for m in mirrors]
    if system_root is not None:
        folders.append(system_root / (remote.folder or spec.system_dir or spec.name))
    for path in local_candidates(spec, remote, folders):
        if not path.is_file():
            tried.append(f"{path} (missing)")
            continue
        try:
            install(path, dest, remote)
        except ChecksumError as err:
            tried.append(str(err))
            continue
        return str(path)
    if spec.generator:  # a generated dataset has no URL: its generator is the canonical source
        return _generate(spec, remote, dest, tried)
    if download_ok:
        urls = list(remote.urls) or [base + (remote.archive or remote.name) for base in spec.urls]
        for url in urls:
            part = dest / f".{url.rsplit('/', 1)[-1]}.part"
            try:
                download(url, part)
                install(part, dest, remote)
            except DataSourceError as err:
                tried.append(str(err))
                if isinstance(err, ChecksumError):
                    part.unlink(missing_ok=True)  # a wrong complete file must not be resumed
                continue
            part.unlink(missing_ok=True)
            return url
        if not urls:
            tried.append("no canonical URL (mirror or system folder only)")
    else:
        tried.append("downloads disabled (data.download: false)")
    raise _no_source(spec, remote, tried)


def _no_source(spec: DatasetSpec, remote: RemoteFile, tried: list[str]) -> DataSourceError:
    return DataSourceError(f"{spec.name}/{remote.name}: no verified source; tried: " + "; ".join(tried))


def _generate(spec: DatasetSpec, remote: RemoteFile, dest: Path, tried: list[str]) -> str:
    """Write `remote` with spec.generator, then install it verified like any other source (md5, size)."""
    dest.mkdir(parents=True, exist_ok=True)
    made = dest / f".{remote.name}.generated-{os.getpid()}"
    try:
        import_module(spec.generator).write(remote.name, made)
        install(made, dest, remote)
    except ChecksumError as err:  # the generator no longer writes the registered bytes
        tried.append(f"generated by {spec.generator}: {err}")
        raise _no_source(spec, remote, tried) from None
    finally:
        made.unlink(missing_ok=True)
    return f"generated by {spec.generator}"


def fetch(spec: DatasetSpec, dest: Path, *, mirrors: list[Path] = (), system_root: Path | None = None,
          download_ok: bool = True) -> dict[str, str]:
    """Fetch every file of `spec` into `dest`; returns {file name: where it came from}."""
    dest.mkdir(parents=True, exist_ok=True)
    return {
        remote.name: fetch_file(spec, remote, dest, mirrors=list(mirrors), system_root=system_root,
                                download_ok=download_ok)
        for remote in spec.files
    }


def mirror_folders(configured: str, repo_root: Path) -> list[Path]:
    """REM_DATA_MIRROR's folders (os.pathsep-separated), then `configured` (relative: to the user's checkout)."""
    folders = [Path(p) for p in os.environ.get("REM_DATA_MIRROR", "").split(os.pathsep) if p]
    if configured:
        path = Path(configured)
        folders.append(path if path.is_absolute() else home_checkout(repo_root) / path)
    return folders


def fetch_dataset(cfg: Config, repo_root: Path) -> Path:
    """Verified files of cfg.data.dataset in its raw folder (idempotent: a no-op once verified)."""
    spec = get_dataset(cfg.data.dataset)
    if spec.root_dir:  # imagefolder:<path>: the folder itself, nothing to fetch
        return resolve_path(spec.root_dir, repo_root)
    raw = resolve_path(cfg.data.root, repo_root) / spec.name
    fetch(spec, raw, mirrors=mirror_folders(cfg.data.mirror, repo_root),
          system_root=Path(cfg.data.system_root) if cfg.data.system_root else None, download_ok=cfg.data.download)
    return raw


def fetch_datasets(cfg: Config, names: Iterable[str], repo_root: Path) -> Iterator[tuple[str, Path]]:
    """fetch_dataset for each name in turn, yielding (name, raw folder) as each is verified."""
    for name in names:
        yield name, fetch_dataset(cfg.with_overrides({"data.dataset": name}), repo_root)
