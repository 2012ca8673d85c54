'use strict';
// SIGKILL of serve with unacked messages in flight: after a restart on
// the same store, every message not acked is delivered again, none is
// lost, and the acked ones are not delivered again.
const { test } = require('node:test');
const assert = require('node:assert');
const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { Server, quietLogger } = require('./harness');

const N = 10;

async function consumer(srv) {
  const c = new SimpleConsumer({ endpoints: srv.endpoints, namespace: '', consumerGroup: 'KillGroup', logger: quietLogger,
    subscriptions: new Map([ [ 'KillTopic', '*' ] ]), awaitDuration: 1500 });
  await c.startup();
  return c;
}

test('SIGKILL with messages in flight: none lost, acked ones not redelivered', async () => {
  const srv = await new Server().start();
  srv.createTopic('KillTopic');
  const p = new Producer({ endpoints: srv.endpoints, namespace: '', logger: quietLogger });
  await p.startup();
  const ids = [];
  for (let i = 0; i < N; i++) ids.push((await p.send({ topic: 'KillTopic', body: Buffer.from(`k${i}`) })).messageId);
  await p.shutdown();
  const c1 = await consumer(srv);
  const got = [];
  const end = Date.now() + 10000;
  while (got.length < N && Date.now() < end) got.push(...await c1.receive(16, 2000));
  assert.strictEqual(got.length, N);
  const acked = new Set();
  for (const m of got.slice(0, N / 2)) {
    await c1.ack(m);
    acked.add(m.messageId);
  }
  await srv.stop('SIGKILL');
  await c1.shutdown().catch(() => {});

  await srv.start(); // same directory and ports
  try {
    const c2 = await consumer(srv).catch(e => { throw new Error(e.message + ' cause: ' + (e.cause && e.cause.message) + ' log: ' + srv.log); });
    try {
      const again = new Map();
      const end2 = Date.now() + 15000;
      while (again.size < N / 2 && Date.now() < end2) {
        for (const m of await c2.receive(16, 5000)) {
          again.set(m.messageId, m);
          await c2.ack(m);
        }
      }
      for (const id of again.keys()) assert.ok(!acked.has(id), `acked message ${id} delivered again`);
      const all = new Set([ ...acked, ...again.keys() ]);
      assert.deepStrictEqual([ ...all ].sort(), [ ...ids ].sort(), 'every message acked before the kill or delivered after it');
    } finally {
      await c2.shutdown();
    }
  } finally {
    await srv.stop();
  }
});
