// SPDX-License-Identifier: GPL-2.0
//
// kafkajs_client.js - KafkaJS against krep, for selftests/kafka.sh.
//
//   node kafkajs_client.js BOOTSTRAP TOPIC PARTITION N
//   node kafkajs_client.js --group BOOTSTRAP TOPIC
//
// Produces N records with acks=all (-1) to TOPIC-PARTITION through
// BOOTSTRAP, then asks for the partition's offsets with the admin client
// (ListOffsets). Prints "produced N base B high H" and exits 0 when the
// high offset is the base plus N, 1 otherwise. KafkaJS comes from npm
// (scripts/deps.sh installs it under build/npm).
//
// With --group, a consumer of TOPIC in a consumer group, which needs a
// group coordinator that krep does not have: it must stop with an error
// that says so, not wait. Prints "crashed: NAME: MESSAGE (cause ...)" and
// how many times KafkaJS was told the coordinator is not available, and
// exits 0 when the error names the coordinator and the brokers said so
// (FindCoordinator's COORDINATOR_NOT_AVAILABLE, which KafkaJS retries
// before it gives up), 1 otherwise.
'use strict';

const path = require('path');
const { Kafka, logLevel } = require(path.join(__dirname, '..', 'build', 'npm',
	'node_modules', 'kafkajs'));

// the error and its causes, one line
function chain(e) {
	const parts = [];
	for (let c = e; c; c = c.cause || c.originalError)
		parts.push(`${c.name}: ${c.message}${c.type ? ' [' + c.type + ']' : ''}`);
	return parts.join(' (cause ') + ')'.repeat(parts.length - 1);
}

async function group(bootstrap, topic) {
	let told = 0;
	const logCreator = () => ({ log }) => {
		if (/coordinator not available/i.test(log.message))
			told++;
	};
	const kafka = new Kafka({ clientId: 'krep-selftest', brokers: [bootstrap],
		logLevel: logLevel.DEBUG, logCreator,
		retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 400,
			 restartOnFailure: async () => false } });
	const consumer = kafka.consumer({ groupId: 'krep-selftest-group' });
	const crashed = new Promise(resolve =>
		consumer.on(consumer.events.CRASH, ev => resolve(ev.payload.error)));
	await consumer.connect();
	await consumer.subscribe({ topic, fromBeginning: true });
	let err = null;
	try {
		await consumer.run({ eachMessage: async () => {} });
		err = await crashed;
	} catch (e) {
		err = e;
	}
	await consumer.disconnect().catch(() => {});
	const line = chain(err);
	console.log(`crashed: ${line}; told COORDINATOR_NOT_AVAILABLE ${told} times`);
	process.exit(/coordinator/i.test(line) && told > 0 ? 0 : 1);
}

async function main() {
	if (process.argv[2] === '--group')
		return group(process.argv[3], process.argv[4]);
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
