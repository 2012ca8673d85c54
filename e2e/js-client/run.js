'use strict';
const httpclient = require('urllib');
const { Producer, Consumer, Message } = require('ali-ons');
const ns = process.argv[2] || '127.0.0.1:19876';
const N = 20;
const common = { httpclient, accessKeyId: 'ak', accessKeySecret: 'sk', nameSrv: ns };
(async () => {
  const producer = new Producer(Object.assign({ producerGroup: 'JsPG' }, common));
  await producer.ready();
  for (let i = 0; i < N; i++) {
    const msg = new Message('JsTopic', i % 2 ? 'TagA' : 'TagB', 'js body ' + i);
    const r = await producer.send(msg);
    if (r.sendStatus !== 'SEND_OK') throw new Error('send ' + i + ' ' + JSON.stringify(r));
  }
  console.log('sent', N);
  const consumer = new Consumer(Object.assign({ consumerGroup: 'JsCG', consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET', isBroadcast: false }, common));
  let got = 0, tagA = 0;
  const done = new Promise(resolve => {
    consumer.subscribe('JsTopic', 'TagA || TagB', async msg => {
      got++;
      if (msg.tags === 'TagA') tagA++;
      if (got >= N) resolve();
    });
  });
  consumer.on('error', e => console.error('consumer error', e.message));
  const t = setTimeout(() => { console.log('TIMEOUT received', got, 'of', N); process.exit(1); }, 60000);
  await done;
  clearTimeout(t);
  console.log('received', got, 'tagA', tagA);
  await consumer.close();
  await producer.close();
  process.exit(got === N && tagA === N / 2 ? 0 : 1);
})().catch(e => { console.error('FAIL', e); process.exit(1); });
