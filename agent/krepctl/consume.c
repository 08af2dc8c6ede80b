// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl consume: read the partitions of a topic (or one) with
 * KREP_CMD_FETCH, like `kcat -C`.
 *
 * The loop fetches from the next offset wanted, walks the batches of the
 * reply (verifying each CRC-32C), skips control batches (transaction
 * markers) and the records of the first batch that lie before the
 * offset asked for, and prints the rest. Without --follow it reads each
 * partition in turn and stops when a fetch returns nothing or the next
 * offset reaches the high watermark (the last stable offset for
 * read_committed); with --follow it keeps fetching from every partition
 * in turn, each fetch waiting in the kernel (the wait shared out over the
 * partitions), until COUNT records or SIGINT/SIGTERM.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <linux/krep.h>

#include "format.h"
#include "json.h"
#include "krepctl.h"
#include "record.h"

/*
 * One KREP_A_RECORDS attribute holds at most 65531 bytes (nla_len is 16
 * bits): ask for no more by default.
 */
#define DEFAULT_MAX_BYTES	(0xffff - NLA_HDRLEN)
#define FOLLOW_WAIT_MS		1000
#define FOLLOW_WAIT_MIN_MS	50	/* per partition, with many */

void krepctl_consume_usage(FILE *f)
{
	fputs("Usage: krepctl consume TOPIC [partition N] [-o beginning|end|OFFSET|-N|s@MS]\n"
	      "                       [-c COUNT] [-e | --follow] [-f FORMAT]\n"
	      "                       [--isolation read_committed|read_uncommitted]\n"
	      "                       [--format value|full|FORMAT] [max-bytes N] [wait MS]\n"
	      "\n"
	      "Print the records of every partition of TOPIC, one partition after\n"
	      "the other, or of partition N only (also -p N), from this broker,\n"
	      "which must lead them. A partition led elsewhere is named on stderr\n"
	      "with its leader, and the exit status is then 1.\n"
	      "\n"
	      "  -o, --offset WHERE  where to start: beginning (the log start,\n"
	      "                      default), end (the high watermark), OFFSET,\n"
	      "                      -N (N before the end) or s@MS (the first record\n"
	      "                      with a timestamp of at least MS)\n"
	      "  -c, --count COUNT   stop after COUNT records (of all partitions)\n"
	      "  -e, --exit          stop at the end of the partitions (the default)\n"
	      "  --follow            wait for new records at the end instead of\n"
	      "                      stopping (until COUNT records or SIGINT); -f\n"
	      "                      without a FORMAT (no %) means --follow too\n"
	      "  -f FORMAT           print each record as kcat's FORMAT: %t topic,\n"
	      "                      %p partition, %o offset, %k key, %s value,\n"
	      "                      %K, %S key and value lengths (-1: null),\n"
	      "                      %h headers K=V,K=V, %T timestamp (ms), %%;\n"
	      "                      \\n \\t \\r \\\\ escapes (no newline is added)\n"
	      "  --isolation LEVEL   read_uncommitted (default: up to the high\n"
	      "                      watermark) or read_committed (up to the last\n"
	      "                      stable offset, without aborted transactions)\n"
	      "  --format FORMAT     value: the value, one a line (default);\n"
	      "                      full: OFFSET TIMESTAMP KEY VALUE HEADERS,\n"
	      "                      tab-separated, headers as K=V,K=V; or a\n"
	      "                      FORMAT string as -f's\n"
	      "  max-bytes N         bytes per fetch (default 65531; at least one\n"
	      "                      whole batch is returned)\n"
	      "  wait MS             how long a fetch at the end waits in the kernel\n"
	      "                      (default 0, or 1000 with -f; max 30000)\n"
	      "\n"
	      "Keys and values are printed as they are; a null one prints as\n"
	      "nothing. With --json each record is one line\n"
	      "  {\"topic\":TOPIC,\"partition\":P,\"offset\":N,\"timestamp\":MS,\n"
	      "   \"key\":STRING|null,\"value\":STRING|null,\n"
	      "   \"headers\":{KEY:STRING|null,...},\"encoding\":\"utf8\"|\"base64\"}\n"
	      "where key, value and header values are UTF-8 text (\"utf8\"), or,\n"
	      "when one of them is not valid UTF-8, all of them are base64\n"
	      "(\"base64\", RFC 4648), so that every byte survives. Control records\n"
	      "(transaction markers) are not printed.\n", f);
}

static bool is_json_flag(const char *s)
{
	return !strcmp(s, "-j") || !strcmp(s, "--json");
}

static int start_parse(const char *val, struct krep_consume_args *a)
{
	uint64_t u;

	if (!strcmp(val, "beginning") || !strcmp(val, "earliest")) {
		a->start = KREP_START_BEGINNING;
		return 0;
	}
	if (!strcmp(val, "end") || !strcmp(val, "latest")) {
		a->start = KREP_START_END;
		return 0;
	}
	if (!strncmp(val, "s@", 2)) {
		a->start = KREP_START_TIME;
		if (krep_s64_parse(val + 2, &a->start_arg) || a->start_arg < 0)
			goto bad;
		return 0;
	}
	if (val[0] == '-') {
		a->start = KREP_START_FROM_END;
		if (krep_u64_parse(val + 1, &u) || u > INT64_MAX)
			goto bad;
		a->start_arg = u;
		return 0;
	}
	/* any u64: the kernel says OFFSET_OUT_OF_RANGE beyond the log */
	a->start = KREP_START_OFFSET;
	if (krep_u64_parse(val, &u))
		goto bad;
	a->start_arg = (int64_t)u;
	return 0;
bad:
	krepctl_usage_error(krepctl_consume_usage,
			    "consume: offset '%s' is not beginning, end, OFFSET, -N or s@MS",
			    val);
	return -EINVAL;
}

/* -f FORMAT or --format FORMAT with a %: kcat's format string */
static int format_parse(const char *val, struct krep_consume_args *a)
{
	char why[256];

	if (krep_format_check(val, why, sizeof(why)))
		return krepctl_usage_error(krepctl_consume_usage,
					   "consume: %s", why);
	a->format = KREP_FORMAT_STRING;
	a->fmt = val;
	return 0;
}

/* "--opt=value" or "--opt value" / "-o value"; NULL after a usage error. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	const char *a = argv[*i], *eq = strchr(a, '=');

	if (a[0] == '-' && a[1] == '-' && eq)
		return eq + 1;
	if (*i + 1 >= argc) {
		krepctl_usage_error(krepctl_consume_usage,
				    "consume: '%s' needs a value", name);
		return NULL;
	}
	return argv[++*i];
}

/* Does @arg name the option --@lng (or --@lng=...) or -@shrt? */
static bool is_opt(const char *arg, const char *shrt, const char *lng)
{
	size_t n = strlen(lng);

	if (shrt && !strcmp(arg, shrt))
		return true;
	return arg[0] == '-' && arg[1] == '-' && !strncmp(arg + 2, lng, n) &&
	       (arg[2 + n] == '\0' || arg[2 + n] == '=');
}

/*
 * Parse the command line (argv[0] is "consume"). Returns 0, 1 if help was
 * asked for, or -errno after printing a usage error.
 */
int krep_consume_parse(int argc, char **argv, struct krep_consume_args *a)
{
	const char *arg, *val;
	int i, err = 0;

	memset(a, 0, sizeof(*a));
	a->start = KREP_START_BEGINNING;
	a->max_bytes = DEFAULT_MAX_BYTES;
	for (i = 1; i < argc; i++) {
		if (krepctl_is_help(argv[i]))
			return 1;
	}
	for (i = 1; i < argc; i++) {
		arg = argv[i];
		if (is_json_flag(arg)) {
			a->json = true;
		} else if (!strcmp(arg, "--follow")) {
			a->follow = true;
		} else if (!strcmp(arg, "-e") || !strcmp(arg, "--exit")) {
			a->follow = false;
		} else if (!strcmp(arg, "-f")) {
			/* kcat's -f FORMAT; -f alone (no %) is --follow */
			if (i + 1 < argc && strchr(argv[i + 1], '%'))
				err = format_parse(argv[++i], a);
			else
				a->follow = true;
		} else if (is_opt(arg, "-o", "offset")) {
			val = opt_value(argc, argv, &i, "-o");
			err = val ? start_parse(val, a) : -EINVAL;
		} else if (is_opt(arg, "-c", "count")) {
			val = opt_value(argc, argv, &i, "-c");
			a->has_count = true;
			if (!val)
				err = -EINVAL;
			else if (krep_u64_parse(val, &a->count))
				err = krepctl_usage_error(krepctl_consume_usage,
							  "consume: count '%s' is not a number",
							  val);
		} else if (is_opt(arg, NULL, "isolation")) {
			val = opt_value(argc, argv, &i, "--isolation");
			if (!val)
				err = -EINVAL;
			else if (!strcmp(val, "read_committed"))
				a->isolation = KREP_READ_COMMITTED;
			else if (!strcmp(val, "read_uncommitted"))
				a->isolation = KREP_READ_UNCOMMITTED;
			else
				err = krepctl_usage_error(krepctl_consume_usage,
							  "consume: isolation must be read_committed or read_uncommitted, not '%s'",
							  val);
		} else if (is_opt(arg, NULL, "format")) {
			val = opt_value(argc, argv, &i, "--format");
			if (!val)
				err = -EINVAL;
			else if (!strcmp(val, "value"))
				a->format = KREP_FORMAT_VALUE;
			else if (!strcmp(val, "full"))
				a->format = KREP_FORMAT_FULL;
			else if (strchr(val, '%'))
				err = format_parse(val, a);
			else
				err = krepctl_usage_error(krepctl_consume_usage,
							  "consume: format must be value, full or a format string with %%, not '%s'",
							  val);
		} else if (!strcmp(arg, "max-bytes") || !strcmp(arg, "wait") ||
			   !strcmp(arg, "partition") || !strcmp(arg, "-p") ||
			   !strcmp(arg, "--partition")) {
			if (i + 1 >= argc) {
				krepctl_usage_error(krepctl_consume_usage,
						    "consume: '%s' needs a value",
						    arg);
				return -EINVAL;
			}
			val = argv[++i];
			if (!strcmp(arg, "max-bytes")) {
				err = krepctl_parse_u32(krepctl_consume_usage,
							"consume", arg, val,
							&a->max_bytes);
			} else if (!strcmp(arg, "wait")) {
				a->has_wait = true;
				err = krepctl_parse_u32(krepctl_consume_usage,
							"consume", arg, val,
							&a->wait_ms);
			} else {
				a->has_partition = true;
				err = krepctl_parse_u32(krepctl_consume_usage,
							"consume", "partition",
							val, &a->partition);
			}
		} else if (!a->topic && arg[0] != '-') {
			a->topic = arg;
		} else {
			static const char *const names[] = {
				"partition", "-p", "--partition", "-o",
				"--offset", "-c", "--count", "-e", "--exit",
				"--follow", "-f", "--isolation", "--format",
				"max-bytes", "wait", "--json", NULL
			};
			char buf[96];

			krepctl_usage_error(krepctl_consume_usage,
					    "consume: unknown %s '%s'%s",
					    arg[0] == '-' ? "option" : "keyword",
					    arg, krepctl_did_you_mean(arg, names, buf,
								      sizeof(buf)));
			return -EINVAL;
		}
		if (err)
			return err < 0 ? err : -EINVAL;
	}
	if (!a->topic) {
		krepctl_usage_error(krepctl_consume_usage, "consume: missing topic");
		return -EINVAL;
	}
	return 0;
}

/* ---- FETCH ------------------------------------------------------------- */

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static struct nla_policy fetch_policy[KREP_A_MAX + 1] = {
	[KREP_A_RECORDS]	= { .type = NLA_UNSPEC },
	[KREP_A_HW]		= { .type = NLA_U64 },
	[KREP_A_LSO]		= { .type = NLA_U64 },
	[KREP_A_LOG_START]	= { .type = NLA_U64 },
};

struct fetch_reply {
	uint8_t *buf;		/* every KREP_A_RECORDS, in order */
	size_t len, cap;
	bool has_hw, has_lso;
	uint64_t hw, lso;
};

static int fetch_reply_get(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *tb[KREP_A_MAX + 1], *a;
	struct fetch_reply *r = arg;
	int rem;

	if (genlmsg_parse(nlh, 0, tb, KREP_A_MAX, fetch_policy))
		goto malformed;
	/* Record bytes may come in several attributes: join them. */
	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlh), 0),
			  genlmsg_attrlen(nlmsg_data(nlh), 0), rem) {
		size_t n = nla_len(a);

		if (nla_type(a) != KREP_A_RECORDS)
			continue;
		if (r->len + n > r->cap) {
			size_t cap = r->cap ? r->cap : 65536;
			uint8_t *nb;

			while (cap < r->len + n)
				cap *= 2;
			nb = realloc(r->buf, cap);
			if (!nb) {
				fprintf(stderr, "%s: %s\n", krep_prog,
					strerror(ENOMEM));
				return -ENOMEM;
			}
			r->buf = nb;
			r->cap = cap;
		}
		memcpy(r->buf + r->len, nla_data(a), n);
		r->len += n;
	}
	if (tb[KREP_A_HW]) {
		r->has_hw = true;
		r->hw = nla_get_u64(tb[KREP_A_HW]);
	}
	if (tb[KREP_A_LSO]) {
		r->has_lso = true;
		r->lso = nla_get_u64(tb[KREP_A_LSO]);
	}
	return 0;
malformed:
	fprintf(stderr, "%s: malformed FETCH reply from the kernel\n",
		krep_prog);
	return -EPROTO;
}

struct consumer {
	struct krepctl *ctl;
	const struct krep_consume_args *a;
	uint32_t partition;	/* the one being read */
	uint64_t next;		/* the next offset wanted in it */
	uint64_t printed;	/* records, all partitions */
	bool warned_compressed;
};

static bool done(const struct consumer *c)
{
	return c->a->has_count && c->printed >= c->a->count;
}

static void print_raw(const struct krep_bytes *b)
{
	if (b->len > 0)
		fwrite(b->data, 1, b->len, stdout);
}

/* Are the key, the value and every header value UTF-8? */
static bool record_utf8(const struct krep_record_view *r)
{
	struct krep_header_iter hi;
	struct krep_header h;

	if ((r->key.len > 0 && !json_utf8_valid(r->key.data, r->key.len)) ||
	    (r->value.len > 0 && !json_utf8_valid(r->value.data, r->value.len)))
		return false;
	krep_header_iter_init(&hi, r);
	while (krep_header_next(&hi, &h))
		if (h.value.len > 0 && !json_utf8_valid(h.value.data, h.value.len))
			return false;
	return true;
}

static void json_rec_bytes(struct json *j, const struct krep_bytes *b,
			   bool b64)
{
	if (b->len < 0)
		json_null(j);
	else if (b64)
		json_base64(j, b->data, b->len);
	else
		json_bytes(j, b->data, b->len);
}

static void print_json(struct consumer *c, const struct krep_record_view *r)
{
	struct krep_header_iter hi;
	struct krep_header h;
	bool b64 = !record_utf8(r);
	struct json j;

	json_init(&j, stdout);
	json_obj_begin(&j);
	json_key(&j, "topic");
	json_str(&j, c->a->topic);
	json_key(&j, "partition");
	json_u64(&j, c->partition);
	json_key(&j, "offset");
	json_s64(&j, r->offset);
	json_key(&j, "timestamp");
	json_s64(&j, r->timestamp);
	json_key(&j, "key");
	json_rec_bytes(&j, &r->key, b64);
	json_key(&j, "value");
	json_rec_bytes(&j, &r->value, b64);
	json_key(&j, "headers");
	json_obj_begin(&j);
	krep_header_iter_init(&hi, r);
	while (krep_header_next(&hi, &h)) {
		json_key_bytes(&j, h.key.data, h.key.len);
		json_rec_bytes(&j, &h.value, b64);
	}
	json_obj_end(&j);
	json_key(&j, "encoding");
	json_str(&j, b64 ? "base64" : "utf8");
	json_obj_end(&j);
	putchar('\n');
}

static void print_record(struct consumer *c, const struct krep_record_view *r)
{
	struct krep_header_iter hi;
	struct krep_header h;
	bool first = true;

	if (c->ctl->json) {
		print_json(c, r);
		return;
	}
	if (c->a->format == KREP_FORMAT_STRING) {
		krep_format_print(stdout, c->a->fmt, c->a->topic, c->partition,
				  r);
		return;
	}
	if (c->a->format == KREP_FORMAT_FULL) {
		printf("%" PRId64 "\t%" PRId64 "\t", r->offset, r->timestamp);
		print_raw(&r->key);
		putchar('\t');
		print_raw(&r->value);
		putchar('\t');
		krep_header_iter_init(&hi, r);
		while (krep_header_next(&hi, &h)) {
			if (!first)
				putchar(',');
			first = false;
			print_raw(&h.key);
			putchar('=');
			print_raw(&h.value);
		}
		putchar('\n');
		return;
	}
	print_raw(&r->value);
	putchar('\n');
}

/* Print the records of @b at or after c->next. */
static int consume_batch(struct consumer *c, const struct krep_batch *b)
{
	struct krep_record_view r;
	struct krep_record_iter it;
	const char *why;
	int ret;

	if (krep_batch_is_control(b))
		return 0;
	if (b->attributes & KREP_RB_ATTR_COMPRESSION) {
		if (!c->warned_compressed)
			fprintf(stderr,
				"%s: warning: skipping compressed batches (codec %d), first at offset %" PRId64 "\n",
				krep_prog, b->attributes & KREP_RB_ATTR_COMPRESSION,
				b->base_offset);
		c->warned_compressed = true;
		return 0;
	}
	krep_record_iter_init(&it, b);
	while ((ret = krep_record_next(&it, &r, &why)) > 0) {
		if (r.offset < 0 || (uint64_t)r.offset < c->next)
			continue;
		print_record(c, &r);
		c->printed++;
		c->next = r.offset + 1;
		if (done(c))
			return 0;
	}
	if (ret < 0) {
		krepctl_error(c->ctl, KREP_KERR_CORRUPT_MESSAGE, -EBADMSG,
			      "batch at offset %" PRId64 ": %s", b->base_offset,
			      why);
		return ret;
	}
	return 0;
}

/*
 * One FETCH at c->next. Sets @end when there is nothing more to read now
 * (no records, or the next offset reached the fetch limit).
 */
static int fetch_once(struct consumer *c, uint32_t wait_ms, bool *end)
{
	const struct krep_consume_args *a = c->a;
	struct fetch_reply rep = { 0 };
	struct krep_batch_iter it;
	struct krep_batch b;
	struct nl_msg *msg;
	uint64_t before = c->next, limit;
	const char *why = NULL;
	int nbatches = 0, err, ret = 0;
	size_t pos = 0;

	*end = false;
	msg = krepctl_part_msg(c->ctl->gl.family, KREP_CMD_FETCH, a->topic,
			       c->partition, 64);
	if (!msg || nla_put_u64(msg, KREP_A_OFFSET, c->next) ||
	    nla_put_u32(msg, KREP_A_MAX_BYTES, a->max_bytes) ||
	    nla_put_u32(msg, KREP_A_MAX_WAIT_MS, wait_ms) ||
	    nla_put_u8(msg, KREP_A_ISOLATION, a->isolation)) {
		nlmsg_free(msg);
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return -ENOMEM;
	}
	c->ctl->gl.quiet = true;
	err = krep_genl_request(&c->ctl->gl, msg, fetch_reply_get, &rep);
	c->ctl->gl.quiet = false;
	if (err && c->ctl->gl.st.err && !(stopping && err == -EINTR))
		krepctl_kernel_error(c->ctl, msg);
	nlmsg_free(msg);
	if (err)
		goto out;

	krep_batch_iter_init(&it, rep.buf, rep.len);
	while (!done(c) &&
	       (pos = it.p - rep.buf, ret = krep_batch_next(&it, &b, &why)) > 0) {
		nbatches++;
		err = consume_batch(c, &b);
		if (err)
			goto out;
		if (!done(c) && krep_batch_last_offset(&b) >= 0 &&
		    (uint64_t)krep_batch_last_offset(&b) >= c->next)
			c->next = krep_batch_last_offset(&b) + 1;
	}
	if (!done(c) && ret < 0) {
		krepctl_error(c->ctl, KREP_KERR_CORRUPT_MESSAGE, -EBADMSG,
			      "batch at byte %zu of the FETCH reply for offset %" PRIu64 ": %s",
			      pos, before, why);
		err = ret;
		goto out;
	}
	if (!done(c) && it.partial) {
		/* krep serves whole batches: this is an attribute cut short */
		krepctl_error(c->ctl, KREP_KERR_CORRUPT_MESSAGE, -EBADMSG,
			      "FETCH reply at offset %" PRIu64 " ends inside a batch (%zu bytes of records); a records attribute over 64 KiB comes cut short: use max-bytes %d or less",
			      before, rep.len, DEFAULT_MAX_BYTES);
		err = -EBADMSG;
		goto out;
	}
	if (nbatches && c->next == before && !done(c)) {
		krepctl_error(c->ctl, KREP_KERR_UNKNOWN_SERVER_ERROR, -EPROTO,
			      "FETCH at offset %" PRIu64 " returned no batch beyond it",
			      before);
		err = -EPROTO;
		goto out;
	}
	limit = a->isolation == KREP_READ_COMMITTED ? rep.lso : rep.hw;
	if (!nbatches ||
	    ((a->isolation == KREP_READ_COMMITTED ? rep.has_lso : rep.has_hw) &&
	     c->next >= limit))
		*end = true;
out:
	free(rep.buf);
	return err;
}

/* The offset the consumer starts at. */
static int start_offset(struct consumer *c, uint64_t *offset)
{
	const struct krep_consume_args *a = c->a;
	uint64_t earliest, latest;
	int err;

	switch (a->start) {
	case KREP_START_OFFSET:
		*offset = (uint64_t)a->start_arg;
		return 0;
	case KREP_START_BEGINNING:
		return krepctl_list_offset(c->ctl, a->topic, c->partition,
					   KREP_TS_EARLIEST, a->isolation, offset,
					   NULL, NULL);
	case KREP_START_END:
		return krepctl_list_offset(c->ctl, a->topic, c->partition,
					   KREP_TS_LATEST, a->isolation, offset,
					   NULL, NULL);
	case KREP_START_TIME:
		return krepctl_list_offset(c->ctl, a->topic, c->partition,
					   a->start_arg, a->isolation, offset,
					   NULL, NULL);
	case KREP_START_FROM_END:
		err = krepctl_list_offset(c->ctl, a->topic, c->partition,
					  KREP_TS_EARLIEST, a->isolation,
					  &earliest, NULL,
					  NULL);
		if (!err)
			err = krepctl_list_offset(c->ctl, a->topic, c->partition,
						  KREP_TS_LATEST, a->isolation,
						  &latest, NULL,
						  NULL);
		if (err)
			return err;
		*offset = latest - earliest > (uint64_t)a->start_arg ?
			  latest - a->start_arg : earliest;
		return 0;
	}
	return -EINVAL;
}

/* What is known of each partition read. */
struct part_state {
	uint32_t partition;
	uint64_t next;
	bool skip;		/* not readable here: said so once */
};

/*
 * A partition this broker cannot serve (the kernel said
 * NOT_LEADER_OR_FOLLOWER, already printed with its leader): skip it when
 * reading every partition, so the others are read.
 */
static bool skippable(const struct consumer *c)
{
	return !c->a->has_partition && c->ctl->gl.st.ea.has_kerr &&
	       c->ctl->gl.st.ea.kerr == KREP_KERR_NOT_LEADER_OR_FOLLOWER;
}

/* Read @ps from its start to its end (no --follow). */
static int read_to_end(struct consumer *c, struct part_state *ps)
{
	bool end = false;
	int err;

	c->partition = ps->partition;
	err = start_offset(c, &c->next);
	while (!err && !done(c) && !stopping && !end)
		err = fetch_once(c, c->a->has_wait ? c->a->wait_ms : 0, &end);
	return err;
}

int krepctl_consume_run(struct krepctl *ctl, int argc, char **argv)
{
	struct krep_consume_args a;
	struct consumer c = { .ctl = ctl, .a = &a };
	struct sigaction sa = { .sa_handler = on_signal };
	struct part_state *ps = NULL;
	uint32_t np = 1, i, wait_ms, nskipped = 0;
	bool end;
	int err;

	err = krep_consume_parse(argc, argv, &a);
	if (err > 0) {
		krepctl_consume_usage(stdout);
		return KREP_EXIT_OK;
	}
	if (err)
		return KREP_EXIT_USAGE;
	ctl->json |= a.json;
	if (krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	if (!a.has_partition && krepctl_topic_partitions(ctl, a.topic, &np))
		return KREP_EXIT_ERR;
	ps = calloc(np, sizeof(*ps));
	if (!ps) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return KREP_EXIT_ERR;
	}
	for (i = 0; i < np; i++)
		ps[i].partition = a.has_partition ? a.partition : i;

	/*
	 * SIGINT and SIGTERM end the loop cleanly: a fetch waiting in the
	 * kernel is interrupted, and the request gives up at once.
	 */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&ctl->gl.stop_sigs);
	sigaddset(&ctl->gl.stop_sigs, SIGINT);
	sigaddset(&ctl->gl.stop_sigs, SIGTERM);
	ctl->gl.stop = &stopping;

	err = 0;
	if (!a.follow) {
		for (i = 0; i < np && !done(&c) && !stopping; i++) {
			err = read_to_end(&c, &ps[i]);
			if (err && skippable(&c)) {
				nskipped++;
				err = 0;
			}
			if (err)
				break;
		}
		goto out;
	}

	/* --follow: every partition's start first, then fetch in turn */
	for (i = 0; i < np && !err; i++) {
		c.partition = ps[i].partition;
		err = start_offset(&c, &ps[i].next);
		if (err && skippable(&c)) {
			ps[i].skip = true;
			nskipped++;
			err = 0;
		}
	}
	wait_ms = a.has_wait ? a.wait_ms : FOLLOW_WAIT_MS;
	if (np > 1 && !a.has_wait && wait_ms / np > FOLLOW_WAIT_MIN_MS)
		wait_ms /= np;
	else if (np > 1 && !a.has_wait)
		wait_ms = FOLLOW_WAIT_MIN_MS;
	while (!err && !done(&c) && !stopping && nskipped < np) {
		for (i = 0; i < np && !err && !done(&c) && !stopping; i++) {
			if (ps[i].skip)
				continue;
			c.partition = ps[i].partition;
			c.next = ps[i].next;
			err = fetch_once(&c, wait_ms, &end);
			ps[i].next = c.next;
		}
		fflush(stdout);
	}
out:
	free(ps);
	if (err && stopping && err == -EINTR)
		err = 0;
	return err || nskipped ? KREP_EXIT_ERR : KREP_EXIT_OK;
}
