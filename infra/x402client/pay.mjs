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
//   --payment-id <id>  the client adds the payment-identifier extension with
//                      this id (16-128 of [A-Za-z0-9_-]) to a payment whose
//                      402 declares it, as x402's example client does
//   --retry            after the first answer, the very same signed request
//                      (or --replay's) is sent once more: an agent retrying
//                      after a lost answer
//   --retries <n>      ... n more times, one after another
//   --concurrent       ... the n retries all at once
//   --timeout <ms>     gives up after this long (default 120000)
//
// The key is X402_PRIVATE_KEY (0x and 64 hex digits) or a fresh random one.
// A body makes the request a POST of JSON. The output:
//
//   {status, body, paymentResponse (PAYMENT-RESPONSE decoded),
//    paymentRequired (PAYMENT-REQUIRED decoded, on a 402), location,
//    retryAfter, paymentSignature (the header the client sent, captured by
//    wrapping fetch), payer, paymentId (the payment-identifier id in that
//    header, or null), answers (with --twice or retries: every answer to the
//    signed request, in the order sent, the client's first)}
//
// It exits 0 whatever the status, 1 when no answer came (the reason on
// stderr), 2 on a usage error.
import { parseArgs } from "node:util";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402HTTPClient } from "@x402/fetch";
import { UsageError, account, paymentClient, paymentIdOf, run } from "./payer.mjs";

const usage =
  "usage: node pay.mjs [--twice] [--replay <PAYMENT-SIGNATURE>] [--network <caip2>] [--payment-id <id>] [--retry | --retries <n> [--concurrent]] [--timeout <ms>] <url> ['<json body>']";

// decoded returns what decode makes of a header, or the error and the header
// itself when it cannot be decoded: a garbled header is a finding, not a crash.
function decoded(header, decode) {
  try {
    return decode(header);
  } catch (err) {
    return { undecodable: header, error: err.message };
  }
}

// signedPayload is the PaymentPayload in a PAYMENT-SIGNATURE header, or null
// when the header is not one.
function signedPayload(header) {
  try {
    return JSON.parse(Buffer.from(header, "base64").toString("utf8"));
  } catch {
    return null;
  }
}

await run("pay.mjs", usage, async () => {
  let args;
  try {
    args = parseArgs({
      allowPositionals: true,
      options: {
        twice: { type: "boolean", default: false },
        replay: { type: "string" },
        network: { type: "string" },
        "payment-id": { type: "string" },
        retry: { type: "boolean", default: false },
        retries: { type: "string" },
        concurrent: { type: "boolean", default: false },
        timeout: { type: "string", default: "120000" },
      },
    });
  } catch (err) {
    throw new UsageError(err.message);
  }
  const { values: opts, positionals } = args;
  if (positionals.length < 1 || positionals.length > 2) {
    throw new UsageError("a URL and at most one body, please");
  }
  const [url, body] = positionals;
  const timeoutMs = Number(opts.timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new UsageError(`--timeout wants milliseconds, not ${JSON.stringify(opts.timeout)}`);
  }
  if (opts.retry && opts.retries !== undefined) {
    throw new UsageError("--retry is --retries 1: one or the other");
  }
  const retries = opts.retry ? 1 : Number(opts.retries ?? 0);
  if (!Number.isInteger(retries) || retries < 0) {
    throw new UsageError(`--retries wants a count, not ${JSON.stringify(opts.retries)}`);
  }
  if (opts.concurrent && retries < 1) {
    throw new UsageError("--concurrent sends the retries at once: it wants --retries");
  }

  const payer = account();
  const client = paymentClient(payer, { network: opts.network, paymentId: opts["payment-id"] });
  const httpClient = new x402HTTPClient(client);

  // summary reads an answer whole: its status, body (JSON when it is JSON)
  // and x402 headers decoded.
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

  function request(extraHeaders) {
    const init = { signal: AbortSignal.timeout(timeoutMs), headers: { ...extraHeaders } };
    if (body !== undefined) {
      init.method = "POST";
      init.body = body;
      init.headers["Content-Type"] = "application/json";
    }
    return new Request(url, init);
  }

  // send sends a copy of req once (or with --twice two at once), then, after
  // the answer, the retries: one after another, or with --concurrent all at
  // once. The answers come in the order sent; the first is the client's.
  async function send(req) {
    const copies = (n) => Promise.all(Array.from({ length: n }, async () => summary(await fetch(req.clone()))));
    const answers = await copies(opts.twice ? 2 : 1);
    if (opts.concurrent) {
      answers.push(...(await copies(retries)));
    } else {
      for (let i = 0; i < retries; i++) answers.push(...(await copies(1)));
    }
    return answers;
  }
  const everyAnswer = opts.twice || retries > 0;

  try {
    return await (opts.replay !== undefined ? replay() : pay());
  } catch (err) {
    err.message = `${url}: ${err.message}`;
    throw err;
  }

  async function replay() {
    const answers = await send(request({ "PAYMENT-SIGNATURE": opts.replay }));
    const payload = signedPayload(opts.replay);
    return {
      ...answers[0].out,
      paymentSignature: opts.replay,
      payer: payload?.payload?.authorization?.from ?? null,
      paymentId: paymentIdOf(payload),
      ...(everyAnswer ? { answers: answers.map((a) => a.out) } : {}),
    };
  }

  // The client is the published one; only the fetch it is given is ours, to
  // see the PAYMENT-SIGNATURE it sends and send that again as asked.
  async function pay() {
    const signed = [];
    let answers = [];
    const watchingFetch = async (input, init) => {
      const req = new Request(input, init);
      const signature = req.headers.get("PAYMENT-SIGNATURE");
      if (signature === null) {
        return fetch(req);
      }
      signed.push(signature);
      answers = await send(req);
      const first = answers[0];
      const bodyless = [204, 205, 304].includes(first.status);
      return new Response(bodyless ? null : first.text, { status: first.status, headers: first.headers });
    };
    const last = await summary(await wrapFetchWithPayment(watchingFetch, client)(request({})));
    const signature = signed.at(-1) ?? null;
    return {
      ...last.out,
      paymentSignature: signature,
      payer: payer.address,
      paymentId: signature === null ? null : paymentIdOf(signedPayload(signature)),
      ...(signed.length > 1 ? { paymentSignatures: signed } : {}),
      ...(everyAnswer ? { answers: answers.map((a) => a.out) } : {}),
    };
  }
});
