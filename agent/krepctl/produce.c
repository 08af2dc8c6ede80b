// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl produce: lines from stdin become records, sent in RecordBatch v2
 * batches with KREP_CMD_PRODUCE, like `kcat -P`.
 *
 * A batch is sent when it holds 'batch N' records, when the next record
 * would take it past what one netlink attribute carries (KREP_A_RECORDS
 * is one attribute: at most 65531 bytes), and at the end of the input.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/krep.h>

#include "json.h"
#include "krepctl.h"
#include "record.h"

/* The largest payload a netlink attribute carries (nla_len is 16 bits). */
#define NLA_PAYLOAD_MAX		(0xffff - NLA_HDRLEN)

void krepctl_produce_usage(FILE *f)
{
	fputs("Usage: krepctl produce TOPIC [partition N] [acks 0|1|all] [timeout MS]\n"
	      "                       [key K] [-K SEP] [batch N] [txn PID:EPOCH]\n"
	      "                       [timestamp MS] [header K=V]...\n"
	      "\n"
	      "Produce one record per line of standard input (the value is the line\n"
	      "without its newline) to partition N (default 0) of TOPIC, which this\n"
	      "broker must lead. Needs CAP_NET_ADMIN.\n"
	      "\n"
	      "  partition N     the partition (default 0)\n"
	      "  acks 0|1|all    wait for the leader (1) or the ISR (all, default)\n"
	      "  timeout MS      how long acks=all may wait (default and max 30000)\n"
	      "  key K           the key of every record (default: null)\n"
	      "  -K SEP          the part of a line before the first SEP is its key,\n"
	      "                  the rest its value; lines without SEP keep 'key K'\n"
	      "  batch N         records per PRODUCE request (default 1); a batch\n"
	      "                  is sent when full, before it would pass 65531\n"
	      "                  bytes, and at the end of the input\n"
	      "  txn PID:EPOCH   transactional batches of producer PID, epoch EPOCH\n"
	      "                  (open the transaction with 'krepctl txn' first)\n"
	      "  timestamp MS    the timestamp of every record (default: now, in ms)\n"
	      "  header K=V      a header of every record; repeatable\n"
	      "\n"
	      "At the end it prints\n"
	      "  produced N records to TOPIC-P, offsets A..B\n"
	      "or with --json {\"topic\":TOPIC,\"partition\":P,\"records\":N,\n"
	      "\"first_offset\":A,\"last_offset\":B} (offsets null when N is 0).\n",
	      f);
}

static bool is_json_flag(const char *s)
{
	return !strcmp(s, "-j") || !strcmp(s, "--json");
}

/*
 * Parse the command line (argv[0] is "produce"). Returns 0, 1 if help was
 * asked for, or -errno after printing a usage error.
 */
int krep_produce_parse(int argc, char **argv, struct krep_produce_args *a)
{
	static const char *const kws[] = {
		"partition", "acks", "timeout", "key", "-K", "batch", "txn",
		"timestamp", "header", NULL
	};
	bool seen[9] = { false };
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
		if (!a->topic) {
			a->topic = kw;
			continue;
		}
		for (k = 0; kws[k]; k++)
			if (!strcmp(kw, kws[k]))
				break;
		if (!kws[k]) {
			krepctl_usage_error(krepctl_produce_usage,
					    "produce: unknown keyword '%s'", kw);
			return -EINVAL;
		}
		if (i + 1 >= argc) {
			krepctl_usage_error(krepctl_produce_usage,
					    "produce: '%s' needs a value", kw);
			return -EINVAL;
		}
		if (seen[k] && strcmp(kw, "header")) {
			krepctl_usage_error(krepctl_produce_usage,
					    "produce: '%s' given twice", kw);
			return -EINVAL;
		}
		seen[k] = true;
		val = argv[++i];
		if (!strcmp(kw, "partition")) {
			err = krepctl_parse_u32(krepctl_produce_usage, "produce",
						kw, val, &a->partition);
		} else if (!strcmp(kw, "acks")) {
			a->has_acks = true;
			if (!strcmp(val, "all") || !strcmp(val, "-1"))
				a->acks = -1;
			else if (!strcmp(val, "0") || !strcmp(val, "1"))
				a->acks = val[0] - '0';
			else
				err = krepctl_usage_error(krepctl_produce_usage,
							  "produce: acks must be 0, 1 or all, not '%s'",
							  val);
		} else if (!strcmp(kw, "timeout")) {
			a->has_timeout = true;
			err = krepctl_parse_u32(krepctl_produce_usage, "produce",
						kw, val, &a->timeout_ms);
		} else if (!strcmp(kw, "key")) {
			a->key = val;
		} else if (!strcmp(kw, "-K")) {
			if (!*val)
				err = krepctl_usage_error(krepctl_produce_usage,
							  "produce: -K needs a non-empty separator");
			a->key_sep = val;
		} else if (!strcmp(kw, "batch")) {
			err = krepctl_parse_u32(krepctl_produce_usage, "produce",
						kw, val, &u);
			if (!err && (u < 1 || u > INT32_MAX))
				err = krepctl_usage_error(krepctl_produce_usage,
							  "produce: batch must be 1..2147483647");
			a->batch = u;
		} else if (!strcmp(kw, "txn")) {
			a->txn = true;
			err = krepctl_parse_producer(krepctl_produce_usage,
						     "produce", val,
						     &a->producer_id,
						     &a->producer_epoch);
		} else if (!strcmp(kw, "timestamp")) {
			a->has_ts = true;
			err = krepctl_parse_s64(krepctl_produce_usage, "produce",
						kw, val, &a->timestamp);
		} else {
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

struct producer {
	struct krepctl *ctl;
	const struct krep_produce_args *a;
	struct krep_header headers[KREP_PRODUCE_HEADERS_MAX];
	struct krep_batch_enc enc;
	uint64_t n;		/* records produced */
	uint64_t first, last;	/* their offsets */
	int32_t seq;		/* base sequence of the next batch */
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

/* Send the records gathered so far as one batch. */
static int flush(struct producer *pr)
{
	const struct krep_produce_args *a = pr->a;
	struct produce_reply rep = { 0 };
	int32_t count = pr->enc.count;
	const uint8_t *batch;
	struct nl_msg *msg;
	size_t len;
	int err;

	batch = krep_batch_enc_finish(&pr->enc, &len);
	if (!batch)
		return 0;
	msg = krepctl_part_msg(pr->ctl->gl.family, KREP_CMD_PRODUCE, a->topic,
			       a->partition, nla_total_size(len) + 64);
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
	if (!pr->n)
		pr->first = rep.offset;
	pr->last = rep.offset + count - 1;
	pr->n += count;
	if (a->txn)
		pr->seq = (int32_t)(((uint32_t)pr->seq + count) & INT32_MAX);
	krep_batch_enc_reset(&pr->enc, a->txn ? pr->seq : KREP_NO_SEQUENCE);
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
	if (a->key) {
		r->key.data = (const uint8_t *)a->key;
		r->key.len = strlen(a->key);
	}
	if (a->key_sep)
		sep = memmem(line, len, a->key_sep, strlen(a->key_sep));
	if (sep) {
		r->key.data = (const uint8_t *)line;
		r->key.len = sep - line;
		sep += strlen(a->key_sep);
		r->value.data = (const uint8_t *)sep;
		r->value.len = line + len - sep;
	} else {
		r->value.data = (const uint8_t *)line;
		r->value.len = len;
	}
	r->nheaders = a->nheaders;
	r->headers = pr->headers;
}

/* Add one record, sending the batch first if it would grow too large. */
static int add(struct producer *pr, const struct krep_record *r)
{
	int64_t size = krep_batch_enc_size_with(&pr->enc, r);
	int err;

	if (size > NLA_PAYLOAD_MAX && pr->enc.count) {
		err = flush(pr);
		if (err)
			return err;
		size = krep_batch_enc_size_with(&pr->enc, r);
	}
	if (size < 0 || size > NLA_PAYLOAD_MAX) {
		krepctl_error(pr->ctl, KREP_KERR_MESSAGE_TOO_LARGE, -EMSGSIZE,
			      "record %" PRIu64 " needs a %" PRId64 "-byte batch, more than one netlink attribute holds (%d)",
			      pr->n + 1, size, NLA_PAYLOAD_MAX);
		return -EMSGSIZE;
	}
	err = krep_batch_enc_add(&pr->enc, r);
	if (err) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(-err));
		return err;
	}
	if ((uint32_t)pr->enc.count >= pr->a->batch)
		return flush(pr);
	return 0;
}

static void summary(const struct producer *pr)
{
	const struct krep_produce_args *a = pr->a;
	struct json j;

	if (!pr->ctl->json) {
		printf("produced %" PRIu64 " record%s to %s-%u", pr->n,
		       pr->n == 1 ? "" : "s", a->topic, a->partition);
		if (pr->n)
			printf(", offsets %" PRIu64 "..%" PRIu64, pr->first,
			       pr->last);
		putchar('\n');
		return;
	}
	json_init(&j, stdout);
	json_obj_begin(&j);
	json_key(&j, "topic");
	json_str(&j, a->topic);
	json_key(&j, "partition");
	json_u64(&j, a->partition);
	json_key(&j, "records");
	json_u64(&j, pr->n);
	json_key(&j, "first_offset");
	if (pr->n)
		json_u64(&j, pr->first);
	else
		json_null(&j);
	json_key(&j, "last_offset");
	if (pr->n)
		json_u64(&j, pr->last);
	else
		json_null(&j);
	json_obj_end(&j);
	putchar('\n');
}

int krepctl_produce_run(struct krepctl *ctl, int argc, char **argv)
{
	struct krep_produce_args a;
	struct producer pr = { .ctl = ctl, .a = &a };
	struct krep_record r;
	char *line = NULL;
	size_t cap = 0, i;
	ssize_t len;
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
	krep_batch_enc_init(&pr.enc, a.txn,
			    a.txn ? (int64_t)a.producer_id : KREP_NO_PRODUCER_ID,
			    a.txn ? (int16_t)a.producer_epoch :
				    KREP_NO_PRODUCER_EPOCH,
			    a.txn ? 0 : KREP_NO_SEQUENCE);
	err = 0;
	while (!err && (len = getline(&line, &cap, stdin)) >= 0) {
		if (len && line[len - 1] == '\n')
			len--;
		line_record(&pr, line, len, &r);
		err = add(&pr, &r);
	}
	if (!err && ferror(stdin)) {
		fprintf(stderr, "%s: reading standard input: %s\n", krep_prog,
			strerror(errno));
		err = -EIO;
	}
	if (!err)
		err = flush(&pr);
	free(line);
	krep_batch_enc_free(&pr.enc);
	if (err) {
		if (pr.n)
			fprintf(stderr,
				"%s: %" PRIu64 " records were produced before the error, offsets %" PRIu64 "..%" PRIu64 "\n",
				krep_prog, pr.n, pr.first, pr.last);
		return KREP_EXIT_ERR;
	}
	summary(&pr);
	return KREP_EXIT_OK;
}
