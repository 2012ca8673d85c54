'use strict';
// SimpleConsumer and PushConsumer on the store's pop consumption:
// receive/ack, invisible-time expiry and redelivery,
// ChangeInvisibleDuration, tag and SQL92 filters, the DLQ after the
// group's max attempts.
const { test, before, after } = require('node:test');
const assert = require('node:assert');
const { Producer, SimpleConsumer, PushConsumer, ConsumeResult, FilterExpression } = require('rocketmq-client-nodejs');
const { FilterType } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { Server, quietLogger, eventually } = require('./harness');

let srv, producer;
before(async () => {
  srv = await new Server().start();
  for (const t of [ 'SimpleTopic', 'ExpiryTopic', 'ChangeTopic', 'FilterTopic', 'DlqTopic', 'PushTopic' ]) srv.createTopic(t);
  srv.admin('updateSubGroup', '-g', 'DlqGroup', '-c', 'DefaultCluster', '-r', '1');
  producer = new Producer({ endpoints: srv.endpoints, namespace: '', logger: quietLogger });
  await producer.startup();
});
after(async () => {
  await producer.shutdown();
  await srv.stop();
  assert.deepStrictEqual(srv.warnings(), []);
});

async function simple(group, topic, filter = '*', awaitDuration = 1500) {
  const c = new SimpleConsumer({ endpoints: srv.endpoints, namespace: '', consumerGroup: group, logger: quietLogger,
    subscriptions: new Map([ [ topic, filter ] ]), awaitDuration });
  await c.startup();
  return c;
}

// receiveAll receives until n messages arrived or the deadline passes.
async function receiveAll(c, n, invisibleMs, deadlineMs = 10000) {
  const got = [];
  const end = Date.now() + deadlineMs;
  while (got.length < n && Date.now() < end) got.push(...await c.receive(16, invisibleMs));
  return got;
}

test('SimpleConsumer: receive and ack; the message as sent; acked messages are not delivered again', async () => {
  const sent = [];
  for (let i = 0; i < 4; i++) {
    sent.push(await producer.send({ topic: 'SimpleTopic', tag: 'T', keys: [ `key${i}` ], properties: new Map([ [ 'i', String(i) ] ]),
      body: Buffer.from(`simple ${i}`) }));
  }
  const c = await simple('SimpleGroup', 'SimpleTopic');
  try {
    const got = await receiveAll(c, 4, 1000);
    assert.strictEqual(got.length, 4);
    for (const m of got) {
      const i = Number(m.properties.get('i'));
      assert.strictEqual(m.messageId, sent[i].messageId);
      assert.strictEqual(m.tag, 'T');
      assert.deepStrictEqual(m.keys, [ `key${i}` ]);
      assert.strictEqual(m.body.toString(), `simple ${i}`);
      assert.strictEqual(m.deliveryAttempt, 1);
      await c.ack(m);
    }
    // Past the invisible time nothing comes back.
    await new Promise(r => setTimeout(r, 1200));
    assert.deepStrictEqual(await c.receive(16, 1000), []);
  } finally {
    await c.shutdown();
  }
});

test('invisible time: a message not acked is delivered again, attempt 2; a stale handle cannot ack', async () => {
  const r = await producer.send({ topic: 'ExpiryTopic', body: Buffer.from('expire') });
  const c = await simple('ExpiryGroup', 'ExpiryTopic', '*', 3000);
  try {
    const [ first ] = await receiveAll(c, 1, 1000);
    assert.strictEqual(first.messageId, r.messageId);
    const t0 = Date.now();
    const [ again ] = await receiveAll(c, 1, 1000);
    assert.strictEqual(again.messageId, r.messageId);
    assert.strictEqual(again.deliveryAttempt, 2);
    assert.ok(Date.now() - t0 >= 500, 'not redelivered before its invisible time ended');
    await assert.rejects(c.ack(first), /INVALID_RECEIPT_HANDLE|40013|receipt/i);
    await c.ack(again);
  } finally {
    await c.shutdown();
  }
});

test('ChangeInvisibleDuration: shortens the invisible time; the new handle acks', async () => {
  await producer.send({ topic: 'ChangeTopic', body: Buffer.from('change') });
  const c = await simple('ChangeGroup', 'ChangeTopic', '*', 3000);
  try {
    const [ m ] = await receiveAll(c, 1, 30000);
    await c.changeInvisibleDuration(m, 1000);
    const [ again ] = await receiveAll(c, 1, 30000, 6000);
    assert.ok(again, 'redelivered after the shortened invisible time');
    assert.strictEqual(again.messageId, m.messageId);
    await c.ack(again);
  } finally {
    await c.shutdown();
  }
});

test('filters: a tag expression and an SQL92 expression select on the server', async () => {
  for (let i = 0; i < 6; i++) {
    await producer.send({ topic: 'FilterTopic', tag: i % 2 ? 'Odd' : 'Even', properties: new Map([ [ 'n', String(i) ] ]),
      body: Buffer.from(`f${i}`) });
  }
  const tags = await simple('TagGroup', 'FilterTopic', 'Odd || Nothing');
  const sql = await simple('SqlGroup', 'FilterTopic', new FilterExpression('n >= 4', FilterType.SQL));
  try {
    const odd = await receiveAll(tags, 3, 5000);
    assert.deepStrictEqual(odd.map(m => m.body.toString()).sort(), [ 'f1', 'f3', 'f5' ]);
    const big = await receiveAll(sql, 2, 5000);
    assert.deepStrictEqual(big.map(m => m.body.toString()).sort(), [ 'f4', 'f5' ]);
    for (const m of odd) await tags.ack(m);
    for (const m of big) await sql.ack(m);
    assert.deepStrictEqual(await tags.receive(16, 1000), []);
  } finally {
    await tags.shutdown();
    await sql.shutdown();
  }
});

test('DLQ: after the group\'s max attempts (retryMaxTimes 1: 2 attempts) the message is in %DLQ%group', async () => {
  const r = await producer.send({ topic: 'DlqTopic', body: Buffer.from('poison') });
  const c = await simple('DlqGroup', 'DlqTopic', '*', 3000);
  try {
    const first = await receiveAll(c, 1, 1000);
    const second = await receiveAll(c, 1, 1000);
    assert.deepStrictEqual([ first[0].deliveryAttempt, second[0].deliveryAttempt ], [ 1, 2 ]);
    const dlq = await eventually(() => {
      let q;
      try {
        q = srv.admin('consumeMessage', '-t', '%DLQ%DlqGroup', '-i', '0');
      } catch {
        return null; // the DLQ topic is created with its first message
      }
      return q && q.length ? q : null;
    }, 10000, 'the DLQ copy');
    assert.strictEqual(dlq[0].body, 'poison');
    assert.strictEqual(dlq[0].properties.UNIQ_KEY, r.messageId);
    assert.deepStrictEqual(await c.receive(16, 1000), [], 'not delivered after the DLQ');
  } finally {
    await c.shutdown();
  }
});

test('PushConsumer: every message consumed; a failed one is delivered again', async () => {
  const N = 6;
  for (let i = 0; i < N; i++) await producer.send({ topic: 'PushTopic', body: Buffer.from(`push ${i}`) });
  const seen = new Map();
  let failedOnce = false;
  const c = new PushConsumer({ endpoints: srv.endpoints, namespace: '', consumerGroup: 'PushGroup', logger: quietLogger,
    subscriptions: new Map([ [ 'PushTopic', '*' ] ]), longPollingTimeout: 1000,
    messageListener: { async consume(m) {
      const b = m.body.toString();
      seen.set(b, (seen.get(b) || 0) + 1);
      if (b === 'push 0' && !failedOnce) {
        failedOnce = true;
        return ConsumeResult.FAILURE;
      }
      return ConsumeResult.SUCCESS;
    } } });
  await c.startup();
  try {
    await eventually(() => seen.size === N && seen.get('push 0') >= 2, 20000, 'push consumption');
  } finally {
    await c.shutdown();
  }
});
