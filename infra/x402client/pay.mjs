// pay.mjs pays one of the service's x402 endpoints the way any agent would:
// with the official TypeScript client (@x402/fetch, @x402/evm and viem, at the
// versions package-lock.json pins), unmodified, and prints what happened as
// one JSON object. It is the agent rail's interoperability test's client (run
// from Go by this directory's package) and `make x402-pay`'s.
//
//   node infra/x402client/pay.mjs [options] <url> ['<json body>']
//
//   (no option)        the client pays: first request, 402, signed retry
//   --twice            the client's signed retry is sent twice at once
//   --replay <header>  a captured PAYMENT-SIGNATURE header sent again as is,
//                      without the client (which would sign a fresh one)
//   --network <caip2>  the client pays only on this network (eip155:84532)
//   --timeout <ms>     gives up after this long (default 120000)
//
// The key is X402_PRIVATE_KEY (0x and 64 hex digits) or a fresh random one.
// A body makes the request a POST of JSON. The output:
//
//   {status, body, paymentResponse (PAYMENT-RESPONSE decoded),
//    paymentRequired (PAYMENT-REQUIRED decoded, on a 402), location,
//    retryAfter, paymentSignature (the header the client sent, captured by
//    wrapping fetch), payer, answers (with --twice: both answers)}
//
// It exits 0 whatever the status, 1 when no answer came (the reason on
// stderr), 2 on a usage error.
import { parseArgs } from "node:util";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

const usage =
  "usage: node pay.mjs [--twice] [--replay <PAYMENT-SIGNATURE>] [--network <caip2>] [--timeout <ms>] <url> ['<json body>']";

function fail(code, message) {
  process.stderr.write(`pay.mjs: ${message}\n`);
  process.exit(code);
}

let args;
try {
  args = parseArgs({
    allowPositionals: true,
    options: {
      twice: { type: "boolean", default: false },
      replay: { type: "string" },
      network: { type: "string" },
      timeout: { type: "string", default: "120000" },
    },
  });
} catch (err) {
  fail(2, `${err.message}\n${usage}`);
}
const { values: opts, positionals } = args;
if (positionals.length < 1 || positionals.length > 2) {
  fail(2, usage);
}
const [url, body] = positionals;
const timeoutMs = Number(opts.timeout);
if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
  fail(2, `--timeout wants milliseconds, not ${JSON.stringify(opts.timeout)}`);
}

let account;
try {
  account = privateKeyToAccount(process.env.X402_PRIVATE_KEY || generatePrivateKey());
} catch (err) {
  fail(2, `X402_PRIVATE_KEY is not a private key (0x and 64 hex digits): ${err.message}`);
}

const client = new x402Client();
registerExactEvmScheme(client, { signer: account, ...(opts.network ? { networks: [opts.network] } : {}) });
const httpClient = new x402HTTPClient(client);

// decoded returns what decode makes of a header, or the error and the header
// itself when it cannot be decoded: a garbled header is a finding, not a crash.
function decoded(header, decode) {
  try {
    return decode(header);
  } catch (err) {
    return { undecodable: header, error: err.message };
  }
}

// summary reads an answer whole: its status, body (JSON when it is JSON) and
// x402 headers decoded.
async function summary(res) {
  const text = await res.text();
  const out = { status: res.status };
  try {
    out.body = JSON.parse(text);
  } catch {
    out.body = text;
  }
  const header = (name) => res.headers.get(name);
  if (header("PAYMENT-RESPONSE")) {
    out.paymentResponse = decoded(header("PAYMENT-RESPONSE"), decodePaymentResponseHeader);
  }
  if (header("PAYMENT-REQUIRED")) {
    out.paymentRequired = decoded(header("PAYMENT-REQUIRED"), () => httpClient.getPaymentRequiredResponse(header));
  }
  if (header("Location")) out.location = header("Location");
  if (header("Retry-After")) out.retryAfter = header("Retry-After");
  return { out, text, status: res.status, headers: res.headers };
}

// payerOf is the authorization's signer named in a PAYMENT-SIGNATURE header,
// or null when the header is not one.
function payerOf(header) {
  try {
    return JSON.parse(Buffer.from(header, "base64").toString("utf8")).payload.authorization.from ?? null;
  } catch {
    return null;
  }
}

function request(extraHeaders) {
  const init = { signal: AbortSignal.timeout(timeoutMs), headers: { ...extraHeaders } };
  if (body !== undefined) {
    init.method = "POST";
    init.body = body;
    init.headers["Content-Type"] = "application/json";
  }
  return new Request(url, init);
}

// send sends req once, or with twice two copies of it at once, and reads the
// answers: the first is the one the caller gets.
async function send(req, twice) {
  if (!twice) {
    return [await summary(await fetch(req))];
  }
  const both = await Promise.all([fetch(req.clone()), fetch(req.clone())]);
  return Promise.all(both.map(summary));
}

let result;
try {
  if (opts.replay !== undefined) {
    const answers = await send(request({ "PAYMENT-SIGNATURE": opts.replay }), opts.twice);
    result = { ...answers[0].out, paymentSignature: opts.replay, payer: payerOf(opts.replay) };
    if (opts.twice) result.answers = answers.map((a) => a.out);
  } else {
    // The client is the published one; only the fetch it is given is ours,
    // to see the PAYMENT-SIGNATURE it sends and, with --twice, send it twice.
    const signed = [];
    let answers = [];
    const watchingFetch = async (input, init) => {
      const req = new Request(input, init);
      const signature = req.headers.get("PAYMENT-SIGNATURE");
      if (signature === null) {
        return fetch(req);
      }
      signed.push(signature);
      answers = await send(req, opts.twice);
      const first = answers[0];
      const bodyless = [204, 205, 304].includes(first.status);
      return new Response(bodyless ? null : first.text, { status: first.status, headers: first.headers });
    };
    const res = await wrapFetchWithPayment(watchingFetch, client)(request({}));
    const last = await summary(res);
    result = { ...last.out, paymentSignature: signed.at(-1) ?? null, payer: account.address };
    if (signed.length > 1) result.paymentSignatures = signed;
    if (opts.twice) result.answers = answers.map((a) => a.out);
  }
} catch (err) {
  fail(1, `${url}: ${err.cause ? `${err.message}: ${err.cause.message ?? err.cause}` : err.message}`);
}
process.stdout.write(JSON.stringify(result, null, 2) + "\n");
