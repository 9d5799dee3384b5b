package fakeses_test

import (
	"slices"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakeses"
	"42sisters.ai/oracle/shared/sesevent"
)

// TestDeliveryFollowsTheSendAfterItsDelay: with a DeliveryDelay the Send
// event is published at once and the Delivery only once the delay has
// passed, stamped that much after the send, as SES publishes a delivery
// once the recipient's server has answered. The delay is the test's
// channel: nothing is timed.
func TestDeliveryFollowsTheSendAfterItsDelay(t *testing.T) {
	f := newFixture(t)
	const delay = 750 * time.Millisecond
	asked := make(chan time.Duration, 1)
	release := make(chan time.Time)
	f.start(t, fakeses.Options{Moto: f.moto, AWS: f.cfg, ConfigurationSet: configSet, EventsTopicARN: f.topicARN,
		DeliveryDelay: delay, After: func(d time.Duration) <-chan time.Time { asked <- d; return release }})

	sent := make(chan string, 1)
	go func() { sent <- f.send(t, input(configSet, buyer)) }()
	// A front that publishes the Delivery without waiting never asks:
	// bounded, so that it fails here rather than at the package's timeout.
	select {
	case d := <-asked:
		if d != delay {
			t.Fatalf("the front waited %v, want %v", d, delay)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the front never waited before the Delivery")
	}
	// The client has its answer while the delivery is held.
	id := <-sent
	first := f.events(t, 1)
	if got := eventTypes(first); !slices.Equal(got, []sesevent.EventType{sesevent.Send}) {
		t.Fatalf("before the delay: events %v, want only the Send", got)
	}
	close(release)
	second := f.events(t, 1)
	if got := eventTypes(second); !slices.Equal(got, []sesevent.EventType{sesevent.Delivery}) {
		t.Fatalf("after the delay: events %v, want the Delivery", got)
	}
	d := second[0].Delivery
	if second[0].Mail.MessageID != id || !d.Timestamp.Equal(fixedNow.Add(delay)) || d.ProcessingTimeMillis != delay.Milliseconds() {
		t.Errorf("delivery of %s at %v after %d ms, want %s at %v after %d ms",
			second[0].Mail.MessageID, d.Timestamp, d.ProcessingTimeMillis, id, fixedNow.Add(delay), delay.Milliseconds())
	}
}
