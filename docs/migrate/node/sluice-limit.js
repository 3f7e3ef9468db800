// sluice-limit.js -- ask sluiced before serving a request, from Node (18 or
// later: the built-in fetch), with no npm dependency. For express-rate-limit
// and rate-limiter-flexible users; docs/migrate/node.md explains the mapping.
//
//   check(options)       one decision: POST /v1/check, resolves to sluiced's
//                        answer ({allowed, limit, remaining, retry_after_ms, ...})
//                        plus its rate limit headers; rejects if sluiced cannot
//                        be asked (down, or slower than timeoutMs)
//   sluiceLimit(options) a connect/express middleware (req, res, next): passes
//                        the request on (after delay_ms, for a shaper policy),
//                        or answers 429 with Retry-After
//
// options: policy (required); url of sluiced's HTTP front; key(req) for a
// policy keyed by [key], or attributes(req) for one keyed by request
// attributes (default: {ip: the client address}, for key: [ip]); cost;
// timeoutMs (default 1000; a process's first call also loads Node's fetch);
// failOpen (serve when sluiced cannot answer; default false: 503).
'use strict';

const HEADERS = ['ratelimit', 'ratelimit-policy', 'x-ratelimit-limit', 'x-ratelimit-remaining',
                 'x-ratelimit-reset', 'retry-after'];

async function check({url = 'http://127.0.0.1:8090', policy, key, attributes, cost = 1, timeoutMs = 1000}) {
  const body = key !== undefined ? {policy, key: String(key), cost} : {policy, attributes, cost};
  const r = await fetch(url + '/v1/check', {
    method: 'POST',
    headers: {'content-type': 'application/json'},
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const answer = await r.json();
  if (r.status !== 200 && r.status !== 429) {  // unknown policy, bad key, store failing
    throw new Error(`sluiced answered ${r.status}: ${answer.message || answer.error}`);
  }
  answer.headers = {};
  for (const h of HEADERS) {
    if (r.headers.has(h)) answer.headers[h] = r.headers.get(h);
  }
  return answer;
}

function clientAddress(req) {
  return req.ip || req.socket.remoteAddress;  // express's req.ip follows its 'trust proxy' setting
}

function sluiceLimit({key, attributes = (req) => ({ip: clientAddress(req)}), failOpen = false, ...rest}) {
  return async function (req, res, next) {
    let answer;
    try {
      answer = await check({...rest, key: key && key(req), attributes: key ? undefined : attributes(req)});
    } catch (err) {
      if (failOpen) return next();
      res.statusCode = 503;
      return res.end();
    }
    for (const [h, v] of Object.entries(answer.headers)) res.setHeader(h, v);
    req.rateLimit = answer;  // as express-rate-limit's req.rateLimit
    if (answer.allowed) {
      // a leaky_bucket shaper admits with a delay: hold the request that long (execEvenly)
      return answer.delay_ms > 0 ? setTimeout(next, answer.delay_ms) : next();
    }
    res.statusCode = 429;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({error: 'rate_limited', retry_after_ms: answer.retry_after_ms}) + '\n');
  };
}

module.exports = {check, sluiceLimit};
