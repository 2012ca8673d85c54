'use strict';
// Sends one message (over TLS with "tls") and prints the outcome; run by
// security.test.js with GRPC_DEFAULT_SSL_ROOTS_FILE_PATH naming the
// server's self-signed certificate (grpc-js reads it once per process).
const { Producer } = require('rocketmq-client-nodejs');
const { quietLogger } = require('./harness');

(async () => {
  const [ endpoints, topic, ssl ] = process.argv.slice(2);
  const p = new Producer({ endpoints, namespace: '', topic, sslEnabled: ssl === 'tls', logger: quietLogger, requestTimeout: 2000 });
  try {
    await p.startup();
    const r = await p.send({ topic, body: Buffer.from('over tls') });
    console.log(JSON.stringify({ ok: true, messageId: r.messageId }));
  } catch (e) {
    let msg = String(e && e.message);
    for (let c = e && e.cause; c; c = c.cause) msg += ' <- ' + String(c.message);
    console.log(JSON.stringify({ ok: false, error: msg }));
  } finally {
    await p.shutdown().catch(() => {});
  }
  process.exit(0);
})();
