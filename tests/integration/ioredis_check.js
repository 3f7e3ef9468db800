// ioredis_check.js PORT -- ioredis (npm) against a running sluiced: it must
// connect (ioredis checks INFO before it is ready), run commands and a
// pipeline, and surface error replies as errors.
const Redis = require("ioredis");
const assert = require("assert");

(async () => {
  const r = new Redis({ port: Number(process.argv[2]), host: "127.0.0.1", maxRetriesPerRequest: 1 });
  assert.strictEqual(await r.ping(), "PONG");
  assert.deepStrictEqual(await r.call("CL.THROTTLE", "user123", 15, 30, 60), [0, 16, 15, -1, 2]);
  const check = await r.call("SL.CHECK", "per_user", "alice");
  assert.strictEqual(check.length, 8);
  assert.strictEqual(check[0], 1);
  const p = r.pipeline();
  for (let i = 0; i < 100; i++) p.call("SL.CHECK", "per_user", "bob");
  const res = await p.exec();
  assert.strictEqual(res.filter(([e, v]) => !e && v[0] === 1).length, 100);
  await assert.rejects(r.call("SL.CHECK", "nope", "k"), /no policy named 'nope'/);
  r.disconnect();
  console.log("ioredis: connect, PING, CL.THROTTLE, SL.CHECK, pipeline of 100, error reply: ok");
})().catch((e) => { console.error("FAILED", e); process.exit(1); });
