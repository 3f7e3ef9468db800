// grpc_js_check.js PORT PROTO_DIR -- Node's @grpc/grpc-js, with the
// messages loaded by @grpc/proto-loader from the in-tree .proto files,
// against a running sluiced's gRPC front (docs/integrations/envoy-rls.md).
// Run by test_grpc_js.py, which starts sluiced on the manual test clock at
// 15 s past a minute with the rules of JS_RULES there (domain "js").
//
// Checks: health (SERVING, NOT_FOUND); ShouldRateLimit with every field of
// the answer (overall_code, statuses with code, current_limit {name,
// requests_per_unit, unit}, limit_remaining, duration_until_reset, the
// headers, request_headers_to_add and raw_body empty), hits_addend, over the
// limit with Retry-After, all or nothing, shadow mode, an unknown domain,
// 50 concurrent calls on one channel admitting exactly the limit; and the
// errors: unknown method, bytes that are no RateLimitRequest, an empty
// domain, no descriptors, a message over max_request_bytes, each with its
// gRPC status while the daemon goes on answering.
const path = require("path");
const assert = require("assert");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const [port, protoDir] = process.argv.slice(2);
const target = "127.0.0.1:" + port;
const load = (file) => grpc.loadPackageDefinition(protoLoader.loadSync(file, {
  includeDirs: [protoDir], keepCase: true, longs: Number, enums: String, defaults: true, arrays: true,
}));
const rlsPkg = load(path.join("envoy", "service", "ratelimit", "v3", "rls.proto"));
const healthPkg = load(path.join("grpc", "health", "v1", "health.proto"));
const rls = new rlsPkg.envoy.service.ratelimit.v3.RateLimitService(target, grpc.credentials.createInsecure());
const health = new healthPkg.grpc.health.v1.Health(target, grpc.credentials.createInsecure());
const raw = new grpc.Client(target, grpc.credentials.createInsecure());

const deadline = () => new Date(Date.now() + 10000);
const call = (client, method, req) => new Promise((resolve, reject) =>
  client[method](req, { deadline: deadline() }, (err, res) => (err ? reject(err) : resolve(res))));
const ask = (req) => call(rls, "ShouldRateLimit", req);
const rawCall = (method, bytes) => new Promise((resolve, reject) =>
  raw.makeUnaryRequest(method, (b) => b, (b) => b, bytes, { deadline: deadline() },
    (err, res) => (err ? reject(err) : resolve(res))));
const RLS = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";

const desc = (pairs, hits) => {
  const d = { entries: pairs.map(([key, value]) => ({ key, value })) };
  if (hits !== undefined) d.hits_addend = { value: hits };
  return d;
};
const headers = (res) => Object.fromEntries(res.response_headers_to_add.map((h) => [h.key, h.value]));

async function expectStatus(promise, code, detail) {
  await assert.rejects(promise, (err) => {
    assert.strictEqual(err.code, code, "status " + err.code + " (" + err.details + "), expected " + code);
    if (detail) assert.match(err.details, detail);
    return true;
  });
}

(async () => {
  // health
  assert.deepStrictEqual(await call(health, "Check", { service: "" }), { status: "SERVING" });
  assert.deepStrictEqual(await call(health, "Check", { service: "envoy.service.ratelimit.v3.RateLimitService" }),
                         { status: "SERVING" });
  await expectStatus(call(health, "Check", { service: "nope" }), grpc.status.NOT_FOUND);

  // every field: 3 a minute named per-user, at 15 s past the minute
  for (const left of [2, 1]) {
    const res = await ask({ domain: "js", descriptors: [desc([["user", "alice"]])] });
    assert.deepStrictEqual(res, {
      overall_code: "OK",
      statuses: [{
        code: "OK",
        current_limit: { name: "per-user", requests_per_unit: 3, unit: "MINUTE" },
        limit_remaining: left,
        duration_until_reset: { seconds: 45, nanos: 0 },
      }],
      response_headers_to_add: [
        { key: "RateLimit-Policy", value: '"per-user";q=3;w=60', raw_value: Buffer.alloc(0) },
        { key: "RateLimit", value: '"per-user";r=' + left + ";t=45", raw_value: Buffer.alloc(0) },
        { key: "X-RateLimit-Limit", value: "3", raw_value: Buffer.alloc(0) },
        { key: "X-RateLimit-Remaining", value: String(left), raw_value: Buffer.alloc(0) },
        { key: "X-RateLimit-Reset", value: "45", raw_value: Buffer.alloc(0) },
      ],
      request_headers_to_add: [],
      raw_body: Buffer.alloc(0),
    });
  }
  // the request's hits_addend: 2 more do not fit in the 1 left, and charge nothing
  let res = await ask({ domain: "js", descriptors: [desc([["user", "alice"]])], hits_addend: 2 });
  assert.strictEqual(res.overall_code, "OVER_LIMIT");
  assert.strictEqual(res.statuses[0].code, "OVER_LIMIT");
  assert.strictEqual(res.statuses[0].limit_remaining, 1);
  assert.strictEqual(headers(res)["Retry-After"], "45");
  // a descriptor's own hits_addend wins over the request's
  res = await ask({ domain: "js", descriptors: [desc([["user", "alice"]], 1)], hits_addend: 5 });
  assert.strictEqual(res.overall_code, "OK");
  assert.strictEqual(res.statuses[0].limit_remaining, 0);
  res = await ask({ domain: "js", descriptors: [desc([["user", "alice"]])] });
  assert.strictEqual(res.overall_code, "OVER_LIMIT");
  assert.deepStrictEqual(res.statuses[0].current_limit, { name: "per-user", requests_per_unit: 3, unit: "MINUTE" });

  // all or nothing: bob is only asked while alice is over
  res = await ask({ domain: "js", descriptors: [desc([["user", "bob"]]), desc([["user", "alice"]])] });
  assert.strictEqual(res.overall_code, "OVER_LIMIT");
  assert.deepStrictEqual(res.statuses.map((s) => [s.code, s.limit_remaining]), [["OK", 3], ["OVER_LIMIT", 0]]);
  res = await ask({ domain: "js", descriptors: [desc([["user", "bob"]])] });
  assert.strictEqual(res.statuses[0].limit_remaining, 2);

  // shadow mode: counted, answered OK; its stat name is the rule's path
  for (let i = 0; i < 3; i++) {
    res = await ask({ domain: "js", descriptors: [desc([["path", "/shadow"]])] });
    assert.strictEqual(res.overall_code, "OK");
    assert.deepStrictEqual(res.statuses[0].current_limit, { name: "js.path_/shadow", requests_per_unit: 1,
                                                            unit: "SECOND" });
  }

  // an unknown domain: OK, no limit, no headers
  res = await ask({ domain: "elsewhere", descriptors: [desc([["user", "x"]])] });
  assert.deepStrictEqual([res.overall_code, res.statuses[0].code, res.statuses[0].current_limit,
                          res.response_headers_to_add], ["OK", "OK", null, []]);

  // 50 calls at once on one channel: exactly the limit passes
  const codes = await Promise.all(Array.from({ length: 50 }, () =>
    ask({ domain: "js", descriptors: [desc([["user", "crowd"]])] }).then((r) => r.overall_code)));
  assert.strictEqual(codes.filter((c) => c === "OK").length, 3);
  assert.strictEqual(codes.filter((c) => c === "OVER_LIMIT").length, 47);

  // errors
  await expectStatus(rawCall("/envoy.service.ratelimit.v3.RateLimitService/Nope", Buffer.alloc(0)),
                     grpc.status.UNIMPLEMENTED);
  await expectStatus(rawCall(RLS, Buffer.from([0xff, 0xff, 0xff, 0xff])), grpc.status.INVALID_ARGUMENT, /malformed/);
  await expectStatus(ask({ domain: "", descriptors: [desc([["user", "x"]])] }), grpc.status.INVALID_ARGUMENT,
                     /domain/);
  await expectStatus(ask({ domain: "js", descriptors: [] }), grpc.status.INVALID_ARGUMENT, /no descriptors/);
  await expectStatus(ask({ domain: "js", descriptors: [desc([["", "x"]])] }), grpc.status.INVALID_ARGUMENT);
  await expectStatus(ask({ domain: "x".repeat(70000), descriptors: [desc([["user", "x"]])] }),
                     grpc.status.RESOURCE_EXHAUSTED);
  // and it goes on answering
  res = await ask({ domain: "js", descriptors: [desc([["user", "after"]])] });
  assert.strictEqual(res.statuses[0].limit_remaining, 2);

  rls.close();
  health.close();
  raw.close();
  console.log("grpc-js: health, every field, hits_addend, over the limit, all or nothing, shadow, "
              + "unknown domain, 50 concurrent, errors: ok");
})().catch((e) => {
  console.error("FAILED:", e);
  process.exit(1);
});
