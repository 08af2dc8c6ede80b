// SPDX-License-Identifier: GPL-2.0
/*
 * Host-only tests of krepd --relay and the relay session: the proofs, the
 * session keys and a sealed frame of each direction against values
 * computed apart from this code (Python's hmac and the cryptography
 * package's ChaCha20Poly1305, from the format relay_proto.h documents);
 * sealed frames refused when any bit is flipped, when replayed, when a
 * frame is lost, when their tag is cut short, when sent in the clear or
 * back to their sender; the framing (round trips, truncated, oversized
 * and empty frames), the secret file's checks, and the relay served in a
 * child process on loopback TCP with a fake kernel behind it
 * (krep_relay_nl_ops over datagram socketpairs): the handshake both ways,
 * a wrong secret, a relay that cannot prove the secret, requests, dumps,
 * errors with their extack, deadlines, events, heartbeats, the client
 * limit and protocol violations; tampered frames sent to the relay by a
 * hand-made client and to a session by a hand-made relay, each closing
 * the connection with its reason and reaching no kernel. No kernel module
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

/* ---- proofs, session keys, sealed frames -------------------------------- */

static bool hex_is(const uint8_t *p, size_t len, const char *want)
{
	char text[2 * 64 + 1];

	if (2 * len >= sizeof(text))
		return false;
	hex(p, len, text);
	return !strcmp(text, want);
}

static const char KAT_SECRET[] = "0123456789abcdef0123456789abcdef";

/* A handshake of known values, its proofs made with @s. */
static void kat_hs(struct krep_relay_hs *hs, const struct krep_relay_secret *s)
{
	int i;

	memset(hs, 0, sizeof(*hs));
	hs->version = 2;
	for (i = 0; i < KREP_RELAY_NONCE_LEN; i++) {
		hs->snonce[i] = i;
		hs->cnonce[i] = 32 + i;
	}
	hs->flags = KREP_RELAY_F_EVENTS;
	hs->family = 0x1234;
	hs->group = 0x89abcdef;
	krep_relay_client_mac(s, hs->snonce, hs->cnonce, hs->cmac);
	krep_relay_server_mac(s, hs->snonce, hs->cnonce, hs->smac);
}

static void kat_secret(struct krep_relay_secret *s)
{
	memset(s, 0, sizeof(*s));
	s->len = sizeof(KAT_SECRET) - 1;
	memcpy(s->key, KAT_SECRET, s->len);
}

/* The keys of @hs with one field changed differ from @k's, both of them. */
static bool keys_differ(const struct krep_relay_keys *k,
			const struct krep_relay_secret *s,
			const struct krep_relay_hs *hs)
{
	struct krep_relay_keys k2;
	bool differ;

	krep_relay_keys_derive(&k2, s, hs, KREP_RELAY_SIDE_CLIENT);
	differ = memcmp(k2.tx_key, k->tx_key, KREP_RELAY_KEY_LEN) &&
		 memcmp(k2.rx_key, k->rx_key, KREP_RELAY_KEY_LEN);
	krep_relay_keys_wipe(&k2);
	return differ;
}

static void test_keys(void)
{
	struct krep_relay_keys c, sv;
	struct krep_relay_secret s, s2;
	struct krep_relay_buf b = { 0 };
	struct krep_relay_hs hs, h2;
	uint8_t m[KREP_RELAY_MAC_LEN];
	bool all;

	kat_secret(&s);
	kat_hs(&hs, &s);
	/*
	 * HMAC-SHA256(secret, "krep-relay-client" || snonce || cnonce) and
	 * the server's, as version 1 made them: Python's hmac module
	 */
	CHECK(hex_is(hs.cmac, sizeof(hs.cmac),
		     "6c60f3d74fcfc02973177724fb75ae226f9eb3246e83f02c89813c26de4c3f75"),
	      "proofs: the client's, HMAC-SHA256 as documented");
	CHECK(hex_is(hs.smac, sizeof(hs.smac),
		     "725341e21a6de18a0e38ce3d08d26589d4bc852c3f164b5ea0241ecba9e55401"),
	      "proofs: the relay's, HMAC-SHA256 as documented");
	memcpy(m, hs.cmac, sizeof(m));
	all = krep_relay_mac_equal(m, hs.cmac);
	m[31] ^= 1;
	all &= !krep_relay_mac_equal(m, hs.cmac);
	m[31] ^= 1;
	m[0] ^= 0x80;
	all &= !krep_relay_mac_equal(m, hs.cmac);
	CHECK(all, "proofs: compared whole (first and last bit)");

	krep_relay_keys_derive(&c, &s, &hs, KREP_RELAY_SIDE_CLIENT);
	krep_relay_keys_derive(&sv, &s, &hs, KREP_RELAY_SIDE_SERVER);
	CHECK(!memcmp(c.tx_key, sv.rx_key, KREP_RELAY_KEY_LEN) &&
	      !memcmp(c.rx_key, sv.tx_key, KREP_RELAY_KEY_LEN) &&
	      memcmp(c.tx_key, c.rx_key, KREP_RELAY_KEY_LEN) &&
	      !c.tx_seq && !c.rx_seq,
	      "keys: one per direction, the same on both sides, from sequence 0");
	/* the frames Python's cryptography package sealed with those keys */
	CHECK(!krep_relay_seal_put(&b, &c, KREP_RELAY_REQUEST, "hello", 5) &&
	      b.len == 34 &&
	      hex_is(b.data, b.len,
		     "0000001e0400000000000000000be7bd09bc349941dd16cab2c36d6e0eff8d4ba119"),
	      "sealed frame: the client's first, as documented (key c2s, direction 1)");
	krep_relay_buf_free(&b);
	CHECK(!krep_relay_seal_put(&b, &sv, KREP_RELAY_PING, NULL, 0) &&
	      !krep_relay_seal_put(&b, &sv, KREP_RELAY_REPLY, "world", 5) &&
	      b.len == 29 + 34 &&
	      hex_is(b.data + 29, 34,
		     "0000001e050000000000000001683fdf4aa53134b87ed91a05031c25afd7ce506be3"),
	      "sealed frame: the relay's second, as documented (key s2c, direction 2, seq 1)");
	krep_relay_buf_free(&b);

	/* every field of the handshake goes into both keys */
	all = true;
	h2 = hs;
	h2.version ^= 1;
	all &= keys_differ(&c, &s, &h2);
	h2 = hs;
	h2.snonce[31] ^= 1;
	all &= keys_differ(&c, &s, &h2);
	h2 = hs;
	h2.flags ^= 1;
	all &= keys_differ(&c, &s, &h2);
	h2 = hs;
	h2.cnonce[0] ^= 1;
	all &= keys_differ(&c, &s, &h2);
	h2 = hs;
	h2.cmac[7] ^= 1;
	all &= keys_differ(&c, &s, &h2);
	h2 = hs;
	h2.smac[9] ^= 1;
	all &= keys_differ(&c, &s, &h2);
	h2 = hs;
	h2.family ^= 1;
	all &= keys_differ(&c, &s, &h2);
	h2 = hs;
	h2.group ^= 0x80000000;
	all &= keys_differ(&c, &s, &h2);
	CHECK(all, "keys: a change of any handshake field changes both");
	s2 = s;
	s2.key[0] ^= 1;
	CHECK(keys_differ(&c, &s2, &hs), "keys: another secret, other keys");
	krep_relay_keys_wipe(&c);
	krep_relay_keys_wipe(&sv);
}

/*
 * Unseal @len bytes of @p (one frame) with @k, from a copy: @p stays as
 * it was. 0, -EBADMSG (@why says why), or 1 when the bytes are not one
 * whole frame.
 */
static int unseal_copy(struct krep_relay_keys *k, const uint8_t *p,
		       size_t len, struct krep_relay_frame *f, char *why,
		       size_t whylen)
{
	static uint8_t copy[4096];

	if (len > sizeof(copy))
		exit(2);
	memcpy(copy, p, len);
	if (krep_relay_frame_parse(copy, len, f) != (long)len)
		return 1;
	return krep_relay_unseal(k, f, why, whylen);
}

/* A client's and a relay's keys of one handshake. */
static void key_pair(struct krep_relay_keys *c, struct krep_relay_keys *sv)
{
	struct krep_relay_secret s;
	struct krep_relay_hs hs;

	kat_secret(&s);
	kat_hs(&hs, &s);
	krep_relay_keys_derive(c, &s, &hs, KREP_RELAY_SIDE_CLIENT);
	krep_relay_keys_derive(sv, &s, &hs, KREP_RELAY_SIDE_SERVER);
}

static void test_seal(void)
{
	struct krep_relay_keys c, sv, other;
	struct krep_relay_buf b = { 0 };
	struct krep_relay_frame f;
	uint8_t frame[64], *big;
	char why[256] = "";
	size_t len, i, bit, bad;
	int ret;

	key_pair(&c, &sv);

	/* round trips, both ways (@why: set only by a failure) */
	krep_relay_seal_put(&b, &c, KREP_RELAY_REQUEST, "hello", 5);
	krep_relay_seal_put(&b, &c, KREP_RELAY_PING, NULL, 0);
	ret = krep_relay_buf_next(&b, &f) == 1 &&
	      !krep_relay_unseal(&sv, &f, why, sizeof(why)) &&
	      f.type == KREP_RELAY_REQUEST && f.len == 5 &&
	      !memcmp(f.payload, "hello", 5) &&
	      krep_relay_buf_next(&b, &f) == 1 &&
	      !krep_relay_unseal(&sv, &f, why, sizeof(why)) &&
	      f.type == KREP_RELAY_PING && f.len == 0 && sv.rx_seq == 2;
	CHECK(ret, "seal: client to relay, two frames in sequence (%s)",
	      why[0] ? why : "passed");
	krep_relay_buf_free(&b);
	krep_relay_seal_put(&b, &sv, KREP_RELAY_EVENT, "evt", 3);
	ret = krep_relay_buf_next(&b, &f) == 1 &&
	      !krep_relay_unseal(&c, &f, why, sizeof(why)) &&
	      f.type == KREP_RELAY_EVENT && f.len == 3 &&
	      !memcmp(f.payload, "evt", 3) && c.rx_seq == 1;
	CHECK(ret, "seal: relay to client (%s)", why[0] ? why : "passed");
	krep_relay_buf_free(&b);

	/* the client's third frame (seq 2), kept as bytes */
	krep_relay_seal_put(&b, &c, KREP_RELAY_REQUEST, "bits!", 5);
	len = b.len;
	memcpy(frame, b.data, len);
	krep_relay_buf_free(&b);

	/* every bit after the length field: type, seq, payload, tag */
	bad = 0;
	for (i = 4; i < len; i++) {
		for (bit = 0; bit < 8; bit++) {
			frame[i] ^= 1 << bit;
			ret = unseal_copy(&sv, frame, len, &f, why,
					  sizeof(why));
			frame[i] ^= 1 << bit;
			if (ret != -EBADMSG ||
			    !strstr(why, "failed authentication") ||
			    sv.rx_seq != 2)
				bad++;
		}
	}
	CHECK(!bad, "seal: each of the %zu bits after the length flipped is refused (%zu accepted)",
	      8 * (len - 4), bad);
	/* and in the length: never a frame that passes */
	bad = 0;
	for (i = 0; i < 4; i++) {
		for (bit = 0; bit < 8; bit++) {
			frame[i] ^= 1 << bit;
			ret = unseal_copy(&sv, frame, len, &f, why,
					  sizeof(why));
			frame[i] ^= 1 << bit;
			bad += !ret;
		}
	}
	CHECK(!bad, "seal: a flipped bit of the length is never accepted");
	why[0] = '\0';
	CHECK(!unseal_copy(&sv, frame, len, &f, why, sizeof(why)) &&
	      f.len == 5 && !memcmp(f.payload, "bits!", 5) && sv.rx_seq == 3,
	      "seal: the frame as sent still passes after those (%s)",
	      why[0] ? why : "passed");

	/* replayed */
	ret = unseal_copy(&sv, frame, len, &f, why, sizeof(why));
	CHECK(ret == -EBADMSG &&
	      strstr(why, "REQUEST frame 2 when frame 3 was expected (replayed or reordered)") &&
	      sv.rx_seq == 3,
	      "seal: the same frame again is refused: %s", why);

	/* lost: frames 3 and 4 sealed, 4 arrives first */
	krep_relay_seal_put(&b, &c, KREP_RELAY_PING, NULL, 0);
	krep_relay_seal_put(&b, &c, KREP_RELAY_PONG, NULL, 0);
	ret = unseal_copy(&sv, b.data + 29, 29, &f, why, sizeof(why));
	CHECK(ret == -EBADMSG &&
	      strstr(why, "PONG frame 4 when frame 3 was expected (frames lost or reordered)"),
	      "seal: a frame after a lost one is refused: %s", why);
	krep_relay_buf_free(&b);

	/* truncated: a byte of the tag cut, the length fixed to match */
	krep_relay_seal_put(&b, &c, KREP_RELAY_REQUEST, "trunc", 5);
	len = b.len - 1;
	memcpy(frame, b.data, len);
	frame[3]--;
	ret = unseal_copy(&sv, frame, len, &f, why, sizeof(why));
	CHECK(ret == -EBADMSG && strstr(why, "failed authentication"),
	      "seal: a tag one byte short is refused: %s", why);
	krep_relay_buf_free(&b);
	/* shorter than seq and tag */
	krep_relay_seal_put(&b, &c, KREP_RELAY_PING, NULL, 0);
	len = b.len - 1;
	memcpy(frame, b.data, len);
	frame[3]--;
	ret = unseal_copy(&sv, frame, len, &f, why, sizeof(why));
	CHECK(ret == -EBADMSG &&
	      strstr(why, "frame 3 (PING, type 8) of 23 bytes, too short to be sealed (at least 24)"),
	      "seal: a frame too short for seq and tag is refused: %s", why);
	krep_relay_buf_free(&b);
	/* as version 1 sent it */
	krep_relay_frame_put(&b, KREP_RELAY_PING, NULL, 0);
	ret = unseal_copy(&sv, b.data, b.len, &f, why, sizeof(why));
	CHECK(ret == -EBADMSG && strstr(why, "sent in the clear"),
	      "seal: a frame in the clear is refused: %s", why);
	krep_relay_buf_free(&b);

	/* back to its sender, and to another connection */
	krep_relay_seal_put(&b, &c, KREP_RELAY_PING, NULL, 0);
	other = c;
	other.rx_seq = other.tx_seq - 1;
	ret = unseal_copy(&other, b.data, b.len, &f, why, sizeof(why));
	CHECK(ret == -EBADMSG && strstr(why, "failed authentication"),
	      "seal: a frame sent back to its sender is refused: %s", why);
	memcpy(&other, &sv, sizeof(other));
	other.rx_key[0] ^= 1;
	other.rx_seq = c.tx_seq - 1;
	ret = unseal_copy(&other, b.data, b.len, &f, why, sizeof(why));
	CHECK(ret == -EBADMSG && strstr(why, "failed authentication"),
	      "seal: a frame of another connection (key) is refused: %s", why);
	krep_relay_buf_free(&b);

	/* sizes */
	big = calloc(1, KREP_RELAY_PAYLOAD_MAX + 1);
	if (!big)
		exit(2);
	CHECK(krep_relay_seal_put(&b, &c, KREP_RELAY_REPLY, big,
				  KREP_RELAY_PAYLOAD_MAX + 1) == -EMSGSIZE &&
	      !krep_relay_buf_pending(&b),
	      "seal: a payload above KREP_RELAY_PAYLOAD_MAX is refused");
	sv.rx_seq = c.tx_seq;
	why[0] = '\0';
	ret = !krep_relay_seal_put(&b, &c, KREP_RELAY_REPLY, big,
				   KREP_RELAY_PAYLOAD_MAX) &&
	      krep_relay_buf_next(&b, &f) == 1 &&
	      f.len == KREP_RELAY_FRAME_MAX - 1 &&
	      !krep_relay_unseal(&sv, &f, why, sizeof(why)) &&
	      f.len == KREP_RELAY_PAYLOAD_MAX;
	CHECK(ret, "seal: the largest payload makes a frame of 1 MiB that passes (%s)",
	      why[0] ? why : "passed");
	krep_relay_buf_free(&b);
	free(big);
	krep_relay_keys_wipe(&c);
	krep_relay_keys_wipe(&sv);
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
	      "frames: a payload above KREP_RELAY_PAYLOAD_MAX (1 MiB - 25) is refused");
	CHECK(!krep_relay_frame_put(&b, KREP_RELAY_REPLY, big,
				    KREP_RELAY_PAYLOAD_MAX) &&
	      krep_relay_frame_parse(b.data, b.len, &f) ==
	      (long)(4 + 1 + KREP_RELAY_PAYLOAD_MAX) &&
	      f.len == KREP_RELAY_PAYLOAD_MAX,
	      "frames: the largest payload round-trips");

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

static void log_to_file(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

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
	/* what reached the kernel: the tests of tampered frames look */
	log_to_file(LOG_DEBUG, "fake kernel: request seq %u", req.nlmsg_seq);
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
	static char text[65536];
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
	uint16_t version;
	bool sealed;			/* after the handshake */
	struct krep_relay_hs hs;
	struct krep_relay_keys k;
	char why[256];			/* of a frame that failed */
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

/*
 * The next frame other than PING, unsealed once r->sealed; 1, 0 on EOF,
 * -1 on error or timeout, -2 for a frame that failed (r->why says why).
 */
static int raw_frame(struct raw *r, struct krep_relay_frame *f, int ms)
{
	struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
	long n;

	for (;;) {
		while ((n = krep_relay_buf_next(&r->in, f)) > 0) {
			if (r->sealed && krep_relay_unseal(&r->k, f, r->why,
							   sizeof(r->why)))
				return -2;
			if (f->type != KREP_RELAY_PING)
				return 1;
		}
		if (n < 0 || poll(&pfd, 1, ms) != 1)
			return -1;
		n = krep_relay_buf_recv(r->fd, &r->in);
		if (!n || n == -ECONNRESET)
			return 0;
		if (n < 0 && n != -EAGAIN)
			return -1;
	}
}

/* Send what r->out holds, all of it (the socket blocks). */
static bool raw_flush(struct raw *r)
{
	return !krep_relay_buf_send(r->fd, &r->out) &&
	       !krep_relay_buf_pending(&r->out);
}

/* A frame of @type: sealed once r->sealed, as the protocol wants. */
static bool raw_send(struct raw *r, uint8_t type, const void *p, size_t len)
{
	int err = r->sealed ? krep_relay_seal_put(&r->out, &r->k, type, p, len) :
			      krep_relay_frame_put(&r->out, type, p, len);

	return !err && raw_flush(r);
}

/* @len bytes as they are: frames made by hand */
static bool raw_send_bytes(struct raw *r, const void *p, size_t len)
{
	return write(r->fd, p, len) == (ssize_t)len;
}

static bool raw_hello(struct raw *r)
{
	struct krep_relay_frame f;

	return raw_frame(r, &f, WAIT_MS) == 1 &&
	       !krep_relay_hello_get(&f, &r->version, r->snonce);
}

/*
 * The client's side of the handshake, as a session does it; then the
 * frames are sealed with the session keys (r->k).
 */
static bool raw_auth(struct raw *r, const char *secret_path)
{
	struct krep_relay_hs *hs = &r->hs;
	struct krep_relay_secret s;
	struct krep_relay_frame f;
	char err[512];
	bool ok;

	if (!raw_hello(r) ||
	    krep_relay_secret_load(secret_path, &s, err, sizeof(err)))
		return false;
	memset(hs, 0, sizeof(*hs));
	hs->version = r->version;
	memcpy(hs->snonce, r->snonce, sizeof(hs->snonce));
	hs->cnonce[0] = 1;
	krep_relay_client_mac(&s, hs->snonce, hs->cnonce, hs->cmac);
	if (krep_relay_auth_put(&r->out, 0, hs->cnonce, hs->cmac) ||
	    !raw_flush(r))
		return false;
	ok = raw_frame(r, &f, WAIT_MS) == 1 &&
	     !krep_relay_auth_ok_get(&f, hs->smac, &hs->family, &hs->group) &&
	     hs->family == FAKE_FAMILY;
	if (ok) {
		krep_relay_keys_derive(&r->k, &s, hs, KREP_RELAY_SIDE_CLIENT);
		r->sealed = true;
	}
	krep_relay_secret_wipe(&s);
	return ok;
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
	krep_relay_keys_wipe(&r->k);
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

/* ---- tampered frames ---------------------------------------------------- */

/* The whole text of @path (static), "" if it cannot be read. */
static const char *file_text(const char *path)
{
	static char text[65536];
	size_t n = 0;
	FILE *f;

	f = fopen(path, "r");
	if (f) {
		n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
	}
	text[n] = '\0';
	return text;
}

static int count_of(const char *text, const char *needle)
{
	int n = 0;

	while ((text = strstr(text, needle))) {
		n++;
		text += strlen(needle);
	}
	return n;
}

/* The relay's line about the disconnection of @r's client, or "". */
static const char *gone_line(const struct server *srv, const struct raw *r)
{
	static char line[512];
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	char name[64];
	const char *p, *e;

	line[0] = '\0';
	if (getsockname(r->fd, (struct sockaddr *)&sin, &len))
		return line;
	snprintf(name, sizeof(name), "client 127.0.0.1:%u disconnected",
		 ntohs(sin.sin_port));
	p = strstr(file_text(srv->log), name);
	if (p) {
		e = strchr(p, '\n');
		snprintf(line, sizeof(line), "%.*s",
			 e ? (int)(e - p) : (int)strlen(p), p);
	}
	return line;
}

/* How many requests of netlink sequence number @seq the kernel was sent. */
static int kernel_saw(const struct server *srv, uint32_t seq)
{
	char needle[64];

	snprintf(needle, sizeof(needle), "fake kernel: request seq %u\n", seq);
	return count_of(file_text(srv->log), needle);
}

/* A frame of @type sealed with r->k, into @out (at most @size bytes). */
static size_t raw_seal(struct raw *r, uint8_t type, const void *p,
		       size_t len, uint8_t *out, size_t size)
{
	struct krep_relay_buf b = { 0 };
	size_t n = 0;

	if (!krep_relay_seal_put(&b, &r->k, type, p, len) && b.len <= size) {
		memcpy(out, b.data, b.len);
		n = b.len;
	}
	krep_relay_buf_free(&b);
	return n;
}

/* A REQUEST of FK_ECHO with netlink sequence number @seq, sealed. */
static size_t raw_seal_echo(struct raw *r, uint32_t seq, uint8_t *out,
			    size_t size)
{
	uint8_t msg[64];

	return raw_seal(r, KREP_RELAY_REQUEST, msg,
			put_genl(msg, NLM_F_REQUEST | NLM_F_ACK, seq, FK_ECHO,
				 seq), out, size);
}

/* The echo of @seq and its ack came back. */
static bool raw_echoed(struct raw *r, uint32_t seq)
{
	struct krep_relay_frame f;
	struct nlmsghdr nlh;
	int i;

	for (i = 0; i < 2; i++) {
		if (raw_frame(r, &f, WAIT_MS) != 1 ||
		    f.type != KREP_RELAY_REPLY || f.len < sizeof(nlh))
			return false;
		memcpy(&nlh, f.payload, sizeof(nlh));
		if (nlh.nlmsg_seq != seq ||
		    nlh.nlmsg_type != (i ? NLMSG_ERROR : FAKE_FAMILY))
			return false;
	}
	return true;
}

/* Send @len bytes; true once the relay closed the connection. */
static bool raw_sent_closed(struct raw *r, const uint8_t *p, size_t len)
{
	return raw_send_bytes(r, p, len) && raw_closed(r, WAIT_MS);
}

/*
 * A hand-made client sends the relay tampered frames, each on a
 * connection of its own: every one closes that connection with a log line
 * that says why, and none reaches the kernel.
 */
static void test_tamper_relay(void)
{
	uint8_t frame[256], copy[256];
	struct krep_relay_keys theirs;
	struct krep_relay_secret sec;
	struct server srv;
	const char *line;
	struct raw r;
	char err[512];
	size_t n, i;
	bool ok;
	static const struct {
		ssize_t off;		/* from the end if negative */
		const char *what;
	} flips[] = {
		{ 4, "type" },
		{ KREP_RELAY_HDR_LEN + KREP_RELAY_SEQ_LEN - 1, "sequence number" },
		{ KREP_RELAY_HDR_LEN + KREP_RELAY_SEQ_LEN + 10, "payload" },
		{ -1, "tag" },
	};

	server_start(&srv, s1_path, 4);

	/* a normal session: sealed both ways */
	ok = raw_connect(&r, srv.port) && raw_auth(&r, s1_path);
	for (i = 0; ok && i < 3; i++) {
		n = raw_seal_echo(&r, 1000 + i, frame, sizeof(frame));
		ok = n && raw_send_bytes(&r, frame, n) && raw_echoed(&r, 1000 + i);
	}
	CHECK(ok && r.k.tx_seq == 3 && r.k.rx_seq >= 6,
	      "tamper: sealed requests and their sealed replies (%s)",
	      r.why[0] ? r.why : "no bad frame");
	raw_close(&r);

	for (i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
		ok = raw_connect(&r, srv.port) && raw_auth(&r, s1_path);
		n = raw_seal_echo(&r, 1100 + i, frame, sizeof(frame));
		frame[flips[i].off < 0 ? n + flips[i].off : (size_t)flips[i].off] ^= 0x04;
		ok = ok && n && raw_sent_closed(&r, frame, n);
		line = gone_line(&srv, &r);
		CHECK(ok && strstr(line, "bad frame: ") &&
		      strstr(line, "failed authentication") &&
		      !kernel_saw(&srv, 1100 + i),
		      "tamper: a bit of the %s flipped: closed, not forwarded: %s",
		      flips[i].what, line);
		raw_close(&r);
	}

	/* replayed: accepted once, refused the second time */
	ok = raw_connect(&r, srv.port) && raw_auth(&r, s1_path);
	n = raw_seal_echo(&r, 1200, frame, sizeof(frame));
	memcpy(copy, frame, n);
	ok = ok && n && raw_send_bytes(&r, frame, n) && raw_echoed(&r, 1200) &&
	     raw_sent_closed(&r, copy, n);
	line = gone_line(&srv, &r);
	CHECK(ok && strstr(line, "after 1 request: bad frame: REQUEST frame 0 when frame 1 was expected (replayed or reordered)") &&
	      kernel_saw(&srv, 1200) == 1,
	      "tamper: a replayed frame: closed, not forwarded again: %s", line);
	raw_close(&r);

	/* the first frame lost on the way: the second is refused */
	ok = raw_connect(&r, srv.port) && raw_auth(&r, s1_path);
	raw_seal_echo(&r, 1300, frame, sizeof(frame));
	n = raw_seal_echo(&r, 1301, frame, sizeof(frame));
	ok = ok && n && raw_sent_closed(&r, frame, n);
	line = gone_line(&srv, &r);
	CHECK(ok && strstr(line, "REQUEST frame 1 when frame 0 was expected (frames lost or reordered)") &&
	      !kernel_saw(&srv, 1301),
	      "tamper: a frame after a lost one: closed, not forwarded: %s",
	      line);
	raw_close(&r);

	/* the tag one byte short, the length fixed to match */
	ok = raw_connect(&r, srv.port) && raw_auth(&r, s1_path);
	n = raw_seal_echo(&r, 1400, frame, sizeof(frame));
	frame[3]--;
	ok = ok && n && raw_sent_closed(&r, frame, n - 1);
	line = gone_line(&srv, &r);
	CHECK(ok && strstr(line, "failed authentication") &&
	      !kernel_saw(&srv, 1400),
	      "tamper: a truncated tag: closed, not forwarded: %s", line);
	raw_close(&r);

	/* less than a sequence number and a tag */
	ok = raw_connect(&r, srv.port) && raw_auth(&r, s1_path);
	n = raw_seal(&r, KREP_RELAY_PING, NULL, 0, frame, sizeof(frame));
	frame[3] -= 6;
	ok = ok && n && raw_sent_closed(&r, frame, n - 6);
	line = gone_line(&srv, &r);
	CHECK(ok && strstr(line, "bad frame: frame 0 (PING, type 8) of 18 bytes, too short to be sealed (at least 24)"),
	      "tamper: a frame too short for its tag: closed: %s", line);
	raw_close(&r);

	/* a REQUEST in the clear, as version 1 sent it */
	ok = raw_connect(&r, srv.port) && raw_auth(&r, s1_path);
	r.sealed = false;
	n = put_genl(copy, NLM_F_REQUEST | NLM_F_ACK, 1500, FK_ECHO, 0);
	ok = ok && raw_send(&r, KREP_RELAY_REQUEST, copy, n) &&
	     raw_closed(&r, WAIT_MS);
	line = gone_line(&srv, &r);
	CHECK(ok && strstr(line, "failed authentication") &&
	      !kernel_saw(&srv, 1500),
	      "tamper: a REQUEST in the clear: closed, not forwarded: %s", line);
	raw_close(&r);

	/* sealed for the other direction (as if sent back by a reflector) */
	ok = raw_connect(&r, srv.port) && raw_auth(&r, s1_path) &&
	     !krep_relay_secret_load(s1_path, &sec, err, sizeof(err));
	if (ok) {
		krep_relay_keys_derive(&theirs, &sec, &r.hs,
				       KREP_RELAY_SIDE_SERVER);
		krep_relay_keys_wipe(&r.k);
		r.k = theirs;
		krep_relay_secret_wipe(&sec);
	}
	n = raw_seal_echo(&r, 1600, frame, sizeof(frame));
	ok = ok && n && raw_sent_closed(&r, frame, n);
	line = gone_line(&srv, &r);
	CHECK(ok && strstr(line, "failed authentication") &&
	      !kernel_saw(&srv, 1600),
	      "tamper: a frame sealed for the other direction: closed: %s",
	      line);
	raw_close(&r);

	line = server_stop(&srv);
	CHECK(line && count_of(line, ": bad frame: ") == 10,
	      "tamper: one log line per bad frame (%d)",
	      line ? count_of(line, ": bad frame: ") : -1);
	if (tap_nfailed && line)
		diag("relay log:\n%s", line);
}

enum tamper {
	T_NONE,		/* every ack sealed as it should be */
	T_FLIP,		/* a bit of the second ack's payload flipped */
	T_REPLAY,	/* the first ack's bytes again for the second */
	T_TRUNC,	/* the second ack's tag one byte short */
	T_DROP,		/* the second ack sealed twice, the first not sent */
	T_CLEAR,	/* the second ack in the clear */
	T_NUM
};

/* A frame's bytes, kept. */
struct kept {
	uint8_t data[256];
	size_t len;
};

/* Seal @p into @out as the next REPLY of @r. */
static void seal_reply(struct raw *r, const uint8_t *p, size_t n,
		       struct kept *out)
{
	out->len = raw_seal(r, KREP_RELAY_REPLY, p, n, out->data,
			    sizeof(out->data));
}

/* The second ack, as @how makes it, into @out; @first: the first's bytes. */
static void tamper_ack(struct raw *r, enum tamper how,
		       const struct kept *first, const uint8_t *ack, size_t n,
		       struct kept *out)
{
	struct krep_relay_buf b = { 0 };

	switch (how) {
	case T_NONE:
	case T_NUM:
		seal_reply(r, ack, n, out);
		break;
	case T_FLIP:
		seal_reply(r, ack, n, out);
		out->data[KREP_RELAY_HDR_LEN + KREP_RELAY_SEQ_LEN + 3] ^= 0x20;
		break;
	case T_REPLAY:
		*out = *first;
		break;
	case T_TRUNC:
		seal_reply(r, ack, n, out);
		out->data[3]--;
		out->len--;
		break;
	case T_DROP:
		seal_reply(r, ack, n, out);
		seal_reply(r, ack, n, out);
		break;
	case T_CLEAR:
		krep_relay_frame_put(&b, KREP_RELAY_REPLY, ack, n);
		memcpy(out->data, b.data, b.len);
		out->len = b.len;
		krep_relay_buf_free(&b);
		break;
	}
}

/*
 * A relay made by hand that holds the secret: the relay's side of the
 * handshake, then a sealed ack for every REQUEST, the second one
 * tampered with as @how says. Runs in a child until the client closes.
 */
static void tamper_relay(int lfd, enum tamper how)
{
	struct kept first = { .len = 0 }, out;
	struct krep_relay_hs *hs;
	struct krep_relay_secret s;
	struct krep_relay_frame f;
	struct nlmsghdr nlh;
	struct raw r = { 0 };
	uint8_t ack[256];
	char err[512];
	int nreq = 0;
	size_t n;

	fcntl(lfd, F_SETFL, 0);
	r.fd = accept(lfd, NULL, NULL);
	if (r.fd < 0 || krep_relay_secret_load(s1_path, &s, err, sizeof(err)))
		_exit(1);
	hs = &r.hs;
	hs->version = KREP_RELAY_VERSION;
	krep_relay_random(hs->snonce, sizeof(hs->snonce));
	krep_relay_hello_put(&r.out, hs->snonce);
	if (!raw_flush(&r) || raw_frame(&r, &f, WAIT_MS) != 1 ||
	    krep_relay_auth_get(&f, &hs->flags, hs->cnonce, hs->cmac))
		_exit(1);
	krep_relay_server_mac(&s, hs->snonce, hs->cnonce, hs->smac);
	hs->family = FAKE_FAMILY;
	krep_relay_auth_ok_put(&r.out, hs->smac, hs->family, hs->group);
	krep_relay_keys_derive(&r.k, &s, hs, KREP_RELAY_SIDE_SERVER);
	r.sealed = true;
	if (!raw_flush(&r))
		_exit(1);
	while (raw_frame(&r, &f, WAIT_MS) == 1) {
		if (f.type != KREP_RELAY_REQUEST || f.len < sizeof(nlh))
			continue;
		memcpy(&nlh, f.payload, sizeof(nlh));
		n = put_err(ack, &nlh, 0, NULL);
		if (++nreq == 1) {
			seal_reply(&r, ack, n, &first);
			out = first;
		} else {
			tamper_ack(&r, how, &first, ack, n, &out);
		}
		if (!out.len || !raw_send_bytes(&r, out.data, out.len))
			_exit(1);
	}
	_exit(0);
}

/*
 * A session whose relay tampers with its second ack: the request fails
 * with -EBADMSG, the session stays broken and says why, in one log line.
 */
static void test_tamper_session(void)
{
	static const char * const want[T_NUM] = {
		[T_NONE]	= NULL,
		[T_FLIP]	= "failed authentication",
		[T_REPLAY]	= "REPLY frame 0 when frame 1 was expected (replayed or reordered)",
		[T_TRUNC]	= "failed authentication",
		[T_DROP]	= "REPLY frame 2 when frame 1 was expected (frames lost or reordered)",
		[T_CLEAR]	= "failed authentication",
	};
	static const char * const name[T_NUM] = {
		[T_NONE] = "none", [T_FLIP] = "a flipped bit",
		[T_REPLAY] = "a replay", [T_TRUNC] = "a truncated tag",
		[T_DROP] = "a lost frame", [T_CLEAR] = "a frame in the clear",
	};
	struct krep_session_addr a = { .kind = KREP_SESSION_RELAY };
	char log_path[300];
	const char *why, *e, *log;
	struct krep_session *rs;
	int how, lfd, port, err1, err2, err3, status, saved;
	struct seen s;
	pid_t pid;

	/* the session's log lines go to stderr: into a file for a while */
	snprintf(log_path, sizeof(log_path), "%s/session.log", tmpdir);
	fflush(stderr);
	saved = dup(2);
	lfd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (saved < 0 || lfd < 0 || dup2(lfd, 2) < 0)
		exit(2);
	close(lfd);
	for (how = 0; how < T_NUM; how++) {
		lfd = listen_loopback(&port);
		fflush(stdout);
		pid = fork();
		if (!pid)
			tamper_relay(lfd, how);
		close(lfd);
		snprintf(a.relay, sizeof(a.relay), "127.0.0.1:%d", port);
		snprintf(a.secret_file, sizeof(a.secret_file), "%s", s1_path);
		why = NULL;
		rs = krep_session_open(&a, false, &why);
		err1 = rs ? request(rs, FK_ECHO, 1, on_msg, &s, WAIT_MS) : -1;
		err2 = rs ? request(rs, FK_ECHO, 2, on_msg, &s, WAIT_MS) : -1;
		err3 = rs ? request(rs, FK_ECHO, 3, on_msg, &s, WAIT_MS) : -1;
		e = rs ? krep_relay_error(rs) : why;
		if (how == T_NONE)
			CHECK(!err1 && !err2 && !err3 && !e,
			      "tamper: a session whose relay seals as it should (%d %d %d: %s)",
			      err1, err2, err3, e ? e : "no error");
		else
			CHECK(!err1 && err2 == -EBADMSG && err3 == -EBADMSG &&
			      e && strstr(e, "bad frame: ") && strstr(e, want[how]),
			      "tamper: a session refuses %s from the relay and stays broken (%d %d %d: %s)",
			      name[how], err1, err2, err3, e ? e : "no error");
		krep_session_close(rs);
		waitpid(pid, &status, 0);
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	log = file_text(log_path);
	CHECK(count_of(log, ": bad frame: ") == T_NUM - 1 &&
	      count_of(log, ": session closed\n") == T_NUM - 1,
	      "tamper: the session logs one line per bad frame (%d)",
	      count_of(log, ": bad frame: "));
	if (tap_nfailed)
		diag("session log:\n%s", log);
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
		b.data[6] = 1;
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
			CHECK(!s && why &&
			      strstr(why, "version 1 of the protocol, not 2"),
			      "session: a relay of version 1 (frames in the clear) is refused: %s",
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
	if (krep_relay_crypto_init()) {
		fprintf(stderr, "test_relay: libsodium cannot be initialized\n");
		return 2;
	}
	test_keys();
	test_seal();
	test_frames();
	test_secret();
	test_sessions();
	test_tamper_relay();
	test_tamper_session();
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
