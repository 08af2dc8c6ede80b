// SPDX-License-Identifier: GPL-2.0
/*
 * krep_batch - Kafka RecordBatch v2 built by hand for the C selftests.
 * See krep_batch.h.
 */
#include <stdlib.h>
#include <string.h>

#include "krep_batch.h"
#include "krep_nl.h"

static __u32 crc32c_table[256];

__u32 crc32c(const __u8 *p, size_t n)
{
	__u32 c = ~0U;

	if (!crc32c_table[1]) {
		__u32 i, k, v;

		for (i = 0; i < 256; i++) {
			v = i;
			for (k = 0; k < 8; k++)
				v = v & 1 ? (v >> 1) ^ 0x82F63B78U : v >> 1;
			crc32c_table[i] = v;
		}
	}
	while (n--)
		c = crc32c_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

__u8 *put_varlong(__u8 *p, __s64 v)
{
	__u64 z = ((__u64)v << 1) ^ (__u64)(v >> 63);

	while (z >= 0x80) {
		*p++ = (z & 0x7f) | 0x80;
		z >>= 7;
	}
	*p++ = z;
	return p;
}

__u8 *put_bytes(__u8 *p, const void *d, int len)
{
	p = put_varlong(p, len);
	if (len > 0) {
		memcpy(p, d, len);
		p += len;
	}
	return p;
}

size_t batch_build(__u8 *buf, size_t cap, const struct rec *recs, int n,
		   const struct batch_opts *o)
{
	__s64 base_ts = recs[0].ts, max_ts = recs[0].ts;
	__u8 *p = buf + RB_HDR_LEN, *body;
	static __u8 tmp[NLA_PAYLOAD_MAX + 64];
	int i;

	for (i = 0; i < n; i++)
		if (recs[i].ts > max_ts)
			max_ts = recs[i].ts;
	for (i = 0; i < n; i++) {
		const struct rec *r = &recs[i];
		size_t blen;

		body = tmp;
		*body++ = 0;	/* attributes */
		body = put_varlong(body, r->ts - base_ts);
		body = put_varlong(body, i);
		body = r->key ? put_bytes(body, r->key, r->klen) :
				put_varlong(body, -1);
		body = r->value ? put_bytes(body, r->value, r->vlen) :
				  put_varlong(body, -1);
		body = put_varlong(body, r->hkey ? 1 : 0);
		if (r->hkey) {
			body = put_bytes(body, r->hkey, strlen(r->hkey));
			body = r->hval ? put_bytes(body, r->hval, strlen(r->hval)) :
					 put_varlong(body, -1);
		}
		blen = body - tmp;
		if ((size_t)(p - buf) + blen + 10 > cap)
			abort();
		p = put_varlong(p, blen);
		memcpy(p, tmp, blen);
		p += blen;
	}
	memset(buf, 0, RB_HDR_LEN);
	be64(buf + 0, 0);
	be32(buf + 8, (p - buf) - 12);
	be32(buf + 12, 0);
	buf[16] = 2;
	be16(buf + 21, o && o->txn ? RB_ATTR_TXN : 0);
	be32(buf + 23, n - 1);
	be64(buf + 27, base_ts);
	be64(buf + 35, max_ts);
	be64(buf + 43, o ? o->pid : -1);
	be16(buf + 51, o ? o->epoch : -1);
	be32(buf + 53, o ? o->seq : -1);
	be32(buf + 57, n);
	be32(buf + 17, crc32c(buf + 21, (p - buf) - 21));
	return p - buf;
}
