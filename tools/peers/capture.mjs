// Captures how other idempotency libraries lay their records out in Redis, and what each library
// does when it meets each record again. Run through tools/peers/capture.sh, which installs the
// pinned packages (package.json beside this file) into a temporary directory, copies this file
// there, starts a private redis-server and sets PEERS_REDIS_PORT and PEERS_OUTDIR.
//
// Every profile's records are read back raw first (TYPE, GET/HGETALL/SMEMBERS, PTTL, DUMP and the
// server's TIME in one Lua call, so the four agree), then probed: the captured keys are put back
// exactly (RESTORE ... REPLACE with the captured PTTL, other keys of the scene deleted) and the
// library is called again with the same key and payload.
//
// Profiles whose library cannot run here (Python, Ruby, Java) are written with the same commands
// the library sends, the values made by the same serializer where it is available (Python's json,
// Ruby's Oj), and their next call decided by reading the library's source; they say so.

import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { createClient, RESP_TYPES } from '@redis/client';

const require = createRequire(import.meta.url);
const PORT = Number(process.env.PEERS_REDIS_PORT);
const OUTDIR = process.env.PEERS_OUTDIR;
const ONLY = (process.env.PEERS_ONLY || '').split(',').filter(Boolean);
if (!PORT || !OUTDIR) throw new Error('run me through tools/peers/capture.sh');
const REDIS_URL = `redis://127.0.0.1:${PORT}`;

const MB = 1 << 20;
const BIG = 'a'.repeat(MB);
const MARKER = '@@ELIDED@@';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const deferred = () => {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
};
const log = (...a) => console.log('[capture]', ...a);

function pkgVersion(name, from = process.cwd()) {
  return JSON.parse(fs.readFileSync(path.join(from, 'node_modules', name, 'package.json'), 'utf8')).version;
}

// ---------------------------------------------------------------------------------------------
// The observer: raw reads, restores, key listing. Bulk strings come back as Buffers.
// ---------------------------------------------------------------------------------------------
const raw = createClient({ url: REDIS_URL });
raw.on('error', (e) => console.error('observer client error', e));
await raw.connect();
const obs = raw.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
const SERVER_VERSION = (await raw.info('server')).match(/redis_version:(\S+)/)[1];

const SNAP_LUA = `
local t = redis.call('TYPE', KEYS[1])['ok']
local v = false
if t == 'string' then v = redis.call('GET', KEYS[1])
elseif t == 'hash' then v = redis.call('HGETALL', KEYS[1])
elseif t == 'set' then v = redis.call('SMEMBERS', KEYS[1]) end
local d = false
if t ~= 'none' then d = redis.call('DUMP', KEYS[1]) end
local p = redis.call('PTTL', KEYS[1])
local tm = redis.call('TIME')
return {t, v, p, tm[1], tm[2], d}`;

const isUtf8 = (buf) => Buffer.from(buf.toString('utf8'), 'utf8').equals(buf);

async function snap(key) {
  const [t, v, pttl, sec, usec, dump] = await obs.eval(SNAP_LUA, { keys: [key] });
  const type = t.toString();
  const s = {
    key: Buffer.isBuffer(key) ? key : Buffer.from(key),
    type,
    pttl: Number(pttl),
    capturedAtMs: Number(sec.toString()) * 1000 + Math.floor(Number(usec.toString()) / 1000),
    dump,
  };
  if (type === 'string') s.value = v;
  else if (type === 'hash') {
    s.value = {};
    for (let i = 0; i < v.length; i += 2) s.value[v[i].toString()] = v[i + 1];
  } else if (type === 'set') s.value = [...v].sort(Buffer.compare);
  return s;
}

async function snapScene(keys) {
  const out = [];
  for (const k of keys) out.push(await snap(k));
  return out;
}

// Put the scene back exactly as captured: RESTORE with the captured PTTL, DEL what was absent.
async function restore(scene) {
  for (const s of scene) {
    await raw.sendCommand(['DEL', s.key]);
    if (s.type !== 'none') await raw.sendCommand(['RESTORE', s.key, String(s.pttl > 0 ? s.pttl : 0), s.dump, 'REPLACE']);
  }
}

async function waitFor(pred, what, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await pred()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const keyExists = (k) => raw.exists(k).then((n) => n === 1);

function elide(str) {
  const at = str.indexOf(BIG);
  if (at < 0) return { text: str };
  if (str.charAt(at + MB) === 'a') throw new Error('the 1 MB run is longer than expected');
  return { text: str.slice(0, at) + MARKER + str.slice(at + MB), elided: { marker: MARKER, char: 'a', count: MB } };
}

const esc = (buf) => [...buf].map((b) => (b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`)).join('');

// One corpus record from a snapshot.
function record(caseName, s, library, extra = {}) {
  if (s.type === 'none') throw new Error(`${caseName}: key ${s.key} is absent`);
  const rec = { case: caseName };
  if (isUtf8(s.key)) rec.key = s.key.toString('utf8');
  else Object.assign(rec, { key: esc(s.key), key_base64: s.key.toString('base64') });
  rec.type = s.type;
  let elided;
  if (s.type === 'string') {
    if (isUtf8(s.value)) {
      const e = elide(s.value.toString('utf8'));
      rec.value = e.text;
      elided = e.elided;
    } else Object.assign(rec, { value: esc(s.value), value_base64: s.value.toString('base64') });
  } else if (s.type === 'hash') {
    rec.value = Object.fromEntries(Object.entries(s.value).map(([f, v]) => [f, v.toString('utf8')]));
  } else if (s.type === 'set') {
    if (s.value.every(isUtf8)) rec.value = s.value.map((b) => b.toString('utf8'));
    else Object.assign(rec, { value: s.value.map(esc), value_base64: s.value.map((b) => b.toString('base64')) });
  }
  if (elided) rec.elided = elided;
  rec.pttl_ms = s.pttl;
  rec.captured_at_ms = s.capturedAtMs;
  Object.assign(rec, extra);
  const lib = { ...library };
  if (typeof lib.response === 'string') lib.response = elide(lib.response).text;
  rec.library = lib;
  return rec;
}

function notStored(caseName, key, library) {
  const lib = { ...library };
  if (typeof lib.response === 'string') lib.response = elide(lib.response).text;
  return { case: caseName, key, type: 'none', library: lib };
}

function writeProfile(p) {
  fs.mkdirSync(OUTDIR, { recursive: true });
  const file = path.join(OUTDIR, `${p.profile}.json`);
  fs.writeFileSync(file, `${JSON.stringify(p, null, 2)}\n`);
  log(`wrote ${file}: ${p.records.length} records${p.not_stored?.length ? `, ${p.not_stored.length} not stored` : ''}`);
}

const common = () => ({
  captured_with: { node: process.version, redis_server: SERVER_VERSION },
});

// =============================================================================================
// AWS Powertools for Lambda (TypeScript): @aws-lambda-powertools/idempotency/cache
// =============================================================================================
async function capturePowertools() {
  // The key prefix is the Lambda function's name when neither keyPrefix nor a function name is
  // given (BasePersistenceLayer reads AWS_LAMBDA_FUNCTION_NAME when it is constructed).
  process.env.AWS_LAMBDA_FUNCTION_NAME = 'idem-peers-capture';
  const { makeIdempotent, IdempotencyConfig } = await import('@aws-lambda-powertools/idempotency');
  const { CachePersistenceLayer } = await import('@aws-lambda-powertools/idempotency/cache');
  const client = createClient({ url: REDIS_URL });
  await client.connect();

  const lambdaContext = (remainingMs) => ({
    functionName: 'idem-peers-capture',
    awsRequestId: crypto.randomUUID(),
    getRemainingTimeInMillis: () => remainingMs,
  });
  // A fresh config and persistence layer per call: IdempotencyConfig keeps the registered Lambda
  // context and a persistence layer configures itself only once.
  const idempotent = (handler, cfg) =>
    makeIdempotent(handler, { persistenceStore: new CachePersistenceLayer({ client }), config: new IdempotencyConfig(cfg) });
  const keyOf = (event, cfg) => {
    const layer = new CachePersistenceLayer({ client });
    layer.configure({ config: new IdempotencyConfig(cfg) });
    return layer.getHashedIdempotencyKey(event);
  };
  const call = (fn, event, remainingMs) => (remainingMs === null ? fn(event) : fn(event, lambdaContext(remainingMs)));

  async function probe(cfg, event, remainingMs = 60000) {
    let ran = false;
    const fn = idempotent(async (ev) => {
      ran = true;
      return { receipt: 'from the probe', orderId: ev.orderId };
    }, cfg);
    try {
      const r = await call(fn, event, remainingMs);
      return { next_call: ran ? 'runs' : 'replay', response: r === undefined ? 'undefined' : JSON.stringify(r), ran };
    } catch (e) {
      const next = { IdempotencyAlreadyInProgressError: 'blocked', IdempotencyValidationError: 'mismatch' }[e.name];
      if (!next) throw e;
      return { next_call: next, response: `${e.name}: ${e.message}`, ran };
    }
  }
  const statusOf = (s) => (s.type === 'string' ? JSON.parse(s.value.toString()).status : 'none');

  const cfg = { expiresAfterSeconds: 30 };
  const vcfg = { expiresAfterSeconds: 30, eventKeyJmesPath: 'orderId', payloadValidationJmesPath: 'amount' };
  const records = [];
  const notStoredList = [];
  const lib = (s, p, notes) => ({ status: statusOf(s), next_call: p.next_call, response: p.response, notes });

  // 1. live lock
  {
    const event = { orderId: 'pt-live', amount: 1250 };
    const key = keyOf(event, cfg);
    const gate = deferred();
    const running = call(idempotent(async () => { await gate.promise; return { orderId: 'pt-live', charged: true }; }, cfg), event, 60000);
    await waitFor(() => keyExists(key), 'the live lock');
    const [s] = await snapScene([key, `${key}:lock`]);
    await restore([s]);
    const p = await probe(cfg, event);
    records.push(record('live lock (handler running, Lambda context: 60 s left)', s, lib(s, p,
      'INPROGRESS with in_progress_expiration (epoch ms) in the future: another invocation is running; the next call throws IdempotencyAlreadyInProgressError')));
    gate.resolve();
    await running;
  }

  // 2. live lock written without a Lambda context: no in_progress_expiration at all
  {
    const event = { orderId: 'pt-live-nocontext', amount: 1250 };
    const key = keyOf(event, cfg);
    const gate = deferred();
    const running = call(idempotent(async () => { await gate.promise; return { orderId: 'pt-live-nocontext' }; }, cfg), event, null);
    await waitFor(() => keyExists(key), 'the context-less lock');
    const scene = await snapScene([key, `${key}:lock`]);
    await restore(scene);
    const p = await probe(cfg, event, null);
    if (!p.ran) throw new Error('expected the context-less lock to be taken over');
    records.push(record('live lock written without a Lambda context (no in_progress_expiration)', scene[0], lib(scene[0], p,
      'INPROGRESS without in_progress_expiration is treated as an orphan: the next call takes <key>:lock, overwrites the record and runs the handler while the first is still running')));
    gate.resolve();
    await running;
  }

  // 3. orphaned lock: the Lambda context said 300 ms were left, the handler never finished
  let orphanScene;
  let orphanKey;
  {
    const event = { orderId: 'pt-orphan', amount: 1250 };
    orphanKey = keyOf(event, cfg);
    call(idempotent(() => new Promise(() => {}), cfg), event, 300); // abandoned: never settles
    await waitFor(() => keyExists(orphanKey), 'the orphaned lock');
    await sleep(450);
    orphanScene = await snapScene([orphanKey, `${orphanKey}:lock`]);
    await restore(orphanScene);
    const p = await probe(cfg, event);
    records.push(record('orphaned lock (in_progress_expiration passed, handler gone)', orphanScene[0], lib(orphanScene[0], p,
      'INPROGRESS whose in_progress_expiration (epoch ms) has passed: orphan; the next call takes <key>:lock (SET NX EX min(10, expiresAfterSeconds)), overwrites the record and runs')));
    // The takeover left its mutex behind: capture it, then show what it does to a caller that
    // finds the orphan while the mutex is held.
    const [lock] = await snapScene([`${orphanKey}:lock`]);
    await restore([orphanScene[0], lock]);
    const p2 = await probe(cfg, event);
    records.push(record('orphan-takeover mutex <key>:lock (left by the takeover above)', lock, {
      status: 'none',
      next_call: 'not_a_record',
      response: `while it lives, a call that finds the orphaned record gets: ${p2.response}`,
      notes: 'SET <key>:lock "true" NX EX min(10, expiresAfterSeconds) taken before overwriting an orphan or expired record; never read as a record, never deleted, only expires',
    }));
  }

  // 4. completed, small response
  let completedScene;
  {
    const event = { orderId: 'pt-done', amount: 1250 };
    const key = keyOf(event, cfg);
    await call(idempotent(async () => ({ orderId: 'pt-done', charged: 1250, currency: 'EUR' }), cfg), event, 60000);
    completedScene = await snapScene([key, `${key}:lock`]);
    await restore(completedScene);
    const p = await probe(cfg, event);
    records.push(record('completed, small response', completedScene[0], lib(completedScene[0], p,
      'COMPLETED before expiration (epoch s): the next call returns data (the handler\'s return value, stored as JSON inside the record) without running')));
  }

  // 5. completed, 1 MB response
  {
    const event = { orderId: 'pt-big', amount: 1250 };
    const key = keyOf(event, cfg);
    await call(idempotent(async () => ({ orderId: 'pt-big', blob: BIG }), cfg), event, 60000);
    const scene = await snapScene([key, `${key}:lock`]);
    await restore(scene);
    const p = await probe(cfg, event);
    records.push(record('completed, 1 MB response', scene[0], lib(scene[0], p, 'COMPLETED; data holds the whole 1 MB return value')));
  }

  // 6. completed, the handler returned undefined: no data field
  {
    const event = { orderId: 'pt-void', amount: 1250 };
    const key = keyOf(event, cfg);
    await call(idempotent(async () => undefined, cfg), event, 60000);
    const scene = await snapScene([key, `${key}:lock`]);
    await restore(scene);
    const p = await probe(cfg, event);
    records.push(record('completed, handler returned undefined (no data field)', scene[0], lib(scene[0], p,
      'COMPLETED without data: JSON.stringify dropped the undefined value; the next call returns undefined without running')));
  }

  // 7. the handler threw: the record is deleted
  {
    const event = { orderId: 'pt-throw', amount: 1250 };
    const key = keyOf(event, cfg);
    try {
      await call(idempotent(async () => { throw new Error('card declined'); }, cfg), event, 60000);
    } catch { /* expected */ }
    const [s] = await snapScene([key]);
    if (s.type !== 'none') throw new Error('expected Powertools to delete the record of a failed call');
    const p = await probe(cfg, event);
    notStoredList.push(notStored('handler threw (error response)', key, {
      status: 'none', next_call: p.next_call, response: p.response,
      notes: 'the in-progress record is DELeted when the handler throws (IdempotencyHandler#deleteInProgressRecord); nothing is stored, the next call runs',
    }));
  }

  // 8. COMPLETED past its expiration while the key still lives. expiration = round(now + E) but
  // the TTL is expiration - floor(now), so a record written late in a second outlives its own
  // expiration by up to a second. Written with E = 1 s at .80-.90 of a second, captured just after.
  {
    const ecfg = { expiresAfterSeconds: 1 };
    for (let attempt = 1; ; attempt++) {
      const event = { orderId: `pt-expired-${attempt}`, amount: 1250 };
      const key = keyOf(event, ecfg);
      while (Date.now() % 1000 < 800 || Date.now() % 1000 > 900) await sleep(2);
      await call(idempotent(async () => ({ orderId: event.orderId, charged: 1250 }), ecfg), event, 60000);
      const { expiration } = JSON.parse(await raw.get(key));
      while (Date.now() < expiration * 1000 + 120) await sleep(2);
      const scene = await snapScene([key, `${key}:lock`]);
      const s = scene[0];
      if (s.type === 'string' && s.pttl > 100 && s.capturedAtMs > expiration * 1000) {
        await restore(scene);
        const p = await probe(ecfg, event);
        records.push(record('completed, past its expiration while the key lives', s, {
          ...lib(s, p, 'stored status COMPLETED, but expiration (epoch s) has passed, so IdempotencyRecord.getStatus() says EXPIRED although Redis still holds the key: the next call treats it as an orphan (takes <key>:lock, overwrites) and runs'),
          status: 'EXPIRED',
        }));
        break;
      }
      if (attempt >= 6) throw new Error('could not catch a record between its expiration and its TTL');
    }
  }

  // 9-11. payload validation
  let vLiveScene;
  {
    const event = { orderId: 'pt-validate-live', amount: 1250 };
    const key = keyOf(event, vcfg);
    const gate = deferred();
    const running = call(idempotent(async () => { await gate.promise; return { orderId: event.orderId }; }, vcfg), event, 60000);
    await waitFor(() => keyExists(key), 'the validated live lock');
    vLiveScene = await snapScene([key, `${key}:lock`]);
    await restore(vLiveScene);
    const p = await probe(vcfg, event);
    records.push(record('live lock with payload validation (validation hash)', vLiveScene[0], lib(vLiveScene[0], p,
      'INPROGRESS with validation = base64 md5 of the payloadValidationJmesPath selection; the same payload is blocked')));
    await restore(vLiveScene);
    const p2 = await probe(vcfg, { orderId: 'pt-validate-live', amount: 9999 });
    records.push(record('payload mismatch against a live lock', vLiveScene[0], lib(vLiveScene[0], p2,
      'same key (orderId), different amount: IdempotencyValidationError is thrown before the in-progress check')));
    gate.resolve();
    await running;
  }
  {
    const event = { orderId: 'pt-validate-done', amount: 1250 };
    const key = keyOf(event, vcfg);
    await call(idempotent(async () => ({ orderId: event.orderId, charged: 1250 }), vcfg), event, 60000);
    const scene = await snapScene([key, `${key}:lock`]);
    await restore(scene);
    const p = await probe(vcfg, event);
    if (p.next_call !== 'mismatch') log('NOTE: the completed record kept its validation hash (upstream fix #5706 released?)');
    records.push(record('completed with payload validation, probed with the SAME payload', scene[0], lib(scene[0], p,
      p.next_call === 'mismatch'
        ? 'the COMPLETED write (_updateRecord) drops the validation field, so even an identical retry throws IdempotencyValidationError (powertools-lambda-typescript#5705, fixed by #5706 after this version)'
        : 'COMPLETED keeps its validation hash: the identical retry replays')));
    await restore(scene);
    const p2 = await probe(vcfg, { orderId: 'pt-validate-done', amount: 9999 });
    records.push(record('payload mismatch against a completed record', scene[0], lib(scene[0], p2,
      'same key, different amount: IdempotencyValidationError')));
  }

  await client.quit();

  // The same layer on @valkey/valkey-glide, the other client the docs show: Glide's set() takes
  // {conditionalSet, expiry} and ignores {EX, NX}, so every write is a plain SET without TTL
  // (powertools-lambda-typescript#5716).
  let glideVersion = null;
  try {
    const { GlideClient } = await import('@valkey/valkey-glide');
    glideVersion = pkgVersion('@valkey/valkey-glide');
    const glide = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: PORT }], requestTimeout: 2000 });
    const gIdempotent = (handler, c) =>
      makeIdempotent(handler, { persistenceStore: new CachePersistenceLayer({ client: glide }), config: new IdempotencyConfig(c) });
    async function gProbe(event) {
      let ran = false;
      const r = await call(gIdempotent(async (ev) => { ran = true; return { receipt: 'from the probe', orderId: ev.orderId }; }, cfg), event, 60000);
      return { next_call: ran ? 'runs' : 'replay', response: JSON.stringify(r) };
    }
    const extra = { redis_client: `@valkey/valkey-glide ${glideVersion}` };
    {
      const event = { orderId: 'pt-glide-live', amount: 1250 };
      const key = keyOf(event, cfg);
      const gate = deferred();
      const running = call(gIdempotent(async () => { await gate.promise; return { orderId: event.orderId }; }, cfg), event, 60000);
      await waitFor(() => keyExists(key), 'the Glide live lock');
      const scene = await snapScene([key, `${key}:lock`]);
      await restore(scene);
      records.push(record('Glide client: live lock (written without TTL)', scene[0], lib(scene[0], await gProbe(event),
        'same JSON, but no TTL (PTTL -1) and no NX: the next call\'s SET succeeds unconditionally, so it overwrites the lock and runs'), extra));
      gate.resolve();
      await running;
    }
    {
      const event = { orderId: 'pt-glide-done', amount: 1250 };
      const key = keyOf(event, cfg);
      await call(gIdempotent(async () => ({ orderId: event.orderId, charged: 1250 }), cfg), event, 60000);
      const scene = await snapScene([key, `${key}:lock`]);
      await restore(scene);
      records.push(record('Glide client: completed (written without TTL)', scene[0], lib(scene[0], await gProbe(event),
        'COMPLETED without TTL: never expires in Redis, yet never replayed either: the next call overwrites it and runs'), extra));
    }
    glide.close();
  } catch (e) {
    if (glideVersion === null) log(`Glide cases skipped: @valkey/valkey-glide does not load here (${e.message.split('\n')[0]})`);
    else throw e;
  }
  return {
    profile: 'powertools',
    library: '@aws-lambda-powertools/idempotency',
    version: pkgVersion('@aws-lambda-powertools/idempotency'),
    class: 'CachePersistenceLayer from @aws-lambda-powertools/idempotency/cache, used through makeIdempotent',
    redis_client: `@redis/client ${pkgVersion('@redis/client')}${glideVersion ? ` (records marked redis_client: @valkey/valkey-glide ${glideVersion})` : ''}`,
    redis_clients_accepted: 'optional peers @redis/client ^6.2.1 and @valkey/valkey-glide ^2.5.1; any object with get(name), set(name, value, {EX, NX}), del([name])',
    source: 'captured by tools/peers/capture.sh',
    ...common(),
    settings: {
      AWS_LAMBDA_FUNCTION_NAME: 'idem-peers-capture (the key prefix)',
      expiresAfterSeconds: '30 (1 for the expired case)',
      validation_cases: 'eventKeyJmesPath "orderId", payloadValidationJmesPath "amount"',
    },
    records,
    not_stored: notStoredList,
  };
}

// =============================================================================================
// @node-idempotency/core + @node-idempotency/storage-adapter-redis
// =============================================================================================
async function captureNodeIdempotency() {
  const { Idempotency } = require('@node-idempotency/core');
  const { RedisStorageAdapter } = require('@node-idempotency/storage-adapter-redis');
  const storage = new RedisStorageAdapter({ url: REDIS_URL });
  await storage.connect();
  const idem = new Idempotency(storage, { cacheTTLMS: 30000 });
  const req = (key, body) => ({
    headers: { 'idempotency-key': key, 'content-type': 'application/json' },
    method: 'POST',
    path: '/orders',
    ...(body === undefined ? {} : { body }),
  });
  const keyOf = (k) => `node-idempotency:POST:/orders:${k}`;
  async function probe(r) {
    try {
      const res = await idem.onRequest(r);
      if (res === undefined) return { next_call: 'runs', response: 'undefined (onRequest returned nothing: the caller runs the handler)' };
      return { next_call: 'replay', response: JSON.stringify(res) };
    } catch (e) {
      const next = { REQUEST_IN_PROGRESS: 'blocked', IDEMPOTENCY_FINGERPRINT_MISSMATCH: 'mismatch' }[e.code];
      if (!next) throw e;
      return { next_call: next, response: `IdempotencyError ${e.code}: ${e.message}` };
    }
  }
  const lib = (s, p, notes) => ({ status: JSON.parse(s.value.toString()).status, next_call: p.next_call, response: p.response, notes });
  const records = [];
  const body = { orderId: 'ni-1', amount: 1250 };

  // live lock
  let liveScene;
  {
    const r = req('ni-live', body);
    if ((await idem.onRequest(r)) !== undefined) throw new Error('fresh key replayed');
    liveScene = await snapScene([keyOf('ni-live')]);
    await restore(liveScene);
    records.push(record('live lock (handler running)', liveScene[0], lib(liveScene[0], await probe(r),
      'IN_PROGRESS: a request with this key is being handled; no owner, no deadline: the next call gets REQUEST_IN_PROGRESS (the plugins answer 409)')));
    await restore(liveScene);
    records.push(record('different body against a live lock', liveScene[0], lib(liveScene[0], await probe(req('ni-live', { orderId: 'ni-1', amount: 9999 })),
      'IN_PROGRESS is answered before any fingerprint check: a different body is blocked too')));
  }
  // orphaned lock: onRequest, then the process "dies" (onResponse never called)
  {
    const r = req('ni-orphan', body);
    await idem.onRequest(r);
    await sleep(1000);
    const scene = await snapScene([keyOf('ni-orphan')]);
    await restore(scene);
    records.push(record('orphaned lock (onResponse never called, 1 s later)', scene[0], lib(scene[0], await probe(r),
      'indistinguishable from a live lock: IN_PROGRESS has no owner or deadline, so it blocks every retry until the key\'s PX TTL (cacheTTLMS, default 24 h) removes it')));
  }
  // no body: no fingerPrint field
  {
    const r = req('ni-nobody', undefined);
    await idem.onRequest(r);
    const scene = await snapScene([keyOf('ni-nobody')]);
    await restore(scene);
    records.push(record('live lock of a request without a body (no fingerPrint)', scene[0], lib(scene[0], await probe(r),
      'fingerPrint is undefined without a body and JSON.stringify drops it')));
  }
  // completed, small
  let doneScene;
  {
    const r = req('ni-done', body);
    await idem.onRequest(r);
    // The shape the express plugin gives onResponse: additional.statusCode (+ Content-Type) and body.
    await idem.onResponse(r, { additional: { statusCode: 201, 'Content-Type': 'application/json; charset=utf-8' }, body: { orderId: 'ni-1', charged: 1250 } });
    doneScene = await snapScene([keyOf('ni-done')]);
    await restore(doneScene);
    records.push(record('completed, small response', doneScene[0], lib(doneScene[0], await probe(r),
      'COMPLETE: response {additional:{statusCode,...}, body} is returned by onRequest for the plugin to send; the handler does not run')));
    await restore(doneScene);
    records.push(record('payload mismatch against a completed record', doneScene[0], lib(doneScene[0], await probe(req('ni-done', { orderId: 'ni-1', amount: 9999 })),
      'fingerPrint (blake2s256 hex of JSON.stringify(body)) differs: IDEMPOTENCY_FINGERPRINT_MISSMATCH (the plugins answer 422)')));
  }
  // completed, 1 MB
  {
    const r = req('ni-big', body);
    await idem.onRequest(r);
    await idem.onResponse(r, { additional: { statusCode: 200, 'Content-Type': 'application/json; charset=utf-8' }, body: { orderId: 'ni-1', blob: BIG } });
    const scene = await snapScene([keyOf('ni-big')]);
    await restore(scene);
    records.push(record('completed, 1 MB response', scene[0], lib(scene[0], await probe(r), 'COMPLETE with the 1 MB body inside response.body')));
  }
  // error response: the express plugin passes {error: <parsed body>} for a status >= 400
  {
    const r = req('ni-error', body);
    await idem.onRequest(r);
    await idem.onResponse(r, { additional: { statusCode: 402, 'Content-Type': 'application/json; charset=utf-8' }, error: { message: 'card declined', code: 'card_declined' } });
    const scene = await snapScene([keyOf('ni-error')]);
    await restore(scene);
    records.push(record('error response stored (status 402)', scene[0], lib(scene[0], await probe(r),
      'errors are stored like successes: status COMPLETE, response.error instead of response.body; duplicates get the error back (the express plugin calls next(error), nestjs rethrows it)')));
  }
  await storage.disconnect();
  records.push(...(await captureNodeIdempotencyNestjs()));
  return {
    profile: 'node-idempotency',
    library: '@node-idempotency/core',
    version: pkgVersion('@node-idempotency/core'),
    packages: {
      '@node-idempotency/core': pkgVersion('@node-idempotency/core'),
      '@node-idempotency/storage-adapter-redis': pkgVersion('@node-idempotency/storage-adapter-redis'),
      '@node-idempotency/nestjs': pkgVersion('@node-idempotency/nestjs'),
      '@node-idempotency/core (under nestjs)': pkgVersion('@node-idempotency/core', path.join(process.cwd(), 'node_modules', '@node-idempotency/nestjs')),
      '@nestjs/core': pkgVersion('@nestjs/core'),
    },
    redis_client: `redis ${pkgVersion('redis')} (node-redis 4, @redis/client ${pkgVersion('@redis/client', path.join(process.cwd(), 'node_modules', 'redis'))})`,
    source: 'captured by tools/peers/capture.sh: core API onRequest/onResponse (called with the request and response shapes the express plugin builds; @node-idempotency/express is not on the registry reachable here), and a NestJS 10 app with @node-idempotency/nestjs over HTTP (cases marked nestjs)',
    ...common(),
    settings: { cacheTTLMS: 30000, cacheKeyPrefix: 'node-idempotency (default)', idempotencyKey: 'idempotency-key header (default)' },
    records,
    not_stored: [],
  };
}

// The NestJS plugin (the published way to use node-idempotency over HTTP here): a real Nest app on
// loopback, the controller decorated by hand (plain JS has no decorator syntax).
async function captureNodeIdempotencyNestjs() {
  require('reflect-metadata');
  const { Body, Controller, HttpException, Module, Post } = require('@nestjs/common');
  const { NestFactory } = require('@nestjs/core');
  const { Idempotent, NodeIdempotencyModule } = require('@node-idempotency/nestjs');
  let runs = 0;
  class OrdersController {
    charge(body) {
      runs++;
      if (body.fail === 'http') throw new HttpException({ message: 'card declined', code: 'card_declined' }, 402);
      if (body.fail === 'plain') throw new Error('database unavailable');
      return { orderId: body.orderId, charged: body.amount };
    }
  }
  const proto = OrdersController.prototype;
  Object.defineProperty(proto, 'charge',
    Reflect.decorate([Post('orders'), Idempotent()], proto, 'charge', Object.getOwnPropertyDescriptor(proto, 'charge')));
  Body()(proto, 'charge', 0);
  Controller()(OrdersController);
  class AppModule {}
  Module({
    imports: [NodeIdempotencyModule.forRootAsync({ storage: { adapter: 'redis', options: { url: REDIS_URL } }, cacheTTLMS: 30000 })],
    controllers: [OrdersController],
  })(AppModule);
  const app = await NestFactory.create(AppModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  const port = app.getHttpServer().address().port;
  const post = (key, body) => new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const rq = http.request({
      host: '127.0.0.1', port, path: '/orders', method: 'POST', agent: false,
      headers: { 'content-type': 'application/json', 'idempotency-key': key, 'content-length': Buffer.byteLength(data) },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString(), headers: res.headers }));
    });
    rq.setTimeout(4000, () => rq.destroy(new Error('timeout')));
    rq.on('error', reject);
    rq.end(data);
  });
  async function probe(key, body) {
    const before = runs;
    const r = await post(key, body);
    const response = `HTTP ${r.status} ${r.body}`;
    if (runs > before) return { next_call: 'runs', response };
    if (r.status === 409) return { next_call: 'blocked', response };
    if (r.status === 422) return { next_call: 'mismatch', response };
    return { next_call: 'replay', response: `${response} (idempotent-replayed: ${r.headers['idempotent-replayed']})` };
  }
  const lib = (s, p, notes) => ({ status: JSON.parse(s.value.toString()).status, next_call: p.next_call, response: p.response, notes });
  const out = [];
  const cases = [
    ['nestjs-done', { orderId: 'nj-1', amount: 1250 }, 'nestjs: completed, small response',
      'the interceptor stores {additional:{statusCode}, body: <the handler\'s return value>}; duplicates get it with Idempotent-Replayed: true'],
    ['nestjs-402', { orderId: 'nj-2', amount: 1250, fail: 'http' }, 'nestjs: handler threw HttpException 402 (error stored)',
      'a thrown HttpException is stored as COMPLETE with response.error = the exception object as JSON.stringify serialises it; duplicates get the same 402 for the whole TTL'],
    ['nestjs-500', { orderId: 'nj-3', amount: 1250, fail: 'plain' }, 'nestjs: handler threw a plain Error (500 stored)',
      'any other exception is stored as an InternalServerErrorException: a transient failure is replayed as 500 to every retry until the TTL ends'],
  ];
  for (const [k, body, name, notes] of cases) {
    const key = `node-idempotency:POST:/orders:${k}`;
    await post(k, body);
    await waitFor(async () => (await raw.get(key))?.includes('"COMPLETE"'), `${name} to be stored`);
    const scene = await snapScene([key]);
    await restore(scene);
    out.push(record(name, scene[0], lib(scene[0], await probe(k, body), notes)));
  }
  await app.close();
  return out;
}

// =============================================================================================
// express-idempotency + express-idempotency-redis-adapter, on a real Express app on loopback
// =============================================================================================
async function captureExpressIdempotency() {
  const express = require('express');
  const { idempotency, getSharedIdempotencyService } = require('express-idempotency');
  const RedisAdapter = require('express-idempotency-redis-adapter').default;
  const adapter = new RedisAdapter({ connectionConfig: { url: REDIS_URL }, ttl: 30 });
  await adapter.connect();

  const runs = new Map();
  const gates = new Map();
  const app = express();
  app.set('env', 'production');
  app.use(express.json());
  app.post('*', idempotency({ dataAdapter: adapter }));
  const route = (p, fn) => app.post(p, async (req, res, next) => {
    if (getSharedIdempotencyService().isHit(req)) return; // the README's pattern
    const k = req.get('idempotency-key');
    runs.set(k, (runs.get(k) || 0) + 1);
    try { await fn(req, res, k); } catch (e) { next(e); }
  });
  route('/orders', (req, res) => res.status(201).json({ orderId: req.body.orderId, charged: req.body.amount }));
  route('/slow', async (req, res, k) => { await gates.get(k)?.promise; res.status(201).json({ orderId: req.body.orderId }); });
  route('/hang', () => new Promise(() => {}));
  route('/big', (req, res) => res.status(200).json({ orderId: req.body.orderId, blob: BIG }));
  route('/fail', (req, res) => res.status(500).json({ error: 'card declined' }));
  route('/report', async (req, res) => { await getSharedIdempotencyService().reportError(req); res.status(400).json({ error: 'bad card' }); });
  app.post('/throw', (req, res) => {
    if (getSharedIdempotencyService().isHit(req)) return;
    const k = req.get('idempotency-key');
    runs.set(k, (runs.get(k) || 0) + 1);
    throw new Error('boom'); // Express' default error handler answers 500 with res.end, not res.send
  });
  // finalhandler logs every error it answers; the capture's output stays readable without them
  const consoleError = console.error;
  console.error = (...a) => { if (!(a[0] instanceof Error || /^\w*Error: [^\n]*\n\s+at /.test(String(a[0])))) consoleError(...a); };
  const server = await new Promise((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
  const httpPort = server.address().port;

  function post(p, key, body, { signal, timeoutMs = 4000 } = {}) {
    const data = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const rq = http.request({
        host: '127.0.0.1', port: httpPort, path: p, method: 'POST', signal, agent: false,
        headers: { 'content-type': 'application/json', 'idempotency-key': key, 'content-length': Buffer.byteLength(data) },
      }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString(), headers: res.headers }));
      });
      rq.setTimeout(timeoutMs, () => rq.destroy(new Error('timeout')));
      rq.on('error', reject);
      rq.end(data);
    });
  }
  async function probe(p, key, body) {
    const before = runs.get(key) || 0;
    const r = await post(p, key, body);
    const ran = (runs.get(key) || 0) > before;
    const response = `HTTP ${r.status} ${r.body}`;
    if (ran) return { next_call: 'runs', response };
    if (r.status === 409) return { next_call: 'blocked', response };
    if (r.status === 417) return { next_call: 'mismatch', response };
    return { next_call: 'replay', response };
  }
  const statusOf = () => 'none';
  const lib = (s, p, notes) => ({ status: statusOf(s), next_call: p.next_call, response: p.response, notes });
  const records = [];
  const notStoredList = [];
  const body = { orderId: 'ex-1', amount: 1250 };
  const newKey = (tag) => `${tag}-${crypto.randomUUID()}`;

  // live lock
  {
    const k = newKey('ex-live');
    gates.set(k, deferred());
    const first = post('/slow', k, body);
    await waitFor(() => keyExists(k), 'the live record');
    const scene = await snapScene([k]);
    await restore(scene);
    records.push(record('live lock (handler running)', scene[0], lib(scene[0], await probe('/slow', k, body),
      'a value with "request" and no "response" means in progress: duplicates get 409 until the response is stored or the TTL ends')));
    await restore(scene);
    records.push(record('payload mismatch against a live lock', scene[0], lib(scene[0], await probe('/slow', k, { orderId: 'ex-1', amount: 9999 }),
      'the intent check (url, method, query, body deep-equal) comes first: 417 even while in progress')));
    gates.get(k).resolve();
    await first;
  }
  // orphaned lock: the handler never answers and the client goes away
  {
    const k = newKey('ex-orphan');
    const ac = new AbortController();
    const first = post('/hang', k, body, { signal: ac.signal }).catch(() => null);
    await waitFor(() => keyExists(k), 'the orphaned record');
    ac.abort();
    await first;
    await sleep(300);
    const scene = await snapScene([k]);
    await restore(scene);
    records.push(record('orphaned lock (handler never answered, client gone)', scene[0], lib(scene[0], await probe('/hang', k, body),
      'same shape as a live lock: nothing marks the owner or a deadline; 409 for the whole TTL (adapter ttl, default 86400 s)')));
  }
  // the handler threw: Express' default error handler uses res.end, the hook on res.send never fires
  {
    const k = newKey('ex-throw');
    const r = await post('/throw', k, body);
    if (r.status !== 500) throw new Error(`expected 500 from /throw, got ${r.status}`);
    await sleep(300);
    const scene = await snapScene([k]);
    if (scene[0].type === 'none') {
      notStoredList.push(notStored('handler threw (Express default error handler)', k, { status: 'none', ...(await probe('/throw', k, body)), notes: 'record deleted' }));
    } else {
      await restore(scene);
      records.push(record('handler threw (Express default error handler answered 500)', scene[0], lib(scene[0], await probe('/throw', k, body),
        'the 500 went out through res.end, not res.send, so the library never saw a response: the record stays "in progress" and duplicates get 409 until the TTL; only reportError() or a non-2xx res.send() deletes it')));
    }
  }
  // non-2xx response through res.send: deleted
  {
    const k = newKey('ex-fail');
    await post('/fail', k, body);
    await sleep(300);
    const [s] = await snapScene([k]);
    if (s.type !== 'none') throw new Error('expected the 500 response to delete the record');
    notStoredList.push(notStored('error response (500 through res.send)', k, {
      status: 'none', ...(await probe('/fail', k, body)),
      notes: 'responses outside 200-299 (SuccessfulResponseValidator) are not kept: the record is DELeted and the next call runs',
    }));
  }
  // reportError(): deleted
  {
    const k = newKey('ex-report');
    await post('/report', k, body);
    await sleep(300);
    const [s] = await snapScene([k]);
    if (s.type !== 'none') throw new Error('expected reportError to delete the record');
    notStoredList.push(notStored('handler called reportError()', k, {
      status: 'none', ...(await probe('/report', k, body)), notes: 'reportError(req) DELetes the key; the next call runs',
    }));
  }
  // completed, small
  {
    const k = newKey('ex-done');
    await post('/orders', k, body);
    await waitFor(async () => (await raw.get(k))?.includes('"response"'), 'the stored response');
    const scene = await snapScene([k]);
    await restore(scene);
    records.push(record('completed, small response', scene[0], lib(scene[0], await probe('/orders', k, body),
      'a "response" ({statusCode, body as sent, whitelisted headers}) means completed: duplicates get it back (the route runs only to see isHit)')));
    await restore(scene);
    records.push(record('payload mismatch against a completed record', scene[0], lib(scene[0], await probe('/orders', k, { orderId: 'ex-1', amount: 9999 }),
      'different body with the same key: 417 "Misuse of the idempotency key"')));
  }
  // completed, 1 MB
  {
    const k = newKey('ex-big');
    await post('/big', k, body);
    await waitFor(async () => (await raw.get(k))?.includes('"response"'), 'the stored 1 MB response');
    const scene = await snapScene([k]);
    await restore(scene);
    records.push(record('completed, 1 MB response', scene[0], lib(scene[0], await probe('/big', k, body),
      'response.body is the 1 MB JSON text as sent (a string inside the JSON value)')));
  }
  await new Promise((r) => server.close(r));
  console.error = consoleError;
  await adapter.disconnect();
  return {
    profile: 'express-idempotency',
    library: 'express-idempotency',
    version: pkgVersion('express-idempotency'),
    packages: {
      'express-idempotency': pkgVersion('express-idempotency'),
      'express-idempotency-redis-adapter': pkgVersion('express-idempotency-redis-adapter'),
      express: pkgVersion('express'),
    },
    redis_client: `@redis/client ${pkgVersion('@redis/client', path.join(process.cwd(), 'node_modules', 'express-idempotency-redis-adapter'))}`,
    source: 'captured by tools/peers/capture.sh (an Express 4 app on loopback, requests over HTTP)',
    ...common(),
    settings: { adapter_ttl_s: 30, idempotencyKeyHeader: 'idempotency-key (default)', responseValidator: 'default (2xx kept)', intentValidator: 'default (url, method, query, body)' },
    records,
    not_stored: notStoredList,
  };
}

// =============================================================================================
// Constructed profiles: the bytes come from the library's serializer (or its exact equivalent),
// the commands are the library's, the next call is read from its source.
// =============================================================================================
const PYTHON_SRC = {
  repo: 'aws-powertools/powertools-lambda-python',
  commit: 'fa1c29f2d497a7c233f06eb69d0f7ee1b187a9e4',
  note: 'v3.2.0+ (2024-10-24); the same logic at index commit 0233a9df6d112fc06ca8537a13b994191fdad542 (where the class is also exported as CachePersistenceLayer)',
  path: 'aws_lambda_powertools/utilities/idempotency/persistence/redis.py',
};

// The lines of powertools-lambda-python that make the bytes, with only the standard library.
const PYTHON_MAKER = String.raw`
import datetime, hashlib, json, sys
FUNCTION = "idem-peers-capture"          # AWS_LAMBDA_FUNCTION_NAME
QUALIFIED = "app.lambda_handler"         # f"{function.__module__}.{function.__qualname__}"
def gen_hash(data):                      # BasePersistenceLayer._generate_hash (cls=Encoder: no effect on plain JSON)
    return hashlib.md5(json.dumps(data, sort_keys=True).encode()).hexdigest()
out = []
for c in json.load(sys.stdin):
    skew = datetime.timedelta(seconds=c.get("clock_skew_s", 0))
    def now():
        return datetime.datetime.now() + skew
    event = c["event"]
    key_data = event.get(c["event_key"]) if c.get("event_key") else event
    key = f"{FUNCTION}.{QUALIFIED}#{gen_hash(key_data)}"
    validation = gen_hash(event.get(c["validation_key"])) if c.get("validation_key") else None
    E = c["expires_after_seconds"]
    expiry = int((now() + datetime.timedelta(seconds=E)).timestamp())          # _get_expiry_timestamp
    if c["kind"] == "inprogress":                                               # _put_in_progress_record
        mapping = {"status": "INPROGRESS", "expiration": expiry}
        if c.get("remaining_ms") is not None:                                   # save_inprogress
            mapping["in_progress_expiration"] = int((now() + datetime.timedelta(milliseconds=c["remaining_ms"])).timestamp() * 1000)
        if validation is not None:
            mapping["validation"] = validation
    else:                                                                       # save_success + _update_record
        response_data = json.dumps(c["result"], sort_keys=True)
        mapping = {"data": response_data, "status": "COMPLETED", "expiration": expiry}
    value = json.dumps(mapping)
    ttl = expiry - int(now().timestamp())                                       # _get_expiry_second
    out.append({"key": key, "value": value, "ttl": ttl, "nx": c["kind"] == "inprogress",
                "lock_ttl": min(10, E)})                                        # _orphan_lock_timeout
json.dump(out, sys.stdout)
`;

function havePython() {
  try { execFileSync('python3', ['-c', 'import json, hashlib, datetime'], { stdio: 'ignore' }); return true; } catch { return false; }
}

async function capturePowertoolsPython() {
  const base = { expires_after_seconds: 30 };
  const cases = [
    { id: 'live', kind: 'inprogress', remaining_ms: 60000, event: { orderId: 'py-live', amount: 1250 } },
    { id: 'nocontext', kind: 'inprogress', remaining_ms: null, event: { orderId: 'py-live-nocontext', amount: 1250 } },
    { id: 'orphan', kind: 'inprogress', remaining_ms: 300, event: { orderId: 'py-orphan', amount: 1250 } },
    { id: 'done', kind: 'completed', event: { orderId: 'py-done', amount: 1250 }, result: { orderId: 'py-done', charged: 1250, currency: 'EUR' } },
    { id: 'big', kind: 'completed', event: { orderId: 'py-big', amount: 1250 }, result: { orderId: 'py-big', blob: BIG } },
    { id: 'none', kind: 'completed', event: { orderId: 'py-none', amount: 1250 }, result: null },
    { id: 'expired', kind: 'completed', clock_skew_s: -60, event: { orderId: 'py-expired', amount: 1250 }, result: { orderId: 'py-expired', charged: 1250 } },
    { id: 'vlive', kind: 'inprogress', remaining_ms: 60000, event_key: 'orderId', validation_key: 'amount', event: { orderId: 'py-validate-live', amount: 1250 } },
    { id: 'vdone', kind: 'completed', event_key: 'orderId', validation_key: 'amount', event: { orderId: 'py-validate-done', amount: 1250 }, result: { orderId: 'py-validate-done', charged: 1250 } },
    { id: 'throw', kind: 'inprogress', remaining_ms: 60000, event: { orderId: 'py-throw', amount: 1250 } },
  ].map((c) => ({ ...base, ...c }));
  const made = JSON.parse(execFileSync('python3', ['-c', PYTHON_MAKER], { input: JSON.stringify(cases), maxBuffer: 64 * MB }).toString());
  const by = Object.fromEntries(cases.map((c, i) => [c.id, made[i]]));
  // SET name value EX ttl NX (in progress) / SET name value EX ttl (completed), as redis-py sends them.
  for (const m of made) {
    const args = ['SET', m.key, m.value, 'EX', String(m.ttl)];
    if (m.nx) args.push('NX');
    await raw.sendCommand(args);
  }
  // The failed call: _delete_record DELetes the in-progress record.
  await raw.del(by.throw.key);
  // The orphan-takeover mutex, as _acquire_lock writes it.
  await raw.sendCommand(['SET', `${by.orphan.key}:lock`, 'True', 'EX', String(by.orphan.lock_ttl), 'NX']);
  await sleep(450); // let the orphan's in_progress_expiration (300 ms) pass
  const S = {};
  for (const id of Object.keys(by)) [S[id]] = await snapScene([by[id].key]);
  const [lockSnap] = await snapScene([`${by.orphan.key}:lock`]);
  const L = (status, next_call, response, notes) => ({ status, next_call, response, notes });
  const records = [
    record('live lock (handler running, Lambda context: 60 s left)', S.live, L('INPROGRESS', 'blocked',
      `IdempotencyAlreadyInProgressError: Execution already in progress with idempotency key: =${by.live.key}`,
      '_put_in_progress_record: INPROGRESS with in_progress_expiration (epoch ms) > now -> IdempotencyItemAlreadyExistsError; base.py _handle_for_status raises IdempotencyAlreadyInProgressError')),
    record('live lock written without a Lambda context (no in_progress_expiration)', S.nocontext, L('INPROGRESS', 'runs',
      'the handler runs again (its own return value)',
      'no in_progress_expiration -> neither branch matches -> IdempotencyPersistenceConsistencyError -> orphan path: SET <key>:lock True NX EX 10, overwrite, run, although the first call may still be running')),
    record('orphaned lock (in_progress_expiration passed, handler gone)', S.orphan, L('INPROGRESS', 'runs',
      'the handler runs again (its own return value)',
      'INPROGRESS with in_progress_expiration in the past -> orphan: _acquire_lock (SET <key>:lock "True" NX EX min(10, expires_after_seconds)) then SET the new in-progress record')),
    record('orphan-takeover mutex <key>:lock', lockSnap, L('none', 'not_a_record',
      'while it lives, a call that finds the orphaned record gets IdempotencyInconsistentStateError (lock not acquired -> IdempotencyItemAlreadyExistsError -> _handle_for_status sees the passed in_progress_expiration; handle() retries 2 more times, then raises)',
      '_acquire_lock: SET f"{name}:lock" "True" NX EX min(10, expires_after_seconds); never read as a record, never deleted ("Not removing the lock here serves as a safeguard"), only expires')),
    record('completed, small response', S.done, L('COMPLETED', 'replay',
      JSON.stringify({ charged: 1250, currency: 'EUR', orderId: 'py-done' }),
      'COMPLETED before expiration (epoch s) -> IdempotencyItemAlreadyExistsError -> response_json_as_dict(): data is a JSON string (json.dumps(result, sort_keys=True)) inside the JSON value')),
    record('completed, 1 MB response', S.big, L('COMPLETED', 'replay', JSON.stringify({ blob: BIG, orderId: 'py-big' }),
      'data holds the 1 MB result as an escaped JSON string')),
    record('completed, handler returned None', S.none, L('COMPLETED', 'replay', 'None',
      'save_success stores json.dumps(None) = "null"; the replay returns None')),
    record('completed, past its expiration while the key lives (writer clock 60 s behind)', S.expired, L('EXPIRED', 'runs',
      'the handler runs again (its own return value)',
      'stored status COMPLETED; expiration is the writer\'s epoch seconds while the TTL is relative, so with clock skew between instances the record is past expiration while Redis keeps it; DataRecord.status then says EXPIRED -> orphan path (lock, overwrite, run)')),
    record('live lock with payload validation (validation hash)', S.vlive, L('INPROGRESS', 'blocked',
      `IdempotencyAlreadyInProgressError: Execution already in progress with idempotency key: orderId=${by.vlive.key}`,
      'validation = md5 hexdigest of json.dumps(selection, sort_keys=True); same payload: get_record validates (equal), then _handle_for_status raises IdempotencyAlreadyInProgressError')),
    record('payload mismatch against a live lock', S.vlive, L('INPROGRESS', 'mismatch',
      'IdempotencyValidationError: Payload does not match stored record for this event key',
      'different amount: get_record -> _validate_payload raises before the status is looked at')),
    record('completed with payload validation, probed with the SAME payload', S.vdone, L('COMPLETED', 'mismatch',
      'IdempotencyValidationError: Payload does not match stored record for this event key',
      '_update_record writes only data/status/expiration, and _item_to_data_record reads the missing validation as str(None) = "None", so even an identical retry fails validation')),
    record('payload mismatch against a completed record', S.vdone, L('COMPLETED', 'mismatch',
      'IdempotencyValidationError: Payload does not match stored record for this event key', 'different amount: same error')),
  ];
  const notStoredList = [notStored('handler raised (error response)', by.throw.key, L('none', 'runs', 'the handler runs again',
    'IdempotencyHandler._get_function_response: on an exception, delete_record -> _delete_record DELetes the key; nothing is stored'))];
  return {
    profile: 'powertools-python',
    library: 'aws-lambda-powertools (Python) RedisCachePersistenceLayer',
    version: 'source at v3.2.0+ (see source)',
    redis_client: 'redis-py (any client with get/set(name, value, ex, px, nx)/delete)',
    source: `constructed from ${PYTHON_SRC.repo}@${PYTHON_SRC.commit} ${PYTHON_SRC.path} (${PYTHON_SRC.note}); values made by python3's json.dumps/hashlib as the library calls them, written with the library's SET commands; next_call decided by reading the source`,
    ...common(),
    settings: { AWS_LAMBDA_FUNCTION_NAME: 'idem-peers-capture', decorated: 'app.lambda_handler', expires_after_seconds: 30, validation_cases: 'event_key_jmespath "orderId", payload_validation_jmespath "amount"' },
    records,
    not_stored: notStoredList,
  };
}

// Qonto idempotent-request (Ruby, Rack middleware)
const QONTO_SRC = { repo: 'qonto/idempotent-request', commit: 'f49386bb9b3f432ab99d10ca4e3841a56000420d', version: '0.2.1' };
const RUBY_MAKER = String.raw`
require "json"; require "oj"
spec = JSON.parse(STDIN.read)
out = spec.map do |c|
  if c["kind"] == "lock"
    { "value" => Time.now.to_f.to_s }                                     # RedisStorage#lock
  else
    big = "a" * 1048576
    resp = c["response"].gsub("@@BIG@@", big)
    { "value" => Oj.dump(status: c["status"], headers: c["headers"], response: Array(resp)) }  # RequestManager#payload
  end
end
puts JSON.generate({ "oj" => Oj::VERSION, "mode" => Oj.default_options[:mode].to_s, "out" => out })
`;

function haveRubyOj() {
  try { execFileSync('ruby', ['-roj', '-e', '1'], { stdio: 'ignore' }); return true; } catch { return false; }
}

async function captureQonto() {
  const EXPIRE = 86400; // README: expire_time: 1.day
  const ns = (k) => ['idempotency_keys', k.trim()].join(':').toLowerCase(); // RedisStorage#namespaced_key
  const spec = [
    { id: 'live', kind: 'lock' },
    { id: 'orphan', kind: 'lock' },
    { id: 'orphan_nottl', kind: 'lock' },
    { id: 'done', kind: 'record', status: 201, headers: { 'content-type': 'application/json; charset=utf-8' }, response: '{"id":42,"status":"charged"}' },
    { id: 'big', kind: 'record', status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, response: '{"id":43,"blob":"@@BIG@@"}' },
    { id: 'both', kind: 'record', status: 201, headers: { 'content-type': 'application/json; charset=utf-8' }, response: '{"id":44,"status":"charged"}' },
    { id: 'both_lock', kind: 'lock' },
  ];
  const made = JSON.parse(execFileSync('ruby', ['-e', RUBY_MAKER], { input: JSON.stringify(spec), maxBuffer: 64 * MB }).toString());
  const v = Object.fromEntries(spec.map((c, i) => [c.id, made.out[i].value]));
  const K = {
    live: ns('lock:Qonto-Live-7'), orphan: ns('lock:qonto-orphan-8'), orphan_nottl: ns('lock:qonto-orphan-9'),
    done: ns('Qonto-Done-10'), big: ns('qonto-big-11'), both: ns('qonto-both-12'), both_lock: ns('lock:qonto-both-12'),
  };
  // setnx_with_expiration: SET key data NX [EX expire_time]
  const setnx = (k, val, ex) => raw.sendCommand(ex > 0 ? ['SET', k, val, 'NX', 'EX', String(ex)] : ['SET', k, val, 'NX']);
  for (const id of ['live', 'orphan', 'done', 'big', 'both', 'both_lock']) await setnx(K[id], v[id], EXPIRE);
  await setnx(K.orphan_nottl, v.orphan_nottl, 0);
  await sleep(200);
  const S = {};
  for (const id of Object.keys(K)) [S[id]] = await snapScene([K[id]]);
  const L = (status, next_call, response, notes) => ({ status, next_call, response, notes });
  const records = [
    record('live lock (request in flight)', S.live, L('none', 'blocked', 'HTTP 429 {"error":"Concurrent requests detected"}',
      'only the lock key exists: read finds no record, SET NX on the lock fails -> concurrent_request_response (status conflict_response_status, default 429)')),
    record('orphaned lock (process killed between lock and unlock)', S.orphan, L('none', 'blocked', 'HTTP 429 {"error":"Concurrent requests detected"}',
      'the lock is removed only by the ensure block after the app returns; a killed process leaves it until its EX (expire_time) ends: every retry gets 429 meanwhile')),
    record('orphaned lock of a storage without expire_time (no TTL)', S.orphan_nottl, L('none', 'blocked', 'HTTP 429 {"error":"Concurrent requests detected"}',
      'RedisStorage without expire_time sets no EX: an orphaned lock blocks the key forever')),
    record('completed, small response', S.done, L('none', 'replay', 'HTTP 201 {"id":42,"status":"charged"}',
      'the record (Oj object mode: ":status", ":headers", ":response") is read first and replayed as [status, headers, response]; no status word')),
    record('completed, 1 MB response', S.big, L('none', 'replay', `HTTP 200 {"id":43,"blob":"${BIG}"}`, 'response is a one-element array holding the 1 MB body')),
    record('payload mismatch against a completed record', S.done, L('none', 'replay', 'HTTP 201 {"id":42,"status":"charged"}',
      'no fingerprint: any request with the same key (and a policy that says should?) gets the stored response, whatever its body')),
    record('completed record with a leftover lock: the record', S.both, L('none', 'replay', 'HTTP 201 {"id":44,"status":"charged"}',
      'read_idempotent_request comes before the lock: a stored response wins over a lock')),
    record('completed record with a leftover lock: the lock', S.both_lock, L('none', 'not_a_record', 'not read while the record exists',
      'lock keys are idempotency_keys:lock:<key>, value Time.now.to_f as text; unlock DELetes it')),
  ];
  const notStoredList = [
    notStored('error response (status outside 200..226) or exception', ns('qonto-fail-13'), L('none', 'runs', 'the app runs again',
      'RequestManager#write stores only 200..226; the ensure block DELetes the lock either way: nothing is left')),
  ];
  return {
    profile: 'idempotent-request',
    library: 'idempotent-request (Ruby gem, Qonto)',
    version: QONTO_SRC.version,
    redis_client: 'redis-rb (RedisStorage.new(redis, expire_time:, namespace:))',
    source: `constructed from ${QONTO_SRC.repo}@${QONTO_SRC.commit} lib/idempotent-request/redis_storage.rb, request_manager.rb, middleware.rb; values made by Ruby Oj ${made.oj} (default mode ${made.mode}) and Time.now.to_f as the gem calls them; next_call decided by reading the source`,
    ...common(),
    settings: { namespace: 'idempotency_keys (default)', expire_time_s: EXPIRE, header: 'Idempotency-Key (HTTP_IDEMPOTENCY_KEY)', conflict_response_status: '429 (default)' },
    records,
    not_stored: notStoredList,
  };
}

// Apache Camel camel-spring-redis idempotent repositories (Java)
const CAMEL_SRC = {
  repo: 'apache/camel',
  commit: '0314cedbfa0fbdea0360450f2a6af1746cc488be',
  dir: 'components/camel-spring-parent/camel-spring-redis/src/main/java/org/apache/camel/component/redis',
};

// java.io.ObjectOutputStream of one String (JdkSerializationRedisSerializer): magic, version, TC_STRING, u16 length, bytes
function jdkString(s) {
  const b = Buffer.from(s, 'utf8');
  const len = Buffer.alloc(2);
  len.writeUInt16BE(b.length);
  return Buffer.concat([Buffer.from([0xac, 0xed, 0x00, 0x05, 0x74]), len, b]);
}

async function captureCamel() {
  // SpringRedisIdempotentRepository: SADD repositoryName messageId (after SISMEMBER), no TTL
  await raw.sendCommand(['SADD', 'camel-orders', 'order-1001']);
  await raw.sendCommand(['SADD', 'camel-orders', 'order-1002']);
  // SpringRedisStringIdempotentRepository: SET repositoryName:messageId messageId NX [EX expiry]
  await raw.sendCommand(['SET', 'camel-payments:pay-2001', 'pay-2001', 'EX', '3600', 'NX']);
  // The same two with Camel's default template (JdkSerializationRedisSerializer for keys and values)
  await raw.sendCommand(['SADD', jdkString('camel-orders-jdk'), jdkString('order-1001')]);
  await raw.sendCommand(['SET', jdkString('camel-payments-jdk:pay-2001'), jdkString('pay-2001'), 'NX']);
  const [setS] = await snapScene(['camel-orders']);
  const [strS] = await snapScene(['camel-payments:pay-2001']);
  const [setJ] = await snapScene([jdkString('camel-orders-jdk')]);
  const [strJ] = await snapScene([jdkString('camel-payments-jdk:pay-2001')]);
  const L = (next_call, response, notes) => ({ status: 'none', next_call, response, notes });
  const records = [
    record('message-id set (SpringRedisIdempotentRepository, StringRedisSerializer template)', setS, L('not_a_record',
      'a message whose id is a member is a duplicate: the idempotent consumer skips it (no stored response)',
      'one SET per repository holding every processed (or, eagerly, in-process) message id; no TTL, no states; removeOnFailure SREMs the id of a failed exchange; clear() is FLUSHDB')),
    record('message-id key (SpringRedisStringIdempotentRepository, expiry 3600 s)', strS, L('not_a_record',
      'a message whose key exists is a duplicate and is skipped',
      'SET <repositoryName>:<messageId> <messageId> NX [EX expiry]; value is the id itself; no states; clear() SCAN+DELs *<repositoryName>:*')),
    record('message-id set with Camel\'s default template (JDK serialization)', setJ, L('not_a_record',
      'a message whose (serialized) id is a member is a duplicate: the idempotent consumer skips it (no stored response)', 'the default RedisConfiguration template serializes keys and members with JdkSerializationRedisSerializer: binary (AC ED 00 05 74 <u16 len> <bytes>)')),
    record('message-id key with Camel\'s default template (JDK serialization, no expiry)', strJ, L('not_a_record',
      'a message whose (serialized) key exists is a duplicate and is skipped', 'binary key and value; without setExpiry the key has no TTL')),
  ];
  return {
    profile: 'camel-redis',
    library: 'Apache Camel camel-spring-redis idempotent repositories (Java)',
    version: `source at ${CAMEL_SRC.commit}`,
    redis_client: 'Spring Data Redis RedisTemplate (Jedis by default)',
    source: `constructed from ${CAMEL_SRC.repo}@${CAMEL_SRC.commit} ${CAMEL_SRC.dir}/processor/idempotent/SpringRedis{,String}IdempotentRepository.java and RedisConfiguration.java; written with the commands the repositories send; next_call decided by reading the source`,
    ...common(),
    records,
    not_stored: [],
  };
}

// =============================================================================================
const want = (p) => ONLY.length === 0 || ONLY.includes(p);
const failures = [];
async function run(name, fn, precondition = () => true, missing = '') {
  if (!want(name)) return;
  if (!precondition()) {
    log(`SKIPPED ${name}: ${missing}; the existing ${name}.json (if any) is left as it is`);
    return;
  }
  log(`capturing ${name} ...`);
  try {
    await raw.flushDb();
    writeProfile(await fn());
  } catch (e) {
    failures.push(name);
    console.error(`[capture] ${name} FAILED:`, e);
  }
}

await run('powertools', capturePowertools);
await run('node-idempotency', captureNodeIdempotency);
await run('express-idempotency', captureExpressIdempotency);
await run('powertools-python', capturePowertoolsPython, havePython, 'python3 is not on PATH');
await run('idempotent-request', captureQonto, haveRubyOj, 'ruby with the oj gem is missing (apt-get install ruby-oj)');
await run('camel-redis', captureCamel);
await raw.quit();
if (failures.length) {
  console.error(`[capture] failed: ${failures.join(', ')}`);
  process.exit(1);
}
log('done');
process.exit(0);
