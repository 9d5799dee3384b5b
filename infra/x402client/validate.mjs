// validate.mjs checks a PaymentRequired (an x402 v2 402) the way the official
// packages read it, and prints one JSON report:
//
//   node infra/x402client/validate.mjs [--timeout <ms>] <url | file | ->
//
//   a URL     is probed as a crawler probes it: POST without a body; the
//             PaymentRequired is what x402HTTPClient reads from the answer
//   a file    (or - for stdin) holds the PaymentRequired as JSON, e.g. an MCP
//             tool's structuredContent
//
// The checks, each with @x402/core's or @x402/extensions' own functions:
//   paymentRequired    PaymentRequiredSchema (@x402/core/schemas)
//   bazaar             validateDiscoveryExtension (info against its schema),
//                      validateDiscoveryExtensionSpec (the protocol's rules),
//                      the schema's dialect (JSON Schema 2020-12), and
//                      extractDiscoveryInfo on the PaymentPayload the official
//                      client builds for this 402, as a Bazaar facilitator
//                      reads it (discovered: what it would catalogue)
//   paymentIdentifier  validatePaymentIdentifier on the declaration, which
//                      must carry no id and equal
//                      declarePaymentIdentifierExtension(required)
//   resource           sanitizeResourceServiceMetadata: a serviceName, tag or
//                      iconUrl it drops breaks the bazaar spec's rules
//
// The output: {valid, status (a URL's answer), paymentRequired: {valid,
// errors}, bazaar: {present, valid, errors, discovered}, paymentIdentifier:
// {present, valid, errors, required}, resource: {valid, errors, kept}, and
// document (the PaymentRequired read)}. Exit 0 whatever the verdict, 1 when
// nothing could be read (the reason on stderr), 2 on a usage error.
import { readFile } from "node:fs/promises";
import { isDeepStrictEqual, parseArgs } from "node:util";
import { x402HTTPClient } from "@x402/core/client";
import { parsePaymentRequired } from "@x402/core/schemas";
import {
  extractDiscoveryInfo,
  sanitizeResourceServiceMetadata,
  validateDiscoveryExtension,
  validateDiscoveryExtensionSpec,
} from "@x402/extensions/bazaar";
import {
  declarePaymentIdentifierExtension,
  isPaymentIdentifierExtension,
  validatePaymentIdentifier,
} from "@x402/extensions/payment-identifier";
import { UsageError, account, paymentClient, run } from "./payer.mjs";

const usage = "usage: node validate.mjs [--timeout <ms>] <url | file | ->";
const dialect = "https://json-schema.org/draft/2020-12/schema";

// check is one named check's verdict.
function check(errors) {
  return { valid: errors.length === 0, errors };
}

// zodErrors lists a zod parse's issues as "path: message".
function zodErrors(parsed) {
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
}

// read returns the PaymentRequired at source and, for a URL, the answer's
// status.
async function read(source, timeoutMs) {
  if (/^https?:\/\//.test(source)) {
    const res = await fetch(source, { method: "POST", signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const client = new x402HTTPClient(paymentClient(account()));
    try {
      return { status: res.status, document: client.getPaymentRequiredResponse((name) => res.headers.get(name), body) };
    } catch (err) {
      throw new Error(`${source} answered ${res.status} without a PaymentRequired: ${err.message}`);
    }
  }
  const text = source === "-" ? await readStdin() : await readFile(source, "utf8");
  try {
    return { document: JSON.parse(text) };
  } catch (err) {
    throw new Error(`${source}: not JSON: ${err.message}`);
  }
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

// bazaar checks extensions.bazaar and what a facilitator extracts from the
// payment an official client makes for this 402.
async function bazaar(document, schemaValid) {
  const extension = document?.extensions?.bazaar;
  if (extension === undefined) {
    return { present: false, ...check(["extensions.bazaar is missing"]) };
  }
  if (extension === null || typeof extension !== "object") {
    return { present: true, ...check(["extensions.bazaar is not an object"]) };
  }
  const errors = [];
  const consistent = validateDiscoveryExtension(extension);
  if (!consistent.valid) errors.push(...consistent.errors.map((e) => `info against schema: ${e}`));
  const spec = validateDiscoveryExtensionSpec(extension);
  if (!spec.valid) errors.push(...spec.errors.map((e) => `spec: ${e}`));
  if (extension.schema?.$schema !== dialect) {
    errors.push(`schema.$schema is ${JSON.stringify(extension.schema?.$schema)}, not ${dialect}`);
  }
  let discovered = null;
  if (schemaValid) {
    try {
      const payload = await paymentClient(account()).createPaymentPayload(structuredClone(document));
      discovered = extractDiscoveryInfo(payload, payload.accepted);
      if (discovered === null) errors.push("extractDiscoveryInfo found nothing in the client's payment");
    } catch (err) {
      errors.push(`the official client made no payment to extract from: ${err.message}`);
    }
  }
  return { present: true, ...check(errors), discovered };
}

function paymentIdentifier(document) {
  const extension = document?.extensions?.["payment-identifier"];
  if (extension === undefined) {
    return { present: false, ...check(['extensions["payment-identifier"] is missing']) };
  }
  const result = validatePaymentIdentifier(extension);
  const errors = result.valid ? [] : [...result.errors];
  if (!isPaymentIdentifierExtension(extension)) {
    errors.push("not a payment-identifier extension (isPaymentIdentifierExtension)");
  } else {
    if (extension.info.id !== undefined) errors.push("a declaration carries no id");
    const declared = declarePaymentIdentifierExtension(extension.info.required);
    if (!isDeepStrictEqual({ ...extension, info: { required: extension.info.required } }, declared)) {
      errors.push(`differs from declarePaymentIdentifierExtension(${extension.info.required}): ${JSON.stringify(declared)}`);
    }
  }
  return { present: true, ...check(errors), required: extension?.info?.required ?? null };
}

// resource lists the service metadata a facilitator would drop.
function resource(document) {
  const given = document?.resource ?? {};
  const kept = sanitizeResourceServiceMetadata(given);
  const errors = [];
  for (const field of ["serviceName", "iconUrl"]) {
    if (given[field] !== undefined && kept[field] === undefined) {
      errors.push(`resource.${field} ${JSON.stringify(given[field])} is dropped by sanitizeResourceServiceMetadata`);
    }
  }
  if (given.tags !== undefined && !isDeepStrictEqual(kept.tags, given.tags)) {
    errors.push(`resource.tags ${JSON.stringify(given.tags)} are kept only as ${JSON.stringify(kept.tags ?? [])}`);
  }
  return { ...check(errors), kept };
}

await run("validate.mjs", usage, async () => {
  let args;
  try {
    args = parseArgs({ allowPositionals: true, options: { timeout: { type: "string", default: "30000" } } });
  } catch (err) {
    throw new UsageError(err.message);
  }
  const { values: opts, positionals } = args;
  if (positionals.length !== 1) throw new UsageError("one source, please");
  const timeoutMs = Number(opts.timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new UsageError(`--timeout wants milliseconds, not ${JSON.stringify(opts.timeout)}`);
  }
  const { status, document } = await read(positionals[0], timeoutMs);
  const schema = parsePaymentRequired(document);
  const report = {
    valid: false,
    ...(status !== undefined ? { status } : {}),
    paymentRequired: check(zodErrors(schema)),
    bazaar: await bazaar(document, schema.success),
    paymentIdentifier: paymentIdentifier(document),
    resource: resource(document),
    document,
  };
  if (status !== undefined && status !== 402) {
    report.paymentRequired.valid = false;
    report.paymentRequired.errors.push(`the probe was answered ${status}, not 402`);
  }
  report.valid = ["paymentRequired", "bazaar", "paymentIdentifier", "resource"].every((k) => report[k].valid);
  return report;
});
