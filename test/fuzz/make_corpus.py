#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_recv.c into test/fuzz/corpus/: one file per
protocol path, well formed (so the fuzzer starts deep in the receive path)
except where a seed exists to show one kind of corruption."""
import os
import struct

HDR, RING, POOL, NRECVS = 192, 16, 32, 8
CELL = 2048
INLINE_MAX = 1984
CELL_PAYLOAD = 2024  # of a continuation cell
CELLS_MSG_MAX = INLINE_MAX + 2 * CELL_PAYLOAD  # the longest run: 6032
OP_MSG, OP_TAGGED, OP_CHUNK, OP_ABORT, OP_ACK, OP_CONT, OP_OFFER = \
    1, 2, 3, 4, 5, 6, 7
OP_WRITE, OP_READ, OP_READ_DATA, OP_ATOMIC = 9, 10, 11, 12
INLINE, BUF, RTS, CELLS, SHORT = 1, 2, 3, 4, 5
SHORT_MAX = 2008
F_DATA, F_ACK, F_PUSH = 1, 2, 4
F_POSTED, F_SPLIT = 0x10, 0x20
SRC_SENDER, SRC_SELF, SRC_GIVEN = 0, 2, 3
PROGRESS, FILL_BUF, BORROW = 4, 8, 0x10

# The harness's registration (fuzz_recv.c): key 1, 64 KiB, by offset.
KEY, TARGET_SIZE = 1, 65536
RMA_HDR, RMA_RTS_HDR, ATOMIC_HDR = 32, 168, 24
RMA_INLINE_MAX = INLINE_MAX - RMA_HDR
U64_MAX = (1 << 64) - 1
# enum fi_op, enum fi_datatype, XSHM_ATOMIC_*
FI_SUM, FI_BOR, FI_ATOMIC_READ, FI_ATOMIC_WRITE, FI_CSWAP = 2, 6, 10, 11, 12
FI_UINT32, FI_UINT64, FI_DOUBLE = 5, 7, 9
A_WRITE, A_FETCH, A_COMPARE = 0, 1, 2

# Receive spec bits (struct fuzz_prefix.recv).
POST, TAGGED, AFTER, COMPLETION = 1, 2, 0x10, 0x80
SIZE_0, SIZE_64, SIZE_20000, SIZE_2IOV = 0, 4, 8, 12
TAG_0, TAG_1, TAG_1234, TAG_ANY = 0, 0x20, 0x40, 0x60


# struct fuzz_prefix.mode bits.
MULTI_RECV, CLAIM, CLAIM_TAGGED, CLAIM_DISCARD = 1, 2, 4, 8
PEEK_DISCARD, PEEK_TAGGED = 0x10, 0x20


def prefix(recvs=(), av=0, hdr_xor=b"", ring_xor=b"", pool_xor=b"", mode=0):
    recv = bytes(recvs) + bytes(NRECVS - len(recvs))
    return (hdr_xor.ljust(HDR, b"\0") + ring_xor.ljust(RING, b"\0") +
            pool_xor.ljust(POOL, b"\0") + recv + bytes([av, mode]))


def cell(op, proto, size, chunk, data=b"", flags=0, buf=0, tag=0, cq_data=0,
         ack_id=0, src=0, ctl=SRC_SENDER | PROGRESS):
    hdr = struct.pack("<BBHIQQQQII", op, proto, flags, chunk, src, tag, cq_data,
                      size, buf, ack_id)
    body = (hdr + data).ljust(CELL - 16, b"\0")  # between seq and claim
    return bytes([ctl]) + body


def short_cell(op, data, tag=0, src=0, ctl=SRC_SENDER | PROGRESS, flags=0):
    """An XSHM_PROTO_SHORT cell: its payload follows the tag."""
    hdr = struct.pack("<BBHIQQ", op, SHORT, flags, len(data), src, tag)
    return bytes([ctl]) + (hdr + data).ljust(CELL - 16, b"\0")


def rma_short(op, data, addr=0, aop=0, dtype=0, count=0, key=KEY,
              flags=F_POSTED, ack_id=0):
    """A write or atomic in the cell's first line (struct xshm_rma_short,
    the key in tag)."""
    head = struct.pack("<QBBHI", addr, aop, dtype, count, ack_id)
    return short_cell(op, head + data, tag=key, flags=flags)


def cont(data, ctl=SRC_SENDER):
    """A continuation cell of an XSHM_PROTO_CELLS message."""
    body = (bytes([OP_CONT]) + bytes(7) + data).ljust(CELL - 16, b"\0")
    return bytes([ctl]) + body


def rts(pid, iovs):
    out = struct.pack("<iI", pid, len(iovs))
    for base, length in iovs:
        out += struct.pack("<QQ", base, length)
    return out.ljust(136, b"\0")


def rma(addr, length, offset=0, key=KEY):
    """struct xshm_rma."""
    return struct.pack("<QQQQ", key, addr, offset, length)


def rma_cell(op, proto, size, data=b"", addr=0, offset=0, length=None,
             key=KEY, flags=F_ACK, chunk=None, **kw):
    """An RMA command on the harness's registration; its bytes follow."""
    length = size if length is None else length
    hdr = rma(addr, length, offset, key)
    if chunk is None:
        chunk = len(hdr) + len(data)
    return cell(op, proto, size, chunk, hdr + data, flags=flags, **kw)


def rma_rts_cell(op, size, pid=0, addr=0, flags=F_ACK, **kw):
    """An RMA RTS: the initiator's bytes at source[0x1000] (pid 0: us)."""
    data = rma(addr, size) + rts(pid, [(0x1000, size)])
    return cell(op, RTS, size, RMA_RTS_HDR, data, flags=flags, **kw)


def atomic_cell(aop, dtype, kind, operands=b"", compares=b"", count=1,
                elem=8, addr=0, key=KEY, flags=F_ACK, size=None, chunk=None,
                **kw):
    """An XSHM_OP_ATOMIC cell: struct xshm_atomic, operands, compares."""
    data = struct.pack("<QQBBBBI", key, addr, aop, dtype, kind, 0, count)
    data += operands + compares
    size = count * elem if size is None else size
    chunk = len(data) if chunk is None else chunk
    return cell(OP_ATOMIC, INLINE, size, chunk, data, flags=flags, **kw)


def u64s(*values):
    return b"".join(struct.pack("<Q", v) for v in values)


def payload(n, seed=0):
    return bytes((seed + i) % 251 for i in range(n))


SEEDS = {
    "short_tagged_matched": prefix([POST | TAGGED | SIZE_64 | TAG_1]) +
    short_cell(OP_TAGGED, payload(8), tag=1),
    "short_msg_unexpected": prefix([POST | SIZE_20000 | AFTER]) +
    short_cell(OP_MSG, payload(SHORT_MAX)),
    "inline_tagged_matched": prefix([POST | TAGGED | SIZE_64 | TAG_1]) +
    cell(OP_TAGGED, INLINE, 48, 48, payload(48), tag=1),
    "inline_msg_unexpected": prefix([POST | SIZE_64 | AFTER]) +
    cell(OP_MSG, INLINE, 64, 64, payload(64), flags=F_DATA, cq_data=7),
    "inline_truncated": prefix([POST | SIZE_64]) +
    cell(OP_MSG, INLINE, INLINE_MAX, INLINE_MAX, payload(INLINE_MAX)),
    "buf_chunks_matched": prefix([POST | TAGGED | SIZE_20000 | TAG_1234]) +
    cell(OP_TAGGED, BUF, 20000, 16384, payload(16), buf=0, tag=0x1234,
         ctl=SRC_SENDER | FILL_BUF) +
    cell(OP_CHUNK, BUF, 20000, 3616, payload(16, 3), buf=1,
         ctl=SRC_SENDER | FILL_BUF | PROGRESS),
    "buf_chunks_unexpected_ack": prefix([POST | SIZE_2IOV | AFTER]) +
    cell(OP_MSG, BUF, 20000, 16384, buf=2, flags=F_ACK, ack_id=9) +
    cell(OP_CHUNK, INLINE, 20000, INLINE_MAX, payload(INLINE_MAX)) +
    cell(OP_CHUNK, BUF, 20000, 20000 - 16384 - INLINE_MAX, buf=3),
    "cells_tagged_matched": prefix([POST | TAGGED | SIZE_20000 | TAG_1]) +
    cell(OP_TAGGED, CELLS, 2500, 2500, payload(INLINE_MAX), tag=1, ctl=SRC_SENDER) +
    cont(payload(2500 - INLINE_MAX, 1), ctl=SRC_SENDER | PROGRESS),
    "cells_msg_unexpected": prefix([POST | SIZE_20000 | AFTER]) +
    cell(OP_MSG, CELLS, 4096, 4096, payload(INLINE_MAX), ctl=SRC_SENDER) +
    cont(payload(CELL_PAYLOAD, 1)) +
    cont(payload(4096 - INLINE_MAX - CELL_PAYLOAD, 2), ctl=SRC_SENDER | PROGRESS),
    "cells_longest_run": prefix([POST | TAGGED | SIZE_20000 | TAG_1]) +
    cell(OP_TAGGED, CELLS, CELLS_MSG_MAX, CELLS_MSG_MAX, payload(INLINE_MAX),
         tag=1, ctl=SRC_SENDER) +
    cont(payload(CELL_PAYLOAD, 1)) +
    cont(payload(CELL_PAYLOAD, 2), ctl=SRC_SENDER | PROGRESS),
    # one byte longer than a run may be: dropped as malformed
    "cells_run_too_long": prefix([POST | SIZE_20000 | COMPLETION]) +
    cell(OP_MSG, CELLS, CELLS_MSG_MAX + 1, CELLS_MSG_MAX + 1,
         payload(INLINE_MAX), ctl=SRC_SENDER) +
    cont(payload(CELL_PAYLOAD, 1)) +
    cont(payload(CELL_PAYLOAD, 2)) +
    cont(payload(1, 3), ctl=SRC_SENDER | PROGRESS),
    "abort_mid_message": prefix([POST | TAGGED | SIZE_20000 | TAG_ANY]) +
    cell(OP_TAGGED, BUF, 20000, 16384, buf=0, tag=5) +
    cell(OP_ABORT, INLINE, 0, 0),
    "rts_tagged_ack": prefix([POST | TAGGED | SIZE_2IOV | TAG_1], av=1) +
    cell(OP_TAGGED, RTS, 30100, 136, rts(0, [(0x1000, 30000), (0x2000, 100)]),
         tag=1, flags=F_ACK, ack_id=3),
    "rts_push_tagged": prefix([POST | TAGGED | SIZE_20000 | TAG_1], av=1) +
    cell(OP_TAGGED, RTS, 20000, 136, rts(0, [(0x1000, 20000)]),
         tag=1, flags=F_ACK | F_PUSH, ack_id=5),
    # an offer of the receiver's buffers for a send this endpoint never made
    "offer_for_no_send": prefix() +
    cell(OP_OFFER, RTS, 300000, 136, rts(0, [(0x1000, 300000)]), tag=1,
         ack_id=1),
    "offer_too_many_iovs": prefix() +
    cell(OP_OFFER, RTS, 9, 136, rts(0, [(0x1000, 1)] * 8)[:4] +
         struct.pack("<I", 9) + rts(0, [(0x1000, 1)] * 8)[8:], ack_id=1),
    "ack_from_sender": prefix() +
    cell(OP_ACK, INLINE, 0, 0, tag=0, ack_id=1),
    "self_sender_ack": prefix([POST | SIZE_0]) +
    cell(OP_MSG, INLINE, 0, 0, flags=F_ACK, ack_id=4, ctl=SRC_SELF | PROGRESS),
    "unknown_sender": prefix([POST | SIZE_64 | COMPLETION]) +
    cell(OP_MSG, INLINE, 8, 8, payload(8), src=0x1234, ctl=SRC_GIVEN),
    "bad_magic_sender": prefix([POST | TAGGED | SIZE_64 | TAG_ANY], av=2,
                               hdr_xor=b"\xff") +
    cell(OP_TAGGED, INLINE, 8, 8, payload(8), flags=F_ACK, ack_id=2),
    "bad_ring_sender": prefix([POST | SIZE_64], ring_xor=b"\x03") +
    cell(OP_MSG, INLINE, 8, 8, payload(8), flags=F_ACK, ack_id=2),
    "bad_pool_sender": prefix([POST | SIZE_64], pool_xor=b"\x10") +
    cell(OP_MSG, INLINE, 8, 8, payload(8), flags=F_ACK, ack_id=2),
    "multi_recv": prefix(mode=MULTI_RECV) +
    cell(OP_MSG, INLINE, 100, 100, payload(100)) +
    cell(OP_MSG, BUF, 3000, 3000, buf=1, ctl=SRC_SENDER | FILL_BUF | PROGRESS),
    "peek_claim_tagged": prefix(mode=CLAIM | CLAIM_TAGGED) +
    cell(OP_TAGGED, BUF, 20000, 16384, buf=0, tag=9) +
    cell(OP_CHUNK, BUF, 20000, 3616, buf=1),
    "peek_claim_discard_ack": prefix(mode=CLAIM | CLAIM_DISCARD) +
    cell(OP_MSG, INLINE, 30, 30, payload(30), flags=F_ACK, ack_id=6),
    "peek_discard_tagged": prefix(mode=PEEK_DISCARD | PEEK_TAGGED) +
    cell(OP_TAGGED, RTS, 100, 136, rts(0, [(0, 100)]), tag=3, flags=F_ACK,
         ack_id=8),
    "stray_chunk_bad_index": prefix() +
    cell(OP_CHUNK, INLINE, 10, 10, payload(10)) +
    cell(OP_MSG, BUF, 100, 100, buf=0xffffffff),
}

# RMA and atomic target paths; the sender is in the AV (av=1) unless said.
RMA_SEEDS = {
    "rma_write_inline_posted": prefix(av=1) +
    rma_cell(OP_WRITE, INLINE, 64, payload(64), addr=0x100, flags=F_POSTED),
    "rma_write_inline_acked_cq_data": prefix(av=1) +
    rma_cell(OP_WRITE, INLINE, 64, payload(64), flags=F_ACK | F_DATA,
             cq_data=5, ack_id=1),
    "rma_write_inline_two_pieces": prefix(av=1) +
    rma_cell(OP_WRITE, INLINE, 3000, payload(RMA_INLINE_MAX), addr=0x2000,
             length=RMA_INLINE_MAX, flags=0, ctl=SRC_SENDER) +
    rma_cell(OP_WRITE, INLINE, 3000, payload(3000 - RMA_INLINE_MAX, 1),
             addr=0x2000, offset=RMA_INLINE_MAX,
             length=3000 - RMA_INLINE_MAX, flags=F_ACK, ack_id=2),
    "rma_write_buf_posted": prefix(av=1) +
    rma_cell(OP_WRITE, BUF, 4096, flags=F_POSTED,
             ctl=SRC_SENDER | BORROW | FILL_BUF | PROGRESS),
    "rma_write_buf_acked": prefix(av=1) +
    rma_cell(OP_WRITE, BUF, 16384, addr=0x4000, flags=F_ACK, ack_id=3,
             ctl=SRC_SENDER | BORROW | FILL_BUF | PROGRESS),
    # a buffer the sender does not hold: refused, nothing written
    "rma_write_buf_not_borrowed": prefix(av=1) +
    rma_cell(OP_WRITE, BUF, 4096, flags=F_ACK, buf=1, ack_id=3,
             ctl=SRC_SENDER | FILL_BUF | PROGRESS),
    "rma_read_inline": prefix(av=1) +
    rma_cell(OP_READ, INLINE, 256, addr=0x100, ack_id=4),
    # more than a cell: the reply borrows the sender's buffers
    "rma_read_inline_buffered": prefix(av=1) +
    rma_cell(OP_READ, INLINE, 40000, ack_id=5),
    # three whole-registration reads in one progress: the first takes the
    # sender's four buffers, the next two fill its 64-cell ring and queue
    "rma_read_sender_ring_full": prefix(av=1) +
    rma_cell(OP_READ, INLINE, TARGET_SIZE, ack_id=6, ctl=SRC_SENDER) +
    rma_cell(OP_READ, INLINE, TARGET_SIZE, ack_id=7, ctl=SRC_SENDER) +
    rma_cell(OP_READ, INLINE, TARGET_SIZE, ack_id=8),
    # the sender region is refused: no ring to answer into
    "rma_read_bad_ring_sender": prefix(av=1, ring_xor=b"\x03") +
    rma_cell(OP_READ, INLINE, 64, ack_id=9),
    # not in the AV: admitted all the same without auth keys, answered
    "rma_read_not_in_av": prefix() +
    rma_cell(OP_READ, INLINE, 64, ack_id=9),
    "rma_read_from_self": prefix() +
    rma_cell(OP_READ, INLINE, 64, ack_id=9, ctl=SRC_SELF | PROGRESS),
    "rma_write_rts": prefix(av=1) +
    rma_rts_cell(OP_WRITE, 8192, addr=0x1000, ack_id=10),
    "rma_read_rts": prefix(av=1) +
    rma_rts_cell(OP_READ, 8192, ack_id=11),
    # a pid other than the sender region's: refused before any copy
    "rma_write_rts_wrong_pid": prefix(av=1) +
    rma_rts_cell(OP_WRITE, 4096, pid=1, ack_id=12),
    # split offers of generation 0, the fresh sender header's
    "rma_write_split": prefix(av=1) +
    rma_rts_cell(OP_WRITE, TARGET_SIZE, flags=F_SPLIT),
    "rma_read_split": prefix(av=1) +
    rma_rts_cell(OP_READ, 32768, flags=F_SPLIT, tag=0),
    "rma_split_stale_generation": prefix(av=1) +
    rma_rts_cell(OP_WRITE, 4096, flags=F_SPLIT, tag=7),
    "rma_split_with_ack": prefix(av=1) +
    rma_rts_cell(OP_WRITE, 4096, flags=F_SPLIT | F_ACK, ack_id=13),
    "read_data_for_no_read": prefix(av=1) +
    cell(OP_READ_DATA, INLINE, 64, 64, payload(64), ack_id=14),
    "read_data_buffered_for_no_read": prefix(av=1) +
    cell(OP_READ_DATA, BUF, 20000, 0, tag=0, ack_id=14,
         ctl=SRC_SENDER | BORROW | PROGRESS),
    "short_write_posted": prefix(av=1) +
    rma_short(OP_WRITE, payload(16), addr=0x40),
    "short_write_unposted": prefix(av=1) +
    rma_short(OP_WRITE, payload(8), flags=F_ACK),
    "short_write_too_long": prefix(av=1) +
    rma_short(OP_WRITE, payload(17)),
    "short_write_past_end": prefix(av=1) +
    rma_short(OP_WRITE, payload(16), addr=TARGET_SIZE - 8),
    "short_atomic_sum": prefix(av=1) +
    rma_short(OP_ATOMIC, u64s(5, 6), addr=8, aop=FI_SUM, dtype=FI_UINT64,
              count=2),
    "short_atomic_count_0": prefix(av=1) +
    rma_short(OP_ATOMIC, b"", aop=FI_SUM, dtype=FI_UINT64, count=0),
    "short_atomic_read": prefix(av=1) +
    rma_short(OP_ATOMIC, u64s(1), aop=FI_ATOMIC_READ, dtype=FI_UINT64,
              count=1),
    "short_atomic_fetch_sum": prefix(av=1) +
    rma_short(OP_ATOMIC, u64s(3), addr=16, aop=FI_SUM, dtype=FI_UINT64,
              count=1, flags=F_ACK, ack_id=21),
    "short_atomic_fetch_read": prefix(av=1) +
    rma_short(OP_ATOMIC, b"", aop=FI_ATOMIC_READ, dtype=FI_UINT64,
              count=2, flags=F_ACK, ack_id=22),
    "short_atomic_fetch_posted_and_acked": prefix(av=1) +
    rma_short(OP_ATOMIC, u64s(3), aop=FI_SUM, dtype=FI_UINT64,
              count=1, flags=F_ACK | F_POSTED, ack_id=23),
    "short_atomic_bad_pair": prefix(av=1) +
    rma_short(OP_ATOMIC, u64s(1), aop=FI_BOR, dtype=FI_DOUBLE, count=1),
    "short_atomic_len_mismatch": prefix(av=1) +
    rma_short(OP_ATOMIC, u64s(1), aop=FI_SUM, dtype=FI_UINT64, count=2),
    "atomic_write_posted": prefix(av=1) +
    atomic_cell(FI_SUM, FI_UINT64, A_WRITE, u64s(3), addr=8, flags=F_POSTED),
    "atomic_write_acked": prefix(av=1) +
    atomic_cell(FI_ATOMIC_WRITE, FI_UINT32, A_WRITE,
                struct.pack("<4I", 1, 2, 3, 4), count=4, elem=4, ack_id=15),
    "atomic_fetch_sum": prefix(av=1) +
    atomic_cell(FI_SUM, FI_UINT64, A_FETCH, u64s(1, 2), count=2, ack_id=16),
    "atomic_fetch_read": prefix(av=1) +
    atomic_cell(FI_ATOMIC_READ, FI_DOUBLE, A_FETCH, count=3, addr=64,
                ack_id=17),
    "atomic_compare_swap": prefix(av=1) +
    atomic_cell(FI_CSWAP, FI_UINT64, A_COMPARE, u64s(7, 8), u64s(0, 1),
                count=2, ack_id=18),
    "atomic_largest": prefix(av=1) +
    atomic_cell(FI_CSWAP, FI_UINT64, A_COMPARE, u64s(*range(120)),
                u64s(*([0] * 120)), count=120, ack_id=19),
    # malformed: each is refused by its checks and acked with an error
    "rma_bad_key": prefix(av=1) +
    rma_cell(OP_WRITE, INLINE, 8, payload(8), key=2, ack_id=20),
    "rma_range_past_end": prefix(av=1) +
    rma_cell(OP_READ, INLINE, 1000, addr=TARGET_SIZE - 999, ack_id=21),
    "rma_addr_wraps": prefix(av=1) +
    rma_cell(OP_WRITE, INLINE, 64, payload(64), addr=U64_MAX - 7, ack_id=22),
    # offset + len wraps to msg_size: passes the posted sum, not the piece
    "rma_offset_len_wraps": prefix(av=1) +
    rma_cell(OP_WRITE, INLINE, 64, payload(96), offset=(1 << 64) - 32,
             length=96, flags=F_POSTED),
    "rma_chunk_too_short": prefix(av=1) +
    rma_cell(OP_WRITE, INLINE, 8, chunk=16, ack_id=23),
    "rma_rts_chunk_too_short": prefix(av=1) +
    rma_cell(OP_WRITE, RTS, 64, chunk=RMA_HDR + 8, ack_id=23),
    "rma_read_posted": prefix(av=1) +
    rma_cell(OP_READ, INLINE, 64, flags=F_POSTED),
    "rma_posted_and_acked": prefix(av=1) +
    rma_cell(OP_WRITE, INLINE, 8, payload(8), flags=F_POSTED | F_ACK,
             ack_id=24),
    "atomic_posted_fetch": prefix(av=1) +
    atomic_cell(FI_SUM, FI_UINT64, A_FETCH, u64s(1), flags=F_POSTED),
    "atomic_count_zero": prefix(av=1) +
    atomic_cell(FI_SUM, FI_UINT64, A_WRITE, count=0, ack_id=25),
    "atomic_too_many": prefix(av=1) +
    atomic_cell(FI_SUM, FI_UINT64, A_WRITE, u64s(*range(121)), count=121,
                ack_id=26),
    "atomic_unsupported_pair": prefix(av=1) +
    atomic_cell(FI_BOR, FI_DOUBLE, A_WRITE, u64s(1), ack_id=27),
    "atomic_compare_as_write": prefix(av=1) +
    atomic_cell(FI_CSWAP, FI_UINT64, A_WRITE, u64s(1), ack_id=28),
    "atomic_chunk_too_short": prefix(av=1) +
    atomic_cell(FI_SUM, FI_UINT64, A_WRITE, chunk=ATOMIC_HDR - 8, ack_id=29),
    "atomic_bad_key_past_end": prefix(av=1) +
    atomic_cell(FI_SUM, FI_UINT64, A_WRITE, u64s(1), key=9, ack_id=30) +
    atomic_cell(FI_SUM, FI_UINT64, A_WRITE, u64s(1), addr=TARGET_SIZE - 4,
                ack_id=31),
}
SEEDS.update(RMA_SEEDS)


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
