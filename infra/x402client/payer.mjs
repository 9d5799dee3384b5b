// payer.mjs is what pay.mjs, mcp.mjs and validate.mjs share: the official
// x402 client (x402Client from @x402/core with @x402/evm's exact scheme)
// set up as an agent would set it up, and the payment-identifier extension
// attached the way x402's own example client attaches it
// (examples/typescript/clients/payment-identifier: a beforePaymentCreation
// hook that hands the server's declaration to
// appendPaymentIdentifierToExtensions).
import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { appendPaymentIdentifierToExtensions, isValidPaymentId } from "@x402/extensions/payment-identifier";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

// UsageError is a mistake in how a script was called: exit status 2.
export class UsageError extends Error {}

// account is the payer: X402_PRIVATE_KEY (0x and 64 hex digits) or a fresh
// random key.
export function account() {
  try {
    return privateKeyToAccount(process.env.X402_PRIVATE_KEY || generatePrivateKey());
  } catch (err) {
    throw new UsageError(`X402_PRIVATE_KEY is not a private key (0x and 64 hex digits): ${err.message}`);
  }
}

// paymentClient is x402Client paying from signer with the exact EVM scheme,
// on network alone when one is given, adding paymentId (when given) to every
// payment whose 402 declared the payment-identifier extension. An id the
// extension would refuse is a usage error, not something to send.
export function paymentClient(signer, { network, paymentId } = {}) {
  if (paymentId !== undefined && !isValidPaymentId(paymentId)) {
    throw new UsageError(`--payment-id wants 16 to 128 of [A-Za-z0-9_-], not ${JSON.stringify(paymentId)}`);
  }
  const client = new x402Client();
  registerExactEvmScheme(client, { signer, ...(network ? { networks: [network] } : {}) });
  if (paymentId !== undefined) {
    client.onBeforePaymentCreation(async ({ paymentRequired }) => {
      if (paymentRequired.extensions) {
        appendPaymentIdentifierToExtensions(paymentRequired.extensions, paymentId);
      }
    });
  }
  return client;
}

// paymentIdOf is the payment-identifier id a PaymentPayload carries, or null.
export function paymentIdOf(payload) {
  const id = payload?.extensions?.["payment-identifier"]?.info?.id;
  return typeof id === "string" ? id : null;
}

// errorText says what err was, with its cause (fetch puts the network's
// reason there).
export function errorText(err) {
  return err.cause ? `${err.message}: ${err.cause.message ?? err.cause}` : err.message;
}

// run runs main and prints its result as one JSON object: exit 0 with the
// report, 2 on a UsageError, 1 on anything else (the reason on stderr).
export async function run(name, usage, main) {
  let result;
  try {
    result = await main();
  } catch (err) {
    const usageError = err instanceof UsageError;
    process.stderr.write(`${name}: ${usageError ? `${err.message}\n${usage}` : errorText(err)}\n`);
    process.exit(usageError ? 2 : 1);
  }
  process.stdout.write(JSON.stringify(result, null, 2) + "\n");
}
