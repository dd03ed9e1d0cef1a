"""The disk compile cache (numfn.runtime.diskcache): verified entries, atomic writes, safety checks, LRU cap, CLI."""
import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
import warnings

import pytest

import numfn.cache
from numfn.runtime import diskcache as rc
from numfn.runtime.diskcache import (ENTRY_SUFFIX, HEADER_SIZE, MAGIC, CacheDirectoryError, CacheWarning, DiskCache,
                                 cache_key, default_cache)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IS_ROOT = hasattr(os, "getuid") and os.getuid() == 0
OTHER_UID = 65534  # nobody

KEY = cache_key("test", "key")
OTHER_KEY = cache_key("test", "other key")


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A clean cache environment: no cache variables set, HOME in tmp_path."""
    for name in ("NUMFN_CACHE_DIR", "XDG_CACHE_HOME", "NUMFN_DISABLE_CACHE", "NUMFN_CACHE_MAX_BYTES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return monkeypatch


@pytest.fixture
def cache(tmp_path):
    return DiskCache(tmp_path / "cache")


@contextlib.contextmanager
def no_cache_warnings():
    """A CacheWarning inside fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        yield


def files_in(directory) -> list[str]:
    return sorted(os.listdir(directory))


# ---- keys ------------------------------------------------------------------------------------------------------------

def test_cache_key():
    key = cache_key("llvm", "source", b"\x00bytes")
    assert len(key) == 64 and all(c in "0123456789abcdef" for c in key)
    assert key == cache_key("llvm", "source", b"\x00bytes")
    assert cache_key("ab", "c") != cache_key("a", "bc")
    assert cache_key("a") != cache_key("a", "")
    assert cache_key("é") == cache_key("é".encode())
    with pytest.raises(TypeError):
        cache_key("a", 3)


@pytest.mark.parametrize("bad", ["../../etc/passwd", KEY.upper(), KEY[:-1], KEY + "0", ""])
def test_malformed_keys_rejected(cache, bad):
    with pytest.raises(ValueError):
        cache.get(bad)
    with pytest.raises(ValueError):
        cache.put(bad, b"x")


# ---- round trip, miss ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("payload", [b"", b"x", bytes(range(256)) * 1000])
def test_round_trip(cache, payload):
    with no_cache_warnings():
        assert cache.put(KEY, payload) is True
        assert cache.get(KEY) == payload
        assert cache.get(KEY) == payload
    path = cache.path_for(KEY)
    assert os.path.dirname(path) == cache.directory and path.endswith(KEY + ENTRY_SUFFIX)
    with open(path, "rb") as f:
        data = f.read()
    assert data.startswith(MAGIC) and len(data) == HEADER_SIZE + len(payload)
    assert data[52:HEADER_SIZE] == hashlib.sha256(payload).digest()
    assert files_in(cache.directory) == [KEY + ENTRY_SUFFIX]  # no temporary files left behind


def test_put_accepts_bytearray_and_memoryview_and_overwrites(cache):
    assert cache.put(KEY, bytearray(b"one"))
    assert cache.put(KEY, memoryview(b"two"))
    assert cache.get(KEY) == b"two"
    with pytest.raises(TypeError):
        cache.put(KEY, "text")


def test_miss(cache, tmp_path):
    with no_cache_warnings():
        assert cache.get(KEY) is None
        assert DiskCache(tmp_path / "other").get(KEY) is None


# ---- corrupt, truncated, foreign entries -----------------------------------------------------------------------------

def flip_payload_byte(data, other): return data[:-5] + bytes([data[-5] ^ 0x01]) + data[-4:]
def flip_checksum_byte(data, other): return data[:60] + bytes([data[60] ^ 0x80]) + data[61:]
def truncate_payload(data, other): return data[:-1]
def truncate_header(data, other): return data[:HEADER_SIZE - 10]
def empty_file(data, other): return b""
def padded(data, other): return data + b"\x00"
def foreign_bytes(data, other): return os.urandom(len(data))
def bad_magic(data, other): return b"NOTNUMFN" + data[8:]
def future_version(data, other): return data[:8] + (99).to_bytes(4, "little") + data[12:]
def other_keys_entry(data, other): return other


@pytest.mark.parametrize("mutate, reason", [
    (flip_payload_byte, "checksum mismatch"), (flip_checksum_byte, "checksum mismatch"),
    (truncate_payload, "truncated or padded"), (truncate_header, "shorter than the 84-byte header"),
    (empty_file, "truncated"), (padded, "truncated or padded"), (foreign_bytes, "bad magic"),
    (bad_magic, "bad magic"), (future_version, "format version 99"), (other_keys_entry, "a different key")])
def test_bad_entry_is_discarded_with_warning(cache, mutate, reason):
    payload = bytes(range(256)) * 8
    cache.put(KEY, payload)
    cache.put(OTHER_KEY, payload)  # the same payload under another key: only the key field tells them apart
    path = cache.path_for(KEY)
    with open(path, "rb") as f:
        data = f.read()
    with open(cache.path_for(OTHER_KEY), "rb") as f:
        other = f.read()
    with open(path, "wb") as f:
        f.write(mutate(data, other))
    with pytest.warns(CacheWarning, match=f"discarding numfn cache entry {re.escape(path)} \\(.*{reason}") as caught:
        assert cache.get(KEY) is None
    assert caught[0].filename == __file__  # the warning points at the caller, not into the cache module
    assert not os.path.exists(path)
    assert cache.get(OTHER_KEY) == payload
    # a later put repairs it
    assert cache.put(KEY, payload) and cache.get(KEY) == payload


# ---- safety ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702, 0o720])
def test_unsafe_directory_refused(env, tmp_path, mode):
    directory = tmp_path / "shared"
    directory.mkdir()
    DiskCache(directory).put(KEY, b"payload")
    os.chmod(directory, mode)
    with pytest.raises(CacheDirectoryError, match="writable by group or others"):
        DiskCache(directory)
    env.setenv("NUMFN_CACHE_DIR", str(directory))
    with pytest.warns(CacheWarning, match=f"refusing the numfn cache directory {directory}"):
        assert default_cache() is None
    info = numfn.cache.info()
    assert info["enabled"] is False and "writable by group or others" in info["problem"]


def test_directory_that_becomes_unsafe_is_refused(cache):
    cache.put(KEY, b"payload")
    os.chmod(cache.directory, 0o777)
    with pytest.warns(CacheWarning, match="writable by group or others"):
        assert cache.get(KEY) is None
    with pytest.warns(CacheWarning, match="writable by group or others"):
        assert cache.put(OTHER_KEY, b"payload") is False
    assert not os.path.exists(cache.path_for(OTHER_KEY))
    os.chmod(cache.directory, 0o700)
    assert cache.get(KEY) == b"payload"


@pytest.mark.skipif(not IS_ROOT, reason="needs root to chown")
def test_directory_owned_by_another_user_refused_even_for_root(cache):
    cache.put(KEY, b"payload")
    os.chown(cache.directory, OTHER_UID, -1)
    with pytest.raises(CacheDirectoryError, match=f"owned by uid {OTHER_UID}"):
        DiskCache(cache.directory)
    with pytest.warns(CacheWarning, match=f"owned by uid {OTHER_UID}"):
        assert cache.get(KEY) is None


@pytest.mark.skipif(not IS_ROOT, reason="needs root to chown")
def test_entry_owned_by_another_user_ignored(cache):
    cache.put(KEY, b"payload")
    os.chown(cache.path_for(KEY), OTHER_UID, -1)
    with pytest.warns(CacheWarning, match=f"ignoring numfn cache entry .*owned by uid {OTHER_UID}"):
        assert cache.get(KEY) is None
    assert cache.put(KEY, b"payload") and cache.get(KEY) == b"payload"  # a put replaces it with our own


def test_writable_entry_ignored(cache):
    cache.put(KEY, b"payload")
    os.chmod(cache.path_for(KEY), 0o666)
    with pytest.warns(CacheWarning, match="ignoring numfn cache entry .*writable by group or others"):
        assert cache.get(KEY) is None
    assert os.path.exists(cache.path_for(KEY))  # ignored, not deleted


def test_symlinked_entry_not_followed(cache, tmp_path):
    elsewhere = DiskCache(tmp_path / "elsewhere")
    elsewhere.put(KEY, b"payload")
    os.symlink(elsewhere.path_for(KEY), cache.path_for(KEY))
    with pytest.warns(CacheWarning, match="ignoring numfn cache entry"):
        assert cache.get(KEY) is None


def test_location_not_a_directory(env, tmp_path):
    (tmp_path / "file").write_bytes(b"")
    env.setenv("NUMFN_CACHE_DIR", str(tmp_path / "file"))
    with pytest.warns(CacheWarning, match="not a directory"):
        assert default_cache() is None


# ---- location, creation, configuration -------------------------------------------------------------------------------

def test_directory_created_0700(env, tmp_path):
    directory = tmp_path / "a" / "b" / "numfn"
    env.setenv("NUMFN_CACHE_DIR", str(directory))
    old_umask = os.umask(0)
    try:
        cache = default_cache()
    finally:
        os.umask(old_umask)
    assert cache is not None and cache.directory == str(directory)
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o277])
def test_created_directory_mode_is_exactly_0700_whatever_the_umask(tmp_path, umask):
    old_umask = os.umask(umask)
    try:
        DiskCache(tmp_path / "numfn")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(os.stat(tmp_path / "numfn").st_mode) == 0o700


def test_existing_safe_directory_kept_as_is(tmp_path):
    directory = tmp_path / "existing"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)
    DiskCache(directory).put(KEY, b"x")
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o755


def test_location_precedence(env, tmp_path):
    home = tmp_path / "home"
    assert rc.cache_directory() == str(home / ".cache" / "numfn")
    env.setenv("XDG_CACHE_HOME", "relative/path")  # the XDG spec says to ignore a relative path
    assert rc.cache_directory() == str(home / ".cache" / "numfn")
    env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert rc.cache_directory() == str(tmp_path / "xdg" / "numfn")
    env.setenv("NUMFN_CACHE_DIR", str(tmp_path / "explicit"))
    assert rc.cache_directory() == str(tmp_path / "explicit")
    assert numfn.cache.directory() == str(tmp_path / "explicit")
    env.setenv("NUMFN_CACHE_DIR", "")
    assert rc.cache_directory() == str(tmp_path / "xdg" / "numfn")
    env.delenv("XDG_CACHE_HOME")
    cache = default_cache()
    assert cache is not None and cache.directory == str(home / ".cache" / "numfn") and os.path.isdir(cache.directory)


def test_disable(env, tmp_path):
    env.setenv("NUMFN_CACHE_DIR", str(tmp_path / "c"))
    env.setenv("NUMFN_DISABLE_CACHE", "1")
    assert default_cache() is None
    assert not os.path.exists(tmp_path / "c")
    assert numfn.cache.info()["enabled"] is False
    env.setenv("NUMFN_DISABLE_CACHE", "0")
    assert isinstance(default_cache(), DiskCache)


def test_default_cache_memoized_per_directory(env, tmp_path):
    env.setenv("NUMFN_CACHE_DIR", str(tmp_path / "one"))
    first = default_cache()
    assert default_cache() is first
    env.setenv("NUMFN_CACHE_DIR", str(tmp_path / "two"))
    assert default_cache() is not first and default_cache().directory == str(tmp_path / "two")


def test_max_bytes_from_env(env, tmp_path):
    env.setenv("NUMFN_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache().max_bytes == rc.DEFAULT_MAX_BYTES == 1 << 30
    env.setenv("NUMFN_CACHE_MAX_BYTES", "12345")
    assert default_cache().max_bytes == 12345
    env.setenv("NUMFN_CACHE_MAX_BYTES", "lots")
    with pytest.warns(CacheWarning, match="NUMFN_CACHE_MAX_BYTES"):
        assert default_cache().max_bytes == rc.DEFAULT_MAX_BYTES


# ---- LRU eviction ----------------------------------------------------------------------------------------------------

def test_lru_eviction(tmp_path):
    payload = b"p" * 1000
    entry_size = HEADER_SIZE + len(payload)
    cache = DiskCache(tmp_path / "c", max_bytes=3 * entry_size)
    keys = [cache_key("entry", str(i)) for i in range(6)]
    for key in keys[:3]:
        assert cache.put(key, payload)
    assert cache.get(keys[0]) == payload  # 0 is now the most recently used
    assert cache.put(keys[3], payload)  # over the cap: 1, the least recently used, goes
    assert [cache.get(k) is not None for k in keys[:4]] == [True, False, True, True]
    assert cache.get(keys[2]) is not None  # 2 is now the most recently used
    assert cache.put(keys[4], payload)  # 0 goes
    assert cache.put(keys[5], payload)  # 3 goes
    assert [cache.get(k) is not None for k in keys] == [False, False, True, False, True, True]
    info = cache.info()
    assert info["entries"] == 3 and info["total_bytes"] == 3 * entry_size <= info["max_bytes"]


def test_payload_bigger_than_cap_not_stored(tmp_path):
    cache = DiskCache(tmp_path / "c", max_bytes=HEADER_SIZE + 100)
    assert cache.put(KEY, b"x" * 100)
    assert cache.put(OTHER_KEY, b"x" * 101) is False
    assert cache.get(KEY) == b"x" * 100 and cache.get(OTHER_KEY) is None


def test_stale_temporary_files_removed(cache):
    stale = os.path.join(cache.directory, ".tmp-crashed-writer")
    fresh = os.path.join(cache.directory, ".tmp-writer-in-progress")
    for path in (stale, fresh):
        with open(path, "wb") as f:
            f.write(b"partial")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    cache.put(KEY, b"payload")
    assert not os.path.exists(stale) and os.path.exists(fresh)
    assert cache.info()["entries"] == 1


# ---- concurrency -----------------------------------------------------------------------------------------------------

CHILD = r"""
import os, sys, time, warnings
from numfn.runtime.diskcache import CacheWarning, DiskCache
warnings.simplefilter("error", CacheWarning)
directory, key, index, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
valid = [bytes([i]) * (200_000 + i) for i in range(4)]
cache = DiskCache(directory)
deadline = time.monotonic() + 20
while not os.path.exists(go):
    if time.monotonic() > deadline: sys.exit("no start signal")
    time.sleep(0.0005)
for _ in range(25):
    assert cache.put(key, valid[index]) is True
    assert cache.get(key) in valid, "a reader saw a partial or foreign entry"
print("ok")
"""


def test_processes_put_same_key(tmp_path):
    directory = str(tmp_path / "c")
    go = str(tmp_path / "go")
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, directory, KEY, str(i), go], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    open(go, "w").close()  # the start signal
    outputs = [p.communicate(timeout=60) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0 and out.strip() == "ok", err
    assert files_in(directory) == [KEY + ENTRY_SUFFIX]
    assert DiskCache(directory).get(KEY) in [bytes([i]) * (200_000 + i) for i in range(4)]


def test_threads_put_and_get_same_key(cache):
    valid = [bytes([i]) * (100_000 + i) for i in range(8)]
    barrier = threading.Barrier(len(valid))
    errors = []

    def work(index):
        try:
            barrier.wait()
            for _ in range(25):
                assert cache.put(KEY, valid[index]) is True
                assert cache.get(KEY) in valid
        except BaseException as e:  # reported below
            errors.append(e)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(valid))]
        for t in threads: t.start()
        for t in threads: t.join()
    assert not errors, errors
    assert not [w for w in caught if issubclass(w.category, CacheWarning)]
    assert files_in(cache.directory) == [KEY + ENTRY_SUFFIX]
    assert cache.get(KEY) in valid


# ---- the file dlopen loads: a private copy of the verified payload ------------------------------------------------

def test_private_library_file_holds_exactly_the_payload(cache):
    from numfn.runtime.native import private_library_file
    payload = os.urandom(5000)
    cache.put(KEY, payload)
    path = private_library_file(cache.get(KEY), "entry")
    with open(path, "rb") as f:
        assert f.read() == payload
    assert path.endswith(".so") and not path.startswith(cache.directory)
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert private_library_file(cache.get(KEY), "entry") == path  # same contents, same path
    os.unlink(path)  # e.g. a tmp cleaner: written again on demand
    assert private_library_file(cache.get(KEY), "entry") == path and os.path.exists(path)
    # the copy stays valid whatever happens to the entry afterwards
    cache.clear()
    with open(path, "rb") as f:
        assert f.read() == payload


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("clang")), reason="no C compiler")
def test_private_library_file_is_loadable_with_dlopen(cache, tmp_path):
    from numfn.runtime.native import private_library_file
    compiler = shutil.which("cc") or shutil.which("clang")
    src, lib = tmp_path / "f.c", tmp_path / "f.so"
    src.write_text("int numfn_cache_test_answer(int x) { return 6 * x; }\n")
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    cache.put(KEY, lib.read_bytes())
    lib.unlink()
    loaded = ctypes.CDLL(private_library_file(cache.get(KEY), "answer"))
    assert loaded.numfn_cache_test_answer(7) == 42


# ---- clear, info, CLI, public module ---------------------------------------------------------------------------------

def test_clear_and_info(cache):
    for i in range(3):
        cache.put(cache_key(str(i)), b"x" * 10)
    notes = os.path.join(cache.directory, "notes.txt")
    with open(notes, "w") as f:
        f.write("not ours")
    assert cache.info() == {"directory": cache.directory, "entries": 3, "total_bytes": 3 * (HEADER_SIZE + 10),
                            "max_bytes": rc.DEFAULT_MAX_BYTES}
    assert cache.clear() == 3
    assert cache.info()["entries"] == 0 and cache.info()["total_bytes"] == 0
    assert files_in(cache.directory) == ["notes.txt"]  # only cache files are deleted


def test_cli(env, tmp_path, capsys):
    directory = tmp_path / "c"
    env.setenv("NUMFN_CACHE_DIR", str(directory))
    assert rc.cli(["info"]) == 0
    out = capsys.readouterr().out
    assert str(directory) in out and "enabled" in out and "entries:   0" in out
    assert not directory.exists()  # info creates nothing
    default_cache().put(KEY, b"x" * 2000)
    assert rc.cli(["info"]) == 0
    out = capsys.readouterr().out
    assert "entries:   1" in out and "KiB" in out and "1.0 GiB" in out
    assert rc.cli(["clear"]) == 0
    assert "removed 1 entry" in capsys.readouterr().out
    assert default_cache().info()["entries"] == 0
    assert rc.cli(["bogus"]) == 2
    assert rc.cli([]) == 2
    assert rc.cli(["--help"]) == 0
    capsys.readouterr()
    os.chmod(directory, 0o777)
    assert rc.cli(["clear"]) == 1
    assert "writable by group or others" in capsys.readouterr().err
    assert rc.cli(["info"]) == 0
    assert "disabled: refusing" in capsys.readouterr().out
    env.setenv("NUMFN_DISABLE_CACHE", "1")
    os.chmod(directory, 0o700)
    assert rc.cli(["info"]) == 0
    assert "NUMFN_DISABLE_CACHE" in capsys.readouterr().out


def test_public_module(env, tmp_path):
    env.setenv("NUMFN_CACHE_DIR", str(tmp_path / "c"))
    assert numfn.cache.directory() == str(tmp_path / "c")
    assert numfn.cache.clear() == 0
    default_cache().put(KEY, b"abc")
    info = numfn.cache.info()
    assert info["entries"] == 1 and info["total_bytes"] == HEADER_SIZE + 3 and info["enabled"] is True
    assert numfn.cache.clear() == 1 and numfn.cache.info()["entries"] == 0


def test_import_is_cheap_and_stdlib_only():
    # load the file on its own (not through the numfn package) and check what it pulled in
    path = os.path.join(REPO, "numfn", "runtime", "diskcache.py")
    code = ("import importlib.util, sys; before = set(sys.modules); "
            f"spec = importlib.util.spec_from_file_location('nfcache', {path!r}); "
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
            "new = set(sys.modules) - before; "
            "print(sorted(n for n in new if n.split('.')[0] in {'numpy', 'llvmlite', 'cffi', 'subprocess', 'numfn'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
