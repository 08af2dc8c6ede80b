# SPDX-License-Identifier: GPL-2.0
"""krep_record.py - Kafka RecordBatch v2, as the Python selftest helpers
build and read it (repl_helper.py, fault_helper.py).

  crc32c(data)          CRC-32C (Castagnoli), as a batch's crc field holds it
  varlong(v)            a zigzag varint
  varint(buf, off)      the zigzag varint at @off: (value, next offset)
  batch(value)          a batch of one record: null key, @value, no header
  batches(recs)         the batches of concatenated KREP_A_RECORDS
  batch_values(b, out)  the values of the records of one batch

No compression, magic 2 only. log_test.c builds and reads its own batches
in C (with a key, headers, transactions); the CLI has agent/record.c.
"""

import struct
import time

HDR_LEN = 61			# baseOffset .. recordCount
ATTR_CONTROL = 0x20


def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_T = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varlong(v):
    v = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(buf, off):
    shift = val = 0
    while True:
        b = buf[off]
        off += 1
        val |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    return (val >> 1) ^ -(val & 1), off


def batch(value, pid=-1, epoch=-1, seq=-1):
    """One record, @value with a null key and no header, timestamped now;
    of producer @pid (epoch, base sequence) when given."""
    ts = int(time.time() * 1000)
    rec = (b"\0" + varlong(0) + varlong(0) + varlong(-1) +
           varlong(len(value)) + value + varlong(0))
    rec = varlong(len(rec)) + rec
    after_crc = struct.pack(">hiqqqhii", 0, 0, ts, ts, pid, epoch, seq,
                            1) + rec
    crc = crc32c(after_crc)
    head = struct.pack(">qiiBI", 0, 4 + 1 + 4 + len(after_crc), -1, 2, crc)
    return head + after_crc


def batches(recs):
    """(base offset, batch) for each batch of @recs, in order. A batch cut
    short comes as it is, one of a negative length as its 12 bytes of
    baseOffset and batchLength; either is the last."""
    pos = 0
    while pos < len(recs):
        base, blen = struct.unpack_from(">qi", recs, pos)
        b = recs[pos:pos + 12 + max(blen, 0)]
        yield base, b
        if blen < 0 or len(b) < 12 + blen:
            return
        pos += len(b)


def batch_values(b, values):
    """Append the values of one RecordBatch v2 to @values; its count."""
    attributes = struct.unpack_from(">h", b, 21)[0]
    if attributes & 7:
        raise ValueError("compressed batch")
    count = struct.unpack_from(">i", b, 57)[0]
    if attributes & ATTR_CONTROL:	# control batch: no user records
        return count
    off = HDR_LEN
    for _ in range(count):
        length, off = varint(b, off)
        end = off + length
        off += 1				# attributes
        _, off = varint(b, off)		# timestamp delta
        _, off = varint(b, off)		# offset delta
        klen, off = varint(b, off)
        off += max(klen, 0)
        vlen, off = varint(b, off)
        values.append(b[off:off + vlen] if vlen >= 0 else b"")
        off = end
    return count
