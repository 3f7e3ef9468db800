// node_client.js CLIENT PORT PREFIX scenario | auth PASSWORD -- the client
// matrix's scenario run by a Node client: CLIENT is "ioredis" or
// "node-redis" (redis 6, RESP3 by default: it opens with HELLO 3).
// Prints one JSON object: each step's reply or {"error": "..."}; the Python
// test (test_client_matrix.py) holds the expected values. The clients come
// from tests/integration/node/node_modules (scripts/deps.sh test).
const [client, port, prefix, mode, password] = process.argv.slice(2);
const key = (k) => `${prefix}:${k}`;
const out = {};
// What the client reported on its "error" event: ioredis refuses a server
// that answers its ready check (INFO) with NOAUTH there, then fails the
// command with "Connection is closed."
let lastError = null;

async function step(name, fn) {
  lastError = null;
  try {
    out[name] = await fn();
  } catch (e) {
    const text = String(e && e.message ? e.message : e);
    out[name] = { error: lastError && /Connection is closed/.test(text) ? lastError : text };
  }
}

// One interface over both clients: call(args), multi(list of args), discard.
async function connect(withPassword) {
  if (client === "ioredis") {
    const Redis = require("ioredis");
    const r = new Redis({ port: Number(port), host: "127.0.0.1", lazyConnect: true,
                          maxRetriesPerRequest: 0, enableOfflineQueue: false,
                          retryStrategy: () => null, password: withPassword ? password : undefined });
    r.on("error", (e) => { lastError = e.message; });
    await r.connect();
    return {
      call: (args) => r.call(...args),
      multi: async (cmds) => {
        const m = r.multi();
        for (const c of cmds) m.call(...c);
        const res = await m.exec();
        return res.map(([e, v]) => (e ? { error: e.message } : v));
      },
      discard: async (cmds) => {
        // multi({ pipeline: false }) sends MULTI now; commands answer QUEUED
        await r.multi({ pipeline: false });
        for (const c of cmds) await r.call(...c);
        return await r.discard();
      },
      close: () => r.disconnect(),
    };
  }
  const { createClient } = require("redis");
  const url = withPassword ? `redis://default:${password}@127.0.0.1:${port}` : `redis://127.0.0.1:${port}`;
  const r = createClient({ url, socket: { reconnectStrategy: false } });
  r.on("error", () => {});
  await r.connect();
  return {
    call: (args) => r.sendCommand(args.map(String)),
    multi: async (cmds) => {
      const m = r.multi();
      for (const c of cmds) m.addCommand(c.map(String));
      return await m.exec();
    },
    discard: async (cmds) => {
      // node-redis queues MULTI client side; DISCARD goes by hand on an isolated connection
      await r.sendCommand(["MULTI"]);
      for (const c of cmds) await r.sendCommand(c.map(String));
      return await r.sendCommand(["DISCARD"]);
    },
    close: () => r.destroy(),
  };
}

(async () => {
  if (mode === "auth") {
    await step("noauth", async () => {
      const c = await connect(false);
      try { return await c.call(["CL.THROTTLE", key("a"), 1, 1, 60]); } finally { c.close(); }
    });
    await step("authed", async () => {
      const c = await connect(true);
      try { return await c.call(["CL.THROTTLE", key("a"), 1, 1, 60]); } finally { c.close(); }
    });
  } else {
    let c;
    await step("ping", async () => { c = await connect(false); return await c.call(["PING"]); });
    if (c) {
      await step("throttle", async () => {
        const res = [];
        for (let i = 0; i < 3; i++) res.push(await c.call(["CL.THROTTLE", key("k"), 1, 1, 60]));
        return res;
      });
      const t = ["CL.THROTTLE", key("t"), 5, 1, 60];
      await step("multi", () => c.multi([t, t]));
      await step("after_multi", () => c.call(t));
      const d = ["CL.THROTTLE", key("d"), 5, 1, 60];
      await step("discard", () => c.discard([d]));
      await step("after_discard", () => c.call(d));
      await step("del", () => c.call(["DEL", key("k")]));
      await step("after_del", () => c.call(["CL.THROTTLE", key("k"), 1, 1, 60]));
      c.close();
    }
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error("FAILED", e); process.exit(1); });
