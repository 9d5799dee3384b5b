package main

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
)

// Every kind of email leaves through one path, deliver: the only caller of
// the transport and of afterSend. These tests pin it, in behaviour and in
// the source.

// everyKind is every kind of email the mailer sends: an order's, the
// inbox's autoresponse, the chat's.
func everyKind() []oracle.MailKind {
	return append(oracle.MailKinds(), oracle.MailAutoresponse, oracle.MailChatSignIn, oracle.MailChatPaymentFailed)
}

// owing makes what owes an email of each kind to addr, and returns the
// job that sends it.
var owing = map[oracle.MailKind]func(e *env, addr string) events.SQSMessage{
	oracle.MailVerdict: func(e *env, addr string) events.SQSMessage {
		return record(e.readyOrder(addr), oracle.MailVerdict)
	},
	oracle.MailSilentDrop: func(e *env, addr string) events.SQSMessage {
		id := e.paidSession(oracle.TierQuick, addr)
		if _, err := e.orders.ClaimOrder(context.Background(), oracle.Order{SessionID: id, Status: oracle.StatusDropped, DropReason: oracle.DropTierMissing,
			Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: time.Now().UTC()}, time.Minute); err != nil {
			e.t.Fatal(err)
		}
		return record(id, oracle.MailSilentDrop)
	},
	oracle.MailFailed: func(e *env, addr string) events.SQSMessage {
		id := e.readyOrder(addr)
		e.setState(id, oracle.StatusFailed, "")
		return record(id, oracle.MailFailed)
	},
	oracle.MailReview: func(e *env, addr string) events.SQSMessage {
		id := e.readyOrder(addr)
		e.setState(id, oracle.StatusHeld, "")
		return record(id, oracle.MailReview)
	},
	oracle.MailDivergence: func(e *env, addr string) events.SQSMessage {
		id := e.readyOrder(addr)
		e.setState(id, oracle.StatusReady, oracle.DivergenceSignificant)
		return record(id, oracle.MailDivergence)
	},
	oracle.MailRefund: func(e *env, addr string) events.SQSMessage {
		id := e.readyOrder(addr)
		e.setState(id, oracle.StatusRefunded, "")
		return record(id, oracle.MailRefund)
	},
	oracle.MailAutoresponse: func(e *env, addr string) events.SQSMessage {
		return autoresponseJob(e.received(addr, "Hello"), 0)
	},
	oracle.MailChatSignIn: func(e *env, addr string) events.SQSMessage {
		return job(chatJob(oracle.MailChatSignIn, e.account(addr)))
	},
	oracle.MailChatPaymentFailed: func(e *env, addr string) events.SQSMessage {
		return job(chatJob(oracle.MailChatPaymentFailed, e.account(addr)))
	},
}

// readyOrder pays for a quick verdict mailed to addr and stores it READY.
func (e *env) readyOrder(addr string) string {
	e.t.Helper()
	id := e.paidSession(oracle.TierQuick, addr)
	e.ready(id, oracle.TierQuick, oracle.VerdictGreen)
	return id
}

// callers is a transport that sends every message and notes which
// function called it, by the address it went to.
type callers struct {
	mu sync.Mutex
	by map[string][]string
}

func (c *callers) Send(_ context.Context, m mail.Outgoing) (string, error) {
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	frames.Next() // this Send
	caller, _ := frames.Next()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.by[m.To] = append(c.by[m.To], caller.Function+" ("+m.Tags[mail.TagKind]+")")
	return "callers-message-" + m.To, nil
}

// Each kind of email, owed and its job run through the Handler, is sent
// once, by deliver: a kind sent any other way, or a kind this test has no
// job for (a kind added to oracle.MailKinds), fails it.
func TestEveryKindOfEmailLeavesThroughDeliver(t *testing.T) {
	e := newEnv(t)
	sent := &callers{by: map[string][]string{}}
	e.h.Transport = sent
	path := runtime.FuncForPC(reflect.ValueOf((*Handler).deliver).Pointer()).Name()
	// One env for every kind, so no subtest: its helpers fail the test.
	for _, kind := range everyKind() {
		owe, ok := owing[kind]
		if !ok {
			t.Errorf("no job of the %s email: add one to owing, so that this test sees it leave through deliver", kind)
			continue
		}
		addr := uniqueAddress(t)
		if n := e.run(owe(e, addr)); n != 0 {
			t.Errorf("%s: the job failed", kind)
			continue
		}
		sent.mu.Lock()
		if want := []string{path + " (" + string(kind) + ")"}; !slices.Equal(sent.by[addr], want) {
			t.Errorf("%s: sends %q, want %q: one, by the delivery path", kind, sent.by[addr], want)
		}
		sent.mu.Unlock()
	}
}

// Only deliver calls the transport and afterSend, in the package's source.
func TestOnlyDeliverSendsAndJudgesASend(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, d := range entries {
		if name := d.Name(); strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			files = append(files, name)
		}
	}
	got := pathCallers(t, files...)
	for _, callee := range []string{"Transport.Send", "afterSend"} {
		if want := []string{"Handler.deliver"}; !slices.Equal(got[callee], want) {
			t.Errorf("%s is called in %q, want only in %q", callee, got[callee], want)
		}
	}
}

// TestTheOneSenderCheckCanFail shows the source check finds a second
// sender, and a second judge of a send's result, in a closure too.
func TestTheOneSenderCheckCanFail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.go")
	src := "package main\n\n" +
		"func (h *Handler) deliver() { h.Transport.Send(nil, x); afterSend(nil, 0, nil) }\n" +
		"func (h *Handler) sendChat() error { _, err := h.Transport.Send(nil, x); return err }\n" +
		"func (h *Handler) chatEmail() *email { return &email{compose: func() { afterSend(nil, 0, nil) }} }\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := pathCallers(t, path)
	if want := []string{"Handler.deliver", "Handler.sendChat"}; !slices.Equal(got["Transport.Send"], want) {
		t.Errorf("Transport.Send found in %q, want %q", got["Transport.Send"], want)
	}
	if want := []string{"Handler.chatEmail", "Handler.deliver"}; !slices.Equal(got["afterSend"], want) {
		t.Errorf("afterSend found in %q, want %q", got["afterSend"], want)
	}
}

// pathCallers reads the files and returns, for the transport's Send and for
// afterSend, the sorted functions that call them ("Handler.deliver"; a
// closure counts as the function it is in).
func pathCallers(t *testing.T, files ...string) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	found := map[string][]string{}
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			name := fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				recv := fn.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					name = id.Name + "." + name
				}
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var callee string
				switch fun := call.Fun.(type) {
				case *ast.Ident:
					callee = fun.Name
				case *ast.SelectorExpr:
					if x, ok := fun.X.(*ast.SelectorExpr); ok && x.Sel.Name == "Transport" {
						callee = "Transport." + fun.Sel.Name
					}
				}
				if (callee == "Transport.Send" || callee == "afterSend") && !slices.Contains(found[callee], name) {
					found[callee] = append(found[callee], name)
				}
				return true
			})
		}
	}
	for _, names := range found {
		slices.Sort(names)
	}
	return found
}
