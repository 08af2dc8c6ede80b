/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: encoding and bounds-checked decoding of inter-broker frames
 * (uapi/linux/krep_wire.h).
 */
#ifndef _KREP_WIRE_H
#define _KREP_WIRE_H

#include <linux/types.h>
#include <linux/krep_wire.h>

/* a read cursor over a received payload; every get checks the bounds */
struct krep_rd {
	const u8 *p, *end;
	bool bad;
};

/* a write cursor over a buffer the caller sized */
struct krep_wr {
	u8 *p, *end;
	bool full;
};

static inline void krep_rd_init(struct krep_rd *rd, const void *buf, u32 len)
{
	rd->p = buf;
	rd->end = rd->p + len;
	rd->bad = false;
}

const void *krep_rd_bytes(struct krep_rd *rd, u32 len);
u16 krep_rd_be16(struct krep_rd *rd);
u32 krep_rd_be32(struct krep_rd *rd);
u64 krep_rd_be64(struct krep_rd *rd);
const char *krep_rd_topic(struct krep_rd *rd, u16 *len);

static inline bool krep_rd_done(const struct krep_rd *rd)
{
	return !rd->bad && rd->p == rd->end;
}

void *krep_wr_bytes(struct krep_wr *wr, const void *src, u32 len);
void krep_wr_be16(struct krep_wr *wr, u16 v);
void krep_wr_be32(struct krep_wr *wr, u32 v);
void krep_wr_be64(struct krep_wr *wr, u64 v);
void krep_wr_topic(struct krep_wr *wr, const char *name);

int krep_wire_hdr_check(const struct krep_wire_hdr *hdr, const char **why);
void krep_wire_hdr_init(struct krep_wire_hdr *hdr, u8 type, u32 len,
			u32 correlation_id);

#endif /* _KREP_WIRE_H */
