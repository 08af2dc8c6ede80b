// SPDX-License-Identifier: GPL-2.0
/*
 * Host-only tests of krepd --relay and the relay session: SHA-256 against
 * the FIPS 180-4 examples, HMAC-SHA256 against RFC 4231, the framing
 * (round trips, truncated, oversized and empty frames), the secret file's
 * checks, and the relay served in a child process on loopback TCP with a
 * fake kernel behind it (krep_relay_nl_ops over datagram socketpairs):
 * the handshake both ways, a wrong secret, a relay that cannot prove the
 * secret, requests, dumps, errors with their extack, deadlines, events,
 * heartbeats, the client limit and protocol violations. No kernel module
 * is needed. Output is TAP; the exit status is 1 if any check failed.
 *
 *   test_relay                       run the tests
 *   test_relay probe ADDR:PORT SECRET_FILE get|bad-set|set-cluster NAME
 *                                    talk to a real relay (relay_smoke.sh)
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/krep.h>
#include <netlink/genl/genl.h>

#include "attrs.h"
#include "genl.h"
#include "relay.h"
#include "relay_proto.h"
#include "session_relay.h"
#include "sha256.h"
#include "tap.h"


static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void hex(const uint8_t *p, size_t len, char *out)
{
	size_t i;

	for (i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

/* ---- SHA-256, HMAC ----------------------------------------------------- */

static void test_sha256(void)
{
	static const struct {
		const char *msg;
		const char *digest;
	} v[] = {
		/* FIPS 180-4 examples (NIST CSRC, SHA256.pdf, SHA2_Additional) */
		{ "abc",
		  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "",
		  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
		  "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	uint8_t d[KREP_SHA256_LEN], d2[KREP_SHA256_LEN];
	struct krep_sha256 c;
	char h[2 * KREP_SHA256_LEN + 1];
	static char million[1000000];
	size_t i, off, step;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		krep_sha256(v[i].msg, strlen(v[i].msg), d);
		hex(d, sizeof(d), h);
		CHECK(!strcmp(h, v[i].digest), "sha256: FIPS 180-4 '%.20s%s' (%zu bytes)",
		      v[i].msg, strlen(v[i].msg) > 20 ? "..." : "",
		      strlen(v[i].msg));
	}
	memset(million, 'a', sizeof(million));
	krep_sha256(million, sizeof(million), d);
	hex(d, sizeof(d), h);
	CHECK(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
	      "sha256: FIPS 180-4 one million 'a'");
	/* the same in uneven pieces, across block and padding boundaries */
	for (step = 1; step <= 131; step += 13) {
		krep_sha256_init(&c);
		for (off = 0; off < sizeof(million); off += step)
			krep_sha256_update(&c, million + off,
					   sizeof(million) - off < step ?
					   sizeof(million) - off : step);
		krep_sha256_final(&c, d2);
		if (memcmp(d, d2, sizeof(d)))
			break;
	}
	CHECK(step > 131, "sha256: updates of 1..131 bytes give the same digest");
	/* lengths around the padding boundary (55, 56, 63, 64 bytes) */
	for (i = 54; i <= 65; i++) {
		krep_sha256(million, i, d);
		krep_sha256_init(&c);
		krep_sha256_update(&c, million, i / 2);
		krep_sha256_update(&c, million + i / 2, i - i / 2);
		krep_sha256_final(&c, d2);
		if (memcmp(d, d2, sizeof(d)))
			break;
	}
	CHECK(i > 65, "sha256: messages of 54..65 bytes in one piece or two");
	krep_sha256(million, 64, d);
	hex(d, sizeof(d), h);
	CHECK(!strcmp(h, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"),
	      "sha256: 64 x 'a' (a whole block plus a padding block)");
}

static void test_hmac(void)
{
	static const uint8_t key4[25] = {
		1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
		19, 20, 21, 22, 23, 24, 25,
	};
	uint8_t k0b[20], kaa20[20], k0c[20], kaa131[131], dd[50], cd[50];
	const struct {
		const uint8_t *key;
		size_t klen;
		const void *data;
		size_t dlen;
		const char *mac;	/* test 5: the first 128 bits only */
	} v[] = {
		{ k0b, 20, "Hi There", 8,
		  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
		{ (const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28,
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
		{ kaa20, 20, dd, 50,
		  "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
		{ key4, 25, cd, 50,
		  "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
		{ k0c, 20, "Test With Truncation", 20,
		  "a3b6167473100ee06e0c796c2955552b" },
		{ kaa131, 131,
		  "Test Using Larger Than Block-Size Key - Hash Key First", 54,
		  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
		{ kaa131, 131,
		  "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
		  152,
		  "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
	};
	uint8_t mac[KREP_SHA256_LEN];
	struct krep_hmac_sha256 h;
	char text[2 * KREP_SHA256_LEN + 1];
	size_t i;

	memset(k0b, 0x0b, sizeof(k0b));
	memset(kaa20, 0xaa, sizeof(kaa20));
	memset(k0c, 0x0c, sizeof(k0c));
	memset(kaa131, 0xaa, sizeof(kaa131));
	memset(dd, 0xdd, sizeof(dd));
	memset(cd, 0xcd, sizeof(cd));
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		krep_hmac_sha256_init(&h, v[i].key, v[i].klen);
		krep_hmac_sha256_update(&h, v[i].data, v[i].dlen);
		krep_hmac_sha256_final(&h, mac);
		hex(mac, sizeof(mac), text);
		text[strlen(v[i].mac)] = '\0';
		CHECK(!strcmp(text, v[i].mac), "hmac-sha256: RFC 4231 test case %zu",
		      i + 1);
	}
	CHECK(krep_sha256_equal("abcd", "abcd", 4) &&
	      !krep_sha256_equal("abcd", "abce", 4) &&
	      !krep_sha256_equal("xbcd", "abcd", 4),
	      "krep_sha256_equal");
}

/* ---- framing ----------------------------------------------------------- */

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void test_frames(void)
{
	struct krep_relay_buf b = { 0 }, in = { 0 };
	struct krep_relay_frame f;
	uint8_t hdr[8], nonce[KREP_RELAY_NONCE_LEN], mac[KREP_RELAY_MAC_LEN];
	uint8_t n2[KREP_RELAY_NONCE_LEN], m2[KREP_RELAY_MAC_LEN];
	uint8_t *big;
	uint16_t ver, fam;
	uint32_t flags, grp;
	size_t i, total;
	long n;
	int sp[2], err, got;
	bool ok;

	CHECK(!krep_relay_frame_put(&b, KREP_RELAY_PING, NULL, 0) &&
	      !krep_relay_frame_put(&b, KREP_RELAY_REQUEST, "hello", 5) &&
	      b.len == 5 + 10, "frames: put a PING and a 5-byte REQUEST");
	CHECK(b.data[0] == 0 && b.data[1] == 0 && b.data[2] == 0 &&
	      b.data[3] == 1 && b.data[4] == KREP_RELAY_PING,
	      "frames: big-endian length counts the type byte");
	n = krep_relay_frame_parse(b.data, b.len, &f);
	CHECK(n == 5 && f.type == KREP_RELAY_PING && f.len == 0,
	      "frames: parse the PING");
	n = krep_relay_frame_parse(b.data + 5, b.len - 5, &f);
	CHECK(n == 10 && f.type == KREP_RELAY_REQUEST && f.len == 5 &&
	      !memcmp(f.payload, "hello", 5), "frames: parse the REQUEST");
	ok = true;
	for (i = 0; i < 10; i++)
		ok &= krep_relay_frame_parse(b.data + 5, i, &f) == 0;
	CHECK(ok, "frames: every truncation of a frame needs more bytes");

	be32(hdr, 0);
	CHECK(krep_relay_frame_parse(hdr, 8, &f) == -EPROTO,
	      "frames: length 0 is refused");
	be32(hdr, KREP_RELAY_FRAME_MAX + 1);
	CHECK(krep_relay_frame_parse(hdr, 4, &f) == -EMSGSIZE,
	      "frames: a length of 1 MiB + 1 is refused from the header alone");
	be32(hdr, 0xffffffff);
	CHECK(krep_relay_frame_parse(hdr, 4, &f) == -EMSGSIZE,
	      "frames: a length of 4 GiB - 1 is refused");
	be32(hdr, KREP_RELAY_FRAME_MAX);
	CHECK(krep_relay_frame_parse(hdr, 8, &f) == 0,
	      "frames: a length of 1 MiB is valid (waits for its bytes)");
	krep_relay_buf_free(&b);

	big = calloc(1, KREP_RELAY_PAYLOAD_MAX + 1);
	if (!big)
		exit(2);
	CHECK(krep_relay_frame_put(&b, KREP_RELAY_REPLY, big,
				   KREP_RELAY_PAYLOAD_MAX + 1) == -EMSGSIZE &&
	      !krep_relay_buf_pending(&b),
	      "frames: a payload of 1 MiB is refused (1 MiB - 1 is the most)");
	CHECK(!krep_relay_frame_put(&b, KREP_RELAY_REPLY, big,
				    KREP_RELAY_PAYLOAD_MAX) &&
	      krep_relay_frame_parse(b.data, b.len, &f) ==
	      (long)(4 + KREP_RELAY_FRAME_MAX) && f.len == KREP_RELAY_PAYLOAD_MAX,
	      "frames: the largest frame round-trips");

	/* through a stream, in pieces: the largest frame, then a PING */
	krep_relay_frame_put(&b, KREP_RELAY_PING, NULL, 0);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
		exit(2);
	fcntl(sp[1], F_SETFL, O_NONBLOCK);
	total = b.len;
	got = 0;
	err = 0;
	for (i = 0; i < total;) {
		size_t chunk = total - i < 99991 ? total - i : 99991;

		if (write(sp[0], b.data + i, chunk) != (ssize_t)chunk) {
			err = -1;
			break;
		}
		i += chunk;
		while ((n = krep_relay_buf_recv(sp[1], &in)) > 0) {
			while (krep_relay_buf_next(&in, &f) > 0) {
				if (got == 0 && (f.type != KREP_RELAY_REPLY ||
						 f.len != KREP_RELAY_PAYLOAD_MAX))
					err = -2;
				if (got == 1 && f.type != KREP_RELAY_PING)
					err = -3;
				got++;
			}
		}
		if (n != -EAGAIN)
			err = -4;
	}
	CHECK(!err && got == 2,
	      "frames: the largest frame and a PING read from a stream in 99991-byte pieces");
	krep_relay_buf_free(&in);
	krep_relay_buf_free(&b);

	/* an oversized header on the stream: refused before its payload */
	be32(hdr, KREP_RELAY_FRAME_MAX + 1);
	hdr[4] = KREP_RELAY_REPLY;
	n = write(sp[0], hdr, 5);
	n = krep_relay_buf_recv(sp[1], &in);
	while (n > 0 && (err = krep_relay_buf_next(&in, &f)) > 0)
		;
	CHECK(n == 5 && err == -EMSGSIZE &&
	      krep_relay_buf_recv(sp[1], &in) == -EMSGSIZE,
	      "frames: an oversized header from a stream is refused");
	krep_relay_buf_free(&in);
	close(sp[0]);
	close(sp[1]);
	free(big);

	/* handshake frames */
	for (i = 0; i < sizeof(nonce); i++)
		nonce[i] = i;
	memset(mac, 0x5a, sizeof(mac));
	krep_relay_hello_put(&b, nonce);
	krep_relay_buf_next(&b, &f);
	CHECK(!krep_relay_hello_get(&f, &ver, n2) && ver == KREP_RELAY_VERSION &&
	      !memcmp(n2, nonce, sizeof(nonce)) && f.len == 34,
	      "frames: HELLO round-trips (34 bytes)");
	f.len--;
	CHECK(krep_relay_hello_get(&f, &ver, n2) == -EPROTO,
	      "frames: a short HELLO is refused");
	krep_relay_auth_put(&b, KREP_RELAY_F_EVENTS, nonce, mac);
	krep_relay_buf_next(&b, &f);
	CHECK(!krep_relay_auth_get(&f, &flags, n2, m2) &&
	      flags == KREP_RELAY_F_EVENTS && !memcmp(n2, nonce, sizeof(n2)) &&
	      !memcmp(m2, mac, sizeof(m2)) && f.len == 68,
	      "frames: AUTH round-trips (68 bytes)");
	f.type = KREP_RELAY_HELLO;
	CHECK(krep_relay_auth_get(&f, &flags, n2, m2) == -EPROTO,
	      "frames: AUTH of the wrong type is refused");
	krep_relay_auth_ok_put(&b, mac, 0x1234, 0x89abcdef);
	krep_relay_buf_next(&b, &f);
	CHECK(!krep_relay_auth_ok_get(&f, m2, &fam, &grp) && fam == 0x1234 &&
	      grp == 0x89abcdef && !memcmp(m2, mac, sizeof(m2)) && f.len == 38,
	      "frames: AUTH_OK round-trips (38 bytes)");
	krep_relay_buf_free(&b);
}

/* ---- secret files ------------------------------------------------------ */

static char tmpdir[] = "/tmp/test_relay.XXXXXX";

static char *write_file(const char *name, const char *text, mode_t mode)
{
	static char paths[8][256];
	static int n;
	char *p = paths[n++ % 8];
	int fd;

	snprintf(p, sizeof(paths[0]), "%s/%s", tmpdir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    fchmod(fd, mode) || close(fd)) {
		perror(p);
		exit(2);
	}
	return p;
}

static const char *S1 = "correct horse battery staple\n";
static const char *S2 = "incorrect horse battery staple\n";
static char *s1_path, *s2_path;

static void test_secret(void)
{
	struct krep_relay_secret s;
	char err[512], *p;
	int ret;

	ret = krep_relay_secret_load(s1_path, &s, err, sizeof(err));
	CHECK(!ret && s.len == strlen(S1) - 1 && !memcmp(s.key, S1, s.len),
	      "secret: read, without its trailing newline");
	p = write_file("open", "0123456789abcdef0123\n", 0640);
	ret = krep_relay_secret_load(p, &s, err, sizeof(err));
	CHECK(ret == -EPERM && strstr(err, "accessible by group or others (mode 0640)"),
	      "secret: a group-readable file is refused: %s", err);
	p = write_file("world", "0123456789abcdef0123\n", 0604);
	ret = krep_relay_secret_load(p, &s, err, sizeof(err));
	CHECK(ret == -EPERM, "secret: a world-readable file is refused");
	p = write_file("short", "0123456789abcde\n", 0600);
	ret = krep_relay_secret_load(p, &s, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "holds 15 bytes: at least 16"),
	      "secret: 15 bytes and a newline are too few: %s", err);
	p = write_file("sixteen", "0123456789abcdef", 0400);
	ret = krep_relay_secret_load(p, &s, err, sizeof(err));
	CHECK(!ret && s.len == 16, "secret: 16 bytes without a newline will do");
	ret = krep_relay_secret_load("/nonexistent/secret", &s, err,
				     sizeof(err));
	CHECK(ret == -ENOENT && strstr(err, "cannot open secret file"),
	      "secret: a missing file: %s", err);
	ret = krep_relay_secret_load(tmpdir, &s, err, sizeof(err));
	CHECK(ret && strstr(err, "not a regular file"),
	      "secret: a directory is refused");
}

/* ---- a fake kernel behind the relay ------------------------------------ */

#define FAKE_FAMILY	0x21
#define FAKE_GROUP	7

/*
 * The deadline of what should come at once (a reply, an event, a close):
 * long, so that only a failure meets it, never a busy host
 */
#define WAIT_MS		10000

enum {
	FK_ECHO = 1,	/* the request back as the reply, then an ack */
	FK_DUMP,	/* 5 messages in two datagrams, then NLMSG_DONE */
	FK_FAIL,	/* -EINVAL with an extack message */
	FK_SILENT,	/* nothing */
	FK_EVENT,	/* an event, then an ack */
	FK_REFUSE,	/* the socket refuses the request: -EPERM */
	FK_WARN,	/* an ack carrying a message */
	FK_EVENT2,	/* one event datagram of two messages, then an ack */
};

struct fake_nl {
	int kreq, kev;		/* the kernel's ends */
};

static int fake_open(void *ctx, bool events, struct krep_relay_nl *nl,
		     const char **why)
{
	struct fake_nl *f = calloc(1, sizeof(*f));
	int sp[2];

	(void)ctx;
	if (!f || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp)) {
		*why = "fake: socketpair";
		free(f);
		return -EIO;
	}
	nl->req_fd = sp[0];
	f->kreq = sp[1];
	nl->ev_fd = f->kev = -1;
	nl->group = 0;
	if (events) {
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp)) {
			*why = "fake: socketpair";
			return -EIO;
		}
		nl->ev_fd = sp[0];
		f->kev = sp[1];
		nl->group = FAKE_GROUP;
	}
	nl->family = FAKE_FAMILY;
	nl->priv = f;
	return 0;
}

static void fake_close(void *ctx, struct krep_relay_nl *nl)
{
	struct fake_nl *f = nl->priv;

	(void)ctx;
	close(nl->req_fd);
	close(f->kreq);
	if (f->kev >= 0) {
		close(nl->ev_fd);
		close(f->kev);
	}
	free(f);
}

/* Append a genl message of @cmd with u32 attribute 1 = @val to @p. */
static size_t put_genl(uint8_t *p, uint16_t flags, uint32_t seq, uint8_t cmd,
		       uint32_t val)
{
	struct nlmsghdr *nlh = (void *)p;
	struct genlmsghdr *gh = (void *)(p + NLMSG_HDRLEN);
	struct nlattr *a = (void *)(p + NLMSG_HDRLEN + GENL_HDRLEN);

	memset(p, 0, NLMSG_HDRLEN + GENL_HDRLEN + NLA_HDRLEN + 4);
	nlh->nlmsg_len = NLMSG_HDRLEN + GENL_HDRLEN + NLA_HDRLEN + 4;
	nlh->nlmsg_type = FAKE_FAMILY;
	nlh->nlmsg_flags = flags;
	nlh->nlmsg_seq = seq;
	gh->cmd = cmd;
	gh->version = 1;
	a->nla_type = 1;
	a->nla_len = NLA_HDRLEN + 4;
	memcpy(a + 1, &val, 4);
	return nlh->nlmsg_len;
}

/* An NLMSG_ERROR for @req: @err, with @text as its extack message. */
static size_t put_err(uint8_t *p, const struct nlmsghdr *req, int err,
		      const char *text)
{
	struct nlmsghdr *nlh = (void *)p;
	struct nlmsgerr *e = NLMSG_DATA(nlh);
	struct nlattr *a = (void *)(e + 1);
	size_t tlen = text ? strlen(text) + 1 : 0;

	memset(p, 0, 256);
	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_flags = NLM_F_CAPPED;
	nlh->nlmsg_seq = req->nlmsg_seq;
	e->error = err;
	e->msg = *req;
	e->msg.nlmsg_len = NLMSG_HDRLEN;
	nlh->nlmsg_len = NLMSG_HDRLEN + sizeof(*e);
	if (text) {
		nlh->nlmsg_flags |= NLM_F_ACK_TLVS;
		a->nla_type = NLMSGERR_ATTR_MSG;
		a->nla_len = NLA_HDRLEN + tlen;
		memcpy(a + 1, text, tlen);
		nlh->nlmsg_len += NLA_ALIGN(a->nla_len);
	}
	return nlh->nlmsg_len;
}

static int fake_send(void *ctx, struct krep_relay_nl *nl, const void *msg,
		     size_t len)
{
	struct fake_nl *f = nl->priv;
	struct nlmsghdr req;
	struct genlmsghdr gh;
	uint8_t out[1024];
	size_t n;
	int i;

	(void)ctx;
	if (len < NLMSG_HDRLEN + GENL_HDRLEN)
		return -EINVAL;
	memcpy(&req, msg, sizeof(req));
	memcpy(&gh, (const uint8_t *)msg + NLMSG_HDRLEN, sizeof(gh));
	switch (gh.cmd) {
	case FK_ECHO:
		if (len > sizeof(out))
			return -EMSGSIZE;
		if (send(f->kreq, msg, len, 0) < 0)
			return -errno;
		break;
	case FK_DUMP:
		for (n = 0, i = 0; i < 3; i++)
			n += put_genl(out + n, NLM_F_MULTI, req.nlmsg_seq,
				      FK_DUMP, i);
		send(f->kreq, out, n, 0);
		for (n = 0; i < 5; i++)
			n += put_genl(out + n, NLM_F_MULTI, req.nlmsg_seq,
				      FK_DUMP, i);
		send(f->kreq, out, n, 0);
		memset(out, 0, NLMSG_LENGTH(4));
		((struct nlmsghdr *)out)->nlmsg_len = NLMSG_LENGTH(4);
		((struct nlmsghdr *)out)->nlmsg_type = NLMSG_DONE;
		((struct nlmsghdr *)out)->nlmsg_flags = NLM_F_MULTI;
		((struct nlmsghdr *)out)->nlmsg_seq = req.nlmsg_seq;
		send(f->kreq, out, NLMSG_LENGTH(4), 0);
		return 0;
	case FK_FAIL:
		send(f->kreq, out, put_err(out, &req, -EINVAL, "bad thing"), 0);
		return 0;
	case FK_SILENT:
		return 0;
	case FK_EVENT:
		if (f->kev >= 0)
			send(f->kev, out, put_genl(out, 0, 0, FK_EVENT, 77), 0);
		break;
	case FK_REFUSE:
		return -EPERM;
	case FK_WARN:
		send(f->kreq, out, put_err(out, &req, 0, "just so you know"), 0);
		return 0;
	case FK_EVENT2:
		if (f->kev >= 0) {
			n = put_genl(out, 0, 0, FK_EVENT, 77);
			n += put_genl(out + n, 0, 0, FK_EVENT, 78);
			send(f->kev, out, n, 0);
		}
		break;
	default:
		return -EOPNOTSUPP;
	}
	send(f->kreq, out, put_err(out, &req, 0, NULL), 0);
	return 0;
}

static const struct krep_relay_nl_ops fake_ops = {
	.open	= fake_open,
	.send	= fake_send,
	.close	= fake_close,
};

/* ---- the relay in a child ---------------------------------------------- */

static FILE *server_log;

static void log_to_file(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void log_to_file(int prio, const char *fmt, ...)
{
	va_list ap;

	(void)prio;
	va_start(ap, fmt);
	vfprintf(server_log, fmt, ap);
	va_end(ap);
	fputc('\n', server_log);
	fflush(server_log);
}

struct server {
	pid_t pid;
	int port;
	int stop;		/* write end of the stop pipe */
	char log[256];
};

static int listen_loopback(int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(fd, 16) || getsockname(fd, (struct sockaddr *)&sin, &len)) {
		perror("listen");
		exit(2);
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

static void server_start(struct server *s, const char *secret_path,
			 int max_clients)
{
	static struct krep_relay_secret secret;
	struct krep_relay_cfg cfg = {
		.secret = &secret,
		.ops = &fake_ops,
		.log = log_to_file,
		.max_clients = max_clients,
		.auth_ms = 300,
		.ping_ms = 100,
		.dead_ms = 500,
	};
	char err[512];
	int lfd, sp[2], ret;

	if (krep_relay_secret_load(secret_path, &secret, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
	snprintf(s->log, sizeof(s->log), "%s/relay-%d.log", tmpdir,
		 max_clients);
	lfd = listen_loopback(&s->port);
	if (pipe(sp))
		exit(2);
	fflush(stdout);
	s->pid = fork();
	if (s->pid < 0)
		exit(2);
	if (!s->pid) {
		close(sp[1]);
		server_log = fopen(s->log, "w");
		if (!server_log)
			_exit(2);
		ret = krep_relay_serve(lfd, sp[0], &cfg);
		fclose(server_log);
		_exit(ret ? 1 : 0);
	}
	close(sp[0]);
	close(lfd);
	s->stop = sp[1];
}

/* Stop it; its log's text (static) or NULL. */
static const char *server_stop(struct server *s)
{
	static char text[16384];
	int status = -1;
	FILE *f;
	size_t n;

	if (write(s->stop, "x", 1) != 1)
		kill(s->pid, SIGTERM);
	close(s->stop);
	waitpid(s->pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "relay: stops cleanly (status %#x)", status);
	f = fopen(s->log, "r");
	if (!f)
		return NULL;
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

static struct krep_session_addr addr_of(const struct server *s,
					const char *secret_path)
{
	struct krep_session_addr a = { .kind = KREP_SESSION_RELAY };

	snprintf(a.relay, sizeof(a.relay), "127.0.0.1:%d", s->port);
	snprintf(a.secret_file, sizeof(a.secret_file), "%s", secret_path);
	return a;
}

/* ---- a client that speaks the protocol by hand ------------------------- */

struct raw {
	int fd;
	struct krep_relay_buf in, out;
	uint8_t snonce[KREP_RELAY_NONCE_LEN];
};

static bool raw_connect(struct raw *r, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	memset(r, 0, sizeof(*r));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	r->fd = socket(AF_INET, SOCK_STREAM, 0);
	return r->fd >= 0 &&
	       !connect(r->fd, (struct sockaddr *)&sin, sizeof(sin));
}

/* The next frame other than PING; 1, 0 on EOF, -1 on error or timeout. */
static int raw_frame(struct raw *r, struct krep_relay_frame *f, int ms)
{
	struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
	long n;

	for (;;) {
		while ((n = krep_relay_buf_next(&r->in, f)) > 0)
			if (f->type != KREP_RELAY_PING)
				return 1;
		if (n < 0 || poll(&pfd, 1, ms) != 1)
			return -1;
		n = krep_relay_buf_recv(r->fd, &r->in);
		if (!n || n == -ECONNRESET)
			return 0;
		if (n < 0 && n != -EAGAIN)
			return -1;
	}
}

static bool raw_send(struct raw *r, uint8_t type, const void *p, size_t len)
{
	return !krep_relay_frame_put(&r->out, type, p, len) &&
	       !krep_relay_buf_send(r->fd, &r->out) &&
	       !krep_relay_buf_pending(&r->out);
}

static bool raw_hello(struct raw *r)
{
	struct krep_relay_frame f;
	uint16_t ver;

	return raw_frame(r, &f, WAIT_MS) == 1 &&
	       !krep_relay_hello_get(&f, &ver, r->snonce);
}

static bool raw_auth(struct raw *r, const char *secret_path)
{
	uint8_t cnonce[KREP_RELAY_NONCE_LEN] = { 1 }, mac[KREP_RELAY_MAC_LEN];
	struct krep_relay_secret s;
	struct krep_relay_frame f;
	uint16_t fam;
	uint32_t grp;
	char err[512];

	if (!raw_hello(r) ||
	    krep_relay_secret_load(secret_path, &s, err, sizeof(err)))
		return false;
	krep_relay_client_mac(&s, r->snonce, cnonce, mac);
	if (krep_relay_auth_put(&r->out, 0, cnonce, mac) ||
	    krep_relay_buf_send(r->fd, &r->out))
		return false;
	return raw_frame(r, &f, WAIT_MS) == 1 &&
	       !krep_relay_auth_ok_get(&f, mac, &fam, &grp) &&
	       fam == FAKE_FAMILY;
}

/* True if the relay closes the connection within @ms. */
static bool raw_closed(struct raw *r, int ms)
{
	struct krep_relay_frame f;
	uint64_t until = krep_relay_now_ms() + ms;
	int ret;

	do {
		ret = raw_frame(r, &f, ms);
		if (!ret)
			return true;
	} while (ret > 0 && krep_relay_now_ms() < until);
	return false;
}

static void raw_close(struct raw *r)
{
	close(r->fd);
	krep_relay_buf_free(&r->in);
	krep_relay_buf_free(&r->out);
}

/* ---- the session's side ------------------------------------------------ */

struct seen {
	int n;
	uint8_t cmd;
	uint32_t vals[8];
	uint32_t pid;
	uint16_t type;
};

static int on_msg(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct genlmsghdr *gh = nlmsg_data(nlh);
	struct nlattr *a = genlmsg_attrdata(gh, 0);
	struct seen *s = arg;

	if (s->n < 8 && genlmsg_attrlen(gh, 0) >= NLA_HDRLEN + 4)
		s->vals[s->n] = nla_get_u32(a);
	s->cmd = gh->cmd;
	s->pid = nlh->nlmsg_pid;
	s->type = nlh->nlmsg_type;
	s->n++;
	return 0;
}

static int request(struct krep_session *rs, uint8_t cmd, uint32_t val,
		   krep_genl_reply_fn fn, struct seen *s, int timeout_ms);

/* An event callback that makes a request, as a controller would. */
struct nested {
	struct krep_session *rs;
	struct seen events;
	int nreq, nreq_ok;
};

static int on_event_request(struct nl_msg *msg, void *arg)
{
	struct nested *n = arg;
	struct seen s;

	on_msg(msg, &n->events);
	n->nreq++;
	if (!request(n->rs, FK_ECHO, 100 + n->nreq, on_msg, &s, WAIT_MS) &&
	    s.n == 1 && s.vals[0] == (uint32_t)(100 + n->nreq))
		n->nreq_ok++;
	return 0;
}

static int fail_msg(struct nl_msg *msg, void *arg)
{
	(void)msg;
	(void)arg;
	return -EBADMSG;
}

static int request(struct krep_session *rs, uint8_t cmd, uint32_t val,
		   krep_genl_reply_fn fn, struct seen *s, int timeout_ms)
{
	struct nl_msg *m = krep_genl_msg_new(krep_session_family(rs), cmd, 0, 8);
	int err;

	memset(s, 0, sizeof(*s));
	if (!m || nla_put_u32(m, 1, val))
		exit(2);
	err = krep_session_request(rs, m, fn, s, timeout_ms);
	nlmsg_free(m);
	return err;
}

/*
 * The TCP socket of this process connected to 127.0.0.1:@port: -1 if none,
 * -2 if more than one.
 */
static int peer_socket(int port)
{
	struct sockaddr_in sin;
	socklen_t len;
	int fd, type, found = -1;

	for (fd = 3; fd < 1024; fd++) {
		len = sizeof(type);
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
		    type != SOCK_STREAM)
			continue;
		len = sizeof(sin);
		if (getpeername(fd, (struct sockaddr *)&sin, &len) ||
		    sin.sin_family != AF_INET || ntohs(sin.sin_port) != port)
			continue;
		if (found >= 0)
			return -2;
		found = fd;
	}
	return found;
}

/*
 * Wait up to @ms for the peer of @fd to close the connection, reading and
 * sending nothing (POLLRDHUP: whatever is still unread); true once it has.
 */
static bool peer_closed(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLRDHUP };
	uint64_t until = krep_relay_now_ms() + ms, now;

	while ((now = krep_relay_now_ms()) < until)
		if (poll(&pfd, 1, until - now) == 1 &&
		    pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))
			return true;
	return false;
}

/*
 * Serve the event descriptor for @ms, as a caller's poll loop would, or
 * until @n events have come (0: for @ms).
 */
static int serve_events_until(struct krep_session *rs, int n, int ms,
			      struct seen *s)
{
	struct pollfd pfd = { .fd = krep_session_event_fd(rs), .events = POLLIN };
	uint64_t until = krep_relay_now_ms() + ms, now;
	int err;

	while ((!n || s->n < n) && (now = krep_relay_now_ms()) < until) {
		if (poll(&pfd, 1, until - now) == 1) {
			err = krep_session_read_events(rs, on_msg, s);
			if (err)
				return err;
		}
	}
	return 0;
}

static void test_sessions(void)
{
	struct krep_session_addr a, bad;
	struct krep_session *rs, *more[3];
	const struct krep_genl_status *st;
	struct server srv;
	struct seen s;
	struct raw r;
	const char *why = NULL, *log;
	uint8_t msg[64];
	uint64_t t0;
	int err, i;

	server_start(&srv, s1_path, 3);
	a = addr_of(&srv, s1_path);

	rs = krep_session_open(&a, true, &why);
	CHECK(rs, "session: open with the right secret%s%s", rs ? "" : ": ",
	      rs ? "" : why);
	if (!rs) {
		server_stop(&srv);
		return;
	}
	CHECK(krep_session_family(rs) == FAKE_FAMILY,
	      "session: the relay's family id (%d)", krep_session_family(rs));

	err = request(rs, FK_ECHO, 42, on_msg, &s, WAIT_MS);
	CHECK(!err && s.n == 1 && s.cmd == FK_ECHO && s.vals[0] == 42 &&
	      s.pid == 0 && s.type == FAKE_FAMILY,
	      "session: a request and its reply (err %d, %d replies)", err, s.n);
	st = krep_session_status(rs);
	CHECK(st->err == 0 && !st->ea.msg_len, "session: status of a success");

	err = request(rs, FK_DUMP, 0, on_msg, &s, WAIT_MS);
	CHECK(!err && s.n == 5 && s.vals[0] == 0 && s.vals[4] == 4,
	      "session: a dump of 5 messages in 2 datagrams (err %d, %d)",
	      err, s.n);

	err = request(rs, FK_FAIL, 0, on_msg, &s, WAIT_MS);
	st = krep_session_status(rs);
	CHECK(err == -EINVAL && s.n == 0 && st->err == -EINVAL &&
	      st->ea.msg_len == 9 && !strcmp(st->msg, "bad thing"),
	      "session: the kernel's error and its extack message (err %d, '%s')",
	      err, st->msg);

	err = request(rs, FK_ECHO, 1, fail_msg, &s, WAIT_MS);
	CHECK(err == -EBADMSG, "session: the reply callback's error (%d)", err);

	t0 = krep_relay_now_ms();
	err = request(rs, FK_SILENT, 0, on_msg, &s, 300);
	t0 = krep_relay_now_ms() - t0;
	/* not before the deadline; after it, as soon as a busy host lets it */
	CHECK(err == -ETIMEDOUT && t0 >= 290 && t0 < 10 * 300,
	      "session: no answer is -ETIMEDOUT after the deadline (%d, %llu ms)",
	      err, (unsigned long long)t0);
	err = request(rs, FK_ECHO, 7, on_msg, &s, WAIT_MS);
	CHECK(!err && s.n == 1 && s.vals[0] == 7,
	      "session: works after a timeout (err %d)", err);

	err = request(rs, FK_REFUSE, 0, on_msg, &s, WAIT_MS);
	st = krep_session_status(rs);
	CHECK(err == -EPERM && strstr(st->msg, "cannot send to the kernel"),
	      "session: a request the socket refused: the relay's error (%d, '%s')",
	      err, st->msg);

	{
		struct nl_msg *m = krep_genl_msg_new(0x10, FK_ECHO, 0, 0);

		err = m ? krep_session_request(rs, m, on_msg, &s, WAIT_MS) : -ENOMEM;
		nlmsg_free(m);
		st = krep_session_status(rs);
		CHECK(err == -EPERM && strstr(st->msg, "only the krep family"),
		      "session: the relay forwards no other family (%d, '%s')",
		      err, st->msg);
	}

	err = request(rs, FK_WARN, 0, on_msg, &s, WAIT_MS);
	st = krep_session_status(rs);
	CHECK(!err && !st->err, "session: an ack with a message is a success (err %d)",
	      err);

	err = request(rs, FK_EVENT, 0, on_msg, &s, WAIT_MS);
	CHECK(!err, "session: a request that causes an event (err %d)", err);
	memset(&s, 0, sizeof(s));
	/* (a second one would show among the events of FK_EVENT2 below) */
	err = serve_events_until(rs, 1, WAIT_MS, &s);
	CHECK(!err && s.n == 1 && s.cmd == FK_EVENT && s.vals[0] == 77,
	      "session: the event arrives (err %d, %d events)", err, s.n);

	/* an event callback that makes requests */
	{
		struct nested n = { .rs = rs };

		err = request(rs, FK_EVENT2, 0, on_msg, &s, WAIT_MS);
		if (!err)
			err = request(rs, FK_EVENT2, 0, on_msg, &s, WAIT_MS);
		if (!err) {
			struct pollfd pfd = { .fd = krep_session_event_fd(rs),
					      .events = POLLIN };

			while (!err && n.events.n < 4 && poll(&pfd, 1, WAIT_MS) == 1)
				err = krep_session_read_events(rs, on_event_request,
							       &n);
		}
		CHECK(!err && n.events.n == 4 && n.events.vals[0] == 77 &&
		      n.events.vals[1] == 78 && n.events.vals[2] == 77 &&
		      n.events.vals[3] == 78 && n.nreq_ok == 4,
		      "session: requests from an event callback (err %d, %d events, %d/%d requests)",
		      err, n.events.n, n.nreq_ok, n.nreq);
	}

	/* wrong secret: the relay closes; the log says why */
	bad = addr_of(&srv, s2_path);
	why = NULL;
	more[0] = krep_session_open(&bad, false, &why);
	CHECK(!more[0] && why && strstr(why, "closed the connection after AUTH"),
	      "session: a wrong secret is refused: %s", why ? why : "(null)");
	snprintf(bad.relay, sizeof(bad.relay), "127.0.0.1");
	more[0] = krep_session_open(&bad, false, &why);
	CHECK(!more[0] && strstr(why, "missing ':PORT'"),
	      "session: a bad address: %s", why);

	/* by hand */
	CHECK(raw_connect(&r, srv.port) && raw_hello(&r) &&
	      raw_send(&r, KREP_RELAY_PING, NULL, 0) && raw_closed(&r, WAIT_MS),
	      "relay: a PING before AUTH closes the connection");
	raw_close(&r);
	CHECK(raw_connect(&r, srv.port) && raw_hello(&r) && raw_closed(&r, WAIT_MS),
	      "relay: no AUTH within auth_ms closes the connection");
	raw_close(&r);
	be32(msg, KREP_RELAY_FRAME_MAX + 1);
	msg[4] = KREP_RELAY_AUTH;
	CHECK(raw_connect(&r, srv.port) && raw_hello(&r) &&
	      write(r.fd, msg, 5) == 5 && raw_closed(&r, WAIT_MS),
	      "relay: an oversized frame closes the connection");
	raw_close(&r);
	CHECK(raw_connect(&r, srv.port) && raw_auth(&r, s1_path),
	      "relay: a hand-made handshake");
	{
		struct krep_relay_frame f;
		struct nlmsghdr nlh;
		size_t n = put_genl(msg, NLM_F_REQUEST, 4242, FK_ECHO, 5);

		((struct nlmsghdr *)msg)->nlmsg_pid = 31337;
		CHECK(raw_send(&r, KREP_RELAY_REQUEST, msg, n) &&
		      raw_frame(&r, &f, WAIT_MS) == 1 &&
		      f.type == KREP_RELAY_REPLY && f.len == n &&
		      (memcpy(&nlh, f.payload, sizeof(nlh)), nlh.nlmsg_seq == 4242) &&
		      nlh.nlmsg_pid == 0 && raw_frame(&r, &f, WAIT_MS) == 1 &&
		      f.type == KREP_RELAY_REPLY,
		      "relay: the kernel gets the client's sequence number and nlmsg_pid 0");
		CHECK(raw_send(&r, KREP_RELAY_REQUEST, msg, n - 1) &&
		      raw_closed(&r, WAIT_MS),
		      "relay: a REQUEST whose nlmsg_len is not its size closes the connection");
	}
	raw_close(&r);
	CHECK(raw_connect(&r, srv.port) && raw_auth(&r, s1_path) &&
	      raw_send(&r, KREP_RELAY_HELLO, msg, KREP_RELAY_HELLO_LEN) &&
	      raw_closed(&r, WAIT_MS),
	      "relay: a HELLO from the client closes the connection");
	raw_close(&r);

	/* the client limit: 3, one of them rs */
	for (i = 0; i < 2; i++)
		more[i] = krep_session_open(&a, false, &why);
	more[2] = krep_session_open(&a, false, &why);
	CHECK(more[0] && more[1] && !more[2] &&
	      strstr(why, "closed the connection before HELLO"),
	      "relay: the client over the limit is refused: %s", why);
	for (i = 0; i < 3; i++)
		krep_session_close(more[i]);

	/* heartbeats: served, the session outlives dead_ms */
	memset(&s, 0, sizeof(s));
	err = serve_events_until(rs, 0, 1200, &s);
	CHECK(!err && s.n == 0, "session: answers the relay's PINGs for 1.2 s (err %d)",
	      err);
	err = request(rs, FK_ECHO, 9, on_msg, &s, WAIT_MS);
	CHECK(!err && s.vals[0] == 9, "session: alive after 1.2 s (err %d)", err);
	/*
	 * not served: the relay drops it after dead_ms. Wait for the relay to
	 * close the connection (the only one to it left), without a word
	 * from the session, which would keep it alive.
	 */
	i = peer_socket(srv.port);
	CHECK(i >= 0 && peer_closed(i, 30000),
	      "session: left silent, the relay closes the connection (fd %d)", i);
	err = request(rs, FK_ECHO, 9, on_msg, &s, WAIT_MS);
	CHECK(err == -ECONNRESET && krep_relay_error(rs) &&
	      strstr(krep_relay_error(rs), "closed"),
	      "session: silent past dead_ms, dropped by the relay (err %d: %s)",
	      err, krep_relay_error(rs) ? krep_relay_error(rs) : "-");
	err = request(rs, FK_ECHO, 9, on_msg, &s, WAIT_MS);
	CHECK(err == -ECONNRESET, "session: stays broken (err %d)", err);
	CHECK(krep_session_read_events(rs, on_msg, &s) == -ECONNRESET,
	      "session: read_events says the channel broke");
	krep_session_close(rs);

	log = server_stop(&srv);
	CHECK(log, "relay: log written");
	if (!log)
		return;
	CHECK(strstr(log, "client 127.0.0.1:") && strstr(log, " connected\n"),
	      "relay log: connections");
	CHECK(strstr(log, ": authentication failed: wrong secret\n"),
	      "relay log: wrong secret");
	CHECK(strstr(log, ": authentication failed: sent PING instead of AUTH\n"),
	      "relay log: PING before AUTH");
	CHECK(strstr(log, ": authentication failed: no AUTH within 300 ms\n"),
	      "relay log: no AUTH in time");
	CHECK(strstr(log, ": protocol error: frame longer than 1 MiB\n"),
	      "relay log: oversized frame");
	CHECK(strstr(log, "protocol error: REQUEST of 27 bytes holds a message of 28\n"),
	      "relay log: inconsistent REQUEST");
	CHECK(strstr(log, "protocol error: unexpected HELLO frame (type 1)\n"),
	      "relay log: unexpected frame");
	CHECK(strstr(log, "refused: 3 clients already\n"),
	      "relay log: client limit");
	CHECK(strstr(log, "disconnected after 17 requests: silent for 500 ms\n"),
	      "relay log: the silent session, with its request count");
	CHECK(strstr(log, "disconnected after 0 requests: closed by the client\n"),
	      "relay log: a client that closed");
	if (tap_nfailed)
		diag("relay log:\n%s", log);
}

/*
 * A relay that does not hold the secret but accepts every AUTH: the client
 * must refuse its AUTH_OK. And one that speaks another version.
 */
static void fake_relay(int lfd, bool bad_version)
{
	uint8_t nonce[KREP_RELAY_NONCE_LEN] = { 9 }, mac[KREP_RELAY_MAC_LEN];
	struct krep_relay_buf b = { 0 };
	struct krep_relay_frame f;
	struct raw r = { 0 };
	int fd;

	fcntl(lfd, F_SETFL, 0);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		_exit(1);
	r.fd = fd;
	krep_relay_hello_put(&b, nonce);
	if (bad_version)
		b.data[6] = 2;
	krep_relay_buf_send(fd, &b);
	if (raw_frame(&r, &f, WAIT_MS) != 1)
		_exit(1);
	memset(mac, 0, sizeof(mac));
	krep_relay_auth_ok_put(&b, mac, FAKE_FAMILY, 0);
	krep_relay_buf_send(fd, &b);
	raw_frame(&r, &f, WAIT_MS);
	_exit(0);
}

static void test_impostor(void)
{
	struct krep_session_addr a = { .kind = KREP_SESSION_RELAY };
	struct krep_session *s;
	const char *why = NULL;
	int lfd, port, v, status;
	pid_t pid;

	for (v = 0; v < 2; v++) {
		lfd = listen_loopback(&port);
		fflush(stdout);
		pid = fork();
		if (!pid)
			fake_relay(lfd, v);
		close(lfd);
		snprintf(a.relay, sizeof(a.relay), "127.0.0.1:%d", port);
		snprintf(a.secret_file, sizeof(a.secret_file), "%s", s1_path);
		why = NULL;
		s = krep_session_open(&a, false, &why);
		if (!v)
			CHECK(!s && why &&
			      strstr(why, "failed to prove it holds the secret"),
			      "session: a relay without the secret is refused: %s",
			      why ? why : "(null)");
		else
			CHECK(!s && why && strstr(why, "version 2"),
			      "session: a relay of another version is refused: %s",
			      why ? why : "(null)");
		krep_session_close(s);
		waitpid(pid, &status, 0);
	}
	/* nobody listening */
	lfd = listen_loopback(&port);
	close(lfd);
	snprintf(a.relay, sizeof(a.relay), "127.0.0.1:%d", port);
	s = krep_session_open(&a, false, &why);
	CHECK(!s && strstr(why, "Connection refused"), "session: no relay: %s",
	      why);
}

/* ---- probe: relay_smoke.sh's client ------------------------------------ */

struct probe_out {
	const char *what;
	int n;
};

static int probe_print(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct genlmsghdr *gh = nlmsg_data(nlh);
	const char *cmd = krep_cmd_name(gh->cmd);
	struct probe_out *o = arg;

	printf("%s cmd=%s", o->what, cmd ? cmd : "?");
	if (genlmsg_attrlen(gh, 0) > 0) {
		putchar(' ');
		krep_attrs_print(stdout, &krep_attr_space,
				 genlmsg_attrdata(gh, 0),
				 genlmsg_attrlen(gh, 0));
	}
	putchar('\n');
	o->n++;
	return 0;
}

/*
 * get:              BROKER_GET, print the reply; 0 if it came
 * bad-set:          an empty BROKER_SET; 0 if the kernel refused it with
 *                   a message (printed)
 * set-cluster NAME: BROKER_SET of the cluster id with events on; 0 if the
 *                   ack and the BROKER_SET event came (printed)
 */
static int probe(int argc, char **argv)
{
	struct krep_session_addr a = { .kind = KREP_SESSION_RELAY };
	struct probe_out reply = { .what = "reply" }, event = { .what = "event" };
	bool get = argc == 5 && !strcmp(argv[4], "get");
	bool bad_set = argc == 5 && !strcmp(argv[4], "bad-set");
	bool set_cluster = argc == 6 && !strcmp(argv[4], "set-cluster");
	const struct krep_genl_status *st;
	struct krep_session *rs;
	struct nl_msg *m = NULL;
	const char *why = NULL;
	struct pollfd pfd;
	uint64_t until, now;
	int err, ret = 1;

	if (!get && !bad_set && !set_cluster) {
		fprintf(stderr, "usage: test_relay probe ADDR:PORT SECRET_FILE get|bad-set|set-cluster NAME\n");
		return 2;
	}
	snprintf(a.relay, sizeof(a.relay), "%s", argv[2]);
	snprintf(a.secret_file, sizeof(a.secret_file), "%s", argv[3]);
	rs = krep_session_open(&a, set_cluster, &why);
	if (!rs) {
		fprintf(stderr, "test_relay: %s\n", why);
		return 1;
	}
	m = krep_genl_msg_new(krep_session_family(rs),
			      get ? KREP_CMD_BROKER_GET : KREP_CMD_BROKER_SET,
			      0, 64);
	if (!m || (set_cluster && nla_put_string(m, KREP_A_CLUSTER_ID, argv[5])))
		goto out;
	err = krep_session_request(rs, m, probe_print, &reply, WAIT_MS);
	st = krep_session_status(rs);
	if (err) {
		printf("error %d (%s)%s%s\n", err, strerror(-err),
		       st->ea.msg_len ? ": " : "", st->ea.msg_len ? st->msg : "");
		if (krep_relay_error(rs))
			printf("channel: %s\n", krep_relay_error(rs));
		ret = bad_set && st->err && st->ea.msg_len ? 0 : 1;
		goto out;
	}
	if (bad_set) {
		printf("the kernel took an empty BROKER_SET\n");
		goto out;
	}
	if (get) {
		ret = reply.n ? 0 : 1;
		goto out;
	}
	pfd = (struct pollfd){ .fd = krep_session_event_fd(rs), .events = POLLIN };
	until = krep_relay_now_ms() + WAIT_MS;
	while (!event.n && (now = krep_relay_now_ms()) < until) {
		if (poll(&pfd, 1, until - now) != 1)
			continue;
		err = krep_session_read_events(rs, probe_print, &event);
		if (err) {
			printf("events: error %d (%s)\n", err, strerror(-err));
			break;
		}
	}
	ret = event.n ? 0 : 1;
out:
	fflush(stdout);
	nlmsg_free(m);
	krep_session_close(rs);
	return ret;
}

int main(int argc, char **argv)
{
	krep_prog = "test_relay";
	if (argc > 1 && !strcmp(argv[1], "probe"))
		return probe(argc, argv);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/* a hang is a failure; the relay child stops when our pipe closes */
	alarm(120);
	s1_path = write_file("s1", S1, 0600);
	s2_path = write_file("s2", S2, 0600);

	printf("TAP version 13\n");
	test_sha256();
	test_hmac();
	test_frames();
	test_secret();
	test_sessions();
	test_impostor();
	printf("1..%d\n", tap_ntests);
	printf("# %d of %d failed\n", tap_nfailed, tap_ntests);

	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd)) {
			/* a leftover directory in /tmp is no failure */
		}
	}
	return tap_nfailed ? 1 : 0;
}
