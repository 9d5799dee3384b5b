// Produces shared/x402/testdata/viem_vectors.json: EIP-712 TransferWithAuthorization
// digests and signatures made by viem, an implementation independent of ours.
import { privateKeyToAccount } from "viem/accounts";
import { hashTypedData, getAddress, keccak256, toHex, recoverTypedDataAddress } from "viem";
import { readFileSync } from "node:fs";

const types = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
};
const domains = {
  "eip155:8453": { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" },
  "eip155:84532": { name: "USDC", version: "2", chainId: 84532, verifyingContract: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" },
};
// Keys derived deterministically so the file is reproducible.
const key = (i) => keccak256(toHex(`x402 test key ${i}`));
const nonce = (i) => keccak256(toHex(`x402 test nonce ${i}`));
const payTo = "0x209693bc6afc0c5328ba36faf03c514ef312287c";

const cases = [
  { network: "eip155:84532", value: "50000", validAfter: "1740672089", validBefore: "1740672154" },
  { network: "eip155:8453", value: "250000", validAfter: "1764200000", validBefore: "1764200300" },
  { network: "eip155:8453", value: "1000000", validAfter: "0", validBefore: "115792089237316195423570985008687907853269984665640564039457584007913129639935" },
  { network: "eip155:84532", value: "1", validAfter: "1764199400", validBefore: "1764200060" },
  { network: "eip155:84532", value: "1000000", validAfter: "1764199400", validBefore: "1764200060" },
  { network: "eip155:8453", value: "50000", validAfter: "1764199400", validBefore: "1764200060" },
];

const vectors = [];
for (const [i, c] of cases.entries()) {
  const account = privateKeyToAccount(key(i));
  const message = {
    from: account.address,
    to: i % 2 ? getAddress(payTo) : payTo,
    value: c.value,
    validAfter: c.validAfter,
    validBefore: c.validBefore,
    nonce: nonce(i),
  };
  const typed = {
    domain: domains[c.network], types, primaryType: "TransferWithAuthorization",
    message: { ...message, value: BigInt(c.value), validAfter: BigInt(c.validAfter), validBefore: BigInt(c.validBefore) },
  };
  const signature = await account.signTypedData(typed);
  const recovered = await recoverTypedDataAddress({ ...typed, signature });
  if (recovered !== account.address) throw new Error("viem does not recover its own signature");
  vectors.push({
    privateKey: key(i), address: account.address, network: c.network, domain: domains[c.network],
    authorization: message, digest: hashTypedData(typed), signature,
  });
}
const addresses = ["0x209693bc6afc0c5328ba36faf03c514ef312287c", "0x857b06519e91e3a54538791bdbb0e22373e36b66",
  "0x0000000000000000000000000000000000000000", "0xffffffffffffffffffffffffffffffffffffffff",
  "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", "0x036cbd53842c5426634e7929541ec2318f3dcf7e"]
  .map((a) => ({ lower: a, checksummed: getAddress(a) }));
const viem = JSON.parse(readFileSync(new URL("./node_modules/viem/package.json", import.meta.url))).version;
console.log(JSON.stringify({ generator: `viem ${viem}, node ${process.version}`, vectors, addresses }, null, 2));
