package x402

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// CheckTerms is the local check of a payment's terms against the
// requirements the server offered, done before anything costs money: the
// version is 2; the accepted requirement is one of accepts (scheme,
// network, asset, payTo and amount; addresses in any case); the
// authorization pays payTo exactly the amount; it is valid now (validAfter
// <= now) and stays valid for settleRoom more (validBefore >= now +
// settleRoom, which should cover a settlement plus the facilitators' own
// 6-second margin); its nonce is 32 bytes; and its signature is 65 bytes
// with a low s. CheckSigner is the rest of the check: a payment is checked
// when both pass.
//
// It returns the offered requirement the payment matched (send that one to
// the facilitator, never the client's copy). A refusal is a *Refusal whose
// Reason is the protocol's error code.
func CheckTerms(p PaymentPayload, accepts []PaymentRequirements, now time.Time, settleRoom time.Duration) (PaymentRequirements, error) {
	if p.X402Version != Version {
		return PaymentRequirements{}, refuse(ReasonInvalidVersion, "x402Version %d, this server speaks %d", p.X402Version, Version)
	}
	req, r := match(p.Accepted, accepts)
	if r != nil {
		return PaymentRequirements{}, r
	}
	if _, ok := domainOf(req); !ok {
		return PaymentRequirements{}, refuse(ReasonMissingEIP712Domain, "the offered requirement on %s has no EIP-712 name and version", req.Network)
	}

	a := p.Payload.Authorization
	if p.Payload.Signature == "" {
		return PaymentRequirements{}, refuse(ReasonMissingSignature, "payload.signature is empty")
	}
	if _, err := parseAddress(a.From); err != nil {
		return PaymentRequirements{}, refuse(ReasonMalformedExact, "authorization.from: %v", err)
	}
	if _, err := parseAddress(a.To); err != nil {
		return PaymentRequirements{}, refuse(ReasonMalformedExact, "authorization.to: %v", err)
	}
	if _, err := parseNonce(a.Nonce); err != nil {
		return PaymentRequirements{}, refuse(ReasonMalformedExact, "authorization.nonce: %v", err)
	}
	var nums [3]*big.Int
	for i, f := range []struct{ name, v string }{{"value", a.Value}, {"validAfter", a.ValidAfter}, {"validBefore", a.ValidBefore}} {
		u, err := parseUint256(f.v)
		if err != nil {
			return PaymentRequirements{}, refuse(ReasonMalformedExact, "authorization.%s: %v", f.name, err)
		}
		nums[i] = u
	}
	value, validAfter, validBefore := nums[0], nums[1], nums[2]

	if !SameAddress(a.To, req.PayTo) {
		return PaymentRequirements{}, refuse(ReasonRecipientMismatch, "authorization.to %s is not payTo %s", a.To, req.PayTo)
	}
	if amount, ok := new(big.Int).SetString(req.Amount, 10); !ok || value.Cmp(amount) != 0 {
		return PaymentRequirements{}, refuse(ReasonValueMismatch, "authorization.value %s is not the price %s", value, req.Amount)
	}
	if validAfter.Cmp(big.NewInt(now.Unix())) > 0 {
		return PaymentRequirements{}, refuse(ReasonValidAfter, "valid only after %s, it is %d", validAfter, now.Unix())
	}
	if deadline := now.Add(settleRoom).Unix(); validBefore.Cmp(big.NewInt(deadline)) < 0 {
		return PaymentRequirements{}, refuse(ReasonValidBefore, "valid only before %s, settling needs it valid until %d", validBefore, deadline)
	}
	if _, err := compactSignature(p.Payload.Signature); err != nil {
		return PaymentRequirements{}, refuse(ReasonSignatureFormat, "%v (only 65-byte EOA signatures are accepted)", err)
	}
	return req, nil
}

// CheckSigner is the costly half of the local check (a secp256k1 recovery,
// about 150 µs): the signature recovers exactly authorization.from under
// the EIP-712 domain of req, the requirement CheckTerms matched. It is
// apart so that a caller can run it while its first write is on the wire.
// A refusal is a *Refusal.
func CheckSigner(p PaymentPayload, req PaymentRequirements) error {
	_, err := Signer(p, req)
	return err
}

// Signer is CheckSigner that also returns the signer when the check
// passes: authorization.from in its EIP-55 form, which the recovery has
// already computed.
func Signer(p PaymentPayload, req PaymentRequirements) (string, error) {
	domain, ok := domainOf(req)
	if !ok {
		return "", refuse(ReasonMissingEIP712Domain, "the offered requirement on %s has no EIP-712 name and version", req.Network)
	}
	a := p.Payload.Authorization
	signer, err := RecoverSigner(domain, a, p.Payload.Signature)
	if errors.Is(err, errSignatureFormat) {
		return "", refuse(ReasonSignatureFormat, "%v (only 65-byte EOA signatures are accepted)", err)
	}
	if err != nil {
		return "", refuse(ReasonInvalidSignature, "%v", err)
	}
	if !SameAddress(signer, a.From) {
		return "", refuse(ReasonInvalidSignature, "signed by %s, not by authorization.from %s", signer, a.From)
	}
	return signer, nil
}

// match finds the offered requirement the client accepted; when none
// matches, the refusal names the first field that differs from the offer on
// the same network.
func match(acc PaymentRequirements, offers []PaymentRequirements) (PaymentRequirements, *Refusal) {
	if acc.Scheme != SchemeExact {
		return PaymentRequirements{}, refuse(ReasonUnsupportedScheme, "scheme %q, only %q is accepted", clip(acc.Scheme), SchemeExact)
	}
	var near *PaymentRequirements
	for i, o := range offers {
		if o.Scheme != acc.Scheme || o.Network != acc.Network {
			continue
		}
		if SameAddress(o.Asset, acc.Asset) && SameAddress(o.PayTo, acc.PayTo) && o.Amount == acc.Amount {
			return o, nil
		}
		if near == nil {
			near = &offers[i]
		}
	}
	switch {
	case near == nil:
		return PaymentRequirements{}, refuse(ReasonInvalidNetwork, "network %q is not offered", clip(string(acc.Network)))
	case !SameAddress(near.Asset, acc.Asset):
		return PaymentRequirements{}, refuse(ReasonInvalidPaymentRequirements, "accepted.asset %s is not the offered %s", clip(acc.Asset), near.Asset)
	case !SameAddress(near.PayTo, acc.PayTo):
		return PaymentRequirements{}, refuse(ReasonRecipientMismatch, "accepted.payTo %s is not the offered %s", clip(acc.PayTo), near.PayTo)
	default:
		return PaymentRequirements{}, refuse(ReasonValueMismatch, "accepted.amount %s is not the offered %s", clip(acc.Amount), near.Amount)
	}
}

func refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// AuthorizationID names an authorization as the token contract does: the
// network, the asset, the payer and the nonce (each payer's nonce is usable
// once), in one spelling (lower-case hex). Key the claim on it: the same
// authorization sent again with its addresses or nonce in another case, or
// with v as 0/1, is the same ID.
func AuthorizationID(n Network, asset string, a Authorization) (string, error) {
	contract, err := parseAddress(asset)
	if err != nil {
		return "", fmt.Errorf("x402: asset: %w", err)
	}
	from, err := parseAddress(a.From)
	if err != nil {
		return "", fmt.Errorf("x402: authorization from: %w", err)
	}
	nonce, err := parseNonce(a.Nonce)
	if err != nil {
		return "", fmt.Errorf("x402: authorization nonce: %w", err)
	}
	// Written out rather than through fmt, which spells it the same
	// (TestAuthorizationIDIgnoresSpelling) in several times the time.
	return string(n) + "/0x" + hex.EncodeToString(contract[:]) + "/0x" + hex.EncodeToString(from[:]) + "/0x" + hex.EncodeToString(nonce[:]), nil
}

// CheckSettlement compares a successful settlement's answer with the
// payment it was asked to settle: the facilitator's network must be req's,
// its payer the authorization's from (in any case), and its amount, when it
// reports one (the specification's SettleResponse has none; some
// facilitators add it), req's amount. An answer about another network,
// payer or amount proves nothing about this payment, whatever its success
// says.
func CheckSettlement(s SettleResponse, req PaymentRequirements, a Authorization) error {
	if s.Network != req.Network {
		return fmt.Errorf("x402: the settlement answered is on network %q, the payment is on %s", clip(string(s.Network)), req.Network)
	}
	if !SameAddress(s.Payer, a.From) {
		return fmt.Errorf("x402: the settlement answered names payer %q, the payment's is %s", clip(s.Payer), clip(a.From))
	}
	if s.Amount != "" {
		got, err := parseUint256(s.Amount)
		want, ok := new(big.Int).SetString(req.Amount, 10)
		if err != nil || !ok || got.Cmp(want) != 0 {
			return fmt.Errorf("x402: the settlement answered moved %q units, the payment is for %s", clip(s.Amount), req.Amount)
		}
	}
	return nil
}
