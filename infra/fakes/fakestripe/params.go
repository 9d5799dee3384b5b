package fakestripe

import (
	"maps"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// maxMetadataKeyLen is Stripe's metadata key limit in characters.
const maxMetadataKeyLen = 40

// parseMetadata reads metadata[key] parameters and enforces Stripe's limits:
// at most 50 keys, keys of at most 40 and values of at most 500 characters,
// counted in UTF-16 code units as Stripe counts them. As on Stripe, an empty
// value unsets a key, so it is simply absent from a new object.
func parseMetadata(form url.Values) (map[string]string, error) {
	return parseMetadataAt(form, "metadata")
}

// parseMetadataAt reads the metadata at name, such as
// subscription_data[metadata], as parseMetadata reads metadata.
func parseMetadataAt(form url.Values, name string) (map[string]string, error) {
	md := make(map[string]string)
	for _, param := range slices.Sorted(maps.Keys(form)) {
		inner, ok := strings.CutPrefix(param, name+"[")
		if !ok {
			continue
		}
		key, ok := strings.CutSuffix(inner, "]")
		if !ok || key == "" || strings.ContainsAny(key, "[]") {
			return nil, invalidParam("", param, "Invalid metadata key: %s is not of the form metadata[key].", param)
		}
		if oracle.QueryUnits(key) > maxMetadataKeyLen {
			return nil, invalidParam("", param, "Invalid metadata: keys can be at most %d characters long.", maxMetadataKeyLen)
		}
		vals := form[param]
		v := vals[len(vals)-1]
		if v == "" {
			continue
		}
		if oracle.QueryUnits(v) > stripex.MaxMetadataValue {
			return nil, invalidParam("", param, "Invalid metadata: values can be at most %d characters long.", stripex.MaxMetadataValue)
		}
		md[key] = v
	}
	if len(md) > stripex.MaxMetadataKeys {
		return nil, invalidParam("", name, "Invalid metadata: metadata can have at most %d keys, got %d.", stripex.MaxMetadataKeys, len(md))
	}
	return md, nil
}

// optString returns a parameter's value, or nil when it is absent or empty.
func optString(form url.Values, param string) *string {
	v := form.Get(param)
	if v == "" {
		return nil
	}
	return &v
}

// parseInt reads an integer parameter in [lo, hi]; ok is false when absent.
func parseInt(form url.Values, param string, lo, hi int64) (n int64, ok bool, err error) {
	v := form.Get(param)
	if v == "" {
		return 0, false, nil
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		return 0, false, invalidParam(codeParameterInvalidInt, param, "Invalid integer: %s", clip(v))
	}
	if n < lo || n > hi {
		return 0, false, invalidParam(codeParameterInvalidInt, param, "Invalid integer: %s must be between %d and %d.", param, lo, hi)
	}
	return n, true, nil
}

// checkURL accepts an absolute http or https URL, as Stripe requires for
// redirect URLs. Placeholders such as {CHECKOUT_SESSION_ID} are allowed.
func checkURL(param, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalidParam(codeURLInvalid, param, "Not a valid URL")
	}
	return nil
}

// validEmail reports whether v is a bare address such as a@b.example.
func validEmail(v string) bool {
	a, err := mail.ParseAddress(v)
	if err != nil || a.Name != "" || a.Address != v {
		return false
	}
	_, domain, _ := strings.Cut(v, "@")
	return strings.Contains(domain, ".")
}

// currencies are the ISO 4217 codes stripe-go v76 lists as Stripe currencies.
var currencies = setOf(strings.Fields(`aed afn all amd ang aoa ars aud awg azn bam bbd bdt
	bgn bif bmd bnd bob brl bsd bwp bzd cad cdf chf clp cny cop crc cve czk djf dkk dop
	dzd egp etb eur fjd fkp gbp gel gip gmd gnf gtq gyd hkd hnl htg huf idr ils inr isk
	jmd jpy kes kgs khr kmf krw kyd kzt lak lbp lkr lrd lsl mad mdl mga mkd mnt mop mur
	mvr mwk mxn myr mzn nad ngn nio nok npr nzd pab pen pgk php pkr pln pyg qar ron rsd
	rub rwf sar sbd scr sek sgd shp sos srd szl thb tjs top try ttd twd tzs uah ugx usd
	uyu uzs vnd vuv wst xaf xcd xof xpf yer zar zmw`))

// zeroDecimal currencies have no minor unit: amounts are whole units.
var zeroDecimal = setOf(strings.Fields(`bif clp djf gnf jpy kmf krw mga pyg rwf ugx vnd vuv xaf xof xpf`))

func setOf(items []string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, it := range items {
		m[it] = true
	}
	return m
}

// clip shortens untrusted text echoed in an error message.
func clip(s string) string {
	const n = 64
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
