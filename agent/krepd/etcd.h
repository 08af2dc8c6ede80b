/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small etcd v3 client over etcd's JSON gateway (etcd 3.4: POST
 * /v3/kv/range, /v3/kv/txn, /v3/lease/grant, /v3/lease/keepalive,
 * /v3/lease/revoke, /v3/auth/authenticate), with libcurl for HTTP(S) and
 * json-c for JSON. Keys and values travel base64-encoded; revisions and
 * lease ids as decimal strings (64-bit integers in proto3's JSON mapping).
 *
 * Several endpoints: a request goes to the one that answered last and, on
 * a transport error or an answer of "unavailable" (no leader, no quorum,
 * gRPC codes 4 and 14), to the next, each once. Every call is blocking,
 * bounded by the client's timeout per endpoint. Every answer is checked:
 * a missing or mistyped field is an error (-EPROTO) with a message, never
 * a crash.
 *
 * A write (a transaction) whose answer is lost after it went out (the
 * timeout, a dropped connection, a 5xx, codes 4 and 14) may have been
 * applied: it is never sent again blindly (nor by libcurl: each goes on
 * a connection of its own). Its keys are read back first
 * (krep_etcd_txn_commit()).
 */
#ifndef KREP_AGENT_ETCD_H
#define KREP_AGENT_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KREP_ETCD_ENDPOINTS_MAX	8

struct krep_etcd_opts {
	const char *endpoints;		/* "http://A:2379,https://B:2379" */
	const char *cacert, *cert, *key;	/* TLS files, or NULL */
	const char *user, *password;	/* etcd authentication, or NULL */
	int timeout_ms;			/* per request and endpoint */
};

struct krep_etcd;

/* Returns NULL with the reason in @err. Nothing is sent yet. */
struct krep_etcd *krep_etcd_open(const struct krep_etcd_opts *o, char *err,
				 size_t errlen);
void krep_etcd_close(struct krep_etcd *e);
/* The endpoint the last request went to. */
const char *krep_etcd_endpoint(const struct krep_etcd *e);

struct krep_etcd_kv {
	char *key;			/* NUL-terminated */
	char *value;			/* NUL-terminated; vlen bytes */
	size_t vlen;
	int64_t create_rev, mod_rev, lease;
};

struct krep_etcd_kvs {
	int64_t rev;			/* the store's revision */
	size_t n;
	struct krep_etcd_kv *kv;
};

void krep_etcd_kvs_free(struct krep_etcd_kvs *kvs);

/*
 * @key alone, or with @prefix every key that starts with it, into @out
 * (sorted by key). 0 or -errno with the reason in @err.
 */
int krep_etcd_range(struct krep_etcd *e, const char *key, bool prefix,
		    struct krep_etcd_kvs *out, char *err, size_t errlen);

/* A transaction: compares (all must hold), then puts and deletes. */
enum krep_etcd_target {
	KREP_ETCD_MOD,		/* mod_revision (0: the key does not exist) */
	KREP_ETCD_CREATE,	/* create_revision */
};

struct krep_etcd_txn;

struct krep_etcd_txn *krep_etcd_txn_new(void);
void krep_etcd_txn_free(struct krep_etcd_txn *t);
/* 0 or -ENOMEM (the transaction then fails to commit) */
int krep_etcd_txn_cmp(struct krep_etcd_txn *t, const char *key,
		      enum krep_etcd_target target, int64_t rev);
int krep_etcd_txn_put(struct krep_etcd_txn *t, const char *key,
		      const char *value, int64_t lease);
int krep_etcd_txn_del(struct krep_etcd_txn *t, const char *key);
size_t krep_etcd_txn_ops(const struct krep_etcd_txn *t);

/*
 * Send @t. Returns 0 with *@ok (the compares held and the operations were
 * applied) and *@rev (the store's revision: every key @t put now has this
 * mod_revision), or -errno with the reason in @err: then @t was not
 * applied, except for -ETIMEDOUT, its outcome unknown.
 *
 * When @t's answer is lost, its keys are read back: every put key holding
 * its value and lease at one mod_revision, every deleted key gone, it was
 * applied (0, *@ok, that revision as *@rev, 0 when @t put nothing; and a
 * krep_etcd_note()); otherwise it was not (the caller's compares must
 * keep anyone else from writing the same values to these keys meanwhile),
 * and @t goes to the next endpoint. -ETIMEDOUT when a read fails too. A
 * lost answer's transaction that etcd applies only after the read back
 * said no fails the compares of whatever is written next.
 */
int krep_etcd_txn_commit(struct krep_etcd *e, struct krep_etcd_txn *t,
			 bool *ok, int64_t *rev, char *err, size_t errlen);

/*
 * True once after a transaction counted as committed on its keys read
 * back (its answer was lost), with what happened in @buf, for the log.
 */
bool krep_etcd_note(struct krep_etcd *e, char *buf, size_t len);

/* A lease of @ttl_s seconds: its id and the TTL etcd granted. */
int krep_etcd_lease_grant(struct krep_etcd *e, int64_t ttl_s, int64_t *id,
			  int64_t *granted, char *err, size_t errlen);
/* Renew @id: *@ttl_s is what is left, 0 when the lease is gone. */
int krep_etcd_lease_keepalive(struct krep_etcd *e, int64_t id, int64_t *ttl_s,
			      char *err, size_t errlen);
int krep_etcd_lease_revoke(struct krep_etcd *e, int64_t id, char *err,
			   size_t errlen);

/* base64 (RFC 4648), exported for the unit tests. */
char *krep_b64_encode(const void *data, size_t len);
/* NULL when @s is not base64; *@len is the decoded length. */
void *krep_b64_decode(const char *s, size_t *len);

#endif
