/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepd --controller --etcd: several controllers, one active, elected in
 * etcd (docs/design.md, "Controller high availability").
 *
 * Every krepd holds an etcd lease of ceil(lease-ms / 1000) seconds (at
 * least 2), renewed every third of it. A standby reads P/controller every
 * poll-ms; when it is absent, it campaigns with one transaction:
 *
 *   compare  P/controller create_revision == 0        (nobody holds it)
 *            P/controller_epoch mod_revision == R     (the epoch it read)
 *   success  put P/controller {"version":1,"owner":HEX,"epoch":E+1,
 *                              "name":NAME,"socket":PATH} with its lease
 *            put P/controller_epoch "E+1"
 *
 * The winner is active until its lease is gone: it knows its lease runs
 * until the moment it sent its last successful keepalive plus the TTL
 * etcd answered; past that moment (etcd unreachable, or the process was
 * stopped) it steps down before doing anything else, as it does when a
 * keepalive says the lease is gone or a write's compare on P/controller's
 * create_revision fails. etcd deletes the key of an expired lease, and a
 * standby takes over within the lease plus one poll.
 *
 * A campaign whose answer is lost is read back (etcd.h); if that fails
 * too, the next round does: a standby that finds its own owner id and
 * lease in P/controller won and takes office; its owner id under another
 * lease of its own is revoked, and it campaigns again.
 */
#ifndef KREP_AGENT_HA_H
#define KREP_AGENT_HA_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "etcd.h"
#include "etcd_store.h"

/* --etcd-timeout-ms: one request on one endpoint, at most half the lease */
#define KREP_HA_TIMEOUT_MIN_MS	10
#define KREP_HA_TIMEOUT_MAX_MS	60000

struct krep_ha_opts {
	char endpoints[512];		/* --etcd URL[,URL...]; "" without */
	char prefix[128];		/* --etcd-prefix (/krep/default) */
	char name[64];			/* --name (HOST:PID) */
	char cacert[256], cert[256], key[256];
	char user[64];
	char password_file[256];
	uint32_t timeout_ms;		/* --etcd-timeout-ms; 0: krep_ha_timeout_ms() */
};

struct krep_ha;

/* Open the etcd client. NULL with the reason logged. */
struct krep_ha *krep_ha_open(const struct krep_ha_opts *o, uint32_t lease_ms,
			     const char *socket);
void krep_ha_close(struct krep_ha *ha);

/*
 * One standby round (call every poll-ms): keep the lease, read
 * P/controller, campaign when nobody holds it. Returns 1 when this krepd
 * won (krep_ha_epoch() is its controller epoch), 0 when it stays standby
 * (also when etcd could not be reached: logged once), -1 on an error that
 * retrying cannot fix.
 */
int krep_ha_round(struct krep_ha *ha, uint64_t owner);

/*
 * While active: renew the lease when it is due. 0 while the lease surely
 * runs; -ESTALE when it is gone or its end has passed (logged): step down.
 */
int krep_ha_tick(struct krep_ha *ha);
/* Active and the lease surely runs now. */
bool krep_ha_valid(struct krep_ha *ha);
/* Step down (a new election follows); with @resign, revoke the lease. */
void krep_ha_step_down(struct krep_ha *ha, bool resign);

uint32_t krep_ha_epoch(const struct krep_ha *ha);
struct krep_estore *krep_ha_store(struct krep_ha *ha);
/*
 * Write @st to etcd, fenced by the election. 0; -ESTALE (lost the
 * election: step down); other -errno (etcd unreachable: logged once,
 * "no decision goes out until it is written").
 */
int krep_ha_save(struct krep_ha *ha, const struct krep_state *st);

/* What this krepd knows, for the control socket and krepctl. */
struct krep_ha_info {
	bool active;			/* this krepd */
	const char *name;		/* this krepd's --name */
	const char *endpoint;		/* the etcd endpoint used last */
	bool known;			/* an active controller is known: */
	char active_name[64];		/* ... its name */
	uint64_t active_owner;
	uint32_t active_epoch;
};

void krep_ha_info(struct krep_ha *ha, struct krep_ha_info *info);

/*
 * The ids of the brokers registered in etcd (P/brokers/ids/ID, by the
 * krepd beside each broker: etcd_register.h), at most @max. 0 or -EIO
 * (logged once).
 */
int krep_ha_registered(struct krep_ha *ha, uint32_t *ids, size_t max,
		       size_t *n);

/*
 * For etcd_register.c: an etcd client with @o's endpoints, TLS, user and
 * timeout.
 */
struct krep_etcd *krep_ha_etcd_open(const struct krep_ha_opts *o,
				    uint32_t lease_ms);
/*
 * How long one etcd request may take on one endpoint: --etcd-timeout-ms,
 * else a quarter of @lease_ms within 100..1000 ms.
 */
uint32_t krep_ha_timeout_ms(const struct krep_ha_opts *o, uint32_t lease_ms);
/* The etcd lease of @lease_ms: whole seconds, at least 2. */
int64_t krep_ha_ttl_s(uint32_t lease_ms);

#endif
