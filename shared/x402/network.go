package x402

import (
	"strconv"
	"time"
)

// Network is a CAIP-2 chain identifier, for example "eip155:8453".
type Network string

// The networks the service accepts USDC on.
const (
	NetworkBase        Network = "eip155:8453"
	NetworkBaseSepolia Network = "eip155:84532"
)

// NetworkInfo is what a payment on one network needs: the chain, the USDC
// contract and its EIP-712 domain. A wrong domain name or version makes
// signatures that recover to a stranger, so they come from this table only.
type NetworkInfo struct {
	Network      Network
	ChainID      int64
	Asset        string // the USDC contract, EIP-55
	AssetName    string // EIP-712 domain name
	AssetVersion string // EIP-712 domain version
	Testnet      bool
}

// networks is the closed table, as the reference implementation's
// go/mechanisms/evm/constants.go has it.
var networks = map[Network]NetworkInfo{
	NetworkBase: {
		Network: NetworkBase, ChainID: 8453,
		Asset:     "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
		AssetName: "USD Coin", AssetVersion: "2",
	},
	NetworkBaseSepolia: {
		Network: NetworkBaseSepolia, ChainID: 84532,
		Asset:     "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		AssetName: "USDC", AssetVersion: "2",
		Testnet: true,
	},
}

// LookupNetwork returns the table's entry for n.
func LookupNetwork(n Network) (NetworkInfo, bool) {
	info, ok := networks[n]
	return info, ok
}

// Requirement is the exact-scheme requirement to pay amountAtomic USDC units
// to payTo on n, to be settled within maxTimeout. payTo is written in its
// EIP-55 form when it is an address (validate it at cold start with
// ChecksumAddress).
func Requirement(n NetworkInfo, amountAtomic int64, payTo string, maxTimeout time.Duration) PaymentRequirements {
	if sum, err := ChecksumAddress(payTo); err == nil {
		payTo = sum
	}
	return PaymentRequirements{
		Scheme:            SchemeExact,
		Network:           n.Network,
		Asset:             n.Asset,
		Amount:            strconv.FormatInt(amountAtomic, 10),
		PayTo:             payTo,
		MaxTimeoutSeconds: int(maxTimeout / time.Second),
		Extra:             map[string]any{"name": n.AssetName, "version": n.AssetVersion},
	}
}

// domainOf is the EIP-712 domain a payment for r is signed over: the chain
// from the table, the contract and the domain's name and version from r, as
// the reference's clients sign it.
func domainOf(r PaymentRequirements) (NetworkInfo, bool) {
	info, ok := networks[r.Network]
	if !ok {
		return NetworkInfo{}, false
	}
	name, _ := r.Extra["name"].(string)
	version, _ := r.Extra["version"].(string)
	if name == "" || version == "" {
		return NetworkInfo{}, false
	}
	info.Asset, info.AssetName, info.AssetVersion = r.Asset, name, version
	return info, true
}
