"""Download path against a local HTTP server (127.0.0.1, free port, serving bytes the test writes; no test here
needs the network): verify, resume via Range, 404, wrong checksum, a body cut short, a server that never answers.
Every failure is one line; every request loop is bounded (the client's attempts, the server's stall)."""

from __future__ import annotations

import gzip
import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rem.data.registry import DatasetSpec, RemoteFile
from rem.data.sources import DataSourceError, download, fetch
from tests.conftest import SYNTHETIC

STALL_S = 10.0  # the longest a stalled response holds its server thread (released at teardown anyway)


class _Server:
    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.drop_after: dict[str, int] = {}  # path -> bytes sent before closing, the first time only
        self.cut_every: dict[str, int] = {}  # path -> bytes sent before closing, every time (from the asked offset)
        self.stalled: set[str] = set()  # paths answered only after STALL_S (or teardown)
        self.release = threading.Event()
        self.log: list[tuple[str, str | None]] = []


@pytest.fixture
def server():
    state = _Server()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            state.log.append((self.path, self.headers.get("Range")))
            if self.path in state.stalled:
                state.release.wait(STALL_S)
            body = state.files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            start = 0
            rng = self.headers.get("Range")
            if rng:
                start = int(rng.split("=")[1].split("-")[0])
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(len(body) - start))
            self.end_headers()
            cut = state.drop_after.pop(self.path, None) or state.cut_every.get(self.path)
            self.wfile.write(body[start:start + cut] if cut is not None else body[start:])
            if cut is not None:
                self.wfile.flush()
                self.close_connection = True

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    yield state
    state.release.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def payload(synthetic_raw) -> bytes:
    """An IDX file the suite generated: synthetic-fashion's training labels (10008 bytes)."""
    return (synthetic_raw / SYNTHETIC / "train-labels-idx1-ubyte").read_bytes()


def _spec(base: str, remote: RemoteFile, extra_urls=()) -> DatasetSpec:
    return DatasetSpec(name="toy", files=(remote,), urls=(*extra_urls, base), num_classes=10, in_shape=(1, 28, 28),
                       mean=(0.0,), std=(1.0,))


def _remote(payload: bytes, md5: str | None = None) -> RemoteFile:
    return RemoteFile("train-labels-idx1-ubyte", md5 or hashlib.md5(payload).hexdigest(), len(payload),
                      archive="train-labels-idx1-ubyte.gz")


def test_download_verifies_and_is_idempotent(server, payload, tmp_path):
    server.files["/train-labels-idx1-ubyte.gz"] = gzip.compress(payload)
    spec = _spec(server.base, _remote(payload))
    where = fetch(spec, tmp_path, mirrors=[tmp_path / "nomirror"], system_root=None)
    assert where["train-labels-idx1-ubyte"] == server.base + "train-labels-idx1-ubyte.gz"
    assert (tmp_path / "train-labels-idx1-ubyte").read_bytes() == payload
    assert fetch(spec, tmp_path)["train-labels-idx1-ubyte"] == "already present" and len(server.log) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [".train-labels-idx1-ubyte.verified",
                                                          "train-labels-idx1-ubyte"]


def test_mirror_is_tried_before_urls(server, payload, tmp_path):
    (tmp_path / "m" / "toy").mkdir(parents=True)
    (tmp_path / "m" / "toy" / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(payload))
    where = fetch(_spec(server.base, _remote(payload)), tmp_path / "raw", mirrors=[tmp_path / "m"])
    assert where["train-labels-idx1-ubyte"].startswith(str(tmp_path / "m")) and server.log == []


def test_wrong_checksum_leaves_nothing(server, payload, tmp_path):
    server.files["/train-labels-idx1-ubyte.gz"] = gzip.compress(payload[:-1] + b"\x07")
    with pytest.raises(DataSourceError) as err:
        fetch(_spec(server.base, _remote(payload)), tmp_path)
    msg = str(err.value)
    assert "\n" not in msg and "checksum mismatch" in msg and hashlib.md5(payload).hexdigest() in msg
    assert list(tmp_path.iterdir()) == []


def test_dropped_connection_resumes_with_range(server, payload, tmp_path):
    body = gzip.compress(payload, compresslevel=0)  # stored: a mid-file cut is really mid-payload
    server.files["/train-labels-idx1-ubyte.gz"] = body
    server.drop_after["/train-labels-idx1-ubyte.gz"] = 4000
    fetch(_spec(server.base, _remote(payload)), tmp_path)
    assert (tmp_path / "train-labels-idx1-ubyte").read_bytes() == payload
    assert server.log == [("/train-labels-idx1-ubyte.gz", None), ("/train-labels-idx1-ubyte.gz", "bytes=4000-")]
    assert not list(tmp_path.glob(".*.part"))


def test_404_then_next_url(server, payload, tmp_path):
    server.files["/b/train-labels-idx1-ubyte.gz"] = gzip.compress(payload)
    spec = _spec(server.base + "b/", _remote(payload), extra_urls=(server.base + "a/",))
    assert fetch(spec, tmp_path)["train-labels-idx1-ubyte"] == server.base + "b/train-labels-idx1-ubyte.gz"
    with pytest.raises(DataSourceError, match=r"toy/train-labels-idx1-ubyte: no verified source; tried: .*HTTP 404"):
        fetch(_spec(server.base + "c/", _remote(payload)), tmp_path / "other", mirrors=[tmp_path / "none"])
    assert list((tmp_path / "other").iterdir()) == []


def test_unknown_md5_checks_size_and_header(server, tmp_path):
    """smallNORB-style entry: no md5 known, so size and the header (magic, dims) are checked."""
    from rem.data.smallnorb import NORB_MAGIC_I32, norb_header
    header = norb_header(NORB_MAGIC_I32, (5,))
    good = header + bytes(20)
    remote = RemoteFile("x-cat.mat", "", len(good), archive="x-cat.mat.gz", header=header)
    server.files["/x-cat.mat.gz"] = gzip.compress(norb_header(0x1E3D4C55, (5,)) + bytes(20))
    with pytest.raises(DataSourceError, match=r"wrong header for x-cat.mat: expected bytes 544c3d1e"):
        fetch(_spec(server.base, remote), tmp_path)
    server.files["/x-cat.mat.gz"] = gzip.compress(good + b"\x00")
    with pytest.raises(DataSourceError, match=f"size mismatch for x-cat.mat: expected {len(good)} bytes"):
        fetch(_spec(server.base, remote), tmp_path)
    server.files["/x-cat.mat.gz"] = gzip.compress(good)
    fetch(_spec(server.base, remote), tmp_path)
    stamp = (tmp_path / ".x-cat.mat.verified").read_text()
    assert stamp.startswith(hashlib.md5(good).hexdigest())  # the observed md5 is recorded


def test_zip_archive_download_and_traversal(server, tmp_path):
    import io
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("test.mat", b"MATLAB 5.0 MAT-file" + bytes(100))
    member = RemoteFile("test.mat", "", 0, header=b"MATLAB 5.0")
    remote = RemoteFile("test.mat.zip", "", 0, header=b"PK\x03\x04", kind="zip", members=(member,),
                        urls=(server.base + "test.mat.zip",))
    server.files["/test.mat.zip"] = buf.getvalue()
    fetch(_spec(server.base, remote), tmp_path)
    assert (tmp_path / "test.mat").read_bytes().startswith(b"MATLAB 5.0") and not (tmp_path / "test.mat.zip").exists()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../../test.mat", b"MATLAB 5.0")
    server.files["/test.mat.zip"] = buf.getvalue()
    with pytest.raises(DataSourceError, match=r"refusing archive member '../../test.mat'"):
        fetch(_spec(server.base, remote), tmp_path / "evil")
    assert list((tmp_path / "evil").iterdir()) == []


def test_a_body_cut_short_every_time_fails_after_bounded_attempts(server, payload, tmp_path):
    body = gzip.compress(payload, compresslevel=0)
    server.files["/train-labels-idx1-ubyte.gz"] = body
    server.cut_every["/train-labels-idx1-ubyte.gz"] = 1000  # each response ends 1000 bytes after where it began
    with pytest.raises(DataSourceError) as err:
        fetch(_spec(server.base, _remote(payload)), tmp_path)
    msg = str(err.value)
    assert "\n" not in msg and "toy/train-labels-idx1-ubyte: no verified source" in msg
    assert f"{server.base}train-labels-idx1-ubyte.gz: connection closed" in msg and "(after 3 attempts)" in msg
    assert [r for _, r in server.log] == [None, "bytes=1000-", "bytes=2000-"]  # resumed, and no more than 3 tries
    assert not (tmp_path / "train-labels-idx1-ubyte").exists()
    assert (tmp_path / ".train-labels-idx1-ubyte.gz.part").stat().st_size == 3000  # kept: a later run resumes it


def test_a_server_that_never_answers_times_out(server, payload, tmp_path):
    server.files["/train-labels-idx1-ubyte.gz"] = gzip.compress(payload)
    server.stalled.add("/train-labels-idx1-ubyte.gz")
    with pytest.raises(DataSourceError) as err:
        download(server.base + "train-labels-idx1-ubyte.gz", tmp_path / "x.part", timeout=0.2, attempts=2)
    assert str(err.value) == f"{server.base}train-labels-idx1-ubyte.gz: no response within 0.2 s (after 2 attempts)"
    assert len(server.log) == 2 and not (tmp_path / "x.part").exists()
