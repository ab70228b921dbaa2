package loadtest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/socket"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Floor is the cheapest relay the gateway's Socket.IO stack allows: the same
// library, options and namespace, doing nothing but join and forward. A
// client: event goes to the computer named in the payload, in the caller's
// office, with EmitWithAck and no library timeout (the forward that measured
// leak-free, DESIGN.md); the computer's ack arguments go back unchanged. No
// validation, no deadlines, no authentication: it is what the gateway costs
// compared against, never a server to deploy.
type Floor struct {
	io      *socket.Server
	handler http.Handler

	mu        sync.RWMutex
	computers map[string]*socket.Socket // office + "\x00" + name
}

// NewFloor builds a floor relay serving Engine.IO at path.
func NewFloor(path string) *Floor {
	opts := socket.DefaultServerOptions()
	opts.SetPath(strings.TrimSuffix(path, "/"))
	opts.SetServeClient(false)
	opts.SetTransports(types.NewSet(socket.Polling, socket.WebSocket))
	opts.SetConnectTimeout(5 * time.Second)
	f := &Floor{io: socket.NewServer(nil, opts), computers: map[string]*socket.Socket{}}
	f.handler = f.io.ServeHandler(opts)
	_ = f.io.Of(smcp.Namespace, nil).On("connection", func(args ...any) {
		if sock, ok := args[0].(*socket.Socket); ok {
			f.onConnection(sock)
		}
	})
	return f
}

// Handler serves Engine.IO.
func (f *Floor) Handler() http.Handler { return f.handler }

// Close closes every connection.
func (f *Floor) Close() { f.io.Close(nil) }

func (f *Floor) onConnection(sock *socket.Socket) {
	// Handlers of one socket run on its one goroutine: office needs no lock.
	var office, key string
	_ = sock.On(smcp.EventJoinOffice, func(args ...any) {
		m, _ := args[0].(map[string]any)
		office, _ = m["office_id"].(string)
		if role, _ := m["role"].(string); role == smcp.RoleComputer {
			name, _ := m["name"].(string)
			key = office + "\x00" + name
			f.mu.Lock()
			f.computers[key] = sock
			f.mu.Unlock()
		}
		if ack, ok := args[len(args)-1].(socket.Ack); ok {
			ack([]any{true, nil}, nil)
		}
	})
	for _, ev := range smcp.EventNames(smcp.Routed) {
		_ = sock.On(ev, func(args ...any) {
			ack, ok := args[len(args)-1].(socket.Ack)
			if !ok || len(args) < 2 {
				return
			}
			m, _ := args[0].(map[string]any)
			name, _ := m["computer"].(string)
			c := f.computer(office, name)
			if c == nil {
				ack([]any{map[string]any{"code": smcp.CodeNotFound, "message": "computer not found in this office"}}, nil)
				return
			}
			c.EmitWithAck(ev, args[0])(func(answer []any, err error) {
				if err != nil {
					ack([]any{map[string]any{"code": smcp.CodeInternal, "message": err.Error()}}, nil)
					return
				}
				ack(answer, nil)
			})
		})
	}
	_ = sock.On("disconnect", func(...any) {
		if key == "" {
			return
		}
		f.mu.Lock()
		if f.computers[key] == sock {
			delete(f.computers, key)
		}
		f.mu.Unlock()
	})
}

func (f *Floor) computer(office, name string) *socket.Socket {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.computers[office+"\x00"+name]
}

// errNoComputer answers a call for a computer that is not in the office.
var errNoComputer = errors.New("computer not found in this office")

// Call forwards event and its payload to the computer called name in
// office, as the Socket.IO relay forwards an agent's event, and returns the
// computer's ack arguments: the relay floor's leg to the computer.
func (f *Floor) Call(ctx context.Context, office, name, event string, payload any) ([]any, error) {
	c := f.computer(office, name)
	if c == nil {
		return nil, errNoComputer
	}
	type answer struct {
		args []any
		err  error
	}
	done := make(chan answer, 1)
	c.EmitWithAck(event, payload)(func(args []any, err error) { done <- answer{args, err} })
	select {
	case a := <-done:
		return a.args, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
