package fakeses

import (
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"net/mail"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/sesevent"
)

// The mailbox simulator's addresses whose events are not a plain delivery.
const (
	simBounce      = "bounce@simulator.amazonses.com"
	simComplaint   = "complaint@simulator.amazonses.com"
	simSuppression = "suppressionlist@simulator.amazonses.com"
)

// What the simulated receiving side reports.
const (
	reportingMTA      = "fakeses.localhost"
	smtpAccepted      = "250 2.6.0 Message received"
	bounceStatus      = "5.1.1"
	bounceDiagnostic  = "smtp; 550 5.1.1 user unknown"
	suppressedMessage = "Amazon SES did not send the message to this address because it is on the suppression list for your account."
	complaintAgent    = "Amazon SES Mailbox Simulator"
	complaintFeedback = "abuse"
	// maxHeaderBytes is where SES truncates the headers it reports.
	maxHeaderBytes = 10 << 10
)

// events builds the events of a send moto accepted under messageID: Send,
// then Delivery, Bounce and Complaint events by recipient as the mailbox
// simulator causes them. Each is checked with sesevent's Validate, so the
// front never publishes what the consumer would refuse.
func (s *Server) events(c *send, messageID string) []sesevent.Event {
	accepted := c.received.UTC().Truncate(time.Millisecond)
	at := s.now().UTC().Truncate(time.Millisecond)
	if at.Before(accepted) {
		at = accepted
	}
	at = at.Add(s.opts.DeliveryDelay)
	m := s.mail(c, messageID, accepted)

	var delivered, complained []string
	var bounced, suppressed []sesevent.BouncedRecipient
	for _, d := range m.Destination {
		addr := bare(d)
		switch strings.ToLower(addr) {
		case simBounce:
			bounced = append(bounced, sesevent.BouncedRecipient{EmailAddress: addr, Action: "failed", Status: bounceStatus, DiagnosticCode: bounceDiagnostic})
		case simSuppression:
			suppressed = append(suppressed, sesevent.BouncedRecipient{EmailAddress: addr, Action: "failed", Status: bounceStatus, DiagnosticCode: suppressedMessage})
		case simComplaint:
			complained = append(complained, addr)
			delivered = append(delivered, addr)
		default:
			delivered = append(delivered, addr)
		}
	}

	out := []sesevent.Event{{EventType: sesevent.Send, Mail: m, Send: &sesevent.SendInfo{}}}
	if len(delivered) > 0 {
		out = append(out, sesevent.Event{EventType: sesevent.Delivery, Mail: m, Delivery: &sesevent.DeliveryInfo{
			Timestamp: at, ProcessingTimeMillis: at.Sub(accepted).Milliseconds(), Recipients: delivered,
			SMTPResponse: smtpAccepted, ReportingMTA: reportingMTA,
		}})
	}
	if len(bounced) > 0 {
		out = append(out, sesevent.Event{EventType: sesevent.Bounce, Mail: m, Bounce: &sesevent.BounceInfo{
			BounceType: sesevent.BouncePermanent, BounceSubType: sesevent.BounceGeneral, BouncedRecipients: bounced,
			Timestamp: at, FeedbackID: feedbackID(messageID, "bounce"), ReportingMTA: "dsn; " + reportingMTA,
		}})
	}
	if len(suppressed) > 0 {
		// SES never tried: there is no delivery status notification, so no
		// reporting MTA.
		out = append(out, sesevent.Event{EventType: sesevent.Bounce, Mail: m, Bounce: &sesevent.BounceInfo{
			BounceType: sesevent.BouncePermanent, BounceSubType: sesevent.BounceOnAccountSuppressionList, BouncedRecipients: suppressed,
			Timestamp: at, FeedbackID: feedbackID(messageID, "suppressed"),
		}})
	}
	if len(complained) > 0 {
		var rs []sesevent.ComplainedRecipient
		for _, a := range complained {
			rs = append(rs, sesevent.ComplainedRecipient{EmailAddress: a})
		}
		out = append(out, sesevent.Event{EventType: sesevent.Complaint, Mail: m, Complaint: &sesevent.ComplaintInfo{
			ComplainedRecipients: rs, Timestamp: at, FeedbackID: feedbackID(messageID, "complaint"),
			UserAgent: complaintAgent, ComplaintFeedbackType: complaintFeedback, ArrivalDate: at,
		}})
	}

	valid := out[:0]
	for _, e := range out {
		if err := e.Validate(); err != nil {
			s.log.Error("fakeses: built an invalid event; not published", "event", e.EventType, "err", err)
			continue
		}
		valid = append(valid, e)
	}
	return valid
}

// mail builds the events' mail object.
func (s *Server) mail(c *send, messageID string, accepted time.Time) sesevent.Mail {
	req := &c.req
	var headers []sesevent.Header
	truncated := false
	if req.Content.Raw != nil {
		headers, truncated = readHeaders(req.Content.Raw.Data)
	}
	m := sesevent.Mail{
		Timestamp:        accepted,
		Source:           req.FromEmailAddress,
		SendingAccountID: s.account,
		MessageID:        messageID,
		HeadersTruncated: truncated,
		Headers:          headers,
	}
	if m.Source == "" {
		// A raw message may leave the sender to its From header.
		m.Source = header(headers, "From")
	}
	if d := req.Destination; d != nil {
		m.Destination = append(append(append(m.Destination, d.ToAddresses...), d.CcAddresses...), d.BccAddresses...)
	} else {
		// and its recipients to its To and Cc headers.
		m.Destination = append(addresses(header(headers, "To")), addresses(header(headers, "Cc"))...)
	}
	if req.Content.Simple != nil {
		m.Headers = []sesevent.Header{{Name: "From", Value: m.Source}, {Name: "To", Value: strings.Join(m.Destination, ", ")}, {Name: "Subject", Value: req.Content.Simple.Subject.Data}}
	}
	m.CommonHeaders = commonHeaders(m.Headers, messageID)

	from := bare(m.Source)
	if s.account != "" && from != "" {
		m.SourceARN = "arn:aws:ses:" + s.opts.AWS.Region + ":" + s.account + ":identity/" + from
	}
	m.Tags = map[string][]string{}
	for _, t := range req.EmailTags {
		m.Tags[t.Name] = append(m.Tags[t.Name], t.Value)
	}
	m.Tags[sesevent.TagConfigurationSet] = []string{req.ConfigurationSetName}
	if _, domain, ok := strings.Cut(from, "@"); ok {
		m.Tags["ses:from-domain"] = []string{domain}
	}
	if c.sourceIP != "" {
		m.Tags["ses:source-ip"] = []string{c.sourceIP}
	}
	return m
}

// readHeaders returns a raw message's header fields in order, unfolded,
// and whether they were cut at SES's 10 KB.
func readHeaders(raw []byte) ([]sesevent.Header, bool) {
	text := strings.ReplaceAll(string(raw), "\r\n", "\n")
	if end := strings.Index(text, "\n\n"); end >= 0 {
		text = text[:end]
	}
	var out []sesevent.Header
	size := 0
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && len(out) > 0 {
			// A fold: unfolding removes the line break and keeps the blank.
			out[len(out)-1].Value += line
			size += len(line)
		} else if name, value, ok := strings.Cut(line, ":"); ok {
			out = append(out, sesevent.Header{Name: strings.TrimSpace(name), Value: strings.TrimLeft(value, " \t")})
			size += len(line)
		}
		if size > maxHeaderBytes {
			return out[:len(out)-1], true
		}
	}
	return out, false
}

// header returns the value of the first header named name, or "".
func header(hs []sesevent.Header, name string) string {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

// commonHeaders builds commonHeaders from the headers. Its messageId is the
// message's Message-ID, or SES's id for a message without one, since SES
// then adds a Message-ID built from it.
func commonHeaders(hs []sesevent.Header, messageID string) *sesevent.CommonHeaders {
	if len(hs) == 0 {
		return nil
	}
	subject := header(hs, "Subject")
	if dec, err := new(mime.WordDecoder).DecodeHeader(subject); err == nil {
		subject = dec
	}
	ch := &sesevent.CommonHeaders{
		ReturnPath: header(hs, "Return-Path"),
		From:       addresses(header(hs, "From")),
		Sender:     header(hs, "Sender"),
		ReplyTo:    addresses(header(hs, "Reply-To")),
		Date:       header(hs, "Date"),
		To:         addresses(header(hs, "To")),
		Cc:         addresses(header(hs, "Cc")),
		Bcc:        addresses(header(hs, "Bcc")),
		MessageID:  strings.Trim(header(hs, "Message-ID"), "<> "),
		Subject:    subject,
	}
	if ch.MessageID == "" {
		ch.MessageID = messageID
	}
	return ch
}

// addresses splits an address list header into its addresses, each as
// "Name <address>" or the bare address; a list that does not parse is kept
// whole.
func addresses(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	list, err := mail.ParseAddressList(v)
	if err != nil {
		return []string{v}
	}
	out := make([]string, 0, len(list))
	for _, a := range list {
		if a.Name != "" {
			out = append(out, a.Name+" <"+a.Address+">")
		} else {
			out = append(out, a.Address)
		}
	}
	return out
}

// bare returns the address of "Name <address>", or s when it does not
// parse.
func bare(s string) string {
	if a, err := mail.ParseAddress(s); err == nil {
		return a.Address
	}
	return strings.TrimSpace(s)
}

// feedbackID is a bounce's or complaint's id, fixed by the message and the
// kind so that runs are repeatable.
func feedbackID(messageID, kind string) string {
	sum := sha256.Sum256([]byte(messageID + "/" + kind))
	h := hex.EncodeToString(sum[:])
	return h[:16] + "-" + h[16:24] + "-" + h[24:28] + "-" + h[28:32] + "-" + h[32:44] + "-000000"
}
