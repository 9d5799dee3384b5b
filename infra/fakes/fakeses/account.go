package fakeses

import (
	"net/http"
	"time"
)

// accountPath is SES v2's GetAccount, which moto does not serve.
const accountPath = "/v2/email/account"

// Quota is the sandbox's sending quota the fake account reports.
const Quota = 200

// account is GetAccount's answer, in SES v2's JSON.
type account struct {
	SendingEnabled          bool      `json:"SendingEnabled"`
	EnforcementStatus       string    `json:"EnforcementStatus"`
	ProductionAccessEnabled bool      `json:"ProductionAccessEnabled"`
	SendQuota               sendQuota `json:"SendQuota"`
}

type sendQuota struct {
	Max24HourSend   float64 `json:"Max24HourSend"`
	MaxSendRate     float64 `json:"MaxSendRate"`
	SentLast24Hours float64 `json:"SentLast24Hours"`
}

// handleAccount answers GetAccount: sending enabled unless paused through
// /_control, and the sends of the last 24 hours that moto accepted counted
// against the sandbox's quota.
func (s *Server) handleAccount(w http.ResponseWriter) {
	s.mu.Lock()
	a := account{SendingEnabled: !s.paused, EnforcementStatus: "HEALTHY", SendQuota: sendQuota{Max24HourSend: Quota, MaxSendRate: 1}}
	since := s.now().Add(-24 * time.Hour)
	for _, c := range s.calls {
		if c.Status == http.StatusOK && c.Time.After(since) {
			a.SendQuota.SentLast24Hours++
		}
	}
	s.mu.Unlock()
	s.writeJSON(w, http.StatusOK, a)
}
