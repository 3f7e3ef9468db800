// node_redis_check.js PORT -- node-redis 6 (npm "redis"), default options,
// against a running sluiced: it opens with HELLO 3 (RESP3), so it must
// connect, throttle, run a MULTI/EXEC transaction and read RESP3's null,
// map and verbatim string. Run by test_resp3.py.
const { createClient } = require("redis");
const assert = require("assert");

(async () => {
  const c = createClient({ url: "redis://127.0.0.1:" + process.argv[2] });
  c.on("error", (e) => { console.error("FAILED: client error", e); process.exit(1); });
  await c.connect();
  const hello = await c.sendCommand(["HELLO"]);
  assert.strictEqual(hello.proto, 3, "node-redis 6 speaks RESP3: " + JSON.stringify(hello));
  assert.strictEqual(hello.server, "sluice");
  assert.strictEqual(await c.ping(), "PONG");
  assert.deepStrictEqual(await c.sendCommand(["CL.THROTTLE", "nr", "9", "1", "60"]), [0, 10, 9, -1, 60]);
  const res = await c.multi()
    .addCommand(["CL.THROTTLE", "nr", "9", "1", "60"])
    .addCommand(["SL.CHECK", "per_user", "nr"])
    .exec();
  assert.deepStrictEqual(res[0], [0, 10, 8, -1, 120]);
  assert.deepStrictEqual(res[1].slice(0, 3), [1, 5, 4]);
  assert.deepStrictEqual(await c.sendCommand(["CL.THROTTLE", "nr", "9", "1", "60", "0"]),
                         [0, 10, 8, -1, 120]); // the transaction charged once each
  assert.strictEqual(await c.clientGetName(), null);
  assert.deepStrictEqual(await c.configGet("maxclients"), {});
  assert.match(await c.info("server"), /^# Server\r\nredis_version:/);
  await assert.rejects(c.sendCommand(["SL.CHECK", "nope", "k"]), /no policy named 'nope'/);
  await c.quit();
  console.log("node-redis 6: HELLO 3, PING, CL.THROTTLE, MULTI/EXEC, null, map, INFO, error reply: ok");
})().catch((e) => { console.error("FAILED", e); process.exit(1); });
