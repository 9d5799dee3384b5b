package fakestripe

import (
	"cmp"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/stripe/stripe-go/v76"
)

// Price limits, as Stripe applies them.
const (
	maxLookupKey     = 200
	maxLookupKeys    = 10
	priceTypeOnce    = "one_time"
	priceTypeRecurs  = "recurring"
	intervalDay      = "day"
	intervalWeek     = "week"
	intervalMonth    = "month"
	intervalYear     = "year"
	usageTypeLicense = "licensed"
)

// maxIntervalCount bounds recurring[interval_count]: Stripe allows at most
// one year between billings.
var maxIntervalCount = map[string]int64{intervalDay: 365, intervalWeek: 52, intervalMonth: 12, intervalYear: 1}

// Parameter names of the price and list calls.
var (
	priceParamNames     = formNames(reflect.TypeFor[stripe.PriceParams]())
	priceListParamNames = formNames(reflect.TypeFor[stripe.PriceListParams]())
)

// priceObject is a Price exactly as the API renders it, the fields the
// fake models: a per-unit price with a whole unit_amount.
type priceObject struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Active            bool              `json:"active"`
	BillingScheme     string            `json:"billing_scheme"`
	Created           int64             `json:"created"`
	Currency          string            `json:"currency"`
	CustomUnitAmount  *struct{}         `json:"custom_unit_amount"`
	Livemode          bool              `json:"livemode"`
	LookupKey         *string           `json:"lookup_key"`
	Metadata          map[string]string `json:"metadata"`
	Nickname          *string           `json:"nickname"`
	Product           string            `json:"product"`
	Recurring         *priceRecurring   `json:"recurring"`
	TaxBehavior       string            `json:"tax_behavior"`
	TiersMode         *string           `json:"tiers_mode"`
	TransformQuantity *struct{}         `json:"transform_quantity"`
	Type              string            `json:"type"`
	UnitAmount        int64             `json:"unit_amount"`
	UnitAmountDecimal string            `json:"unit_amount_decimal"`
}

type priceRecurring struct {
	AggregateUsage  *string `json:"aggregate_usage"`
	Interval        string  `json:"interval"`
	IntervalCount   int64   `json:"interval_count"`
	TrialPeriodDays *int64  `json:"trial_period_days"`
	UsageType       string  `json:"usage_type"`
}

// priceRecord is a stored price and its product's name.
type priceRecord struct {
	p    priceObject
	name string
}

// createPrice serves POST /v1/prices: a one-time or recurring price of a
// product named by id or made inline with product_data[name]. A lookup_key
// already in use is refused unless transfer_lookup_key moves it.
func (s *Server) createPrice(_ *http.Request, form url.Values) (any, error) {
	cur := strings.ToLower(form.Get("currency"))
	if cur == "" {
		return nil, missingParam("currency")
	}
	if !currencies[cur] {
		return nil, invalidParam("", "currency", "Invalid currency: %s. See https://stripe.com/docs/currencies for the supported currencies.", clip(cur))
	}
	amount, ok, err := parseInt(form, "unit_amount", 0, maxAmount)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, invalidParam(codeParameterMissing, "unit_amount", "The fake Stripe needs unit_amount: it does not model unit_amount_decimal, custom_unit_amount or tiers.")
	}
	productID, name := form.Get("product"), form.Get("product_data[name]")
	switch {
	case productID != "" && name != "":
		return nil, invalidParam("", "product_data", "You may only specify one of these parameters: product, product_data.")
	case productID != "":
		var known bool
		if name, known = s.products[productID]; !known {
			return nil, invalidParam(codeResourceMissing, "product", "No such product: '%s'", clip(productID))
		}
	case strings.TrimSpace(name) == "":
		return nil, invalidParam(codeParameterMissing, "product", "You must specify either `product` or `product_data` when creating a price.")
	}
	recurring, err := parseRecurring(form)
	if err != nil {
		return nil, err
	}
	lookupKey := optString(form, "lookup_key")
	if lookupKey != nil && len([]rune(*lookupKey)) > maxLookupKey {
		return nil, invalidParam("", "lookup_key", "Invalid string: lookup_key must be at most %d characters.", maxLookupKey)
	}
	transfer := form.Get("transfer_lookup_key") == "true"
	md, err := parseMetadataAt(form, "metadata")
	if err != nil {
		return nil, err
	}

	// From here the endpoint executes.
	var holder *priceRecord
	if lookupKey != nil {
		holder = s.priceByLookupKey(*lookupKey)
	}
	if holder != nil && !transfer {
		return nil, executed(invalidParam("", "lookup_key", "A price (`%s`) already uses the lookup key `%s`. Set `transfer_lookup_key` to move it to the new price.", holder.p.ID, clip(*lookupKey)))
	}
	id, err := s.newID("price_", objectIDLen)
	if err != nil {
		return nil, err
	}
	if productID == "" {
		if productID, err = s.newID("prod_", 14); err != nil {
			return nil, err
		}
		s.products[productID] = name
	}
	typ := priceTypeOnce
	if recurring != nil {
		typ = priceTypeRecurs
	}
	rec := &priceRecord{name: name, p: priceObject{
		ID:                id,
		Object:            "price",
		Active:            form.Get("active") != "false",
		BillingScheme:     "per_unit",
		Created:           s.now().Unix(),
		Currency:          cur,
		LookupKey:         lookupKey,
		Metadata:          md,
		Nickname:          optString(form, "nickname"),
		Product:           productID,
		Recurring:         recurring,
		TaxBehavior:       "unspecified",
		Type:              typ,
		UnitAmount:        amount,
		UnitAmountDecimal: strconv.FormatInt(amount, 10),
	}}
	if holder != nil {
		holder.p.LookupKey = nil
	}
	s.prices[id] = rec
	s.log.Info("fakestripe: price created", "price", id, "product", productID, "unit_amount", amount, "currency", cur, "type", typ)
	return rec.p, nil
}

// parseRecurring reads recurring[interval] and recurring[interval_count];
// nil means a one-time price.
func parseRecurring(form url.Values) (*priceRecurring, error) {
	interval := form.Get("recurring[interval]")
	if interval == "" {
		if form.Has("recurring[interval_count]") {
			return nil, missingParam("recurring[interval]")
		}
		return nil, nil
	}
	limit, ok := maxIntervalCount[interval]
	if !ok {
		return nil, invalidParam("", "recurring[interval]", "Invalid recurring[interval]: must be one of day, month, week, or year")
	}
	count, ok, err := parseInt(form, "recurring[interval_count]", 1, limit)
	if err != nil {
		return nil, invalidParam("", "recurring[interval_count]", "The maximum billing interval is one year (1 year, 12 months, 52 weeks or 365 days).")
	}
	if !ok {
		count = 1
	}
	return &priceRecurring{Interval: interval, IntervalCount: count, UsageType: usageTypeLicense}, nil
}

// priceByLookupKey is the price holding key, or nil. The caller holds s.mu.
func (s *Server) priceByLookupKey(key string) *priceRecord {
	for _, rec := range s.prices {
		if rec.p.LookupKey != nil && *rec.p.LookupKey == key {
			return rec
		}
	}
	return nil
}

func (s *Server) retrievePrice(r *http.Request, _ url.Values) (any, error) {
	id := r.PathValue("id")
	rec, ok := s.prices[id]
	if !ok {
		return nil, noSuch(http.StatusNotFound, "price", clip(id), "id")
	}
	return rec.p, nil
}

// listPrices serves GET /v1/prices: newest first, filtered by active,
// currency, lookup_keys, product and type.
func (s *Server) listPrices(_ *http.Request, form url.Values) (any, error) {
	var keys []string
	for key, vals := range form {
		if key == "lookup_keys" || strings.HasPrefix(key, "lookup_keys[") {
			keys = append(keys, vals...)
		}
	}
	if len(keys) > maxLookupKeys {
		return nil, invalidParam("", "lookup_keys", "Invalid array: lookup_keys can have at most %d items.", maxLookupKeys)
	}
	active, currency, product, typ := form.Get("active"), strings.ToLower(form.Get("currency")), form.Get("product"), form.Get("type")
	if typ != "" && typ != priceTypeOnce && typ != priceTypeRecurs {
		return nil, invalidParam("", "type", "Invalid type: must be one of one_time or recurring")
	}
	all := slices.SortedFunc(maps.Values(s.prices), func(a, b *priceRecord) int {
		return cmp.Or(cmp.Compare(b.p.Created, a.p.Created), strings.Compare(b.p.ID, a.p.ID))
	})
	objs := make([]priceObject, len(all))
	for i, rec := range all {
		objs[i] = rec.p
	}
	return listPage(form, "/v1/prices", "price", objs, func(p priceObject) string { return p.ID }, func(p priceObject) bool {
		switch {
		case active != "" && strconv.FormatBool(p.Active) != active:
			return false
		case currency != "" && p.Currency != currency:
			return false
		case product != "" && p.Product != product:
			return false
		case typ != "" && p.Type != typ:
			return false
		case len(keys) > 0 && (p.LookupKey == nil || !slices.Contains(keys, *p.LookupKey)):
			return false
		}
		return true
	})
}

// listObject is a list as the API renders it.
type listObject[T any] struct {
	Object     string `json:"object"`
	Data       []T    `json:"data"`
	HasMore    bool   `json:"has_more"`
	TotalCount *int   `json:"total_count,omitempty"`
	URL        string `json:"url"`
}

// listPage is one page of all (already newest first) as a list call asks:
// the items matching, after starting_after or before ending_before (the id
// of any item of all), at most limit of them.
func listPage[T any](form url.Values, path, object string, all []T, id func(T) string, match func(T) bool) (listObject[T], error) {
	out := listObject[T]{Object: "list", URL: path, Data: []T{}}
	limit, ok, err := parseInt(form, "limit", 1, maxListLimit)
	if err != nil {
		return out, err
	}
	if !ok {
		limit = defaultListLimit
	}
	after, before := form.Get("starting_after"), form.Get("ending_before")
	if after != "" && before != "" {
		return out, invalidParam("", "ending_before", "Received both starting_after and ending_before parameters. Please pass in only one.")
	}
	lo, hi := 0, len(all)
	cursor, param := after, "starting_after"
	if before != "" {
		cursor, param = before, "ending_before"
	}
	if cursor != "" {
		i := slices.IndexFunc(all, func(v T) bool { return id(v) == cursor })
		if i < 0 {
			return out, noSuch(http.StatusBadRequest, object, clip(cursor), param)
		}
		if after != "" {
			lo = i + 1
		} else {
			hi = i
		}
	}
	var matched []T
	for _, v := range all[lo:hi] {
		if match(v) {
			matched = append(matched, v)
		}
	}
	page := matched
	if len(page) > int(limit) {
		if before != "" {
			page = page[len(page)-int(limit):]
		} else {
			page = page[:limit]
		}
	}
	out.HasMore = len(page) < len(matched)
	out.Data = append(out.Data, page...)
	return out, nil
}
