/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep_nl - the raw generic netlink client of the C selftests (genl_test,
 * log_test).
 *
 * No libnl: requests are built by hand in a struct req so that a test can
 * make them malformed on purpose (attributes of the wrong size or type,
 * nests without NLA_F_NESTED, a reserved field set, ...), and every
 * NLMSG_ERROR is parsed whole, extack included.
 *
 *   krep_open()          a NETLINK_GENERIC socket (extended and capped
 *                        acks) with the "krep" family looked up: its id,
 *                        version and "events" multicast group
 *   req_init(), put_*()  a request, attribute by attribute; nests
 *   nl_transact()        send a request and read up to its NLMSG_ERROR
 *                        (or NLMSG_DONE), handing every other message of
 *                        the request to a callback
 *   for_each_nla(), nla_*()  walk and read the attributes of a reply
 */
#ifndef KREP_SELFTESTS_KREP_NL_H
#define KREP_SELFTESTS_KREP_NL_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/types.h>

#ifndef NLA_F_NESTED
#define NLA_F_NESTED		(1 << 15)
#endif

/* the largest attribute payload (nla_len is 16 bits) */
#define NLA_PAYLOAD_MAX		(0xffff - NLA_HDRLEN)
/* a request: one attribute of the largest size, and room for the rest */
#define REQ_SIZE		(NLA_PAYLOAD_MAX + 4096)
/* what one recv() may bring, and the sockets' receive buffer */
#define RX_SIZE			(8 << 20)

/* ---------------------------------------------------------------------
 * Requests
 */

struct req {
	union {
		struct nlmsghdr nlh;
		char buf[REQ_SIZE];
	};
};

static inline struct genlmsghdr *req_genl(struct req *r)
{
	return NLMSG_DATA(&r->nlh);
}

/* an empty request: NLM_F_REQUEST | NLM_F_ACK | @flags, KREP_GENL_VERSION */
void req_init(struct req *r, __u16 type, __u8 cmd, __u16 flags);
/* an attribute of @len bytes at @data (none if @len is 0) */
struct nlattr *req_put(struct req *r, __u16 type, const void *data,
		       size_t len);
struct nlattr *put_u8(struct req *r, __u16 type, __u8 v);
struct nlattr *put_u16(struct req *r, __u16 type, __u16 v);
struct nlattr *put_u32(struct req *r, __u16 type, __u32 v);
struct nlattr *put_u64(struct req *r, __u16 type, __u64 v);
/* a string with its NUL */
struct nlattr *put_str(struct req *r, __u16 type, const char *s);
/* a nest, with NLA_F_NESTED as the strict policies want it */
struct nlattr *nest_start(struct req *r, __u16 type);
/* a nest without NLA_F_NESTED, to be refused */
struct nlattr *nest_start_noflag(struct req *r, __u16 type);
void nest_end(struct req *r, struct nlattr *nest);
/* offset of @nla in the request, as NLMSGERR_ATTR_OFFS reports it */
__u32 req_off(const struct req *r, const struct nlattr *nla);

/* ---------------------------------------------------------------------
 * The socket
 */

struct nl {
	int fd;
	__u16 family;		/* the "krep" family's id */
	__u32 events;		/* the "events" multicast group's id */
	__u32 version;		/* the family's version */
	__u32 seq;
};

/* what the NLMSG_ERROR (or NLMSG_DONE) that ends a request said */
struct ack {
	int error;		/* 0 or a positive errno */
	char msg[256];		/* NLMSGERR_ATTR_MSG, "" if none */
	bool has_off, has_miss_type, has_miss_nest, has_kerr;
	__u32 off, miss_type, miss_nest;
	int kerr;		/* struct krep_err_cookie's kafka_error */
};

/* a socket, not yet bound to any family; -errno on failure */
int nl_open(struct nl *nl);
/* nl_open() and the "krep" family looked up; -errno on failure */
int krep_open(struct nl *nl);
void nl_close(struct nl *nl);
/* an NLMSG_ERROR's errno and extack attributes */
void nl_parse_ack(const struct nlmsghdr *nlh, struct ack *ack);

/*
 * Send @r and read until its NLMSG_ERROR, or NLMSG_DONE for a dump. Every
 * other message for the request goes to @cb. Returns 0 when the exchange
 * completed (the verdict is in @ack), -errno on a socket error.
 */
int nl_transact(struct nl *nl, struct req *r, struct ack *ack,
		void (*cb)(const struct nlmsghdr *, void *), void *arg);

/* the receive buffer (RX_SIZE bytes) nl_transact() reads into */
__u8 *nl_rx_buf(void);

/* ---------------------------------------------------------------------
 * Attributes
 */

/* walk the attributes of [@head, @head + @len) */
#define for_each_nla(nla, head, len, rem)				\
	for ((nla) = (const struct nlattr *)(head), (rem) = (len);	\
	     (rem) >= NLA_HDRLEN && (nla)->nla_len >= NLA_HDRLEN &&	\
	     (nla)->nla_len <= (rem);					\
	     (rem) -= NLA_ALIGN((nla)->nla_len),			\
	     (nla) = (const void *)((const char *)(nla) +		\
				    NLA_ALIGN((nla)->nla_len)))

#define nla_data_c(nla)		((const void *)((const char *)(nla) + NLA_HDRLEN))
#define nla_plen(nla)		((int)(nla)->nla_len - NLA_HDRLEN)
#define nla_kind(nla)		((nla)->nla_type & NLA_TYPE_MASK)

__u16 nla_u16(const struct nlattr *nla);
__u32 nla_u32(const struct nlattr *nla);
__u64 nla_u64(const struct nlattr *nla);
/* an integer attribute of any width, as its width says; ~0 if none fits */
__u64 nla_uint(const struct nlattr *nla);

#endif /* KREP_SELFTESTS_KREP_NL_H */
