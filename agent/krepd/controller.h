/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepd --controller: the cluster's controller (docs/design.md §1-2).
 *
 * It reaches every broker of the configuration through a session
 * (session.h), claims it (BROKER_SET KREP_A_CONTROLLER: epoch, a random
 * owner id, a lease renewed every lease/3), and every poll-ms reads each
 * broker (BROKER_GET, TOPIC_GET, PARTITION_GET) to keep its view of every
 * partition: AR, leader, leader and partition epochs, ISR, ELR. From that
 * it fences and unfences brokers, elects leaders (elect.h), commits or
 * turns down the leaders' ALTER_ISR requests (events, and
 * KREP_A_PENDING_ISR in case an event was lost), writes every decision to
 * its state file (state.h) before telling the replicas with
 * LEADER_AND_ISR, and re-sends it to any replica that is behind. Once
 * every preferred-election-interval-ms, and when krepctl elect --preferred
 * asks over the control socket (ctlsock.h), leadership goes back to the
 * preferred replica where it is live and in the ISR.
 *
 * Fencing: a broker is fenced when the controller's requests to it have
 * failed for longer than session-timeout-ms, or when every other
 * reachable, unfenced broker that has it as a peer has seen its
 * connection to it not up for longer than that. It is unfenced once
 * requests succeed again and another broker sees it up (or no other one
 * can tell). A broker whose KREP_A_INCARNATION changed lost its logs: it
 * leaves every ISR and ELR first. Brokers are fenced on peer reports one
 * at a time, the one leading the fewest partitions first (then the lowest
 * id), and a broker stops counting as a witness once fenced: so a broker
 * cut off from the others is fenced, not the others; and of two brokers
 * that lost only each other (which looks the same from both sides), the
 * one that leads more stays.
 *
 * ALTER_ISR: committed by elect.h's rules, except that a shrink asked by a
 * leader that no other broker sees up waits (unanswered, so the leader
 * asks again) until it is seen up or is fenced: a leader cut off from its
 * followers must not shrink the ISR to itself just before it is fenced,
 * or the partition would go offline instead of failing over (view.c).
 *
 * One controller per cluster: a claim on a broker while another owner's
 * lease runs fails with EBUSY, and krepd then exits 1 ("broker N is held
 * by controller OWNER (epoch E): another controller is active"). The
 * controller epoch is one more than the highest of the state file's and
 * the brokers' claims. SIGTERM and SIGINT release the claims (lease 0) and
 * write the state; SIGUSR1 logs the view, one line per partition.
 */
#ifndef KREP_AGENT_CONTROLLER_H
#define KREP_AGENT_CONTROLLER_H

#include <stdbool.h>

#include "cluster.h"

/*
 * Run the controller of @cfg (finished) until a stop signal. With
 * @foreground the log goes to stdout/stderr; otherwise krepd becomes a
 * daemon once it holds its claims and logs to syslog. With @metrics
 * (krepd --metrics, opened), its endpoint is served from the controller's
 * poll loops, active or standby, and carries the controller's figures
 * (krep_metrics_controller()). Returns the exit status: 0 after a stop
 * signal, 1 on an error.
 */
struct krep_metrics;
int krep_controller_run(struct krep_cluster *cfg, bool foreground,
			struct krep_metrics *metrics);

#endif
