"""The disk compile cache: compiled artifacts (shared libraries, object code) kept on disk so a later process skips
compilation.

    key = cache_key("llvm", source, llvm_version, triple, cpu, features, opt_options, numfn_version)
    cache = default_cache()                  # None when disabled, or when the directory is unsafe or unusable
    if cache is not None:
        obj = cache.get(key)                 # verified payload bytes, or None
        ...
        cache.put(key, artifact_bytes)

Location and settings (read from the environment when `default_cache()` is called, not at import)
    ``$NUMFN_CACHE_DIR``, else ``$XDG_CACHE_HOME/numfn`` (an absolute XDG_CACHE_HOME only, as the XDG spec says),
    else ``~/.cache/numfn``. A directory we create gets mode 0700. ``NUMFN_DISABLE_CACHE=1`` turns the cache off;
    ``NUMFN_CACHE_MAX_BYTES`` caps its size (default 1 GiB).

Entry format
    One file per entry, ``<key>.nfc`` (key: 64 lowercase hex digits), holding an 84-byte header and then the payload.
    Integers are little-endian.

    ======  ====  ==================================================================================================
    offset  size  field
    ======  ====  ==================================================================================================
    0       8     magic ``b"NUMFNCCH"``
    8       4     format version (u32), currently 1
    12      8     payload length in bytes (u64)
    20      32    the key as a raw sha256 digest: an entry copied or renamed to another key's file name is rejected
    52      32    sha256 of the payload
    84      n     payload
    ======  ====  ==================================================================================================

    An entry is used only if the magic, version and key match, the file is exactly 84 + length bytes long and the
    payload hashes to the stored sha256. Anything else (truncated, corrupt, foreign) is deleted with a `CacheWarning`
    and treated as a miss; nothing raises.

    Why one file rather than a payload-only ``.so`` plus a checksum sidecar: a single file is published by a single
    atomic ``os.replace``, so a payload and its checksum can never disagree (two writers of one key racing on two
    files could pair one writer's payload with the other's checksum). dlopen needs a file holding exactly the payload:
    the caller writes the verified bytes `get` returns to a private file (numfn.runtime.native.private_library_file),
    so the bytes dlopen maps are the bytes that were checked, and a concurrent eviction or rewrite of the entry cannot
    pull the file away between the check and the dlopen.

Writes
    Into a temporary file in the cache directory (``.tmp-*``, mode 0600), then ``os.replace`` onto the entry's name:
    readers see no entry, the old one or the complete new one, never a partial one, and concurrent writers of one key
    all succeed (the last rename wins). No fsync: a file torn by a power failure fails its checksum and is discarded.
    Temporary files left by crashed writers are removed after an hour.

Safety
    We load native code from the cache, so a cache that another user can write is a code-injection hole.
    The directory must be a directory owned by the current user (``st_uid == os.getuid()``) and not writable by group
    or others (``st_mode & 0o022 == 0``); otherwise it is refused: `default_cache()` warns and returns None, and the
    methods of an existing `DiskCache` warn and behave as a miss. The same rule holds for root: root can write
    anywhere, but a directory owned by another user, or writable by group/others, is that user's to tamper with.
    Each entry is opened with O_NOFOLLOW (a symlink is not followed) and checked with fstat on the open file: it must
    be a regular file owned by the current user and not writable by group/others, or it is ignored with a warning
    (not deleted; the next put replaces it). The directory's ancestors are not checked. On platforms without POSIX
    ownership (Windows) these checks are skipped.

Eviction
    Least recently used first, by mtime: a put stamps the entry's mtime and a hit refreshes it (``os.utime``). When a
    put brings the total size of the entries above the cap, the entries with the oldest mtime are deleted until the
    total fits. A payload bigger than the cap is not stored at all.
"""
from __future__ import annotations

import hashlib
import os
import stat
import struct
import sys
import tempfile
import threading
import time
import warnings
from types import FrameType
from typing import cast

__all__ = ["DiskCache", "CacheWarning", "CacheDirectoryError", "cache_key", "default_cache", "cache_directory",
           "cache_disabled", "cache_info", "clear_cache", "cli", "DEFAULT_MAX_BYTES", "MAGIC", "FORMAT_VERSION",
           "HEADER_SIZE", "ENTRY_SUFFIX"]

MAGIC = b"NUMFNCCH"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sIQ32s32s")  # magic, version, payload length, key digest, payload sha256
HEADER_SIZE = _HEADER.size
ENTRY_SUFFIX = ".nfc"
DEFAULT_MAX_BYTES = 1 << 30

_TMP_PREFIX = ".tmp-"
_STALE_TMP_NS = 3600 * 10**9
_HEX_DIGITS = frozenset("0123456789abcdef")
_POSIX = hasattr(os, "getuid")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


class CacheWarning(UserWarning):
    """Issued when the cache skips something: an unsafe directory, a corrupt or untrusted entry, a failed write."""


class CacheDirectoryError(Exception):
    """The cache directory cannot be used: it is unsafe (owned by another user, writable by group or others), is
    not a directory, or cannot be created."""


class _BadEntry(Exception):
    """An entry that fails verification; the message says why."""


def _warn(message: str) -> None:
    # attribute the warning to the first caller outside this module, whatever the depth of the call inside it
    frame: FrameType | None
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        level, frame = level + 1, frame.f_back
    warnings.warn(message, CacheWarning, stacklevel=level)


def cache_key(*parts: str | bytes) -> str:
    """The cache key of an artifact: the hex sha256 of `parts` (str parts are encoded as UTF-8).

    Pass everything the artifact depends on: backend, source text, compiler/LLVM version, target triple, CPU and
    features, options, numfn's version. Each part is length-prefixed, so ("ab", "c") and ("a", "bc") differ.
    """
    h = hashlib.sha256(b"numfn cache key\x00")
    for part in parts:
        if isinstance(part, str):
            raw = part.encode("utf-8", "surrogatepass")
        elif isinstance(part, (bytes, bytearray, memoryview)):
            raw = bytes(part)
        else:
            raise TypeError(f"cache_key parts must be str or bytes, not {type(part).__name__}")
        h.update(len(raw).to_bytes(8, "little"))
        h.update(raw)
    return h.hexdigest()


def _check_key(key: str) -> None:
    # keys become file names: accept only what cache_key produces (this also rules out path traversal)
    if not (isinstance(key, str) and len(key) == 64 and _HEX_DIGITS.issuperset(key)):
        raise ValueError(f"not a cache key (64 lowercase hex digits, as cache_key returns): {key!r}")


def _is_entry_name(name: str) -> bool:
    return len(name) == 64 + len(ENTRY_SUFFIX) and name.endswith(ENTRY_SUFFIX) and _HEX_DIGITS.issuperset(name[:64])


LOCK_SUFFIX = ".lock"   # `<key>.lock`: the file numfn.locks.file_lock locks while a process compiles that key


def _is_lock_name(name: str) -> bool:
    return len(name) == 64 + len(LOCK_SUFFIX) and name.endswith(LOCK_SUFFIX) and _HEX_DIGITS.issuperset(name[:64])


def _remove_unheld_lock(path: str) -> bool:
    """Delete the lock file `path` unless a process holds its lock; True when deleted. The file is locked (without
    waiting) before it is unlinked, so a holder is never disturbed; a process that opened it just before and waits
    for it finds, once it gets the lock, that its file is no longer the one at `path`, and opens that one again
    (numfn.locks.file_lock checks this)."""
    try:
        import fcntl
        fd = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except (ImportError, OSError):
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False   # held: a process is compiling this key right now
        try:
            os.unlink(path)
        except OSError:
            return False
        return True
    finally:
        os.close(fd)   # (releases the lock)


_clock_lock = threading.Lock()
_last_stamp_ns = 0


def _now_ns() -> int:
    """time.time_ns(), but strictly increasing within the process: file timestamps set by the kernel itself are
    tick-coarse, so back-to-back puts and hits would tie and the LRU order between them would be lost."""
    global _last_stamp_ns
    with _clock_lock:
        _last_stamp_ns = max(time.time_ns(), _last_stamp_ns + 1)
        return _last_stamp_ns


def _ownership_problem(st: os.stat_result) -> str | None:
    """Why a file or directory with this stat must not be trusted, or None."""
    if not _POSIX: return None
    uid = os.getuid()
    if st.st_uid != uid:
        return f"it is owned by uid {st.st_uid}, not by the current user (uid {uid})"
    if st.st_mode & 0o022:
        return f"it is writable by group or others (mode {stat.S_IMODE(st.st_mode):#o})"
    return None


def _directory_problem(directory: str) -> str | None:
    """Why `directory` cannot hold a cache we load native code from, or None when it can."""
    try:
        st = os.stat(directory)
    except FileNotFoundError:
        return f"numfn cache directory {directory} does not exist"
    except OSError as e:
        return f"cannot examine the numfn cache directory {directory}: {e}"
    if not stat.S_ISDIR(st.st_mode):
        return f"the numfn cache location {directory} is not a directory"
    problem = _ownership_problem(st)
    if problem:
        return (f"refusing the numfn cache directory {directory}: {problem}; another user could plant native code "
                f"in it (fix: chown it to yourself and chmod 700 it, or point NUMFN_CACHE_DIR elsewhere)")
    return None


def _decode(key: str, data: bytes) -> tuple[bytes, bytes]:
    """The payload of the entry file contents `data` for `key`, and its sha256 digest; raises _BadEntry."""
    if len(data) < HEADER_SIZE:
        raise _BadEntry(f"truncated: {len(data)} bytes, shorter than the {HEADER_SIZE}-byte header")
    magic, version, length, key_digest, payload_digest = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise _BadEntry("not a numfn cache entry (bad magic)")
    if version != FORMAT_VERSION:
        raise _BadEntry(f"unsupported entry format version {version} (this numfn reads version {FORMAT_VERSION})")
    if key_digest != bytes.fromhex(key):
        raise _BadEntry("it holds the entry of a different key")
    if len(data) - HEADER_SIZE != length:
        raise _BadEntry(f"truncated or padded: {len(data) - HEADER_SIZE} payload bytes, the header says {length}")
    payload = data[HEADER_SIZE:]
    if hashlib.sha256(payload).digest() != payload_digest:
        raise _BadEntry("payload checksum mismatch")
    return payload, payload_digest


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class DiskCache:
    """A directory of compiled artifacts, each stored under a key from `cache_key`; see the module docstring for the
    entry format, the safety rules and eviction.

    Safe to share between threads and processes. Nothing here raises on a bad entry or a failed write: problems
    become `CacheWarning`s and misses.
    """

    def __init__(self, directory: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES, *,
                 create: bool = True) -> None:
        """Use `directory` (created with mode 0700 when missing and `create` is true), keeping at most `max_bytes`
        bytes of entries. Raises CacheDirectoryError when the directory is unsafe or cannot be created."""
        self.directory = os.path.abspath(os.fspath(directory))
        self.max_bytes = int(max_bytes)
        if create: self._create_directory()
        problem = _directory_problem(self.directory)
        if problem: raise CacheDirectoryError(problem)

    def __repr__(self) -> str:
        return f"DiskCache({self.directory!r}, max_bytes={self.max_bytes})"

    def _create_directory(self) -> None:
        try:
            os.makedirs(self.directory, mode=0o700)
        except FileExistsError:
            return
        except OSError as e:
            raise CacheDirectoryError(f"cannot create the numfn cache directory {self.directory}: {e}") from e
        # the mode given to makedirs is filtered through the umask; we created the directory, so make it exactly 0700
        os.chmod(self.directory, 0o700)

    def _usable(self, *, create: bool = False) -> bool:
        """Whether the directory may be used right now; it is checked on every operation because its owner or
        mode can change under a long-lived cache. A missing directory is recreated when `create`, else a miss."""
        if create and not os.path.lexists(self.directory):
            try:
                self._create_directory()
            except CacheDirectoryError as e:
                _warn(str(e))
                return False
        elif not os.path.lexists(self.directory):
            return False
        problem = _directory_problem(self.directory)
        if problem:
            _warn(problem)
            return False
        return True

    def path_for(self, key: str) -> str:
        """The file the entry for `key` lives in (header and payload)."""
        _check_key(key)
        return os.path.join(self.directory, key + ENTRY_SUFFIX)

    def _load(self, key: str) -> tuple[bytes, bytes] | None:
        """The verified payload of `key` and its sha256 digest, or None on a miss."""
        path = self.path_for(key)
        if not self._usable(): return None
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as e:  # ELOOP: a symlink stands where an entry should be
            _warn(f"ignoring numfn cache entry {path}: cannot open it without following links ({e})")
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                _warn(f"ignoring numfn cache entry {path}: not a regular file")
                return None
            problem = _ownership_problem(st)
            if problem:
                _warn(f"ignoring numfn cache entry {path}: {problem}")
                return None
            with open(fd, "rb", closefd=False) as f:
                data = f.read()
        except OSError as e:
            _warn(f"ignoring numfn cache entry {path}: cannot read it ({e})")
            return None
        finally:
            os.close(fd)
        try:
            found = _decode(key, data)
        except _BadEntry as e:
            self._discard(path, st, str(e))
            return None
        try:
            stamp = _now_ns()
            os.utime(path, ns=(stamp, stamp))
        except OSError:
            pass  # a read-only cache still serves hits; only the LRU order suffers
        return found

    def _discard(self, path: str, st: os.stat_result, reason: str) -> None:
        _warn(f"discarding numfn cache entry {path} ({reason}); treating it as a miss")
        try:
            now = os.lstat(path)
            # a concurrent put may have replaced the bad file with a good one since we read it: delete only what we read
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino): os.unlink(path)
        except OSError:
            pass

    def discard(self, key: str, reason: str) -> None:
        """Delete the entry of `key` with a CacheWarning giving `reason`: its payload verified, but the caller cannot
        use it (an object that does not load). Left in place, it would fail every later process the same way."""
        path = self.path_for(key)
        if not self._usable(): return
        _warn(f"discarding numfn cache entry {path} ({reason}); treating it as a miss")
        _unlink_quietly(path)

    def get(self, key: str) -> bytes | None:
        """The payload stored under `key`, verified against its checksum, or None on a miss.

        A truncated, corrupt or foreign entry is deleted with a CacheWarning; an untrusted one (see the module
        docstring) is ignored with a CacheWarning. Either way the result is None. A hit refreshes the LRU stamp.
        Raises ValueError only for a malformed key.
        """
        found = self._load(key)
        return None if found is None else found[0]

    def put(self, key: str, data: bytes | bytearray | memoryview) -> bool:
        """Store `data` under `key` atomically (temporary file + os.replace), then evict least recently used entries
        while the cache is over its cap. Returns whether the entry was stored: False (with a CacheWarning) when the
        directory is unsafe or the write fails, False silently when `data` alone is bigger than the cap."""
        path = self.path_for(key)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"cache payloads are bytes, not {type(data).__name__}")
        payload = bytes(data)
        if HEADER_SIZE + len(payload) > self.max_bytes: return False
        if not self._usable(create=True): return False
        header = _HEADER.pack(MAGIC, FORMAT_VERSION, len(payload), bytes.fromhex(key), hashlib.sha256(payload).digest())
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=f"{_TMP_PREFIX}{key[:16]}-", dir=self.directory)
            with open(fd, "wb") as f:
                f.write(header)
                f.write(payload)
            stamp = _now_ns()
            os.utime(tmp, ns=(stamp, stamp))
            os.replace(tmp, path)
            tmp = None
        except OSError as e:
            _warn(f"cannot write numfn cache entry {path}: {e}")
            return False
        finally:
            if tmp is not None: _unlink_quietly(tmp)
        self._evict()
        return True

    def _scan(self) -> tuple[list[tuple[int, str, int]], list[tuple[int, str]]]:
        """(mtime_ns, name, size) of every entry file and (mtime_ns, name) of every temporary file."""
        entries: list[tuple[int, str, int]] = []
        temps: list[tuple[int, str]] = []
        try:
            it = os.scandir(self.directory)
        except OSError:
            return entries, temps
        with it:
            for item in it:
                try:
                    if _is_entry_name(item.name):
                        st = item.stat(follow_symlinks=False)
                        if stat.S_ISREG(st.st_mode): entries.append((st.st_mtime_ns, item.name, st.st_size))
                    elif item.name.startswith(_TMP_PREFIX):
                        temps.append((item.stat(follow_symlinks=False).st_mtime_ns, item.name))
                except OSError:
                    continue  # removed while we were listing
        return entries, temps

    def _remove_stale_temps(self, temps: list[tuple[int, str]]) -> None:
        # younger temporary files may belong to a writer in another process that is about to rename them
        cutoff = time.time_ns() - _STALE_TMP_NS
        for mtime, name in temps:
            if mtime < cutoff: _unlink_quietly(os.path.join(self.directory, name))

    def _evict(self) -> None:
        # one directory scan per put: puts follow compilations, which cost far more
        entries, temps = self._scan()
        self._remove_stale_temps(temps)
        total = sum(size for _, _, size in entries)
        for _, name, size in sorted(entries):
            if total <= self.max_bytes: break
            try:
                os.unlink(os.path.join(self.directory, name))
            except FileNotFoundError:
                pass  # another process evicted it first
            except OSError:
                continue
            total -= size

    def clear(self) -> int:
        """Delete every entry, stale temporary files and the compile lock files no process holds (`<key>.lock`);
        other files in the directory are left alone. Returns the number of entries deleted."""
        if not self._usable(): return 0
        entries, temps = self._scan()
        removed = 0
        for _, name, _ in entries:
            try:
                os.unlink(os.path.join(self.directory, name))
                removed += 1
            except OSError:
                pass
        self._remove_stale_temps(temps)
        self._remove_unheld_locks()
        return removed

    def _remove_unheld_locks(self) -> None:
        try:
            names = [name for name in os.listdir(self.directory) if _is_lock_name(name)]
        except OSError:
            return
        for name in names: _remove_unheld_lock(os.path.join(self.directory, name))

    def info(self) -> dict[str, object]:
        """{"directory", "entries", "total_bytes", "max_bytes"}: the number and total size of the entry files."""
        entries, _ = self._scan()
        return {"directory": self.directory, "entries": len(entries),
                "total_bytes": sum(size for _, _, size in entries), "max_bytes": self.max_bytes}


# numfn.config reads the environment; imported when used, so that importing this module stays stdlib-only

def cache_directory() -> str:
    """The configured cache directory: $NUMFN_CACHE_DIR, else $XDG_CACHE_HOME/numfn, else ~/.cache/numfn."""
    from numfn import config
    return config.cache_directory()


def cache_disabled() -> bool:
    """Whether NUMFN_DISABLE_CACHE turns the cache off (see numfn.config.flag)."""
    from numfn import config
    return config.cache_disabled()


def _max_bytes_from_env() -> int:
    from numfn import config
    try:
        value = config.cache_max_bytes()
    except ValueError as e:
        _warn(f"ignoring {e}; using {DEFAULT_MAX_BYTES}")
        return DEFAULT_MAX_BYTES
    return DEFAULT_MAX_BYTES if value is None else value


_instances: dict[tuple[str, int], DiskCache] = {}
_instances_lock = threading.Lock()


def _reinit_locks_after_fork() -> None:
    """In a forked child (where only the forking thread exists): the locks another thread held are released. This
    module imports nothing of numfn's (it loads on its own), so it does for its locks what numfn.locks does for the
    others."""
    for held in (_clock_lock, _instances_lock):
        reinit = getattr(held, "_at_fork_reinit", None)
        if reinit is not None: reinit()


if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_reinit_locks_after_fork)


def default_cache() -> DiskCache | None:
    """The cache in the configured directory (memoized per directory and cap), or None when NUMFN_DISABLE_CACHE is
    set or the directory is unsafe or cannot be created (then with a CacheWarning)."""
    if cache_disabled(): return None
    directory, max_bytes = cache_directory(), _max_bytes_from_env()
    with _instances_lock:
        cache = _instances.get((directory, max_bytes))
        if cache is None:
            try:
                cache = DiskCache(directory, max_bytes)
            except CacheDirectoryError as e:
                _warn(f"{e}; compiling without the disk cache")
                return None
            _instances[(directory, max_bytes)] = cache
    return cache


TUNED_SUBDIRECTORY = "tuned"   # BEAM's chosen kernel optimizations (numfn.beam): entries like the programs'


def tuned_cache() -> DiskCache | None:
    """The cache of the kernel optimizations BEAM chose (numfn.beam): the subdirectory TUNED_SUBDIRECTORY of the
    configured cache, memoized like it; None when the cache is off or unusable."""
    parent = default_cache()
    if parent is None: return None
    directory = os.path.join(parent.directory, TUNED_SUBDIRECTORY)
    with _instances_lock:
        cache = _instances.get((directory, parent.max_bytes))
        if cache is None:
            try:
                cache = DiskCache(directory, parent.max_bytes)
            except CacheDirectoryError as e:
                _warn(f"{e}; tuning without remembering")
                return None
            _instances[(directory, parent.max_bytes)] = cache
    return cache


def cache_info() -> dict[str, object]:
    """The configured cache: {"directory", "entries", "total_bytes", "max_bytes", "enabled", "problem"}, where
    "problem" says why an existing directory is refused (else None). Creates nothing."""
    directory, max_bytes = cache_directory(), _max_bytes_from_env()
    info: dict[str, object] = {"directory": directory, "entries": 0, "total_bytes": 0, "max_bytes": max_bytes,
                               "enabled": not cache_disabled(), "problem": None, "tuned_kernels": 0}
    if os.path.lexists(directory):
        try:
            info.update(DiskCache(directory, max_bytes, create=False).info())
            tuned = os.path.join(directory, TUNED_SUBDIRECTORY)
            if os.path.lexists(tuned):
                info["tuned_kernels"] = DiskCache(tuned, max_bytes, create=False).info()["entries"]
        except CacheDirectoryError as e:
            info["enabled"], info["problem"] = False, str(e)
    return info


def clear_cache() -> int:
    """Delete every entry of the configured cache (even when NUMFN_DISABLE_CACHE is set); returns how many.
    Raises CacheDirectoryError when the directory exists but is unsafe."""
    directory = cache_directory()
    if not os.path.lexists(directory): return 0
    removed = DiskCache(directory, _max_bytes_from_env(), create=False).clear()
    tuned = os.path.join(directory, TUNED_SUBDIRECTORY)
    if os.path.lexists(tuned): removed += DiskCache(tuned, _max_bytes_from_env(), create=False).clear()
    return removed


def _human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB": break
        size /= 1024
    return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"


def cli(argv: list[str]) -> int:
    """`python -m numfn cache info|clear`: show or empty the cache. Returns the exit status."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m numfn cache", description="Inspect or empty numfn's disk cache.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{info,clear}")
    commands.add_parser("info", help="show the cache directory, its entries and its size cap")
    commands.add_parser("clear", help="delete every cache entry")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or a usage error argparse has already reported
        return e.code if isinstance(e.code, int) else 2
    if args.command == "info":
        info = cache_info()
        if info["problem"]: status = f"disabled: {info['problem']}"
        elif cache_disabled(): status = "disabled (NUMFN_DISABLE_CACHE is set)"
        else: status = "enabled"
        print(f"directory: {info['directory']}")
        print(f"status:    {status}")
        print(f"entries:   {info['entries']}")
        print(f"tuned:     {info['tuned_kernels']} kernels (their optimizations chosen by NUMFN_BEAM)")
        total, cap = cast(int, info["total_bytes"]), cast(int, info["max_bytes"])
        print(f"size:      {_human_size(total)} (cap {_human_size(cap)}, "
              f"set by NUMFN_CACHE_MAX_BYTES)")
        return 0
    try:
        removed = clear_cache()
    except CacheDirectoryError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"removed {removed} {'entry' if removed == 1 else 'entries'} from {cache_directory()}")
    return 0
