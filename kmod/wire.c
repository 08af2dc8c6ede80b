// SPDX-License-Identifier: GPL-2.0
/*
 * krep: inter-broker frame headers and the cursors that read and write
 * their payloads. A read past the end marks the cursor bad instead of
 * reading; callers check krep_rd_done() once at the end of a message.
 */
#include <linux/errno.h>
#include <linux/string.h>
#include <asm/unaligned.h>

#include "topic.h"
#include "wire.h"

const void *krep_rd_bytes(struct krep_rd *rd, u32 len)
{
	const void *p = rd->p;

	if (rd->bad || len > rd->end - rd->p) {
		rd->bad = true;
		return NULL;
	}
	rd->p += len;
	return p;
}

u16 krep_rd_be16(struct krep_rd *rd)
{
	const void *p = krep_rd_bytes(rd, 2);

	return p ? get_unaligned_be16(p) : 0;
}

u32 krep_rd_be32(struct krep_rd *rd)
{
	const void *p = krep_rd_bytes(rd, 4);

	return p ? get_unaligned_be32(p) : 0;
}

u64 krep_rd_be64(struct krep_rd *rd)
{
	const void *p = krep_rd_bytes(rd, 8);

	return p ? get_unaligned_be64(p) : 0;
}

/* a topic name, 1..249 bytes; not NUL-terminated */
const char *krep_rd_topic(struct krep_rd *rd, u16 *len)
{
	*len = krep_rd_be16(rd);
	if (!*len || *len > KREP_TOPIC_NAME_MAX) {
		rd->bad = true;
		return NULL;
	}
	return krep_rd_bytes(rd, *len);
}

void *krep_wr_bytes(struct krep_wr *wr, const void *src, u32 len)
{
	void *p = wr->p;

	if (wr->full || len > wr->end - wr->p) {
		wr->full = true;
		return NULL;
	}
	if (src)
		memcpy(p, src, len);
	wr->p += len;
	return p;
}

void krep_wr_be16(struct krep_wr *wr, u16 v)
{
	void *p = krep_wr_bytes(wr, NULL, 2);

	if (p)
		put_unaligned_be16(v, p);
}

void krep_wr_be32(struct krep_wr *wr, u32 v)
{
	void *p = krep_wr_bytes(wr, NULL, 4);

	if (p)
		put_unaligned_be32(v, p);
}

void krep_wr_be64(struct krep_wr *wr, u64 v)
{
	void *p = krep_wr_bytes(wr, NULL, 8);

	if (p)
		put_unaligned_be64(v, p);
}

void krep_wr_topic(struct krep_wr *wr, const char *name)
{
	size_t len = strlen(name);

	krep_wr_be16(wr, len);
	krep_wr_bytes(wr, name, len);
}

int krep_wire_hdr_check(const struct krep_wire_hdr *hdr, const char **why)
{
	if (be32_to_cpu(hdr->magic) != KREP_WIRE_MAGIC) {
		*why = "bad frame magic";
		return -EPROTO;
	}
	if (hdr->version != KREP_WIRE_VERSION) {
		*why = "unsupported protocol version";
		return -EPROTO;
	}
	if (hdr->type < KREP_WIRE_HELLO || hdr->type > KREP_WIRE_AUTH) {
		*why = "unknown frame type";
		return -EPROTO;
	}
	if (hdr->flags) {
		*why = "unknown frame flags";
		return -EPROTO;
	}
	if (be32_to_cpu(hdr->length) > KREP_WIRE_MAX_PAYLOAD) {
		*why = "oversized frame";
		return -EMSGSIZE;
	}
	return 0;
}

void krep_wire_hdr_init(struct krep_wire_hdr *hdr, u8 type, u32 len,
			u32 correlation_id)
{
	hdr->magic = cpu_to_be32(KREP_WIRE_MAGIC);
	hdr->version = KREP_WIRE_VERSION;
	hdr->type = type;
	hdr->flags = 0;
	hdr->length = cpu_to_be32(len);
	hdr->correlation_id = cpu_to_be32(correlation_id);
}
