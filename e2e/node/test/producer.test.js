'use strict';
// The 5.x producer against rocketstore serve: normal, FIFO, delay and
// transactional messages, checked in the store through the 4.x remoting
// admin command (the same topics serve both protocols).
const { test, before, after } = require('node:test');
const assert = require('node:assert');
const { Producer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { Server, quietLogger, eventually } = require('./harness');

let srv;
before(async () => {
  srv = await new Server({ config: [
    'messageDelayLevel: "300ms 600ms 1s 2s"',
    'transactionTimeOut: 300',
    'transactionCheckInterval: 200',
  ].join('\n') + '\n' }).start();
  srv.createTopic('NormalTopic');
  srv.createTopic('FifoTopic', { attrs: '+message.type=FIFO' });
  srv.createTopic('DelayTopic', { attrs: '+message.type=DELAY' });
  srv.createTopic('TxTopic', { attrs: '+message.type=TRANSACTION' });
});
after(async () => {
  await srv.stop();
  assert.deepStrictEqual(srv.warnings(), []);
});

function producer(topic, extra = {}) {
  return new Producer({ endpoints: srv.endpoints, namespace: '', topic, logger: quietLogger, ...extra });
}

// stored reads every queue of a topic through the remoting admin command.
function stored(topic) {
  const all = [];
  for (let q = 0; q < 4; q++) {
    for (const m of srv.admin('consumeMessage', '-t', topic, '-i', String(q), '-c', '100') || []) all.push(m);
  }
  return all;
}

// visible waits until n messages of topic can be read: an acknowledged
// send is durable at once but reaches its ConsumeQueue when the dispatcher
// gets to it, as in RocketMQ (a consumer polls until then too).
async function visible(topic, n) {
  await eventually(() => stored(topic).length >= n, 10000, `${n} messages of ${topic} visible`);
  return stored(topic);
}

test('normal messages: stored with tag, keys, message id and user properties', async () => {
  const p = producer('NormalTopic');
  await p.startup();
  try {
    const receipts = [];
    for (let i = 0; i < 5; i++) {
      receipts.push(await p.send({ topic: 'NormalTopic', tag: 'TagA', keys: [ `k${i}`, 'common' ],
        properties: new Map([ [ 'n', String(i) ] ]), body: Buffer.from(`hello ${i}`) }));
    }
    const msgs = await visible('NormalTopic', 5);
    assert.strictEqual(msgs.length, 5);
    for (const r of receipts) {
      const m = msgs.find(x => x.properties.UNIQ_KEY === r.messageId);
      assert.ok(m, `message ${r.messageId} stored`);
      assert.strictEqual(m.tags, 'TagA');
      assert.strictEqual(m.body, `hello ${m.properties.n}`);
      assert.strictEqual(m.keys, `k${m.properties.n} common`);
    }
  } finally {
    await p.shutdown();
  }
});

test('a topic that does not exist: TOPIC_NOT_FOUND', async () => {
  const p = producer('NormalTopic');
  await p.startup();
  try {
    await assert.rejects(p.send({ topic: 'NoSuchTopic', body: Buffer.from('x') }), e => {
      assert.match(String(e.message), /TOPIC_NOT_FOUND|40402|does not exist/);
      return true;
    });
  } finally {
    await p.shutdown();
  }
});

test('FIFO: a message group goes to one queue, in send order', async () => {
  const p = producer('FifoTopic');
  await p.startup();
  try {
    for (let i = 0; i < 6; i++) {
      for (const g of [ 'g1', 'g2' ]) {
        await p.send({ topic: 'FifoTopic', messageGroup: g, body: Buffer.from(`${g}-${i}`) });
      }
    }
    const msgs = await visible('FifoTopic', 12);
    for (const g of [ 'g1', 'g2' ]) {
      const mine = msgs.filter(m => m.properties.__SHARDINGKEY === g);
      assert.strictEqual(mine.length, 6);
      assert.strictEqual(new Set(mine.map(m => m.queueId)).size, 1, `group ${g} in one queue`);
      assert.deepStrictEqual(mine.sort((a, b) => a.queueOffset - b.queueOffset).map(m => m.body),
        [ 0, 1, 2, 3, 4, 5 ].map(i => `${g}-${i}`));
    }
  } finally {
    await p.shutdown();
  }
});

test('message types: a message of another type than the topic\'s message.type is refused', async () => {
  const p = producer('NormalTopic');
  await p.startup();
  try {
    // The client checks the route's accept_message_types before it sends
    // (the server's settings ask it to); the server refuses such a send
    // too, with MESSAGE_PROPERTY_CONFLICT_WITH_TYPE (proxy tests).
    await assert.rejects(p.send({ topic: 'NormalTopic', messageGroup: 'g', body: Buffer.from('x') }),
      /message type not match.*acceptMessageTypes=\[1\]/);
    await assert.rejects(p.send({ topic: 'FifoTopic', body: Buffer.from('x') }),
      /message type not match.*acceptMessageTypes=\[2\]/);
    assert.strictEqual(stored('NormalTopic').filter(m => m.body === 'x').length, 0);
  } finally {
    await p.shutdown();
  }
});

test('delay: held until the delivery time (a timer message)', async () => {
  const p = producer('DelayTopic');
  await p.startup();
  try {
    const sentAt = Date.now();
    await p.send({ topic: 'DelayTopic', delay: 800, body: Buffer.from('later') });
    assert.strictEqual(stored('DelayTopic').length, 0, 'not delivered at once');
    const [ m ] = await eventually(() => { const s = stored('DelayTopic'); return s.length ? s : null; }, 10000, 'delayed delivery');
    assert.strictEqual(m.body, 'later');
    assert.ok(m.storeTimestamp - sentAt >= 800, `delivered ${m.storeTimestamp - sentAt} ms after the send`);
  } finally {
    await p.shutdown();
  }
});

test('transactions: commit, rollback, and an open one resolved by the checker', async () => {
  const checked = [];
  const p = producer('TxTopic', { checker: { async check(mv) {
    checked.push(mv.messageId);
    return mv.properties.get('decision') === 'commit' ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
  } } });
  await p.startup();
  try {
    const commit = p.beginTransaction();
    await p.send({ topic: 'TxTopic', body: Buffer.from('committed') }, commit);
    await commit.commit();
    const rollback = p.beginTransaction();
    await p.send({ topic: 'TxTopic', body: Buffer.from('rolled back') }, rollback);
    await rollback.rollback();
    // Left open: the broker asks the producer through its telemetry stream.
    const open1 = p.beginTransaction();
    const r1 = await p.send({ topic: 'TxTopic', body: Buffer.from('checked commit'), properties: new Map([ [ 'decision', 'commit' ] ]) }, open1);
    const open2 = p.beginTransaction();
    await p.send({ topic: 'TxTopic', body: Buffer.from('checked rollback'), properties: new Map([ [ 'decision', 'rollback' ] ]) }, open2);
    await eventually(() => stored('TxTopic').length === 2 && checked.length >= 2, 15000, 'check-back');
    const bodies = stored('TxTopic').map(m => m.body).sort();
    assert.deepStrictEqual(bodies, [ 'checked commit', 'committed' ]);
    assert.ok(checked.includes(r1.messageId));
  } finally {
    await p.shutdown();
  }
});
