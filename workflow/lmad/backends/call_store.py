"""The persistent call store (lmad.backends.cache puts it in front of any backend).

Layout: ``<root>/<model>/<host>-<pid>-<random>.calls.jsonl``, one **segment** per writer
(a ``CachedBackend`` that had a miss), appended one line per finished call. Why:

* few files: a segment per stage job, not a file per call (a shared cluster filesystem
  handles millions of small files badly; the paper's grid made millions);
* durable per call: each call is one ``write`` on an ``O_APPEND`` descriptor the moment the
  backend reports it (``Backend.generate_each``), so a ``kill -9`` loses at most the calls
  still in flight, whatever the chunk size; a line cut by the kill has no newline and is
  never read;
* no locks: every writer appends to its own new segment; readers index complete lines
  only, so two jobs (also SLURM jobs on a shared filesystem) never touch each other's file;
* cheap to open: a writer that closes its segment leaves beside it ``<segment>.idx`` (raw
  keys, offsets and lengths, with the segment's size and mtime), which the next readers load
  in bulk instead of parsing its lines (4 x 500 questions, L = 10: 47 s of the run's 162 s job
  CPU went to that parse), and a batch looks its own keys up in them (``CallStore.prefetch``)
  rather than indexing every stored call. A segment that has no sidecar (still being written,
  or its writer was killed) or changed since its sidecar was written is parsed as before;
* never a lie: every line carries its key and a sha256 over (key, reply). A line is
  validated when it is served: malformed JSON, a missing/extra/mistyped field, a key that
  is not the one asked for or a checksum mismatch make it a miss, with a warning naming
  the segment file and line — never a hit.

A line (ASCII: ``ensure_ascii`` escapes everything else)::

    {"key": <sha256 of the request>, "text": str, "prompt_tokens": int, "completion_tokens": int,
     "finish_reason": "stop"|"length"|"refusal", "sanitized": bool, "sha256": <checksum>}

"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import socket
import struct
import sys
from array import array
from pathlib import Path
from typing import Sequence

from .base import Completion

# the call cache's one logger, whichever of its modules warns
log = logging.getLogger("lmad.backends.cache")

SEGMENT_SUFFIX = ".calls.jsonl"
_FIELDS = ("key", "text", "prompt_tokens", "completion_tokens", "finish_reason", "sanitized", "sha256")
_KEY_AT_START = re.compile(rb'\{"key": ?"([0-9a-f]{64})"')


# sidecar index of a closed segment: magic, records, segment size, segment mtime (ns); then
# the records' raw 32-byte keys, offsets (int64) and lengths (int64), little-endian
_IDX_MAGIC = b"LMADIDX1"
_IDX_HEAD = struct.Struct("<8sQQQ")
_KEY = re.compile(rb".{32}", re.DOTALL)


def _sidecar(segment: Path) -> Path:
    return segment.with_name(segment.name + ".idx")


def _le(values: array) -> bytes:
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _from_le(blob: bytes) -> array:
    values = array("q")
    values.frombytes(blob)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def write_sidecar(segment: Path, keys: list[bytes], offsets: array, lengths: array) -> None:
    """The index of a closed ``segment`` (atomically: a reader sees all of it or none)."""
    st = segment.stat()
    tmp = segment.with_name(f".{segment.name}.idx.tmp")
    tmp.write_bytes(_IDX_HEAD.pack(_IDX_MAGIC, len(keys), st.st_size, st.st_mtime_ns) + b"".join(keys)
                    + _le(offsets) + _le(lengths))
    tmp.replace(_sidecar(segment))


def read_sidecar(segment: Path) -> tuple[list[bytes], array, array, int] | None:
    """(keys, offsets, lengths, size covered) of ``segment``'s sidecar; None when there is
    none, it is malformed, or the segment is not the file it indexed (size or mtime differ)."""
    side = _read_sidecar_raw(segment)
    if side is None:
        return None
    blob, n, size = side
    return _KEY.findall(blob, 0, 32 * n), _from_le(blob[32 * n : 40 * n]), _from_le(blob[40 * n :]), size


def _read_sidecar_raw(segment: Path) -> tuple[bytes, int, int] | None:
    """``read_sidecar``'s checks; (keys, offsets and lengths as one blob, records, size covered)."""
    try:
        blob = _sidecar(segment).read_bytes()
        st = segment.stat()
    except OSError:
        return None
    if len(blob) < _IDX_HEAD.size:
        return None
    magic, n, size, mtime = _IDX_HEAD.unpack_from(blob)
    body = _IDX_HEAD.size
    if magic != _IDX_MAGIC or len(blob) != body + 48 * n or (size, mtime) != (st.st_size, st.st_mtime_ns):
        return None
    return blob[body:], n, size


def _record_of(raw: bytes, keys: bytes, prefixes: array, prefix: int) -> int | None:
    """The first record of a sidecar's ``keys`` that is ``raw`` (its first 8 bytes: ``prefix``)."""
    i = -1
    while True:
        try:
            i = prefixes.index(prefix, i + 1)
        except ValueError:
            return None
        if keys[32 * i : 32 * i + 32] == raw:
            return i


def folder_name(name: str) -> str:
    """A model id as a folder name of the store."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


# json.dumps(..., ensure_ascii=True, separators=(",", ":")), without building an encoder per call
_compact_json = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode


def checksum(key: str, text: str, prompt_tokens: int, completion_tokens: int, finish_reason: str,
             sanitized: bool) -> str:
    blob = _compact_json([key, text, prompt_tokens, completion_tokens, finish_reason, sanitized])
    return hashlib.sha256(blob.encode("ascii")).hexdigest()


def encode_entry(key: str, c: Completion) -> bytes:
    entry = {"key": key, "text": c.text, "prompt_tokens": c.prompt_tokens,
             "completion_tokens": c.completion_tokens, "finish_reason": c.finish_reason,
             "sanitized": c.sanitized}
    entry["sha256"] = checksum(**entry)
    return (_compact_json(entry) + "\n").encode("ascii")


def _is_count(v) -> bool:
    return type(v) is int and v >= 0  # bool is not a count


def decode_entry(line: bytes, key: str) -> Completion:
    """The completion a store line holds for ``key``; ValueError saying what is wrong."""
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"not an object ({type(data).__name__})")
    if set(data) != set(_FIELDS):
        raise ValueError(f"fields {sorted(data)}, expected {sorted(_FIELDS)}")
    if data["key"] != key:
        raise ValueError(f"key {str(data['key'])[:16]}… is not the requested {key[:16]}…")
    if not isinstance(data["text"], str):
        raise ValueError(f"text is {type(data['text']).__name__}, not str")
    for f in ("prompt_tokens", "completion_tokens"):
        if not _is_count(data[f]):
            raise ValueError(f"{f} is {data[f]!r}, not a count")
    if data["finish_reason"] not in ("stop", "length", "refusal"):
        raise ValueError(f"finish_reason {data['finish_reason']!r}")
    if type(data["sanitized"]) is not bool:
        raise ValueError(f"sanitized is {data['sanitized']!r}")
    fields = {f: data[f] for f in _FIELDS[:-1]}
    if data["sha256"] != checksum(**fields):
        raise ValueError("checksum mismatch (the entry was changed after it was written)")
    return Completion(text=data["text"], prompt_tokens=data["prompt_tokens"],
                      completion_tokens=data["completion_tokens"], finish_reason=data["finish_reason"],
                      cached=True, sanitized=data["sanitized"])


class CallStore:
    """The segments of one model: an index of complete lines (key → location), refreshed
    incrementally (closed segments from their sidecars), and this process's own segment,
    opened on its first write."""

    def __init__(self, folder: str | os.PathLike):
        self.dir = Path(folder)
        # raw key → location number; a location is (segment number, offset, length, line)
        self._index: dict[bytes, int] = {}
        self._seg_of, self._offset, self._length, self._line = array("q"), array("q"), array("q"), array("q")
        self._segments: list[Path] = []
        self._keys_of: list[list[bytes]] = []  # per segment, its keys in location order (the fallback search)
        # sidecar segments whose keys are not in _index yet: number -> (keys blob, their first
        # 8 bytes as int64s). A batch looks its keys up there (prefetch) instead of indexing
        # every stored call: a job of the 4 x 500, L = 10 benchmark spent ~0.1 s building a
        # dict of 364,000 keys to look up a few hundred.
        self._lazy: dict[int, tuple[bytes, array]] = {}
        self._searched: set[bytes] = set()  # keys prefetch looked up in every lazy segment
        self._first: list[int] = []  # per segment, its first location number
        self._scanned: dict[Path, tuple[int, int]] = {}  # segment → (bytes indexed, lines indexed)
        self._readers: dict[Path, int] = {}
        self._fd: int | None = None
        self.segment: Path | None = None
        self._own: tuple[list[bytes], array, array] = ([], array("q"), array("q"))  # what this writer wrote
        self._written = 0
        self.invalid = 0  # entries refused (malformed, mismatched)

    def _segment_no(self, seg: Path) -> int:
        self._segments.append(seg)
        self._keys_of.append([])
        self._first.append(len(self._offset))
        return len(self._segments) - 1

    def _add_bulk(self, seg: Path, blob: bytes, n: int) -> None:
        """A sidecar's ``n`` records (``_read_sidecar_raw``'s blob), its keys left lazy."""
        no = self._segment_no(seg)
        self._seg_of.extend(array("q", [no]) * n)
        self._offset.extend(_from_le(blob[32 * n : 40 * n]))
        self._length.extend(_from_le(blob[40 * n :]))
        self._line.frombytes(bytes(8 * n))  # 0: a sidecar's line is its record number + 1 (_line_of)
        keys = blob[: 32 * n]
        self._lazy[no] = (keys, _from_le(keys)[::4])

    def _materialize(self, no: int) -> None:
        """Index every key of lazy segment ``no``."""
        blob, _ = self._lazy.pop(no)
        keys = self._keys_of[no] = _KEY.findall(blob)
        first = self._first[no]
        self._index.update(zip(keys, range(first, first + len(keys))))  # a later copy of a key wins; both are valid

    def _materialize_all(self) -> None:
        for no in sorted(self._lazy):
            self._materialize(no)

    def prefetch(self, keys: Sequence[str]) -> None:
        """Index the lazy segments' copies of ``keys`` (a batch's), so ``get`` answers them
        without indexing every stored call. A segment holding many of them is indexed whole."""
        wanted: dict[int, list[bytes]] = {}
        for key in keys:
            try:
                raw = bytes.fromhex(key)
            except ValueError:
                continue
            if len(raw) == 32 and raw not in self._index:
                wanted.setdefault(int.from_bytes(raw[:8], "little", signed=True), []).append(raw)
                self._searched.add(raw)
        if not wanted or not self._lazy:
            return
        for no, (blob, prefixes) in list(self._lazy.items()):
            common = wanted.keys() & prefixes
            if len(common) > 64:
                self._materialize(no)
                continue
            for prefix in common:
                for raw in wanted[prefix]:  # distinct keys may share 8 bytes: compare whole keys
                    if raw in self._index:  # a copy found in an earlier segment serves as well
                        continue
                    i = _record_of(raw, blob, prefixes, prefix)
                    if i is not None:
                        self._index[raw] = self._first[no] + i

    def refresh(self) -> None:
        """Index the complete lines written since the last refresh (by any writer)."""
        if not self.dir.is_dir():
            return
        for seg in sorted(self.dir.glob(f"*{SEGMENT_SUFFIX}")):
            if seg not in self._scanned:
                side = _read_sidecar_raw(seg)
                if side is not None:
                    blob, n, size = side
                    self._add_bulk(seg, blob, n)
                    self._scanned[seg] = (size, n)
                    self._searched.clear()  # a new lazy segment: earlier lookups did not search it
                    continue
            self._scan(seg)

    def _scan(self, seg: Path) -> None:
        """Parse the lines of ``seg`` added since it was last read."""
        done, lines = self._scanned.get(seg, (0, 0))
        try:
            if seg in self._scanned and seg.stat().st_size == done:
                return
            with open(seg, "rb") as fh:
                fh.seek(done)
                blob = fh.read()
        except OSError as exc:
            log.warning("call store segment %s is unreadable (%s); its calls are misses", seg, exc)
            return
        no = self._segments.index(seg) if seg in self._scanned else self._segment_no(seg)
        if no in self._lazy:  # a sidecar segment that grew: its lines join its indexed keys
            self._materialize(no)
        end = blob.rfind(b"\n") + 1  # a line without its newline is still being written (or was cut)
        pos = 0
        while pos < end:
            nl = blob.index(b"\n", pos)
            lines += 1
            m = _KEY_AT_START.match(blob, pos, nl)
            if m:
                key = bytes.fromhex(m.group(1).decode())
                self._index[key] = len(self._offset)
                self._keys_of[no].append(key)
                self._seg_of.append(no)
                self._offset.append(done + pos)
                self._length.append(nl - pos)
                self._line.append(lines)
            else:
                self.invalid += 1
                log.warning("call store %s line %d: no key at the start of the entry; ignored", seg, lines)
            pos = nl + 1
        self._scanned[seg] = (done + end, lines)

    def _locations(self, raw: bytes, first: int):
        """``first``, then every other location of the key (searched only after a bad copy)."""
        yield first
        self._materialize_all()  # only after a bad copy (rare): every other copy is a candidate
        for no, keys in enumerate(self._keys_of):
            start = 0
            while True:
                try:
                    i = keys.index(raw, start)
                except ValueError:
                    break
                if self._first[no] + i != first:
                    yield self._first[no] + i
                start = i + 1

    def get(self, key: str) -> Completion | None:
        try:
            raw = bytes.fromhex(key)
        except ValueError:
            return None
        if len(raw) != 32:  # not a sha256: never stored
            return None
        first = self._index.get(raw)
        if first is None and self._lazy and raw not in self._searched:  # a key no prefetch looked up
            self._materialize_all()
            first = self._index.get(raw)
        if first is None:
            return None
        for loc in self._locations(raw, first):
            seg, line = self._segments[self._seg_of[loc]], self._line_of(loc)
            try:
                fd = self._readers.get(seg)
                if fd is None:
                    fd = self._readers[seg] = os.open(seg, os.O_RDONLY)
                return decode_entry(os.pread(fd, self._length[loc], self._offset[loc]), key)
            except (OSError, ValueError) as exc:
                self.invalid += 1
                log.warning("call store %s line %d (key %s): %s; treated as a miss", seg, line, key[:16], exc)
        return None

    def _line_of(self, loc: int) -> int:
        no = self._seg_of[loc]
        return self._line[loc] or loc - self._first[no] + 1

    def put(self, key: str, completion: Completion) -> None:
        line = encode_entry(key, completion)
        if self._fd is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            name = f"{folder_name(socket.gethostname())}-{os.getpid()}-{secrets.token_hex(4)}{SEGMENT_SUFFIX}"
            self.segment = self.dir / name
            self._fd = os.open(self.segment, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        view = memoryview(line)
        while view:  # a regular-file write is whole unless interrupted; finish it if not
            view = view[os.write(self._fd, view):]
        keys, offsets, lengths = self._own
        keys.append(bytes.fromhex(key))
        offsets.append(self._written)
        lengths.append(len(line) - 1)
        self._written += len(line)

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)  # durable on the filesystem (kill -9 needs no fsync: the kernel has it)
            os.close(self._fd)
            self._fd = None
            try:
                write_sidecar(self.segment, *self._own)
            except OSError as exc:  # readers parse the segment instead
                log.warning("call store %s: no sidecar index written (%s)", self.segment, exc)
            self._own, self._written = ([], array("q"), array("q")), 0  # a later put opens a new segment
        for fd in self._readers.values():
            os.close(fd)
        self._readers.clear()
