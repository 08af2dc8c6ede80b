// SPDX-License-Identifier: GPL-2.0
//
// kafkajs_client.js - KafkaJS against krep, for selftests/kafka.sh.
//
//   node kafkajs_client.js BOOTSTRAP TOPIC PARTITION N
//
// Produces N records with acks=all (-1) to TOPIC-PARTITION through
// BOOTSTRAP, then asks for the partition's offsets with the admin client
// (ListOffsets). Prints "produced N base B high H" and exits 0 when the
// high offset is the base plus N, 1 otherwise. KafkaJS comes from npm
// (scripts/deps.sh installs it under build/npm).
'use strict';

const path = require('path');
const { Kafka, logLevel } = require(path.join(__dirname, '..', 'build', 'npm',
	'node_modules', 'kafkajs'));

async function main() {
	const [bootstrap, topic, partStr, nStr] = process.argv.slice(2);
	const partition = Number(partStr), n = Number(nStr);
	const kafka = new Kafka({ clientId: 'krep-selftest', brokers: [bootstrap],
		logLevel: logLevel.ERROR, retry: { retries: 5 } });
	const admin = kafka.admin();
	await admin.connect();
	const before = await admin.fetchTopicOffsets(topic);
	const start = Number(before.find(o => o.partition === partition).high);
	const producer = kafka.producer({ allowAutoTopicCreation: false });
	await producer.connect();
	const messages = [];
	for (let i = 0; i < n; i++)
		messages.push({ key: 'j' + i, value: 'kafkajs-' + i, partition });
	const res = await producer.send({ topic, acks: -1, messages });
	await producer.disconnect();
	const after = await admin.fetchTopicOffsets(topic);
	await admin.disconnect();
	const base = Number(res[0].baseOffset);
	const high = Number(after.find(o => o.partition === partition).high);
	console.log(`produced ${n} base ${base} high ${high}`);
	process.exit(base === start && high === start + n ? 0 : 1);
}

main().catch(e => { console.error(e); process.exit(1); });
