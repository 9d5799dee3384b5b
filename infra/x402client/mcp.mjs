// mcp.mjs buys a paid MCP tool the way any agent would: with the official MCP
// client (@modelcontextprotocol/sdk's Client over StreamableHTTPClientTransport)
// and the official x402 client (x402Client with @x402/evm's exact scheme),
// following x402's own MCP client (typescript/packages/mcp/src/client:
// x402MCPClient.callTool) step by step, and prints one JSON object:
//
//   node infra/x402client/mcp.mjs [options] <mcp endpoint url> <tool> ['<json arguments>']
//
//   --payment-id <id>  the payment carries the payment-identifier extension
//   --retry            the paid call is sent once more with the very same
//                      payment, after its answer (a retry after a lost answer)
//   --retries <n>      ... n more times, one after another
//   --concurrent       ... the n retries all at once
//   --network <caip2>  the client pays only on this network (eip155:84532)
//   --timeout <ms>     each request gives up after this long (default 120000)
//
// The steps: connect (initialize), tools/list, tools/call without payment;
// the result must be x402's payment-required result (isError true, the
// PaymentRequired in structuredContent and the same JSON in content[0].text);
// the PaymentRequired is read as x402MCPClient reads it (structuredContent
// first, then content[0].text, each accepted only if @x402/core's
// isPaymentRequired says so); x402Client.createPaymentPayload builds the
// payment; tools/call again with _meta["x402/payment"] set to it.
//
// The output: {serverVersion, tools (tools/list's), unpaid (the first
// result), paymentRequired (what the client read, or null), transport
// ({valid, errors}: the unpaid result against x402's MCP transport spec),
// paymentPayload (sent), payer, paymentId, paid (the paid call's result, or
// null when no payment was asked), paymentResponse (paid's
// _meta["x402/payment-response"]), retries (every retry's result, or its
// error)}. The key is X402_PRIVATE_KEY or a fresh one. Exit 0 whatever the
// results, 1 when the server could not be used (the reason on stderr), 2 on
// a usage error.
import { isDeepStrictEqual, parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { isPaymentRequired } from "@x402/core/schemas";
import { UsageError, account, errorText, paymentClient, paymentIdOf, run } from "./payer.mjs";

const usage =
  "usage: node mcp.mjs [--payment-id <id>] [--retry | --retries <n> [--concurrent]] [--network <caip2>] [--timeout <ms>] <mcp url> <tool> ['<json arguments>']";

// The x402 MCP transport's _meta keys (typescript/packages/mcp/src/types).
const paymentKey = "x402/payment";
const paymentResponseKey = "x402/payment-response";

// paymentRequiredOf reads a tool result as x402MCPClient's
// extractPaymentRequiredFromResult does.
function paymentRequiredOf(result) {
  if (!result.isError) return null;
  if (result.structuredContent && isPaymentRequired(result.structuredContent)) {
    return result.structuredContent;
  }
  const first = result.content?.[0];
  if (first?.type !== "text" || typeof first.text !== "string") return null;
  try {
    const parsed = JSON.parse(first.text);
    return isPaymentRequired(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

// transportErrors lists where an unpaid result departs from the spec's
// "Payment Required Signaling": both formats, the same data.
function transportErrors(result) {
  const errors = [];
  if (result.isError !== true) errors.push("isError is not true");
  const structured = result.structuredContent;
  if (!structured || typeof structured !== "object") {
    errors.push("structuredContent is missing");
  } else {
    if (structured.x402Version === undefined) errors.push("structuredContent has no x402Version");
    if (!Array.isArray(structured.accepts)) errors.push("structuredContent has no accepts");
    if (!isPaymentRequired(structured)) errors.push("structuredContent is not a PaymentRequired (@x402/core's isPaymentRequired)");
  }
  const first = result.content?.[0];
  if (first?.type !== "text" || typeof first.text !== "string") {
    errors.push("content[0] is not text");
  } else {
    let parsed;
    try {
      parsed = JSON.parse(first.text);
    } catch {
      errors.push("content[0].text is not JSON");
    }
    if (parsed !== undefined && !isDeepStrictEqual(parsed, structured)) {
      errors.push("content[0].text is not structuredContent's JSON");
    }
  }
  return errors;
}

await run("mcp.mjs", usage, async () => {
  let args;
  try {
    args = parseArgs({
      allowPositionals: true,
      options: {
        "payment-id": { type: "string" },
        retry: { type: "boolean", default: false },
        retries: { type: "string" },
        concurrent: { type: "boolean", default: false },
        network: { type: "string" },
        timeout: { type: "string", default: "120000" },
      },
    });
  } catch (err) {
    throw new UsageError(err.message);
  }
  const { values: opts, positionals } = args;
  if (positionals.length < 2 || positionals.length > 3) {
    throw new UsageError("an MCP endpoint, a tool and at most one set of arguments, please");
  }
  const [url, tool, argsJSON] = positionals;
  let toolArgs = {};
  if (argsJSON !== undefined) {
    try {
      toolArgs = JSON.parse(argsJSON);
    } catch (err) {
      throw new UsageError(`the arguments are not JSON: ${err.message}`);
    }
  }
  const timeout = Number(opts.timeout);
  if (!Number.isInteger(timeout) || timeout <= 0) {
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
  const payments = paymentClient(payer, { network: opts.network, paymentId: opts["payment-id"] });

  const client = new Client({ name: "oracle-interop", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const options = { timeout };
  try {
    await client.connect(transport, options);
  } catch (err) {
    throw new Error(`${url}: connecting: ${errorText(err)}`);
  }
  try {
    const { tools } = await client.listTools(undefined, options);
    const unpaid = await client.callTool({ name: tool, arguments: toolArgs }, undefined, options);
    const paymentRequired = paymentRequiredOf(unpaid);
    const report = {
      serverVersion: client.getServerVersion() ?? null,
      tools,
      unpaid,
      // A copy: the payment-identifier hook writes the id into the one the
      // client pays, as x402's example client does.
      paymentRequired: structuredClone(paymentRequired),
      transport: null,
      paymentPayload: null,
      payer: payer.address,
      paymentId: null,
      paid: null,
      paymentResponse: null,
      retries: [],
    };
    if (paymentRequired === null) {
      return report;
    }
    const errors = transportErrors(unpaid);
    report.transport = { valid: errors.length === 0, errors };
    const paymentPayload = await payments.createPaymentPayload(paymentRequired);
    report.paymentPayload = paymentPayload;
    report.paymentId = paymentIdOf(paymentPayload);
    // x402MCPClient.callToolWithPayment's call: the payload in _meta.
    const call = () => client.callTool({ name: tool, arguments: toolArgs, _meta: { [paymentKey]: paymentPayload } }, undefined, options);
    report.paid = await call();
    report.paymentResponse = report.paid._meta?.[paymentResponseKey] ?? null;
    const again = async () => {
      try {
        return await call();
      } catch (err) {
        return { error: errorText(err) };
      }
    };
    if (opts.concurrent) {
      report.retries = await Promise.all(Array.from({ length: retries }, again));
    } else {
      for (let i = 0; i < retries; i++) report.retries.push(await again());
    }
    return report;
  } catch (err) {
    throw new Error(`${url}: ${errorText(err)}`);
  } finally {
    await client.close();
  }
});
