package sio

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestCompatible(t *testing.T) {
	tests := map[string]bool{
		"0.2.0": true, "0.2.17": true, "00.02.1": true,
		"0.3.0": false, "1.2.0": false, "0.2": false, "0.2.0.1": false, "": false,
		"0.2.x": false, "-0.2.0": false, "0.2.-1": false, " 0.2.0": false,
	}
	for v, want := range tests {
		if got := compatible(v); got != want {
			t.Errorf("compatible(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestVersionCheckRequire(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, tc := range []struct {
		require bool
		query   string
		status  int
	}{
		{false, "", http.StatusNoContent},
		{true, "", http.StatusBadRequest},
		{true, "?a2c_version=0.2.1", http.StatusNoContent},
		{false, "?a2c_version=9.9.9", http.StatusBadRequest},
	} {
		rec := httptest.NewRecorder()
		versionCheck(tc.require, next).ServeHTTP(rec, httptest.NewRequest("GET", "/socket.io/"+tc.query, nil))
		if rec.Code != tc.status {
			t.Errorf("require=%v %q: status %d, want %d", tc.require, tc.query, rec.Code, tc.status)
		}
		if rec.Code == http.StatusBadRequest && rec.Header().Get("X-A2C-Error-Code") != "4008" {
			t.Errorf("require=%v %q: no 4008 header", tc.require, tc.query)
		}
	}
}
