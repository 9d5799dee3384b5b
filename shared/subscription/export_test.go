package subscription

// Order is State.order, for the tests that write an item as the store
// before issue 38 wrote it.
func Order(s State) string { return s.order() }
