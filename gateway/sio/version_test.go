package sio

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// The profile a handshake gets, and every refusal's exact answer
// (PROTOCOL-0.4.md §2 H2-H5, §3 P4-P5).
func TestVersionsPick(t *testing.T) {
	all := newVersions(nil, false)
	only02 := newVersions([]smcp.Version{smcp.V02}, false)
	only04 := newVersions([]smcp.Version{smcp.V04}, false)
	strict := newVersions(nil, true)
	with05 := newVersions([]smcp.Version{smcp.V02, smcp.V03, smcp.V04, smcp.V05}, false)
	mismatchAll := `{"code":4008,"message":"Protocol version mismatch","server_version":"0.4.0","client_version":"%s","min_supported":"0.2.0","max_supported":"0.4.999","details":{"supported":["0.2","0.3","0.4"]}}`
	for _, c := range []struct {
		name  string
		vs    versions
		query string
		want  smcp.Version // zero: refused
		body  string
	}{
		{"missing, lenient", all, "", smcp.V02, ""},
		{"empty, lenient", all, "a2c_version=", smcp.V02, ""},
		{"missing, strict", strict, "", smcp.Version{}, `{"code":400,"message":"Missing a2c_version query parameter"}`},
		{"missing, 0.2 not served", only04, "", smcp.Version{}, `{"code":400,"message":"Missing a2c_version query parameter"}`},
		{"0.2 exact", all, "a2c_version=0.2.0", smcp.V02, ""},
		{"0.2 patch", all, "a2c_version=0.2.1", smcp.V02, ""},
		{"0.3", all, "a2c_version=0.3.0", smcp.V03, ""},
		{"0.3.2", all, "a2c_version=0.3.2", smcp.V03, ""},
		{"0.4", all, "a2c_version=0.4.0", smcp.V04, ""},
		{"0.4 patch", all, "a2c_version=0.4.7", smcp.V04, ""},
		{"0.5", all, "a2c_version=0.5.0", smcp.Version{}, fmt.Sprintf(mismatchAll, "0.5.0")},
		{"0.5 named", with05, "a2c_version=0.5.0", smcp.V05, ""},
		{"0.4 beside 0.5", with05, "a2c_version=0.4.0", smcp.V04, ""},
		{"1.0", all, "a2c_version=1.0.0", smcp.Version{}, fmt.Sprintf(mismatchAll, "1.0.0")},
		{"0.3 on 0.2 only", only02, "a2c_version=0.3.0", smcp.Version{},
			`{"code":4008,"message":"Protocol version mismatch","server_version":"0.2.0","client_version":"0.3.0","min_supported":"0.2.0","max_supported":"0.2.999","details":{"supported":["0.2"]}}`},
		{"0.2 on 0.4 only", only04, "a2c_version=0.2.0", smcp.Version{},
			`{"code":4008,"message":"Protocol version mismatch","server_version":"0.4.0","client_version":"0.2.0","min_supported":"0.4.0","max_supported":"0.4.999","details":{"supported":["0.4"]}}`},
		{"malformed", all, "a2c_version=abc", smcp.Version{}, `{"code":400,"message":"Invalid a2c_version: abc"}`},
		{"two parts", all, "a2c_version=0.2", smcp.Version{}, `{"code":400,"message":"Invalid a2c_version: 0.2"}`},
		{"pre-release", all, "a2c_version=0.4.0-dev", smcp.Version{}, `{"code":400,"message":"Invalid a2c_version: 0.4.0-dev"}`},
		{"plus", all, "a2c_version=%2B0.4.0", smcp.Version{}, `{"code":400,"message":"Invalid a2c_version: +0.4.0"}`},
		{"repeated", all, "a2c_version=0.4.0&a2c_version=0.4.0", smcp.Version{}, `{"code":400,"message":"Invalid a2c_version: 0.4.0,0.4.0"}`},
	} {
		q, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		p, ref := c.vs.pick(q)
		if c.want != (smcp.Version{}) {
			if ref != nil || p.Version != c.want {
				t.Errorf("%s: got %v, %+v; want %s", c.name, p.Version, ref, c.want)
			}
			continue
		}
		rec := httptest.NewRecorder()
		c.vs.check(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("GET", "/socket.io/?EIO=4&transport=polling&"+c.query, nil))
		if rec.Code != http.StatusBadRequest || rec.Body.String() != c.body || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s %q\nwant 400 %s", c.name, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), c.body)
		}
		if is4008 := rec.Header().Get("X-A2C-Error-Code") == "4008"; is4008 != (ref.Code == smcp.CodeVersionMismatch) {
			t.Errorf("%s: X-A2C-Error-Code %q", c.name, rec.Header().Get("X-A2C-Error-Code"))
		}
	}
}

// A request of a session that passed (it has a sid) is not checked again.
func TestVersionsCheckSkipsSessions(t *testing.T) {
	rec := httptest.NewRecorder()
	newVersions(nil, true).check(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })).
		ServeHTTP(rec, httptest.NewRequest("GET", "/socket.io/?EIO=4&transport=polling&sid=abc", nil))
	if rec.Code != 204 {
		t.Fatalf("status %d", rec.Code)
	}
}
