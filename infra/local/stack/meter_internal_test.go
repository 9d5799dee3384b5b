package stack

import (
	"encoding/json"
	"testing"
)

// An item the functions send is sized as the same item read back: by
// DynamoDB's rules, names included, nested values with their overhead.
func TestItemSizeFromTheWire(t *testing.T) {
	tests := []struct {
		name, item string
		want       int
	}{
		{"string", `{"pk":{"S":"abc"}}`, 2 + 3},
		{"number", `{"n":{"N":"12345"}}`, 1 + 4},
		{"binary", `{"b":{"B":"AAEC"}}`, 1 + 3},
		{"bool and null", `{"t":{"BOOL":true},"z":{"NULL":true}}`, 1 + 1 + 1 + 1},
		{"map", `{"m":{"M":{"k":{"S":"v"}}}}`, 1 + 3 + 1 + 1},
		{"list", `{"l":{"L":[{"S":"ab"},{"N":"1"}]}}`, 1 + 3 + 1 + 2 + 1 + 2},
		{"sets", `{"ss":{"SS":["a","bc"]},"ns":{"NS":["1","22"]}}`, 2 + 3 + 2 + 2 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var raw map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.item), &raw); err != nil {
				t.Fatal(err)
			}
			item, err := wireItem(raw)
			if err != nil {
				t.Fatal(err)
			}
			if got := itemSize(item); got != tt.want {
				t.Errorf("size %d, want %d", got, tt.want)
			}
		})
	}
	if _, err := wireItem(map[string]json.RawMessage{"x": json.RawMessage(`{"Q":"?"}`)}); err == nil {
		t.Error("an attribute without a type was read")
	}
}
