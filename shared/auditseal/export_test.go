package auditseal

import (
	"slices"
	"strings"
)

// SetPageSize makes s list a partition n keys a page, so a test's few
// records span several pages.
func SetPageSize(s *Sealer, n int32) { s.pageSize = &n }

// Digest is the digest of records (key to content), as Seal computes it.
func Digest(records map[string]string) string {
	var objs []object
	for k, v := range records {
		objs = append(objs, object{key: k, body: []byte(v)})
	}
	slices.SortFunc(objs, func(a, b object) int { return strings.Compare(a.key, b.key) })
	return digest(objs)
}
