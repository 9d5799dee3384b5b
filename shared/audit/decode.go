package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// Decode reads every record of the audit object at key: one line each
// (Writer.WriteStep), or the one JSON record of an object written before
// steps were (pretty-printed or not), which takes its id from the key.
// Every reader of the log reads objects through it, so none counts a
// step's object as one record.
func Decode(key string, body []byte) ([]Record, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	var out []Record
	for {
		var r Record
		err := d.Decode(&r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("audit record %d of the object: %w", len(out)+1, err)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("an audit object with no record")
	}
	if len(out) == 1 && out[0].RecordID == "" {
		out[0].RecordID = IDOf(key)
	}
	return out, nil
}

// IDOf is the id an object's key names: its step's outcome, or its one
// record's.
func IDOf(key string) string {
	return strings.TrimSuffix(path.Base(key), ".json")
}
