'use strict';
// Starts `rocketstore serve`, built from this repository, for the 5.x
// client tests: a fresh store directory, free ports for the remoting and
// gRPC endpoints, and the admin command to create topics and groups.
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const repo = path.resolve(__dirname, '..', '..', '..');
let binary;

// tempDirs are the directories this process made; they are removed when
// it exits (a default store preallocates 1.5 GB, and every test file is
// its own process).
const tempDirs = [];
process.on('exit', () => {
  for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(d);
  return d;
}

// build compiles the command once per test file (the Go build cache makes
// the later ones a link).
function build() {
  if (!binary) {
    const dir = tempDir('rocketstore-node-bin-');
    binary = path.join(dir, 'rocketstore');
    execFileSync('go', [ 'build', '-o', binary, './cmd/rocketstore' ], { cwd: repo, stdio: 'inherit' });
  }
  return binary;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// waitPort polls until the real server process accepts connections.
async function waitPort(port, proc, deadlineMs = 20000) {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (proc.exitCode !== null) throw new Error(`serve exited with ${proc.exitCode}`);
    const ok = await new Promise(resolve => {
      const c = net.connect(port, '127.0.0.1', () => { c.destroy(); resolve(true); });
      c.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise(r => setTimeout(r, 50));
  }
  throw new Error(`port ${port} not open after ${deadlineMs} ms`);
}

class Server {
  // opts.config: YAML text for --config (DIR in it is the server's
  // directory); opts.dir: reuse a store directory; opts.adminCreds:
  // [accessKey, secretKey] for the admin command.
  constructor(opts = {}) {
    this.opts = opts;
    this.dir = opts.dir || tempDir('rocketstore-node-');
    this.log = '';
  }

  async start() {
    const bin = build();
    this.namesrvPort = this.namesrvPort || await freePort();
    this.grpcPort = this.grpcPort || await freePort();
    const args = [ 'serve', '--dir', path.join(this.dir, 'store'), '--listen', `127.0.0.1:${this.namesrvPort}`,
      '--grpc-listen', `127.0.0.1:${this.grpcPort}`, '--log-level', 'warn' ];
    if (this.opts.config) {
      const cfg = path.join(this.dir, 'broker.yaml');
      fs.writeFileSync(cfg, this.opts.config.replaceAll('DIR', this.dir));
      args.push('--config', cfg);
    }
    this.proc = spawn(bin, args, { stdio: [ 'ignore', 'ignore', 'pipe' ] });
    this.proc.stderr.on('data', d => { this.log += d; });
    this.exited = new Promise(resolve => this.proc.once('exit', (code, signal) => resolve({ code, signal })));
    await waitPort(this.grpcPort, this.proc);
    await waitPort(this.namesrvPort, this.proc);
    return this;
  }

  get endpoints() { return `127.0.0.1:${this.grpcPort}`; }
  get namesrv() { return `127.0.0.1:${this.namesrvPort}`; }

  // admin runs `rocketstore admin ARGS -n namesrv` and returns its JSON.
  admin(...args) {
    const creds = this.opts.adminCreds ? [ '--accessKey', this.opts.adminCreds[0], '--secretKey', this.opts.adminCreds[1] ] : [];
    const out = execFileSync(build(), [ 'admin', ...args, '-n', this.namesrv, '--json', ...creds ], { encoding: 'utf8' });
    return out.trim() ? JSON.parse(out) : null;
  }

  createTopic(topic, { queues = 4, perm = 6, attrs } = {}) {
    const args = [ 'updateTopic', '-t', topic, '-c', 'DefaultCluster', '-r', String(queues), '-w', String(queues), '-p', String(perm) ];
    if (attrs) args.push('-a', attrs);
    return this.admin(...args);
  }

  async stop(signal = 'SIGTERM') {
    if (!this.proc || this.proc.exitCode !== null) return;
    this.proc.kill(signal);
    const r = await this.exited;
    if (signal === 'SIGTERM' && r.code !== 0) throw new Error(`serve exited with ${r.code}: ${this.log}`);
  }

  // warnings are the WARN and ERROR lines the server logged.
  warnings() {
    return this.log.split('\n').filter(l => /level=(WARN|ERROR)/.test(l));
  }
}

// quietLogger keeps the client's info logs out of the test output.
const quietLogger = {
  info() {}, debug() {}, warn() {},
  error(...a) { if (process.env.RMQ_DEBUG) console.error(...a); },
};

// eventually polls fn until it returns a truthy value (for effects of a
// real external process: a server-side timer, a redelivery).
async function eventually(fn, deadlineMs = 10000, what = 'condition') {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what} not reached in ${deadlineMs} ms`);
    await new Promise(r => setTimeout(r, 100));
  }
}

module.exports = { Server, build, quietLogger, eventually, repo };
