package store_test

import (
	"reflect"
	"strings"
)

func hasField(v any, name string) bool {
	t := reflect.TypeOf(v)
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("dynamodbav"), ",")[0]
		if tag == name {
			return true
		}
	}
	return false
}
