package httpauth

import "testing"

func TestAddrSlots(t *testing.T) {
	a := NewAddrSlots(2)
	if !a.Take("10.0.0.1") || !a.Take("10.0.0.1") {
		t.Fatal("refused under the limit")
	}
	if a.Take("10.0.0.1") {
		t.Error("a third slot taken with a limit of 2")
	}
	if !a.Take("10.0.0.2") {
		t.Error("another address refused")
	}
	a.Give("10.0.0.1")
	if !a.Take("10.0.0.1") {
		t.Error("a slot given back is not free again")
	}
	a.Give("10.0.0.2")
	if len(a.held) != 1 {
		t.Errorf("addresses holding nothing are kept: %v", a.held)
	}
	unlimited := NewAddrSlots(-1)
	for range 100 {
		if !unlimited.Take("10.0.0.3") {
			t.Fatal("refused without a limit")
		}
	}
}
