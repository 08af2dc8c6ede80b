// SPDX-License-Identifier: GPL-2.0
/*
 * etcd_put - the benchmark's etcd client: N threads, each with its own
 * connection, each sending one KV.Put of a --size byte value and waiting
 * for the reply, which etcd sends once the entry is committed in the Raft
 * log (a majority of the members: 2 of 3) and applied.
 *
 * No C gRPC library is packaged, so this speaks gRPC over cleartext
 * HTTP/2 (h2c, prior knowledge) itself, the little of it a unary call
 * needs:
 *
 *   connection  preface, SETTINGS (ours; the server's acked), a large
 *               connection receive window; the server's PINGs answered and
 *               its WINDOW_UPDATEs counted against what we send
 *   request     HEADERS (HPACK literals without indexing: :method POST,
 *               :scheme http, :path /etcdserverpb.KV/Put, :authority,
 *               content-type application/grpc, te trailers) and one DATA
 *               frame with END_STREAM: the gRPC length prefix and a
 *               PutRequest (key = field 1, value = field 2)
 *   reply       read until END_STREAM on the request's stream; it succeeded
 *               when a DATA frame (the PutResponse) came before it: gRPC
 *               answers a failed call with trailers only, so the headers
 *               need no decoding
 *
 * Keys cycle over 1024 per thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"

#define F_DATA		0x0
#define F_HEADERS	0x1
#define F_RST_STREAM	0x3
#define F_SETTINGS	0x4
#define F_PING		0x6
#define F_GOAWAY	0x7
#define F_WINDOW_UPDATE	0x8
#define FL_END_STREAM	0x1
#define FL_ACK		0x1
#define FL_END_HEADERS	0x4
#define FL_PADDED	0x8
#define FL_PRIORITY	0x20

#define RECV_WINDOW	(1u << 30)

static const char usage[] =
"Usage: etcd_put --addr ADDR [--port P] [-t THREADS] [-s SIZE] [-n COUNT]\n"
"                [-d SECONDS] [-l LATFILE]\n";

struct cfg {
	const char *addr;
	int port;
	struct bench_opts o;
};

static int opt(const char *name, const char *val, void *arg)
{
	struct cfg *c = arg;

	if (!strcmp(name, "--addr"))
		c->addr = val;
	else if (!strcmp(name, "--port"))
		c->port = atoi(val);
	else
		return -1;
	return 0;
}

struct conn {
	int fd;
	int tid;
	uint32_t stream;	/* id of the last request */
	int64_t send_window;	/* connection level, granted by the server */
	uint64_t recv_data;	/* DATA bytes since our last WINDOW_UPDATE */
	uint8_t *rbuf;
	size_t rlen, roff, rcap;
	uint8_t *req;		/* HEADERS + DATA frames of a request */
	size_t req_len, key_off, data_len;
	int size;
	bool said;
};

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static void frame_hdr(uint8_t *p, uint32_t len, uint8_t type, uint8_t flags,
		      uint32_t stream)
{
	p[0] = len >> 16;
	p[1] = len >> 8;
	p[2] = len;
	p[3] = type;
	p[4] = flags;
	p[5] = stream >> 24 & 0x7f;
	p[6] = stream >> 16;
	p[7] = stream >> 8;
	p[8] = stream;
}

static int send_frame(struct conn *k, uint8_t type, uint8_t flags,
		      uint32_t stream, const void *payload, uint32_t len)
{
	uint8_t buf[9 + 64];

	if (len > 64)
		return -1;
	frame_hdr(buf, len, type, flags, stream);
	memcpy(buf + 9, payload, len);
	return write_all(k->fd, buf, 9 + len);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* HPACK integer with an @n-bit prefix whose high bits are @first. */
static size_t hpack_int(uint8_t *p, uint8_t first, int n, uint32_t v)
{
	uint32_t max = (1u << n) - 1;
	size_t i = 0;

	if (v < max) {
		p[i++] = first | v;
		return i;
	}
	p[i++] = first | max;
	v -= max;
	while (v >= 128) {
		p[i++] = (v & 0x7f) | 0x80;
		v >>= 7;
	}
	p[i++] = v;
	return i;
}

static size_t hpack_str(uint8_t *p, const char *s)
{
	size_t len = strlen(s), i = hpack_int(p, 0, 7, len);

	memcpy(p + i, s, len);
	return i + len;
}

static size_t varint(uint8_t *p, uint64_t v)
{
	size_t i = 0;

	while (v >= 128) {
		p[i++] = (v & 0x7f) | 0x80;
		v >>= 7;
	}
	p[i++] = v;
	return i;
}

/*
 * Build the request frames once; the key's digits and the stream ids are
 * patched in before each send.
 */
static int build_request(struct conn *k, const char *authority)
{
	uint8_t hb[256], tmp[16], *p;
	size_t hl = 0, pl;
	char key[32];

	hb[hl++] = 0x83;			/* :method POST */
	hb[hl++] = 0x86;			/* :scheme http */
	hl += hpack_int(hb + hl, 0x00, 4, 4);	/* :path, not indexed */
	hl += hpack_str(hb + hl, "/etcdserverpb.KV/Put");
	hl += hpack_int(hb + hl, 0x00, 4, 1);	/* :authority */
	hl += hpack_str(hb + hl, authority);
	hl += hpack_int(hb + hl, 0x00, 4, 31);	/* content-type */
	hl += hpack_str(hb + hl, "application/grpc");
	hb[hl++] = 0x00;			/* te: trailers, new name */
	hl += hpack_str(hb + hl, "te");
	hl += hpack_str(hb + hl, "trailers");

	snprintf(key, sizeof(key), "bench/%02d/%04d", k->tid % 100, 0);
	/* PutRequest: 1: key, 2: value */
	pl = 1 + varint(tmp, strlen(key)) + strlen(key) + 1 +
	     varint(tmp, k->size) + k->size;
	k->data_len = 5 + pl;
	k->req_len = 9 + hl + 9 + k->data_len;
	k->req = malloc(k->req_len);
	if (!k->req)
		return -1;
	p = k->req;
	frame_hdr(p, hl, F_HEADERS, FL_END_HEADERS, 0);
	memcpy(p + 9, hb, hl);
	p += 9 + hl;
	frame_hdr(p, k->data_len, F_DATA, FL_END_STREAM, 0);
	p += 9;
	*p++ = 0;				/* not compressed */
	put32(p, pl);
	p += 4;
	*p++ = 0x0a;
	p += varint(p, strlen(key));
	k->key_off = p - k->req;
	memcpy(p, key, strlen(key));
	p += strlen(key);
	*p++ = 0x12;
	p += varint(p, k->size);
	bench_fill(p, k->size, k->tid);
	return 0;
}

static void set_stream(uint8_t *frame, uint32_t stream)
{
	frame[5] = stream >> 24 & 0x7f;
	frame[6] = stream >> 16;
	frame[7] = stream >> 8;
	frame[8] = stream;
}

/* The next frame: header fields and a pointer to its payload, or -1. */
static int read_frame(struct conn *k, uint8_t *type, uint8_t *flags,
		      uint32_t *stream, uint8_t **payload, uint32_t *len)
{
	ssize_t n;
	uint8_t *h;

	for (;;) {
		if (k->rlen - k->roff >= 9) {
			h = k->rbuf + k->roff;
			*len = h[0] << 16 | h[1] << 8 | h[2];
			if (k->rlen - k->roff >= 9 + *len)
				break;
			if (9 + *len > k->rcap)
				return -1;	/* bigger than we allow */
		}
		if (k->roff) {
			memmove(k->rbuf, k->rbuf + k->roff, k->rlen - k->roff);
			k->rlen -= k->roff;
			k->roff = 0;
		}
		n = read(k->fd, k->rbuf + k->rlen, k->rcap - k->rlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		k->rlen += n;
	}
	*type = h[3];
	*flags = h[4];
	*stream = (h[5] & 0x7f) << 24 | h[6] << 16 | h[7] << 8 | h[8];
	*payload = h + 9;
	k->roff += 9 + *len;
	return 0;
}

/*
 * Handle a connection-level frame: SETTINGS (ack it), PING (answer it),
 * WINDOW_UPDATE (count it), GOAWAY (fail). 1 if it was one, 0 if not,
 * -1 on failure.
 */
static int conn_frame(struct conn *k, uint8_t type, uint8_t flags,
		      uint32_t stream, uint8_t *p, uint32_t len)
{
	switch (type) {
	case F_SETTINGS:
		if (!(flags & FL_ACK) &&
		    send_frame(k, F_SETTINGS, FL_ACK, 0, NULL, 0))
			return -1;
		return 1;
	case F_PING:
		if (!(flags & FL_ACK) && len == 8 &&
		    send_frame(k, F_PING, FL_ACK, 0, p, 8))
			return -1;
		return 1;
	case F_WINDOW_UPDATE:
		if (!stream && len == 4)
			k->send_window += (p[0] & 0x7f) << 24 | p[1] << 16 |
					  p[2] << 8 | p[3];
		return 1;
	case F_GOAWAY:
		if (!k->said)
			fprintf(stderr, "%s: the server sent GOAWAY\n",
				bench_prog);
		k->said = true;
		return -1;
	}
	return 0;
}

static void *conn_init(int tid, void *arg)
{
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	struct cfg *c = arg;
	struct conn *k = calloc(1, sizeof(*k));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	uint8_t settings[12], wu[4];
	char authority[64];
	int one = 1;

	if (!k)
		return NULL;
	k->tid = tid;
	k->size = c->o.size;
	k->send_window = 65535;
	k->rcap = 1 << 20;
	k->rbuf = malloc(k->rcap);
	sa.sin_port = htons(c->port);
	snprintf(authority, sizeof(authority), "%s:%d", c->addr, c->port);
	if (!k->rbuf || inet_pton(AF_INET, c->addr, &sa.sin_addr) != 1 ||
	    build_request(k, authority))
		return NULL;
	k->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (k->fd < 0 || connect(k->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "%s: cannot connect to %s: %s\n", bench_prog,
			authority, strerror(errno));
		return NULL;
	}
	setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* ENABLE_PUSH 0, INITIAL_WINDOW_SIZE 1 GiB */
	settings[0] = 0;
	settings[1] = 2;
	put32(settings + 2, 0);
	settings[6] = 0;
	settings[7] = 4;
	put32(settings + 8, RECV_WINDOW);
	put32(wu, RECV_WINDOW - 65535);
	if (write_all(k->fd, preface, sizeof(preface) - 1) ||
	    send_frame(k, F_SETTINGS, 0, 0, settings, sizeof(settings)) ||
	    send_frame(k, F_WINDOW_UPDATE, 0, 0, wu, 4)) {
		fprintf(stderr, "%s: cannot talk to %s\n", bench_prog,
			authority);
		return NULL;
	}
	k->stream = 1;
	return k;
}

static int conn_op(void *ctx, uint64_t seq)
{
	struct conn *k = ctx;
	uint8_t type, flags, *p, wu[4];
	uint32_t stream, len;
	bool data = false;
	char digits[8];
	int rc;

	snprintf(digits, sizeof(digits), "%04d", (int)(seq % 1024));
	memcpy(k->req + k->key_off + 9, digits, 4);
	set_stream(k->req, k->stream);
	set_stream(k->req + k->req_len - 9 - k->data_len, k->stream);
	/* wait for the server to grant the connection window we need */
	while (k->send_window < (int64_t)k->data_len) {
		if (read_frame(k, &type, &flags, &stream, &p, &len) ||
		    conn_frame(k, type, flags, stream, p, len) < 0)
			goto broken;
	}
	if (write_all(k->fd, k->req, k->req_len))
		goto broken;
	k->send_window -= k->data_len;
	for (;;) {
		if (read_frame(k, &type, &flags, &stream, &p, &len))
			goto broken;
		rc = conn_frame(k, type, flags, stream, p, len);
		if (rc < 0)
			goto broken;
		if (rc)
			continue;
		if (type == F_DATA) {
			k->recv_data += len;
			if (stream == k->stream && len >= 5)
				data = true;
		}
		if (stream != k->stream)
			continue;
		if (type == F_RST_STREAM) {
			if (!k->said)
				fprintf(stderr, "%s: the server reset the stream\n",
					bench_prog);
			k->said = true;
			break;
		}
		if ((type == F_DATA || type == F_HEADERS) &&
		    (flags & FL_END_STREAM))
			break;
	}
	if (k->recv_data > RECV_WINDOW / 2) {
		put32(wu, k->recv_data);
		if (send_frame(k, F_WINDOW_UPDATE, 0, 0, wu, 4))
			goto broken;
		k->recv_data = 0;
	}
	k->stream += 2;
	if (!data && !k->said) {
		fprintf(stderr, "%s: Put failed (a gRPC error status)\n",
			bench_prog);
		k->said = true;
	}
	return data ? 0 : -1;
broken:
	if (!k->said)
		fprintf(stderr, "%s: connection broken: %s\n", bench_prog,
			errno ? strerror(errno) : "protocol error");
	k->said = true;
	return -1;
}

static void conn_fini(void *ctx)
{
	struct conn *k = ctx;

	close(k->fd);
	free(k->rbuf);
	free(k->req);
	free(k);
}

int main(int argc, char **argv)
{
	static const struct bench_ops ops = {
		.thread_init = conn_init,
		.op = conn_op,
		.thread_fini = conn_fini,
	};
	struct cfg c = { .port = 2379 };
	struct bench_result r;
	int rc;

	bench_prog = "etcd_put";
	bench_parse(argc, argv, &c.o, opt, &c, usage);
	if (!c.addr) {
		fprintf(stderr, "%s: --addr is required\n%s", bench_prog, usage);
		return 2;
	}
	if (c.o.batch != 1 || c.o.size > 16000) {
		fprintf(stderr, "%s: only --batch 1 and --size up to 16000\n",
			bench_prog);
		return 2;
	}
	rc = bench_run(&c.o, &ops, &c, &r);
	bench_print(&c.o, &r, "commit=majority");
	return rc ? 1 : bench_status(&r);
}
