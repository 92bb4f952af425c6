"""Call ids are time-ordered UUIDs (version 7, RFC 9562: the Unix time in milliseconds, then
random bits) whose random part is drawn from bytes read in blocks (one ``getrandom`` per 409
ids): each id is new, on any thread, and a forked child never hands out the bytes its parent
holds."""

from __future__ import annotations

import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from reasonwire.govern.evidence import new_call_id


def _valid(cid: str) -> bool:
    u = uuid.UUID(hex=cid)
    return (u.hex, u.version, u.variant) == (cid, 7, uuid.RFC_4122)


def test_ids_across_several_blocks_are_all_new_version_7_uuids() -> None:
    ids = [new_call_id() for _ in range(1000)]  # ~3 blocks of 4 KiB
    assert len(set(ids)) == len(ids) and all(map(_valid, ids))


def test_an_id_begins_with_the_unix_time_in_milliseconds_it_was_made_at() -> None:
    """RFC 9562 §5.7: the first 48 bits are the Unix time in milliseconds, big-endian; so
    ids made later sort after (the evidence index takes them at its end)."""
    before = time.time_ns() // 1_000_000
    ids = [new_call_id() for _ in range(500)]
    after = time.time_ns() // 1_000_000
    stamps = [int(cid[:12], 16) for cid in ids]
    assert all(before <= ms <= after for ms in stamps)
    assert stamps == sorted(stamps)


def test_ids_made_on_many_threads_at_once_are_all_different() -> None:
    with ThreadPoolExecutor(8) as pool:
        chunks = list(pool.map(lambda _: [new_call_id() for _ in range(2000)], range(8)))
    ids = [cid for chunk in chunks for cid in chunk]
    assert len(ids) == 16_000 and len(set(ids)) == len(ids)


def test_a_forked_child_makes_other_ids_than_its_parent() -> None:
    """The parent holds part of a block when it forks; the child drops it (else both would
    hand out the same ids from it, one after the other)."""
    new_call_id()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids to the pipe, then out without any cleanup
        try:
            os.close(read_end)
            os.write(write_end, "".join(new_call_id() for _ in range(8)).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    got = b""
    while chunk := os.read(read_end, 4096):
        got += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    child = [got[i : i + 32].decode() for i in range(0, len(got), 32)]
    parent = [new_call_id() for _ in range(8)]
    assert len(child) == 8 and all(map(_valid, child))
    assert not set(child) & set(parent)
