/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Endpoints ("A.B.C.D:PORT", "[v6addr]:PORT"), peer lists
 * ("ID@ADDR:PORT,..." or "none") and plain numbers as the user types them,
 * and their KREP_A_EP_* / KREP_A_PEER encoding.
 *
 * The parsers reject only what cannot be encoded (bad syntax, a number that
 * does not fit its attribute's type). Anything encodable goes to the kernel
 * unchanged so that its validation, and its extack message, is what the
 * user sees: port 0, a broker id above KREP_BROKER_ID_MAX, duplicate peer
 * ids and over-long peer lists are the kernel's to refuse.
 */
#ifndef KREP_AGENT_EP_H
#define KREP_AGENT_EP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include <netlink/attr.h>
#include <netlink/msg.h>

struct krep_ep {
	int family;			/* AF_INET, AF_INET6; AF_UNSPEC if none */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} addr;
	uint16_t port;
};

/* "[" INET6_ADDRSTRLEN "]:65535" */
#define KREP_EP_STRLEN	(INET6_ADDRSTRLEN + 8)

struct krep_peer {
	uint32_t id;
	struct krep_ep ep;
};

struct krep_peers {
	size_t n;
	struct krep_peer *v;
};

int krep_u32_parse(const char *s, uint32_t *v);
int krep_u64_parse(const char *s, uint64_t *v);
int krep_s64_parse(const char *s, int64_t *v);

int krep_ep_parse(const char *s, struct krep_ep *ep, const char **why);
const char *krep_ep_format(const struct krep_ep *ep, char *buf, size_t size);
int krep_ep_put(struct nl_msg *msg, int attrtype, const struct krep_ep *ep);
int krep_ep_get(const struct nlattr *nest, struct krep_ep *ep);

int krep_peers_parse(const char *s, struct krep_peers *peers,
		     char *err, size_t errlen);
void krep_peers_free(struct krep_peers *peers);
int krep_peers_put(struct nl_msg *msg, int attrtype,
		   const struct krep_peers *peers);
size_t krep_peers_msg_size(const struct krep_peers *peers);

const char *krep_peer_state_name(unsigned int state);

#endif
