package gateway

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/core"
)

// signInCallbackPath is where the authorization responses of the sign-ins
// of headless computers come back (docs/UPSTREAM.md): the computers'
// redirect URI is {public URL}/oauth/callback/{office}/{computer}.
const signInCallbackPath = "GET /oauth/callback/{office}/{computer}"

// signInAnswerTimeout bounds the wait for the computer to exchange the
// code and store the token.
const signInAnswerTimeout = 30 * time.Second

var signInPage = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1><p>{{.Text}}</p></body></html>
`))

// signInCallback takes the authorization response of a computer's
// sign-in and hands it to that computer. It asks for no key: the state is
// the capability (single use, bound to that office and computer, unknown
// to agents), and the code is useless without the PKCE verifier the
// computer keeps. Neither is ever logged.
func (g *Gateway) signInCallback(w http.ResponseWriter, r *http.Request) {
	office, name := r.PathValue("office"), r.PathValue("computer")
	q := r.URL.Query()
	a := core.SignInAnswer{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss"), Error: q.Get("error")}
	if a.Error == "" && a.Code == "" {
		a.Error = "invalid_request" // the computer forgets the sign-in and starts another
	}
	ctx, cancel := context.WithTimeout(r.Context(), signInAnswerTimeout)
	defer cancel()
	server, err := g.Hub.CompleteSignIn(ctx, office, name, a)
	switch {
	case errors.Is(err, core.ErrNoSignIn):
		page(w, http.StatusBadRequest, "Unknown sign-in",
			"No sign-in of computer "+name+" in office "+office+" waits for this answer: it was used already, it expired, or the computer left. Open the link the console shows now.")
	case err != nil:
		g.log.Warn("sign-in callback: the computer did not sign in", "office", office, "computer", name, "server", server, "err", err)
		page(w, http.StatusBadGateway, "Not signed in", "Computer "+name+" could not finish the sign-in: "+err.Error())
	default:
		g.log.Info("sign-in callback: the computer signed in", "office", office, "computer", name, "server", server)
		page(w, http.StatusOK, "Signed in", "Signed in: computer "+name+" may now use "+server+". You may close this page.")
	}
}

func page(w http.ResponseWriter, status int, title, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'")
	w.WriteHeader(status)
	_ = signInPage.Execute(w, struct{ Title, Text string }{title, text})
}
