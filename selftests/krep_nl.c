// SPDX-License-Identifier: GPL-2.0
/*
 * krep_nl - the raw generic netlink client of the C selftests: requests
 * built by hand, the "krep" family looked up, acks and extacks parsed.
 * See krep_nl.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/krep.h>

#include "krep_nl.h"

/* ---------------------------------------------------------------------
 * Requests
 */

void req_init(struct req *r, __u16 type, __u8 cmd, __u16 flags)
{
	memset(r, 0, sizeof(*r));
	r->nlh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	r->nlh.nlmsg_type = type;
	r->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	req_genl(r)->cmd = cmd;
	req_genl(r)->version = KREP_GENL_VERSION;
}

struct nlattr *req_put(struct req *r, __u16 type, const void *data,
		       size_t len)
{
	struct nlattr *nla = (void *)(r->buf + NLMSG_ALIGN(r->nlh.nlmsg_len));

	if (NLMSG_ALIGN(r->nlh.nlmsg_len) + NLA_ALIGN(NLA_HDRLEN + len) >
	    sizeof(r->buf)) {
		fprintf(stderr, "# request buffer too small\n");
		abort();
	}
	nla->nla_type = type;
	nla->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((char *)nla + NLA_HDRLEN, data, len);
	r->nlh.nlmsg_len = NLMSG_ALIGN(r->nlh.nlmsg_len) +
			   NLA_ALIGN(nla->nla_len);
	return nla;
}

struct nlattr *put_u8(struct req *r, __u16 type, __u8 v)
{
	return req_put(r, type, &v, sizeof(v));
}

struct nlattr *put_u16(struct req *r, __u16 type, __u16 v)
{
	return req_put(r, type, &v, sizeof(v));
}

struct nlattr *put_u32(struct req *r, __u16 type, __u32 v)
{
	return req_put(r, type, &v, sizeof(v));
}

struct nlattr *put_u64(struct req *r, __u16 type, __u64 v)
{
	return req_put(r, type, &v, sizeof(v));
}

struct nlattr *put_str(struct req *r, __u16 type, const char *s)
{
	return req_put(r, type, s, strlen(s) + 1);
}

struct nlattr *nest_start(struct req *r, __u16 type)
{
	return req_put(r, type | NLA_F_NESTED, NULL, 0);
}

struct nlattr *nest_start_noflag(struct req *r, __u16 type)
{
	return req_put(r, type, NULL, 0);
}

void nest_end(struct req *r, struct nlattr *nest)
{
	nest->nla_len = r->buf + r->nlh.nlmsg_len - (char *)nest;
}

__u32 req_off(const struct req *r, const struct nlattr *nla)
{
	return (const char *)nla - r->buf;
}

/* ---------------------------------------------------------------------
 * Attributes
 */

__u16 nla_u16(const struct nlattr *nla)
{
	__u16 v;

	memcpy(&v, nla_data_c(nla), sizeof(v));
	return v;
}

__u32 nla_u32(const struct nlattr *nla)
{
	__u32 v;

	memcpy(&v, nla_data_c(nla), sizeof(v));
	return v;
}

__u64 nla_u64(const struct nlattr *nla)
{
	__u64 v;

	memcpy(&v, nla_data_c(nla), sizeof(v));
	return v;
}

__u64 nla_uint(const struct nlattr *nla)
{
	switch (nla_plen(nla)) {
	case 1:
		return *(const __u8 *)nla_data_c(nla);
	case 2:
		return nla_u16(nla);
	case 4:
		return nla_u32(nla);
	case 8:
		return nla_u64(nla);
	}
	return ~0ULL;
}

/* ---------------------------------------------------------------------
 * The socket
 */

__u8 *nl_rx_buf(void)
{
	static __u8 *rx;

	if (!rx) {
		rx = malloc(RX_SIZE);
		if (!rx)
			abort();
	}
	return rx;
}

int nl_open(struct nl *nl)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1, big = RX_SIZE;

	memset(nl, 0, sizeof(*nl));
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (nl->fd < 0)
		return -errno;
	/* SO_RCVBUFFORCE needs CAP_NET_ADMIN; fall back to what we may get */
	if (setsockopt(nl->fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		setsockopt(nl->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (setsockopt(nl->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one,
		       sizeof(one)) ||
	    setsockopt(nl->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one,
		       sizeof(one)) ||
	    bind(nl->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = -errno;

		close(nl->fd);
		return err;
	}
	nl->seq = 1;
	return 0;
}

void nl_close(struct nl *nl)
{
	if (nl->fd >= 0)
		close(nl->fd);
	nl->fd = -1;
}

void nl_parse_ack(const struct nlmsghdr *nlh, struct ack *ack)
{
	const struct nlmsgerr *e = NLMSG_DATA(nlh);
	const struct nlattr *nla;
	size_t off;
	int rem;

	memset(ack, 0, sizeof(*ack));
	ack->error = -e->error;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	/* the TLVs follow the request, of which NETLINK_CAP_ACK echoes
	 * only the header
	 */
	off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(*e));
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += NLMSG_ALIGN(e->msg.nlmsg_len) - NLMSG_HDRLEN;
	for_each_nla(nla, (const char *)nlh + off,
		     (int)nlh->nlmsg_len - (int)off, rem) {
		const void *data = nla_data_c(nla);
		int len = nla_plen(nla);

		switch (nla_kind(nla)) {
		case NLMSGERR_ATTR_MSG:
			snprintf(ack->msg, sizeof(ack->msg), "%.*s", len,
				 (const char *)data);
			break;
		case NLMSGERR_ATTR_OFFS:
			ack->has_off = true;
			memcpy(&ack->off, data, 4);
			break;
		case NLMSGERR_ATTR_MISS_TYPE:
			ack->has_miss_type = true;
			memcpy(&ack->miss_type, data, 4);
			break;
		case NLMSGERR_ATTR_MISS_NEST:
			ack->has_miss_nest = true;
			memcpy(&ack->miss_nest, data, 4);
			break;
		case NLMSGERR_ATTR_COOKIE:
			if (len >= (int)sizeof(struct krep_err_cookie)) {
				struct krep_err_cookie ck;

				memcpy(&ck, data, sizeof(ck));
				ack->has_kerr = true;
				ack->kerr = ck.kafka_error;
			}
			break;
		}
	}
}

int nl_transact(struct nl *nl, struct req *r, struct ack *ack,
		void (*cb)(const struct nlmsghdr *, void *), void *arg)
{
	__u8 *rx = nl_rx_buf();
	__u32 seq = nl->seq++;
	ssize_t n;

	r->nlh.nlmsg_seq = seq;
	memset(ack, 0, sizeof(*ack));
	if (send(nl->fd, r->buf, r->nlh.nlmsg_len, 0) != r->nlh.nlmsg_len)
		return -errno;
	for (;;) {
		const struct nlmsghdr *nlh;

		n = recv(nl->fd, rx, RX_SIZE, MSG_TRUNC);
		if (n < 0)
			return -errno;
		if (n > RX_SIZE)
			return -EMSGSIZE;
		for (nlh = (void *)rx; NLMSG_OK(nlh, n);
		     nlh = NLMSG_NEXT(nlh, n)) {
			if (nlh->nlmsg_seq != seq)
				continue;
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				nl_parse_ack(nlh, ack);
				return 0;
			}
			if (nlh->nlmsg_type == NLMSG_DONE) {
				int err = 0;

				if (nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(int)))
					memcpy(&err, NLMSG_DATA(nlh), sizeof(err));
				ack->error = -err;
				return 0;
			}
			if (cb)
				cb(nlh, arg);
		}
	}
}

/* ---------------------------------------------------------------------
 * The "krep" family
 */

struct family_info {
	struct nl *nl;
	bool found;
};

static void family_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct genlmsghdr *g = NLMSG_DATA(nlh);
	struct family_info *fi = arg;
	const struct nlattr *nla, *grp, *ga;
	int rem, grem, garem;

	for_each_nla(nla, (const char *)g + GENL_HDRLEN,
		     (int)nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN, rem) {
		switch (nla_kind(nla)) {
		case CTRL_ATTR_FAMILY_ID:
			fi->nl->family = nla_u16(nla);
			fi->found = true;
			break;
		case CTRL_ATTR_VERSION:
			fi->nl->version = nla_u32(nla);
			break;
		case CTRL_ATTR_MCAST_GROUPS:
			for_each_nla(grp, nla_data_c(nla), nla_plen(nla), grem) {
				const char *name = NULL;
				__u32 id = 0;

				for_each_nla(ga, nla_data_c(grp), nla_plen(grp),
					     garem) {
					if (nla_kind(ga) == CTRL_ATTR_MCAST_GRP_NAME)
						name = nla_data_c(ga);
					else if (nla_kind(ga) == CTRL_ATTR_MCAST_GRP_ID)
						id = nla_u32(ga);
				}
				if (name && !strcmp(name, KREP_MCGRP_EVENTS))
					fi->nl->events = id;
			}
			break;
		}
	}
}

int krep_open(struct nl *nl)
{
	struct family_info fi = { .nl = nl };
	struct ack ack;
	struct req *r;
	int err;

	err = nl_open(nl);
	if (err)
		return err;
	r = malloc(sizeof(*r));
	if (!r)
		abort();
	req_init(r, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0);
	req_genl(r)->version = 2;
	put_str(r, CTRL_ATTR_FAMILY_NAME, KREP_GENL_NAME);
	err = nl_transact(nl, r, &ack, family_cb, &fi);
	free(r);
	if (!err && ack.error)
		err = -ack.error;
	if (!err && !fi.found)
		err = -ENOENT;
	if (err)
		nl_close(nl);
	return err;
}
