// SPDX-License-Identifier: GPL-2.0
/*
 * etcd v3 over its JSON gateway (etcd.h): libcurl for HTTP, json-c for
 * JSON. Field names are the gateway's (proto names, snake_case; 64-bit
 * integers as strings), as etcd 3.4's Documentation/dev-guide/api_grpc_gateway.md
 * shows them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "errf.h"
#include "etcd.h"

#define REPLY_MAX	(64u << 20)	/* the largest answer we take */
#define GRPC_DEADLINE	4
#define GRPC_UNAVAILABLE 14
#define GRPC_UNAUTHENTICATED 16

struct krep_etcd {
	CURL *curl;
	size_t nep, cur;
	char *ep[KREP_ETCD_ENDPOINTS_MAX];
	char *user, *password;
	char *token;			/* from /v3/auth/authenticate */
	struct curl_slist *hdrs;
	int timeout_ms;
	char note[640];			/* krep_etcd_note()'s, or "" */
};

/* A put (@value) or a delete (@value NULL), kept to be read back. */
struct txn_op {
	char *key, *value;
	int64_t lease;
};

struct krep_etcd_txn {
	json_object *cmp, *ops;
	struct txn_op *op;
	size_t nop;
	bool oom;
};

struct buf {
	char *p;
	size_t len;
	bool full;
};


/* ---- base64 ------------------------------------------------------------ */

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *krep_b64_encode(const void *data, size_t len)
{
	const unsigned char *s = data;
	char *out, *o;
	uint32_t v;
	size_t i;

	out = malloc((len + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	o = out;
	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)s[i] << 16 | s[i + 1] << 8 | s[i + 2];
		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = b64[(v >> 6) & 63];
		*o++ = b64[v & 63];
	}
	if (i < len) {
		v = (uint32_t)s[i] << 16 | (i + 1 < len ? s[i + 1] << 8 : 0);
		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

void *krep_b64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s), i, pad = 0;
	unsigned char *out, *o;
	uint32_t v;
	int k, d;

	if (n % 4)
		return NULL;
	if (n && s[n - 1] == '=')
		pad = n >= 2 && s[n - 2] == '=' ? 2 : 1;
	out = malloc(n / 4 * 3 + 1);
	if (!out)
		return NULL;
	o = out;
	for (i = 0; i < n; i += 4) {
		v = 0;
		for (k = 0; k < 4; k++) {
			bool last = i + 4 == n;

			if (last && k >= 4 - (int)pad) {
				v <<= 6;
				continue;
			}
			d = b64_val(s[i + k]);
			if (d < 0) {
				free(out);
				return NULL;
			}
			v = v << 6 | d;
		}
		*o++ = v >> 16;
		if (i + 4 < n || pad < 2)
			*o++ = (v >> 8) & 0xff;
		if (i + 4 < n || pad < 1)
			*o++ = v & 0xff;
	}
	*o = '\0';
	*len = o - out;
	return out;
}

/* ---- open and close ---------------------------------------------------- */

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;
	size_t len = size * n;
	char *p;

	if (b->len + len > REPLY_MAX) {
		b->full = true;
		return 0;
	}
	p = realloc(b->p, b->len + len + 1);
	if (!p)
		return 0;
	memcpy(p + b->len, data, len);
	b->p = p;
	b->len += len;
	p[b->len] = '\0';
	return len;
}

void krep_etcd_close(struct krep_etcd *e)
{
	size_t i;

	if (!e)
		return;
	if (e->curl)
		curl_easy_cleanup(e->curl);
	curl_slist_free_all(e->hdrs);
	for (i = 0; i < e->nep; i++)
		free(e->ep[i]);
	free(e->user);
	free(e->password);
	free(e->token);
	free(e);
}

const char *krep_etcd_endpoint(const struct krep_etcd *e)
{
	return e->ep[e->cur];
}

static int endpoints(struct krep_etcd *e, const char *list, char *err,
		     size_t errlen)
{
	const char *p = list, *end;
	size_t len;

	while (*p) {
		end = strchrnul(p, ',');
		len = end - p;
		while (len && p[len - 1] == '/')
			len--;	/* "http://a:2379/" */
		if (!len || e->nep == KREP_ETCD_ENDPOINTS_MAX)
			return krep_errf(err, errlen, -EINVAL,
				    "--etcd '%s': %s", list, len ?
				    "more than 8 endpoints" : "an empty endpoint");
		if ((len < 8 || strncmp(p, "http://", 7)) &&
		    (len < 9 || strncmp(p, "https://", 8)))
			return krep_errf(err, errlen, -EINVAL,
				    "--etcd '%.*s': not an http:// or https:// URL",
				    (int)len, p);
		e->ep[e->nep] = strndup(p, len);
		if (!e->ep[e->nep])
			return -ENOMEM;
		e->nep++;
		p = *end ? end + 1 : end;
	}
	if (!e->nep)
		return krep_errf(err, errlen, -EINVAL, "--etcd: no endpoint");
	return 0;
}

struct krep_etcd *krep_etcd_open(const struct krep_etcd_opts *o, char *err,
				 size_t errlen)
{
	static bool global;
	struct krep_etcd *e;
	CURL *c;

	if (!global) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
			krep_errf(err, errlen, -ENOMEM, "curl_global_init failed");
			return NULL;
		}
		global = true;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
		return NULL;
	}
	e->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 1000;
	if (endpoints(e, o->endpoints, err, errlen))
		goto fail;
	if ((o->user && !(e->user = strdup(o->user))) ||
	    (o->password && !(e->password = strdup(o->password))))
		goto oom;
	e->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	c = e->curl = curl_easy_init();
	if (!e->hdrs || !c)
		goto oom;
	if (curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) ||
	    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms) ||
	    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)e->timeout_ms) ||
	    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data) ||
	    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") ||
	    (o->cacert && curl_easy_setopt(c, CURLOPT_CAINFO, o->cacert)) ||
	    (o->cert && curl_easy_setopt(c, CURLOPT_SSLCERT, o->cert)) ||
	    (o->key && curl_easy_setopt(c, CURLOPT_SSLKEY, o->key))) {
		krep_errf(err, errlen, -EINVAL, "libcurl refuses an option (TLS support missing?)");
		goto fail;
	}
	return e;
oom:
	krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
fail:
	krep_etcd_close(e);
	return NULL;
}

/* ---- requests ---------------------------------------------------------- */

/* A 64-bit integer field of @o: a decimal string, or a number. */
static int i64_of(json_object *o, const char *key, int64_t *v, bool required)
{
	json_object *f;
	const char *s;
	char *end;

	if (!json_object_object_get_ex(o, key, &f) || !f) {
		*v = 0;
		return required ? -EPROTO : 0;	/* proto3 leaves zeros out */
	}
	if (json_object_is_type(f, json_type_int)) {
		*v = json_object_get_int64(f);
		return 0;
	}
	if (!json_object_is_type(f, json_type_string))
		return -EPROTO;
	s = json_object_get_string(f);
	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno || !*s || *end ? -EPROTO : 0;
}

/* The gateway's error object: {"error": ..., "message": ..., "code": N} */
static int gw_error(json_object *o, int64_t *code, const char **msg)
{
	json_object *f;

	*code = 0;
	*msg = NULL;
	if (json_object_object_get_ex(o, "error", &f) &&
	    json_object_is_type(f, json_type_object))
		o = f;	/* a streaming call's {"error": {...}} */
	if (i64_of(o, "code", code, true))
		return 0;
	if (json_object_object_get_ex(o, "message", &f) &&
	    json_object_is_type(f, json_type_string))
		*msg = json_object_get_string(f);
	else
		*msg = "(no message)";
	return 1;
}

static int authenticate(struct krep_etcd *e, char *err, size_t errlen);

/*
 * The request went out but no answer came back (a timeout, a dropped
 * connection, a gateway's 5xx, or etcd's own "request timed out"): etcd
 * may have applied it. -ETIMEDOUT then, -EHOSTUNREACH when it surely did
 * not get there.
 */
static int lost_or_unreachable(struct krep_etcd *e, bool reached)
{
	long sent = 0;

	if (!reached)
		curl_easy_getinfo(e->curl, CURLINFO_REQUEST_SIZE, &sent);
	return reached || sent > 0 ? -ETIMEDOUT : -EHOSTUNREACH;
}

/*
 * POST @body to @path on the current endpoint. *@out is the parsed answer
 * (0) or NULL (-errno, @err says why; -ETIMEDOUT: lost_or_unreachable()).
 * @fresh: on a new connection, for a request that must not be sent twice
 * (libcurl sends a request again, unasked, when a connection it reuses
 * turns out closed before any answer, even if etcd got it).
 */
static int post_once(struct krep_etcd *e, const char *path, const char *body,
		     bool fresh, json_object **out, int64_t *gcode, char *err,
		     size_t errlen)
{
	char url[512];
	struct buf b = { 0 };
	enum json_tokener_error jerr;
	const char *msg;
	long status = 0;
	CURLcode cc;
	int64_t code;
	int ret;

	*out = NULL;
	*gcode = 0;
	snprintf(url, sizeof(url), "%s%s", e->ep[e->cur], path);
	curl_easy_setopt(e->curl, CURLOPT_URL, url);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, e->hdrs);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(e->curl, CURLOPT_FRESH_CONNECT, fresh ? 1L : 0L);
	cc = curl_easy_perform(e->curl);
	if (cc != CURLE_OK) {
		ret = krep_errf(err, errlen, b.full ? -EMSGSIZE :
			   lost_or_unreachable(e, false), "%s: %s", url,
			   b.full ? "answer too large" : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
	*out = b.p ? json_tokener_parse_verbose(b.p, &jerr) : NULL;
	if (!*out || !json_object_is_type(*out, json_type_object)) {
		ret = krep_errf(err, errlen, status >= 500 ?
			   lost_or_unreachable(e, true) : -EPROTO,
			   "%s: HTTP %ld, %s", url, status,
			   b.p ? "the answer is not a JSON object" :
			   "an empty answer");
		goto out;
	}
	if (gw_error(*out, &code, &msg) || status != 200) {
		*gcode = code;
		ret = krep_errf(err, errlen, code == GRPC_UNAVAILABLE ||
			   code == GRPC_DEADLINE ?
			   lost_or_unreachable(e, true) : -EIO,
			   "%s: HTTP %ld, etcd error %" PRId64 ": %s", url,
			   status, code, msg ? msg : "(no message)");
		goto out;
	}
	free(b.p);
	return 0;
out:
	json_object_put(*out);
	*out = NULL;
	free(b.p);
	return ret;
}

/*
 * POST @req to @path on the current endpoint, then the next ones (each
 * once) while they cannot be reached. With @once (a write), not after it
 * may have been applied: -ETIMEDOUT then, the next request going to the
 * next endpoint. Without, -ETIMEDOUT is not returned (-EHOSTUNREACH).
 */
static int post(struct krep_etcd *e, const char *path, json_object *req,
		bool once, json_object **out, char *err, size_t errlen)
{
	const char *body = json_object_to_json_string_ext(req,
							  JSON_C_TO_STRING_PLAIN);
	bool reauth = true;
	int64_t code;
	size_t tries;
	int ret = -ENOMEM;

	if (!body)
		return krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	if (e->user && !e->token && strcmp(path, "/v3/auth/authenticate")) {
		ret = authenticate(e, err, errlen);
		if (ret)
			return ret;
	}
	for (tries = 0; tries < e->nep; tries++) {
		ret = post_once(e, path, body, once, out, &code, err, errlen);
		if (ret == -EIO && code == GRPC_UNAUTHENTICATED && e->user &&
		    reauth && strcmp(path, "/v3/auth/authenticate")) {
			reauth = false;
			free(e->token);
			e->token = NULL;
			ret = authenticate(e, err, errlen);
			if (ret)
				return ret;
			tries--;
			continue;
		}
		if (ret == -ETIMEDOUT && once) {
			e->cur = (e->cur + 1) % e->nep;
			return ret;
		}
		if (ret == -ETIMEDOUT)
			ret = -EHOSTUNREACH;
		if (ret != -EHOSTUNREACH)
			return ret;
		e->cur = (e->cur + 1) % e->nep;
	}
	return ret;
}

static int authenticate(struct krep_etcd *e, char *err, size_t errlen)
{
	json_object *req, *ans = NULL, *tok;
	struct curl_slist *h;
	char line[1024];
	int ret;

	req = json_object_new_object();
	if (!req || json_object_object_add(req, "name",
					   json_object_new_string(e->user)) ||
	    json_object_object_add(req, "password",
				   json_object_new_string(e->password ?: ""))) {
		json_object_put(req);
		return krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	}
	ret = post(e, "/v3/auth/authenticate", req, false, &ans, err, errlen);
	json_object_put(req);
	if (ret)
		return ret;
	if (!json_object_object_get_ex(ans, "token", &tok) ||
	    !json_object_is_type(tok, json_type_string) ||
	    snprintf(line, sizeof(line), "Authorization: %s",
		     json_object_get_string(tok)) >= (int)sizeof(line)) {
		json_object_put(ans);
		return krep_errf(err, errlen, -EPROTO,
			    "etcd authenticate: no usable token in the answer");
	}
	json_object_put(ans);
	/* rebuild the headers: Content-Type and the new token */
	h = curl_slist_append(NULL, "Content-Type: application/json");
	if (!h || !curl_slist_append(h, line)) {
		curl_slist_free_all(h);
		return krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	}
	curl_slist_free_all(e->hdrs);
	e->hdrs = h;
	free(e->token);
	e->token = strdup(line);
	return e->token ? 0 : krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
}

/* ---- kv ---------------------------------------------------------------- */

static int add_b64(json_object *o, const char *field, const void *data,
		   size_t len)
{
	char *s = krep_b64_encode(data, len);
	json_object *v;

	if (!s)
		return -ENOMEM;
	v = json_object_new_string(s);
	free(s);
	if (!v || json_object_object_add(o, field, v)) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static int add_i64(json_object *o, const char *field, int64_t v)
{
	char s[24];
	json_object *j;

	snprintf(s, sizeof(s), "%" PRId64, v);
	j = json_object_new_string(s);
	if (!j || json_object_object_add(o, field, j)) {
		json_object_put(j);
		return -ENOMEM;
	}
	return 0;
}

/* The range_end that makes [key, end) every key starting with @key. */
static int add_prefix_end(json_object *o, const char *key)
{
	size_t len = strlen(key);
	char *end = strdup(key);
	int ret;

	if (!end)
		return -ENOMEM;
	while (len && (unsigned char)end[len - 1] == 0xff)
		len--;
	if (!len) {
		end[0] = '\0';	/* every key: "\0" */
		ret = add_b64(o, "range_end", end, 1);
	} else {
		end[len - 1]++;
		ret = add_b64(o, "range_end", end, len);
	}
	free(end);
	return ret;
}

void krep_etcd_kvs_free(struct krep_etcd_kvs *kvs)
{
	size_t i;

	for (i = 0; i < kvs->n; i++) {
		free(kvs->kv[i].key);
		free(kvs->kv[i].value);
	}
	free(kvs->kv);
	memset(kvs, 0, sizeof(*kvs));
}

static int header_rev(json_object *ans, int64_t *rev)
{
	json_object *h;

	if (!json_object_object_get_ex(ans, "header", &h) ||
	    !json_object_is_type(h, json_type_object))
		return -EPROTO;
	return i64_of(h, "revision", rev, true);
}

static int kv_of(json_object *o, struct krep_etcd_kv *kv, const char **why)
{
	json_object *k, *v;
	size_t len;

	*why = "a key-value is not an object";
	if (!json_object_is_type(o, json_type_object))
		return -EPROTO;
	*why = "a key-value has no key";
	if (!json_object_object_get_ex(o, "key", &k) ||
	    !json_object_is_type(k, json_type_string))
		return -EPROTO;
	*why = "a key-value's value is not a string";
	if (json_object_object_get_ex(o, "value", &v) &&
	    !json_object_is_type(v, json_type_string))
		return -EPROTO;
	*why = "a key-value's revisions or lease are not integers";
	if (i64_of(o, "create_revision", &kv->create_rev, true) ||
	    i64_of(o, "mod_revision", &kv->mod_rev, true) ||
	    i64_of(o, "lease", &kv->lease, false))
		return -EPROTO;
	*why = "a key or value is not base64";
	kv->key = krep_b64_decode(json_object_get_string(k), &len);
	if (!kv->key || strlen(kv->key) != len)
		return -EPROTO;	/* NUL inside: not one of our keys */
	kv->value = krep_b64_decode(v ? json_object_get_string(v) : "",
				    &kv->vlen);
	if (!kv->value)
		return -EPROTO;
	return 0;
}

/* The "kvs" array of a range answer @ans (a range_response) into @out. */
static int kvs_of(json_object *ans, struct krep_etcd_kvs *out,
		  const char **why)
{
	json_object *arr;
	size_t i, n;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!json_object_object_get_ex(ans, "kvs", &arr) || !arr)
		return 0;	/* none */
	*why = "\"kvs\" is not an array";
	if (!json_object_is_type(arr, json_type_array))
		return -EPROTO;
	n = json_object_array_length(arr);
	out->kv = calloc(n ? n : 1, sizeof(*out->kv));
	if (!out->kv) {
		*why = strerror(ENOMEM);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		out->n++;
		ret = kv_of(json_object_array_get_idx(arr, i), &out->kv[i],
			    why);
		if (ret) {
			krep_etcd_kvs_free(out);
			return ret;
		}
	}
	return 0;
}

int krep_etcd_range(struct krep_etcd *e, const char *key, bool prefix,
		    struct krep_etcd_kvs *out, char *err, size_t errlen)
{
	json_object *req, *ans = NULL;
	const char *why = "";
	int ret;

	memset(out, 0, sizeof(*out));
	req = json_object_new_object();
	if (!req || add_b64(req, "key", key, strlen(key)) ||
	    (prefix && add_prefix_end(req, key))) {
		json_object_put(req);
		return krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	}
	ret = post(e, "/v3/kv/range", req, false, &ans, err, errlen);
	json_object_put(req);
	if (ret)
		return ret;
	ret = kvs_of(ans, out, &why);
	if (!ret && header_rev(ans, &out->rev)) {
		why = "no header revision";
		krep_etcd_kvs_free(out);
		ret = -EPROTO;
	}
	json_object_put(ans);
	if (ret)
		return krep_errf(err, errlen, ret, "etcd range %s: %s", key, why);
	return 0;
}

/* ---- transactions ------------------------------------------------------ */

struct krep_etcd_txn *krep_etcd_txn_new(void)
{
	struct krep_etcd_txn *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cmp = json_object_new_array();
	t->ops = json_object_new_array();
	if (!t->cmp || !t->ops) {
		krep_etcd_txn_free(t);
		return NULL;
	}
	return t;
}

void krep_etcd_txn_free(struct krep_etcd_txn *t)
{
	size_t i;

	if (!t)
		return;
	json_object_put(t->cmp);
	json_object_put(t->ops);
	for (i = 0; i < t->nop; i++) {
		free(t->op[i].key);
		free(t->op[i].value);
	}
	free(t->op);
	free(t);
}

size_t krep_etcd_txn_ops(const struct krep_etcd_txn *t)
{
	return json_object_array_length(t->ops);
}

static int txn_add(struct krep_etcd_txn *t, json_object *arr, json_object *o)
{
	if (!o || json_object_array_add(arr, o)) {
		json_object_put(o);
		t->oom = true;
		return -ENOMEM;
	}
	return 0;
}

int krep_etcd_txn_cmp(struct krep_etcd_txn *t, const char *key,
		      enum krep_etcd_target target, int64_t rev)
{
	json_object *c = json_object_new_object();
	bool mod = target == KREP_ETCD_MOD;

	if (!c || json_object_object_add(c, "result",
					 json_object_new_string("EQUAL")) ||
	    json_object_object_add(c, "target",
				   json_object_new_string(mod ? "MOD" : "CREATE")) ||
	    add_b64(c, "key", key, strlen(key)) ||
	    add_i64(c, mod ? "mod_revision" : "create_revision", rev)) {
		json_object_put(c);
		t->oom = true;
		return -ENOMEM;
	}
	return txn_add(t, t->cmp, c);
}

/* Keep a put (@value) or a delete (@value NULL) to read it back. */
static int op_keep(struct krep_etcd_txn *t, const char *key,
		   const char *value, int64_t lease)
{
	struct txn_op *v = realloc(t->op, (t->nop + 1) * sizeof(*v));

	if (!v)
		goto oom;
	t->op = v;
	v = &t->op[t->nop];
	v->key = strdup(key);
	v->value = value ? strdup(value) : NULL;
	v->lease = lease;
	if (!v->key || (value && !v->value)) {
		free(v->key);
		free(v->value);
		goto oom;
	}
	t->nop++;
	return 0;
oom:
	t->oom = true;
	return -ENOMEM;
}

static json_object *wrap(const char *name, json_object *inner)
{
	json_object *o = inner ? json_object_new_object() : NULL;

	if (!o || json_object_object_add(o, name, inner)) {
		json_object_put(o);
		json_object_put(inner);
		return NULL;
	}
	return o;
}

int krep_etcd_txn_put(struct krep_etcd_txn *t, const char *key,
		      const char *value, int64_t lease)
{
	json_object *p = json_object_new_object();

	if (!p || add_b64(p, "key", key, strlen(key)) ||
	    add_b64(p, "value", value, strlen(value)) ||
	    (lease && add_i64(p, "lease", lease))) {
		json_object_put(p);
		t->oom = true;
		return -ENOMEM;
	}
	return txn_add(t, t->ops, wrap("request_put", p)) ?:
	       op_keep(t, key, value, lease);
}

int krep_etcd_txn_del(struct krep_etcd_txn *t, const char *key)
{
	json_object *d = json_object_new_object();

	if (!d || add_b64(d, "key", key, strlen(key))) {
		json_object_put(d);
		t->oom = true;
		return -ENOMEM;
	}
	return txn_add(t, t->ops, wrap("request_delete_range", d)) ?:
	       op_keep(t, key, NULL, 0);
}

/*
 * Does @kvs (the read of @op's key) show @op applied? A put's key holds
 * its value and lease, at the mod_revision *@at of the transaction's
 * other puts (0: none seen yet); a delete's key is gone.
 */
static bool op_shows(const struct txn_op *op, const struct krep_etcd_kvs *kvs,
		     int64_t *at)
{
	const struct krep_etcd_kv *kv = kvs->n ? &kvs->kv[0] : NULL;

	if (!op->value)
		return !kv;
	if (!kv || kv->lease != op->lease || kv->vlen != strlen(op->value) ||
	    memcmp(kv->value, op->value, kv->vlen) ||
	    (*at && kv->mod_rev != *at))
		return false;
	*at = kv->mod_rev;
	return true;
}

/*
 * @t was sent but its answer was lost: read its keys back. 1: every one
 * shows it applied (*@rev: its revision, 0 if it put nothing); 0: one does
 * not (nothing of @t was applied, a transaction being all or nothing; the
 * caller's compares keep anyone else from having written these keys
 * since); -errno: a read failed, with the reason in @err.
 */
static int txn_read_back(struct krep_etcd *e, const struct krep_etcd_txn *t,
			 int64_t *rev, char *err, size_t errlen)
{
	struct krep_etcd_kvs kvs;
	int64_t at = 0;
	bool shows;
	size_t i;
	int ret;

	if (!t->nop)
		return krep_errf(err, errlen, -EINVAL, "no operation to read back");
	for (i = 0; i < t->nop; i++) {
		ret = krep_etcd_range(e, t->op[i].key, false, &kvs, err, errlen);
		if (ret)
			return ret;
		shows = op_shows(&t->op[i], &kvs, &at);
		krep_etcd_kvs_free(&kvs);
		if (!shows)
			return 0;
	}
	*rev = at;
	return 1;
}

/*
 * Send @req (@t's). An answer lost on the way back is not a failure yet:
 * read the keys back; applied, it counts as committed (noted for
 * krep_etcd_note()); not applied, @req goes to the next endpoint, each
 * once. Returns 0 with the answer in *@ans, or with *@ans NULL when read
 * back applied (*@rev set); else -errno (-ETIMEDOUT: nobody knows).
 */
static int txn_send(struct krep_etcd *e, const struct krep_etcd_txn *t,
		    json_object *req, json_object **ans, int64_t *rev,
		    char *err, size_t errlen)
{
	char lost[sizeof(e->note) - 128], why[256];
	size_t tries;
	int ret;

	lost[0] = '\0';
	for (tries = 0; tries < e->nep; tries++) {
		ret = post(e, "/v3/kv/txn", req, true, ans, err, errlen);
		if (ret != -ETIMEDOUT)
			return ret;
		snprintf(lost, sizeof(lost), "%s", err);
		ret = txn_read_back(e, t, rev, why, sizeof(why));
		if (ret < 0)
			return krep_errf(err, errlen, -ETIMEDOUT,
				    "%s; its outcome is unknown: cannot read its keys back: %s",
				    lost, why);
		if (ret) {
			snprintf(e->note, sizeof(e->note),
				 "a transaction's answer was lost (%s); its keys read back show it applied (revision %" PRId64 ")",
				 lost, *rev);
			return 0;
		}
	}
	return krep_errf(err, errlen, -EHOSTUNREACH,
		    "%s; its keys read back show it was not applied", lost);
}

bool krep_etcd_note(struct krep_etcd *e, char *buf, size_t len)
{
	if (!e->note[0])
		return false;
	snprintf(buf, len, "%s", e->note);
	e->note[0] = '\0';
	return true;
}

int krep_etcd_txn_commit(struct krep_etcd *e, struct krep_etcd_txn *t,
			 bool *ok, int64_t *rev, char *err, size_t errlen)
{
	json_object *req, *ans = NULL, *s;
	int ret;

	*ok = false;
	if (t->oom)
		return krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	req = json_object_new_object();
	if (!req || json_object_object_add(req, "compare",
					   json_object_get(t->cmp)) ||
	    json_object_object_add(req, "success", json_object_get(t->ops))) {
		json_object_put(req);
		return krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	}
	ret = txn_send(e, t, req, &ans, rev, err, errlen);
	json_object_put(req);
	if (ret)
		return ret;
	if (!ans) {
		*ok = true;	/* read back */
		return 0;
	}
	if (header_rev(ans, rev) ||
	    (json_object_object_get_ex(ans, "succeeded", &s) &&
	     !json_object_is_type(s, json_type_boolean))) {
		json_object_put(ans);
		return krep_errf(err, errlen, -EPROTO,
			    "etcd txn: no header revision or a bad \"succeeded\"");
	}
	*ok = json_object_object_get_ex(ans, "succeeded", &s) &&
	      json_object_get_boolean(s);
	json_object_put(ans);
	return 0;
}

/* ---- leases ------------------------------------------------------------ */

static int lease_call(struct krep_etcd *e, const char *path, const char *f,
		      int64_t v, json_object **ans, char *err, size_t errlen)
{
	json_object *req = json_object_new_object();
	int ret;

	if (!req || add_i64(req, f, v)) {
		json_object_put(req);
		return krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	}
	ret = post(e, path, req, false, ans, err, errlen);
	json_object_put(req);
	return ret;
}

int krep_etcd_lease_grant(struct krep_etcd *e, int64_t ttl_s, int64_t *id,
			  int64_t *granted, char *err, size_t errlen)
{
	json_object *ans;
	int ret;

	ret = lease_call(e, "/v3/lease/grant", "TTL", ttl_s, &ans, err, errlen);
	if (ret)
		return ret;
	if (i64_of(ans, "ID", id, true) || i64_of(ans, "TTL", granted, true) ||
	    *id == 0 || *granted <= 0)
		ret = krep_errf(err, errlen, -EPROTO,
			   "etcd lease grant: no lease id or TTL in the answer");
	json_object_put(ans);
	return ret;
}

int krep_etcd_lease_keepalive(struct krep_etcd *e, int64_t id, int64_t *ttl_s,
			      char *err, size_t errlen)
{
	json_object *ans, *r;
	int ret;

	ret = lease_call(e, "/v3/lease/keepalive", "ID", id, &ans, err, errlen);
	if (ret)
		return ret;
	/* a stream of one message: {"result": {"header", "ID", "TTL"}} */
	if (!json_object_object_get_ex(ans, "result", &r) ||
	    !json_object_is_type(r, json_type_object) ||
	    i64_of(r, "TTL", ttl_s, false) || *ttl_s < 0)
		ret = krep_errf(err, errlen, -EPROTO,
			   "etcd lease keepalive: no result in the answer");
	json_object_put(ans);
	return ret;
}

int krep_etcd_lease_revoke(struct krep_etcd *e, int64_t id, char *err,
			   size_t errlen)
{
	json_object *ans;
	int ret;

	ret = lease_call(e, "/v3/lease/revoke", "ID", id, &ans, err, errlen);
	json_object_put(ans);
	return ret;
}
