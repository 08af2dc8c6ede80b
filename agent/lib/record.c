// SPDX-License-Identifier: GPL-2.0
/*
 * Kafka RecordBatch v2 encoder and decoder (see record.h for the layout).
 *
 * The encoder lays records out as Kafka's MemoryRecordsBuilder does for an
 * uncompressed batch: baseTimestamp is the first record's timestamp,
 * offset deltas count from 0, baseOffset is 0 and partitionLeaderEpoch -1
 * (the leader stamps both, outside the CRC). The decoder checks what a
 * Kafka consumer checks: magic, CRC-32C, and the framing of every record.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

/* ---- CRC-32C (Castagnoli, reflected polynomial 0x82f63b78) ------------- */

static uint32_t crc_table[8][256];
static bool crc_ready;

static void crc_init(void)
{
	uint32_t c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78U : c >> 1;
		crc_table[0][i] = c;
	}
	/* slicing by 8: table[k][i] is i followed by k zero bytes */
	for (i = 0; i < 256; i++) {
		c = crc_table[0][i];
		for (k = 1; k < 8; k++) {
			c = crc_table[0][c & 0xff] ^ (c >> 8);
			crc_table[k][i] = c;
		}
	}
	crc_ready = true;
}

/*
 * CRC-32C of @buf, continuing from @crc (0 to start), with the usual
 * pre- and post-inversion: krep_crc32c(0, "123456789", 9) == 0xe3069283.
 */
uint32_t krep_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!crc_ready)
		crc_init();
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
				     (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);

		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][p[4]] ^ crc_table[2][p[5]] ^
		      crc_table[1][p[6]] ^ crc_table[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ---- big-endian fields -------------------------------------------------- */

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, v);
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)p[0] << 8 | p[1];
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* ---- zigzag varints ------------------------------------------------------ */

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

size_t krep_varint_size(int64_t v)
{
	uint64_t u = zigzag(v);
	size_t n = 1;

	while (u >= 0x80) {
		u >>= 7;
		n++;
	}
	return n;
}

size_t krep_varint_put(uint8_t *p, int64_t v)
{
	uint64_t u = zigzag(v);
	size_t n = 0;

	while (u >= 0x80) {
		p[n++] = (u & 0x7f) | 0x80;
		u >>= 7;
	}
	p[n++] = u;
	return n;
}

/*
 * Kafka's readVarint/readVarlong: at most 5 (int32) or 10 (int64) bytes.
 * An int32 varint's value must fit in 32 bits before unzigzagging.
 */
int krep_varint_get(const uint8_t **p, const uint8_t *end, int max_bytes,
		    int64_t *v)
{
	const uint8_t *q = *p;
	uint64_t raw = 0;
	int i;

	for (i = 0; i < max_bytes; i++) {
		if (q >= end)
			return -EINVAL;
		raw |= (uint64_t)(*q & 0x7f) << (7 * i);
		if (!(*q++ & 0x80)) {
			if (max_bytes <= 5 && raw > UINT32_MAX)
				return -EINVAL;
			*v = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
			*p = q;
			return 0;
		}
	}
	return -EINVAL;
}

#define VARINT_MAX	5
#define VARLONG_MAX	10

/* ---- encoder ------------------------------------------------------------- */

void krep_batch_enc_init(struct krep_batch_enc *e, bool transactional,
			 int64_t producer_id, int16_t producer_epoch,
			 int32_t base_sequence)
{
	memset(e, 0, sizeof(*e));
	e->attributes = transactional ? KREP_RB_ATTR_TRANSACTIONAL : 0;
	e->producer_id = producer_id;
	e->producer_epoch = producer_epoch;
	krep_batch_enc_reset(e, base_sequence);
}

void krep_batch_enc_reset(struct krep_batch_enc *e, int32_t base_sequence)
{
	e->len = KREP_RB_HDR_LEN;
	e->count = 0;
	e->base_ts = 0;
	e->max_ts = 0;
	e->base_sequence = base_sequence;
}

void krep_batch_enc_free(struct krep_batch_enc *e)
{
	free(e->buf);
	e->buf = NULL;
	e->cap = 0;
}

static size_t bytes_size(const struct krep_bytes *b)
{
	return krep_varint_size(b->len < 0 ? -1 : b->len) +
	       (b->len > 0 ? (size_t)b->len : 0);
}

/* The record's bytes after its length field; 0 if it cannot be encoded. */
static size_t body_size(const struct krep_batch_enc *e,
			const struct krep_record *r, int64_t *ts_delta)
{
	int64_t base = e->count ? e->base_ts : r->timestamp;
	size_t n, i;

	if (__builtin_sub_overflow(r->timestamp, base, ts_delta) ||
	    r->key.len < -1 || r->value.len < -1 || r->nheaders > INT32_MAX)
		return 0;
	n = 1 + krep_varint_size(*ts_delta) + krep_varint_size(e->count) +
	    bytes_size(&r->key) + bytes_size(&r->value) +
	    krep_varint_size(r->nheaders);
	for (i = 0; i < r->nheaders; i++) {
		const struct krep_header *h = &r->headers[i];

		if (h->key.len < 0 || h->value.len < -1)
			return 0;
		n += bytes_size(&h->key) + bytes_size(&h->value);
	}
	return n <= INT32_MAX ? n : 0;
}

int64_t krep_batch_enc_size_with(const struct krep_batch_enc *e,
				 const struct krep_record *r)
{
	int64_t ts_delta;
	size_t body;

	if (e->count == INT32_MAX)
		return -1;
	body = body_size(e, r, &ts_delta);
	if (!body)
		return -1;
	return e->len + krep_varint_size(body) + body;
}

static uint8_t *put_bytes(uint8_t *p, const struct krep_bytes *b)
{
	p += krep_varint_put(p, b->len < 0 ? -1 : b->len);
	if (b->len > 0) {
		memcpy(p, b->data, b->len);
		p += b->len;
	}
	return p;
}

int krep_batch_enc_add(struct krep_batch_enc *e, const struct krep_record *r)
{
	int64_t size = krep_batch_enc_size_with(e, r), ts_delta;
	size_t body = body_size(e, r, &ts_delta), i;
	uint8_t *p;

	if (size < 0 || size - KREP_RB_LOG_OVERHEAD > INT32_MAX)
		return -EINVAL;
	if ((size_t)size > e->cap) {
		size_t cap = e->cap ? e->cap : 4096;
		uint8_t *nb;

		while (cap < (size_t)size)
			cap *= 2;
		nb = realloc(e->buf, cap);
		if (!nb)
			return -ENOMEM;
		e->buf = nb;
		e->cap = cap;
	}
	p = e->buf + e->len;
	p += krep_varint_put(p, body);
	*p++ = 0;				/* record attributes */
	p += krep_varint_put(p, ts_delta);
	p += krep_varint_put(p, e->count);	/* offset delta */
	p = put_bytes(p, &r->key);
	p = put_bytes(p, &r->value);
	p += krep_varint_put(p, r->nheaders);
	for (i = 0; i < r->nheaders; i++) {
		p = put_bytes(p, &r->headers[i].key);
		p = put_bytes(p, &r->headers[i].value);
	}
	if (!e->count) {
		e->base_ts = r->timestamp;
		e->max_ts = r->timestamp;
	} else if (r->timestamp > e->max_ts) {
		e->max_ts = r->timestamp;
	}
	e->len = p - e->buf;
	e->count++;
	return 0;
}

const uint8_t *krep_batch_enc_finish(struct krep_batch_enc *e, size_t *len)
{
	uint8_t *h = e->buf;

	if (!e->count)
		return NULL;
	put_be64(h, 0);					/* baseOffset */
	put_be32(h + KREP_RB_OFF_LENGTH, e->len - KREP_RB_LOG_OVERHEAD);
	put_be32(h + KREP_RB_OFF_EPOCH, (uint32_t)-1);	/* leader epoch */
	h[KREP_RB_OFF_MAGIC] = KREP_RB_MAGIC_V2;
	put_be16(h + KREP_RB_OFF_ATTRS, e->attributes);
	put_be32(h + 23, e->count - 1);			/* lastOffsetDelta */
	put_be64(h + 27, e->base_ts);
	put_be64(h + 35, e->max_ts);
	put_be64(h + 43, e->producer_id);
	put_be16(h + 51, e->producer_epoch);
	put_be32(h + 53, e->base_sequence);
	put_be32(h + 57, e->count);
	put_be32(h + KREP_RB_OFF_CRC,
		 krep_crc32c(0, h + KREP_RB_OFF_ATTRS,
			     e->len - KREP_RB_OFF_ATTRS));
	*len = e->len;
	return e->buf;
}

/* ---- decoder ------------------------------------------------------------- */

void krep_batch_iter_init(struct krep_batch_iter *it, const void *buf,
			  size_t len)
{
	it->p = buf;
	it->end = it->p + len;
	it->partial = false;
}

int krep_batch_next(struct krep_batch_iter *it, struct krep_batch *b,
		    const char **why)
{
	size_t left = it->end - it->p;
	const uint8_t *h = it->p;
	int32_t length;

	*why = NULL;
	if (!left)
		return 0;
	if (left < KREP_RB_LOG_OVERHEAD) {
		it->partial = true;
		it->p = it->end;
		return 0;
	}
	length = get_be32(h + KREP_RB_OFF_LENGTH);
	if (length < 0) {
		*why = "negative batch length";
		return -EINVAL;
	}
	if ((size_t)length > left - KREP_RB_LOG_OVERHEAD) {
		it->partial = true;
		it->p = it->end;
		return 0;
	}
	memset(b, 0, sizeof(*b));
	b->data = h;
	b->size = (size_t)length + KREP_RB_LOG_OVERHEAD;
	b->base_offset = get_be64(h);
	b->length = length;
	it->p += b->size;
	if (b->size > KREP_RB_OFF_MAGIC) {
		b->magic = h[KREP_RB_OFF_MAGIC];
		if (b->magic != KREP_RB_MAGIC_V2) {
			*why = "not a RecordBatch v2 (magic 2)";
			return -EPROTONOSUPPORT;
		}
	}
	if (b->size < KREP_RB_HDR_LEN) {
		*why = "batch shorter than its header";
		it->p = h;
		return -EINVAL;
	}
	b->leader_epoch = get_be32(h + KREP_RB_OFF_EPOCH);
	b->crc = get_be32(h + KREP_RB_OFF_CRC);
	b->attributes = get_be16(h + KREP_RB_OFF_ATTRS);
	b->last_offset_delta = get_be32(h + 23);
	b->base_ts = get_be64(h + 27);
	b->max_ts = get_be64(h + 35);
	b->producer_id = get_be64(h + 43);
	b->producer_epoch = get_be16(h + 51);
	b->base_sequence = get_be32(h + 53);
	b->count = get_be32(h + 57);
	if (b->crc != krep_crc32c(0, h + KREP_RB_OFF_ATTRS,
				  b->size - KREP_RB_OFF_ATTRS)) {
		*why = "batch CRC-32C mismatch";
		return -EBADMSG;
	}
	return 1;
}

void krep_record_iter_init(struct krep_record_iter *it,
			   const struct krep_batch *b)
{
	it->b = b;
	it->p = b->data + KREP_RB_HDR_LEN;
	it->end = b->data + b->size;
	it->index = 0;
}

/* A nullable byte string of the record ending at @end. */
static int get_bytes(const uint8_t **p, const uint8_t *end, bool nullable,
		     struct krep_bytes *out)
{
	int64_t n;

	if (krep_varint_get(p, end, VARINT_MAX, &n))
		return -EINVAL;
	if (n == -1 && nullable) {
		out->data = NULL;
		out->len = -1;
		return 0;
	}
	if (n < 0 || n > end - *p)
		return -EINVAL;
	out->data = *p;
	out->len = n;
	*p += n;
	return 0;
}

int krep_record_next(struct krep_record_iter *it, struct krep_record_view *r,
		     const char **why)
{
	const uint8_t *p = it->p, *rend;
	struct krep_bytes hk, hv;
	int64_t len, ts_delta, off_delta, nh, i;

	*why = NULL;
	if (it->index >= it->b->count) {
		if (p != it->end) {
			*why = "bytes after the last record";
			return -EINVAL;
		}
		return 0;
	}
	if (krep_varint_get(&p, it->end, VARINT_MAX, &len) || len < 1 ||
	    len > it->end - p) {
		*why = p >= it->end ? "fewer records than the record count" :
				      "bad record length";
		return -EINVAL;
	}
	rend = p + len;
	r->attributes = *p++;
	if (krep_varint_get(&p, rend, VARLONG_MAX, &ts_delta) ||
	    krep_varint_get(&p, rend, VARINT_MAX, &off_delta) ||
	    get_bytes(&p, rend, true, &r->key) ||
	    get_bytes(&p, rend, true, &r->value) ||
	    krep_varint_get(&p, rend, VARINT_MAX, &nh) || nh < 0) {
		*why = "malformed record";
		return -EINVAL;
	}
	r->headers = p;
	for (i = 0; i < nh; i++) {
		if (get_bytes(&p, rend, false, &hk) ||
		    get_bytes(&p, rend, true, &hv)) {
			*why = "malformed record header";
			return -EINVAL;
		}
	}
	if (p != rend) {
		*why = "record length does not match its fields";
		return -EINVAL;
	}
	r->headers_end = rend;
	r->nheaders = nh;
	r->offset = it->b->base_offset + off_delta;
	r->timestamp = (int64_t)((uint64_t)it->b->base_ts + (uint64_t)ts_delta);
	it->p = rend;
	it->index++;
	return 1;
}

void krep_header_iter_init(struct krep_header_iter *it,
			   const struct krep_record_view *r)
{
	it->p = r->headers;
	it->end = r->headers_end;
	it->left = r->nheaders;
}

int krep_header_next(struct krep_header_iter *it, struct krep_header *h)
{
	/* krep_record_next() has checked the framing */
	if (it->left <= 0 || get_bytes(&it->p, it->end, false, &h->key) ||
	    get_bytes(&it->p, it->end, true, &h->value))
		return 0;
	it->left--;
	return 1;
}

int krep_control_type(const struct krep_record_view *r)
{
	if (r->key.len < 4)
		return -1;
	return (int16_t)get_be16(r->key.data + 2);
}
