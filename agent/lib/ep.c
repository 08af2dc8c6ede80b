// SPDX-License-Identifier: GPL-2.0
/*
 * Endpoints, peer lists and numbers: parsing what the user typed, encoding
 * it as KREP_A_EP_* / KREP_A_PEER nests, decoding and printing replies.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/krep.h>

#include "ep.h"

/*
 * Decimal digits only: no sign, no blanks, no hex, so "-1" or " 7" are
 * errors instead of strtoul()'s surprising wrap-arounds.
 * Returns 0, -EINVAL (not a number) or -ERANGE (does not fit 32 bits).
 */
int krep_u32_parse(const char *s, uint32_t *v)
{
	unsigned long long x;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return -EINVAL;
	errno = 0;
	x = strtoull(s, NULL, 10);
	if (errno == ERANGE || x > UINT32_MAX)
		return -ERANGE;
	*v = x;
	return 0;
}

/* A decimal u64: digits only, like krep_u32_parse(). */
int krep_u64_parse(const char *s, uint64_t *v)
{
	unsigned long long x;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return -EINVAL;
	errno = 0;
	x = strtoull(s, NULL, 10);
	if (errno == ERANGE)
		return -ERANGE;
	*v = x;
	return 0;
}

/* A decimal s64: an optional '-' and digits. */
int krep_s64_parse(const char *s, int64_t *v)
{
	bool neg = *s == '-';
	uint64_t x;
	int err;

	err = krep_u64_parse(s + neg, &x);
	if (err)
		return err;
	if (x > (uint64_t)INT64_MAX + neg)
		return -ERANGE;
	*v = neg ? (int64_t)(0 - x) : (int64_t)x;
	return 0;
}

/* Port: 0..65535 encodes; the kernel refuses 0 (range 1..65535). */
static int port_parse(const char *s, uint16_t *port, const char **why)
{
	uint32_t v;
	int err;

	err = krep_u32_parse(s, &v);
	if (err == -EINVAL) {
		*why = *s ? "port is not a number" : "missing port after ':'";
		return -EINVAL;
	}
	if (err || v > UINT16_MAX) {
		*why = "port does not fit in 16 bits (max 65535)";
		return -ERANGE;
	}
	*port = v;
	return 0;
}

static int v6_parse(const char *s, struct krep_ep *ep, const char **why)
{
	char buf[INET6_ADDRSTRLEN];
	const char *rb;
	size_t len;

	rb = strchr(s, ']');
	if (!rb) {
		*why = "missing ']' after IPv6 address";
		return -EINVAL;
	}
	len = rb - (s + 1);
	if (!len || len >= sizeof(buf)) {
		*why = "invalid IPv6 address";
		return -EINVAL;
	}
	memcpy(buf, s + 1, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, &ep->addr.v6) != 1) {
		*why = "invalid IPv6 address";
		return -EINVAL;
	}
	if (rb[1] != ':') {
		*why = "missing ':PORT' after ']'";
		return -EINVAL;
	}
	ep->family = AF_INET6;
	return port_parse(rb + 2, &ep->port, why);
}

static int v4_parse(const char *s, struct krep_ep *ep, const char **why)
{
	char buf[INET_ADDRSTRLEN];
	const char *colon;
	size_t len;

	colon = strrchr(s, ':');
	if (!colon) {
		*why = "missing ':PORT'";
		return -EINVAL;
	}
	if (memchr(s, ':', colon - s)) {
		*why = "IPv6 addresses need brackets: [ADDR]:PORT";
		return -EINVAL;
	}
	len = colon - s;
	if (!len) {
		*why = "missing address before ':'";
		return -EINVAL;
	}
	if (len >= sizeof(buf)) {
		*why = "invalid IPv4 address (host names are not resolved)";
		return -EINVAL;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, &ep->addr.v4) != 1) {
		*why = "invalid IPv4 address (host names are not resolved)";
		return -EINVAL;
	}
	ep->family = AF_INET;
	return port_parse(colon + 1, &ep->port, why);
}

/*
 * Parse "A.B.C.D:PORT" or "[IPV6]:PORT". On error returns -EINVAL or
 * -ERANGE and points *why at a static explanation.
 */
int krep_ep_parse(const char *s, struct krep_ep *ep, const char **why)
{
	memset(ep, 0, sizeof(*ep));
	if (s[0] == '[')
		return v6_parse(s, ep, why);
	return v4_parse(s, ep, why);
}

/* Format @ep into @buf (at least KREP_EP_STRLEN bytes); "-" when unset. */
const char *krep_ep_format(const struct krep_ep *ep, char *buf, size_t size)
{
	char addr[INET6_ADDRSTRLEN];

	switch (ep->family) {
	case AF_INET:
		inet_ntop(AF_INET, &ep->addr.v4, addr, sizeof(addr));
		snprintf(buf, size, "%s:%u", addr, ep->port);
		break;
	case AF_INET6:
		inet_ntop(AF_INET6, &ep->addr.v6, addr, sizeof(addr));
		snprintf(buf, size, "[%s]:%u", addr, ep->port);
		break;
	default:
		snprintf(buf, size, "-");
		break;
	}
	return buf;
}

/* Put @ep as nest @attrtype holding KREP_A_EP_IPV4|IPV6 and KREP_A_EP_PORT. */
int krep_ep_put(struct nl_msg *msg, int attrtype, const struct krep_ep *ep)
{
	struct nlattr *nest;
	int err;

	nest = nla_nest_start(msg, attrtype | NLA_F_NESTED);
	if (!nest)
		return -EMSGSIZE;
	if (ep->family == AF_INET)
		err = nla_put(msg, KREP_A_EP_IPV4, sizeof(ep->addr.v4),
			      &ep->addr.v4);
	else
		err = nla_put(msg, KREP_A_EP_IPV6, sizeof(ep->addr.v6),
			      &ep->addr.v6);
	if (!err)
		err = nla_put_u16(msg, KREP_A_EP_PORT, ep->port);
	if (err) {
		nla_nest_cancel(msg, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, nest);
	return 0;
}

static struct nla_policy ep_policy[KREP_A_EP_MAX + 1] = {
	[KREP_A_EP_IPV4]	= { .type = NLA_U32 },
	[KREP_A_EP_IPV6]	= { .minlen = 16, .maxlen = 16 },
	[KREP_A_EP_PORT]	= { .type = NLA_U16 },
};

/*
 * Decode a KREP_A_EP_* nest. An endpoint without an address decodes as
 * AF_UNSPEC (printed "-"). Returns 0 or -EINVAL if malformed.
 */
int krep_ep_get(const struct nlattr *nest, struct krep_ep *ep)
{
	struct nlattr *tb[KREP_A_EP_MAX + 1];

	memset(ep, 0, sizeof(*ep));
	if (nla_parse_nested(tb, KREP_A_EP_MAX, (struct nlattr *)nest,
			     ep_policy))
		return -EINVAL;
	if (tb[KREP_A_EP_IPV4]) {
		ep->family = AF_INET;
		memcpy(&ep->addr.v4, nla_data(tb[KREP_A_EP_IPV4]), 4);
	} else if (tb[KREP_A_EP_IPV6]) {
		if (nla_len(tb[KREP_A_EP_IPV6]) != 16)
			return -EINVAL;
		ep->family = AF_INET6;
		memcpy(&ep->addr.v6, nla_data(tb[KREP_A_EP_IPV6]), 16);
	}
	if (tb[KREP_A_EP_PORT])
		ep->port = nla_get_u16(tb[KREP_A_EP_PORT]);
	return 0;
}

/* Parse one "ID@ADDR:PORT" element; @s is left untouched for messages. */
static int peer_parse(const char *s, struct krep_peer *peer, const char **why)
{
	const char *at;
	char *id;
	int err;

	at = strchr(s, '@');
	if (!at) {
		*why = "missing '@' (expected ID@ADDR:PORT)";
		return -EINVAL;
	}
	id = strndup(s, at - s);
	if (!id) {
		*why = "out of memory";
		return -ENOMEM;
	}
	err = krep_u32_parse(id, &peer->id);
	free(id);
	if (err) {
		*why = err == -ERANGE ? "peer id does not fit in 32 bits" :
					"peer id is not a number";
		return err;
	}
	return krep_ep_parse(at + 1, &peer->ep, why);
}

/*
 * Parse "ID@ADDR:PORT[,ID@ADDR:PORT...]" or "none" (the empty list).
 * Duplicate ids, the broker's own id and the KREP_PEERS_MAX limit are
 * left to the kernel. On error writes a message naming the faulty
 * element to @err and returns -EINVAL, -ERANGE or -ENOMEM.
 */
int krep_peers_parse(const char *s, struct krep_peers *peers,
		     char *err, size_t errlen)
{
	char *copy, *elem, *next;
	const char *why = NULL;
	size_t n, i;
	int ret = 0;

	peers->n = 0;
	peers->v = NULL;
	if (!strcmp(s, "none"))
		return 0;
	if (!*s) {
		snprintf(err, errlen, "empty peer list (use 'none' to clear it)");
		return -EINVAL;
	}
	for (n = 1, i = 0; s[i]; i++)
		n += s[i] == ',';
	copy = strdup(s);
	peers->v = calloc(n, sizeof(*peers->v));
	if (!copy || !peers->v) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		ret = -ENOMEM;
		goto out;
	}
	for (elem = copy; elem; elem = next) {
		next = strchr(elem, ',');
		if (next)
			*next++ = '\0';
		if (!*elem) {
			snprintf(err, errlen, "empty element %zu in peer list",
				 peers->n + 1);
			ret = -EINVAL;
			goto out;
		}
		ret = peer_parse(elem, &peers->v[peers->n], &why);
		if (ret) {
			snprintf(err, errlen, "peer %zu ('%s'): %s",
				 peers->n + 1, elem, why);
			goto out;
		}
		peers->n++;
	}
out:
	free(copy);
	if (ret)
		krep_peers_free(peers);
	return ret;
}

void krep_peers_free(struct krep_peers *peers)
{
	free(peers->v);
	peers->v = NULL;
	peers->n = 0;
}

/* Bytes needed to encode @peers (for sizing the request). */
size_t krep_peers_msg_size(const struct krep_peers *peers)
{
	size_t ep = nla_total_size(0) + nla_total_size(16) + nla_total_size(2);
	size_t one = nla_total_size(0) + nla_total_size(4) + ep;

	return nla_total_size(0) + peers->n * one;
}

/*
 * Put @peers as nest @attrtype of KREP_A_PEER nests (KREP_A_PEER_ID,
 * KREP_A_PEER_EP); an empty list is an empty nest, which clears the list.
 */
int krep_peers_put(struct nl_msg *msg, int attrtype,
		   const struct krep_peers *peers)
{
	struct nlattr *list, *peer;
	size_t i;

	list = nla_nest_start(msg, attrtype | NLA_F_NESTED);
	if (!list)
		return -EMSGSIZE;
	for (i = 0; i < peers->n; i++) {
		peer = nla_nest_start(msg, KREP_A_PEER | NLA_F_NESTED);
		if (!peer)
			goto cancel;
		if (nla_put_u32(msg, KREP_A_PEER_ID, peers->v[i].id) ||
		    krep_ep_put(msg, KREP_A_PEER_EP, &peers->v[i].ep))
			goto cancel;
		nla_nest_end(msg, peer);
	}
	/* libnl drops empty nests unless told not to: keep "clear the list". */
	nla_nest_end_keep_empty(msg, list);
	return 0;
cancel:
	nla_nest_cancel(msg, list);
	return -EMSGSIZE;
}

const char *krep_peer_state_name(unsigned int state)
{
	static const char * const names[] = {
		[KREP_PEER_CONFIGURED]	= "configured",
		[KREP_PEER_CONNECTING]	= "connecting",
		[KREP_PEER_UP]		= "up",
		[KREP_PEER_DOWN]	= "down",
	};

	if (state < sizeof(names) / sizeof(names[0]) && names[state])
		return names[state];
	return NULL;
}
