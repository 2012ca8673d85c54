'use strict';
// ACL (the 5.x request signature against plain_acl.yml) and TLS on the
// gRPC port, with the status codes a client tells apart.
const { test } = require('node:test');
const assert = require('node:assert');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { Producer, NotFoundException, UnauthorizedException } = require('rocketmq-client-nodejs');
const { Server, quietLogger } = require('./harness');

const aclYAML = `accounts:
  - accessKey: adminAK01
    secretKey: adminSecret01
    admin: true
  - accessKey: writerAK1
    secretKey: writerSecret1
    defaultTopicPerm: DENY
    topicPerms:
      - Allowed=PUB
`;

async function sendAs(srv, topic, creds) {
  const p = new Producer({ endpoints: srv.endpoints, namespace: '', logger: quietLogger,
    sessionCredentials: creds && { accessKey: creds[0], accessSecret: creds[1] } });
  await p.startup();
  try {
    return await p.send({ topic, body: Buffer.from('acl') });
  } finally {
    await p.shutdown();
  }
}

test('ACL: signed by an account with PUB passes; no permission, a wrong secret or no signature is UNAUTHORIZED', async () => {
  const srv = new Server({ config: 'aclEnable: true\naclFile: DIR/plain_acl.yml\n', adminCreds: [ 'adminAK01', 'adminSecret01' ] });
  fs.writeFileSync(path.join(srv.dir, 'plain_acl.yml'), aclYAML);
  await srv.start();
  try {
    srv.createTopic('Allowed');
    srv.createTopic('Denied');
    const r = await sendAs(srv, 'Allowed', [ 'writerAK1', 'writerSecret1' ]);
    assert.ok(r.messageId);
    for (const [ topic, creds ] of [ [ 'Denied', [ 'writerAK1', 'writerSecret1' ] ], [ 'Allowed', [ 'writerAK1', 'wrong' ] ], [ 'Allowed', null ] ]) {
      await assert.rejects(sendAs(srv, topic, creds), e => e instanceof UnauthorizedException || /UNAUTHORIZED|40100/.test(String(e.message) + String(e.cause)),
        `${topic} as ${creds}`);
    }
  } finally {
    await srv.stop();
  }
});

test('status codes: a missing topic is NotFound; a read-only topic is not written', async () => {
  const srv = await new Server().start();
  try {
    srv.createTopic('ReadOnly', { perm: 4 });
    srv.createTopic('Writable');
    const p = new Producer({ endpoints: srv.endpoints, namespace: '', logger: quietLogger, topic: 'Writable', maxAttempts: 1 });
    await p.startup();
    try {
      await assert.rejects(p.send({ topic: 'Missing', body: Buffer.from('x') }), NotFoundException);
      // The route offers READ queues only, so the client refuses to send
      // (RocketMQ's proxy answers the same route; a send that reaches the
      // server anyway is FORBIDDEN, see the proxy package's tests).
      await assert.rejects(p.send({ topic: 'ReadOnly', body: Buffer.from('x') }));
      assert.deepStrictEqual(srv.admin('consumeMessage', '-t', 'ReadOnly', '-i', '0') || [], []);
    } finally {
      await p.shutdown();
    }
  } finally {
    await srv.stop();
  }
});

test('TLS: permissive serves TLS and plaintext clients; enforcing refuses plaintext', async () => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'rocketstore-tls-'));
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync('openssl', [ 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
    '-subj', '/CN=rocketstore-test', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert ], { stdio: 'ignore' });
  const client = (srv, mode) => JSON.parse(execFileSync(process.execPath, [ path.join(__dirname, 'tls-client.js'), srv.endpoints, 'TlsTopic', mode ],
    { env: { ...process.env, GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: cert }, encoding: 'utf8' }).trim());
  for (const mode of [ 'permissive', 'enforcing' ]) {
    const srv = new Server({ config: `tlsServerMode: ${mode}\ntlsServerCertPath: ${cert}\ntlsServerKeyPath: ${key}\n` });
    await srv.start();
    try {
      if (mode === 'permissive') srv.createTopic('TlsTopic');
      const overTLS = client(srv, 'tls');
      if (mode === 'permissive') {
        assert.ok(overTLS.ok, `TLS client: ${overTLS.error}`);
        const plain = client(srv, 'plain');
        assert.ok(plain.ok, `plaintext client in permissive mode: ${plain.error}`);
      } else {
        // No topic here (the remoting admin client speaks plaintext): the
        // TLS client reaches the server and is told the topic is missing.
        assert.match(overTLS.error, /TOPIC_NOT_FOUND|does not exist|40402/);
        const plain = client(srv, 'plain');
        assert.ok(!plain.ok, 'a plaintext client was served in enforcing mode');
        assert.doesNotMatch(plain.error, /TOPIC_NOT_FOUND|does not exist/);
      }
    } finally {
      await srv.stop();
    }
  }
});
