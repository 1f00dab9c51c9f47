// The peers idem-async-bench measures idem against, on its private redis-server, in its run:
// @node-idempotency/core with its Redis adapter (node-redis), and AWS Powertools for Lambda
// (TypeScript) idempotency with its cache persistence layer over @redis/client. One Node process
// each; C concurrent callers are C async loops, each awaiting one call after another (what an
// Express or Lambda-style service does), over the library's one client (which pipelines).
// Prints one JSON line per measurement: {lib, concurrency, kind: fresh|duplicates, rps}.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const PORT = Number(process.env.BENCH_REDIS_PORT);
const CALLS = Number(process.env.BENCH_CALLS || 20000);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY || '16,64').split(',').map(Number);
const RUN = process.env.BENCH_RUN || String(process.pid);
const ONLY = (process.env.BENCH_ONLY || '').split(',').filter(Boolean);
if (!PORT) throw new Error('run me through idem-async-bench');
const url = `redis://127.0.0.1:${PORT}`;

async function drive(concurrency, keys, call) {
  let next = 0;
  const loop = async () => {
    for (let i = next++; i < keys.length; i = next++) await call(keys[i]);
  };
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, loop));
  return keys.length / (Number(process.hrtime.bigint() - t0) / 1e9);
}

const report = (lib, concurrency, kind, rps) => console.log(JSON.stringify({ lib, concurrency, kind, rps }));
const keysFor = (lib, c) => Array.from({ length: CALLS }, (_, i) => `${lib}-${RUN}-${c}-${i}`);

async function nodeIdempotency() {
  const { Idempotency } = require('@node-idempotency/core');
  const { RedisStorageAdapter } = require('@node-idempotency/storage-adapter-redis');
  const storage = new RedisStorageAdapter({ url });
  await storage.connect();
  const idem = new Idempotency(storage, { cacheTTLMS: 3600000 });
  const req = (k) => ({ headers: { 'idempotency-key': k }, method: 'POST', path: '/orders', body: { k } });
  for (const c of CONCURRENCY) {
    const keys = keysFor('ni', c);
    report('@node-idempotency/core', c, 'fresh', await drive(c, keys, async (k) => {
      const r = req(k);
      if ((await idem.onRequest(r)) !== undefined) throw new Error('a fresh key replayed');
      await idem.onResponse(r, { additional: { statusCode: 201 }, body: { ok: k } });
    }));
    report('@node-idempotency/core', c, 'duplicates', await drive(c, keys, async (k) => {
      if ((await idem.onRequest(req(k))) === undefined) throw new Error('a duplicate ran again');
    }));
  }
  await storage.disconnect();
}

async function powertools() {
  process.env.AWS_LAMBDA_FUNCTION_NAME = 'idem-async-bench';
  const { makeIdempotent, IdempotencyConfig } = await import('@aws-lambda-powertools/idempotency');
  const { CachePersistenceLayer } = await import('@aws-lambda-powertools/idempotency/cache');
  const { createClient } = await import('@redis/client');
  const client = createClient({ url });
  await client.connect();
  let runs = 0;
  const fn = makeIdempotent(async (event) => { ++runs; return { ok: event.id }; }, {
    persistenceStore: new CachePersistenceLayer({ client }),
    config: new IdempotencyConfig({ eventKeyJmesPath: 'id', expiresAfterSeconds: 3600 }),
  });
  // called as a Lambda handler is: with a context (without one it warns on every call)
  const context = { functionName: 'idem-async-bench', awsRequestId: 'bench', getRemainingTimeInMillis: () => 60000 };
  for (const c of CONCURRENCY) {
    const keys = keysFor('pt', c);
    const before = runs;
    report('@aws-lambda-powertools/idempotency', c, 'fresh', await drive(c, keys, (k) => fn({ id: k }, context)));
    report('@aws-lambda-powertools/idempotency', c, 'duplicates', await drive(c, keys, (k) => fn({ id: k }, context)));
    if (runs - before !== keys.length) throw new Error(`powertools ran ${runs - before} handlers for ${keys.length} keys`);
  }
  await client.quit();
}

if (!ONLY.length || ONLY.includes('node-idempotency')) await nodeIdempotency();
if (!ONLY.length || ONLY.includes('powertools')) await powertools();
process.exit(0);
