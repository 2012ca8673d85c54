'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert');
const { Producer, NotFoundException } = require('rocketmq-client-nodejs');
const { Server, quietLogger } = require('./harness');

let srv;
before(async () => {
  srv = await new Server().start();
  srv.createTopic('NormalTopic');
});
after(async () => { await srv.stop(); });

function producer(topic, extra = {}) {
  return new Producer({ endpoints: srv.endpoints, namespace: '', topic, logger: quietLogger, ...extra });
}

// consumed reads a queue's messages through the remoting admin command.
function stored(topic) {
  const all = [];
  for (let q = 0; q < 4; q++) {
    const r = srv.admin('consumeMessage', '-t', topic, '-i', String(q), '-c', '100');
    for (const m of (r && r.messages) || r || []) all.push(m);
  }
  return all;
}

test('normal messages: sent, stored with tag, keys and properties', async () => {
  const p = producer('NormalTopic');
  await p.startup();
  try {
    const receipts = [];
    for (let i = 0; i < 5; i++) {
      receipts.push(await p.send({ topic: 'NormalTopic', tag: 'TagA', keys: [ `k${i}` ], properties: new Map([ [ 'n', String(i) ] ]),
        body: Buffer.from(`hello ${i}`) }));
    }
    assert.strictEqual(new Set(receipts.map(r => r.messageId)).size, 5);
    const msgs = stored('NormalTopic');
    assert.strictEqual(msgs.length, 5, JSON.stringify(msgs).slice(0, 500));
  } finally {
    await p.shutdown();
  }
});

test('a topic that does not exist: NotFoundException (TOPIC_NOT_FOUND)', async () => {
  const p = producer('NormalTopic');
  await p.startup();
  try {
    await assert.rejects(p.send({ topic: 'NoSuchTopic', body: Buffer.from('x') }), e => {
      assert.ok(e instanceof NotFoundException || /TOPIC_NOT_FOUND|40402/.test(String(e.message) + e.code), String(e));
      return true;
    });
  } finally {
    await p.shutdown();
  }
});
