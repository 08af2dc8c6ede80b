// SPDX-License-Identifier: GPL-2.0
/*
 * Generic netlink helpers of the krep load generators (krep_nl.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/socket.h>

#include "common.h"
#include "krep_nl.h"

#define RBUF_SIZE	(128 << 10)

int ns_open(const char *name)
{
	char path[256];

	if (!strcmp(name, "-"))
		return open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int gsock_open(struct gsock *g)
{
	int one = 1, size = 1 << 20;

	memset(g, 0, sizeof(*g));
	g->sk = nl_socket_alloc();
	if (!g->sk || genl_connect(g->sk)) {
		fprintf(stderr, "%s: cannot open a generic netlink socket\n",
			bench_prog);
		return -1;
	}
	g->family = genl_ctrl_resolve(g->sk, KREP_GENL_NAME);
	if (g->family < 0) {
		fprintf(stderr, "%s: genl family %s not found (module loaded?)\n",
			bench_prog, KREP_GENL_NAME);
		return -1;
	}
	g->fd = nl_socket_get_fd(g->sk);
	setsockopt(g->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(g->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	setsockopt(g->fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	setsockopt(g->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	g->rbuf = malloc(RBUF_SIZE);
	g->seq = 1;
	return g->rbuf ? 0 : -1;
}

void gsock_close(struct gsock *g)
{
	nl_socket_free(g->sk);
	free(g->rbuf);
	g->sk = NULL;
	g->rbuf = NULL;
}

uint8_t *msg_bytes(struct nl_msg *msg, size_t *len)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	uint8_t *b = malloc(nlh->nlmsg_len);

	if (b)
		memcpy(b, nlh, nlh->nlmsg_len);
	*len = nlh->nlmsg_len;
	return b;
}

int transact(struct gsock *g, uint8_t *req, size_t len,
	     struct nlmsghdr **reply, bool loud)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)req;
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	struct nlmsgerr *e;
	uint32_t seq = g->seq++;
	ssize_t n;

	nlh->nlmsg_seq = seq;
	nlh->nlmsg_pid = 0;
	if (send(g->fd, req, len, 0) != (ssize_t)len) {
		if (loud)
			fprintf(stderr, "%s: netlink send: %s\n", bench_prog,
				strerror(errno));
		return -EIO;
	}
	for (;;) {
		n = recv(g->fd, g->rbuf, RBUF_SIZE, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)NLMSG_HDRLEN) {
			if (loud)
				fprintf(stderr, "%s: netlink recv: %s\n",
					bench_prog, strerror(errno));
			return -EIO;
		}
		nlh = (struct nlmsghdr *)g->rbuf;
		if (nlh->nlmsg_seq == seq)
			break;
	}
	if (nlh->nlmsg_type != NLMSG_ERROR) {
		*reply = nlh;
		return 0;
	}
	e = NLMSG_DATA(nlh);
	if (!e->error) {
		*reply = NULL;
		return 0;
	}
	if (loud) {
		const char *msg = "";

		if ((nlh->nlmsg_flags & NLM_F_ACK_TLVS) &&
		    !nla_parse(tb, NLMSGERR_ATTR_MAX,
			       (struct nlattr *)((uint8_t *)e + sizeof(*e)),
			       nlh->nlmsg_len - NLMSG_HDRLEN - sizeof(*e),
			       NULL) && tb[NLMSGERR_ATTR_MSG])
			msg = nla_get_string(tb[NLMSGERR_ATTR_MSG]);
		fprintf(stderr, "%s: PRODUCE: %s: %s\n", bench_prog,
			strerror(-e->error), msg);
	}
	return e->error;
}

int stats_get(struct gsock *g, struct stats *s)
{
	struct nlattr *tb[KREP_A_MAX + 1], *st[KREP_A_STAT_MAX + 1];
	struct nlmsghdr *reply;
	struct nl_msg *msg;
	uint8_t *req;
	size_t len;
	int i, err;

	memset(s, 0, sizeof(*s));
	msg = nlmsg_alloc();
	if (!msg || !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, g->family, 0,
				 NLM_F_REQUEST, KREP_CMD_BROKER_GET,
				 KREP_GENL_VERSION))
		return -ENOMEM;
	req = msg_bytes(msg, &len);
	nlmsg_free(msg);
	if (!req)
		return -ENOMEM;
	err = transact(g, req, len, &reply, true);
	free(req);
	if (err || !reply)
		return err ? err : -EPROTO;
	if (nlmsg_parse(reply, GENL_HDRLEN, tb, KREP_A_MAX, NULL))
		return -EPROTO;
	if (!tb[KREP_A_STATS])
		return 0;
	if (nla_parse_nested(st, KREP_A_STAT_MAX, tb[KREP_A_STATS], NULL))
		return -EPROTO;
	s->present = true;
	for (i = 1; i <= KREP_A_STAT_MAX; i++)
		if (st[i] && nla_len(st[i]) == 8)
			s->v[i] = nla_get_u64(st[i]);
	return 0;
}

int isr_min(struct gsock *g, const char *topic, int *behind)
{
	struct nlattr *tb[KREP_A_MAX + 1], *a;
	struct nl_msg *msg;
	struct nlmsghdr *nlh;
	uint8_t *req;
	size_t len;
	ssize_t n;
	int min = -1, cnt, rem;
	uint32_t seq = g->seq++;

	msg = nlmsg_alloc();
	if (!msg || !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, g->family, 0,
				 NLM_F_REQUEST | NLM_F_DUMP,
				 KREP_CMD_PARTITION_GET, KREP_GENL_VERSION) ||
	    nla_put_string(msg, KREP_A_TOPIC, topic)) {
		nlmsg_free(msg);
		return -1;
	}
	req = msg_bytes(msg, &len);
	nlmsg_free(msg);
	if (!req)
		return -1;
	((struct nlmsghdr *)req)->nlmsg_seq = seq;
	n = send(g->fd, req, len, 0);
	free(req);
	if (n != (ssize_t)len)
		return -1;
	for (;;) {
		n = recv(g->fd, g->rbuf, RBUF_SIZE, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		for (nlh = (struct nlmsghdr *)g->rbuf; NLMSG_OK(nlh, n);
		     nlh = NLMSG_NEXT(nlh, n)) {
			if (nlh->nlmsg_seq != seq)
				continue;
			if (nlh->nlmsg_type == NLMSG_DONE)
				return min;
			if (nlh->nlmsg_type == NLMSG_ERROR)
				return -1;
			if (nlmsg_parse(nlh, GENL_HDRLEN, tb, KREP_A_MAX, NULL) ||
			    !tb[KREP_A_ROLE] || !tb[KREP_A_ISR] ||
			    nla_get_u8(tb[KREP_A_ROLE]) != KREP_ROLE_LEADER)
				continue;
			cnt = 0;
			nla_for_each_nested(a, tb[KREP_A_ISR], rem)
				cnt++;
			if (min < 0 || cnt < min)
				min = cnt;
			if (behind && tb[KREP_A_HW] && tb[KREP_A_LEO] &&
			    nla_get_u64(tb[KREP_A_HW]) <
			    nla_get_u64(tb[KREP_A_LEO]))
				(*behind)++;
		}
	}
}

int brokers_parse(struct brokers *b, const char *val)
{
	char *s = strdup(val), *tok, *save = NULL;

	b->n = 0;
	for (tok = strtok_r(s, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (b->n == BROKERS_MAX)
			return -1;
		b->names[b->n++] = tok;
	}
	return b->n ? 0 : -1;
}

int brokers_open(struct brokers *b)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), i;

	for (i = 0; i < b->n; i++) {
		b->ns_fd[i] = ns_open(b->names[i]);
		if (b->ns_fd[i] < 0 || setns(b->ns_fd[i], CLONE_NEWNET)) {
			fprintf(stderr, "%s: cannot enter namespace %s: %s\n",
				bench_prog, b->names[i], strerror(errno));
			return -1;
		}
		if (gsock_open(&b->gs[i]))
			return -1;
		if (setns(self, CLONE_NEWNET))
			return -1;
	}
	close(self);
	return 0;
}

void brokers_stats_begin(struct brokers *b)
{
	int i;

	b->stats = true;
	for (i = 0; i < b->n; i++)
		b->stats &= !stats_get(&b->gs[i], &b->before[i]) &&
			    b->before[i].present;
}

void brokers_stats_end(struct brokers *b, const char *topic, char *buf,
		       size_t size)
{
	uint64_t d[KREP_A_STAT_MAX + 1] = { 0 };
	struct stats after;
	int i, k, isr = -1;

	for (i = 0; i < b->n; i++) {
		b->stats &= !stats_get(&b->gs[i], &after) && after.present;
		for (k = 1; b->stats && k <= KREP_A_STAT_MAX; k++)
			d[k] += after.v[k] - b->before[i].v[k];
		k = isr_min(&b->gs[i], topic, NULL);
		if (k >= 0 && (isr < 0 || k < isr))
			isr = k;
		gsock_close(&b->gs[i]);
	}
	if (b->stats)
		snprintf(buf, size,
			 "isr_min=%d krep_records=%llu copy_bytes=%llu "
			 "produce_bytes=%llu follower_bytes=%llu "
			 "rx_copy_bytes=%llu zc_bytes=%llu fetch_resps=%llu",
			 isr,
			 (unsigned long long)d[KREP_A_STAT_RECORDS],
			 (unsigned long long)(d[KREP_A_STAT_PRODUCE_BYTES] +
					      d[KREP_A_STAT_FOLLOWER_BYTES] +
					      d[KREP_A_STAT_RX_COPY_BYTES]),
			 (unsigned long long)d[KREP_A_STAT_PRODUCE_BYTES],
			 (unsigned long long)d[KREP_A_STAT_FOLLOWER_BYTES],
			 (unsigned long long)d[KREP_A_STAT_RX_COPY_BYTES],
			 (unsigned long long)d[KREP_A_STAT_TX_ZEROCOPY_BYTES],
			 (unsigned long long)d[KREP_A_STAT_FETCH_RESPONSES]);
	else
		snprintf(buf, size, "isr_min=%d stats=absent", isr);
}
