/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepctl: command table and what every subcommand shares.
 *
 * A command is { name, run, usage, summary }. run() gets argv with
 * argv[0] = its own name and returns the exit status: KREP_EXIT_OK,
 * KREP_EXIT_ERR (the kernel or the system said no) or KREP_EXIT_USAGE
 * (bad command line, detected before anything is sent). Commands that
 * have subcommands dispatch through krepctl_dispatch() with their own
 * table, so "krepctl topic create ..." later works like "broker set".
 */
#ifndef KREP_AGENT_KREPCTL_H
#define KREP_AGENT_KREPCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ep.h"
#include "genl.h"
#include "tconfig.h"

#define KREP_AGENT_VERSION	"0.1"

enum {
	KREP_EXIT_OK	= 0,
	KREP_EXIT_ERR	= 1,
	KREP_EXIT_USAGE	= 2,
};

struct krepctl {
	const char *netns;	/* --netns NAME, or NULL */
	bool json;		/* --json */
	struct krep_genl gl;	/* opened by krepctl_connect() */
};

struct krepctl_cmd {
	const char *name;
	int (*run)(struct krepctl *ctl, int argc, char **argv);
	void (*usage)(FILE *f);
	const char *summary;
};

/* cmd.c */
int krepctl_dispatch(struct krepctl *ctl, const char *parent,
		     const struct krepctl_cmd *cmds, const char *dflt,
		     void (*usage)(FILE *f), int argc, char **argv);
void krepctl_list_cmds(FILE *f, const struct krepctl_cmd *cmds);
bool krepctl_is_help(const char *arg);
/*
 * A usage error: "krepctl: <message>" and "Try 'krepctl COMMAND --help'."
 * on stderr, and when krepctl_json_errors (--json anywhere on the
 * command line) {"error":null,"code":null,"errno":"EINVAL","message",
 * "usage"} on stdout. Returns KREP_EXIT_USAGE.
 */
extern bool krepctl_json_errors;
int krepctl_usage_error(void (*usage)(FILE *f), const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "; did you mean 'X'?" for @word among @cands (NULL-ended) into @buf, or "". */
const char *krepctl_did_you_mean(const char *word, const char *const *cands,
				 char *buf, size_t size);
/* Forget the command path usage errors name (help re-dispatches). */
void krepctl_cmd_path_reset(void);
int krepctl_connect(struct krepctl *ctl);

/*
 * Send @req like krep_genl_request(); a kernel error is printed by
 * krepctl_kernel_error(). Returns 0 or a negative errno.
 */
int krepctl_request(struct krepctl *ctl, struct nl_msg *req,
		    krep_genl_reply_fn fn, void *arg);
/*
 * Print the kernel's error of the last request (ctl->gl.st) to stderr,
 *	krepctl: <strerror>: <extack message> [KAFKA_ERROR_NAME]
 * and with --json also to stdout as
 *	{"error":"KAFKA_ERROR_NAME"|null,"code":N|null,"errno":"EXXX",
 *	 "message":"..."[,"attribute":"path"]}
 */
void krepctl_kernel_error(struct krepctl *ctl, struct nl_msg *req);
struct krep_snap;
/*
 * A snapshot of this broker (krep_snap_take()) for @topic, or every topic
 * when NULL, with a kernel error printed as above. Returns 0 or a
 * negative errno.
 */
int krepctl_snap(struct krepctl *ctl, const char *topic, struct krep_snap *s);
/*
 * An error found here rather than by the kernel, printed the same way;
 * @kerr is Kafka's code, or KREP_NO_KERR.
 */
#define KREP_NO_KERR	INT32_MIN
void krepctl_error(struct krepctl *ctl, int32_t kerr, int err,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* An error and what to do about it: two lines, or JSON with "hint". */
void krepctl_hint_error(struct krepctl *ctl, int err, const char *msg,
			const char *hint);
/* A request for @cmd on partition @partition of @topic. */
struct nl_msg *krepctl_part_msg(int family, uint8_t cmd, const char *topic,
				uint32_t partition, size_t payload);
/* Parse "partition N" style numbers for @cmd; prints a usage error. */
int krepctl_parse_u32(void (*usage_fn)(FILE *f), const char *cmd,
		      const char *kw, const char *val, uint32_t *v);
int krepctl_parse_s64(void (*usage_fn)(FILE *f), const char *cmd,
		      const char *kw, const char *val, int64_t *v);
/* "PID:EPOCH": producer id 0..2^63-1, epoch 0..65535. */
int krepctl_parse_producer(void (*usage_fn)(FILE *f), const char *cmd,
			   const char *val, uint64_t *pid, uint16_t *epoch);

/* broker.c */
void krepctl_broker_usage(FILE *f);
int krepctl_broker_run(struct krepctl *ctl, int argc, char **argv);
int krep_broker_reply_print(struct nl_msg *reply, bool json, FILE *f);

/* topic.c */
void krepctl_topic_usage(FILE *f);
int krepctl_topic_run(struct krepctl *ctl, int argc, char **argv);
/* The partition count of @topic (TOPIC_GET); a kernel error is printed. */
int krepctl_topic_partitions(struct krepctl *ctl, const char *topic,
			     uint32_t *n);

/* "topic create" (topic.c; test_parse.c uses these). */

struct krep_topic_create {
	const char *name;
	uint32_t partitions;
	uint32_t replication_factor;
	bool json;
	struct krep_tconfig cfg;
};

int krep_topic_create_parse(int argc, char **argv,
			    struct krep_topic_create *tc);
struct nl_msg *krep_topic_create_msg(int family,
				     const struct krep_topic_create *tc);
/* Print a PARTITION_GET reply as "topic describe" does (for the tests). */
int krep_partition_reply_print(struct nl_msg *reply, bool json, FILE *f);

/*
 * topic_ctl.c: topic create/delete through krepd --controller. Takes
 * --controller and --socket PATH out of @argv: 1 when they were given
 * (@sock set), 0 when not, -EINVAL after a usage error.
 */
int krepctl_controller_opts(int *argc, char **argv, const char **sock,
			    void (*usage_fn)(FILE *f), const char *cmd);
/*
 * Send @request to krepd at @sock, hand each object line of its reply to
 * @each, print its error if it refused; an exit status (KREP_EXIT_*).
 */
int krepctl_krepd_call(const char *sock, const char *request, int timeout_ms,
		       void (*each)(const char *line, void *arg), void *arg);
/*
 * The value of "key" in one of krepd's compact JSON lines, as text (a
 * string without its quotes, an array without its brackets; krepd's own
 * strings need no escapes). NULL when absent.
 */
const char *krepctl_krepd_field(const char *line, const char *key, char *buf,
				size_t size);
/* topic describe's filters (Kafka's) */
enum {
	KREP_DESCRIBE_UNDER_REPLICATED	= 1 << 0,
	KREP_DESCRIBE_UNDER_MIN_ISR	= 1 << 1,
	KREP_DESCRIBE_AT_MIN_ISR	= 1 << 2,
	KREP_DESCRIBE_UNAVAILABLE	= 1 << 3,
};

/*
 * cluster_describe.c: topic describe --controller, every partition of the
 * cluster (of @topic) as krepd sees it, with @filters (under-replicated,
 * unavailable); an exit status.
 */
int krepctl_describe_controller(struct krepctl *ctl, const char *sock,
				const char *topic, unsigned int filters);
/* Send @request to krepd at @sock and print its answer; an exit status. */
int krepctl_topic_controller(struct krepctl *ctl, const char *sock,
			     const char *request);

/* elect_cmd.c: krepd --controller's control socket */
void krepctl_elect_usage(FILE *f);
int krepctl_elect_run(struct krepctl *ctl, int argc, char **argv);

/* produce.c */
void krepctl_produce_usage(FILE *f);
int krepctl_produce_run(struct krepctl *ctl, int argc, char **argv);

#define KREP_PRODUCE_HEADERS_MAX	64

#define KREP_SEP_MAX	64	/* bytes of a -K or -D separator */

struct krep_produce_args {
	const char *topic;
	bool has_partition;	/* else by key: Kafka's murmur2 partitioner */
	uint32_t partition;
	bool has_acks;
	int16_t acks;
	bool has_timeout;
	uint32_t timeout_ms;
	const char *key;	/* for every record, or NULL */
	const char *key_sep;	/* -K SEP (escapes decoded), or NULL */
	size_t key_sep_len;
	const char *rec_sep;	/* -D SEP (escapes decoded), or NULL: '\n' */
	size_t rec_sep_len;
	bool null_empty;	/* -Z: an empty key or value is null */
	char key_sep_buf[KREP_SEP_MAX + 1], rec_sep_buf[KREP_SEP_MAX + 1];
	uint32_t batch;		/* records per PRODUCE */
	bool txn;
	uint64_t producer_id;
	uint16_t producer_epoch;
	bool has_ts;
	int64_t timestamp;
	bool json;
	size_t nheaders;
	/* "K=V" as given: key is the argument (up to '='), value after '=' */
	struct { const char *key, *value; } headers[KREP_PRODUCE_HEADERS_MAX];
};

int krep_produce_parse(int argc, char **argv, struct krep_produce_args *a);

/* consume.c */
void krepctl_consume_usage(FILE *f);
int krepctl_consume_run(struct krepctl *ctl, int argc, char **argv);

enum krep_start {
	KREP_START_BEGINNING,
	KREP_START_END,
	KREP_START_OFFSET,	/* absolute */
	KREP_START_FROM_END,	/* HW - n */
	KREP_START_TIME,	/* first offset at or after a time */
};

enum krep_format {
	KREP_FORMAT_VALUE,
	KREP_FORMAT_FULL,
	KREP_FORMAT_STRING,	/* -f FMT: kcat's format string */
};

struct krep_consume_args {
	const char *topic;
	bool has_partition;	/* else every partition of the topic */
	uint32_t partition;
	const char *fmt;	/* KREP_FORMAT_STRING */
	enum krep_start start;
	int64_t start_arg;	/* offset, n or time */
	bool has_count;
	uint64_t count;
	bool follow;
	uint8_t isolation;	/* enum krep_isolation */
	enum krep_format format;
	uint32_t max_bytes;
	bool has_wait;
	uint32_t wait_ms;
	bool json;
};

int krep_consume_parse(int argc, char **argv, struct krep_consume_args *a);

/* offsets.c: offsets, delete-records, txn */
/* LIST_OFFSETS for @ts (ms, KREP_TS_EARLIEST or KREP_TS_LATEST). */
int krepctl_list_offset(struct krepctl *ctl, const char *topic,
			uint32_t partition, int64_t ts, uint8_t isolation,
			uint64_t *offset, bool *has_ts, int64_t *found_ts);
void krepctl_offsets_usage(FILE *f);
int krepctl_offsets_run(struct krepctl *ctl, int argc, char **argv);
void krepctl_delete_records_usage(FILE *f);
int krepctl_delete_records_run(struct krepctl *ctl, int argc, char **argv);
void krepctl_txn_usage(FILE *f);
int krepctl_txn_run(struct krepctl *ctl, int argc, char **argv);

struct krep_offsets_args {
	const char *topic;
	bool has_partition;	/* else every partition */
	uint32_t partition;
	int64_t timestamp;	/* KREP_TS_EARLIEST, KREP_TS_LATEST or ms */
	uint8_t isolation;	/* KREP_READ_* */
	bool has_lag;		/* a consumer's lag at lag_pos too */
	uint64_t lag_pos;
	bool json;
};

int krep_offsets_parse(int argc, char **argv, struct krep_offsets_args *a);

struct krep_delete_records_args {
	const char *topic;
	uint32_t partition;
	uint64_t before;
	bool json;
};

int krep_delete_records_parse(int argc, char **argv,
			      struct krep_delete_records_args *a);

struct krep_txn_args {
	const char *topic;
	uint32_t partition;
	uint64_t producer_id;
	uint16_t producer_epoch;
	uint8_t op;		/* enum krep_txn_op */
	bool json;
};

int krep_txn_parse(int argc, char **argv, struct krep_txn_args *a);

/* A parsed "broker set" command line (broker.c; test_parse.c uses these). */
struct krep_broker_set {
	bool has_id;
	uint32_t id;
	const char *cluster;	/* NULL: leave unchanged */
	bool has_listen;
	struct krep_ep listen;
	bool has_kafka_listen;
	struct krep_ep kafka_listen;	/* AF_UNSPEC: none (remove it) */
	const char *kafka_advertised;	/* NULL: leave, "": clear */
	bool has_secret;
	uint8_t secret[64];		/* len 0: clear it */
	size_t secret_len;
	bool has_peers;
	struct krep_peers peers;
	const char *log_dir;		/* NULL: leave, "none": no directory */
	int log_dir_fd;			/* what set_run() opened it as */
};

int krep_broker_set_parse(int argc, char **argv, struct krep_broker_set *set);
struct nl_msg *krep_broker_set_msg(int family, const struct krep_broker_set *set);
void krep_broker_set_free(struct krep_broker_set *set);

#endif
