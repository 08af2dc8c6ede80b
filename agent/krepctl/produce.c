// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl produce: lines from stdin become records, sent in RecordBatch v2
 * batches with KREP_CMD_PRODUCE, like `kcat -P`.
 *
 * Without 'partition N', a record with a key goes where Kafka's default
 * partitioner puts it (murmur2.h), one without to partition 0. Each
 * partition has a batch of its own; a batch is sent when it holds
 * 'batch N' records, when the next record would take it past what one
 * netlink attribute carries (KREP_A_RECORDS is one attribute: at most
 * 65531 bytes), and at the end of the input.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/krep.h>

#include "format.h"
#include "json.h"
#include "krepctl.h"
#include "murmur2.h"
#include "record.h"

/* The largest payload a netlink attribute carries (nla_len is 16 bits). */
#define NLA_PAYLOAD_MAX		(0xffff - NLA_HDRLEN)

void krepctl_produce_usage(FILE *f)
{
	fputs("Usage: krepctl produce TOPIC [partition N] [acks 0|1|all] [timeout MS]\n"
	      "                       [key K] [-K SEP] [-D SEP] [-Z] [batch N]\n"
	      "                       [txn PID:EPOCH] [timestamp MS] [header K=V]...\n"
	      "\n"
	      "Produce one record per line of standard input (the value is the line\n"
	      "without its newline) to TOPIC, whose partitions this broker must\n"
	      "lead. Needs CAP_NET_ADMIN.\n"
	      "\n"
	      "  partition N     the partition (also -p N); without it, a record\n"
	      "                  with a key goes to Kafka's default partition for\n"
	      "                  it, toPositive(murmur2(key)) % partitions, as a\n"
	      "                  Kafka client would put it; one without a key to 0\n"
	      "  acks 0|1|all    wait for the leader (1) or the ISR (all, default)\n"
	      "  timeout MS      how long acks=all may wait (default and max 30000)\n"
	      "  key K           the key of every record (also -k K; default: null)\n"
	      "  -K SEP          the part of a line before the first SEP is its key,\n"
	      "                  the rest its value; lines without SEP keep 'key K'\n"
	      "                  (also -KSEP, --key-delimiter SEP|=SEP)\n"
	      "  -D SEP          records end with SEP instead of a newline (also\n"
	      "                  --delimiter); SEP and -K's may hold \\n \\t \\r \\0\n"
	      "                  \\\\ and \\xHH\n"
	      "  -Z              an empty key or value is null (also --null)\n"
	      "  batch N         records per PRODUCE request (default 1); a batch\n"
	      "                  is sent when full, before it would pass 65531\n"
	      "                  bytes, and at the end of the input\n"
	      "  txn PID:EPOCH   transactional batches of producer PID, epoch EPOCH\n"
	      "                  (open the transaction with 'krepctl txn' first)\n"
	      "  timestamp MS    the timestamp of every record (default: now, in ms)\n"
	      "  header K=V      a header of every record; repeatable\n"
	      "\n"
	      "At the end it prints, for each partition written (or the one asked\n"
	      "for, or 0, when there was no input)\n"
	      "  produced N records to TOPIC-P, offsets A..B\n"
	      "or with --json {\"topic\":TOPIC,\"partition\":P,\"records\":N,\n"
	      "\"first_offset\":A,\"last_offset\":B} (offsets null when N is 0).\n",
	      f);
}

static bool is_json_flag(const char *s)
{
	return !strcmp(s, "-j") || !strcmp(s, "--json");
}

/* The keywords and their other spellings, in the order of seen[]. */
enum {
	KW_PARTITION, KW_ACKS, KW_TIMEOUT, KW_KEY, KW_KEY_SEP, KW_BATCH,
	KW_TXN, KW_TIMESTAMP, KW_HEADER, KW_REC_SEP, KW_N
};

static const struct {
	const char *name, *alias, *lng;
} keywords[KW_N] = {
	[KW_PARTITION]	= { "partition", "-p", "--partition" },
	[KW_ACKS]	= { "acks", NULL, "--acks" },
	[KW_TIMEOUT]	= { "timeout", NULL, "--timeout" },
	[KW_KEY]	= { "key", "-k", "--key" },
	[KW_KEY_SEP]	= { "-K", NULL, "--key-delimiter" },
	[KW_BATCH]	= { "batch", NULL, "--batch" },
	[KW_TXN]	= { "txn", NULL, "--txn" },
	[KW_TIMESTAMP]	= { "timestamp", NULL, "--timestamp" },
	[KW_HEADER]	= { "header", "-H", "--header" },
	[KW_REC_SEP]	= { "-D", NULL, "--delimiter" },
};

/*
 * The keyword @arg names: its index, with @inline_val set for "-KSEP",
 * "-DSEP" and "--long=VALUE"; -1 when it is none.
 */
static int keyword(const char *arg, const char **inline_val)
{
	size_t n;
	int k;

	*inline_val = NULL;
	for (k = 0; k < KW_N; k++) {
		if (!strcmp(arg, keywords[k].name) ||
		    (keywords[k].alias && !strcmp(arg, keywords[k].alias)) ||
		    !strcmp(arg, keywords[k].lng))
			return k;
		n = strlen(keywords[k].lng);
		if (!strncmp(arg, keywords[k].lng, n) && arg[n] == '=') {
			*inline_val = arg + n + 1;
			return k;
		}
	}
	if ((!strncmp(arg, "-K", 2) || !strncmp(arg, "-D", 2)) && arg[2]) {
		*inline_val = arg + 2;
		return arg[1] == 'K' ? KW_KEY_SEP : KW_REC_SEP;
	}
	return -1;
}

/* "; did you mean 'X'?" among the keywords and options, or "" */
static const char *suggest(const char *word)
{
	static const char *names[3 * KW_N + 5];
	static char buf[96];
	size_t n = 0;
	int k;

	for (k = 0; k < KW_N; k++) {
		names[n++] = keywords[k].name;
		if (keywords[k].alias)
			names[n++] = keywords[k].alias;
		names[n++] = keywords[k].lng;
	}
	names[n++] = "-Z";
	names[n++] = "--null";
	names[n++] = "--json";
	names[n] = NULL;
	return krepctl_did_you_mean(word, names, buf, sizeof(buf));
}

/* -K or -D's SEP, escapes decoded into @buf; a usage error otherwise. */
static int sep_parse(const char *kw, const char *val, char *buf,
		     const char **sep, size_t *len)
{
	int err = krep_unescape(val, buf, KREP_SEP_MAX, len);

	if (err == -E2BIG)
		return krepctl_usage_error(krepctl_produce_usage,
					   "produce: %s separator longer than %d bytes",
					   kw, KREP_SEP_MAX);
	if (err)
		return krepctl_usage_error(krepctl_produce_usage,
					   "produce: %s separator '%s' has an unknown escape (known: \\n \\t \\r \\0 \\\\ \\xHH)",
					   kw, val);
	if (!*len)
		return krepctl_usage_error(krepctl_produce_usage,
					   "produce: %s needs a non-empty separator",
					   kw);
	buf[*len] = '\0';
	*sep = buf;
	return 0;
}

/*
 * Parse the command line (argv[0] is "produce"). Returns 0, 1 if help was
 * asked for, or -errno after printing a usage error.
 */
int krep_produce_parse(int argc, char **argv, struct krep_produce_args *a)
{
	bool seen[KW_N] = { false };
	const char *kw, *val, *eq;
	uint32_t u;
	int i, k, err = 0;

	memset(a, 0, sizeof(*a));
	a->batch = 1;
	for (i = 1; i < argc; i++) {
		if (krepctl_is_help(argv[i]))
			return 1;
	}
	for (i = 1; i < argc; i++) {
		kw = argv[i];
		if (is_json_flag(kw)) {
			a->json = true;
			continue;
		}
		if (!strcmp(kw, "-Z") || !strcmp(kw, "--null")) {
			a->null_empty = true;
			continue;
		}
		/* TOPIC comes first: a topic may be named like a keyword */
		if (!a->topic && kw[0] != '-') {
			a->topic = kw;
			continue;
		}
		k = keyword(kw, &val);
		if (k < 0) {
			krepctl_usage_error(krepctl_produce_usage,
					    "produce: unknown %s '%s'%s",
					    kw[0] == '-' ? "option" : "keyword", kw,
					    suggest(kw));
			return -EINVAL;
		}
		if (!val && i + 1 >= argc) {
			krepctl_usage_error(krepctl_produce_usage,
					    "produce: '%s' needs a value", kw);
			return -EINVAL;
		}
		if (seen[k] && k != KW_HEADER) {
			krepctl_usage_error(krepctl_produce_usage,
					    "produce: '%s' given twice",
					    keywords[k].name);
			return -EINVAL;
		}
		seen[k] = true;
		if (!val)
			val = argv[++i];
		switch (k) {
		case KW_PARTITION:
			a->has_partition = true;
			err = krepctl_parse_u32(krepctl_produce_usage, "produce",
						"partition", val, &a->partition);
			break;
		case KW_ACKS:
			a->has_acks = true;
			if (!strcmp(val, "all") || !strcmp(val, "-1"))
				a->acks = -1;
			else if (!strcmp(val, "0") || !strcmp(val, "1"))
				a->acks = val[0] - '0';
			else
				err = krepctl_usage_error(krepctl_produce_usage,
							  "produce: acks must be 0, 1 or all, not '%s'",
							  val);
			break;
		case KW_TIMEOUT:
			a->has_timeout = true;
			err = krepctl_parse_u32(krepctl_produce_usage, "produce",
						"timeout", val, &a->timeout_ms);
			break;
		case KW_KEY:
			a->key = val;
			break;
		case KW_KEY_SEP:
			err = sep_parse("-K", val, a->key_sep_buf, &a->key_sep,
					&a->key_sep_len);
			break;
		case KW_REC_SEP:
			err = sep_parse("-D", val, a->rec_sep_buf, &a->rec_sep,
					&a->rec_sep_len);
			break;
		case KW_BATCH:
			err = krepctl_parse_u32(krepctl_produce_usage, "produce",
						"batch", val, &u);
			if (!err && (u < 1 || u > INT32_MAX))
				err = krepctl_usage_error(krepctl_produce_usage,
							  "produce: batch must be 1..2147483647");
			a->batch = u;
			break;
		case KW_TXN:
			a->txn = true;
			err = krepctl_parse_producer(krepctl_produce_usage,
						     "produce", val,
						     &a->producer_id,
						     &a->producer_epoch);
			break;
		case KW_TIMESTAMP:
			a->has_ts = true;
			err = krepctl_parse_s64(krepctl_produce_usage, "produce",
						"timestamp", val, &a->timestamp);
			break;
		default:
			eq = strchr(val, '=');
			if (!eq)
				err = krepctl_usage_error(krepctl_produce_usage,
							  "produce: header '%s' is not K=V",
							  val);
			else if (a->nheaders == KREP_PRODUCE_HEADERS_MAX)
				err = krepctl_usage_error(krepctl_produce_usage,
							  "produce: more than %d headers",
							  KREP_PRODUCE_HEADERS_MAX);
			else {
				/* key: "K=V" up to the '=', value after it */
				a->headers[a->nheaders].key = val;
				a->headers[a->nheaders++].value = eq + 1;
			}
		}
		if (err)
			return err < 0 ? err : -EINVAL;
	}
	if (!a->topic) {
		krepctl_usage_error(krepctl_produce_usage, "produce: missing topic");
		return -EINVAL;
	}
	return 0;
}

/* What is being sent to one partition. */
struct part_out {
	struct krep_batch_enc enc;
	bool used;		/* a record went there */
	uint64_t n;		/* records produced */
	uint64_t first, last;	/* their offsets */
	int32_t seq;		/* base sequence of the next batch */
};

struct producer {
	struct krepctl *ctl;
	const struct krep_produce_args *a;
	struct krep_header headers[KREP_PRODUCE_HEADERS_MAX];
	uint32_t nparts;	/* partitions of the topic (1 with 'partition') */
	struct part_out *parts;	/* by partition; [0] is 'partition N' */
	uint64_t n;		/* records produced, all partitions */
};

struct produce_reply {
	bool has_offset;
	uint64_t offset;
};

static struct nla_policy produce_policy[KREP_A_MAX + 1] = {
	[KREP_A_OFFSET]	= { .type = NLA_U64 },
	[KREP_A_HW]	= { .type = NLA_U64 },
};

static int produce_reply_get(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[KREP_A_MAX + 1];
	struct produce_reply *r = arg;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, KREP_A_MAX, produce_policy) ||
	    !tb[KREP_A_OFFSET]) {
		fprintf(stderr, "%s: malformed PRODUCE reply from the kernel\n",
			krep_prog);
		return -EPROTO;
	}
	r->has_offset = true;
	r->offset = nla_get_u64(tb[KREP_A_OFFSET]);
	return 0;
}

/* The partition number of parts[@i]. */
static uint32_t part_no(const struct producer *pr, uint32_t i)
{
	return pr->a->has_partition ? pr->a->partition : i;
}

/* Send the records gathered for parts[@i] as one batch. */
static int flush(struct producer *pr, uint32_t i)
{
	const struct krep_produce_args *a = pr->a;
	struct part_out *po = &pr->parts[i];
	struct produce_reply rep = { 0 };
	int32_t count = po->enc.count;
	const uint8_t *batch;
	struct nl_msg *msg;
	size_t len;
	int err;

	batch = krep_batch_enc_finish(&po->enc, &len);
	if (!batch)
		return 0;
	msg = krepctl_part_msg(pr->ctl->gl.family, KREP_CMD_PRODUCE, a->topic,
			       part_no(pr, i), nla_total_size(len) + 64);
	if (!msg || nla_put(msg, KREP_A_RECORDS, len, batch) ||
	    (a->has_acks && nla_put_u16(msg, KREP_A_ACKS, (uint16_t)a->acks)) ||
	    (a->has_timeout &&
	     nla_put_u32(msg, KREP_A_TIMEOUT_MS, a->timeout_ms))) {
		nlmsg_free(msg);
		fprintf(stderr, "%s: cannot build request: %s\n", krep_prog,
			strerror(ENOMEM));
		return -ENOMEM;
	}
	err = krepctl_request(pr->ctl, msg, produce_reply_get, &rep);
	nlmsg_free(msg);
	if (err)
		return err;
	if (!rep.has_offset) {
		fprintf(stderr, "%s: PRODUCE reply without an offset\n",
			krep_prog);
		return -EPROTO;
	}
	if (!po->n)
		po->first = rep.offset;
	po->last = rep.offset + count - 1;
	po->n += count;
	pr->n += count;
	if (a->txn)
		po->seq = (int32_t)(((uint32_t)po->seq + count) & INT32_MAX);
	krep_batch_enc_reset(&po->enc, a->txn ? po->seq : KREP_NO_SEQUENCE);
	return 0;
}

static int flush_all(struct producer *pr)
{
	uint32_t i;
	int err;

	for (i = 0; i < pr->nparts; i++) {
		err = flush(pr, i);
		if (err)
			return err;
	}
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_bytes(struct krep_bytes *b, const void *data, size_t len,
		      bool null_empty)
{
	b->data = data;
	b->len = null_empty && !len ? -1 : (int32_t)len;
}

/* The record of one input line (without its newline). */
static void line_record(const struct producer *pr, const char *line,
			size_t len, struct krep_record *r)
{
	const struct krep_produce_args *a = pr->a;
	const char *sep = NULL;

	memset(r, 0, sizeof(*r));
	r->timestamp = a->has_ts ? a->timestamp : now_ms();
	r->key.len = -1;
	if (a->key)
		set_bytes(&r->key, a->key, strlen(a->key), a->null_empty);
	if (a->key_sep)
		sep = memmem(line, len, a->key_sep, a->key_sep_len);
	if (sep) {
		set_bytes(&r->key, line, sep - line, a->null_empty);
		sep += a->key_sep_len;
		set_bytes(&r->value, sep, line + len - sep, a->null_empty);
	} else {
		set_bytes(&r->value, line, len, a->null_empty);
	}
	r->nheaders = a->nheaders;
	r->headers = pr->headers;
}

/* Which parts[] entry @r goes to. */
static uint32_t part_of(const struct producer *pr, const struct krep_record *r)
{
	if (pr->a->has_partition || r->key.len < 0)
		return 0;
	return krep_key_partition(r->key.data, r->key.len, pr->nparts);
}

/* Add one record, sending its batch first if it would grow too large. */
static int add(struct producer *pr, const struct krep_record *r)
{
	uint32_t i = part_of(pr, r);
	struct part_out *po = &pr->parts[i];
	int64_t size;
	int err;

	po->used = true;
	size = krep_batch_enc_size_with(&po->enc, r);
	if (size > NLA_PAYLOAD_MAX && po->enc.count) {
		err = flush(pr, i);
		if (err)
			return err;
		size = krep_batch_enc_size_with(&po->enc, r);
	}
	if (size < 0 || size > NLA_PAYLOAD_MAX) {
		krepctl_error(pr->ctl, KREP_KERR_MESSAGE_TOO_LARGE, -EMSGSIZE,
			      "record %" PRIu64 " needs a %" PRId64 "-byte batch, more than one netlink attribute holds (%d)",
			      pr->n + 1, size, NLA_PAYLOAD_MAX);
		return -EMSGSIZE;
	}
	err = krep_batch_enc_add(&po->enc, r);
	if (err) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(-err));
		return err;
	}
	if ((uint32_t)po->enc.count >= pr->a->batch)
		return flush(pr, i);
	return 0;
}

static void summary_one(const struct producer *pr, uint32_t i)
{
	const struct krep_produce_args *a = pr->a;
	const struct part_out *po = &pr->parts[i];
	struct json j;

	if (!pr->ctl->json) {
		printf("produced %" PRIu64 " record%s to %s-%u", po->n,
		       po->n == 1 ? "" : "s", a->topic, part_no(pr, i));
		if (po->n)
			printf(", offsets %" PRIu64 "..%" PRIu64, po->first,
			       po->last);
		putchar('\n');
		return;
	}
	json_init(&j, stdout);
	json_obj_begin(&j);
	json_key(&j, "topic");
	json_str(&j, a->topic);
	json_key(&j, "partition");
	json_u64(&j, part_no(pr, i));
	json_key(&j, "records");
	json_u64(&j, po->n);
	json_key(&j, "first_offset");
	if (po->n)
		json_u64(&j, po->first);
	else
		json_null(&j);
	json_key(&j, "last_offset");
	if (po->n)
		json_u64(&j, po->last);
	else
		json_null(&j);
	json_obj_end(&j);
	putchar('\n');
}

/* A line per partition written to; partition 0 (or N) when none was. */
static void summary(const struct producer *pr)
{
	uint32_t i;

	for (i = 0; i < pr->nparts; i++)
		if (pr->parts[i].n)
			summary_one(pr, i);
	if (!pr->n)
		summary_one(pr, 0);
}

/* After an error, what went through before it, on stderr. */
static void partial(const struct producer *pr)
{
	const struct part_out *po;
	uint32_t i;

	for (i = 0; i < pr->nparts; i++) {
		po = &pr->parts[i];
		if (po->n)
			fprintf(stderr,
				"%s: %" PRIu64 " records were produced to %s-%u before the error, offsets %" PRIu64 "..%" PRIu64 "\n",
				krep_prog, po->n, pr->a->topic, part_no(pr, i),
				po->first, po->last);
	}
}

/*
 * Read standard input: records end with a newline, or with -D's SEP.
 * A last record without its terminator counts when it is not empty.
 */
static int read_records(struct producer *pr)
{
	const struct krep_produce_args *a = pr->a;
	char *buf = NULL, *p, *end, *sep;
	size_t cap = 0, len = 0;
	struct krep_record r;
	ssize_t n;
	int err = 0;

	if (!a->rec_sep) {
		while (!err && (n = getline(&buf, &cap, stdin)) >= 0) {
			if (n && buf[n - 1] == '\n')
				n--;
			line_record(pr, buf, n, &r);
			err = add(pr, &r);
		}
		goto out;
	}
	/* a custom separator: the whole input, then split */
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			p = realloc(buf, cap);
			if (!p) {
				fprintf(stderr, "%s: %s\n", krep_prog,
					strerror(ENOMEM));
				err = -ENOMEM;
				goto out;
			}
			buf = p;
		}
		n = fread(buf + len, 1, cap - len, stdin);
		if (n <= 0)
			break;
		len += n;
	}
	p = buf;
	end = buf + len;
	while (!err && p < end) {
		sep = memmem(p, end - p, a->rec_sep, a->rec_sep_len);
		line_record(pr, p, (sep ? sep : end) - p, &r);
		err = add(pr, &r);
		p = sep ? sep + a->rec_sep_len : end;
	}
out:
	free(buf);
	if (!err && ferror(stdin)) {
		fprintf(stderr, "%s: reading standard input: %s\n", krep_prog,
			strerror(errno));
		err = -EIO;
	}
	return err;
}

int krepctl_produce_run(struct krepctl *ctl, int argc, char **argv)
{
	struct krep_produce_args a;
	struct producer pr = { .ctl = ctl, .a = &a, .nparts = 1 };
	uint32_t i;
	int err;

	err = krep_produce_parse(argc, argv, &a);
	if (err > 0) {
		krepctl_produce_usage(stdout);
		return KREP_EXIT_OK;
	}
	if (err)
		return KREP_EXIT_USAGE;
	ctl->json |= a.json;
	for (i = 0; i < a.nheaders; i++) {
		const char *kv = a.headers[i].key, *v = a.headers[i].value;

		pr.headers[i].key.data = (const uint8_t *)kv;
		pr.headers[i].key.len = v - 1 - kv;
		pr.headers[i].value.data = (const uint8_t *)v;
		pr.headers[i].value.len = strlen(v);
	}
	if (krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	if (!a.has_partition &&
	    krepctl_topic_partitions(ctl, a.topic, &pr.nparts))
		return KREP_EXIT_ERR;
	pr.parts = calloc(pr.nparts, sizeof(*pr.parts));
	if (!pr.parts) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return KREP_EXIT_ERR;
	}
	for (i = 0; i < pr.nparts; i++)
		krep_batch_enc_init(&pr.parts[i].enc, a.txn,
				    a.txn ? (int64_t)a.producer_id :
					    KREP_NO_PRODUCER_ID,
				    a.txn ? (int16_t)a.producer_epoch :
					    KREP_NO_PRODUCER_EPOCH,
				    a.txn ? 0 : KREP_NO_SEQUENCE);
	err = read_records(&pr);
	if (!err)
		err = flush_all(&pr);
	if (err)
		partial(&pr);
	else
		summary(&pr);
	for (i = 0; i < pr.nparts; i++)
		krep_batch_enc_free(&pr.parts[i].enc);
	free(pr.parts);
	return err ? KREP_EXIT_ERR : KREP_EXIT_OK;
}
