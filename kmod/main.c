// SPDX-License-Identifier: GPL-2.0
/*
 * krep: Kafka's partition replication protocol in the kernel.
 *
 * Module init and exit only; each concern lives in its own file.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/module.h>
#include <net/net_namespace.h>

#include "krep.h"
#include "broker.h"
#include "disklog.h"
#include "logdir.h"
#include "net.h"
#include "netlink.h"
#include "param.h"
#include "record.h"
#include "topic.h"

atomic_t krep_obj_count[__KREP_OBJ_MAX];
bool krep_exiting_flag;

static const char *const krep_obj_names[__KREP_OBJ_MAX] = {
	[KREP_OBJ_BROKER_CFG] = "broker config",
	[KREP_OBJ_TOPIC_SPEC] = "topic spec",
	[KREP_OBJ_TOPIC] = "topic",
	[KREP_OBJ_PARTITION] = "partition",
	[KREP_OBJ_SEGMENT] = "log segment",
	[KREP_OBJ_CONN] = "connection",
	[KREP_OBJ_DELAYED_FETCH] = "parked fetch",
};

static void krep_check_leaks(void)
{
	int i, n;

	for (i = 0; i < __KREP_OBJ_MAX; i++) {
		n = atomic_read(&krep_obj_count[i]);
		if (n)
			pr_err("leak: %d %s object(s) left at exit\n", n,
			       krep_obj_names[i]);
	}
}

/* insmod log_dir=PATH, for the initial namespace's broker; cfg_lock held */
static int __init set_log_dir(struct krep_net *kn)
{
	struct krep_broker_cfg *cfg = krep_broker_cfg_locked(kn);
	const char *path = krep_param_log_dir();
	const char *why = NULL;
	struct path root;
	int err;

	if (!path)
		return 0;
	err = krep_logdir_open_path(path, &root);
	if (err) {
		pr_err("bad log_dir '%s': cannot open it as a directory (%d)\n",
		       path, err);
		return err;
	}
	err = krep_logdir_set(kn, &root, cfg->broker_id, cfg->cluster_id,
			      &why);
	if (err)
		pr_err("bad log_dir '%s': %s\n", path, why);
	return err;
}

static int __init krep_init(void)
{
	struct krep_broker_cfg *cfg;
	LIST_HEAD(specs);
	struct krep_net *kn;
	int err;

	err = krep_param_parse(&cfg, &specs);
	if (err)
		return err;

	err = krep_crc_init();
	if (err)
		goto err_cfg;
	err = krep_disk_init();
	if (err)
		goto err_crc;
	err = krep_net_module_init();
	if (err)
		goto err_disk;
	err = krep_broker_init();
	if (err)
		goto err_net;

	kn = krep_net(&init_net);
	mutex_lock(&kn->cfg_lock);
	krep_broker_cfg_replace(kn, cfg);
	err = set_log_dir(kn);
	mutex_unlock(&kn->cfg_lock);
	if (err)
		goto err_broker;
	krep_broker_set_topic_specs(kn, &specs);
	err = krep_topic_create_specs(kn);
	if (err)
		goto err_broker;

	err = krep_netlink_init();
	if (err)
		goto err_broker;
	krep_net_apply(kn);

	pr_info("loaded, protocol version %d\n", KREP_GENL_VERSION);
	return 0;

err_broker:
	krep_broker_exit();
	krep_net_module_exit();
	krep_disk_exit();
	krep_crc_exit();
	krep_check_leaks();
	return err;
err_net:
	krep_net_module_exit();
err_disk:
	krep_disk_exit();
err_crc:
	krep_crc_exit();
err_cfg:
	krep_topic_spec_free_list(&specs);
	krep_broker_cfg_free(cfg);
	return err;
}

static void __exit krep_exit(void)
{
	/* parked produces and fetches return before the family goes */
	krep_broker_shutdown();
	krep_netlink_exit();
	krep_broker_exit();
	krep_net_module_exit();
	krep_disk_exit();
	krep_crc_exit();
	krep_check_leaks();
	pr_info("unloaded\n");
}

module_init(krep_init);
module_exit(krep_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("krep developers");
MODULE_DESCRIPTION("Kafka partition replication protocol: logs, watermarks, ISR");
MODULE_VERSION("0.1");
MODULE_SOFTDEP("pre: crc32c");
