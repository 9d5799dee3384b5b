package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/httpapi"
)

// The health endpoint's route, as API Gateway names it and as its path.
const (
	healthRouteKey = "GET /api/health"
	healthPath     = "/api/health"
)

// isHealthRoute reports whether req is for GET /api/health: by its route
// key, or by its path when it carries no route key (a direct invocation).
func isHealthRoute(req httpapi.Request) bool {
	if req.RouteKey != "" {
		return req.RouteKey == healthRouteKey
	}
	return req.RawPath == healthPath
}

// HealthRecords reads the health job's latest record (store.Ledger).
type HealthRecords interface {
	LatestHealth(ctx context.Context) (health.Record, bool, error)
}

// HealthEndpoint answers GET /api/health for uptime monitors: the latest
// health run summed up (health.Summary: the status, when it ran, each
// check's name and status, stale), never a check's detail or a figure.
// 200 when the status is ok or warn; 503 when it is critical, when the
// record is older than three periods (stale: the job has stopped), when no
// run is recorded yet, and when the Ledger cannot be read (the store is
// down). The last two answer {"status":"critical","error":...}.
type HealthEndpoint struct {
	Records HealthRecords
	// Period is the health job's (HEALTH_PERIOD).
	Period time.Duration
	Log    *slog.Logger
	Now    func() time.Time
}

// healthProblem is the answer when there is no record to sum up.
type healthProblem struct {
	Status health.Status `json:"status"`
	Error  string        `json:"error"`
}

// The texts of the answers without a record.
const (
	noHealthRun      = "no health run recorded yet"
	healthUnreadable = "the health record cannot be read"
)

// Answer is the endpoint's response; httpapi.JSON makes it no-store.
func (e *HealthEndpoint) Answer(ctx context.Context) httpapi.Response {
	rec, found, err := e.Records.LatestHealth(ctx)
	if err != nil {
		e.Log.ErrorContext(ctx, "health endpoint: the latest health record cannot be read", "error", err.Error())
		return httpapi.JSON(http.StatusServiceUnavailable, healthProblem{health.Critical, healthUnreadable})
	}
	if !found {
		return httpapi.JSON(http.StatusServiceUnavailable, healthProblem{health.Critical, noHealthRun})
	}
	s := health.Summarize(rec, e.Now(), e.Period)
	if !s.Healthy() {
		return httpapi.JSON(http.StatusServiceUnavailable, s)
	}
	return httpapi.JSON(http.StatusOK, s)
}
