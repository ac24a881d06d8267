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
INLINE, BUF, RTS, CELLS, SHORT = 1, 2, 3, 4, 5
SHORT_MAX = 2008
F_DATA, F_ACK, F_PUSH = 1, 2, 4
SRC_SENDER, SRC_SELF, SRC_GIVEN = 0, 2, 3
PROGRESS, FILL_BUF = 4, 8

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


def short_cell(op, data, tag=0, src=0, ctl=SRC_SENDER | PROGRESS):
    """An XSHM_PROTO_SHORT cell: its payload follows the tag."""
    hdr = struct.pack("<BBHIQQ", op, SHORT, 0, len(data), src, tag)
    return bytes([ctl]) + (hdr + data).ljust(CELL - 16, b"\0")


def cont(data, ctl=SRC_SENDER):
    """A continuation cell of an XSHM_PROTO_CELLS message."""
    body = (bytes([OP_CONT]) + bytes(7) + data).ljust(CELL - 16, b"\0")
    return bytes([ctl]) + body


def rts(pid, iovs):
    out = struct.pack("<iI", pid, len(iovs))
    for base, length in iovs:
        out += struct.pack("<QQ", base, length)
    return out.ljust(136, b"\0")


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


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
