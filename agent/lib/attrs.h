/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A description of the krep attribute tree (names, types, nests) used to
 * name the attribute an extack points at and to print messages of any
 * command, such as krepd's events. Grows with uapi/linux/krep.h.
 */
#ifndef KREP_AGENT_ATTRS_H
#define KREP_AGENT_ATTRS_H

#include <stddef.h>
#include <stdio.h>

#include <netlink/attr.h>

enum krep_attr_type {
	KREP_AT_UNKNOWN,	/* printed as its length */
	KREP_AT_U8,
	KREP_AT_U16,
	KREP_AT_U32,
	KREP_AT_U64,
	KREP_AT_S16,
	KREP_AT_S64,
	KREP_AT_STRING,
	KREP_AT_BINARY,
	KREP_AT_NEST,		/* nest of ->space */
	KREP_AT_EP,		/* nest of KREP_A_EP_*, printed ADDR:PORT */
};

struct krep_attr_space;

struct krep_attr_desc {
	const char *name;
	enum krep_attr_type type;
	const struct krep_attr_space *space;	/* KREP_AT_NEST */
	const char *(*enum_name)(long v);	/* integers with names */
	unsigned int multi:1;			/* repeats in its nest */
};

struct krep_attr_space {
	const char *name;
	unsigned int max;
	const struct krep_attr_desc *attrs;	/* max + 1 entries */
};

extern const struct krep_attr_space krep_attr_space;	/* KREP_A_* */

const char *krep_cmd_name(unsigned int cmd);
const char *krep_kafka_error_name(long err);
const char *krep_role_name(long role);

/*
 * Name the attribute starting at byte @off of the message @base (@len
 * bytes, attributes from byte @attr_off on) as a path such as
 * "peers.peer[1].ep.port". If @inner is not NULL, it is set to the space
 * of the attribute's contents when it is a nest (NULL otherwise), for
 * naming a missing attribute inside it. Returns 0 or -ENOENT.
 */
int krep_attr_path(const void *base, size_t len, size_t attr_off, size_t off,
		   char *buf, size_t size,
		   const struct krep_attr_space **inner);

/* Name of type @type in @space, or "attr#N". */
const char *krep_attr_name(const struct krep_attr_space *space,
			   unsigned int type, char *buf, size_t size);

/* Print " name=value" for each attribute of the stream @head/@len. */
void krep_attrs_print(FILE *f, const struct krep_attr_space *space,
		      const struct nlattr *head, int len);

#endif
